//! Delivering answers to Telegram: one worker per chat, so a slow chat never holds up
//! another. A streamed reply is one message edited at most once per `edit_interval`; the
//! final text replaces it exactly, split at 4096 UTF-16 units with code fences balanced.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use teloxide::payloads::{EditMessageTextSetters, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::types::{
    ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ParseMode,
};
use teloxide::{ApiError, RequestError};
use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, warn};

use super::{Shared, Target, inbound};
use crate::chat::{ApprovalPrompt, ChatKey, Outbound, OutboundKind};
use crate::codex::{ApprovalDecision, ApprovalKind};
use crate::{deadline, render};

/// Telegram's limit on one message, in UTF-16 units.
const MESSAGE_LIMIT: usize = 4096;
/// Telegram shows "typing" for about 5 seconds; renew it before then.
const TYPING_RENEWAL: Duration = Duration::from_secs(4);
/// Tries of one Bot API call that failed for a network reason or a 429.
const ATTEMPTS: u32 = 4;

/// Routes each answer to its chat's worker.
pub(super) async fn run(shared: Arc<Shared>, mut answers: mpsc::UnboundedReceiver<Outbound>) {
    let mut workers: HashMap<ChatKey, mpsc::UnboundedSender<OutboundKind>> = HashMap::new();
    let mut tasks = Vec::new();
    while let Some(Outbound { chat, kind }) = answers.recv().await {
        let Some(target) = shared.targets.lock().expect("lock").get(&chat).copied() else {
            warn!(%chat, "telegram: an answer for a chat never seen; dropped");
            continue;
        };
        if let OutboundKind::Approval(prompt) = &kind {
            shared
                .approvals
                .lock()
                .expect("lock")
                .insert(prompt.id, chat.clone());
        }
        let worker = workers.entry(chat).or_insert_with(|| {
            let (tx, rx) = mpsc::unbounded_channel();
            tasks.push(tokio::spawn(
                ChatWorker::new(shared.clone(), target).run(rx),
            ));
            tx
        });
        let _ = worker.send(kind);
    }
    // The router has shut down: let every worker deliver what it holds.
    drop(workers);
    for task in tasks {
        let _ = task.await;
    }
}

/// The reply being streamed into one message.
struct Stream {
    message_id: MessageId,
    last_edit: Instant,
    /// Newer text not shown yet (waits for the edit interval).
    pending: Option<String>,
}

struct ChatWorker {
    shared: Arc<Shared>,
    target: Target,
    interval: Duration,
    stream: Option<Stream>,
    typing: bool,
}

impl ChatWorker {
    fn new(shared: Arc<Shared>, target: Target) -> Self {
        let interval = Duration::from_millis(shared.config.edit_interval_ms);
        Self {
            shared,
            target,
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
                    call(|| self.shared.bot.send_chat_action(self.target.chat_id, ChatAction::Typing)).await;
                    next_typing = Instant::now() + TYPING_RENEWAL;
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
                    let shown = preview(&text);
                    if let Some(message) = call(|| self.send(&shown)).await {
                        self.stream = Some(Stream {
                            message_id: message.id,
                            last_edit: Instant::now(),
                            pending: None,
                        });
                    }
                }
            },
            OutboundKind::Reply(text) => self.finish_reply(&text).await,
            OutboundKind::Notice(text) => {
                for piece in render::split(&text, MESSAGE_LIMIT, render::utf16_len) {
                    call(|| self.send(&piece)).await;
                }
            }
            OutboundKind::Approval(prompt) => self.ask(&prompt).await,
            OutboundKind::Progress(line) => debug!(line, "telegram: progress not shown"),
        }
    }

    /// Shows the newest streamed text, if the interval allows an edit now.
    async fn flush(&mut self) {
        let Some(stream) = self.stream.as_mut() else {
            return;
        };
        let Some(text) = stream.pending.take() else {
            return;
        };
        stream.last_edit = Instant::now();
        let (chat, id) = (self.target.chat_id, stream.message_id);
        let shown = preview(&text);
        call(|| self.shared.bot.edit_message_text(chat, id, shown.clone())).await;
    }

    /// The final text: the streamed message becomes its first piece (after the edit
    /// interval), further pieces follow as new messages.
    async fn finish_reply(&mut self, text: &str) {
        let pieces = render::split(text, MESSAGE_LIMIT, render::utf16_len);
        let mut pieces = pieces.iter();
        if let Some(stream) = self.stream.take() {
            tokio::time::sleep_until(stream.last_edit + self.interval).await;
            if let Some(first) = pieces.next() {
                self.edit_formatted(stream.message_id, first).await;
            }
        }
        for piece in pieces {
            self.send_formatted(piece).await;
        }
    }

    async fn ask(&mut self, prompt: &ApprovalPrompt) {
        let request = &prompt.request;
        let what = match request.kind {
            ApprovalKind::Command => "Codex asks to run a command",
            ApprovalKind::FileChange => "Codex asks to change files",
        };
        let mut text = what.to_owned();
        if let Some(command) = &request.command {
            text.push_str(&format!(":\n{command}"));
        }
        if let Some(cwd) = &request.cwd {
            text.push_str(&format!("\nin {cwd}"));
        }
        if let Some(reason) = &request.reason {
            text.push_str(&format!("\nReason: {reason}"));
        }
        let button = |decision| {
            InlineKeyboardButton::callback(
                decision_label(decision),
                inbound::approval_data(prompt.id, decision),
            )
        };
        let keyboard = InlineKeyboardMarkup::new([
            [
                button(ApprovalDecision::Accept),
                button(ApprovalDecision::AcceptForSession),
            ],
            [
                button(ApprovalDecision::Decline),
                button(ApprovalDecision::Cancel),
            ],
        ]);
        let text = preview(&text);
        call(|| self.send(&text).reply_markup(keyboard.clone())).await;
    }

    fn send(&self, text: &str) -> teloxide::requests::JsonRequest<teloxide::payloads::SendMessage> {
        message(&self.shared, self.target, text)
    }

    /// Sends Markdown as Telegram HTML, or as plain text if Telegram rejects the markup.
    async fn send_formatted(&self, markdown: &str) {
        let html = render::telegram_html(markdown);
        let formatted = call(|| self.send(&html).parse_mode(ParseMode::Html)).await;
        if formatted.is_none() {
            call(|| self.send(markdown)).await;
        }
    }

    async fn edit_formatted(&self, id: MessageId, markdown: &str) {
        let html = render::telegram_html(markdown);
        let chat = self.target.chat_id;
        let edit = |text: String, html: bool| {
            let request = self.shared.bot.edit_message_text(chat, id, text);
            if html {
                request.parse_mode(ParseMode::Html)
            } else {
                request
            }
        };
        if call(|| edit(html.clone(), true)).await.is_none() {
            call(|| edit(markdown.to_owned(), false)).await;
        }
    }
}

/// Runs a Bot API call, waiting out 429s and retrying network errors. `None` when it
/// failed for good (logged) or changed nothing ("message is not modified").
async fn call<R, F>(request: impl Fn() -> F) -> Option<R>
where
    F: std::future::IntoFuture<Output = Result<R, RequestError>>,
{
    for attempt in 1..=ATTEMPTS {
        match request().await {
            Ok(result) => return Some(result),
            Err(RequestError::RetryAfter(seconds)) => tokio::time::sleep(seconds.duration()).await,
            Err(RequestError::Network(error)) if attempt < ATTEMPTS => {
                warn!(%error, attempt, "telegram: network error; retrying");
                tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
            }
            Err(RequestError::Api(ApiError::MessageNotModified)) => return None,
            Err(error) => {
                warn!(%error, "telegram: request failed");
                return None;
            }
        }
    }
    None
}

fn message(
    shared: &Shared,
    target: Target,
    text: &str,
) -> teloxide::requests::JsonRequest<teloxide::payloads::SendMessage> {
    let request = shared.bot.send_message(target.chat_id, text);
    match target.topic {
        Some(topic) => request.message_thread_id(topic),
        None => request,
    }
}

/// Sends one plain message outside any chat worker (refusals and the like).
pub(super) async fn send_plain(shared: &Shared, target: Target, text: &str) {
    call(|| message(shared, target, text)).await;
}

/// A streamed text as it fits one message.
fn preview(text: &str) -> String {
    render::split(text, MESSAGE_LIMIT - 2, render::utf16_len)
        .into_iter()
        .next()
        .map(|first| {
            if first.len() < text.trim_end().len() {
                format!("{first} …")
            } else {
                first
            }
        })
        .unwrap_or_default()
}

pub(super) fn decision_label(decision: ApprovalDecision) -> &'static str {
    match decision {
        ApprovalDecision::Accept => "Accept",
        ApprovalDecision::AcceptForSession => "Accept for session",
        ApprovalDecision::Decline => "Decline",
        ApprovalDecision::Cancel => "Cancel",
    }
}
