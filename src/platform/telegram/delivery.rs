//! Telegram as a delivery sink: HTML-formatted replies with a plain-text fallback, 429s
//! waited out, network errors retried.

use std::sync::Arc;
use std::time::Duration;

use teloxide::payloads::{EditMessageTextSetters, SendMessage, SendMessageSetters};
use teloxide::prelude::{Bot, Requester};
use teloxide::requests::JsonRequest;
use teloxide::types::{
    ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ParseMode,
};
use teloxide::{ApiError, RequestError};

use super::{Shared, Target};
use crate::chat::{ApprovalPrompt, Decision};
use crate::platform::approvals::button_data;
use crate::platform::delivery::Sink;
use crate::platform::retry::{self, Failure};
use crate::render;

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
        call(|| message(&self.shared.bot, self.target, text))
            .await
            .map(|m| m.id)
    }

    /// Markdown as Telegram HTML, or as plain text if Telegram rejects the markup.
    async fn send_reply(&self, markdown: &str) {
        let html = render::telegram_html(markdown);
        let sent =
            call(|| message(&self.shared.bot, self.target, &html).parse_mode(ParseMode::Html))
                .await;
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
        let button = |decision: Decision| {
            InlineKeyboardButton::callback(decision.label(), button_data(prompt.id, decision))
        };
        let [accept, session, decline, cancel] = Decision::ALL.map(button);
        let keyboard = InlineKeyboardMarkup::new([[accept, session], [decline, cancel]]);
        call(|| message(&self.shared.bot, self.target, text).reply_markup(keyboard.clone())).await;
    }
}

/// The Bot API's errors under the shared retry policy: 429s wait as told, network errors
/// pass, an edit that changed nothing is no failure.
fn classify(error: &RequestError) -> Failure {
    match error {
        RequestError::RetryAfter(seconds) => Failure::RetryAfter(seconds.duration()),
        RequestError::Network(_) => Failure::Transient,
        RequestError::Api(ApiError::MessageNotModified) => Failure::Harmless,
        _ => Failure::Final,
    }
}

async fn call<R, F>(request: impl Fn() -> F) -> Option<R>
where
    F: std::future::IntoFuture<Output = Result<R, RequestError>>,
{
    retry::call("telegram", request, classify).await
}

fn message(bot: &Bot, target: Target, text: &str) -> JsonRequest<SendMessage> {
    let request = bot.send_message(target.chat_id, text);
    match target.topic {
        Some(topic) => request.message_thread_id(topic),
        None => request,
    }
}

/// Sends one plain message outside any chat worker (refusals and hints).
pub(super) async fn send_plain(bot: Bot, target: Target, text: String) {
    call(|| message(&bot, target, &text)).await;
}
