//! The chats' transcripts: what was said, kept to seed a thread whose rollout is lost.

use tracing::instrument;

use super::stored;
use super::{Role, Store, StoreError, now};
use chat::ChatKey;
use chat::Named;

impl Store {
    #[instrument(skip_all, fields(chat = %chat, thread_id))]
    /// Appends `lines`, in order, in one statement.
    pub async fn append_transcript(
        &self,
        chat: &ChatKey,
        thread_id: &str,
        lines: &[(Role, &str)],
    ) -> Result<(), StoreError> {
        let key = chat.to_string();
        let lines: Vec<Line> = lines
            .iter()
            .map(|(role, text)| (key.as_str(), thread_id, *role, *text))
            .collect();
        let mut connection = self.pool.acquire().await?;
        insert_lines(&mut connection, &lines, now()).await
    }

    /// Codex's newest answer in the chat (`/last`).
    pub async fn last_answer(&self, chat: &ChatKey) -> Result<Option<String>, StoreError> {
        let answer = sqlx::query_scalar(
            "SELECT text FROM transcript WHERE chat_key = ? AND role = ?
             ORDER BY id DESC LIMIT 1",
        )
        .bind(chat.to_string())
        .bind(Role::Assistant.name())
        .fetch_optional(&self.pool)
        .await?;
        Ok(answer)
    }

    /// Makes `answer` (as it was shown: the reply, perhaps headed or marked) the chat's
    /// last answer, unless the newest one is already its reply: a crash can stop the
    /// gateway between sending an answer and recording its turn.
    pub async fn keep_last_answer(&self, chat: &ChatKey, answer: &str) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO transcript (chat_key, thread_id, role, text, at)
             SELECT chat_key, thread_id, ?2, ?3, ?4 FROM chats
             WHERE chat_key = ?1 AND thread_id IS NOT NULL AND NOT EXISTS (
                 SELECT 1 FROM transcript WHERE id = (
                     SELECT MAX(id) FROM transcript WHERE chat_key = ?1 AND role = ?2)
                 AND instr(?3, text) > 0)",
        )
        .bind(chat.to_string())
        .bind(Role::Assistant.name())
        .bind(answer)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The last `limit` transcript entries of the chat's current conversation
    /// (everything since its last `/new`), oldest first.
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn recent_transcript(
        &self,
        chat: &ChatKey,
        limit: i64,
    ) -> Result<Vec<(Role, String)>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT role, text FROM (
                SELECT id, role, text FROM transcript
                WHERE chat_key = ?1 AND id > COALESCE((
                    SELECT MAX(t.id) FROM transcript t JOIN thread_history h
                      ON h.chat_key = t.chat_key AND h.thread_id = t.thread_id
                    WHERE t.chat_key = ?1 AND h.reason = 'new'), 0)
                ORDER BY id DESC LIMIT ?2)
             ORDER BY id",
        )
        .bind(chat.to_string())
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(role, text)| Ok((stored::read::<Role>(&role)?, text)))
            .collect()
    }
}

/// One transcript line: chat key, thread id, who said it, what.
pub(super) type Line<'a> = (&'a str, &'a str, Role, &'a str);

/// Appends `lines` (of any chats), in order, in one statement, all said `at`.
pub(super) async fn insert_lines(
    connection: &mut sqlx::SqliteConnection,
    lines: &[Line<'_>],
    at: i64,
) -> Result<(), StoreError> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut insert =
        sqlx::QueryBuilder::new("INSERT INTO transcript (chat_key, thread_id, role, text, at) ");
    insert.push_values(lines, |mut row, (key, thread_id, role, text)| {
        row.push_bind(*key)
            .push_bind(*thread_id)
            .push_bind(role.name())
            .push_bind(*text)
            .push_bind(at);
    });
    insert.build().execute(connection).await?;
    Ok(())
}
