//! Enums the store keeps as text: each is written as its name ([`Named`]) and read back
//! strictly. An unknown stored value (a newer gateway's, or a hand edit) is an error with
//! a log line, never quietly read as some default.

use chat::Named;
use sqlx::Sqlite;
use sqlx::error::BoxDynError;
use sqlx::sqlite::{SqliteTypeInfo, SqliteValueRef};
use tracing::warn;

use super::StoreError;
use super::records::{RetireReason, Role};

/// The value a column holds by name.
pub(crate) fn read<T: Named>(text: &str) -> Result<T, StoreError> {
    T::parse(text).map_err(|unknown| {
        warn!(
            what = T::WHAT,
            value = text,
            "unknown value in the database"
        );
        StoreError::UnknownValue {
            what: T::WHAT,
            value: unknown.value,
        }
    })
}

/// A nullable column of a [`Named`] type, read strictly as its row is: an unknown name
/// fails the row's decoding with [`StoreError::UnknownValue`] as the reason.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct StoredName<T>(pub(crate) Option<T>);

impl<T: Named> TryFrom<Option<String>> for StoredName<T> {
    type Error = StoreError;

    fn try_from(text: Option<String>) -> Result<Self, StoreError> {
        text.as_deref().map(read).transpose().map(StoredName)
    }
}

impl<T> sqlx::Type<Sqlite> for StoredName<T> {
    fn type_info() -> SqliteTypeInfo {
        <String as sqlx::Type<Sqlite>>::type_info()
    }

    fn compatible(ty: &SqliteTypeInfo) -> bool {
        <String as sqlx::Type<Sqlite>>::compatible(ty)
    }
}

impl<T: Named> sqlx::Decode<'_, Sqlite> for StoredName<T> {
    fn decode(value: SqliteValueRef<'_>) -> Result<Self, BoxDynError> {
        let text = <Option<String> as sqlx::Decode<Sqlite>>::decode(value)?;
        Ok(StoredName::try_from(text)?)
    }
}

impl Named for RetireReason {
    const WHAT: &'static str = "reason a thread was retired";
    const NAMES: &'static [(Self, &'static str)] = &[
        (RetireReason::New, "new"),
        (RetireReason::RolloutMissing, "rollout_missing"),
    ];
}

impl Named for Role {
    const WHAT: &'static str = "transcript role";
    const NAMES: &'static [(Self, &'static str)] =
        &[(Role::User, "user"), (Role::Assistant, "assistant")];
}

#[cfg(test)]
mod tests {
    use chat::{FollowUp, Mode, Progress};
    use hygiene::CompactionOutcome;

    use super::*;

    fn round_trips<T: Named + std::fmt::Debug>() {
        for (value, name) in T::NAMES {
            assert_eq!(read::<T>(name).unwrap(), *value);
        }
        let unknown = read::<T>("something-newer").unwrap_err().to_string();
        assert!(
            unknown.contains(T::WHAT) && unknown.contains("something-newer"),
            "{unknown}"
        );
        let none = StoredName::<T>::try_from(None).unwrap();
        assert_eq!(none.0, None);
        assert!(StoredName::<T>::try_from(Some("weird".into())).is_err());
    }

    #[test]
    fn every_stored_enum_round_trips_and_refuses_what_it_does_not_know() {
        round_trips::<RetireReason>();
        round_trips::<Role>();
        round_trips::<CompactionOutcome>();
        round_trips::<FollowUp>();
        round_trips::<Progress>();
        round_trips::<Mode>();
    }
}
