//! `/merge`: merges the chat's worktree branch into the branch it came from, in the main
//! checkout. Refused with the files when it would conflict, and when the main checkout
//! is on another branch; never forced, and uncommitted work there is never touched.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::session::{Merge as Merged, Worktree, WorktreeRefusal};

fn merged(row: &Worktree, committed: bool) -> String {
    let first = match committed {
        true => " (its uncommitted work was committed first)",
        false => "",
    };
    format!("Merged {}{first} into {} in {}.", row.branch, row.base, row.repo)
}

fn conflicts(row: &Worktree, files: &[String]) -> String {
    let files: Vec<String> = files.iter().map(|f| format!("- {f}")).collect();
    format!(
        "Not merged: {} and {} both change these files:\n{}\nNothing changed in {}. Merge {} \
         into the worktree first (ask Codex here), then /merge again.",
        row.branch,
        row.base,
        files.join("\n"),
        row.repo,
        row.base
    )
}

fn main_elsewhere(row: &Worktree, current: &str) -> String {
    format!(
        "Not merged: the main checkout {} is on {current}, not on {}. Nothing changed.",
        row.repo, row.base
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Merge;

impl ChatCommand for Merge {
    const SPEC: Spec = Spec::plain(
        "merge",
        "Merge this chat's worktree branch",
        "merge this chat's worktree branch into the branch it came from (refused on conflicts, with the files)",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Merge)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.merge_worktree().await {
            Ok((row, Merged::Merged { committed })) => replies.notice(merged(&row, committed)),
            Ok((row, Merged::Conflicts(files))) => replies.notice(conflicts(&row, &files)),
            Ok((row, Merged::MainElsewhere(current))) => {
                replies.notice(main_elsewhere(&row, &current))
            }
            Err(WorktreeRefusal::Session(error)) => chat.report(replies, &error),
            Err(refusal) => replies.notice(format!("Not merged: {refusal}.")),
        }
    }
}
