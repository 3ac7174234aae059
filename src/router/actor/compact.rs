//! Compaction of the chat's thread, by `/compact` or by hygiene after a turn. Codex
//! compacts the same thread; it is never replaced or evicted here.

use tracing::{error, info, warn};

use super::Actor;
use crate::router::replies::Replies;

use crate::router::turn::{TurnEnd, TurnOutcome};
use crate::session::ChatRow;
use crate::session::SessionError;
use codex::TurnStatus;
use hygiene::{self, Action, CompactionOutcome, Observation};

impl Actor {
    /// After a turn: hygiene's decision for the thread, given the chat's row as the turn
    /// left it. It may compact the live thread (gateway mode).
    pub(super) async fn hygiene(&mut self, replies: &Replies<'_>, record: &ChatRow) {
        let seen = Observation {
            context_tokens: record.last_tokens,
            context_window: record.context_window,
            last_compaction: record.last_compaction,
            idle: std::time::Duration::ZERO,
        };
        let verdict = hygiene::decide(&self.ctx.hygiene, &seen);
        let thread_id = record.thread_id.as_deref().unwrap_or_default();
        let percent = seen.percent_used();
        if let Some(reason) = verdict.skipped {
            info!(chat = %self.chat, thread_id, ?percent, reason, "hygiene skipped");
        }
        if verdict.action != Action::Compact {
            return;
        }
        info!(chat = %self.chat, thread_id, ?percent, "hygiene: compacting the thread");
        if let Err(error) = self.run_compaction(replies).await {
            warn!(chat = %self.chat, thread_id, %error, "hygiene compaction failed; the thread is unchanged");
            let recorded = self
                .session
                .finish_compaction(None, CompactionOutcome::Failed);
            if let Err(error) = recorded.await {
                error!(chat = %self.chat, %error, "could not record the compaction");
            }
        }
    }

    /// Runs Codex's native compaction on the chat's thread and records the outcome.
    /// `None` when the chat has no thread yet.
    pub(crate) async fn run_compaction(
        &mut self,
        replies: &Replies<'_>,
    ) -> Result<Option<CompactionOutcome>, SessionError> {
        let Some(compacting) = self.session.start_compaction().await? else {
            return Ok(None);
        };
        let outcome = self.wait_for_turn(replies, None, false).await;
        match &outcome.end {
            TurnEnd::ProcessLost => self.session.lose_live_thread(),
            TurnEnd::Abandoned => self.session.unload().await,
            TurnEnd::Completed { .. } | TurnEnd::HandedOver => {}
        }
        let result = compaction_outcome(&outcome, compacting.tokens_before);
        if let TurnEnd::Completed {
            status: TurnStatus::Failed,
            error,
        } = &outcome.end
        {
            warn!(chat = %self.chat, error = ?error, "compaction turn failed");
        }
        self.ctx.metrics.compactions.inc();
        info!(chat = %self.chat, thread_id = ?self.session.thread_id(), outcome = ?result, "compaction finished");
        // A compaction that Codex did not close left no usage worth keeping.
        let completed = matches!(outcome.end, TurnEnd::Completed { .. });
        let usage = outcome.usage.as_ref().filter(|_| completed);
        self.session.finish_compaction(usage, result).await?;
        Ok(Some(result))
    }
}

/// Whether a compaction turn reduced the context: Codex said it compacted, or the
/// context holds fewer tokens than before.
fn compaction_outcome(outcome: &TurnOutcome, tokens_before: Option<i64>) -> CompactionOutcome {
    let TurnEnd::Completed { status, .. } = &outcome.end else {
        return CompactionOutcome::Failed;
    };
    let after = outcome.usage.map(|u| u.last.total_tokens);
    let reduced =
        outcome.compacted || matches!((tokens_before, after), (Some(b), Some(a)) if a < b);
    match status {
        TurnStatus::Completed if reduced => CompactionOutcome::Reduced,
        TurnStatus::Failed => CompactionOutcome::Failed,
        _ => CompactionOutcome::NoOp,
    }
}
