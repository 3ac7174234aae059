//! What every chat's session shares, and how a session fails.

use std::path::PathBuf;
use std::time::Duration;

use crate::config::{ApprovalPolicy, Config, FollowUp, Progress, SandboxMode, WorkspaceMode};
use crate::inbox::Inbox;
use crate::metrics::Metrics;
use crate::transcription::Transcriber;
use codex::{Codex, CodexError};
use hygiene::Policy;
use store::{Store, StoreError};

use super::LoginCheck;

/// What every session shares.
pub struct Context {
    pub store: Store,
    /// The durable inbox: every step of a message, kept.
    pub inbox: Inbox,
    pub codex: Codex,
    pub settings: SessionSettings,
    pub hygiene: Policy,
    pub metrics: Metrics,
    pub login: LoginCheck,
    /// Turns voice messages into text, when configured.
    pub transcriber: Option<Transcriber>,
}

/// How threads are created and turns are bounded.
#[derive(Debug, Clone)]
pub struct SessionSettings {
    pub workspace: PathBuf,
    pub workspace_mode: WorkspaceMode,
    pub model: Option<String>,
    pub approval_policy: ApprovalPolicy,
    pub sandbox: SandboxMode,
    /// A turn silent this long is interrupted.
    pub turn_timeout: Duration,
    /// No turn runs longer than this, busy or not.
    pub max_turn: Option<Duration>,
    pub approval_timeout: Duration,
    pub max_queued: usize,
    /// Folders a chat may move to with `/cwd` (empty: it only shows its folder).
    pub project_roots: Vec<PathBuf>,
    /// Folders fixed per chat key by the config.
    pub chat_folders: std::collections::BTreeMap<String, PathBuf>,
    /// What a message sent during a turn does in chats that did not choose.
    pub follow_up: FollowUp,
    /// How a running turn is shown in chats that did not choose.
    pub progress: Progress,
    /// Larger files sent to Codex are refused.
    pub max_attachment_bytes: u64,
    /// How long a message waits for its chat's unreachable Codex worker.
    pub worker_wait: Duration,
    pub schedule: ScheduleSettings,
    /// The file holding the token a terminal attaches with, when the local app-servers
    /// are attachable.
    pub attach_token_file: Option<PathBuf>,
    /// Every task gets a worktree of its own (`codex.task_worktrees`).
    pub task_worktrees: bool,
}

/// Limits of scheduled work, and the zone its times are read in.
#[derive(Debug, Clone, Copy)]
pub struct ScheduleSettings {
    pub min_interval: Duration,
    pub max_jobs_per_chat: usize,
    pub timezone: chrono_tz::Tz,
}

/// The settings and hygiene policy when the config sets nothing, for the tests of the
/// defaults (the router may not read the config).
#[cfg(test)]
pub fn defaults() -> (SessionSettings, hygiene::Policy) {
    let config = Config::default();
    (
        SessionSettings::from_config(&config),
        config.hygiene.policy(),
    )
}

impl SessionSettings {
    pub fn from_config(config: &Config) -> Self {
        let (codex, chat, schedule) = (&config.codex, &config.chat, &config.schedule);
        Self {
            workspace: codex.workspace.clone(),
            workspace_mode: codex.workspace_mode,
            model: codex.model.clone(),
            approval_policy: codex.approval_policy,
            sandbox: codex.sandbox,
            turn_timeout: Duration::from_secs(codex.turn_timeout_secs),
            max_turn: codex.max_turn_secs.map(Duration::from_secs),
            approval_timeout: Duration::from_secs(codex.approval_timeout_secs),
            max_queued: codex.max_queued_messages,
            project_roots: codex.project_roots.clone(),
            chat_folders: codex.chat_folders.clone(),
            follow_up: chat.follow_up,
            progress: chat.progress,
            max_attachment_bytes: chat.max_attachment_mb * 1024 * 1024,
            worker_wait: Duration::from_secs(codex.worker_wait_secs),
            schedule: ScheduleSettings {
                min_interval: Duration::from_secs(schedule.min_interval_secs),
                max_jobs_per_chat: schedule.max_jobs_per_chat,
                timezone: crate::schedule::timezone(&schedule.timezone)
                    .expect("validated in Config::load"),
            },
            attach_token_file: codex
                .attach
                .then(|| crate::attach_token::token_file(config)),
            task_worktrees: codex.task_worktrees,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error(transparent)]
    Codex(#[from] CodexError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("cannot create the working directory {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl SessionError {
    /// A fixed label for the error metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            SessionError::Codex(_) => "codex",
            SessionError::Store(_) => "store",
            SessionError::Workspace { .. } => "workspace",
        }
    }
}
