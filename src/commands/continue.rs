//! `/continue [TEXT]`: Codex goes on where its turn was cut off (a restart, `/stop`),
//! in the same thread: TEXT, or "continue". Its button is offered with the notice of a
//! cut turn.

use super::{ChatCommand, Spec, optional};
use crate::router::{Actor, Replies};
use crate::session::{Prompt, TurnRequest};

/// What a Continue button (and a bare `/continue`) tells Codex.
pub const CONTINUE: &str = "continue";

/// What to tell Codex; `None` says [`CONTINUE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue(pub Option<String>);

impl ChatCommand for Continue {
    const SPEC: Spec = Spec {
        argument: Some(super::Argument {
            name: "text",
            about: "What to tell Codex (default: continue)",
            shown: "[TEXT]",
        }),
        starts_turn: true,
        buttons: true,
        ..Spec::plain(
            "continue",
            "Have Codex go on with an interrupted turn",
            "have Codex go on where its turn was cut off (a restart, /stop): sends TEXT, or \"continue\", into the thread",
        )
    };

    fn parse(argument: &str) -> Result<Self, String> {
        Ok(Continue(optional(argument)))
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let prompt = Prompt::text(self.0.as_deref().unwrap_or(CONTINUE));
        chat.turn(replies, TurnRequest::Message(&prompt)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_optional() {
        assert_eq!(Continue::parse(""), Ok(Continue(None)));
        assert_eq!(Continue::parse("go on"), Ok(Continue(Some("go on".into()))));
    }
}
