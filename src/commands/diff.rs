//! `/diff`: the last turn's changes as a `.diff` file (kept in SQLite across restarts).

use tracing::warn;

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};

const NO_DIFF: &str = "Nothing to show: Codex reported no file changes in this chat's last turn.";
const DIFF_UNREADABLE: &str =
    "The gateway's database failed, so the last diff could not be read. Try again.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diff;

impl ChatCommand for Diff {
    const SPEC: Spec = Spec::plain(
        "diff",
        "Send the last turn's changes as a .diff file",
        "send the unified diff of the files Codex changed in the last turn",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Diff)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.last_diff().await {
            Ok(Some(diff)) => replies.file("last-turn.diff".into(), diff.into_bytes()),
            Ok(None) => replies.notice(NO_DIFF),
            Err(error) => {
                warn!(chat = %chat.chat, %error, "could not read the last diff");
                replies.notice(DIFF_UNREADABLE);
            }
        }
    }
}
