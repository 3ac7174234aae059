//! One `codex app-server` child: JSON-RPC over stdio, many threads per process.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, info};

use super::catalog::TurnOverrides;
use super::error::CodexError;
use super::listen;
use super::orphans;
use super::protocol::{
    AccountState, OpenedThread, ThreadReply, ThreadResumeParams, ThreadSettings, TurnReply,
    TurnStartParams, UserInput, thread_id_of,
};
use super::spawn::{SpawnSpec, command};
use super::wire::{Shared, ThreadEvent, read_lines, wait_for_exit, write_lines};

/// A handle to a running app-server; clones share the process.
#[derive(Clone)]
pub struct AppServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AppServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.shared.pid {
            Some(pid) => write!(f, "AppServer(pid {pid})"),
            None => f.write_str("AppServer(remote)"),
        }
    }
}

impl AppServer {
    /// Starts the process and completes the `initialize` handshake.
    pub async fn spawn(spec: &SpawnSpec) -> Result<Self, CodexError> {
        let spawn_error = |message: String| CodexError::Spawn {
            binary: spec.binary.display().to_string(),
            message,
        };
        let mut child = orphans::spawn_app_server(|| command(spec).spawn(), |c| c.id())
            .map_err(|e| spawn_error(not_started(&e)))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel();
        let (kill_tx, kill_rx) = oneshot::channel();
        let shared = Arc::new(Shared::new(
            child.id(),
            outgoing,
            kill_tx,
            spec.request_timeout,
            spec.unread.clone(),
        ));
        let said = StderrTail::default();
        let (announce, announced) = oneshot::channel();
        let secrets = spec.secrets.clone();
        let stderr_read = tokio::spawn(read_stderr(stderr, said.clone(), secrets, announce));
        let attach = match &spec.attach {
            None => {
                let stdin = child.stdin.take().expect("stdin is piped");
                let stdout = child.stdout.take().expect("stdout is piped");
                tokio::spawn(write_lines(stdin, outgoing_rx));
                tokio::spawn(read_lines(stdout, shared.clone()));
                None
            }
            Some(attach) => Some((attach, outgoing_rx)),
        };
        tokio::spawn(wait_for_exit(child, kill_rx, shared.clone()));

        let server = AppServer { shared };
        let started = async {
            if let Some((attach, outgoing)) = attach {
                let within = spec.request_timeout;
                listen::connect(&server.shared, attach, announced, outgoing, within).await?;
            }
            server
                .initialize()
                .await
                .map_err(|error| format!("initialize failed: {error}"))
        };
        if let Err(error) = started.await {
            server.shutdown().await;
            // Codex's own words say why (`CODEX_HOME` not a folder, an old version without
            // `app-server`): they go into the error, at the default log level too.
            let _ = tokio::time::timeout(STDERR_WAIT, stderr_read).await;
            let said = said.lines();
            let said = match said.is_empty() {
                true => String::new(),
                false => format!("; Codex said: {}", said.join(" | ")),
            };
            return Err(spawn_error(format!("{error}{said}")));
        }
        info!(pid = ?server.pid(), url = ?server.attach_url(), "codex app-server started");
        Ok(server)
    }

    pub(super) fn from_shared(shared: Arc<Shared>) -> Self {
        AppServer { shared }
    }

    /// The `initialize` handshake every connection begins with; on failure the
    /// connection is closed.
    pub(super) async fn initialize(&self) -> Result<(), CodexError> {
        let init = self
            .request::<Value>(
                "initialize",
                json!({
                    "clientInfo": {"name": "codex-gateway", "title": "codex-gateway", "version": env!("CARGO_PKG_VERSION")},
                    "capabilities": {"experimentalApi": true},
                }),
            )
            .await;
        let init = match init {
            Ok(init) => init,
            Err(error) => {
                self.shutdown().await;
                return Err(error);
            }
        };
        if let Some(version) = init
            .get("userAgent")
            .and_then(Value::as_str)
            .and_then(version_in_user_agent)
        {
            let _ = self.shared.version.set(version.to_owned());
        }
        self.notify("initialized");
        Ok(())
    }

    /// Codex's version, as it said at `initialize`.
    pub fn version(&self) -> Option<&str> {
        self.shared.version.get().map(String::as_str)
    }

    /// What Codex said is wrong with its setup so far, each once.
    pub fn config_warnings(&self) -> Vec<String> {
        self.shared.config_warnings.lock().expect("lock").clone()
    }

    /// Where a terminal attaches to this app-server (`codex resume … --remote URL`): a
    /// worker's URL, or the local process's loopback address when it is attachable.
    pub fn attach_url(&self) -> Option<&str> {
        self.shared.attach_url.get().map(String::as_str)
    }

    pub fn pid(&self) -> Option<u32> {
        self.shared.pid
    }

    /// The rate limits Codex last reported during a turn, if it did; no question asked.
    pub fn known_rate_limits(&self) -> Option<super::catalog::RateLimits> {
        self.shared.known_rate_limits.lock().expect("lock").clone()
    }

    /// Account notifications from now on (`account/login/completed`, ...).
    pub(super) fn account_events(&self) -> tokio::sync::broadcast::Receiver<(String, Value)> {
        self.shared.account_events.subscribe()
    }

    pub fn is_alive(&self) -> bool {
        *self.shared.alive.borrow()
    }

    /// Resolves once the process has exited.
    pub async fn exited(&self) {
        let mut alive = self.shared.alive.subscribe();
        let _ = alive.wait_for(|alive| !alive).await;
    }

    /// Kills the process and waits until it is gone.
    pub async fn shutdown(&self) {
        if let Some(kill) = self.shared.kill.lock().expect("lock").take() {
            let _ = kill.send(());
        }
        self.exited().await;
    }

    pub async fn start_thread(
        &self,
        settings: &ThreadSettings,
    ) -> Result<OpenedThread, CodexError> {
        let reply: ThreadReply = self.request("thread/start", settings).await?;
        Ok(reply.into())
    }

    pub async fn resume_thread(
        &self,
        thread_id: &str,
        settings: &ThreadSettings,
    ) -> Result<OpenedThread, CodexError> {
        let params = ThreadResumeParams {
            thread_id,
            exclude_turns: true,
            settings,
        };
        let reply: ThreadReply = self.request("thread/resume", &params).await?;
        Ok(reply.into())
    }

    /// Routes the thread's events to the returned receiver (replacing an earlier one).
    pub fn subscribe(&self, thread_id: &str) -> mpsc::UnboundedReceiver<ThreadEvent> {
        let (tx, rx) = mpsc::unbounded_channel();
        if self.is_alive() {
            self.shared
                .threads
                .lock()
                .expect("lock")
                .insert(thread_id.to_owned(), tx);
        } else {
            let _ = tx.send(ThreadEvent::ProcessExited);
        }
        rx
    }

    /// Stops this connection's events for the thread and lets Codex unload it.
    pub async fn unsubscribe(&self, thread_id: &str) -> Result<(), CodexError> {
        self.shared.threads.lock().expect("lock").remove(thread_id);
        self.request::<Value>("thread/unsubscribe", json!({"threadId": thread_id}))
            .await
            .map(drop)
    }

    /// Threads the gateway holds live on this process. Codex itself unloads a thread
    /// only some time after its last subscriber left.
    pub fn subscriptions(&self) -> usize {
        self.shared.threads.lock().expect("lock").len()
    }

    /// Starts a turn whose input is the given texts, in order, with the chat's overrides
    /// of the thread's settings; returns the turn id.
    pub async fn start_turn(
        &self,
        thread_id: &str,
        input: &[UserInput<'_>],
        overrides: &TurnOverrides,
    ) -> Result<String, CodexError> {
        let params = TurnStartParams {
            thread_id,
            input,
            overrides,
        };
        let reply: TurnReply = self.request("turn/start", &params).await?;
        Ok(reply.turn.id)
    }

    /// Adds input to the running turn `expected_turn_id`; Codex refuses when that turn is
    /// no longer the thread's active one, or cannot take input (a review, a compaction).
    pub async fn steer(
        &self,
        thread_id: &str,
        expected_turn_id: &str,
        input: &[UserInput<'_>],
    ) -> Result<(), CodexError> {
        let params = json!({
            "threadId": thread_id,
            "expectedTurnId": expected_turn_id,
            "input": input,
        });
        self.request::<Value>("turn/steer", params).await.map(drop)
    }

    /// Starts Codex's review of the uncommitted changes in the thread's folder, as a turn
    /// on the thread (its findings end it); returns the turn id.
    pub async fn start_review(&self, thread_id: &str) -> Result<String, CodexError> {
        let params = json!({"threadId": thread_id, "target": {"type": "uncommittedChanges"}});
        let reply: TurnReply = self.request("review/start", params).await?;
        Ok(reply.turn.id)
    }

    pub async fn interrupt(&self, thread_id: &str, turn_id: &str) -> Result<(), CodexError> {
        self.request::<Value>(
            "turn/interrupt",
            json!({"threadId": thread_id, "turnId": turn_id}),
        )
        .await
        .map(drop)
    }

    /// The account Codex would use for the model (`account/read`, nothing refreshed). A
    /// quick question: it never holds up a start for long.
    pub async fn account(&self) -> Result<AccountState, CodexError> {
        let params = json!({"refreshToken": false});
        self.request_within("account/read", params, ACCOUNT_TIMEOUT)
            .await
    }

    /// Creates `path` (and its parents) on the app-server's machine, as its user.
    pub async fn create_directory(&self, path: &std::path::Path) -> Result<(), CodexError> {
        let params = json!({"path": path, "recursive": true});
        self.request::<Value>("fs/createDirectory", params)
            .await
            .map(drop)
    }

    /// Starts Codex's native compaction; it then runs as a turn on the thread.
    pub async fn compact(&self, thread_id: &str) -> Result<(), CodexError> {
        self.request::<Value>("thread/compact/start", json!({"threadId": thread_id}))
            .await
            .map(drop)
    }

    /// Whether the process still answers a cheap request within `within` (a process can
    /// be alive and wedged).
    pub async fn answers(&self, within: Duration) -> bool {
        let probe = self.request_within::<Value>("thread/loaded/list", json!({}), within);
        !matches!(probe.await, Err(CodexError::Timeout { .. }))
    }

    pub(super) async fn request<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<R, CodexError> {
        let timeout = self.shared.request_timeout;
        self.request_within(method, params, timeout).await
    }

    pub(super) async fn request_within<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
        timeout: Duration,
    ) -> Result<R, CodexError> {
        let params = serde_json::to_value(params).map_err(|e| CodexError::Protocol {
            method: method.to_owned(),
            message: e.to_string(),
        })?;
        let id = self.shared.next_id.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        self.shared.pending.lock().expect("lock").insert(id, tx);
        // Checked after registering, so a concurrent exit cannot strand the request.
        if !self.is_alive() {
            self.shared.pending.lock().expect("lock").remove(&id);
            return Err(CodexError::ProcessExited);
        }
        let line = json!({"id": id, "method": method, "params": params});
        let _ = self.shared.outgoing.send(line.to_string());
        let answer = match tokio::time::timeout(timeout, rx).await {
            Err(_) => {
                self.shared.pending.lock().expect("lock").remove(&id);
                return Err(CodexError::Timeout {
                    method: method.to_owned(),
                    timeout,
                });
            }
            Ok(Err(_)) => return Err(CodexError::ProcessExited),
            Ok(Ok(answer)) => answer,
        };
        match answer {
            Ok(value) => serde_json::from_value(value).map_err(|e| CodexError::Protocol {
                method: method.to_owned(),
                message: e.to_string(),
            }),
            Err((code, message)) => Err(CodexError::from_rpc(
                method,
                thread_id_of(&params),
                code,
                message,
            )),
        }
    }

    fn notify(&self, method: &str) {
        let _ = self
            .shared
            .outgoing
            .send(json!({"method": method}).to_string());
    }
}

/// How long `account/read` may take.
const ACCOUNT_TIMEOUT: Duration = Duration::from_secs(5);

/// Why the binary did not run, with what to do about the usual reasons.
fn not_started(error: &std::io::Error) -> String {
    match error.kind() {
        std::io::ErrorKind::NotFound => format!(
            "{error}; install Codex (npm install -g @openai/codex@{}, the version this \
             gateway is tested with) or set codex.binary to its path",
            super::TESTED_VERSION
        ),
        std::io::ErrorKind::PermissionDenied => {
            format!("{error}; the file is not executable by this user (chmod +x, or run_as)")
        }
        _ => error.to_string(),
    }
}

/// The version in `initialize`'s user agent; measured with 0.171.0:
/// `codex-gateway/0.171.0 (Debian 12.0.0; x86_64) xterm (codex-gateway; 0.1.0)`.
fn version_in_user_agent(agent: &str) -> Option<&str> {
    let (_, rest) = agent.split_once('/')?;
    rest.split_whitespace().next()
}

/// How long a failed start waits for the rest of Codex's stderr.
const STDERR_WAIT: Duration = Duration::from_millis(500);
/// Lines of Codex's stderr kept for a failed start's error.
const STDERR_KEPT: usize = 5;

/// The last lines Codex wrote to its stderr, the gateway's secrets replaced.
#[derive(Clone, Default)]
struct StderrTail(Arc<std::sync::Mutex<std::collections::VecDeque<String>>>);

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.0.lock().expect("lock");
        if lines.len() == STDERR_KEPT {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    fn lines(&self) -> Vec<String> {
        self.0.lock().expect("lock").iter().cloned().collect()
    }
}

/// Codex's stderr, its log: each line to the gateway's log at debug (its level is its own,
/// `codex.log_level`), the last ones before any backtrace kept.
async fn read_stderr(
    stderr: tokio::process::ChildStderr,
    said: StderrTail,
    secrets: Vec<String>,
    announce: oneshot::Sender<String>,
) {
    let mut lines = BufReader::new(stderr).lines();
    let mut announce = Some(announce);
    // With `RUST_BACKTRACE` set, an error is followed by frames that say nothing.
    let mut in_backtrace = false;
    while let Ok(Some(line)) = lines.next_line().await {
        let line = secrets
            .iter()
            .filter(|secret| !secret.is_empty())
            .fold(line, |line, secret| line.replace(secret.as_str(), "***"));
        debug!(target: "codex_app_server", "{line}");
        if let Some(url) = listen::announced_url(&line) {
            if let Some(announce) = announce.take() {
                let _ = announce.send(url.to_owned());
            }
            continue;
        }
        in_backtrace |= line.trim() == "Stack backtrace:";
        if !in_backtrace && !line.trim().is_empty() {
            said.push(line);
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_version_is_read_from_the_user_agent() {
        let agent = "codex-gateway/0.171.0 (Debian 12.0.0; x86_64) xterm (codex-gateway; 0.1.0)";
        assert_eq!(super::version_in_user_agent(agent), Some("0.171.0"));
        assert_eq!(super::version_in_user_agent("codex"), None);
    }
}
