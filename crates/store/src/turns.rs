//! Finished turns of every chat, written by one task: the turns that finish while a
//! commit runs go into the next one together, in two statements however many they are.
//! Chats writing on their own fought over SQLite's single write lock (busy waits and
//! thread hand-offs cost ten times the rest of a message, measured with an instant
//! app-server).

use std::collections::HashMap;

use sqlx::sqlite::SqlitePool;
use sqlx::{Connection, QueryBuilder, Sqlite};
use tokio::sync::{mpsc, oneshot};
use tracing::error;

use super::records::{ChatRecord, Role, Usage};
use super::transcript::{Line, insert_lines};
use super::{StoreError, now};

/// Most turns in one commit; well within SQLite's limit of bound values per statement.
const MAX_BATCH: usize = 256;

/// One chat's finished turn, waiting for the writer.
pub(super) struct FinishedTurn {
    pub(super) chat_key: String,
    pub(super) thread_id: String,
    pub(super) lines: Vec<(Role, String)>,
    pub(super) usage: Option<Usage>,
    pub(super) diff: Option<String>,
    /// The chat's row as the write left it (`None`: the chat has no row).
    pub(super) written: oneshot::Sender<Result<Option<ChatRecord>, StoreError>>,
}

pub(super) enum TurnWrite {
    Turn(FinishedTurn),
    /// Answers once every turn sent before it is written.
    Flush(oneshot::Sender<()>),
}

/// Starts the writer; it ends when every sender is gone.
pub(super) fn spawn(pool: SqlitePool) -> mpsc::UnboundedSender<TurnWrite> {
    let (jobs, mut queue) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let mut batch = Vec::with_capacity(MAX_BATCH);
        while let Some(job) = queue.recv().await {
            let mut flushes = Vec::new();
            let mut next = Some(job);
            while let Some(job) = next.take() {
                match job {
                    TurnWrite::Turn(turn) => batch.push(turn),
                    TurnWrite::Flush(done) => flushes.push(done),
                }
                if batch.len() < MAX_BATCH {
                    next = queue.try_recv().ok();
                }
            }
            if !batch.is_empty() {
                write(&pool, &mut batch).await;
            }
            for done in flushes {
                let _ = done.send(());
            }
        }
    });
    jobs
}

/// Writes `batch` in one transaction and tells each turn's chat how it went.
async fn write(pool: &SqlitePool, batch: &mut Vec<FinishedTurn>) {
    match write_together(pool, batch).await {
        Ok(mut rows) => {
            for turn in batch.drain(..) {
                let _ = turn.written.send(Ok(rows.remove(&turn.chat_key)));
            }
        }
        Err(error) => {
            error!(%error, turns = batch.len(), "could not record finished turns");
            let message = error.to_string();
            for turn in batch.drain(..) {
                let failed = StoreError::TurnsNotWritten(message.clone());
                let _ = turn.written.send(Err(failed));
            }
        }
    }
}

/// Every line of the batch in one insert, every chat's usage in one update.
async fn write_together(
    pool: &SqlitePool,
    batch: &[FinishedTurn],
) -> Result<HashMap<String, ChatRecord>, StoreError> {
    let at = now();
    let mut connection = pool.acquire().await?;
    let mut tx = connection.begin().await?;
    let lines: Vec<Line> = batch
        .iter()
        .flat_map(|turn| {
            let (key, thread) = (turn.chat_key.as_str(), turn.thread_id.as_str());
            let said = turn.lines.iter();
            said.map(move |(role, text)| (key, thread, *role, text.as_str()))
        })
        .collect();
    insert_lines(&mut tx, &lines, at).await?;
    // `column1`…: the names SQLite gives a VALUES list's columns.
    let mut update = QueryBuilder::<Sqlite>::new(
        "UPDATE chats SET turns = turns + 1,
            last_tokens = COALESCE(v.column2, last_tokens),
            total_tokens = COALESCE(v.column3, total_tokens),
            context_window = COALESCE(v.column4, context_window),
            updated_at = v.column5,
            last_diff = COALESCE(v.column6, last_diff)
         FROM (",
    );
    update.push_values(batch, |mut row, turn| {
        let usage = turn.usage.as_ref();
        row.push_bind(&turn.chat_key)
            .push_bind(usage.map(|u| u.last_tokens))
            .push_bind(usage.map(|u| u.total_tokens))
            .push_bind(usage.and_then(|u| u.context_window))
            .push_bind(at)
            .push_bind(turn.diff.as_deref());
    });
    update.push(
        ") AS v WHERE chats.chat_key = v.column1
         RETURNING chat_key, thread_id, codex_server, cwd, turns, last_tokens, total_tokens,
            context_window, last_compaction, last_compaction_turn",
    );
    let rows: Vec<KeyedRecord> = update.build_query_as().fetch_all(&mut *tx).await?;
    tx.commit().await?;
    Ok(rows
        .into_iter()
        .map(|row| (row.chat_key, row.record))
        .collect())
}

#[derive(sqlx::FromRow)]
struct KeyedRecord {
    chat_key: String,
    #[sqlx(flatten)]
    record: ChatRecord,
}
