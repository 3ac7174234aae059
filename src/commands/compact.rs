//! `/compact`: Codex compacts the chat's thread (the same thread: it is never replaced),
//! as hygiene does by itself after a turn in gateway mode.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use hygiene::CompactionOutcome;

const NOTHING_TO_COMPACT: &str = "Nothing to compact yet: this chat has no Codex thread.";
const COMPACTED: &str = "Compacted: Codex replaced the thread's history with a summary.";
const COMPACTED_NOTHING: &str = "Codex compacted nothing; the thread is unchanged.";
const COMPACTION_FAILED: &str = "The compaction failed; the thread is unchanged.";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compact;

impl ChatCommand for Compact {
    const SPEC: Spec = Spec::plain(
        "compact",
        "Compact this thread's context",
        "ask Codex to compact this thread's context",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Compact)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.run_compaction(replies).await {
            Ok(None) => replies.notice(NOTHING_TO_COMPACT),
            Ok(Some(CompactionOutcome::Reduced)) => replies.notice(COMPACTED),
            Ok(Some(CompactionOutcome::NoOp)) => replies.notice(COMPACTED_NOTHING),
            Ok(Some(CompactionOutcome::Failed)) => replies.notice(COMPACTION_FAILED),
            Err(error) => chat.report(replies, &error),
        }
    }
}
