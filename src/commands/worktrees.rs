//! `/worktrees`: the worktrees made from the chat's repository, each with its branch,
//! commits ahead of and behind the branch it came from, and uncommitted changes.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::session::WorktreeState;

const NONE_MADE: &str = "No worktrees made from this chat's repository: /worktree BRANCH makes one.";

fn line(state: &WorktreeState, this_chat: &str) -> String {
    let row = &state.row;
    let counts = match state.counts {
        Some((behind, ahead, changes)) => {
            format!("{ahead} ahead, {behind} behind, {changes} uncommitted changes")
        }
        None => "its folder cannot be read".into(),
    };
    let here = match state.chat == this_chat {
        true => " · this chat",
        false => "",
    };
    format!("- {} (from {}): {counts}{here}\n  {}", row.branch, row.base, row.path)
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktrees;

impl ChatCommand for Worktrees {
    const SPEC: Spec = Spec::plain(
        "worktrees",
        "List the repository's worktrees",
        "list the worktrees made from this chat's repository: branch, ahead/behind, uncommitted changes",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Worktrees)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let this_chat = chat.chat.to_string();
        match chat.session.worktrees().await {
            Ok(states) if states.is_empty() => replies.notice(NONE_MADE),
            Ok(states) => {
                let lines: Vec<String> = states.iter().map(|s| line(s, &this_chat)).collect();
                replies.notice(format!("Worktrees:\n{}", lines.join("\n")));
            }
            Err(error) => chat.report(replies, &error),
        }
    }
}
