//! `/worktree [BRANCH]`: the chat's next turns run in a git worktree of its repository on
//! BRANCH (an existing branch, or a new one from the current HEAD), in a folder beside
//! the main checkout, so two tasks on one repository do not write over each other.
//! Alone, it says which worktree the chat is in.

use super::{Argument, ChatCommand, Spec, optional};
use crate::router::{Actor, Replies};
use crate::session::{self, WorktreeRefusal};

const NO_WORKTREE: &str =
    "This chat works in its folder, in no worktree: /worktree BRANCH makes one.";
const ONE_WORD: &str = "/worktree takes a branch name, one word (like fix-login or feature/login).";

fn working_in(row: &session::Worktree) -> String {
    format!(
        "This chat works in the worktree of {} (from {}) at {}.",
        row.branch, row.base, row.path
    )
}

fn made(row: &session::Worktree) -> String {
    format!(
        "From the next turn on this chat works in a worktree on branch {} (from {}), at {}. \
         /merge merges it into {}; /discard removes it.",
        row.branch, row.base, row.path, row.base
    )
}

/// A branch name; `None` shows the chat's worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree(pub Option<String>);

impl ChatCommand for Worktree {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "branch",
            about: "A branch, new or existing",
            shown: "[BRANCH]",
        }),
        ..Spec::plain(
            "worktree",
            "Work in a git worktree on a branch",
            "the chat's next turns run in a git worktree of its repository on BRANCH (new from HEAD, or existing)",
        )
    };

    fn parse(branch: &str) -> Result<Self, String> {
        match branch.split_whitespace().count() {
            0 | 1 => Ok(Worktree(optional(branch))),
            _ => Err(ONE_WORD.into()),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let Some(branch) = self.0 else {
            return match chat.session.worktree().await {
                Ok(Some(row)) => replies.notice(working_in(&row)),
                Ok(None) => replies.notice(NO_WORKTREE),
                Err(error) => chat.report(replies, &error),
            };
        };
        match chat.session.make_worktree(&branch).await {
            Ok(row) => replies.notice(made(&row)),
            Err(WorktreeRefusal::Session(error)) => chat.report(replies, &error),
            Err(refusal) => replies.notice(format!("No worktree: {refusal}.")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_branch_is_one_word() {
        assert_eq!(Worktree::parse(""), Ok(Worktree(None)));
        assert_eq!(
            Worktree::parse("feature/login"),
            Ok(Worktree(Some("feature/login".into())))
        );
        assert_eq!(Worktree::parse("two words"), Err(ONE_WORD.into()));
    }
}
