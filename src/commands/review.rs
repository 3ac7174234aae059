//! `/review`: Codex's code review of the uncommitted changes in the chat's folder, as a
//! turn whose findings come like a reply.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::session::TurnRequest;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review;

impl ChatCommand for Review {
    const SPEC: Spec = Spec {
        starts_turn: true,
        ..Spec::plain(
            "review",
            "Codex reviews the uncommitted changes in this chat's folder",
            "Codex's code review of the uncommitted changes in this chat's folder",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Review)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        chat.turn(replies, TurnRequest::Review).await
    }
}
