//! Telegram as a delivery sink: HTML-formatted replies with a plain-text fallback, 429s
//! waited out, network and server errors retried (through `api`, which keeps the status).

use std::sync::Arc;
use std::time::Duration;

use reqwest::multipart::{Form, Part};
use serde::de::IgnoredAny;
use teloxide::payloads::{
    EditMessageCaption, EditMessageCaptionSetters, EditMessageText, EditMessageTextSetters,
    SendChatAction, SendMessage, SendMessageSetters,
};
use teloxide::types::{
    ChatAction, InlineKeyboardButton, InlineKeyboardMarkup, MessageId, ParseMode,
};
use tracing::warn;

use super::api::{self, BotApi, CallError};
use super::drafts::{self, SendMessageDraft};
use super::{Shared, Target, inbound, topics};
use crate::platform::approvals::{ATTACHMENT_NAME, ApprovalCard, VERDICT_ROOM, button_data};
use crate::platform::choices::ChoiceButton;
use crate::platform::delivery::Sink;
use crate::platform::retry::{self, Unsent};
use crate::platform::texts;
use crate::render;
use crate::router::Router;
use chat::{AnswerSlot, ApprovalPrompt, ChatKey, Decision, Notify};

pub(super) struct TelegramChat {
    pub(super) shared: Arc<Shared>,
    pub(super) target: Target,
    /// The chat key it delivers for; a task's topic opened from it gets one like it.
    pub(super) chat: ChatKey,
    /// Where a topic opened for a task is kept as the task's place.
    pub(super) router: Router,
    /// The chat's `/notify` choice.
    pub(super) notify: Notify,
}

impl TelegramChat {
    /// A message to the chat: silent when it asked for no notifications.
    fn message(&self, text: impl Into<String>) -> SendMessage {
        message(self.target, text).disable_notification(self.notify == Notify::Off)
    }
}

/// What a sent message's answer is read for.
#[derive(serde::Deserialize)]
struct Sent {
    message_id: i32,
}

/// Least time between two edits in a group, where Telegram takes 20 messages a minute:
/// 15 edits a minute leave room for the answer and notices (at 3 s, the status alone
/// filled the minute and the answer was refused with 429, measured).
const GROUP_EDIT_INTERVAL: Duration = Duration::from_secs(4);

impl Sink for TelegramChat {
    type MessageId = MessageId;
    const LIMIT: usize = 4096;
    const TYPING_RENEWAL: Duration = Duration::from_secs(4);

    fn units(text: &str) -> usize {
        render::utf16_len(text)
    }

    fn set_notify(&mut self, notify: Notify) {
        self.notify = notify;
    }

    fn least_edit_interval(&self) -> Duration {
        // Groups (negative ids) take 20 messages a minute from a bot; edits count.
        if self.target.chat_id.0 < 0 {
            GROUP_EDIT_INTERVAL
        } else {
            Duration::ZERO
        }
    }

    async fn send(&self, text: &str) -> Result<MessageId, Unsent> {
        send_message(&self.shared.api, &self.message(text)).await
    }

    /// Markdown as Telegram HTML, or as plain text if Telegram rejects the markup.
    async fn send_reply(&self, markdown: &str) -> Result<(), Unsent> {
        let html = self
            .message(render::telegram_html(markdown))
            .parse_mode(ParseMode::Html);
        match send_message(&self.shared.api, &html).await {
            Err(Unsent::Refused) => self.send(markdown).await.map(drop),
            sent => sent.map(drop),
        }
    }

    async fn edit(&self, id: MessageId, text: &str) -> Result<(), Unsent> {
        let edit = EditMessageText::new(self.target.chat_id, id, text);
        call::<_, IgnoredAny>(&self.shared.api, &edit)
            .await
            .map(drop)
    }

    async fn edit_reply(&self, id: MessageId, markdown: &str) -> Result<(), Unsent> {
        let html = render::telegram_html(markdown);
        let edit = EditMessageText::new(self.target.chat_id, id, html).parse_mode(ParseMode::Html);
        match call::<_, IgnoredAny>(&self.shared.api, &edit).await {
            Err(Unsent::Refused) => self.edit(id, markdown).await,
            edited => edited.map(drop),
        }
    }

    /// A private chat's running turn streams as a draft, while the Bot API takes them.
    fn draft_refresh(&self) -> Option<Duration> {
        let private = self.target.chat_id.0 > 0;
        (private && self.shared.drafts.on()).then_some(drafts::REFRESH)
    }

    fn new_draft(&self) -> i64 {
        self.shared.drafts.next_id()
    }

    async fn draft(&self, id: i64, text: &str) -> Result<(), Unsent> {
        if !self.shared.drafts.on() {
            return Err(Unsent::Refused);
        }
        let draft = SendMessageDraft {
            chat_id: self.target.chat_id.0,
            draft_id: id,
            text,
            message_thread_id: self.target.topic.map(|topic| topic.0.0),
            can_stop: true,
        };
        let sent =
            call_method::<IgnoredAny>(&self.shared.api, SendMessageDraft::METHOD, &draft).await;
        if sent == Err(Unsent::Refused) {
            self.shared.drafts.refused();
        }
        sent.map(drop)
    }

    /// Silent (`disable_notification`): the answer is what buzzes the phone, unless the
    /// chat asked for every message (`/notify all`).
    async fn send_status(&self, text: &str, stop: bool) -> Result<MessageId, Unsent> {
        let status = self
            .message(text)
            .disable_notification(self.notify != Notify::All);
        let status = match stop {
            true => status.reply_markup(stop_keyboard()),
            false => status,
        };
        send_message(&self.shared.api, &status).await
    }

    /// Without `reply_markup` an edit takes the Stop button away, as Telegram does.
    async fn edit_status(&self, id: MessageId, text: &str, stop: bool) -> Result<(), Unsent> {
        let edit = EditMessageText::new(self.target.chat_id, id, text);
        let edit = match stop {
            true => edit.reply_markup(stop_keyboard()),
            false => edit,
        };
        call::<_, IgnoredAny>(&self.shared.api, &edit)
            .await
            .map(drop)
    }

    async fn typing(&self) {
        let action = SendChatAction::new(self.target.chat_id, ChatAction::Typing);
        let _ = call::<_, IgnoredAny>(&self.shared.api, &action).await;
    }

    async fn send_file(&self, name: &str, bytes: &[u8]) {
        let silent = self.notify == Notify::Off;
        let _ = send_document(&self.shared.api, self.target, name, bytes, None, silent).await;
    }

    /// The listing with its options as buttons, two a row (Telegram has no answer slots).
    async fn offer(&self, _slot: Option<AnswerSlot>, text: &str, buttons: &[ChoiceButton]) {
        let buttons: Vec<_> = buttons
            .iter()
            .map(|b| InlineKeyboardButton::callback(b.label.clone(), b.data.clone()))
            .collect();
        let keyboard = InlineKeyboardMarkup::new(buttons.chunks(2).map(<[_]>::to_vec));
        let listing = self.message(text).reply_markup(keyboard);
        let _ = send_message(&self.shared.api, &listing).await;
    }

    async fn open_task(&self, _slot: Option<AnswerSlot>, title: &str) {
        let answer = match topics::open(&self.shared.api, self.target, title).await {
            Ok(topic) => {
                let opened = topic.topic.map(|id| inbound::in_topic(&self.chat, id.0.0));
                if let Some(place) = opened {
                    self.router.task_opened(&place, title).await;
                }
                let greeting = message(topic, texts::task_greeting(title));
                let _ = send_message(&self.shared.api, &greeting).await;
                texts::task_opened(title, "a topic")
            }
            Err(Unsent::Refused) => {
                let private = self.target.chat_id.0 > 0;
                texts::telegram_no_topics(private).to_owned()
            }
            Err(Unsent::Unreachable) => texts::task_unreachable("Telegram"),
        };
        self.notice(&answer).await
    }

    async fn rename_task(&self, name: &str) {
        let _ = topics::rename(&self.shared.api, self.target, name).await;
    }

    /// The request in a `<pre>` block when it fits one message with room for the verdict;
    /// otherwise attached whole as a text file, the buttons under it.
    async fn ask(&self, card: &ApprovalCard, prompt: &ApprovalPrompt) -> Option<MessageId> {
        let keyboard = keyboard(prompt);
        if let Some(html) = prompt_html(card) {
            let prompt = self.message(html).parse_mode(ParseMode::Html);
            let mut prompt = serde_json::to_value(&prompt).expect("a message serializes");
            prompt["reply_markup"] = keyboard.clone();
            let sent = call_method::<Sent>(&self.shared.api, "sendMessage", &prompt).await;
            if let Ok(sent) = sent {
                return Some(MessageId(sent.message_id));
            }
        }
        let caption = attached_caption(card);
        let file = card.full_text().into_bytes();
        let attached = Some((caption.as_str(), &keyboard));
        send_document(
            &self.shared.api,
            self.target,
            ATTACHMENT_NAME,
            &file,
            attached,
            self.notify == Notify::Off,
        )
        .await
        .ok()
    }

    /// An edit without a keyboard removes the buttons: the prompt's text (or, when it was
    /// attached, its caption) with `line` under it.
    async fn close_prompt(&self, id: MessageId, card: &ApprovalCard, line: &str) {
        let line = render::html_escape(line);
        if let Some(html) = prompt_html(card) {
            let edit = EditMessageText::new(self.target.chat_id, id, format!("{html}\n\n{line}"))
                .parse_mode(ParseMode::Html);
            if call::<_, IgnoredAny>(&self.shared.api, &edit).await.is_ok() {
                return;
            }
        }
        let caption = format!("{}\n\n{line}", attached_caption(card));
        let edit = EditMessageCaption::new(self.target.chat_id, id)
            .caption(caption)
            .parse_mode(ParseMode::Html);
        let _ = call::<_, IgnoredAny>(&self.shared.api, &edit).await;
    }
}

/// The caption of a prompt attached as a file.
fn attached_caption(card: &ApprovalCard) -> String {
    format!(
        "{}\n{}",
        render::html_escape(&card.title),
        render::html_escape(&card.attached_note())
    )
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

/// The approval buttons, two a row, coloured as Bot API 9.4 allows: accepting green,
/// declining red (teloxide's button type has no `style`, so the markup is written here).
fn keyboard(prompt: &ApprovalPrompt) -> serde_json::Value {
    let button = |decision: Decision| {
        let data = button_data(prompt.id, decision);
        let mut button = serde_json::json!({"text": decision.label(), "callback_data": data});
        let style = match decision {
            Decision::Accept | Decision::AcceptForSession => Some("success"),
            Decision::Decline => Some("danger"),
            Decision::Cancel => None,
        };
        if let Some(style) = style {
            button["style"] = style.into();
        }
        button
    };
    let buttons: Vec<_> = prompt.decisions.iter().map(|&d| button(d)).collect();
    let rows: Vec<_> = buttons.chunks(2).map(<[_]>::to_vec).collect();
    serde_json::json!({ "inline_keyboard": rows })
}

/// One Bot API call under the shared retry policy.
async fn call<P, R>(api: &BotApi, payload: &P) -> Result<R, Unsent>
where
    P: teloxide::requests::Payload + serde::Serialize,
    R: serde::de::DeserializeOwned,
{
    call_method(api, P::NAME, payload).await
}

/// A Bot API method teloxide does not have (or not with every field), under the same
/// retry policy.
async fn call_method<R: serde::de::DeserializeOwned>(
    api: &BotApi,
    method: &str,
    body: &impl serde::Serialize,
) -> Result<R, Unsent> {
    retry::call("telegram", || api.method(method, body), api::classify).await
}

/// Sends a message; one refused in its topic (see `outside_topic_if_refused`) goes to
/// the chat itself.
async fn send_message(api: &BotApi, message: &SendMessage) -> Result<MessageId, Unsent> {
    let in_topic = message.message_thread_id.is_some();
    outside_topic_if_refused(in_topic, |in_topic| {
        let mut message = message.clone();
        if !in_topic {
            message.message_thread_id = None;
        }
        async move {
            let sent = call::<_, Sent>(api, &message).await?;
            Ok(MessageId(sent.message_id))
        }
    })
    .await
}

/// `send(true)`, and where that is refused in a topic (a topic deleted since, or one
/// Telegram no longer finds), `send(false)`: to the chat itself rather than nowhere.
async fn outside_topic_if_refused<F, Sending>(in_topic: bool, send: F) -> Result<MessageId, Unsent>
where
    F: Fn(bool) -> Sending,
    Sending: Future<Output = Result<MessageId, Unsent>>,
{
    match send(true).await {
        Err(Unsent::Refused) if in_topic => {
            let sent = send(false).await;
            if sent.is_ok() {
                warn!("telegram: a message its topic refused was sent to the chat itself");
            }
            sent
        }
        sent => sent,
    }
}

/// The Stop button under a running turn's status.
fn stop_keyboard() -> InlineKeyboardMarkup {
    let stop = crate::platform::choices::stop_button();
    InlineKeyboardMarkup::new([[InlineKeyboardButton::callback(stop.label, stop.data)]])
}

/// A message to the target (its topic included).
fn message(target: Target, text: impl Into<String>) -> SendMessage {
    let message = SendMessage::new(target.chat_id, text);
    match target.topic {
        Some(topic) => message.message_thread_id(topic),
        None => message,
    }
}

/// A file sent as a document to the target, with an HTML caption and buttons if given;
/// one refused in its topic goes to the chat itself.
async fn send_document(
    api: &BotApi,
    target: Target,
    name: &str,
    bytes: &[u8],
    captioned: Option<(&str, &serde_json::Value)>,
    silent: bool,
) -> Result<MessageId, Unsent> {
    outside_topic_if_refused(target.topic.is_some(), |in_topic| {
        let target = Target {
            topic: target.topic.filter(|_| in_topic),
            ..target
        };
        upload_document(api, target, name, bytes, captioned, silent)
    })
    .await
}

async fn upload_document(
    api: &BotApi,
    target: Target,
    name: &str,
    bytes: &[u8],
    captioned: Option<(&str, &serde_json::Value)>,
    silent: bool,
) -> Result<MessageId, Unsent> {
    let form = || {
        let file = Part::bytes(bytes.to_vec()).file_name(name.to_owned());
        let mut form = Form::new()
            .text("chat_id", target.chat_id.0.to_string())
            .part("document", file);
        if let Some(topic) = target.topic {
            form = form.text("message_thread_id", topic.0.0.to_string());
        }
        if silent {
            form = form.text("disable_notification", "true");
        }
        if let Some((caption, keyboard)) = captioned {
            let markup = keyboard.to_string();
            form = form
                .text("caption", caption.to_owned())
                .text("parse_mode", "HTML")
                .text("reply_markup", markup);
        }
        form
    };
    let upload = || async {
        let sent: Sent = api.multipart("sendDocument", form()).await?;
        Ok::<_, CallError>(MessageId(sent.message_id))
    };
    retry::call("telegram", upload, api::classify).await
}

/// Sends one plain message outside any chat worker (refusals and hints).
pub(super) async fn send_plain(api: BotApi, target: Target, text: String) {
    let _ = send_message(&api, &message(target, text)).await;
}
