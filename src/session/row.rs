//! The chat's row as the router sees it: the session's view of the store's record, so the
//! router never names the store.

use hygiene::LastCompaction;
use store::ChatRecord;

#[derive(Debug, Clone, PartialEq)]
pub struct ChatRow {
    pub thread_id: Option<String>,
    /// The Codex server holding the thread (`local`, or a worker's name).
    pub codex_server: Option<String>,
    pub cwd: String,
    pub turns: i64,
    /// Tokens in the context after the latest turn.
    pub last_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    pub context_window: Option<i64>,
    /// The gateway's latest compaction of this thread, and how many turns ago it ran.
    pub last_compaction: Option<LastCompaction>,
}

impl From<ChatRecord> for ChatRow {
    fn from(record: ChatRecord) -> Self {
        Self {
            last_compaction: record.last_compaction(),
            thread_id: record.thread_id,
            codex_server: record.codex_server,
            cwd: record.cwd,
            turns: record.turns,
            last_tokens: record.last_tokens,
            total_tokens: record.total_tokens,
            context_window: record.context_window,
        }
    }
}
