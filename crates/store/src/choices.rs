//! A chat's own choices: model, reasoning effort, folder, what a message sent during
//! a turn does, how much of a turn it sees and its mode, kept across restarts and
//! `/new` (they live on the chat's row, which a new thread keeps).

use tracing::instrument;

use super::{Store, StoreError, now};
use chat::ChatKey;

/// What a person chose for their chat; `None` keeps the gateway's default.
#[derive(Debug, Clone, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct ChatChoices {
    pub model: Option<String>,
    pub effort: Option<String>,
    pub folder: Option<String>,
    /// `steer` or `queue`.
    pub follow_up: Option<String>,
    /// `status`, `verbose` or `quiet`.
    pub progress: Option<String>,
    /// `read-only`, `auto` or `full`.
    pub mode: Option<String>,
}

/// One of the choices.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Model,
    Effort,
    Folder,
    FollowUp,
    Progress,
    Mode,
}

impl Choice {
    /// The upsert of this choice; `cwd` is the thread's folder, written when a thread is
    /// stored, so a chat without a row gets an empty one meanwhile.
    fn upsert(self) -> &'static str {
        match self {
            Choice::Model => {
                "INSERT INTO chats (chat_key, cwd, created_at, updated_at, model)
                 VALUES (?1, '', ?2, ?2, ?3)
                 ON CONFLICT (chat_key) DO UPDATE SET model = excluded.model"
            }
            Choice::Effort => {
                "INSERT INTO chats (chat_key, cwd, created_at, updated_at, effort)
                 VALUES (?1, '', ?2, ?2, ?3)
                 ON CONFLICT (chat_key) DO UPDATE SET effort = excluded.effort"
            }
            Choice::Folder => {
                "INSERT INTO chats (chat_key, cwd, created_at, updated_at, folder)
                 VALUES (?1, '', ?2, ?2, ?3)
                 ON CONFLICT (chat_key) DO UPDATE SET folder = excluded.folder"
            }
            Choice::FollowUp => {
                "INSERT INTO chats (chat_key, cwd, created_at, updated_at, follow_up)
                 VALUES (?1, '', ?2, ?2, ?3)
                 ON CONFLICT (chat_key) DO UPDATE SET follow_up = excluded.follow_up"
            }
            Choice::Progress => {
                "INSERT INTO chats (chat_key, cwd, created_at, updated_at, progress)
                 VALUES (?1, '', ?2, ?2, ?3)
                 ON CONFLICT (chat_key) DO UPDATE SET progress = excluded.progress"
            }
            Choice::Mode => {
                "INSERT INTO chats (chat_key, cwd, created_at, updated_at, mode)
                 VALUES (?1, '', ?2, ?2, ?3)
                 ON CONFLICT (chat_key) DO UPDATE SET mode = excluded.mode"
            }
        }
    }
}

impl Store {
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn choices(&self, chat: &ChatKey) -> Result<ChatChoices, StoreError> {
        let choices = sqlx::query_as(
            "SELECT model, effort, folder, follow_up, progress, mode FROM chats WHERE chat_key = ?",
        )
        .bind(chat.to_string())
        .fetch_optional(&self.pool)
        .await?;
        Ok(choices.unwrap_or_default())
    }

    /// Sets (or with `None` clears) one choice; a chat without a row yet gets one.
    #[instrument(skip_all, fields(chat = %chat, ?choice))]
    pub async fn set_choice(
        &self,
        chat: &ChatKey,
        choice: Choice,
        value: Option<&str>,
    ) -> Result<(), StoreError> {
        sqlx::query(choice.upsert())
            .bind(chat.to_string())
            .bind(now())
            .bind(value)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
