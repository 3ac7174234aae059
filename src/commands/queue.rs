//! `/queue`: a message sent while Codex works waits and runs as the next turn; the chat's
//! choice, kept.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use chat::{Chosen, FollowUp};

const QUEUEING: &str = "From now on, a message sent while Codex works waits and runs as the \
     next turn. (/steer adds it to the running turn instead.)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue;

impl ChatCommand for Queue {
    const SPEC: Spec = Spec::plain(
        "queue",
        "Messages sent while Codex works wait for the next turn",
        "a message sent while Codex works waits and runs as the next turn",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Queue)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let chosen = Chosen::FollowUp(Some(FollowUp::Queue));
        chat.choose(replies, chosen, QUEUEING).await
    }
}
