//! The store's own row types.

use super::stored::StoredName;
use hygiene::{CompactionOutcome, LastCompaction};

/// A chat's row.
#[derive(Debug, Clone, PartialEq, sqlx::FromRow)]
pub struct ChatRecord {
    pub thread_id: Option<String>,
    /// The Codex server holding the thread (`local`, or a worker's name).
    pub codex_server: Option<String>,
    pub cwd: String,
    pub turns: i64,
    pub last_tokens: Option<i64>,
    pub total_tokens: Option<i64>,
    pub context_window: Option<i64>,
    last_compaction: StoredName<CompactionOutcome>,
    last_compaction_turn: Option<i64>,
}

impl ChatRecord {
    /// The gateway's latest compaction of this thread, and how many turns ago it ran.
    pub fn last_compaction(&self) -> Option<LastCompaction> {
        let outcome = self.last_compaction.0?;
        Some(LastCompaction {
            outcome,
            turns_ago: self.turns - self.last_compaction_turn.unwrap_or(self.turns),
        })
    }
}

/// Why a chat stopped using a thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetireReason {
    New,
    RolloutMissing,
}

/// What a finished turn leaves in the store.
#[derive(Debug, Clone, Copy, Default)]
pub struct TurnRecord<'a> {
    /// The person's messages of the turn (its first, and any given to it while it ran).
    pub asked: &'a [String],
    pub reply: Option<&'a str>,
    pub usage: Option<&'a Usage>,
    /// The turn's unified diff, when it changed files; kept for `/diff`.
    pub diff: Option<&'a str>,
}

/// Token usage of a chat's thread, as the latest turn left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Tokens in the context after the latest turn.
    pub last_tokens: i64,
    /// Tokens the thread has used in all.
    pub total_tokens: i64,
    pub context_window: Option<i64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}
