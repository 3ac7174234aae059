//! A chat's own choices (model, effort, folder, follow-up, progress, mode, notify), on its row:
//! kept across restarts and `/new` (a new thread keeps the row). Read strictly: a value
//! this gateway does not know is an error, not a default.

use chat::{ChatChoices, ChatKey, Chosen, FollowUp, Mode, Notify, Progress};
use tracing::instrument;

use super::stored::StoredName;
use super::{Store, StoreError, now};

/// The choices as their columns hold them.
#[derive(sqlx::FromRow)]
struct ChoicesRow {
    model: Option<String>,
    effort: Option<String>,
    folder: Option<String>,
    follow_up: StoredName<FollowUp>,
    progress: StoredName<Progress>,
    mode: StoredName<Mode>,
    notify: StoredName<Notify>,
}

impl From<ChoicesRow> for ChatChoices {
    fn from(row: ChoicesRow) -> Self {
        ChatChoices {
            model: row.model,
            effort: row.effort,
            folder: row.folder,
            follow_up: row.follow_up.0,
            progress: row.progress.0,
            mode: row.mode.0,
            notify: row.notify.0,
        }
    }
}

/// The column a choice lives in.
fn column(chosen: &Chosen) -> &'static str {
    match chosen {
        Chosen::Model(_) => "model",
        Chosen::Effort(_) => "effort",
        Chosen::Folder(_) => "folder",
        Chosen::FollowUp(_) => "follow_up",
        Chosen::Progress(_) => "progress",
        Chosen::Mode(_) => "mode",
        Chosen::Notify(_) => "notify",
    }
}

impl Store {
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn choices(&self, chat: &ChatKey) -> Result<ChatChoices, StoreError> {
        let row: Option<ChoicesRow> = sqlx::query_as(
            "SELECT model, effort, folder, follow_up, progress, mode, notify FROM chats WHERE chat_key = ?",
        )
        .bind(chat.to_string())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(ChatChoices::from).unwrap_or_default())
    }

    /// Sets (or with `None` clears) one choice; a chat without a row yet gets one (its
    /// `cwd` is written when a thread is stored).
    #[instrument(skip_all, fields(chat = %chat, column = column(chosen)))]
    pub async fn set_choice(&self, chat: &ChatKey, chosen: &Chosen) -> Result<(), StoreError> {
        let column = column(chosen);
        // The column is one of the names above, never input.
        let upsert = format!(
            "INSERT INTO chats (chat_key, cwd, created_at, updated_at, {column})
             VALUES (?1, '', ?2, ?2, ?3)
             ON CONFLICT (chat_key) DO UPDATE SET {column} = excluded.{column}"
        );
        sqlx::query(sqlx::AssertSqlSafe(upsert))
            .bind(chat.to_string())
            .bind(now())
            .bind(chosen.stored())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
