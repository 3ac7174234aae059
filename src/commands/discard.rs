//! `/discard`: removes the chat's worktree and its branch, uncommitted work and all,
//! after a press of its confirm button; the chat goes back to the main checkout.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::session::WorktreeRefusal;

/// The confirm button's option (what its press sends after `/discard`).
const CONFIRM: &str = "Discard";
const NO_WORKTREE: &str = "This chat has no worktree: /worktree BRANCH makes one.";

fn asked(branch: &str, path: &str) -> String {
    format!(
        "Discard the worktree of {branch} at {path} and the branch {branch}, with any work not \
         merged? Press to confirm."
    )
}

fn discarded(branch: &str, repo: &str) -> String {
    format!("Removed the worktree and the branch {branch}; this chat works in {repo} again.")
}

/// Whether the press (or `/discard discard`) confirms it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discard {
    pub confirmed: bool,
}

impl ChatCommand for Discard {
    const SPEC: Spec = Spec {
        buttons: true,
        answers_card: true,
        ..Spec::plain(
            "discard",
            "Remove this chat's worktree and branch",
            "remove this chat's worktree and its branch (after a confirm button)",
        )
    };

    fn parse(argument: &str) -> Result<Self, String> {
        let confirmed = argument.eq_ignore_ascii_case(CONFIRM);
        Ok(Discard { confirmed })
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        if !self.confirmed {
            return match chat.session.worktree().await {
                Ok(Some(row)) => {
                    let text = asked(&row.branch, &row.path);
                    replies.choices(text, &Self::SPEC, vec![CONFIRM.into()])
                }
                Ok(None) => replies.notice(NO_WORKTREE),
                Err(error) => chat.report(replies, &error),
            };
        }
        match chat.session.discard_worktree().await {
            Ok(row) => replies.notice(discarded(&row.branch, &row.repo)),
            Err(WorktreeRefusal::Session(error)) => chat.report(replies, &error),
            Err(refusal) => replies.notice(format!("Nothing removed: {refusal}.")),
        }
    }
}
