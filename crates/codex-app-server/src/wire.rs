//! One app-server's JSON-RPC, whatever carries it (a child's pipes here, a worker's
//! WebSocket in `remote.rs`): requests written out, and what comes back matched to its
//! request, routed to its thread by `threadId`, or noted as unread.

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, ChildStdout};
use tokio::sync::{broadcast, mpsc, oneshot, watch};
use tracing::{error, info, warn};

use super::approvals::{ApprovalKind, ApprovalRequest, ChangedFile};
use super::catalog::RateLimits;
use super::protocol::{Notification, changed_files, thread_id_of};
use super::questions::{self, UserQuestion};
use super::responder::{ApprovalResponder, QuestionResponder};
use super::unread::{Unread, UnreadLog};

/// What a thread's subscriber receives.
#[derive(Debug)]
pub enum ThreadEvent {
    Notification(Notification),
    Approval(ApprovalRequest, ApprovalResponder),
    Question(Vec<UserQuestion>, QuestionResponder),
    /// The process hosting the thread is gone; the thread must be resumed elsewhere.
    ProcessExited,
}

/// Sub-agents of sub-agents followed up to their chat's thread.
const MAX_AGENT_DEPTH: usize = 8;

pub(super) type RpcResult = Result<Value, (i64, String)>;

/// What the handle and the pipe tasks of one process share.
pub(super) struct Shared {
    pub(super) pid: Option<u32>,
    pub(super) outgoing: mpsc::UnboundedSender<String>,
    pub(super) pending: Mutex<HashMap<u64, oneshot::Sender<RpcResult>>>,
    pub(super) threads: Mutex<HashMap<String, mpsc::UnboundedSender<ThreadEvent>>>,
    pub(super) next_id: AtomicU64,
    pub(super) alive: watch::Sender<bool>,
    pub(super) kill: Mutex<Option<oneshot::Sender<()>>>,
    pub(super) request_timeout: Duration,
    /// Files of the file changes in progress, by item id: their approval requests name
    /// the item only.
    pub(super) file_changes: Mutex<HashMap<String, Vec<ChangedFile>>>,
    /// Notifications about the account (`account/...`), which belong to no thread.
    pub(super) account_events: broadcast::Sender<(String, Value)>,
    /// The rate limits as Codex last reported them during a turn.
    pub(super) known_rate_limits: Mutex<Option<RateLimits>>,
    /// What Codex sent that could not be read, for the log and `/metrics`.
    pub(super) unread: UnreadLog,
    /// The thread that spawned each sub-agent thread (`multi_agent_v1`): a sub-agent's
    /// requests go to whoever follows its parent.
    pub(super) parents: Mutex<HashMap<String, String>>,
    /// Codex's version, from its answer to `initialize`.
    pub(super) version: std::sync::OnceLock<String>,
    /// What Codex said is wrong with its setup (`configWarning`: bubblewrap missing, ...).
    pub(super) config_warnings: Mutex<Vec<String>>,
    /// Where a terminal attaches to this app-server, when it listens on a WebSocket.
    pub(super) attach_url: std::sync::OnceLock<String>,
}

impl Shared {
    pub(super) fn new(
        pid: Option<u32>,
        outgoing: mpsc::UnboundedSender<String>,
        kill: oneshot::Sender<()>,
        request_timeout: Duration,
        unread: UnreadLog,
    ) -> Self {
        Shared {
            pid,
            outgoing,
            pending: Mutex::new(HashMap::new()),
            threads: Mutex::new(HashMap::new()),
            next_id: AtomicU64::new(1),
            alive: watch::Sender::new(true),
            kill: Mutex::new(Some(kill)),
            request_timeout,
            file_changes: Mutex::new(HashMap::new()),
            account_events: broadcast::Sender::new(8),
            known_rate_limits: Mutex::new(None),
            unread,
            parents: Mutex::new(HashMap::new()),
            version: std::sync::OnceLock::new(),
            config_warnings: Mutex::new(Vec::new()),
            attach_url: std::sync::OnceLock::new(),
        }
    }
}

pub(super) async fn write_lines(mut stdin: ChildStdin, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            break;
        }
    }
}

/// Longest line read from the app-server; a longer one is a broken process, not a message.
const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

pub(super) async fn read_lines(stdout: ChildStdout, shared: Arc<Shared>) {
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

pub(super) async fn wait_for_exit(
    mut child: Child,
    kill: oneshot::Receiver<()>,
    shared: Arc<Shared>,
) {
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
    super::orphans::app_server_reaped(shared.pid);
    shared.mark_exited();
}

impl Shared {
    pub(super) fn dispatch(&self, line: &str) {
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
                self.track_file_change(method, params);
                self.track_sub_agents(params);
                if method == "account/rateLimits/updated"
                    && let Some(limits) = params.get("rateLimits")
                {
                    let limits = serde_json::from_value(limits.clone()).ok();
                    *self.known_rate_limits.lock().expect("lock") = limits;
                }
                if method == "configWarning" {
                    self.note_config_warning(params);
                }
                if method.starts_with("account/") {
                    // Nobody listening is fine: most account news is only for a waiting /login.
                    let _ = self
                        .account_events
                        .send((method.to_owned(), params.clone()));
                }
                match (
                    thread_id_of(params),
                    Notification::of_thread(method, params),
                ) {
                    (Some(thread_id), Some(notification)) => {
                        self.route(thread_id, ThreadEvent::Notification(notification));
                    }
                    _ if Notification::reads(method) => {
                        self.unread.note(method, Unread::Notification);
                    }
                    _ => {}
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

    /// Measured with 0.171.0: right after `initialize`, `{"summary": "Codex could not find
    /// bubblewrap on PATH. ...", "details": null}`.
    fn note_config_warning(&self, params: &Value) {
        let Some(summary) = params.get("summary").and_then(Value::as_str) else {
            return;
        };
        warn!(target: "codex_app_server", pid = ?self.pid, summary, "Codex warns about its setup");
        let mut warnings = self.config_warnings.lock().expect("lock");
        if !warnings.iter().any(|known| known == summary) {
            warnings.push(summary.to_owned());
        }
    }

    /// Remembers the files of a file change from its start until it completes.
    fn track_file_change(&self, method: &str, params: &Value) {
        let item = params.get("item").unwrap_or(&Value::Null);
        let Some(id) = item.get("id").and_then(Value::as_str) else {
            return;
        };
        let mut changes = self.file_changes.lock().expect("lock");
        match method {
            "item/started" => {
                if let Some(files) = changed_files(item) {
                    changes.insert(id.to_owned(), files);
                }
            }
            "item/completed" => {
                changes.remove(id);
            }
            _ => {}
        }
    }

    /// Remembers which thread spawned which: measured with 0.171.0, a `spawnAgent`
    /// `collabAgentToolCall` item names the sub-agents' threads (`receiverThreadIds`),
    /// whose own requests then carry only their own thread id.
    fn track_sub_agents(&self, params: &Value) {
        let item = params.get("item").unwrap_or(&Value::Null);
        if item.get("type").and_then(Value::as_str) != Some("collabAgentToolCall") {
            return;
        }
        let Some(parent) = item.get("senderThreadId").and_then(Value::as_str) else {
            return;
        };
        let children = item.get("receiverThreadIds").and_then(Value::as_array);
        let mut parents = self.parents.lock().expect("lock");
        for child in children.into_iter().flatten().filter_map(Value::as_str) {
            parents.insert(child.to_owned(), parent.to_owned());
        }
    }

    /// The followed thread a request of `thread_id` goes to: its own, else that of the
    /// thread that spawned it (sub-agents spawn sub-agents, a few levels deep).
    fn followed_thread(&self, thread_id: &str) -> String {
        let threads = self.threads.lock().expect("lock");
        let parents = self.parents.lock().expect("lock");
        let mut thread = thread_id;
        for _ in 0..MAX_AGENT_DEPTH {
            match (threads.contains_key(thread), parents.get(thread)) {
                (false, Some(parent)) => thread = parent,
                _ => break,
            }
        }
        thread.to_owned()
    }

    fn server_request(&self, id: Value, method: &str, params: &Value) {
        let files = params
            .get("itemId")
            .and_then(Value::as_str)
            .and_then(|item| self.file_changes.lock().expect("lock").get(item).cloned())
            .unwrap_or_default();
        if let (Some(request), Some(thread_id)) = (
            ApprovalRequest::parse(method, params, files),
            thread_id_of(params),
        ) {
            let asked = (request.kind == ApprovalKind::Permissions)
                .then(|| params.get("permissions").cloned().unwrap_or_default());
            let responder = ApprovalResponder::new(id, self.outgoing.clone(), asked);
            // If nobody listens, the responder is dropped here and declines.
            let thread = self.followed_thread(thread_id);
            self.route(&thread, ThreadEvent::Approval(request, responder));
            return;
        }
        let asked = questions::parse(method, params)
            .map(|asked| (asked, None))
            .or_else(|| {
                let (asked, elicitation) = questions::parse_elicitation(method, params)?;
                Some((asked, Some(elicitation)))
            });
        if let (Some((asked, elicitation)), Some(thread_id)) = (asked, thread_id_of(params)) {
            let responder = QuestionResponder::new(id, self.outgoing.clone(), elicitation);
            let thread = self.followed_thread(thread_id);
            self.route(&thread, ThreadEvent::Question(asked, responder));
            return;
        }
        self.unread.note(method, Unread::Request);
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
    pub(super) fn mark_exited(&self) {
        if !self.alive.send_replace(false) {
            return;
        }
        self.pending.lock().expect("lock").clear();
        for (_, subscriber) in self.threads.lock().expect("lock").drain() {
            let _ = subscriber.send(ThreadEvent::ProcessExited);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ApprovalDecision;

    fn shared() -> (Shared, mpsc::UnboundedReceiver<String>) {
        let (outgoing, written) = mpsc::unbounded_channel();
        let (kill, _) = oneshot::channel();
        let unread = UnreadLog::default();
        let shared = Shared::new(None, outgoing, kill, Duration::from_secs(1), unread);
        (shared, written)
    }

    #[test]
    fn a_file_change_approval_names_the_files_of_its_item() {
        let (shared, mut written) = shared();
        let (events, mut received) = mpsc::unbounded_channel();
        shared.threads.lock().unwrap().insert("t".into(), events);
        shared.dispatch(
            r#"{"method":"item/started","params":{"threadId":"t","turnId":"u","item":{"type":"fileChange","id":"call_1","status":"inProgress","changes":[{"path":"/w/a.rs","kind":{"type":"add"},"diff":"+x"},{"path":"/w/b.rs","kind":{"type":"update","move_path":null},"diff":""}]}}}"#,
        );
        shared.dispatch(
            r#"{"id":7,"method":"item/fileChange/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"call_1","reason":null,"grantRoot":"/etc"}}"#,
        );
        // The item's start reaches the thread first, then the request.
        assert!(matches!(
            received.try_recv(),
            Ok(ThreadEvent::Notification(Notification::ItemStarted { .. }))
        ));
        let Ok(ThreadEvent::Approval(request, responder)) = received.try_recv() else {
            panic!("no approval routed to the thread");
        };
        let files: Vec<_> = request
            .files
            .iter()
            .map(|f| (f.kind.as_str(), f.path.as_str()))
            .collect();
        assert_eq!(files, [("add", "/w/a.rs"), ("update", "/w/b.rs")]);
        assert_eq!(request.grant_root.as_deref(), Some("/etc"));
        assert_eq!(request.decisions, ApprovalDecision::ALL);
        drop(responder);
        let refusal: Value = serde_json::from_str(&written.try_recv().unwrap()).unwrap();
        assert_eq!(refusal["result"]["decision"], "decline");

        // Once the item completed, its files are forgotten.
        shared.dispatch(
            r#"{"method":"item/completed","params":{"threadId":"t","turnId":"u","item":{"type":"fileChange","id":"call_1","status":"completed","changes":[]}}}"#,
        );
        assert!(shared.file_changes.lock().unwrap().is_empty());
    }

    #[test]
    fn rate_limits_reported_during_a_turn_are_kept() {
        let (shared, _written) = shared();
        shared.dispatch(
            r#"{"method":"account/rateLimits/updated","params":{"rateLimits":{"primary":{"usedPercent":42,"resetsAt":1800000000,"windowDurationMins":300},"secondary":null,"planType":"plus"}}}"#,
        );
        let known = shared.known_rate_limits.lock().unwrap().clone().unwrap();
        assert_eq!(known.primary.unwrap().used_percent, 42);
        assert_eq!(known.secondary, None);
    }

    #[test]
    fn only_the_offered_decisions_are_kept() {
        let (shared, mut written) = shared();
        let (events, mut received) = mpsc::unbounded_channel();
        shared.threads.lock().unwrap().insert("t".into(), events);
        shared.dispatch(
            r#"{"id":8,"method":"item/commandExecution/requestApproval","params":{"threadId":"t","turnId":"u","itemId":"c","command":"ls","cwd":"/w","availableDecisions":["accept",{"acceptWithExecpolicyAmendment":{"execpolicy_amendment":["ls"]}},"cancel"]}}"#,
        );
        let Ok(ThreadEvent::Approval(request, responder)) = received.try_recv() else {
            panic!("no approval routed to the thread");
        };
        assert_eq!(
            request.decisions,
            [ApprovalDecision::Accept, ApprovalDecision::Cancel]
        );
        // Nobody answering is the gateway's decline, which Codex takes even when it does
        // not offer it to people: the model hears of it and the turn goes on.
        drop(responder);
        let refusal: Value = serde_json::from_str(&written.try_recv().unwrap()).unwrap();
        assert_eq!(refusal["result"]["decision"], "decline");
    }

    #[test]
    fn a_permissions_request_says_what_it_asks_and_is_granted_whole() {
        let (shared, mut written) = shared();
        let (events, mut received) = mpsc::unbounded_channel();
        shared.threads.lock().unwrap().insert("t".into(), events);
        // As app-server 0.171.0 sent it for the model's request_permissions call.
        shared.dispatch(
            r#"{"method":"item/permissions/requestApproval","id":0,"params":{"threadId":"t","turnId":"u","itemId":"call1","environmentId":"local","startedAtMs":1,"cwd":"/w","reason":"deps","permissions":{"network":{"enabled":true},"fileSystem":{"read":null,"write":["/srv/out"],"entries":[{"path":{"type":"path","path":"/srv/out"},"access":"write"},{"path":{"type":"special","value":{"kind":"tmpdir"}},"access":"read"}]}}}}"#,
        );
        let Ok(ThreadEvent::Approval(request, responder)) = received.try_recv() else {
            panic!("no permissions request routed to the thread");
        };
        assert_eq!(request.kind, ApprovalKind::Permissions);
        assert_eq!(
            request.permissions,
            ["network access", "write /srv/out", "read <tmpdir>"]
        );
        assert_eq!(request.reason.as_deref(), Some("deps"));
        responder.answer(ApprovalDecision::Accept);
        let grant: Value = serde_json::from_str(&written.try_recv().unwrap()).unwrap();
        assert_eq!(grant["id"], 0);
        assert_eq!(grant["result"]["scope"], "turn");
        assert_eq!(
            grant["result"]["permissions"]["fileSystem"]["write"][0],
            "/srv/out"
        );
    }

    #[test]
    fn a_sub_agents_request_reaches_the_thread_that_spawned_it() {
        let (shared, _written) = shared();
        let (events, mut received) = mpsc::unbounded_channel();
        shared
            .threads
            .lock()
            .unwrap()
            .insert("parent".into(), events);
        // As 0.171.0 reports a spawn, then the sub-agent's approval request.
        shared.dispatch(
            r#"{"method":"item/completed","params":{"threadId":"parent","turnId":"u","item":{"type":"collabAgentToolCall","id":"call1","tool":"spawnAgent","status":"completed","senderThreadId":"parent","receiverThreadIds":["child"]}}}"#,
        );
        shared.dispatch(
            r#"{"method":"item/completed","params":{"threadId":"child","turnId":"c","item":{"type":"collabAgentToolCall","id":"call2","tool":"spawnAgent","status":"completed","senderThreadId":"child","receiverThreadIds":["grandchild"]}}}"#,
        );
        assert!(matches!(
            received.try_recv(),
            Ok(ThreadEvent::Notification(
                Notification::ItemCompleted { .. }
            ))
        ));
        shared.dispatch(
            r#"{"id":3,"method":"item/commandExecution/requestApproval","params":{"threadId":"grandchild","turnId":"g","itemId":"call3","command":"touch x","cwd":"/w"}}"#,
        );
        let Ok(ThreadEvent::Approval(request, _)) = received.try_recv() else {
            panic!("the sub-agent's request did not reach its chat's thread");
        };
        assert_eq!(request.command.as_deref(), Some("touch x"));
        // The sub-agent's own news is not the parent turn's.
        shared.dispatch(
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"child","turnId":"c","delta":"hi"}}"#,
        );
        assert!(received.try_recv().is_err());
    }

    #[test]
    fn what_codex_sends_that_cannot_be_read_is_noted_by_method() {
        let (shared, mut written) = shared();
        let (events, mut received) = mpsc::unbounded_channel();
        shared.threads.lock().unwrap().insert("t".into(), events);
        // A notification the gateway reads, in a shape it does not know.
        shared.dispatch(r#"{"method":"turn/completed","params":{"threadId":"t","turn":7}}"#);
        // One it takes only as a sign of life, and one it reads.
        shared.dispatch(r#"{"method":"item/reasoning/delta","params":{"threadId":"t"}}"#);
        shared.dispatch(
            r#"{"method":"item/agentMessage/delta","params":{"threadId":"t","turnId":"u","delta":"hi"}}"#,
        );
        // A request it does not support: refused, and noted.
        shared.dispatch(r#"{"id":9,"method":"item/tool/call","params":{"threadId":"t"}}"#);
        assert!(matches!(
            received.try_recv(),
            Ok(ThreadEvent::Notification(Notification::Activity))
        ));
        assert!(matches!(
            received.try_recv(),
            Ok(ThreadEvent::Notification(
                Notification::AgentMessageDelta { .. }
            ))
        ));
        assert!(received.try_recv().is_err());
        let refusal: Value = serde_json::from_str(&written.try_recv().unwrap()).unwrap();
        assert_eq!(refusal["error"]["code"], -32601);
        let counts = shared.unread.counts();
        assert_eq!(
            counts,
            [
                ("item/tool/call".to_owned(), 1),
                ("turn/completed".to_owned(), 1)
            ]
        );
    }
}
