//! Hygiene as a pure policy: from what is known about a chat's thread, decide whether to
//! keep it, compact it, or unload it from memory. No decision ever replaces a thread:
//! unloading is lossless because the thread id stays in SQLite.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Who compacts a thread's context when it fills up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionMode {
    /// Codex compacts by itself; the gateway never compacts proactively.
    Native,
    /// The gateway runs `thread/compact/start` past `compact_at_percent`.
    Gateway,
    /// Nobody compacts proactively.
    Off,
}

/// After a compaction that did nothing or failed, wait this many turns before trying again.
pub const RETRY_AFTER_TURNS: i64 = 10;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    pub mode: CompactionMode,
    pub compact_at_percent: u8,
    /// Unload a chat idle this long; `None` never unloads for idleness.
    pub idle_unload: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompactionOutcome {
    /// A `contextCompaction` item arrived or usage went down.
    Reduced,
    /// The compaction turn finished without compacting anything.
    NoOp,
    Failed,
}

/// Kept by name with the chat's row.
impl chat::Named for CompactionOutcome {
    const WHAT: &'static str = "compaction outcome";
    const NAMES: &'static [(Self, &'static str)] = &[
        (CompactionOutcome::Reduced, "reduced"),
        (CompactionOutcome::NoOp, "noop"),
        (CompactionOutcome::Failed, "failed"),
    ];
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LastCompaction {
    pub outcome: CompactionOutcome,
    /// Turns since that compaction.
    pub turns_ago: i64,
}

/// What is known about a chat's thread when hygiene runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observation {
    /// Tokens of the latest model request (how full the context is).
    pub context_tokens: Option<i64>,
    pub context_window: Option<i64>,
    pub last_compaction: Option<LastCompaction>,
    pub idle: Duration,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Keep,
    Compact,
    Unload,
}

/// The decision, with the reason when hygiene chose not to act on a full context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verdict {
    pub action: Action,
    pub skipped: Option<&'static str>,
}

impl Verdict {
    const fn act(action: Action) -> Self {
        Self {
            action,
            skipped: None,
        }
    }

    const fn skip(reason: &'static str) -> Self {
        Self {
            action: Action::Keep,
            skipped: Some(reason),
        }
    }
}

impl Observation {
    /// Percent of the context window in use, when both numbers are known.
    pub fn percent_used(&self) -> Option<i64> {
        match (self.context_tokens, self.context_window) {
            (Some(used), Some(window)) if window > 0 => Some(used * 100 / window),
            _ => None,
        }
    }
}

pub fn decide(policy: &Policy, seen: &Observation) -> Verdict {
    if policy.idle_unload.is_some_and(|limit| seen.idle >= limit) {
        return Verdict::act(Action::Unload);
    }
    let full = seen
        .percent_used()
        .is_some_and(|percent| percent >= i64::from(policy.compact_at_percent));
    if !full {
        return Verdict::act(Action::Keep);
    }
    match policy.mode {
        CompactionMode::Off => Verdict::act(Action::Keep),
        CompactionMode::Native => {
            Verdict::skip("compaction mode is native: Codex compacts the thread by itself")
        }
        CompactionMode::Gateway => match seen.last_compaction {
            Some(LastCompaction {
                outcome: CompactionOutcome::NoOp | CompactionOutcome::Failed,
                turns_ago,
            }) if turns_ago < RETRY_AFTER_TURNS => Verdict::skip(
                "the last compaction did nothing or failed; backing off before trying again",
            ),
            Some(LastCompaction { turns_ago: 0, .. }) => {
                Verdict::skip("the thread was compacted this turn already")
            }
            _ => Verdict::act(Action::Compact),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Action::*;
    use CompactionMode::*;
    use CompactionOutcome::*;

    fn policy(mode: CompactionMode) -> Policy {
        Policy {
            mode,
            compact_at_percent: 85,
            idle_unload: Some(Duration::from_secs(600)),
        }
    }

    fn seen(percent: i64, last: Option<(CompactionOutcome, i64)>, idle_secs: u64) -> Observation {
        Observation {
            context_tokens: Some(percent * 1000),
            context_window: Some(100_000),
            last_compaction: last.map(|(outcome, turns_ago)| LastCompaction { outcome, turns_ago }),
            idle: Duration::from_secs(idle_secs),
        }
    }

    #[test]
    fn decision_table() {
        let cases = [
            // mode, % used, last compaction, idle s, expected action, skipped?
            (Native, 10, None, 0, Keep, false),
            (Native, 90, None, 0, Keep, true),
            (Native, 99, Some((NoOp, 0)), 0, Keep, true),
            (Native, 90, None, 600, Unload, false),
            (Off, 95, None, 0, Keep, false),
            (Off, 10, None, 700, Unload, false),
            (Gateway, 84, None, 0, Keep, false),
            (Gateway, 85, None, 0, Compact, false),
            (Gateway, 90, Some((Reduced, 3)), 0, Compact, false),
            (Gateway, 90, Some((Reduced, 0)), 0, Keep, true),
            (Gateway, 90, Some((NoOp, 1)), 0, Keep, true),
            (Gateway, 90, Some((Failed, 9)), 0, Keep, true),
            (Gateway, 90, Some((Failed, 10)), 0, Compact, false),
            (Gateway, 90, None, 900, Unload, false),
        ];
        for (mode, percent, last, idle, action, skipped) in cases {
            let verdict = decide(&policy(mode), &seen(percent, last, idle));
            assert_eq!(
                verdict.action, action,
                "{mode:?} {percent}% {last:?} idle {idle}"
            );
            assert_eq!(
                verdict.skipped.is_some(),
                skipped,
                "{mode:?} {percent}% {last:?}"
            );
        }
    }

    #[test]
    fn unknown_usage_or_no_idle_limit_keeps() {
        let no_usage = Observation::default();
        assert_eq!(decide(&policy(Gateway), &no_usage).action, Keep);
        let forever = Policy {
            idle_unload: None,
            ..policy(Native)
        };
        assert_eq!(decide(&forever, &seen(10, None, 1_000_000)).action, Keep);
    }
}
