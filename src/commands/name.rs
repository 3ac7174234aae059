//! `/name TITLE`: names the chat's thread (`thread/name/set`); `/status` and `/threads`
//! show it.

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies, texts};
use chat::OutboundKind;

const NAME_WHICH: &str = "Say the name: /name TITLE (shown by /status and /threads).";

/// Longest thread name taken: a line in `/status` and `/threads`, and Discord's limit
/// for a thread's title.
const MAX_NAME: usize = 100;

fn name_too_long(length: usize) -> String {
    format!("That name is {length} characters long; /name takes at most {MAX_NAME}. Nothing changed.")
}

fn named(name: &str) -> String {
    format!("This chat's thread is named \"{name}\" (shown by /status and /threads).")
}

/// The thread's new name, its white space folded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Name(pub String);

impl ChatCommand for Name {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "title",
            about: "The thread's name",
            shown: "TITLE",
        }),
        ..Spec::plain(
            "name",
            "Name this chat's thread",
            "name this chat's thread (shown by /status and /threads)",
        )
    };

    fn parse(title: &str) -> Result<Self, String> {
        let title = title.split_whitespace().collect::<Vec<_>>().join(" ");
        match title.chars().count() {
            0 => Err(NAME_WHICH.into()),
            length if length > MAX_NAME => Err(name_too_long(length)),
            _ => Ok(Name(title)),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.name_thread(&self.0).await {
            Ok(true) => {
                // A task's place takes the name too.
                if matches!(chat.session.task_title().await, Ok(Some(_))) {
                    replies.send(OutboundKind::Named(self.0.clone()));
                }
                replies.notice(named(&self.0))
            }
            Ok(false) => replies.notice(texts::NO_THREAD_YET),
            Err(error) => chat.report(replies, &error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_needed_and_its_white_space_folded() {
        assert_eq!(Name::parse(" the\n parser  fix"), Ok(Name("the parser fix".into())));
        assert_eq!(Name::parse(""), Err(NAME_WHICH.into()));
        assert_eq!(Name::parse(&"é".repeat(101)), Err(name_too_long(101)));
        assert!(Name::parse(&"é".repeat(100)).is_ok());
    }
}
