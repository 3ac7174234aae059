//! Telegram as a delivery sink: HTML-formatted replies with a plain-text fallback, 429s
//! waited out, network errors retried.

use std::sync::Arc;
use std::time::Duration;

use teloxide::payloads::{
    EditMessageTextSetters, SendDocument, SendDocumentSetters, SendMessage, SendMessageSetters,
};
use teloxide::prelude::{Bot, Requester};
use teloxide::requests::{JsonRequest, MultipartRequest};
use teloxide::types::{
    ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, InputFile, MessageId, ParseMode,
};
use teloxide::{ApiError, RequestError};

use super::{Shared, Target};
use crate::chat::{AnswerSlot, ApprovalPrompt};
use crate::platform::approvals::{ATTACHMENT_NAME, ApprovalCard, VERDICT_ROOM, button_data};
use crate::platform::choices::ChoiceButton;
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

    async fn send_file(&self, name: &str, bytes: &[u8]) {
        call(|| document(&self.shared.bot, self.target, name, bytes.to_vec())).await;
    }

    /// The listing with its options as buttons, two a row (Telegram has no answer slots).
    async fn offer(&self, _slot: Option<AnswerSlot>, text: &str, buttons: &[ChoiceButton]) {
        let buttons: Vec<_> = buttons
            .iter()
            .map(|b| InlineKeyboardButton::callback(b.label.clone(), b.data.clone()))
            .collect();
        let keyboard = InlineKeyboardMarkup::new(buttons.chunks(2).map(<[_]>::to_vec));
        let bot = &self.shared.bot;
        call(|| message(bot, self.target, text).reply_markup(keyboard.clone())).await;
    }

    /// The request in a `<pre>` block when it fits one message with room for the verdict;
    /// otherwise attached whole as a text file, the buttons under it.
    async fn ask(&self, card: &ApprovalCard, prompt: &ApprovalPrompt) {
        let keyboard = keyboard(prompt);
        let bot = &self.shared.bot;
        if let Some(html) = prompt_html(card) {
            let sent = call(|| {
                message(bot, self.target, &html)
                    .parse_mode(ParseMode::Html)
                    .reply_markup(keyboard.clone())
            })
            .await;
            if sent.is_some() {
                return;
            }
        }
        let caption = format!(
            "{}\n{}",
            render::html_escape(&card.title),
            render::html_escape(&card.attached_note())
        );
        let file = card.full_text().into_bytes();
        call(|| {
            document(bot, self.target, ATTACHMENT_NAME, file.clone())
                .caption(caption.clone())
                .parse_mode(ParseMode::Html)
                .reply_markup(keyboard.clone())
        })
        .await;
    }
}

/// The prompt as one HTML message, or `None` if it would not fit with the verdict.
fn prompt_html(card: &ApprovalCard) -> Option<String> {
    let mut head = card.title.clone();
    for line in &card.details {
        head.push('\n');
        head.push_str(line);
    }
    let shown = render::utf16_len(&head) + 1 + render::utf16_len(&card.body);
    (shown + VERDICT_ROOM <= TelegramChat::LIMIT).then(|| {
        format!(
            "{}\n<pre>{}</pre>",
            render::html_escape(&head),
            render::html_escape(&card.body)
        )
    })
}

/// The decisions the prompt offers, two buttons a row.
fn keyboard(prompt: &ApprovalPrompt) -> InlineKeyboardMarkup {
    let buttons: Vec<_> = prompt
        .decisions
        .iter()
        .map(|&decision| {
            InlineKeyboardButton::callback(decision.label(), button_data(prompt.id, decision))
        })
        .collect();
    InlineKeyboardMarkup::new(buttons.chunks(2).map(<[_]>::to_vec))
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

/// A file sent as a document to the target (its topic included).
fn document(
    bot: &Bot,
    target: Target,
    name: &str,
    bytes: Vec<u8>,
) -> MultipartRequest<SendDocument> {
    let file = InputFile::memory(bytes).file_name(name.to_owned());
    let request = bot.send_document(target.chat_id, file);
    match target.topic {
        Some(topic) => request.message_thread_id(topic),
        None => request,
    }
}

/// Sends one plain message outside any chat worker (refusals and hints).
pub(super) async fn send_plain(bot: Bot, target: Target, text: String) {
    call(|| message(&bot, target, &text)).await;
}
