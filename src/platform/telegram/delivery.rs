//! Telegram as a delivery sink: HTML-formatted replies with a plain-text fallback, 429s
//! waited out, network errors retried.

use std::sync::Arc;
use std::time::Duration;

use teloxide::payloads::{EditMessageTextSetters, SendMessage, SendMessageSetters};
use teloxide::prelude::Requester;
use teloxide::requests::JsonRequest;
use teloxide::types::{
    ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ParseMode,
};
use teloxide::{ApiError, RequestError};
use tracing::warn;

use super::{Shared, Target};
use crate::chat::ApprovalPrompt;
use crate::platform::delivery::{self, DECISIONS, Sink};
use crate::render;

/// Tries of one Bot API call that failed for a network reason or a 429.
const ATTEMPTS: u32 = 4;

pub(super) struct TelegramChat {
    pub(super) shared: Arc<Shared>,
    pub(super) target: Target,
}

impl Sink for TelegramChat {
    type MessageId = MessageId;
    const LIMIT: usize = 4096;
    const TYPING_RENEWAL: Duration = Duration::from_secs(4);

    fn units(text: &str) -> usize {
        render::utf16_len(text)
    }

    async fn send(&self, text: &str) -> Option<MessageId> {
        call(|| message(&self.shared, self.target, text))
            .await
            .map(|m| m.id)
    }

    /// Markdown as Telegram HTML, or as plain text if Telegram rejects the markup.
    async fn send_reply(&self, markdown: &str) {
        let html = render::telegram_html(markdown);
        let sent =
            call(|| message(&self.shared, self.target, &html).parse_mode(ParseMode::Html)).await;
        if sent.is_none() {
            self.send(markdown).await;
        }
    }

    async fn edit(&self, id: MessageId, text: &str) {
        let chat = self.target.chat_id;
        call(|| self.shared.bot.edit_message_text(chat, id, text)).await;
    }

    async fn edit_reply(&self, id: MessageId, markdown: &str) {
        let html = render::telegram_html(markdown);
        let chat = self.target.chat_id;
        let edit = || {
            self.shared
                .bot
                .edit_message_text(chat, id, &html)
                .parse_mode(ParseMode::Html)
        };
        if call(edit).await.is_none() {
            self.edit(id, markdown).await;
        }
    }

    async fn typing(&self) {
        call(|| {
            self.shared
                .bot
                .send_chat_action(self.target.chat_id, ChatAction::Typing)
        })
        .await;
    }

    async fn ask(&self, text: &str, prompt: &ApprovalPrompt) {
        let button = |decision| {
            InlineKeyboardButton::callback(
                delivery::decision_label(decision),
                delivery::approval_data(prompt.id, decision),
            )
        };
        let [accept, session, decline, cancel] = DECISIONS.map(button);
        let keyboard = InlineKeyboardMarkup::new([[accept, session], [decline, cancel]]);
        call(|| message(&self.shared, self.target, text).reply_markup(keyboard.clone())).await;
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

fn message(shared: &Shared, target: Target, text: &str) -> JsonRequest<SendMessage> {
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
