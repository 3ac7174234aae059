//! Where each platform's update stream continues, so a restart neither skips nor replays.

use super::{Store, StoreError};
use chat::Named;
use chat::Platform;

impl Store {
    /// Where the platform's update stream continues, if it was ever stored.
    pub async fn platform_offset(&self, platform: Platform) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT next_offset FROM platform_offsets WHERE platform = ?")
                .bind(platform.name())
                .fetch_optional(&self.pool)
                .await?,
        )
    }
}
