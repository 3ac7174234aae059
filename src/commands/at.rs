//! `/at TIME PROMPT`: runs PROMPT once, later, in the chat's thread, as if its creator
//! had sent it.

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::schedule;

const EXAMPLE: &str = "/at 14:30 check the deploy, /at 2026-12-24 09:00 wish a merry \
     Christmas, or /at in 2h see if it finished";

/// `TIME PROMPT`, read against the clock when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At(pub String);

impl ChatCommand for At {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "when",
            about: "14:30 PROMPT, 2026-12-24 09:00 PROMPT, or in 2h PROMPT",
            shown: "TIME PROMPT",
        }),
        during_turn: true,
        ..Spec::plain(
            "at",
            "Run a prompt once, later, in this thread",
            "run PROMPT once in this chat's thread at TIME (14:30, 2026-12-24 09:00, in 2h)",
        )
    };

    fn parse(when: &str) -> Result<Self, String> {
        match when {
            "" => Err(format!(
                "/at needs a time and a prompt, for example: {EXAMPLE}."
            )),
            when => Ok(At(when.to_owned())),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let rules = chat.schedule_rules();
        let parsed = schedule::parse_at(&self.0, &rules);
        chat.add_job(replies, parsed, &rules, EXAMPLE).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_time_is_needed() {
        assert_eq!(At::parse("in 2h look"), Ok(At("in 2h look".into())));
        assert!(At::parse("").unwrap_err().starts_with("/at needs a time"));
    }
}
