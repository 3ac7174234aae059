//! `/answer REPLY`: answers the question Codex asks (an option's number or label, or the
//! person's own words). A press of an option's button sends it; while Codex waits, a
//! plain message does the same.

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies};

const ANSWER_HOW: &str = "Say /answer and your reply, e.g. /answer 1 for the first option.";

/// The reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer(pub String);

impl ChatCommand for Answer {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "reply",
            about: "An option's number or label, or your own answer",
            shown: "REPLY",
        }),
        during_turn: true,
        buttons: true,
        answers_card: true,
        ..Spec::plain(
            "answer",
            "Answer the question Codex asks",
            "answer the question Codex asks: an option's number or label, or your own words (a plain message does the same while Codex waits)",
        )
    };

    fn parse(reply: &str) -> Result<Self, String> {
        match reply {
            "" => Err(ANSWER_HOW.into()),
            reply => Ok(Answer(reply.to_owned())),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        chat.answer_question(replies, &self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_is_needed() {
        assert_eq!(Answer::parse("2"), Ok(Answer("2".into())));
        assert_eq!(Answer::parse(""), Err(ANSWER_HOW.into()));
    }
}
