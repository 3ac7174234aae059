//! Delivering answers to a chat platform: one worker per chat, so a slow chat never holds
//! up another. A streamed reply is one message edited at most once per interval; the final
//! text replaces it exactly, split at the platform's limit with code fences balanced.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::approvals::prompt_text;
use crate::chat::{AnswerSlot, ApprovalPrompt, ChatKey, Outbound, OutboundKind};
use crate::{deadline, render};

/// One chat on one platform, as the worker needs it.
pub trait Sink: Send + Sync + 'static {
    type MessageId: Copy + Send;
    /// Longest message, in the platform's units.
    const LIMIT: usize;
    /// How long the platform shows "typing" after one request.
    const TYPING_RENEWAL: Duration;
    fn units(text: &str) -> usize;

    /// Sends plain text (a streamed preview or a notice).
    fn send(&self, text: &str) -> impl Future<Output = Option<Self::MessageId>> + Send;
    /// Sends one piece of a final reply (Markdown), formatted as the platform wants.
    fn send_reply(&self, markdown: &str) -> impl Future<Output = ()> + Send;
    fn edit(&self, id: Self::MessageId, text: &str) -> impl Future<Output = ()> + Send;
    fn edit_reply(&self, id: Self::MessageId, markdown: &str) -> impl Future<Output = ()> + Send;
    fn typing(&self) -> impl Future<Output = ()> + Send;
    /// Shows an approval prompt with the four decisions as buttons.
    fn ask(&self, text: &str, prompt: &ApprovalPrompt) -> impl Future<Output = ()> + Send;
    /// A gateway notice.
    fn notice(&self, text: &str) -> impl Future<Output = ()> + Send {
        async move {
            for piece in render::split(text, Self::LIMIT, Self::units) {
                self.send(&piece).await;
            }
        }
    }
    /// A notice that answers one message at its answer slot; by default a notice.
    fn answer(&self, slot: AnswerSlot, text: &str) -> impl Future<Output = ()> + Send {
        let _ = slot;
        self.notice(text)
    }
}

/// Routes each answer to its chat's worker; `sink_for` makes a chat's sink (or `None` to
/// drop answers for chats the platform never saw). Ends once every outbox is closed and
/// every worker has delivered what it holds.
pub async fn run<S: Sink>(
    mut answers: mpsc::UnboundedReceiver<Outbound>,
    interval: Duration,
    mut sink_for: impl FnMut(&ChatKey) -> Option<S>,
) {
    let mut workers: HashMap<ChatKey, mpsc::UnboundedSender<OutboundKind>> = HashMap::new();
    let mut tasks = Vec::new();
    while let Some(Outbound { chat, kind }) = answers.recv().await {
        let sink = sink_for(&chat);
        let worker = match workers.get(&chat) {
            Some(worker) => worker,
            None => {
                let Some(sink) = sink else {
                    warn!(%chat, "an answer for a chat the platform never saw; dropped");
                    continue;
                };
                let (tx, rx) = mpsc::unbounded_channel();
                tasks.push(tokio::spawn(Worker::new(sink, interval).run(rx)));
                workers.entry(chat).or_insert(tx)
            }
        };
        let _ = worker.send(kind);
    }
    drop(workers);
    for task in tasks {
        let _ = task.await;
    }
}

/// The reply being streamed into one message.
struct Stream<Id> {
    message_id: Id,
    last_edit: Instant,
    /// Newer text not shown yet (waits for the edit interval).
    pending: Option<String>,
}

struct Worker<S: Sink> {
    sink: S,
    interval: Duration,
    stream: Option<Stream<S::MessageId>>,
    typing: bool,
}

impl<S: Sink> Worker<S> {
    fn new(sink: S, interval: Duration) -> Self {
        Self {
            sink,
            interval,
            stream: None,
            typing: false,
        }
    }

    async fn run(mut self, mut events: mpsc::UnboundedReceiver<OutboundKind>) {
        let mut next_typing = Instant::now();
        loop {
            let flush_at = self
                .stream
                .as_ref()
                .filter(|s| s.pending.is_some())
                .map(|s| s.last_edit + self.interval);
            tokio::select! {
                event = events.recv() => match event {
                    Some(event) => {
                        if event == OutboundKind::Working(true) {
                            next_typing = Instant::now();
                        }
                        self.handle(event).await;
                    }
                    None => return,
                },
                () = deadline::sleep_until(flush_at) => self.flush().await,
                () = tokio::time::sleep_until(next_typing), if self.typing => {
                    self.sink.typing().await;
                    next_typing = Instant::now() + S::TYPING_RENEWAL;
                }
            }
        }
    }

    async fn handle(&mut self, event: OutboundKind) {
        match event {
            OutboundKind::Working(working) => self.typing = working,
            OutboundKind::Partial(text) => match &mut self.stream {
                Some(stream) => stream.pending = Some(text),
                None => {
                    if let Some(message_id) = self.sink.send(&preview::<S>(&text)).await {
                        self.stream = Some(Stream {
                            message_id,
                            last_edit: Instant::now(),
                            pending: None,
                        });
                    }
                }
            },
            OutboundKind::Reply(text) => self.finish_reply(&text).await,
            OutboundKind::Notice(text) => self.sink.notice(&text).await,
            OutboundKind::Answer { slot, text } => self.sink.answer(slot, &text).await,
            OutboundKind::Approval(prompt) => {
                self.sink
                    .ask(&preview::<S>(&prompt_text(&prompt)), &prompt)
                    .await
            }
            OutboundKind::Progress(line) => debug!(line, "progress not shown on chat platforms"),
        }
    }

    /// Shows the newest streamed text; called once the edit interval allows.
    async fn flush(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let Some(text) = stream.pending.take() else {
            return;
        };
        let id = stream.message_id;
        self.sink.edit(id, &preview::<S>(&text)).await;
        // Counted from the answer, so no two edits ever reach the platform closer together
        // than the interval, however long one request takes.
        if let Some(stream) = self.stream.as_mut() {
            stream.last_edit = Instant::now();
        }
    }

    /// The final text: the streamed message becomes its first piece (after the edit
    /// interval), further pieces follow as new messages.
    async fn finish_reply(&mut self, text: &str) {
        let pieces = render::split(text, S::LIMIT, S::units);
        let mut pieces = pieces.iter();
        if let Some(stream) = self.stream.take() {
            tokio::time::sleep_until(stream.last_edit + self.interval).await;
            if let Some(first) = pieces.next() {
                self.sink.edit_reply(stream.message_id, first).await;
            }
        }
        for piece in pieces {
            self.sink.send_reply(piece).await;
        }
    }
}

/// A streamed text as it fits one message.
fn preview<S: Sink>(text: &str) -> String {
    let first = render::split(text, S::LIMIT - 2, S::units)
        .into_iter()
        .next()
        .unwrap_or_default();
    if first.len() < text.trim_end().len() {
        format!("{first} …")
    } else {
        first
    }
}
