//! The durable inbox, from a message accepted to its answer delivered. Platforms hand it
//! the messages they accept and replay it at start; a chat takes each message through the
//! steps of `chat::inbox` (`Stage::after`), and every stage is in SQLite before the
//! gateway goes on. Nothing else writes the inbox.

use std::sync::{Arc, Mutex};

use chat::{AnswerStep, Ledger, Named, Platform, Stage, Step, Ticket};
use store::{Store, StoreError};
use tracing::{error, info, warn};

#[derive(Clone)]
pub struct Inbox {
    store: Store,
}

/// One message a platform accepted: its own id for it, and what to replay it from.
pub struct Arrived<'a> {
    /// The platform's id (Telegram: the update id; Discord: the message's snowflake).
    pub key: String,
    /// The platform's update as JSON.
    pub payload: &'a str,
    /// Where it was sent, for a platform that reads places back (Discord: the channel).
    pub place: Option<&'a str>,
}

/// What became of an arrived message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Acceptance {
    /// Stored: hand it on with its ticket.
    New(Ticket),
    /// Known already (the platform sent it again): handled once before.
    Duplicate,
    /// The database failed: hand it on without the inbox, rather than hold it back.
    Unstored,
}

impl Inbox {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Stores `arrived` and, when given, where the platform's stream continues past it,
    /// in one write: a crash after it loses none of them, and one before it only has the
    /// platform send them again, which their keys turn away.
    pub async fn accept(
        &self,
        platform: Platform,
        arrived: &[Arrived<'_>],
        next_offset: Option<i64>,
    ) -> Vec<Acceptance> {
        let accepted: Vec<store::Accepted<'_>> = arrived
            .iter()
            .map(|message| store::Accepted {
                key: message.key.clone(),
                payload: message.payload,
                place: message.place,
            })
            .collect();
        match self.store.accept(platform, &accepted, next_offset).await {
            Ok(ids) => ids
                .into_iter()
                .map(|id| match id {
                    Some(id) => Acceptance::New(Ticket::accepted(id)),
                    None => Acceptance::Duplicate,
                })
                .collect(),
            Err(error) => {
                error!(platform = platform.name(), %error, "cannot store the accepted messages");
                arrived.iter().map(|_| Acceptance::Unstored).collect()
            }
        }
    }

    /// Each place's newest kept message: (place, its key).
    pub async fn newest_by_place(
        &self,
        platform: Platform,
    ) -> Result<Vec<(String, String)>, StoreError> {
        self.store.newest_by_place(platform).await
    }

    /// Where the platform's stream continues (Telegram's next update id), if stored.
    pub async fn next_offset(&self, platform: Platform) -> Result<Option<i64>, StoreError> {
        self.store.platform_offset(platform).await
    }

    /// Hands the platform's messages that were not done at the last stop to `hand_on`,
    /// oldest first, each with the stage it reached. One `hand_on` does not take (it no
    /// longer reads, or is no longer for the bot) is done.
    pub async fn replay<F, Handed>(&self, platform: Platform, mut hand_on: F)
    where
        F: FnMut(Ticket, String) -> Handed,
        Handed: Future<Output = bool>,
    {
        let name = platform.name();
        let unfinished = match self.store.unfinished(platform).await {
            Ok(unfinished) => unfinished,
            Err(error) => {
                return error!(platform = name, %error, "cannot read the inbox; its messages wait for the next start");
            }
        };
        if !unfinished.is_empty() {
            info!(
                platform = name,
                messages = unfinished.len(),
                "handling the messages accepted before the restart"
            );
        }
        for message in unfinished {
            let mut ticket = Ticket {
                id: message.id,
                stage: message.stage,
            };
            if !hand_on(ticket.clone(), message.payload).await {
                info!(
                    platform = name,
                    id = ticket.id,
                    "a stored message is no longer for the bot; done"
                );
                self.advance(&mut ticket, Step::Finish).await;
            }
        }
    }

    /// Takes the message one step on and keeps its new stage. A step that does not apply
    /// at its stage is a bug: logged, and the stage kept.
    pub async fn advance(&self, ticket: &mut Ticket, step: Step) {
        let shown = format!("{step:?}");
        let Some(next) = ticket.stage.after(step) else {
            let step = short(&shown);
            return warn!(id = ticket.id, stage = ?ticket.stage, step, "an inbox step that does not apply; ignored");
        };
        if let Err(error) = self.store.set_stage(ticket.id, &ticket.stage, &next).await {
            warn!(id = ticket.id, %error, "could not keep an inbox message's stage");
        }
        ticket.stage = next;
    }

    /// The ledger of a kept answer (the ticket at `Stage::Answering`): its delivery's
    /// steps are kept piece by piece, and the last one makes the message done.
    pub fn ledger(&self, ticket: &Ticket) -> Ledger {
        let from_piece = match &ticket.stage {
            Stage::Answering { pieces_taken, .. } => *pieces_taken,
            _ => 0,
        };
        let ticket = Arc::new(Mutex::new(ticket.clone()));
        let store = self.store.clone();
        Ledger::new(from_piece, move |step: AnswerStep| {
            let moved = {
                let mut ticket = ticket.lock().expect("lock");
                let before = ticket.stage.clone();
                let after = before.after(Step::Deliver(step));
                if let Some(after) = &after {
                    ticket.stage = after.clone();
                }
                after.map(|after| (ticket.id, before, after))
            };
            let store = store.clone();
            async move {
                let Some((id, before, after)) = moved else {
                    return warn!(
                        ?step,
                        "a delivery step of an answer no longer kept; ignored"
                    );
                };
                if let Err(error) = store.set_stage(id, &before, &after).await {
                    warn!(id, %error, "could not keep a kept answer's delivery step");
                }
            }
        })
    }
}

/// A step's name without what it carries (an answer's text never reaches a log line).
fn short(step: &str) -> &str {
    step.split(['(', ' ', '{']).next().unwrap_or(step)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn inbox() -> (tempfile::TempDir, Inbox) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("gateway.db")).await.unwrap();
        (dir, Inbox::new(store))
    }

    fn arrived(key: &str) -> Arrived<'static> {
        Arrived {
            key: key.into(),
            payload: "{}",
            place: None,
        }
    }

    #[tokio::test]
    async fn a_message_goes_from_accepted_to_done_and_a_replay_sees_each_stage() {
        let (_dir, inbox) = inbox().await;
        let accepted = inbox
            .accept(Platform::Discord, &[arrived("1"), arrived("1")], None)
            .await;
        let Acceptance::New(mut ticket) = accepted[0].clone() else {
            panic!("{accepted:?}")
        };
        assert_eq!(accepted[1], Acceptance::Duplicate);

        let replayed = |inbox: Inbox| async move {
            let mut seen = Vec::new();
            inbox
                .replay(Platform::Discord, |ticket, _| {
                    seen.push(ticket.stage);
                    async { true }
                })
                .await;
            seen
        };
        inbox.advance(&mut ticket, Step::Take).await;
        assert_eq!(replayed(inbox.clone()).await, [Stage::Running]);
        inbox.advance(&mut ticket, Step::Answer("hi".into())).await;
        let ledger = inbox.ledger(&ticket);
        ledger.note(AnswerStep::Sending(0)).await;
        let sending = Stage::Answering {
            text: "hi".into(),
            pieces_taken: 0,
            sending: true,
        };
        assert_eq!(replayed(inbox.clone()).await, [sending]);
        ledger.note(AnswerStep::Delivered).await;
        assert_eq!(replayed(inbox.clone()).await, []);

        // A step that does not apply leaves the stage as it was.
        inbox.advance(&mut ticket, Step::Take).await;
        assert!(matches!(ticket.stage, Stage::Answering { .. }));
        inbox.advance(&mut ticket, Step::Finish).await;
        inbox.advance(&mut ticket, Step::Take).await;
        assert_eq!(ticket.stage, Stage::Done);
    }

    #[tokio::test]
    async fn a_replayed_message_not_taken_is_done() {
        let (_dir, inbox) = inbox().await;
        inbox
            .accept(Platform::Telegram, &[arrived("5"), arrived("6")], Some(7))
            .await;
        let mut handed = Vec::new();
        inbox
            .replay(Platform::Telegram, |ticket, _| {
                handed.push(ticket.id);
                std::future::ready(handed.len() == 2)
            })
            .await;
        assert_eq!(handed.len(), 2);
        let mut again = 0;
        inbox
            .replay(Platform::Telegram, |_, _| {
                again += 1;
                async { true }
            })
            .await;
        assert_eq!(again, 1, "the one not taken is done");
        assert_eq!(
            inbox.next_offset(Platform::Telegram).await.unwrap(),
            Some(7)
        );
    }
}
