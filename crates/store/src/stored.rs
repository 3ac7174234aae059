//! Enums the store keeps as text: each is written as its name and read back strictly. An
//! unknown stored value (a newer gateway's, or a hand edit) is an error with a log line,
//! never quietly read as some default.

use tracing::warn;

use super::StoreError;
use super::records::{RetireReason, Role};
use hygiene::CompactionOutcome;

/// A stored enum's names; one table per type, so writing and reading cannot drift apart.
pub(super) trait Stored: Copy + PartialEq + 'static {
    /// The column it lives in, for the error.
    const COLUMN: &'static str;
    const NAMES: &'static [(Self, &'static str)];

    fn name(self) -> &'static str {
        let entry = Self::NAMES.iter().find(|(value, _)| *value == self);
        entry.expect("every variant has a name").1
    }

    fn parse(text: &str) -> Result<Self, StoreError> {
        match Self::NAMES.iter().find(|(_, name)| *name == text) {
            Some((value, _)) => Ok(*value),
            None => {
                warn!(
                    column = Self::COLUMN,
                    value = text,
                    "unknown value in the database"
                );
                Err(StoreError::UnknownValue {
                    column: Self::COLUMN,
                    value: text.to_owned(),
                })
            }
        }
    }
}

impl Stored for RetireReason {
    const COLUMN: &'static str = "thread_history.reason";
    const NAMES: &'static [(Self, &'static str)] = &[
        (RetireReason::New, "new"),
        (RetireReason::RolloutMissing, "rollout_missing"),
    ];
}

impl Stored for Role {
    const COLUMN: &'static str = "transcript.role";
    const NAMES: &'static [(Self, &'static str)] =
        &[(Role::User, "user"), (Role::Assistant, "assistant")];
}

impl Stored for CompactionOutcome {
    const COLUMN: &'static str = "chats.last_compaction";
    const NAMES: &'static [(Self, &'static str)] = &[
        (CompactionOutcome::Reduced, "reduced"),
        (CompactionOutcome::NoOp, "noop"),
        (CompactionOutcome::Failed, "failed"),
    ];
}

/// A chat row's last compaction, read strictly as the row is (see `ChatRecord`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct StoredOutcome(pub(super) Option<CompactionOutcome>);

impl TryFrom<Option<String>> for StoredOutcome {
    type Error = StoreError;

    fn try_from(text: Option<String>) -> Result<Self, StoreError> {
        text.as_deref()
            .map(CompactionOutcome::parse)
            .transpose()
            .map(StoredOutcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trips<T: Stored + std::fmt::Debug>() {
        for (value, name) in T::NAMES {
            assert_eq!(value.name(), *name);
            assert_eq!(T::parse(name).unwrap(), *value);
        }
        let unknown = T::parse("something-newer").unwrap_err().to_string();
        assert!(
            unknown.contains(T::COLUMN) && unknown.contains("something-newer"),
            "{unknown}"
        );
    }

    #[test]
    fn every_stored_enum_round_trips_and_refuses_what_it_does_not_know() {
        round_trips::<RetireReason>();
        round_trips::<Role>();
        round_trips::<CompactionOutcome>();
        assert_eq!(StoredOutcome::try_from(None).unwrap(), StoredOutcome(None));
        assert!(StoredOutcome::try_from(Some("weird".into())).is_err());
    }
}
