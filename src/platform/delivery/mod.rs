//! Delivering answers to a chat platform: one worker per chat, so a slow chat never holds
//! up another. A quick answer is one message; a turn still running after the first-flush
//! delay shows one status message edited at most once per interval, which becomes the
//! turn's summary line when it ends. The answer is always a new message (the one that
//! notifies), split at the platform's limit with code fences balanced, and a platform
//! outage longer than the retry policy holds it back until it passes, not away.

mod worker;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::warn;

use crate::platform::approvals::ApprovalCard;
use crate::platform::choices::ChoiceButton;
use crate::platform::retry::Unsent;
use crate::render;
use chat::{AnswerSlot, ApprovalPrompt, ChatKey, Notify, Outbound, OutboundKind};
use worker::Worker;

/// How a chat's replies are paced.
#[derive(Debug, Clone, Copy)]
pub struct Pace {
    /// Least time between two edits of one message.
    pub edit_interval: Duration,
    /// How long a turn runs before its text starts streaming; a quicker turn's answer is
    /// sent once, whole.
    pub first_flush: Duration,
}

impl Pace {
    /// From a platform's `edit_interval_ms` and `first_flush_ms`.
    pub fn from_millis(edit_interval: u64, first_flush: u64) -> Self {
        Self {
            edit_interval: Duration::from_millis(edit_interval),
            first_flush: Duration::from_millis(first_flush),
        }
    }
}

/// One chat on one platform, as the worker needs it.
pub trait Sink: Send + Sync + 'static {
    type MessageId: Copy + Send + Sync;
    /// Longest message, in the platform's units.
    const LIMIT: usize;
    /// How long the platform shows "typing" after one request.
    const TYPING_RENEWAL: Duration;
    /// Where its Markdown opens and closes code fences.
    const FENCES: render::Fences = render::Fences::AtLineStart;
    fn units(text: &str) -> usize;
    /// Which of the chat's next messages notify (its `/notify` choice); by default the
    /// platform cannot tell.
    fn set_notify(&mut self, notify: Notify) {
        let _ = notify;
    }
    /// Least time between two edits the platform allows this chat, when it is longer
    /// than the configured interval (Telegram groups: 20 messages a minute).
    fn least_edit_interval(&self) -> Duration {
        Duration::ZERO
    }

    /// Sends plain text (a streamed preview or a notice).
    fn send(&self, text: &str) -> impl Future<Output = Result<Self::MessageId, Unsent>> + Send;
    /// Sends one piece of a final reply (Markdown), formatted as the platform wants.
    fn send_reply(&self, markdown: &str) -> impl Future<Output = Result<(), Unsent>> + Send;
    fn edit(
        &self,
        id: Self::MessageId,
        text: &str,
    ) -> impl Future<Output = Result<(), Unsent>> + Send;
    fn edit_reply(
        &self,
        id: Self::MessageId,
        markdown: &str,
    ) -> impl Future<Output = Result<(), Unsent>> + Send;
    fn typing(&self) -> impl Future<Output = ()> + Send;
    /// Sends the running turn's status (or trouble line): without a buzz (unless the
    /// chat asked for every message to notify), and with a Stop button when `stop` and
    /// the platform has buttons. By default, as `send`.
    fn send_status(
        &self,
        text: &str,
        stop: bool,
    ) -> impl Future<Output = Result<Self::MessageId, Unsent>> + Send {
        let _ = stop;
        self.send(text)
    }
    /// How often the running turn's draft is sent again while nothing changes, where the
    /// status streams as a draft (Telegram's private chats); `None` where it is a message.
    fn draft_refresh(&self) -> Option<Duration> {
        None
    }
    /// A new draft's id, for one running turn.
    fn new_draft(&self) -> i64 {
        0
    }
    /// Shows `text` as draft `id`, with the platform's own stop. A refusal turns drafts
    /// off for good (`draft_refresh` is `None` from then on): the status becomes a message.
    fn draft(&self, id: i64, text: &str) -> impl Future<Output = Result<(), Unsent>> + Send {
        let _ = (id, text);
        async { Err(Unsent::Refused) }
    }
    /// Edits it: the Stop button stays while `stop`, and goes when the turn is over.
    fn edit_status(
        &self,
        id: Self::MessageId,
        text: &str,
        stop: bool,
    ) -> impl Future<Output = Result<(), Unsent>> + Send {
        let _ = stop;
        self.edit(id, text)
    }
    /// Shows an approval prompt (as `card` says: whole, every character visible) with the
    /// decisions it offers as buttons; returns its message, if it was sent.
    fn ask(
        &self,
        card: &ApprovalCard,
        prompt: &ApprovalPrompt,
    ) -> impl Future<Output = Option<Self::MessageId>> + Send;
    /// Closes the prompt `ask` sent as `id`: `line` under it, and no buttons.
    fn close_prompt(
        &self,
        id: Self::MessageId,
        card: &ApprovalCard,
        line: &str,
    ) -> impl Future<Output = ()> + Send;
    /// A gateway notice.
    fn notice(&self, text: &str) -> impl Future<Output = ()> + Send {
        async move {
            for piece in render::split(text, Self::LIMIT, Self::units, Self::FENCES) {
                let _ = self.send(&piece).await;
            }
        }
    }
    /// Sends a file as a document; by default says the platform cannot.
    fn send_file(&self, name: &str, bytes: &[u8]) -> impl Future<Output = ()> + Send {
        let text = format!(
            "{name} ({} bytes) cannot be sent on this platform.",
            bytes.len()
        );
        async move { self.notice(&text).await }
    }
    /// A listing with a button per option (at its answer slot, if it has one); by
    /// default its text, which names the options too.
    fn offer(
        &self,
        slot: Option<AnswerSlot>,
        text: &str,
        buttons: &[ChoiceButton],
    ) -> impl Future<Output = ()> + Send {
        let _ = buttons;
        async move {
            match slot {
                Some(slot) => self.answer(slot, text).await,
                None => self.notice(text).await,
            }
        }
    }
    /// Opens a place of its own for the task `title` (a thread, a topic) and says where,
    /// or why not, at the answer slot; by default says the platform has no such places.
    fn open_task(&self, slot: Option<AnswerSlot>, title: &str) -> impl Future<Output = ()> + Send {
        let _ = title;
        async move {
            let text = crate::platform::texts::NO_TASK_PLACES;
            match slot {
                Some(slot) => self.answer(slot, text).await,
                None => self.notice(text).await,
            }
        }
    }
    /// Gives a task's own place (a thread or topic the bot opened) the name of its Codex
    /// thread; by default there is none.
    fn rename_task(&self, name: &str) -> impl Future<Output = ()> + Send {
        let _ = name;
        async {}
    }
    /// A notice that answers one message at its answer slot; by default a notice.
    fn answer(&self, slot: AnswerSlot, text: &str) -> impl Future<Output = ()> + Send {
        let _ = slot;
        self.notice(text)
    }
}

/// The newest status of a chat's running turn, not yet taken by its worker: a slow
/// platform holds one status per chat, not every change.
pub(super) type Latest = Arc<Mutex<Option<String>>>;

/// What a worker is handed.
pub(super) enum Delivery {
    Event(OutboundKind),
    /// A newer status waits in `Latest`.
    Streamed,
}

struct WorkerHandle {
    tasks: mpsc::UnboundedSender<Delivery>,
    latest: Latest,
}

impl WorkerHandle {
    fn hand_over(&self, kind: OutboundKind) {
        let task = match kind {
            OutboundKind::Status(text) => {
                let waiting = self.latest.lock().expect("lock").replace(text);
                if waiting.is_some() {
                    return; // the worker has not taken the older text yet: replaced
                }
                Delivery::Streamed
            }
            other => Delivery::Event(other),
        };
        let _ = self.tasks.send(task);
    }
}

/// Routes each answer to its chat's worker; `sink_for` makes a chat's sink (or `None` to
/// drop answers for chats the platform never saw). Ends once every outbox is closed and
/// every worker has delivered what it holds.
pub async fn run<S: Sink>(
    mut answers: mpsc::UnboundedReceiver<Outbound>,
    pace: Pace,
    mut sink_for: impl FnMut(&ChatKey) -> Option<S>,
) {
    let mut workers: HashMap<ChatKey, WorkerHandle> = HashMap::new();
    let mut running = Vec::new();
    while let Some(Outbound { chat, kind }) = answers.recv().await {
        let worker = match workers.get(&chat) {
            Some(worker) => worker,
            None => {
                let Some(sink) = sink_for(&chat) else {
                    warn!(%chat, "an answer for a chat the platform never saw; dropped");
                    continue;
                };
                let (tasks, rx) = mpsc::unbounded_channel();
                let latest = Latest::default();
                let worker = Worker::new(sink, pace, latest.clone());
                running.push(tokio::spawn(worker.run(rx)));
                workers
                    .entry(chat)
                    .or_insert(WorkerHandle { tasks, latest })
            }
        };
        worker.hand_over(kind);
    }
    drop(workers);
    for worker in running {
        let _ = worker.await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streamed_text_is_coalesced_until_the_worker_takes_it() {
        let (tasks, mut handed) = mpsc::unbounded_channel();
        let worker = WorkerHandle {
            tasks,
            latest: Latest::default(),
        };
        for text in ["a", "ab", "abc"] {
            worker.hand_over(OutboundKind::Status(text.into()));
        }
        worker.hand_over(OutboundKind::Reply("abc!".into()));
        assert!(matches!(handed.try_recv(), Ok(Delivery::Streamed)));
        assert_eq!(worker.latest.lock().unwrap().take().as_deref(), Some("abc"));
        assert!(matches!(
            handed.try_recv(),
            Ok(Delivery::Event(OutboundKind::Reply(_)))
        ));
        assert!(handed.try_recv().is_err(), "one task for three texts");
    }
}
