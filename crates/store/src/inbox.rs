//! The durable inbox: every message the gateway accepted, from before the platform's
//! offset moves past it until its chat has handled it, so a restart or a crash drops
//! none and, keyed by the platform's own id, runs none twice.

use std::collections::HashMap;

use sqlx::{QueryBuilder, Sqlite};

use super::{Store, StoreError, now};
use chat::{Named, Platform, Stage};

/// Done messages are kept this long, so a platform's late duplicate is still known.
const KEEP_DONE_SECS: i64 = 7 * 24 * 3600;

/// One accepted message, as the platform gave it.
pub struct Accepted<'a> {
    /// The platform's id for it (Telegram: the update id).
    pub key: String,
    /// The update as JSON, to be handled again after a restart.
    pub payload: &'a str,
    /// Where it was sent, for a platform that reads places back (Discord: the channel).
    pub place: Option<&'a str>,
}

/// A message accepted before the last stop and not yet handled, at the stage it reached.
#[derive(Debug, PartialEq, Eq)]
pub struct Unfinished {
    pub id: i64,
    pub payload: String,
    pub stage: Stage,
}

/// An unfinished row's columns.
#[derive(sqlx::FromRow)]
struct UnfinishedRow {
    id: i64,
    payload: String,
    running: bool,
    not_before: Option<i64>,
    handed_over_turn: Option<String>,
    answer: Option<String>,
    answer_pieces_taken: i64,
    answer_sending: bool,
}

impl From<UnfinishedRow> for Unfinished {
    fn from(row: UnfinishedRow) -> Self {
        let stage = match (
            row.answer,
            row.handed_over_turn,
            row.running,
            row.not_before,
        ) {
            (Some(text), _, _, _) => Stage::Answering {
                text,
                pieces_taken: usize::try_from(row.answer_pieces_taken).unwrap_or(0),
                sending: row.answer_sending,
            },
            (None, Some(turn_id), _, _) => Stage::HandedOver { turn_id },
            (None, None, true, _) => Stage::Running,
            (None, None, false, Some(until)) => Stage::Held { until },
            (None, None, false, None) => Stage::Waiting,
        };
        Unfinished {
            id: row.id,
            payload: row.payload,
            stage,
        }
    }
}

impl Store {
    /// Stores `accepted`, then, when given, where the platform's stream continues. Returns
    /// each message's inbox id; `None` for one already known (a duplicate: not to be
    /// handled again).
    ///
    /// One round trip to SQLite on the path of every message (a transaction took four:
    /// about 0.5 ms more, measured). No transaction is needed: the messages are stored
    /// before the offset moves, and a crash between the two only has the platform send
    /// them again, which their keys turn away.
    pub async fn accept(
        &self,
        platform: Platform,
        accepted: &[Accepted<'_>],
        next_offset: Option<i64>,
    ) -> Result<Vec<Option<i64>>, StoreError> {
        let mut query = QueryBuilder::<Sqlite>::new("");
        if !accepted.is_empty() {
            let accepted_at = now();
            query.push("INSERT INTO inbox (platform, message_key, payload, accepted_at, place) ");
            query.push_values(accepted, |mut row, message| {
                row.push_bind(platform.name())
                    .push_bind(&message.key)
                    .push_bind(message.payload)
                    .push_bind(accepted_at)
                    .push_bind(message.place);
            });
            query
                .push(" ON CONFLICT (platform, message_key) DO NOTHING RETURNING message_key, id;");
        }
        if let Some(next_offset) = next_offset {
            query.push("INSERT INTO platform_offsets (platform, next_offset) VALUES (");
            query.push_bind(platform.name()).push(", ");
            query
                .push_bind(next_offset)
                .push(") ON CONFLICT (platform) DO UPDATE SET next_offset = excluded.next_offset");
        }
        if accepted.is_empty() && next_offset.is_none() {
            return Ok(Vec::new());
        }
        let mut stored: HashMap<String, i64> = query
            .build_query_as::<(String, i64)>()
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .collect();
        // A key twice in one batch is stored once: the second is a duplicate.
        Ok(accepted
            .iter()
            .map(|message| stored.remove(&message.key))
            .collect())
    }

    /// Each place's newest kept message: (place, its key), in no order.
    pub async fn newest_by_place(
        &self,
        platform: Platform,
    ) -> Result<Vec<(String, String)>, StoreError> {
        Ok(sqlx::query_as(
            "SELECT place, message_key FROM inbox WHERE id IN (
                 SELECT MAX(id) FROM inbox
                 WHERE platform = ?1 AND place IS NOT NULL GROUP BY place)",
        )
        .bind(platform.name())
        .fetch_all(&self.pool)
        .await?)
    }

    /// The platform's messages not yet handled, oldest first; done ones past their
    /// keeping time are dropped on the way.
    pub async fn unfinished(&self, platform: Platform) -> Result<Vec<Unfinished>, StoreError> {
        sqlx::query("DELETE FROM inbox WHERE state = 'done' AND accepted_at < ?")
            .bind(now() - KEEP_DONE_SECS)
            .execute(&self.pool)
            .await?;
        let rows: Vec<UnfinishedRow> = sqlx::query_as(
            "SELECT id, payload, state = 'running' AS running, not_before, handed_over_turn,
                    answer, answer_pieces_taken, answer_sending = 1 AS answer_sending
             FROM inbox WHERE platform = ? AND state != 'done' ORDER BY id",
        )
        .bind(platform.name())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(Unfinished::from).collect())
    }

    /// Keeps a message's new stage, writing what changed from `before` (a kept answer's
    /// text once, then its progress piece by piece).
    pub async fn set_stage(
        &self,
        id: i64,
        before: &Stage,
        after: &Stage,
    ) -> Result<(), StoreError> {
        let query = match after {
            Stage::Waiting => {
                sqlx::query("UPDATE inbox SET state = 'waiting', not_before = NULL WHERE id = ?")
            }
            Stage::Held { until } => {
                sqlx::query("UPDATE inbox SET state = 'waiting', not_before = ? WHERE id = ?")
                    .bind(until)
            }
            Stage::Running => sqlx::query(
                "UPDATE inbox SET state = 'running', not_before = NULL, handed_over_turn = NULL
                 WHERE id = ?",
            ),
            Stage::HandedOver { turn_id } => {
                sqlx::query("UPDATE inbox SET state = 'running', handed_over_turn = ? WHERE id = ?")
                    .bind(turn_id)
            }
            Stage::Answering {
                pieces_taken,
                sending,
                ..
            } if matches!(before, Stage::Answering { .. }) => sqlx::query(
                "UPDATE inbox SET answer_pieces_taken = ?, answer_sending = ? WHERE id = ?",
            )
            .bind(*pieces_taken as i64)
            .bind(sending),
            Stage::Answering {
                text,
                pieces_taken,
                sending,
            } => sqlx::query(
                "UPDATE inbox SET state = 'running', answer = ?, answer_pieces_taken = ?,
                        answer_sending = ?
                 WHERE id = ?",
            )
            .bind(text)
            .bind(*pieces_taken as i64)
            .bind(sending),
            Stage::Done => sqlx::query("UPDATE inbox SET state = 'done' WHERE id = ?"),
        };
        query.bind(id).execute(&self.pool).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chat::{AnswerStep, Step};

    fn message(key: &str, payload: &'static str) -> Accepted<'static> {
        Accepted {
            key: key.into(),
            payload,
            place: None,
        }
    }

    #[tokio::test]
    async fn each_places_newest_message_is_known() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("gateway.db")).await.unwrap();
        let in_place = |key: &str, place: &'static str| Accepted {
            key: key.into(),
            payload: "{}",
            place: Some(place),
        };
        let batch = [
            in_place("10", "a"),
            in_place("11", "b"),
            in_place("12", "a"),
        ];
        store.accept(Platform::Discord, &batch, None).await.unwrap();
        store
            .accept(Platform::Discord, &[message("13", "{}")], None)
            .await
            .unwrap();
        let mut newest = store.newest_by_place(Platform::Discord).await.unwrap();
        newest.sort();
        assert_eq!(
            newest,
            [("a".into(), "12".into()), ("b".into(), "11".into())]
        );
        let telegram = store.newest_by_place(Platform::Telegram).await.unwrap();
        assert!(telegram.is_empty());
    }

    #[tokio::test]
    async fn a_message_is_kept_until_done_and_never_taken_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        let store = Store::open(&path).await.unwrap();
        let batch = [message("7", "{\"a\":1}"), message("8", "{\"b\":2}")];
        let ids = store
            .accept(Platform::Telegram, &batch, Some(9))
            .await
            .unwrap();
        let (a, b) = (ids[0].unwrap(), ids[1].unwrap());
        assert_eq!(
            store.platform_offset(Platform::Telegram).await.unwrap(),
            Some(9)
        );
        let batch = [message("7", "{}"), message("10", "{\"c\":3}")];
        let ids = store
            .accept(Platform::Telegram, &batch, Some(11))
            .await
            .unwrap();
        assert_eq!(ids[0], None, "a duplicate key is not taken again");
        let c = ids[1].expect("a new key in the same batch is stored");
        assert_eq!(
            store.platform_offset(Platform::Telegram).await.unwrap(),
            Some(11)
        );
        store
            .set_stage(c, &Stage::Waiting, &Stage::Done)
            .await
            .unwrap();

        store
            .set_stage(a, &Stage::Waiting, &Stage::Running)
            .await
            .unwrap();
        store.close().await;
        let store = Store::open(&path).await.unwrap();
        let left = store.unfinished(Platform::Telegram).await.unwrap();
        let left: Vec<_> = left
            .iter()
            .map(|u| (u.id, u.payload.as_str(), u.stage.clone()))
            .collect();
        assert_eq!(
            left,
            [
                (a, "{\"a\":1}", Stage::Running),
                (b, "{\"b\":2}", Stage::Waiting)
            ]
        );
        let held = Stage::Held { until: 1234 };
        store.set_stage(b, &Stage::Waiting, &held).await.unwrap();
        let unfinished = store.unfinished(Platform::Telegram).await.unwrap();
        assert_eq!(unfinished[1].stage, held);
        assert!(
            store
                .unfinished(Platform::Discord)
                .await
                .unwrap()
                .is_empty()
        );
        store
            .set_stage(a, &Stage::Running, &Stage::Done)
            .await
            .unwrap();
        store.set_stage(b, &held, &Stage::Done).await.unwrap();
        assert!(
            store
                .unfinished(Platform::Telegram)
                .await
                .unwrap()
                .is_empty()
        );
    }

    /// Each stage a message can be left at reads back as it was written, through the
    /// steps the gateway takes.
    #[tokio::test]
    async fn every_stage_reads_back_as_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("gateway.db")).await.unwrap();
        let ids = store
            .accept(Platform::Telegram, &[message("1", "{}")], Some(2))
            .await
            .unwrap();
        let id = ids[0].unwrap();
        let handed = Stage::HandedOver {
            turn_id: "turn-1".into(),
        };
        let steps = [
            Step::Hold { until: 50 },
            Step::Take,
            Step::HandOver {
                turn_id: "turn-1".into(),
            },
            Step::Answer("long answer".into()),
            Step::Deliver(AnswerStep::Sending(0)),
            Step::Deliver(AnswerStep::Taken(1)),
            Step::Deliver(AnswerStep::Sending(1)),
            Step::Deliver(AnswerStep::NotSent(1)),
        ];
        let mut stage = Stage::Waiting;
        let mut seen = Vec::new();
        for step in steps {
            let next = stage.after(step).expect("a step that applies");
            store.set_stage(id, &stage, &next).await.unwrap();
            let read = store.unfinished(Platform::Telegram).await.unwrap();
            assert_eq!(read[0].stage, next);
            seen.push(next.clone());
            stage = next;
        }
        assert_eq!(seen[2], handed);
        let kept = |pieces_taken, sending| Stage::Answering {
            text: "long answer".into(),
            pieces_taken,
            sending,
        };
        assert_eq!(
            seen[3..],
            [
                kept(0, false),
                kept(0, true),
                kept(1, false),
                kept(1, true),
                kept(1, false)
            ]
        );
        store.set_stage(id, &stage, &Stage::Done).await.unwrap();
        assert!(
            store
                .unfinished(Platform::Telegram)
                .await
                .unwrap()
                .is_empty()
        );
    }
}
