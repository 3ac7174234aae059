//! `/verbose`: the status of a running turn lists every command and commentary line;
//! again, back to the short status.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use chat::Progress;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verbose;

impl ChatCommand for Verbose {
    const SPEC: Spec = Spec::plain(
        "verbose",
        "Show every command and commentary line of a running turn",
        "the status of a running turn lists every command and commentary line (again: back to the short status)",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Verbose)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        chat.toggle_progress(replies, Progress::Verbose).await
    }
}
