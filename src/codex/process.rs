//! One `codex app-server` child: JSON-RPC over stdio, many threads per process.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, error, info, warn};

use super::error::CodexError;
use super::protocol::{
    AccountState, ApprovalDecision, ApprovalRequest, Notification, ThreadReply, ThreadResumeParams,
    ThreadSettings, TurnReply, TurnStartParams, UserInput, thread_id_of,
};
use super::spawn::{SpawnSpec, command};

/// What a thread's subscriber receives.
#[derive(Debug)]
pub enum ThreadEvent {
    Notification(Notification),
    Approval(ApprovalRequest, ApprovalResponder),
    /// The process hosting the thread is gone; the thread must be resumed elsewhere.
    ProcessExited,
}

/// Answers one approval request. Dropping it unanswered declines, so Codex never waits forever.
#[derive(Debug)]
pub struct ApprovalResponder {
    request_id: Value,
    outgoing: mpsc::UnboundedSender<String>,
    answered: bool,
}

impl ApprovalResponder {
    pub fn answer(mut self, decision: ApprovalDecision) {
        self.send(decision);
    }

    fn send(&mut self, decision: ApprovalDecision) {
        self.answered = true;
        let line = json!({"id": self.request_id, "result": {"decision": decision}});
        let _ = self.outgoing.send(line.to_string());
    }
}

impl Drop for ApprovalResponder {
    fn drop(&mut self) {
        if !self.answered {
            self.send(ApprovalDecision::Decline);
        }
    }
}

type RpcResult = Result<Value, (i64, String)>;

struct Shared {
    pid: Option<u32>,
    outgoing: mpsc::UnboundedSender<String>,
    pending: Mutex<HashMap<u64, oneshot::Sender<RpcResult>>>,
    threads: Mutex<HashMap<String, mpsc::UnboundedSender<ThreadEvent>>>,
    next_id: AtomicU64,
    alive: watch::Sender<bool>,
    kill: Mutex<Option<oneshot::Sender<()>>>,
    request_timeout: Duration,
}

/// A handle to a running app-server; clones share the process.
#[derive(Clone)]
pub struct AppServer {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for AppServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "AppServer(pid {:?})", self.shared.pid)
    }
}

impl AppServer {
    /// Starts the process and completes the `initialize` handshake.
    pub async fn spawn(spec: &SpawnSpec) -> Result<Self, CodexError> {
        let spawn_error = |message: String| CodexError::Spawn {
            binary: spec.binary.display().to_string(),
            message,
        };
        let mut child = command(spec)
            .spawn()
            .map_err(|e| spawn_error(e.to_string()))?;
        let (stdin, stdout, stderr) = (
            child.stdin.take().expect("stdin is piped"),
            child.stdout.take().expect("stdout is piped"),
            child.stderr.take().expect("stderr is piped"),
        );
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel();
        let (kill_tx, kill_rx) = oneshot::channel();
        let shared = Arc::new(Shared {
            pid: child.id(),
            outgoing,
            pending: Mutex::new(HashMap::new()),
            threads: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            alive: watch::Sender::new(true),
            kill: Mutex::new(Some(kill_tx)),
            request_timeout: spec.request_timeout,
        });
        tokio::spawn(write_lines(stdin, outgoing_rx));
        tokio::spawn(read_lines(stdout, shared.clone()));
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                debug!(target: "codex_app_server", "{line}");
            }
        });
        tokio::spawn(wait_for_exit(child, kill_rx, shared.clone()));

        let server = AppServer { shared };
        let init = server
            .request::<Value>(
                "initialize",
                json!({
                    "clientInfo": {"name": "codex-gateway", "title": "codex-gateway", "version": env!("CARGO_PKG_VERSION")},
                    "capabilities": {"experimentalApi": true},
                }),
            )
            .await;
        if let Err(error) = init {
            server.shutdown().await;
            return Err(spawn_error(format!("initialize failed: {error}")));
        }
        server.notify("initialized");
        info!(pid = ?server.pid(), "codex app-server started");
        Ok(server)
    }

    pub fn pid(&self) -> Option<u32> {
        self.shared.pid
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

    pub async fn start_thread(&self, settings: &ThreadSettings) -> Result<String, CodexError> {
        let reply: ThreadReply = self.request("thread/start", settings).await?;
        Ok(reply.thread.id)
    }

    pub async fn resume_thread(
        &self,
        thread_id: &str,
        settings: &ThreadSettings,
    ) -> Result<String, CodexError> {
        let params = ThreadResumeParams {
            thread_id,
            exclude_turns: true,
            settings,
        };
        let reply: ThreadReply = self.request("thread/resume", &params).await?;
        Ok(reply.thread.id)
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

    /// Starts a turn whose input is the given texts, in order; returns the turn id.
    pub async fn start_turn(&self, thread_id: &str, texts: &[&str]) -> Result<String, CodexError> {
        let params = TurnStartParams {
            thread_id,
            input: texts.iter().map(|text| UserInput::Text { text }).collect(),
        };
        let reply: TurnReply = self.request("turn/start", &params).await?;
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

    /// Starts Codex's native compaction; it then runs as a turn on the thread.
    /// The account Codex would use for the model (`account/read`, nothing refreshed). A
    /// quick question: it never holds up a start for long.
    pub async fn account(&self) -> Result<AccountState, CodexError> {
        let params = json!({"refreshToken": false});
        self.request_within("account/read", params, ACCOUNT_TIMEOUT)
            .await
    }

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

    async fn request<R: DeserializeOwned>(
        &self,
        method: &str,
        params: impl Serialize,
    ) -> Result<R, CodexError> {
        let timeout = self.shared.request_timeout;
        self.request_within(method, params, timeout).await
    }

    async fn request_within<R: DeserializeOwned>(
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

async fn write_lines(mut stdin: ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// How long `account/read` may take.
const ACCOUNT_TIMEOUT: Duration = Duration::from_secs(5);

/// Longest line read from the app-server; a longer one is a broken process, not a message.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

async fn read_lines(stdout: ChildStdout, shared: Arc<Shared>) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    loop {
        let buffered = match reader.fill_buf().await {
            Ok([]) => break,
            Ok(buffered) => buffered,
            Err(error) => {
                warn!(%error, "cannot read from codex app-server");
                break;
            }
        };
        let (taken, complete) = match buffered.iter().position(|&b| b == b'\n') {
            Some(end) => (end + 1, true),
            None => (buffered.len(), false),
        };
        line.extend_from_slice(&buffered[..taken]);
        reader.consume(taken);
        if line.len() > MAX_LINE_BYTES {
            error!(
                limit = MAX_LINE_BYTES,
                "codex app-server sent an over-long line; restarting it"
            );
            if let Some(kill) = shared.kill.lock().expect("lock").take() {
                let _ = kill.send(());
            }
            break;
        }
        if complete {
            shared.dispatch(String::from_utf8_lossy(&line).trim_end());
            line.clear();
        }
    }
    shared.mark_exited();
}

async fn wait_for_exit(mut child: Child, kill: oneshot::Receiver<()>, shared: Arc<Shared>) {
    let status = tokio::select! {
        status = child.wait() => status,
        _ = kill => {
            let _ = child.start_kill();
            child.wait().await
        }
    };
    match status {
        Ok(status) => info!(pid = ?shared.pid, %status, "codex app-server exited"),
        Err(error) => warn!(pid = ?shared.pid, %error, "waiting for codex app-server failed"),
    }
    shared.mark_exited();
}

impl Shared {
    fn dispatch(&self, line: &str) {
        let message: Value = match serde_json::from_str(line) {
            Ok(message) => message,
            Err(error) => {
                warn!(%error, "codex app-server sent a line that is not JSON");
                return;
            }
        };
        let method = message.get("method").and_then(Value::as_str);
        let params = message.get("params").unwrap_or(&Value::Null);
        match (message.get("id"), method) {
            (Some(id), None) => self.complete(id, &message),
            (None, Some(method)) => {
                if let (Some(thread_id), Some(notification)) =
                    (thread_id_of(params), Notification::parse(method, params))
                {
                    self.route(thread_id, ThreadEvent::Notification(notification));
                }
            }
            (Some(id), Some(method)) => self.server_request(id.clone(), method, params),
            (None, None) => warn!("codex app-server sent a message with neither id nor method"),
        }
    }

    fn complete(&self, id: &Value, message: &Value) {
        let Some(waiter) = id
            .as_u64()
            .and_then(|id| self.pending.lock().expect("lock").remove(&id))
        else {
            return;
        };
        let answer = match message.get("error") {
            Some(error) => Err((
                error.get("code").and_then(Value::as_i64).unwrap_or(0),
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned(),
            )),
            None => Ok(message.get("result").cloned().unwrap_or(Value::Null)),
        };
        let _ = waiter.send(answer);
    }

    fn server_request(&self, id: Value, method: &str, params: &Value) {
        if let (Some(request), Some(thread_id)) =
            (ApprovalRequest::parse(method, params), thread_id_of(params))
        {
            let responder = ApprovalResponder {
                request_id: id,
                outgoing: self.outgoing.clone(),
                answered: false,
            };
            // If nobody listens, the responder is dropped here and declines.
            self.route(thread_id, ThreadEvent::Approval(request, responder));
            return;
        }
        warn!(method, "unsupported request from codex app-server");
        let message = format!("codex-gateway does not support {method}");
        let reply = json!({"id": id, "error": {"code": -32601, "message": message}});
        let _ = self.outgoing.send(reply.to_string());
    }

    fn route(&self, thread_id: &str, event: ThreadEvent) {
        let mut threads = self.threads.lock().expect("lock");
        if let Some(subscriber) = threads.get(thread_id)
            && subscriber.send(event).is_err()
        {
            threads.remove(thread_id);
        }
    }

    /// Fails every waiter and tells every thread, once.
    fn mark_exited(&self) {
        if !self.alive.send_replace(false) {
            return;
        }
        self.pending.lock().expect("lock").clear();
        for (_, subscriber) in self.threads.lock().expect("lock").drain() {
            let _ = subscriber.send(ThreadEvent::ProcessExited);
        }
    }
}
