//! `/new`: the chat leaves its thread (kept in the history) for a fresh one.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};

const NEW_THREAD: &str =
    "Started a new conversation: the next message goes to a fresh Codex thread.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct New;

impl ChatCommand for New {
    const SPEC: Spec = Spec {
        aliases: &["reset"],
        ..Spec::plain(
            "new",
            "Start a fresh Codex thread",
            "start a fresh Codex thread (the old one stays in the history)",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(New)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.start_over().await {
            Ok(_) => replies.notice(NEW_THREAD),
            Err(error) => chat.report(replies, &error),
        }
    }
}
