//! `/stop`: interrupts the running turn (the actor does that as it follows the turn);
//! with no turn running, cancels the messages waiting for a usage limit.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};

const NOTHING_RUNNING: &str = "Nothing is running.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stop;

impl ChatCommand for Stop {
    const SPEC: Spec = Spec {
        during_turn: true,
        // The Stop button under a running turn's status stands for it.
        buttons: true,
        ..Spec::plain(
            "stop",
            "Interrupt the running turn",
            "interrupt the running turn",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Stop)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        if !chat.cancel_held(replies).await {
            replies.notice(NOTHING_RUNNING)
        }
    }
}
