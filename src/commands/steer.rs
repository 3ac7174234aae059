//! `/steer`: a message sent while Codex works joins the running turn (`turn/steer`);
//! the chat's choice, kept.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use chat::{Chosen, FollowUp};

const STEERING: &str = "From now on, a message sent while Codex works joins the running turn. \
     (/queue makes it wait instead.)";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Steer;

impl ChatCommand for Steer {
    const SPEC: Spec = Spec::plain(
        "steer",
        "Messages sent while Codex works join the running turn",
        "a message sent while Codex works joins the running turn (the default)",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Steer)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let chosen = Chosen::FollowUp(Some(FollowUp::Steer));
        chat.choose(replies, chosen, STEERING).await
    }
}
