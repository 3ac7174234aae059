//! One chat's hold on its Codex thread: use the live thread, else resume the stored one,
//! else start one. Only `/new` ever leaves a thread behind on purpose.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::{info, warn};

use crate::config::WorkspaceMode;
use chat::ChatKey;
use codex::{
    AppServer, CodexError, ModelConfig, OpenedThread, ThreadEvent, ThreadSettings, TokenUsage,
    TurnOverrides, TurnState, UserInput,
};
use hygiene::CompactionOutcome;
use store::{RetireReason, Role, StoreError, TurnRecord, Usage};

mod attach;
mod attachments;
mod choices;
mod context;
mod files;
mod jobs;
mod login;
mod placement;
mod row;
mod tasks;
mod threads;
mod worktrees;

pub use attach::AttachPoint;
pub use attachments::{ATTACHMENTS_FOLDER, AttachmentRefusal, Prompt};
pub use choices::{FolderRefusal, mode_permissions};
#[cfg(test)]
pub use context::defaults;
pub use context::{Context, ScheduleSettings, SessionError, SessionSettings};
pub use files::{GetRefusal, MAX_FILE_BYTES};
pub use login::{LOGIN_MISSING, LoginCheck, WORKER_LOGIN_MISSING, login_missing};
pub use placement::ServerPlace;
pub use row::ChatRow;
pub use tasks::keep_task;
pub use threads::{ThreadMatch, Undo};
pub use worktrees::{Merge, Worktree, WorktreeRefusal, WorktreeState};

/// Transcript entries given to a replacement thread when the old rollout is gone.
const SEED_ENTRIES: i64 = 20;
/// Upper bound for the seed's size; older entries are dropped first.
const SEED_MAX_CHARS: usize = 16_000;

/// A thread loaded in a running app-server, with its event stream.
struct LiveThread {
    server: AppServer,
    /// The name of the Codex server it runs on, stored with the thread.
    server_name: String,
    thread_id: String,
    events: mpsc::UnboundedReceiver<ThreadEvent>,
    cwd: PathBuf,
    /// False until the thread's id is in SQLite (a thread has no rollout before its first turn).
    persisted: bool,
    /// What the thread runs with, so a turn overrides it only to change it.
    runs_with: TurnOverrides,
}

/// What a turn is for.
#[derive(Debug, Clone, Copy)]
pub enum TurnRequest<'a> {
    /// The user's message.
    Message(&'a Prompt),
    /// Codex's review of the uncommitted changes in the chat's folder.
    Review,
}

/// A started turn.
pub struct StartedTurn {
    pub turn_id: String,
    /// The stored thread could not be resumed: this turn opened its replacement, which
    /// was given the recent transcript.
    pub replaced: bool,
}

/// A compaction under way.
pub struct Compacting {
    /// Context tokens before it, to tell whether it reduced anything.
    pub tokens_before: Option<i64>,
}

pub struct Session {
    chat: ChatKey,
    ctx: Arc<Context>,
    live: Option<LiveThread>,
    /// Thread whose rollout is gone; retired when its replacement is persisted.
    replacing: Option<String>,
    /// What the person asked in the running turn, written with its reply.
    asked: Vec<String>,
    /// The chat's choices of model, effort and folder, once read.
    choices: Option<chat::ChatChoices>,
    /// Codex's configured model and provider for the chat's folder, once asked.
    model_config: Option<ModelConfig>,
    /// The model and effort a chat without a choice uses, once worked out (`/model`,
    /// `/effort`): a turn goes back to them after a choice is dropped, since Codex keeps
    /// a thread on the last model and effort a turn named.
    defaults: choices::ModelDefaults,
    /// The Codex server holding the chat's thread, once known (see `placement`).
    placed: std::sync::Mutex<Option<String>>,
    /// A task's title, for the thread its first message starts (see `begin_task`).
    task_name: Option<String>,
}

impl Session {
    pub fn new(chat: ChatKey, ctx: Arc<Context>) -> Self {
        Self {
            chat,
            ctx,
            live: None,
            replacing: None,
            asked: Vec::new(),
            choices: None,
            model_config: None,
            defaults: choices::ModelDefaults::default(),
            placed: std::sync::Mutex::new(None),
            task_name: None,
        }
    }

    pub fn thread_id(&self) -> Option<&str> {
        self.live.as_ref().map(|live| live.thread_id.as_str())
    }

    /// Starts a turn (the user's message, or a review), attaching to the chat's thread first.
    pub async fn start_turn(
        &mut self,
        request: TurnRequest<'_>,
    ) -> Result<StartedTurn, SessionError> {
        self.choices().await?;
        self.ensure_thread().await?;
        // Until its first turn is stored, a replacement thread still needs the transcript.
        let replaced = self.replacing.is_some();
        let seed = match (replaced, request) {
            (true, TurnRequest::Message(_)) => Some(self.transcript_seed().await?),
            _ => None,
        };
        let (text, prompt) = match request {
            TurnRequest::Message(prompt) => (prompt.text.as_str(), prompt.inputs()),
            TurnRequest::Review => ("/review", Vec::new()),
        };
        let seed = seed.as_deref().map(|text| UserInput::Text { text });
        let inputs: Vec<UserInput<'_>> = seed.into_iter().chain(prompt).collect();
        let turn_id = match self.send_turn(request, &inputs).await {
            // The process lost the thread (restart raced us): resume and try once more.
            Err(CodexError::ThreadNotLoaded(_) | CodexError::ProcessExited) => {
                self.live = None;
                self.ensure_thread().await?;
                self.send_turn(request, &inputs).await?
            }
            other => other?,
        };
        // Only a new thread's id is written now, durably: the user's text waits for the
        // turn's end and goes in with the reply (one write per turn). A failed write must
        // not hide the running turn: it is tried again when the turn ends.
        self.asked.push(text.to_owned());
        if let Err(error) = self.persist_thread().await {
            warn!(chat = %self.chat, %error, "could not store the thread; trying again when the turn ends");
            self.ctx.metrics.error("store");
        }
        self.name_after_task().await;
        Ok(StartedTurn { turn_id, replaced })
    }

    async fn send_turn(
        &mut self,
        request: TurnRequest<'_>,
        inputs: &[UserInput<'_>],
    ) -> Result<String, CodexError> {
        let overrides = self.overrides();
        let live = self
            .live
            .as_mut()
            .expect("ensure_thread leaves a live thread");
        match request {
            TurnRequest::Message(_) => {
                let turn_id = live
                    .server
                    .start_turn(&live.thread_id, inputs, &overrides)
                    .await?;
                live.runs_with.apply(&overrides);
                Ok(turn_id)
            }
            TurnRequest::Review => live.server.start_review(&live.thread_id).await,
        }
    }

    /// Gives `prompt` to the running turn `turn_id`; Codex refuses when that turn has
    /// ended or cannot take input. The text joins the transcript with the turn's end.
    pub async fn steer(&mut self, turn_id: &str, prompt: &Prompt) -> Result<(), SessionError> {
        let live = self.live.as_ref().ok_or(CodexError::ProcessExited)?;
        live.server
            .steer(&live.thread_id, turn_id, &prompt.inputs())
            .await?;
        self.asked.push(prompt.text.clone());
        Ok(())
    }

    /// What another client asked in the turn being followed, for its transcript.
    pub fn asked_elsewhere(&mut self, text: String) {
        self.asked.push(text);
    }

    /// Records the end of a turn in one write: what was asked and the reply join the
    /// transcript, the usage is kept. Returns the chat's row as it now is.
    pub async fn finish_turn(
        &mut self,
        reply: Option<&str>,
        usage: Option<&TokenUsage>,
        diff: Option<&str>,
    ) -> Result<Option<ChatRow>, SessionError> {
        self.persist_thread().await?;
        let thread_id = self.thread_id().unwrap_or_default();
        let usage = usage.map(stored_usage);
        let turn = TurnRecord {
            asked: &self.asked,
            reply,
            usage: usage.as_ref(),
            diff,
        };
        let record = self
            .ctx
            .store
            .finish_turn(&self.chat, thread_id, turn)
            .await?;
        self.asked.clear();
        Ok(record.map(ChatRow::from))
    }

    /// Where a turn handed over at the last stop stands: resumes the chat's thread (its
    /// events reach this chat from now on), then reads the turn back from its history.
    pub async fn rejoin(&mut self, turn_id: &str) -> Result<Option<TurnState>, SessionError> {
        self.ensure_thread().await?;
        let live = self
            .live
            .as_ref()
            .expect("ensure_thread leaves a live thread");
        Ok(live.server.turn_state(&live.thread_id, turn_id).await?)
    }

    /// Codex's newest answer in the chat (`/last`).
    pub async fn last_answer(&self) -> Result<Option<String>, SessionError> {
        Ok(self.ctx.store.last_answer(&self.chat).await?)
    }

    /// Makes `answer`, which may have reached the chat, what `/last` sends.
    pub async fn keep_last_answer(&self, answer: &str) {
        if let Err(error) = self.ctx.store.keep_last_answer(&self.chat, answer).await {
            warn!(chat = %self.chat, %error, "could not keep the last answer for /last");
        }
    }

    /// The diff of the chat's latest turn that changed files (`/diff`).
    pub async fn last_diff(&self) -> Result<Option<String>, SessionError> {
        Ok(self.ctx.store.last_diff(&self.chat).await?)
    }

    /// Records what was asked in a turn that ended without Codex closing it (its
    /// process died): the transcript keeps it, no turn is counted.
    pub async fn record_unanswered(&mut self) -> Result<(), SessionError> {
        self.persist_thread().await?;
        let thread_id = self.thread_id().unwrap_or_default();
        let lines: Vec<(Role, &str)> = self
            .asked
            .iter()
            .map(|t| (Role::User, t.as_str()))
            .collect();
        let store = &self.ctx.store;
        store
            .append_transcript(&self.chat, thread_id, &lines)
            .await?;
        self.asked.clear();
        Ok(())
    }

    /// Starts Codex's native compaction of the chat's thread; `None` when the chat has no
    /// thread with any history yet.
    pub async fn start_compaction(&mut self) -> Result<Option<Compacting>, SessionError> {
        let stored = self.ctx.store.chat(&self.chat).await?;
        let tokens_before = stored.as_ref().and_then(|c| c.last_tokens);
        if self.live.is_none() && stored.and_then(|c| c.thread_id).is_none() {
            return Ok(None);
        }
        self.ensure_thread().await?;
        let live = self
            .live
            .as_ref()
            .expect("ensure_thread leaves a live thread");
        if !live.persisted {
            return Ok(None); // a new thread (its stored one was lost): nothing to compact
        }
        live.server.compact(&live.thread_id).await?;
        Ok(Some(Compacting { tokens_before }))
    }

    /// Records how a compaction ended, with the usage it left.
    pub async fn finish_compaction(
        &self,
        usage: Option<&TokenUsage>,
        outcome: CompactionOutcome,
    ) -> Result<(), SessionError> {
        let usage = usage.map(stored_usage);
        let store = &self.ctx.store;
        let finished = store.finish_compaction(&self.chat, usage.as_ref(), outcome);
        Ok(finished.await?)
    }

    /// The next event of the live thread; `None` when there is no live thread.
    pub async fn next_event(&mut self) -> Option<ThreadEvent> {
        match self.live.as_mut() {
            Some(live) => live.events.recv().await,
            None => None,
        }
    }

    pub async fn interrupt(&self, turn_id: &str) -> Result<(), CodexError> {
        match &self.live {
            Some(live) => live.server.interrupt(&live.thread_id, turn_id).await,
            None => Ok(()),
        }
    }

    /// Forgets the live handle after its process died; the stored id stays for resume.
    pub fn lose_live_thread(&mut self) {
        self.live = None;
    }

    /// Drops the in-memory thread; it stays in SQLite and the next message resumes it.
    pub async fn unload(&mut self) {
        if let Some(live) = self.live.take()
            && let Err(error) = live.server.unsubscribe(&live.thread_id).await
        {
            warn!(chat = %self.chat, thread_id = live.thread_id, %error, "thread/unsubscribe failed");
        }
    }

    /// `/new`: retires the chat's thread; the next message starts a fresh one.
    pub async fn start_over(&mut self) -> Result<Option<String>, SessionError> {
        self.unload().await;
        self.replacing = None;
        self.unplace();
        let retired = self
            .ctx
            .store
            .retire_thread(&self.chat, RetireReason::New)
            .await?;
        info!(chat = %self.chat, thread_id = ?retired, "thread retired by /new");
        Ok(retired)
    }

    pub async fn record(&self) -> Result<Option<ChatRow>, SessionError> {
        Ok(self.ctx.store.chat(&self.chat).await?.map(ChatRow::from))
    }

    /// The app-server of the live thread, if there is one.
    fn live_server(&self) -> Option<&AppServer> {
        self.live.as_ref().map(|live| &live.server)
    }

    pub fn is_live(&self) -> bool {
        self.live
            .as_ref()
            .is_some_and(|live| live.server.is_alive())
    }

    /// Leaves a live thread: the current one, the stored one resumed, or a new one.
    async fn ensure_thread(&mut self) -> Result<(), SessionError> {
        if self.is_live() {
            return Ok(());
        }
        self.live = None;
        let server_name = self.placement().await?;
        let server = self.server().await?;
        let cwd = self.working_directory(&server).await?;
        let settings = self.thread_settings(&cwd);
        let stored = self
            .ctx
            .store
            .chat(&self.chat)
            .await?
            .and_then(|c| c.thread_id);
        if let Some(thread_id) = stored {
            // Subscribed before resuming: Codex asks a running turn's pending approvals
            // again right after the resume's answer, and an unheard request is declined.
            let events = server.subscribe(&thread_id);
            match resume_when_closed(&server, &thread_id, &settings).await {
                Ok(resumed) => {
                    info!(chat = %self.chat, thread_id = resumed.id, "thread resumed");
                    self.ctx.metrics.resumes.inc();
                    let events = match resumed.id == thread_id {
                        true => events,
                        false => server.subscribe(&resumed.id),
                    };
                    self.live = Some(LiveThread {
                        server,
                        server_name,
                        thread_id: resumed.id,
                        events,
                        cwd,
                        persisted: true,
                        runs_with: resumed.runs_with,
                    });
                    return Ok(());
                }
                Err(CodexError::ThreadGone { message, .. }) => {
                    warn!(chat = %self.chat, thread_id, message, "stored thread cannot be resumed; replacing it");
                    self.replacing = Some(thread_id);
                }
                Err(error) => return Err(error.into()),
            }
        }
        let thread = server.start_thread(&settings).await?;
        info!(chat = %self.chat, thread_id = thread.id, "thread started");
        self.ctx.metrics.thread_starts.inc();
        let events = server.subscribe(&thread.id);
        self.live = Some(LiveThread {
            server,
            server_name,
            thread_id: thread.id,
            events,
            cwd,
            persisted: false,
            runs_with: thread.runs_with,
        });
        Ok(())
    }

    async fn persist_thread(&mut self) -> Result<(), StoreError> {
        let Some(live) = self.live.as_mut().filter(|live| !live.persisted) else {
            return Ok(());
        };
        let replaced = self
            .replacing
            .as_deref()
            .map(|old| (old, RetireReason::RolloutMissing));
        self.ctx
            .store
            .set_thread(
                &self.chat,
                &live.server_name,
                &live.cwd.to_string_lossy(),
                &live.thread_id,
                replaced,
            )
            .await?;
        live.persisted = true;
        self.replacing = None;
        Ok(())
    }

    /// The recent conversation, as text for a thread that replaces a lost one.
    async fn transcript_seed(&self) -> Result<String, StoreError> {
        let entries = self
            .ctx
            .store
            .recent_transcript(&self.chat, SEED_ENTRIES)
            .await?;
        let mut lines: Vec<String> = entries
            .into_iter()
            .map(|(role, text)| match role {
                Role::User => format!("User: {text}"),
                Role::Assistant => format!("Assistant: {text}"),
            })
            .collect();
        while lines.iter().map(String::len).sum::<usize>() > SEED_MAX_CHARS && lines.len() > 1 {
            lines.remove(0);
        }
        Ok(format!(
            "[codex-gateway] This chat's earlier Codex session could not be restored. \
             The recent conversation was:\n{}\n[end of earlier conversation]",
            lines.join("\n")
        ))
    }

    /// The chat's working directory, created if missing by the app-server itself (so it
    /// belongs to the user Codex runs as, on the machine Codex runs on).
    async fn working_directory(&self, server: &AppServer) -> Result<PathBuf, SessionError> {
        if let Some(folder) = self.chosen_folder() {
            return Ok(folder.to_owned());
        }
        let path = self.workspace_folder()?;
        match server.create_directory(&path).await {
            Ok(()) => Ok(path),
            // Codex refused to make it: the folder is the trouble.
            Err(error @ CodexError::Rpc { .. }) => Err(SessionError::Workspace {
                path,
                source: std::io::Error::other(error),
            }),
            // Codex went away (or never answered): the message waits for it like any other.
            Err(error) => Err(SessionError::Codex(error)),
        }
    }

    /// The chat's folder under the workspace, absolute (Codex wants an absolute cwd).
    fn workspace_folder(&self) -> Result<PathBuf, SessionError> {
        let settings = &self.ctx.settings;
        let path = match settings.workspace_mode {
            WorkspaceMode::Shared => settings.workspace.clone(),
            WorkspaceMode::PerChat => settings.workspace.join(self.chat.folder_name()),
        };
        std::path::absolute(&path).map_err(|source| SessionError::Workspace { path, source })
    }

    fn thread_settings(&self, cwd: &std::path::Path) -> ThreadSettings {
        let settings = &self.ctx.settings;
        ThreadSettings {
            cwd: cwd.to_string_lossy().into_owned(),
            model: settings.model.clone(),
            approval_policy: settings.approval_policy,
            sandbox: settings.sandbox,
        }
    }
}

fn stored_usage(usage: &TokenUsage) -> Usage {
    Usage {
        last_tokens: usage.last.total_tokens,
        total_tokens: usage.total.total_tokens,
        context_window: usage.model_context_window,
    }
}

/// How long to wait for Codex to finish unloading a thread before resuming it again.
const CLOSING_RETRIES: u32 = 30;
const CLOSING_RETRY_DELAY: Duration = Duration::from_millis(500);

/// Resumes a thread, waiting out Codex's unloading of it if that is under way.
async fn resume_when_closed(
    server: &AppServer,
    thread_id: &str,
    settings: &ThreadSettings,
) -> Result<OpenedThread, CodexError> {
    let mut attempt = 0;
    loop {
        match server.resume_thread(thread_id, settings).await {
            Err(CodexError::ThreadClosing(_)) if attempt < CLOSING_RETRIES => {
                attempt += 1;
                tokio::time::sleep(CLOSING_RETRY_DELAY).await;
            }
            other => return other,
        }
    }
}
