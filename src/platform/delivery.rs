//! Delivering answers to a chat platform: one worker per chat, so a slow chat never holds
//! up another. A streamed reply is one message edited at most once per interval; the final
//! text replaces it exactly, split at the platform's limit with code fences balanced.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, warn};

use crate::chat::{ApprovalPrompt, ChatKey, Outbound, OutboundKind};
use crate::codex::{ApprovalDecision, ApprovalKind};
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
    /// A gateway notice; platforms with a pending command reply may answer there instead.
    fn notice(&self, text: &str) -> impl Future<Output = ()> + Send {
        async move {
            for piece in render::split(text, Self::LIMIT, Self::units) {
                self.send(&piece).await;
            }
        }
    }
}

/// Which chat each approval prompt was shown in, so a button press finds its chat.
#[derive(Clone, Default)]
pub struct PromptOwners(Arc<Mutex<HashMap<u64, ChatKey>>>);

impl PromptOwners {
    /// The prompt's chat, once: a prompt is decided at most once.
    pub fn take(&self, id: u64) -> Option<ChatKey> {
        self.0.lock().expect("lock").remove(&id)
    }
}

/// Routes each answer to its chat's worker; `sink_for` makes a chat's sink (or `None` to
/// drop answers for chats the platform never saw). Ends once every outbox is closed and
/// every worker has delivered what it holds.
pub async fn run<S: Sink>(
    mut answers: mpsc::UnboundedReceiver<Outbound>,
    interval: Duration,
    owners: PromptOwners,
    mut sink_for: impl FnMut(&ChatKey) -> Option<S>,
) {
    let mut workers: HashMap<ChatKey, mpsc::UnboundedSender<OutboundKind>> = HashMap::new();
    let mut tasks = Vec::new();
    while let Some(Outbound { chat, kind }) = answers.recv().await {
        if let OutboundKind::Approval(prompt) = &kind {
            owners
                .0
                .lock()
                .expect("lock")
                .insert(prompt.id, chat.clone());
        }
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

fn prompt_text(prompt: &ApprovalPrompt) -> String {
    let request = &prompt.request;
    let mut text = match request.kind {
        ApprovalKind::Command => "Codex asks to run a command",
        ApprovalKind::FileChange => "Codex asks to change files",
    }
    .to_owned();
    if let Some(command) = &request.command {
        text.push_str(&format!(":\n{command}"));
    }
    if let Some(cwd) = &request.cwd {
        text.push_str(&format!("\nin {cwd}"));
    }
    if let Some(reason) = &request.reason {
        text.push_str(&format!("\nReason: {reason}"));
    }
    text
}

/// The four choices of an approval prompt, in button order.
pub const DECISIONS: [ApprovalDecision; 4] = [
    ApprovalDecision::Accept,
    ApprovalDecision::AcceptForSession,
    ApprovalDecision::Decline,
    ApprovalDecision::Cancel,
];

pub fn decision_label(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::Accept => "Accept",
        ApprovalDecision::AcceptForSession => "Accept for session",
        ApprovalDecision::Decline => "Decline",
        ApprovalDecision::Cancel => "Cancel",
    }
}

/// Button data of an approval decision: `ap:<id>:<decision>` (fits Telegram's 64 bytes
/// and Discord's 100-character custom ids).
pub fn approval_data(id: u64, decision: ApprovalDecision) -> String {
    let code = match decision {
        ApprovalDecision::Accept => 'a',
        ApprovalDecision::AcceptForSession => 's',
        ApprovalDecision::Decline => 'd',
        ApprovalDecision::Cancel => 'c',
    };
    format!("ap:{id}:{code}")
}

pub fn parse_approval_data(data: &str) -> Option<(u64, ApprovalDecision)> {
    let rest = data.strip_prefix("ap:")?;
    let (id, code) = rest.split_once(':')?;
    let decision = match code {
        "a" => ApprovalDecision::Accept,
        "s" => ApprovalDecision::AcceptForSession,
        "d" => ApprovalDecision::Decline,
        "c" => ApprovalDecision::Cancel,
        _ => return None,
    };
    Some((id.parse().ok()?, decision))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_data_round_trips() {
        for decision in DECISIONS {
            let data = approval_data(u64::MAX, decision);
            assert!(data.len() <= 64);
            assert_eq!(parse_approval_data(&data), Some((u64::MAX, decision)));
        }
        assert_eq!(parse_approval_data("ap:1:x"), None);
        assert_eq!(parse_approval_data("other"), None);
    }
}
