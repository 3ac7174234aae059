//! Durable state in SQLite: which Codex thread each chat uses, old threads, transcripts.

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::Connection;
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use tracing::instrument;

use chat::ChatKey;
use chat::Named;
use hygiene::CompactionOutcome;

mod choices;
mod inbox;
mod jobs;
mod offsets;
mod records;
mod stored;
mod tasks;
mod transcript;
mod turns;
mod worktrees;

pub use inbox::{Accepted, Unfinished};
pub use records::{ChatRecord, RetireReason, Role, TurnRecord, Usage};
pub use worktrees::WorktreeRow;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the database at {path}: {source}")]
    Open {
        path: PathBuf,
        #[source]
        source: sqlx::Error,
    },
    #[error("cannot prepare the database at {path}: {source}")]
    Migrate {
        path: PathBuf,
        #[source]
        source: sqlx::migrate::MigrateError,
    },
    #[error(
        "the database at {path} was written by a newer codex-gateway: it has migration \
         {applied}, this version knows up to {known}; run that newer version (or restore a \
         backup from before it)"
    )]
    NewerVersion {
        path: PathBuf,
        applied: i64,
        known: i64,
    },
    #[error("database error: {0}")]
    Query(#[from] sqlx::Error),
    /// The shared commit of several chats' turns failed (each of them gets this).
    #[error("could not record the turn: {0}")]
    TurnsNotWritten(String),
    #[error(
        "the database holds {value:?} as a {what}, which this gateway does not know (written by a newer version?)"
    )]
    UnknownValue { what: &'static str, value: String },
}

#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
    /// The one writer of finished turns.
    turns: tokio::sync::mpsc::UnboundedSender<turns::TurnWrite>,
}

/// Now, in seconds since the Unix epoch, as the store stamps rows (0 before it).
fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_secs() as i64)
}

/// Every chat's transcript is in the database: readable by the gateway's user only. The
/// file is created (or tightened) to 0600 before SQLite opens it; SQLite gives its WAL and
/// shared-memory files the database file's mode.
fn keep_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(path)?;
    if file.metadata()?.permissions().mode() & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    for companion in ["-wal", "-shm"] {
        let mut name = path.as_os_str().to_owned();
        name.push(companion);
        match std::fs::set_permissions(&name, std::fs::Permissions::from_mode(0o600)) {
            Err(error) if error.kind() != std::io::ErrorKind::NotFound => return Err(error),
            _ => {}
        }
    }
    Ok(())
}

impl Store {
    /// Opens (creating if needed) the database and applies the embedded migrations.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let open_error = |source| StoreError::Open {
            path: path.to_owned(),
            source,
        };
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty())
            && !parent.exists()
        {
            std::fs::create_dir_all(parent).map_err(|e| open_error(sqlx::Error::Io(e)))?;
            // A new folder may be a mistyped path: the empty database in it would look
            // like every chat was forgotten.
            tracing::info!(folder = %parent.display(), "created the database's folder");
        }
        let new = !path.exists();
        keep_private(path).map_err(|e| open_error(sqlx::Error::Io(e)))?;
        let options = SqliteConnectOptions::from_str("sqlite:")
            .map_err(open_error)?
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            // In WAL mode a commit then survives the gateway crashing, not a power loss;
            // which thread a chat has is written `durably` instead.
            .synchronous(SqliteSynchronous::Normal)
            .busy_timeout(Duration::from_secs(5));
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            // A local file needs no liveness check: it would cost a round trip to
            // SQLite's thread before every use of a connection.
            .test_before_acquire(false)
            .connect_with(options)
            .await
            .map_err(open_error)?;
        let migrator = sqlx::migrate!("../../migrations");
        migrator.run(&pool).await.map_err(|source| match source {
            sqlx::migrate::MigrateError::VersionMissing(applied) => StoreError::NewerVersion {
                path: path.to_owned(),
                applied,
                known: migrator.iter().map(|m| m.version).max().unwrap_or(0),
            },
            source => StoreError::Migrate {
                path: path.to_owned(),
                source,
            },
        })?;
        if new {
            tracing::info!(path = %path.display(), "created a new, empty database");
        }
        let turns = turns::spawn(pool.clone());
        Ok(Store { pool, turns })
    }

    /// Writes the finished turns still waiting, then closes the connections,
    /// checkpointing the WAL.
    pub async fn close(&self) {
        let (done, flushed) = tokio::sync::oneshot::channel();
        if self.turns.send(turns::TurnWrite::Flush(done)).is_ok() {
            let _ = flushed.await;
        }
        self.pool.close().await;
    }

    /// A cheap query proving the database answers.
    pub async fn ping(&self) -> Result<(), StoreError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn chat(&self, chat: &ChatKey) -> Result<Option<ChatRecord>, StoreError> {
        let row = sqlx::query_as::<_, ChatRecord>(
            "SELECT thread_id, codex_server, cwd, turns, last_tokens, total_tokens, context_window,
                    last_compaction, last_compaction_turn
             FROM chats WHERE chat_key = ?",
        )
        .bind(chat.to_string())
        .fetch_optional(&self.pool)
        .await?;
        Ok(row)
    }

    /// The diff of the chat's latest turn that changed files.
    pub async fn last_diff(&self, chat: &ChatKey) -> Result<Option<String>, StoreError> {
        let diff = sqlx::query_scalar("SELECT last_diff FROM chats WHERE chat_key = ?")
            .bind(chat.to_string())
            .fetch_optional(&self.pool)
            .await?;
        Ok(diff.flatten())
    }

    /// Makes `thread_id` the chat's thread; a replaced thread moves to the history in
    /// the same transaction.
    #[instrument(skip_all, fields(chat = %chat, thread_id))]
    pub async fn set_thread(
        &self,
        chat: &ChatKey,
        server: &str,
        cwd: &str,
        thread_id: &str,
        replaced: Option<(&str, RetireReason)>,
    ) -> Result<(), StoreError> {
        let key = chat.to_string();
        let now = now();
        self.durably(async |tx| {
        if let Some((old, reason)) = replaced {
            insert_history(tx, &key, old, reason, now).await?;
        }
        sqlx::query(
            "INSERT INTO chats (chat_key, thread_id, cwd, created_at, updated_at, codex_server)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)
             ON CONFLICT (chat_key) DO UPDATE SET
                thread_id = excluded.thread_id, cwd = excluded.cwd, updated_at = excluded.updated_at,
                codex_server = excluded.codex_server,
                turns = CASE WHEN chats.thread_id IS excluded.thread_id THEN chats.turns ELSE 0 END,
                last_compaction = CASE WHEN chats.thread_id IS excluded.thread_id
                    THEN chats.last_compaction END,
                last_compaction_turn = CASE WHEN chats.thread_id IS excluded.thread_id
                    THEN chats.last_compaction_turn END",
        )
        .bind(&key)
        .bind(thread_id)
        .bind(cwd)
        .bind(now)
        .bind(server)
        .execute(tx)
        .await?;
        Ok(())
        })
        .await
    }

    /// Runs `write` in one transaction whose commit is synced to disk (`synchronous =
    /// FULL`), for the writes that must survive a power loss: which thread a chat has.
    /// It begins IMMEDIATE, so a write that reads first cannot lose its snapshot to
    /// another chat's write. The connection goes back to the ordinary setting either way.
    async fn durably<T>(
        &self,
        write: impl AsyncFnOnce(&mut sqlx::SqliteConnection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let mut connection = self.pool.acquire().await?;
        sqlx::query("PRAGMA synchronous = FULL")
            .execute(&mut *connection)
            .await?;
        let written = async {
            let mut tx = (*connection).begin_with("BEGIN IMMEDIATE").await?;
            let value = write(&mut tx).await?;
            tx.commit().await?;
            Ok(value)
        }
        .await;
        sqlx::query("PRAGMA synchronous = NORMAL")
            .execute(&mut *connection)
            .await?;
        written
    }

    /// Detaches the chat's thread (for `/new`), keeping its id in the history.
    /// Returns the retired id, if there was one.
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn retire_thread(
        &self,
        chat: &ChatKey,
        reason: RetireReason,
    ) -> Result<Option<String>, StoreError> {
        let key = chat.to_string();
        let now = now();
        self.durably(async |tx| {
            let old: Option<Option<String>> =
                sqlx::query_scalar("SELECT thread_id FROM chats WHERE chat_key = ?")
                    .bind(&key)
                    .fetch_optional(&mut *tx)
                    .await?;
            let Some(old) = old.flatten() else {
                return Ok(None);
            };
            insert_history(tx, &key, &old, reason, now).await?;
            sqlx::query(
                "UPDATE chats SET thread_id = NULL, codex_server = NULL, turns = 0, last_tokens = NULL,
                    total_tokens = NULL, last_compaction = NULL, last_compaction_turn = NULL,
                    updated_at = ? WHERE chat_key = ?",
            )
            .bind(now)
            .bind(&key)
            .execute(tx)
            .await?;
            Ok(Some(old))
        })
        .await
    }

    /// Records a finished turn: what was asked and the reply join the transcript, the
    /// usage is kept and the turn counted. It is committed with the other chats' turns
    /// that finish meanwhile. Returns the chat's row as it now is.
    #[instrument(skip_all, fields(chat = %chat, thread_id))]
    pub async fn finish_turn(
        &self,
        chat: &ChatKey,
        thread_id: &str,
        turn: TurnRecord<'_>,
    ) -> Result<Option<ChatRecord>, StoreError> {
        let TurnRecord {
            asked,
            reply,
            usage,
            diff,
        } = turn;
        let asked = asked.iter().map(|text| (Role::User, text.clone()));
        let lines = asked
            .chain(reply.map(|reply| (Role::Assistant, reply.to_owned())))
            .collect();
        let (written, row) = tokio::sync::oneshot::channel();
        let turn = turns::FinishedTurn {
            chat_key: chat.to_string(),
            thread_id: thread_id.to_owned(),
            lines,
            usage: usage.copied(),
            diff: diff.map(str::to_owned),
            written,
        };
        let closed = || StoreError::Query(sqlx::Error::PoolClosed);
        self.turns
            .send(turns::TurnWrite::Turn(turn))
            .map_err(|_| closed())?;
        row.await.map_err(|_| closed())?
    }

    /// Records a compaction the gateway ran (for hygiene's back-off) and the usage it
    /// left, in one statement; a compaction is not a turn.
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn finish_compaction(
        &self,
        chat: &ChatKey,
        usage: Option<&Usage>,
        outcome: CompactionOutcome,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "UPDATE chats SET last_tokens = COALESCE(?1, last_tokens),
                total_tokens = COALESCE(?2, total_tokens),
                context_window = COALESCE(?3, context_window),
                last_compaction = ?4, last_compaction_turn = turns, updated_at = ?5
             WHERE chat_key = ?6",
        )
        .bind(usage.map(|u| u.last_tokens))
        .bind(usage.map(|u| u.total_tokens))
        .bind(usage.and_then(|u| u.context_window))
        .bind(outcome.name())
        .bind(now())
        .bind(chat.to_string())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The chat's earlier threads, oldest first.
    #[instrument(skip_all, fields(chat = %chat))]
    pub async fn thread_history(
        &self,
        chat: &ChatKey,
    ) -> Result<Vec<(String, RetireReason)>, StoreError> {
        let rows: Vec<(String, String)> = sqlx::query_as(
            "SELECT thread_id, reason FROM thread_history WHERE chat_key = ? ORDER BY id",
        )
        .bind(chat.to_string())
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(id, reason)| Ok((id, stored::read::<RetireReason>(&reason)?)))
            .collect()
    }
}

async fn insert_history(
    tx: &mut sqlx::SqliteConnection,
    key: &str,
    thread_id: &str,
    reason: RetireReason,
    now: i64,
) -> Result<(), StoreError> {
    sqlx::query(
        "INSERT INTO thread_history (chat_key, thread_id, reason, retired_at) VALUES (?, ?, ?, ?)",
    )
    .bind(key)
    .bind(thread_id)
    .bind(reason.name())
    .bind(now)
    .execute(tx)
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use chat::Platform;
    use hygiene::LastCompaction;

    async fn fresh() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("nested/gateway.db"))
            .await
            .unwrap();
        (dir, store)
    }

    fn key(name: &str) -> ChatKey {
        ChatKey::new(Platform::Console, name)
    }

    #[tokio::test]
    async fn a_database_from_a_newer_version_says_so() {
        let (dir, store) = fresh().await;
        sqlx::query(
            "INSERT INTO _sqlx_migrations (version, description, success, checksum, execution_time)
             VALUES (9999, 'from the future', TRUE, x'00', 0)",
        )
        .execute(&store.pool)
        .await
        .unwrap();
        store.close().await;
        let path = dir.path().join("nested/gateway.db");
        let error = Store::open(&path).await.unwrap_err();
        let known = std::fs::read_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/../../migrations"))
            .unwrap()
            .count() as i64;
        assert!(
            matches!(error, StoreError::NewerVersion { applied: 9999, known: k, .. } if k == known),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("written by a newer codex-gateway")
        );
    }

    /// A value this gateway does not know is an error naming the column, never read as
    /// some default. The schema's CHECKs keep such values out; a newer gateway's schema or
    /// a hand edit (here: with the checks switched off) may not.
    #[tokio::test]
    async fn unknown_stored_values_are_errors() {
        let (_dir, store) = fresh().await;
        let chat = key("c");
        store
            .set_thread(&chat, "local", "/w/c", "t1", None)
            .await
            .unwrap();
        store.retire_thread(&chat, RetireReason::New).await.unwrap();
        let mut connection = store.pool.acquire().await.unwrap();
        for statement in [
            "PRAGMA ignore_check_constraints = ON",
            "UPDATE chats SET last_compaction = 'half-done'",
            "UPDATE thread_history SET reason = 'moved'",
            "PRAGMA ignore_check_constraints = OFF",
        ] {
            sqlx::query(statement)
                .execute(&mut *connection)
                .await
                .unwrap();
        }
        drop(connection);
        let row = store.chat(&chat).await.unwrap_err().to_string();
        assert!(
            row.contains("\"last_compaction\"")
                && row.contains("\"half-done\" as a compaction outcome"),
            "{row}"
        );
        let history = store.thread_history(&chat).await.unwrap_err().to_string();
        assert!(
            history.contains("reason a thread was retired") && history.contains("moved"),
            "{history}"
        );
    }

    #[tokio::test]
    async fn choices_outlive_a_new_thread_and_a_reopen() {
        use chat::{ChatChoices, Chosen, FollowUp, Mode};
        let (dir, store) = fresh().await;
        let chat = key("c");
        assert_eq!(store.choices(&chat).await.unwrap(), ChatChoices::default());
        let model = Chosen::Model(Some("m1".into()));
        store.set_choice(&chat, &model).await.unwrap();
        store
            .set_thread(&chat, "local", "/w/c", "t1", None)
            .await
            .unwrap();
        for chosen in [
            Chosen::Folder(Some("/p/x".into())),
            Chosen::Mode(Some(Mode::ReadOnly)),
            Chosen::FollowUp(Some(FollowUp::Queue)),
        ] {
            store.set_choice(&chat, &chosen).await.unwrap();
        }
        store.retire_thread(&chat, RetireReason::New).await.unwrap();
        store.close().await;
        let store = Store::open(&dir.path().join("nested/gateway.db"))
            .await
            .unwrap();
        let choices = store.choices(&chat).await.unwrap();
        assert_eq!(choices.model.as_deref(), Some("m1"));
        assert_eq!(choices.folder.as_deref(), Some("/p/x"));
        assert_eq!(choices.mode, Some(Mode::ReadOnly));
        assert_eq!(choices.follow_up, Some(FollowUp::Queue));
        assert_eq!(choices.effort, None);
        store.set_choice(&chat, &Chosen::Model(None)).await.unwrap();
        assert_eq!(store.choices(&chat).await.unwrap().model, None);

        // A value this gateway does not know (a newer one's) is an error, not a default.
        sqlx::query("UPDATE chats SET progress = 'loud'")
            .execute(&store.pool)
            .await
            .unwrap();
        let unknown = store.choices(&chat).await.unwrap_err().to_string();
        assert!(unknown.contains("\"loud\" as a progress"), "{unknown}");
    }

    #[tokio::test]
    async fn the_database_is_readable_by_its_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        let mode = |suffix: &str| {
            let file = format!("{}{suffix}", path.display());
            std::fs::metadata(file).unwrap().permissions().mode() & 0o777
        };
        let store = Store::open(&path).await.unwrap();
        store
            .set_thread(&key("a"), "local", "/w", "t1", None)
            .await
            .unwrap();
        assert_eq!(
            (mode(""), mode("-wal"), mode("-shm")),
            (0o600, 0o600, 0o600)
        );
        store.close().await;

        // A database from before is tightened when opened.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let store = Store::open(&path).await.unwrap();
        assert_eq!(mode(""), 0o600);
        store.close().await;
    }

    #[tokio::test]
    async fn thread_survives_reopen_and_new_moves_it_to_history() {
        let (dir, store) = fresh().await;
        let chat = key("a");
        assert_eq!(store.chat(&chat).await.unwrap(), None);
        store
            .set_thread(&chat, "local", "/w/a", "t1", None)
            .await
            .unwrap();
        store
            .finish_turn(&chat, "t", TurnRecord::default())
            .await
            .unwrap();
        store.close().await;

        let store = Store::open(&dir.path().join("nested/gateway.db"))
            .await
            .unwrap();
        let row = store.chat(&chat).await.unwrap().unwrap();
        assert_eq!(row.thread_id.as_deref(), Some("t1"));
        assert_eq!(row.turns, 1);

        assert_eq!(
            store
                .retire_thread(&chat, RetireReason::New)
                .await
                .unwrap()
                .as_deref(),
            Some("t1")
        );
        let row = store.chat(&chat).await.unwrap().unwrap();
        assert_eq!((row.thread_id, row.turns), (None, 0));
        assert_eq!(
            store.thread_history(&chat).await.unwrap(),
            vec![("t1".to_string(), RetireReason::New)]
        );
        // Nothing to retire twice.
        assert_eq!(
            store.retire_thread(&chat, RetireReason::New).await.unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn replacement_is_recorded_with_its_reason() {
        let (_dir, store) = fresh().await;
        let chat = key("b");
        store
            .set_thread(&chat, "local", "/w", "t1", None)
            .await
            .unwrap();
        store
            .finish_turn(&chat, "t", TurnRecord::default())
            .await
            .unwrap();
        store
            .set_thread(
                &chat,
                "local",
                "/w",
                "t2",
                Some(("t1", RetireReason::RolloutMissing)),
            )
            .await
            .unwrap();
        let row = store.chat(&chat).await.unwrap().unwrap();
        assert_eq!((row.thread_id.as_deref(), row.turns), (Some("t2"), 0));
        assert_eq!(
            store.thread_history(&chat).await.unwrap(),
            vec![("t1".to_string(), RetireReason::RolloutMissing)]
        );
    }

    #[tokio::test]
    async fn compaction_outcome_counts_turns_and_resets_with_the_thread() {
        let (_dir, store) = fresh().await;
        let chat = key("c");
        store
            .set_thread(&chat, "local", "/w", "t1", None)
            .await
            .unwrap();
        store
            .finish_turn(&chat, "t", TurnRecord::default())
            .await
            .unwrap();
        assert_eq!(
            store.chat(&chat).await.unwrap().unwrap().last_compaction(),
            None
        );
        store
            .finish_compaction(&chat, None, CompactionOutcome::NoOp)
            .await
            .unwrap();
        store
            .finish_turn(&chat, "t", TurnRecord::default())
            .await
            .unwrap();
        store
            .finish_turn(&chat, "t", TurnRecord::default())
            .await
            .unwrap();
        assert_eq!(
            store.chat(&chat).await.unwrap().unwrap().last_compaction(),
            Some(LastCompaction {
                outcome: CompactionOutcome::NoOp,
                turns_ago: 2
            })
        );
        store
            .set_thread(&chat, "local", "/w", "t1", None)
            .await
            .unwrap();
        assert!(
            store
                .chat(&chat)
                .await
                .unwrap()
                .unwrap()
                .last_compaction()
                .is_some()
        );
        store.retire_thread(&chat, RetireReason::New).await.unwrap();
        assert_eq!(
            store.chat(&chat).await.unwrap().unwrap().last_compaction(),
            None
        );
    }

    #[tokio::test]
    async fn usage_is_kept_per_chat() {
        let (_dir, store) = fresh().await;
        let (a, b) = (key("a"), key("b"));
        store
            .set_thread(&a, "local", "/w", "ta", None)
            .await
            .unwrap();
        store
            .set_thread(&b, "local", "/w", "tb", None)
            .await
            .unwrap();
        let usage = Usage {
            last_tokens: 42,
            total_tokens: 100,
            context_window: Some(1000),
        };
        let asked = ["question".to_owned(), "steered in".to_owned()];
        let turn = TurnRecord {
            asked: &asked,
            reply: Some("answer"),
            usage: Some(&usage),
            diff: Some("+fixed"),
        };
        let returned = store.finish_turn(&a, "ta", turn).await.unwrap();
        store
            .finish_compaction(&a, None, CompactionOutcome::NoOp)
            .await
            .unwrap();
        let row = store.chat(&a).await.unwrap().unwrap();
        assert_eq!(
            returned.unwrap().last_tokens,
            Some(42),
            "the row as written"
        );
        let said = store.recent_transcript(&a, 5).await.unwrap();
        let said: Vec<(Role, &str)> = said.iter().map(|(r, t)| (*r, t.as_str())).collect();
        assert_eq!(
            said,
            [
                (Role::User, "question"),
                (Role::User, "steered in"),
                (Role::Assistant, "answer")
            ]
        );
        assert_eq!(
            (
                row.turns,
                row.last_tokens,
                row.total_tokens,
                row.context_window
            ),
            (1, Some(42), Some(100), Some(1000))
        );
        assert_eq!(store.chat(&b).await.unwrap().unwrap().last_tokens, None);

        let no_change = TurnRecord::default();
        store.finish_turn(&a, "ta", no_change).await.unwrap();
        let kept = store.last_diff(&a).await.unwrap();
        assert_eq!(
            kept.as_deref(),
            Some("+fixed"),
            "a turn without changes keeps it"
        );
        assert_eq!(store.last_diff(&b).await.unwrap(), None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn turns_finishing_together_are_each_recorded_and_flushed_at_close() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gateway.db");
        let store = Store::open(&path).await.unwrap();
        for i in 0..300 {
            let chat = key(&format!("c{i}"));
            let thread = format!("t{i}");
            store
                .set_thread(&chat, "local", "/w", &thread, None)
                .await
                .unwrap();
        }
        // 300 chats finish at once (more than one commit holds), and one chat with no row.
        let finishing = (0..=300).map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                let (chat, asked) = (key(&format!("c{i}")), [format!("question {i}")]);
                let usage = Usage {
                    last_tokens: i,
                    total_tokens: 2 * i,
                    context_window: None,
                };
                let reply = format!("answer {i}");
                let turn = TurnRecord {
                    asked: &asked,
                    reply: Some(&reply),
                    usage: Some(&usage),
                    diff: None,
                };
                store
                    .finish_turn(&chat, &format!("t{i}"), turn)
                    .await
                    .unwrap()
            })
        });
        let rows: Vec<Option<ChatRecord>> = futures_util::future::join_all(finishing)
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
        for (i, row) in rows.iter().take(300).enumerate() {
            let row = row.as_ref().expect("the chat's row as written");
            let thread = format!("t{i}");
            assert_eq!(row.thread_id.as_deref(), Some(thread.as_str()));
            assert_eq!((row.turns, row.last_tokens), (1, Some(i as i64)));
        }
        assert_eq!(rows[300], None, "a chat without a row has none to return");
        let said = store.recent_transcript(&key("c7"), 5).await.unwrap();
        let expected = [
            (Role::User, "question 7".to_owned()),
            (Role::Assistant, "answer 7".to_owned()),
        ];
        assert_eq!(said, expected);

        // A turn sent just before the close is written before the connections go.
        let late = store.clone();
        let asked = ["last words".to_owned()];
        let turn = TurnRecord {
            asked: &asked,
            reply: None,
            usage: None,
            diff: None,
        };
        let c1 = key("c1");
        let (written, ()) = tokio::join!(late.finish_turn(&c1, "t1", turn), async {
            tokio::task::yield_now().await;
            store.close().await
        });
        assert_eq!(written.unwrap().unwrap().turns, 2);
        let reopened = Store::open(&path).await.unwrap();
        let said = reopened.recent_transcript(&key("c1"), 1).await.unwrap();
        assert_eq!(said, [(Role::User, "last words".to_owned())]);
    }

    #[tokio::test]
    async fn transcript_is_per_chat_and_starts_after_new() {
        let (_dir, store) = fresh().await;
        let (a, b) = (key("a"), key("b"));
        store
            .set_thread(&a, "local", "/w", "t1", None)
            .await
            .unwrap();
        store
            .append_transcript(&a, "t1", &[(Role::User, "old question")])
            .await
            .unwrap();
        store.retire_thread(&a, RetireReason::New).await.unwrap();
        store
            .set_thread(&a, "local", "/w", "t2", None)
            .await
            .unwrap();
        for i in 0..5 {
            store
                .append_transcript(&a, "t2", &[(Role::User, &format!("q{i}"))])
                .await
                .unwrap();
            store
                .append_transcript(&a, "t2", &[(Role::Assistant, &format!("a{i}"))])
                .await
                .unwrap();
        }
        store
            .append_transcript(&b, "tb", &[(Role::User, "other chat")])
            .await
            .unwrap();
        let recent = store.recent_transcript(&a, 3).await.unwrap();
        assert_eq!(
            recent,
            vec![
                (Role::Assistant, "a3".to_string()),
                (Role::User, "q4".to_string()),
                (Role::Assistant, "a4".to_string())
            ]
        );
        let all = store.recent_transcript(&a, 100).await.unwrap();
        assert_eq!(all.len(), 10);
        assert!(
            all.iter()
                .all(|(_, text)| text != "old question" && text != "other chat")
        );
    }

    #[tokio::test]
    async fn the_last_answer_is_the_newest_reply_and_one_a_crash_kept_is_added() {
        let (_dir, store) = fresh().await;
        let a = key("a");
        assert_eq!(store.last_answer(&a).await.unwrap(), None);
        store
            .set_thread(&a, "local", "/w", "t1", None)
            .await
            .unwrap();
        let said = [(Role::User, "q"), (Role::Assistant, "first reply")];
        store.append_transcript(&a, "t1", &said).await.unwrap();
        store
            .append_transcript(&a, "t1", &[(Role::User, "q2")])
            .await
            .unwrap();
        assert_eq!(
            store.last_answer(&a).await.unwrap().as_deref(),
            Some("first reply")
        );
        // Shown with a marker, the recorded reply is already the last answer.
        store
            .keep_last_answer(&a, "first reply\n\n(stopped)")
            .await
            .unwrap();
        assert_eq!(
            store.last_answer(&a).await.unwrap().as_deref(),
            Some("first reply")
        );
        // A turn the crash kept from being recorded: its answer becomes the last.
        store.keep_last_answer(&a, "second reply").await.unwrap();
        assert_eq!(
            store.last_answer(&a).await.unwrap().as_deref(),
            Some("second reply")
        );
        assert_eq!(store.last_answer(&key("b")).await.unwrap(), None);
    }

    #[tokio::test]
    async fn platform_offset_is_kept() {
        let (_dir, store) = fresh().await;
        assert_eq!(
            store.platform_offset(Platform::Telegram).await.unwrap(),
            None
        );
        for offset in [41, 42] {
            let accepted = store
                .accept(Platform::Telegram, &[], Some(offset))
                .await
                .unwrap();
            assert!(accepted.is_empty());
        }
        assert_eq!(
            store.platform_offset(Platform::Telegram).await.unwrap(),
            Some(42)
        );
        assert_eq!(
            store.platform_offset(Platform::Discord).await.unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn unwritable_path_is_a_clear_error() {
        let err = Store::open(Path::new("/proc/codex-gateway/x.db"))
            .await
            .unwrap_err();
        assert!(matches!(err, StoreError::Open { .. }), "{err}");
        assert!(
            err.to_string().contains("/proc/codex-gateway/x.db"),
            "{err}"
        );
    }
}
