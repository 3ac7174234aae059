//! `/last`: Codex's newest answer in the chat, sent again; offered as a button when an
//! answer was on its way as the gateway went away (it may have arrived).

use tracing::warn;

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use chat::OutboundKind;

const NO_LAST_ANSWER: &str = "Codex has not answered in this chat yet.";
const LAST_ANSWER_UNREADABLE: &str =
    "The gateway's database failed, so the last answer could not be read. Try again.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Last;

impl ChatCommand for Last {
    const SPEC: Spec = Spec {
        during_turn: true,
        buttons: true,
        ..Spec::plain(
            "last",
            "Send Codex's last answer again",
            "send Codex's last answer in this chat again",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Last)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.last_answer().await {
            Ok(Some(answer)) => replies.send(OutboundKind::Reply(answer)),
            Ok(None) => replies.notice(NO_LAST_ANSWER),
            Err(error) => {
                warn!(chat = %chat.chat, %error, "could not read the last answer");
                replies.notice(LAST_ANSWER_UNREADABLE);
            }
        }
    }
}
