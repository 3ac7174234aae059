//! The durable inbox: every message the gateway accepted, from before the platform's
//! offset moves past it until its chat has handled it, so a restart or a crash drops
//! none and, keyed by the platform's own id, runs none twice.

use std::collections::HashMap;

use sqlx::{QueryBuilder, Sqlite};

use super::{Store, StoreError, now};
use chat::Named;
use chat::Platform;

/// Done messages are kept this long, so a platform's late duplicate is still known.
const KEEP_DONE_SECS: i64 = 7 * 24 * 3600;

/// One accepted message, as the platform gave it.
pub struct Accepted<'a> {
    /// The platform's id for it (Telegram: the update id).
    pub key: String,
    /// The update as JSON, to be handled again after a restart.
    pub payload: &'a str,
}

/// A message accepted before the last stop and not yet handled.
#[derive(Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct Unfinished {
    pub id: i64,
    pub payload: String,
    /// Its handling had begun when the gateway went away (a crash cut its turn).
    pub interrupted: bool,
    /// Held back by the usage limit until then (unix seconds).
    pub not_before: Option<i64>,
    /// Its turn was left running on a remote worker at the last stop.
    pub handed_over: bool,
}

/// A final answer the platform had not taken in whole when the gateway went away.
#[derive(Debug, PartialEq, Eq, sqlx::FromRow)]
pub struct KeptAnswer {
    pub text: String,
    /// The pieces the platform took (split as its delivery splits it).
    pub pieces_taken: i64,
    /// The piece after those was on its way: it may have arrived.
    pub sending: bool,
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
            query.push("INSERT INTO inbox (platform, message_key, payload, accepted_at) ");
            query.push_values(accepted, |mut row, message| {
                row.push_bind(platform.name())
                    .push_bind(&message.key)
                    .push_bind(message.payload)
                    .push_bind(accepted_at);
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
        let stored: HashMap<String, i64> = query
            .build_query_as::<(String, i64)>()
            .fetch_all(&self.pool)
            .await?
            .into_iter()
            .collect();
        Ok(accepted
            .iter()
            .map(|message| stored.get(&message.key).copied())
            .collect())
    }

    /// The platform's messages not yet handled, oldest first; done ones past their
    /// keeping time are dropped on the way.
    pub async fn unfinished(&self, platform: Platform) -> Result<Vec<Unfinished>, StoreError> {
        sqlx::query("DELETE FROM inbox WHERE state = 'done' AND accepted_at < ?")
            .bind(now() - KEEP_DONE_SECS)
            .execute(&self.pool)
            .await?;
        let rows = sqlx::query_as(
            "SELECT id, payload, state = 'running' AS interrupted, not_before,
                    handed_over_turn IS NOT NULL AS handed_over FROM inbox
             WHERE platform = ? AND state != 'done' ORDER BY id",
        )
        .bind(platform.name())
        .fetch_all(&self.pool)
        .await?;
        Ok(rows)
    }

    /// The message's handling begins: from now on a crash cuts it.
    pub async fn inbox_running(&self, id: i64) -> Result<(), StoreError> {
        self.set_inbox_state(id, "running").await
    }

    /// The message waits, to run no earlier than `not_before` (unix seconds), also after
    /// a restart.
    pub async fn inbox_hold(&self, id: i64, not_before: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET state = 'waiting', not_before = ? WHERE id = ?")
            .bind(not_before)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The message's turn `turn_id` goes on on its remote worker while the gateway is
    /// away; the next start follows it.
    pub async fn inbox_hand_over(&self, id: i64, turn_id: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET state = 'running', handed_over_turn = ? WHERE id = ?")
            .bind(turn_id)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Keeps the final answer of the message's turn until the platform has taken it.
    pub async fn inbox_answer(&self, id: i64, answer: &str) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE inbox SET answer = ?, answer_pieces_taken = 0, answer_sending = 0
             WHERE id = ?",
        )
        .bind(answer)
        .bind(id)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A piece of the kept answer is on its way to the platform (`true`), or did not get
    /// there and will be tried again (`false`).
    pub async fn inbox_answer_sending(&self, id: i64, sending: bool) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET answer_sending = ? WHERE id = ?")
            .bind(sending)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The platform has taken (or refused for good) the kept answer's first `pieces`.
    pub async fn inbox_answer_taken(&self, id: i64, pieces: i64) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET answer_pieces_taken = ?, answer_sending = 0 WHERE id = ?")
            .bind(pieces)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// The final answer kept for a message that is not done: not yet taken by the
    /// platform, in whole or in part, when the gateway went away.
    pub async fn undelivered_answer(&self, id: i64) -> Result<Option<KeptAnswer>, StoreError> {
        let answer = sqlx::query_as(
            "SELECT answer AS text, answer_pieces_taken AS pieces_taken,
                    answer_sending = 1 AS sending
             FROM inbox WHERE id = ? AND state != 'done' AND answer IS NOT NULL",
        )
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(answer)
    }

    /// The turn a message's handling left running on its worker, if it did.
    pub async fn handed_over_turn(&self, id: i64) -> Result<Option<String>, StoreError> {
        let turn = sqlx::query_scalar("SELECT handed_over_turn FROM inbox WHERE id = ?")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        Ok(turn.flatten())
    }

    /// The message is handled (or told why not): never again.
    pub async fn inbox_done(&self, id: i64) -> Result<(), StoreError> {
        self.set_inbox_state(id, "done").await
    }

    async fn set_inbox_state(&self, id: i64, state: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE inbox SET state = ? WHERE id = ?")
            .bind(state)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_message_is_kept_until_done_and_never_taken_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        let store = Store::open(&path).await.unwrap();
        let first = Accepted {
            key: "7".into(),
            payload: "{\"a\":1}",
        };
        let second = Accepted {
            key: "8".into(),
            payload: "{\"b\":2}",
        };
        let ids = store
            .accept(Platform::Telegram, &[first, second], Some(9))
            .await
            .unwrap();
        let (a, b) = (ids[0].unwrap(), ids[1].unwrap());
        assert_eq!(
            store.platform_offset(Platform::Telegram).await.unwrap(),
            Some(9)
        );
        let again = Accepted {
            key: "7".into(),
            payload: "{}",
        };
        let third = Accepted {
            key: "10".into(),
            payload: "{\"c\":3}",
        };
        let ids = store
            .accept(Platform::Telegram, &[again, third], Some(11))
            .await
            .unwrap();
        assert_eq!(ids[0], None, "a duplicate key is not taken again");
        let c = ids[1].expect("a new key in the same batch is stored");
        assert_eq!(
            store.platform_offset(Platform::Telegram).await.unwrap(),
            Some(11)
        );
        store.inbox_done(c).await.unwrap();

        store.inbox_running(a).await.unwrap();
        store.close().await;
        let store = Store::open(&path).await.unwrap();
        let left = store.unfinished(Platform::Telegram).await.unwrap();
        let left: Vec<_> = left
            .iter()
            .map(|u| (u.id, u.payload.as_str(), u.interrupted))
            .collect();
        store.inbox_hold(b, 1234).await.unwrap();
        let held = store.unfinished(Platform::Telegram).await.unwrap();
        assert_eq!(
            (held[1].interrupted, held[1].not_before),
            (false, Some(1234))
        );
        assert_eq!(left, [(a, "{\"a\":1}", true), (b, "{\"b\":2}", false)]);
        assert!(
            store
                .unfinished(Platform::Discord)
                .await
                .unwrap()
                .is_empty()
        );
        store.inbox_done(a).await.unwrap();
        store.inbox_done(b).await.unwrap();
        assert!(
            store
                .unfinished(Platform::Telegram)
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_kept_answer_says_how_far_it_got() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("gateway.db")).await.unwrap();
        let message = Accepted {
            key: "1".into(),
            payload: "{}",
        };
        let ids = store.accept(Platform::Telegram, &[message], Some(2)).await;
        let id = ids.unwrap()[0].unwrap();
        assert_eq!(store.undelivered_answer(id).await.unwrap(), None);
        store.inbox_answer(id, "long answer").await.unwrap();
        let kept = |pieces_taken, sending| KeptAnswer {
            text: "long answer".into(),
            pieces_taken,
            sending,
        };
        assert_eq!(
            store.undelivered_answer(id).await.unwrap(),
            Some(kept(0, false))
        );
        store.inbox_answer_sending(id, true).await.unwrap();
        assert_eq!(
            store.undelivered_answer(id).await.unwrap(),
            Some(kept(0, true))
        );
        store.inbox_answer_taken(id, 1).await.unwrap();
        assert_eq!(
            store.undelivered_answer(id).await.unwrap(),
            Some(kept(1, false))
        );
        store.inbox_answer_sending(id, true).await.unwrap();
        store.inbox_answer_sending(id, false).await.unwrap();
        assert_eq!(
            store.undelivered_answer(id).await.unwrap(),
            Some(kept(1, false))
        );
        store.inbox_done(id).await.unwrap();
        assert_eq!(store.undelivered_answer(id).await.unwrap(), None);
    }
}
