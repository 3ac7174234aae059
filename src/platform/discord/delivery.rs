//! Discord as a delivery sink: Markdown as is (Discord renders it), 2000-character
//! messages, buttons for approvals, slash commands answered through their interaction.

use std::sync::Arc;
use std::time::Duration;

use serenity::all::{
    ButtonStyle, ChannelId, CreateActionRow, CreateAllowedMentions, CreateAttachment, CreateButton,
    CreateMessage, EditInteractionResponse, EditMessage, MessageFlags, MessageId,
};
use serenity::http::Http;

use super::{PendingCommands, threads};
use crate::platform::approvals::{ATTACHMENT_NAME, ApprovalCard, VERDICT_ROOM, button_data};
use crate::platform::choices::ChoiceButton;
use crate::platform::delivery::Sink;
use crate::platform::retry::{self, Failure, Unsent};
use crate::platform::texts;
use crate::render;
use crate::router::Router;
use chat::{AnswerSlot, ApprovalPrompt, Decision, Notify};

pub(super) struct DiscordChat {
    pub(super) http: Arc<Http>,
    /// Where a thread opened for a task is kept as the task's place.
    pub(super) router: Router,
    pub(super) commands: Arc<PendingCommands>,
    pub(super) channel: ChannelId,
    /// The chat's `/notify` choice.
    pub(super) notify: Notify,
}

impl DiscordChat {
    /// Edits the bot's message `id` as `edit` says, pinging no one.
    async fn edit_message(&self, id: MessageId, edit: EditMessage) -> Result<(), Unsent> {
        let edit = edit.allowed_mentions(no_pings());
        let http = &self.http;
        call(|| self.channel.edit_message(http, id, edit.clone()))
            .await
            .map(drop)
    }

    /// A message to the channel that pings no one, and is silent when the chat asked
    /// for no notifications.
    fn message(&self) -> CreateMessage {
        match self.notify {
            Notify::Off => silent(),
            Notify::All | Notify::Important => CreateMessage::new().allowed_mentions(no_pings()),
        }
    }
}

/// A message that pings no one and notifies no one (`SUPPRESS_NOTIFICATIONS`).
fn silent() -> CreateMessage {
    CreateMessage::new()
        .allowed_mentions(no_pings())
        .flags(MessageFlags::SUPPRESS_NOTIFICATIONS)
}

impl Sink for DiscordChat {
    type MessageId = MessageId;
    const LIMIT: usize = 2000;
    const TYPING_RENEWAL: Duration = Duration::from_secs(8);
    const FENCES: render::Fences = render::Fences::Anywhere;

    fn units(text: &str) -> usize {
        render::char_len(text)
    }

    fn set_notify(&mut self, notify: Notify) {
        self.notify = notify;
    }

    async fn send(&self, text: &str) -> Result<MessageId, Unsent> {
        let message = self.message().content(text);
        call(|| self.channel.send_message(&self.http, message.clone()))
            .await
            .map(|m| m.id)
    }

    async fn send_reply(&self, markdown: &str) -> Result<(), Unsent> {
        self.send(markdown).await.map(drop)
    }

    /// Without a notification (`SUPPRESS_NOTIFICATIONS`): the answer is what notifies.
    async fn send_status(&self, text: &str, stop: bool) -> Result<MessageId, Unsent> {
        let status = match self.notify {
            Notify::All => self.message(),
            Notify::Important | Notify::Off => silent(),
        };
        let status = status.content(text).components(stop_row(stop));
        call(|| self.channel.send_message(&self.http, status.clone()))
            .await
            .map(|message| message.id)
    }

    async fn edit_status(&self, id: MessageId, text: &str, stop: bool) -> Result<(), Unsent> {
        self.edit_message(
            id,
            EditMessage::new().content(text).components(stop_row(stop)),
        )
        .await
    }

    async fn edit(&self, id: MessageId, text: &str) -> Result<(), Unsent> {
        self.edit_message(id, EditMessage::new().content(text))
            .await
    }

    async fn edit_reply(&self, id: MessageId, markdown: &str) -> Result<(), Unsent> {
        self.edit(id, markdown).await
    }

    async fn typing(&self) {
        let _ = call(|| self.channel.broadcast_typing(&self.http)).await;
    }

    /// The request in a code block when it fits one message with room for the verdict
    /// (and holds no fence that would end the block); otherwise attached whole as a text
    /// file, the buttons under it.
    async fn ask(&self, card: &ApprovalCard, prompt: &ApprovalPrompt) -> Option<MessageId> {
        let mut message =
            match prompt_markdown(card) {
                Some(content) => self.message().content(content),
                None => self.message().content(attached_content(card)).add_file(
                    CreateAttachment::bytes(card.full_text().into_bytes(), ATTACHMENT_NAME),
                ),
            };
        let buttons: Vec<_> = prompt
            .decisions
            .iter()
            .map(|&decision| {
                let style = match decision {
                    Decision::Accept | Decision::AcceptForSession => ButtonStyle::Success,
                    Decision::Decline => ButtonStyle::Danger,
                    Decision::Cancel => ButtonStyle::Secondary,
                };
                CreateButton::new(button_data(prompt.id, decision))
                    .label(decision.label())
                    .style(style)
            })
            .collect();
        if !buttons.is_empty() {
            message = message.components(vec![CreateActionRow::Buttons(buttons)]);
        }
        call(|| self.channel.send_message(&self.http, message.clone()))
            .await
            .ok()
            .map(|sent| sent.id)
    }

    /// The prompt's text with `line` (the gateway's own words) under it, its buttons
    /// removed.
    async fn close_prompt(&self, id: MessageId, card: &ApprovalCard, line: &str) {
        let shown = prompt_markdown(card).unwrap_or_else(|| attached_content(card));
        let content = format!("{shown}\n\n{line}");
        let http = &self.http;
        let edit = || {
            EditMessage::new()
                .content(content.clone())
                .components(Vec::new())
                .allowed_mentions(no_pings())
        };
        let _ = call(|| self.channel.edit_message(http, id, edit())).await;
    }

    async fn send_file(&self, name: &str, bytes: &[u8]) {
        let message = self
            .message()
            .add_file(CreateAttachment::bytes(bytes.to_vec(), name.to_owned()));
        let _ = call(|| self.channel.send_message(&self.http, message.clone())).await;
    }

    /// The listing with its options as buttons (five a row, 25 at most); a slash
    /// command's listing edits its deferred response.
    async fn offer(&self, slot: Option<AnswerSlot>, text: &str, buttons: &[ChoiceButton]) {
        let rows: Vec<CreateActionRow> = buttons
            .chunks(5)
            .map(|row| {
                let row = row.iter().map(|b| {
                    CreateButton::new(b.data.clone())
                        .label(b.label.clone())
                        .style(ButtonStyle::Secondary)
                });
                CreateActionRow::Buttons(row.collect())
            })
            .collect();
        let http = &self.http;
        let command = match slot {
            Some(slot) => self.commands.take(slot).await,
            None => None,
        };
        if let Some(command) = command {
            let response = || {
                EditInteractionResponse::new()
                    .content(text)
                    .components(rows.clone())
                    .allowed_mentions(no_pings())
            };
            if call(|| command.edit_response(http, response()))
                .await
                .is_ok()
            {
                return;
            }
        }
        let message = self.message().content(text).components(rows.clone());
        let _ = call(|| self.channel.send_message(http, message.clone())).await;
    }

    async fn open_task(&self, slot: Option<AnswerSlot>, title: &str) {
        let text = match threads::open_for_task(&self.http, self.channel, title).await {
            Ok(thread) => {
                self.router
                    .task_opened(&super::chat_key(thread), title)
                    .await;
                texts::task_opened(title, &format!("<#{thread}>"))
            }
            Err(threads::NotOpened(why)) => why,
        };
        match slot {
            Some(slot) => self.answer(slot, &text).await,
            None => self.notice(&text).await,
        }
    }

    async fn rename_task(&self, name: &str) {
        threads::rename_task(&self.http, self.channel, name).await
    }

    /// The answer to a slash command edits its deferred response; once that has expired
    /// (or cannot be edited), the answer is a message.
    async fn answer(&self, slot: AnswerSlot, text: &str) {
        let Some(command) = self.commands.take(slot).await else {
            return self.notice(text).await;
        };
        let pieces = render::split(text, Self::LIMIT, Self::units, Self::FENCES);
        let (first, rest) = pieces.split_first().expect("split gives a piece");
        let http = &self.http;
        let response = || {
            EditInteractionResponse::new()
                .content(first.clone())
                .allowed_mentions(no_pings())
        };
        if call(|| command.edit_response(http, response()))
            .await
            .is_err()
        {
            let _ = self.send(first).await;
        }
        for piece in rest {
            let _ = self.send(piece).await;
        }
    }
}

/// The Stop button under a running turn's status, or none once it is over.
fn stop_row(stop: bool) -> Vec<CreateActionRow> {
    let button = crate::platform::choices::stop_button();
    match stop {
        true => vec![CreateActionRow::Buttons(vec![
            CreateButton::new(button.data)
                .label(button.label)
                .style(ButtonStyle::Danger),
        ])],
        false => Vec::new(),
    }
}

/// What a prompt attached as a file says above it.
fn attached_content(card: &ApprovalCard) -> String {
    format!(
        "{}\n{}",
        render::markdown_escape(&card.title),
        render::markdown_escape(&card.attached_note())
    )
}

/// The prompt as one Markdown message, or `None` if it would not fit with the verdict.
fn prompt_markdown(card: &ApprovalCard) -> Option<String> {
    let mut text = render::markdown_escape(&card.title);
    for line in &card.details {
        text.push('\n');
        text.push_str(&render::markdown_escape(line));
    }
    text.push_str(&format!("\n```\n{}\n```", card.body));
    let fits = render::char_len(&text) + VERDICT_ROOM <= DiscordChat::LIMIT;
    (fits && render::fits_code_block(&card.body)).then_some(text)
}

/// What Codex writes can quote `@everyone`, roles or users (from a web page, say): no
/// message of the bot pings anyone.
pub(super) fn no_pings() -> CreateAllowedMentions {
    CreateAllowedMentions::new()
}

/// Discord's errors under the shared retry policy: 429s, server errors and no answer at
/// all (the network) pass.
fn classify(error: &serenity::Error) -> Failure {
    match error {
        serenity::Error::Http(serenity::http::HttpError::Request(_)) => Failure::Transient,
        serenity::Error::Http(http) => http
            .status_code()
            .map_or(Failure::Final, |status| retry::by_status(status.as_u16())),
        _ => Failure::Final,
    }
}

/// One REST call under the retry policy (logged when it gives up).
pub(super) async fn call<R, F>(request: impl Fn() -> F) -> Result<R, Unsent>
where
    F: Future<Output = serenity::Result<R>>,
{
    retry::call("discord", request, classify).await
}

/// Sends one plain message (also outside any chat worker: refusals and the like).
pub(super) async fn send_plain(
    http: &Http,
    channel: ChannelId,
    text: &str,
) -> Result<MessageId, Unsent> {
    let message = || {
        CreateMessage::new()
            .content(text)
            .allowed_mentions(no_pings())
    };
    call(|| channel.send_message(http, message()))
        .await
        .map(|m| m.id)
}
