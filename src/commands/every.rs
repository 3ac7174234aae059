//! `/every INTERVAL PROMPT` (or a cron pattern in quotes): runs PROMPT in the chat's
//! thread on a schedule, as if its creator had sent it.

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::schedule;

pub(super) const EXAMPLE: &str = "/every 2h check the CI and summarise, or /every \"0 9 * * 1-5\" \
     summarise yesterday's commits (a cron pattern in quotes: weekdays at 9)";

/// `INTERVAL PROMPT` or `"CRON" PROMPT`, read against the clock when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Every(pub String);

impl ChatCommand for Every {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "schedule",
            about: "15m PROMPT, or \"0 9 * * 1-5\" PROMPT (cron)",
            shown: "INTERVAL PROMPT",
        }),
        during_turn: true,
        ..Spec::plain(
            "every",
            "Run a prompt on a schedule in this thread",
            "run PROMPT in this chat's thread every INTERVAL (15m, 2h, 1d) or on a cron pattern in quotes (\"0 9 * * 1-5\": weekdays at 9)",
        )
    };

    fn parse(schedule: &str) -> Result<Self, String> {
        match schedule {
            "" => Err(format!(
                "/every needs a time and a prompt, for example: {EXAMPLE}."
            )),
            schedule => Ok(Every(schedule.to_owned())),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let rules = chat.schedule_rules();
        let parsed = schedule::parse_every(&self.0, &rules);
        chat.add_job(replies, parsed, &rules, EXAMPLE).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_schedule_is_needed() {
        let every = Every::parse("10m check CI");
        assert_eq!(every, Ok(Every("10m check CI".into())));
        assert!(Every::parse("").unwrap_err().starts_with("/every needs a time"));
    }
}
