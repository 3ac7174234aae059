//! `/usage`: the account's rate limits (when the provider reports any) and this chat's
//! context use.

use super::{ChatCommand, Spec};
use crate::clock::unix_now;
use crate::router::{Actor, Replies, texts};

const NO_RATE_LIMITS: &str = "Codex reports no rate limits for this login (an API key or a \
     custom model provider has none).";
const NO_RATE_LIMIT_WINDOWS: &str = "Codex reports no rate-limit windows yet.";

fn rate_limits_unread(error: &impl std::fmt::Display) -> String {
    format!("Codex did not say its rate limits: {error}")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Usage;

impl ChatCommand for Usage {
    const SPEC: Spec = Spec::plain(
        "usage",
        "Rate limits and this chat's context use",
        "the account's rate limits and this chat's context use",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Usage)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let mut lines = match chat.session.rate_limits().await {
            Ok(Some(limits)) => [limits.primary, limits.secondary]
                .into_iter()
                .flatten()
                .map(|window| texts::window_line(&window, unix_now()))
                .collect(),
            Ok(None) => vec![NO_RATE_LIMITS.to_owned()],
            Err(error) => vec![rate_limits_unread(&error)],
        };
        if lines.is_empty() {
            lines.push(NO_RATE_LIMIT_WINDOWS.into());
        }
        let record = chat.session.record().await.ok().flatten();
        lines.push(texts::context_line(record.as_ref()));
        replies.notice(lines.join("\n"));
    }
}
