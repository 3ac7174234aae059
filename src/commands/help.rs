//! `/help` (and Telegram's `/start`): what the bot does and every command.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Help;

impl ChatCommand for Help {
    const SPEC: Spec = Spec {
        aliases: &["start"],
        during_turn: true,
        ..Spec::plain("help", "What this bot does", "this text")
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Help)
    }

    async fn run(self, _chat: &mut Actor, replies: &Replies<'_>) {
        replies.notice(super::help())
    }
}
