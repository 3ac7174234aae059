//! Where each platform's update stream continues, so a restart neither skips nor replays.

use super::{Store, StoreError};
use crate::chat::Platform;

impl Store {
    /// Where the platform's update stream continues, if it was ever stored.
    pub async fn platform_offset(&self, platform: Platform) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT next_offset FROM platform_offsets WHERE platform = ?")
                .bind(platform.as_str())
                .fetch_optional(&self.pool)
                .await?,
        )
    }

    pub async fn set_platform_offset(
        &self,
        platform: Platform,
        next_offset: i64,
    ) -> Result<(), StoreError> {
        set_offset(&self.pool, platform, next_offset).await
    }
}

/// Stores where `platform`'s stream continues, on `db` (the pool or a transaction).
pub(super) async fn set_offset<'e>(
    db: impl sqlx::SqliteExecutor<'e>,
    platform: Platform,
    next_offset: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO platform_offsets (platform, next_offset) VALUES (?1, ?2)
         ON CONFLICT (platform) DO UPDATE SET next_offset = excluded.next_offset",
    )
    .bind(platform.as_str())
    .bind(next_offset)
    .execute(db)
    .await?;
    Ok(())
}
