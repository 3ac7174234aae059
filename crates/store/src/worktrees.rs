//! Each chat's git worktree (`/worktree`): where it is, its branch and the branch it came
//! from.

use tracing::instrument;

use super::{Store, StoreError, now};
use chat::ChatKey;

/// A chat's worktree as its row holds it.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct WorktreeRow {
    /// The main checkout it was made from.
    pub repo: String,
    pub path: String,
    pub branch: String,
    /// The branch it came from, which `/merge` merges into.
    pub base: String,
}

impl Store {
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn worktree(&self, chat: &ChatKey) -> Result<Option<WorktreeRow>, StoreError> {
        let row =
            sqlx::query_as("SELECT repo, path, branch, base FROM worktrees WHERE chat_key = ?")
                .bind(chat.to_string())
                .fetch_optional(&self.pool)
                .await?;
        Ok(row)
    }

    /// The worktrees made from the main checkout `repo`, each with its chat, by branch.
    #[instrument(skip_all)]
    pub async fn worktrees_of(&self, repo: &str) -> Result<Vec<(String, WorktreeRow)>, StoreError> {
        #[derive(sqlx::FromRow)]
        struct Row {
            chat_key: String,
            #[sqlx(flatten)]
            worktree: WorktreeRow,
        }
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT chat_key, repo, path, branch, base FROM worktrees WHERE repo = ? ORDER BY branch",
        )
        .bind(repo)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows.into_iter().map(|r| (r.chat_key, r.worktree)).collect())
    }

    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn set_worktree(&self, chat: &ChatKey, row: &WorktreeRow) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO worktrees (chat_key, repo, path, branch, base, created_at)
             VALUES (?, ?, ?, ?, ?, ?)
             ON CONFLICT (chat_key) DO UPDATE SET repo = excluded.repo, path = excluded.path,
                 branch = excluded.branch, base = excluded.base, created_at = excluded.created_at",
        )
        .bind(chat.to_string())
        .bind(&row.repo)
        .bind(&row.path)
        .bind(&row.branch)
        .bind(&row.base)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn clear_worktree(&self, chat: &ChatKey) -> Result<(), StoreError> {
        sqlx::query("DELETE FROM worktrees WHERE chat_key = ?")
            .bind(chat.to_string())
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}
