//! `/quiet`: only the typing indicator and the answer while Codex works; again, the
//! status is back.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use chat::Progress;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quiet;

impl ChatCommand for Quiet {
    const SPEC: Spec = Spec::plain(
        "quiet",
        "Show only typing and the answer while Codex works",
        "only the typing indicator and the answer while Codex works (again: the status is back)",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Quiet)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        chat.toggle_progress(replies, Progress::Quiet).await
    }
}
