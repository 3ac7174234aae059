//! The places the bot opened for tasks, with their titles.

use tracing::instrument;

use super::{Store, StoreError, now};
use chat::ChatKey;

impl Store {
    /// Keeps `chat` as the place of the task `title` (a later title replaces it).
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn set_task(&self, chat: &ChatKey, title: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO tasks (chat_key, title, created_at) VALUES (?, ?, ?)
             ON CONFLICT (chat_key) DO UPDATE SET title = excluded.title",
        )
        .bind(chat.to_string())
        .bind(title)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The title of the task whose place `chat` is, if it is one.
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn task(&self, chat: &ChatKey) -> Result<Option<String>, StoreError> {
        let title = sqlx::query_scalar("SELECT title FROM tasks WHERE chat_key = ?")
            .bind(chat.to_string())
            .fetch_optional(&self.pool)
            .await?;
        Ok(title)
    }
}
