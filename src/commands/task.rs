//! `/task TITLE`: opens a place of its own for a task (a Discord thread from the channel,
//! a topic in a Telegram chat with topics): what is sent there is a conversation of its
//! own, with a Codex thread of its own. The platform opens it and answers.

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies};

const TASK_WHICH: &str = "Say what the task is: /task TITLE (for example /task fix the login page). \
     It opens a thread or topic of its own, with a Codex thread of its own.";

/// Longest title kept: Discord's limit for a thread's name (Telegram takes 128).
const MAX_TITLE: usize = 100;

/// The task's title, its white space folded and cut to what the platforms take.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Task(pub String);

impl ChatCommand for Task {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "title",
            about: "What the task is",
            shown: "TITLE",
        }),
        during_turn: true,
        ..Spec::plain(
            "task",
            "Open a thread or topic for a new task",
            "open a Discord thread or Telegram topic for a new task, with a Codex thread of its own",
        )
    };

    fn parse(title: &str) -> Result<Self, String> {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        if title.is_empty() {
            return Err(TASK_WHICH.into());
        }
        let title = match title.char_indices().nth(MAX_TITLE - 1) {
            Some((cut, _)) => format!("{}…", title[..cut].trim_end()),
            None => title,
        };
        Ok(Task(title))
    }

    async fn run(self, _chat: &mut Actor, replies: &Replies<'_>) {
        replies.open_task(self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_title_is_folded_and_cut_to_what_platforms_take() {
        assert_eq!(
            Task::parse("fix  the\nlogin page"),
            Ok(Task("fix the login page".into()))
        );
        assert_eq!(Task::parse("  "), Err(TASK_WHICH.into()));
        let long = Task::parse(&"word ".repeat(40)).unwrap().0;
        assert_eq!(long.chars().count(), MAX_TITLE);
        assert!(long.ends_with("word…"), "{long}");
    }
}
