//! Discord as a delivery sink: Markdown as is (Discord renders it), 2000-character
//! messages, buttons for approvals, slash commands answered through their interaction.

use std::sync::Arc;
use std::time::Duration;

use serenity::all::{
    ButtonStyle, ChannelId, CreateActionRow, CreateButton, CreateMessage, EditInteractionResponse,
    EditMessage, MessageId,
};
use serenity::http::Http;
use tracing::warn;

use super::Shared;
use crate::chat::{ApprovalPrompt, ChatKey};
use crate::codex::ApprovalDecision;
use crate::platform::delivery::{self, DECISIONS, Sink};
use crate::render;

/// Tries of one REST call that hit a 429 or a server error.
const ATTEMPTS: u32 = 4;

pub(super) struct DiscordChat {
    pub(super) shared: Arc<Shared>,
    pub(super) chat: ChatKey,
    pub(super) channel: ChannelId,
}

impl Sink for DiscordChat {
    type MessageId = MessageId;
    const LIMIT: usize = 2000;
    const TYPING_RENEWAL: Duration = Duration::from_secs(8);

    fn units(text: &str) -> usize {
        render::char_len(text)
    }

    async fn send(&self, text: &str) -> Option<MessageId> {
        let http = self.shared.http();
        call(|| {
            self.channel
                .send_message(http, CreateMessage::new().content(text))
        })
        .await
        .map(|m| m.id)
    }

    async fn send_reply(&self, markdown: &str) {
        self.send(markdown).await;
    }

    async fn edit(&self, id: MessageId, text: &str) {
        let http = self.shared.http();
        call(|| {
            self.channel
                .edit_message(http, id, EditMessage::new().content(text))
        })
        .await;
    }

    async fn edit_reply(&self, id: MessageId, markdown: &str) {
        self.edit(id, markdown).await;
    }

    async fn typing(&self) {
        call(|| self.channel.broadcast_typing(self.shared.http())).await;
    }

    async fn ask(&self, text: &str, prompt: &ApprovalPrompt) {
        let buttons = DECISIONS
            .map(|decision| {
                let style = match decision {
                    ApprovalDecision::Accept | ApprovalDecision::AcceptForSession => {
                        ButtonStyle::Success
                    }
                    ApprovalDecision::Decline => ButtonStyle::Danger,
                    ApprovalDecision::Cancel => ButtonStyle::Secondary,
                };
                CreateButton::new(delivery::approval_data(prompt.id, decision))
                    .label(delivery::decision_label(decision))
                    .style(style)
            })
            .to_vec();
        let message = CreateMessage::new()
            .content(text)
            .components(vec![CreateActionRow::Buttons(buttons)]);
        call(|| {
            self.channel
                .send_message(self.shared.http(), message.clone())
        })
        .await;
    }

    /// The answer to a deferred slash command, if one waits; otherwise a message.
    async fn notice(&self, text: &str) {
        let waiting = self
            .shared
            .commands
            .lock()
            .expect("lock")
            .get_mut(&self.chat)
            .and_then(|queue| queue.pop_front());
        let pieces = render::split(text, Self::LIMIT, Self::units);
        let mut pieces = pieces.iter();
        if let Some(command) = waiting {
            let first = pieces.next().cloned().unwrap_or_default();
            let http = self.shared.http();
            call(|| {
                command.edit_response(http, EditInteractionResponse::new().content(first.clone()))
            })
            .await;
        }
        for piece in pieces {
            self.send(piece).await;
        }
    }
}

/// Runs a REST call, retrying 429s and server errors. `None` when it failed for good.
async fn call<R, F>(request: impl Fn() -> F) -> Option<R>
where
    F: Future<Output = serenity::Result<R>>,
{
    for attempt in 1..=ATTEMPTS {
        let error = match request().await {
            Ok(result) => return Some(result),
            Err(error) => error,
        };
        let status = match &error {
            serenity::Error::Http(http) => http.status_code().map(|s| s.as_u16()),
            _ => None,
        };
        let retry = matches!(status, Some(429 | 500..=599)) && attempt < ATTEMPTS;
        warn!(%error, attempt, retry, "discord: request failed");
        if !retry {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
    }
    None
}

/// Sends one plain message outside any chat worker (refusals and the like).
pub(super) async fn send_plain(http: &Http, channel: ChannelId, text: &str) {
    call(|| channel.send_message(http, CreateMessage::new().content(text))).await;
}
