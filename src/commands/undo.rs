//! `/undo`: the last turn leaves Codex's context (`thread/revert`); files it changed are
//! not restored, and the chat is told so.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies, texts};
use crate::session::Undo as Undone;

const NOTHING_TO_UNDO: &str = "This chat's thread has no turn to undo.";

fn undone(asked: &str) -> String {
    let asked: String = asked.split_whitespace().collect::<Vec<_>>().join(" ");
    let asked = match asked.chars().count() > 60 {
        true => format!("{}…", asked.chars().take(59).collect::<String>()),
        false => asked,
    };
    format!(
        "The last turn (\"{asked}\") is out of Codex's context from the next message on. \
         Files Codex changed in it are NOT restored: check them (git diff) yourself."
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undo;

impl ChatCommand for Undo {
    const SPEC: Spec = Spec::plain(
        "undo",
        "Take the last turn out of Codex's context",
        "take the last turn out of Codex's context (files it changed are not restored)",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Undo)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.undo().await {
            Ok(Undone::Undone(last)) => replies.notice(undone(&last.asked)),
            Ok(Undone::NoTurn) => replies.notice(NOTHING_TO_UNDO),
            Ok(Undone::NoThread) => replies.notice(texts::NO_THREAD_YET),
            Err(error) => chat.report(replies, &error),
        }
    }
}
