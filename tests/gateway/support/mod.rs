//! Test harness: a temp directory with CODEX_HOME, database and workspace, the fake
//! model server, and the real `codex app-server` (pinned, installed by scripts/test).

#![allow(dead_code, unused_imports)] // each test binary uses its own part of the harness

pub mod binary;
pub mod discord;
pub mod model;
pub mod multipart;
pub mod platform;
pub mod rate_limits;
pub mod soak;
pub mod telegram;
pub mod tls;
pub mod workers;
pub mod ws_client;

use std::path::PathBuf;
use std::time::Duration;

use chat::{ChatKey, Inbound, Outbound, OutboundKind, Platform};
use codex_gateway::App;
use codex_gateway::config::{ApprovalPolicy, Config, SandboxMode, WorkspaceMode};
use tokio::sync::mpsc;

pub use model::{Brain, FakeModel, ModelRequest, Reply, default_brain};

/// The commands both platforms' menus list, in order.
#[rustfmt::skip]
pub const COMMAND_MENU: &[&str] = &[
    "new", "stop", "status", "compact", "model", "effort", "cwd", "usage", "threads",
    "resume", "review", "get", "steer", "queue", "verbose", "quiet", "notify", "diff", "last",
    "continue",
    "mode", "fork", "undo", "name", "attach", "task", "worktree", "worktrees", "merge", "discard",
    "answer", "every", "at", "jobs", "unschedule", "login",
    "logout", "help",
];

/// How long a test waits for one answer before failing.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(90);

/// Pasted code, as people send it: newlines, indentation, tabs, repeated spaces, Unicode.
pub const PASTED_CODE: &str = "fix this:\ndef f(x):\n    if x:\n\treturn  'ü ✓'\n\n    return None";

/// The pinned codex binary; scripts/test installs it and exports its path.
pub fn codex_binary() -> PathBuf {
    let path = std::env::var_os("CODEX_GATEWAY_TEST_CODEX")
        .map(PathBuf::from)
        .expect(
            "CODEX_GATEWAY_TEST_CODEX is not set: run the suite with scripts/test, which installs \
         the pinned @openai/codex and sets it",
        );
    assert!(
        path.is_file(),
        "codex binary {} does not exist",
        path.display()
    );
    path
}

pub struct TestEnv {
    pub dir: tempfile::TempDir,
    pub model: FakeModel,
}

impl TestEnv {
    pub async fn new() -> Self {
        Self::with_brain(default_brain()).await
    }

    pub async fn with_brain(brain: Brain) -> Self {
        // RUST_LOG=codex_gateway=debug shows the gateway's logs with a failing test.
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_test_writer()
            .try_init();
        let dir = tempfile::tempdir().unwrap();
        let model = FakeModel::start(brain).await;
        let home = dir.path().join("codex-home");
        std::fs::create_dir_all(&home).unwrap();
        std::fs::create_dir_all(dir.path().join("workspace")).unwrap();
        std::fs::write(home.join("config.toml"), codex_config(&model.base_url)).unwrap();
        Self { dir, model }
    }

    pub fn codex_home(&self) -> PathBuf {
        self.dir.path().join("codex-home")
    }

    pub fn workspace(&self) -> PathBuf {
        self.dir.path().join("workspace")
    }

    /// Makes the workspace a git repository with one uncommitted file, for `/review`.
    pub fn uncommitted_change(&self, file: &str, content: &str) {
        let workspace = self.workspace();
        let init = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&workspace)
            .status()
            .unwrap();
        assert!(init.success());
        std::fs::write(workspace.join(file), content).unwrap();
    }

    pub fn database(&self) -> PathBuf {
        self.dir.path().join("data").join("gateway.db")
    }

    /// Waits until `count` (an SQL query counting rows of the gateway's database) says
    /// `done`: an effect the gateway writes down, seen where it keeps it.
    pub async fn wait_in_database(&self, count: &'static str, done: impl Fn(i64) -> bool) {
        let url = format!("sqlite://{}", self.database().display());
        let database = sqlx::SqlitePool::connect(&url).await.unwrap();
        let deadline = std::time::Instant::now() + ANSWER_TIMEOUT;
        loop {
            let now = sqlx::query_scalar::<_, i64>(count)
                .fetch_one(&database)
                .await;
            if now.as_ref().is_ok_and(|now| done(*now)) {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{count}: {now:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        database.close().await;
    }

    /// Waits until `turns` turns have ended, in any chat (each is counted as its end is
    /// written down).
    pub async fn wait_turns_ended(&self, turns: i64) {
        let count = "SELECT COALESCE(SUM(turns), 0) FROM chats";
        self.wait_in_database(count, |ended| ended >= turns).await;
    }

    /// A gateway config for this environment (shared workspace, no approvals).
    pub fn config(&self) -> Config {
        let mut config = Config::default();
        config.storage.database = self.database();
        config.codex.binary = codex_binary();
        config.codex.home = Some(self.codex_home());
        config
            .codex
            .env
            .insert("MOCK_API_KEY".into(), "test-key".into());
        config.codex.workspace = self.workspace();
        config.codex.workspace_mode = WorkspaceMode::Shared;
        config.codex.approval_policy = ApprovalPolicy::Never;
        config.codex.sandbox = SandboxMode::DangerFullAccess;
        // Tests run side by side: each endpoint on its own free port.
        config.server.listen = "127.0.0.1:0".into();
        config
    }

    /// [`TestEnv::config`] with Telegram on `telegram`, `user` its one allowed user.
    pub fn telegram_config(&self, telegram: &telegram::FakeTelegram, user: i64) -> Config {
        let mut config = self.config();
        config.telegram.enabled = true;
        config.telegram.token = Some(secret(telegram::TOKEN));
        config.telegram.api_url = telegram.url.clone();
        config.telegram.allowed_users = vec![user];
        config
    }

    /// The same settings as [`TestEnv::config`], as a TOML file for the binary; `extra`
    /// is appended to the `[codex]` table.
    pub fn config_file(&self, extra: &str) -> PathBuf {
        let path = self.dir.path().join("gateway.toml");
        let text = format!(
            "[storage]\ndatabase = {:?}\n[codex]\nbinary = {:?}\nhome = {:?}\nworkspace = {:?}\n\
             workspace_mode = \"shared\"\napproval_policy = \"never\"\nsandbox = \"danger-full-access\"\n\
             env = {{ MOCK_API_KEY = \"test-key\" }}\n{extra}\n",
            self.database(),
            codex_binary(),
            self.codex_home(),
            self.workspace(),
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    pub async fn start(&self) -> App {
        App::start(&self.config()).await.expect("app starts")
    }

    /// A gateway whose chats queue messages sent during a turn instead of steering.
    pub async fn start_queueing(&self) -> App {
        let mut config = self.config();
        config.chat.follow_up = codex_gateway::config::FollowUp::Queue;
        App::start(&config).await.expect("app starts")
    }

    /// Waits until the model has been asked `text`: the turn that carries it runs.
    pub async fn model_asked(&self, text: &str) {
        self.model_asked_for(text, |r| r.last_human_text() == text)
            .await;
    }

    /// Waits until the model has had a request `which` picks (`what` names it).
    pub async fn model_asked_for(&self, what: &str, which: impl Fn(&ModelRequest) -> bool) {
        let deadline = std::time::Instant::now() + ANSWER_TIMEOUT;
        while !self.model.requests().iter().any(&which) {
            assert!(
                std::time::Instant::now() < deadline,
                "the model was never asked {what:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// SIGKILLs this environment's app-servers; returns their pids.
    pub fn kill_codex(&self) -> Vec<u32> {
        let pids = self.codex_processes();
        for pid in &pids {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
        pids
    }

    /// Running processes whose CODEX_HOME is this environment's: the app-servers started
    /// for it (by the test or by a gateway binary it ran).
    pub fn codex_processes(&self) -> Vec<u32> {
        let marker = format!("CODEX_HOME={}", self.codex_home().display());
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                std::fs::read(format!("/proc/{pid}/environ")).is_ok_and(|environ| {
                    environ
                        .split(|b| *b == 0)
                        .any(|var| var == marker.as_bytes())
                })
            })
            .collect()
    }

    /// Shuts the app down and checks that no app-server outlived it.
    pub async fn shut_down(&self, app: App) {
        app.shutdown(None).await;
        assert_eq!(
            self.codex_processes(),
            Vec::<u32>::new(),
            "app-server left running"
        );
    }

    /// Rollout files under CODEX_HOME/sessions.
    pub fn rollouts(&self) -> Vec<PathBuf> {
        fn walk(dir: &std::path::Path, found: &mut Vec<PathBuf>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, found);
                } else if path.extension().is_some_and(|e| e == "jsonl") {
                    found.push(path);
                }
            }
        }
        let mut found = Vec::new();
        walk(&self.codex_home().join("sessions"), &mut found);
        found
    }
}

/// CODEX_HOME/config.toml pointing codex at the fake model, fully offline.
pub fn codex_config(base_url: &str) -> String {
    format!(
        r#"model = "mock-model"
model_provider = "mock"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false
suppress_unstable_features_warning = true
web_search = "disabled"
allow_login_shell = false
[analytics]
enabled = false
[features]
plugins = false
apps = false
remote_plugin = false
shell_snapshot = false
unbounded_connection_retries = false
# Codex's questions and permission requests, which the model may then use.
request_permissions_tool = true
default_mode_request_user_input = true
[model_providers.mock]
name = "mock"
base_url = "{base_url}"
wire_api = "responses"
env_key = "MOCK_API_KEY"
request_max_retries = 0
stream_max_retries = 0
"#
    )
}

/// The Codex thread id stored for a chat, if any.
pub async fn stored_thread(app: &App, chat: &Chat) -> Option<String> {
    app.store()
        .chat(&chat.key)
        .await
        .unwrap()
        .and_then(|row| row.thread_id)
}

/// A person in one chat: sends messages through the router and reads the answers.
pub struct Chat {
    pub key: ChatKey,
    outbox: mpsc::UnboundedSender<Outbound>,
    answers: mpsc::UnboundedReceiver<Outbound>,
    /// Every answer received so far, in order.
    pub seen: Vec<OutboundKind>,
    /// Whether this chat shows approval prompts.
    pub can_approve: bool,
    /// Whether its person is one of the gateway's admins.
    pub admin: bool,
}

impl Chat {
    pub fn new(name: &str) -> Self {
        let (outbox, answers) = mpsc::unbounded_channel();
        Self {
            key: ChatKey::new(Platform::Console, name),
            outbox,
            answers,
            seen: Vec::new(),
            can_approve: false,
            admin: true,
        }
    }

    pub fn send(&self, app: &App, text: &str) {
        self.send_with_files(app, text, Vec::new());
    }

    /// Answers approval prompt `id` as the tester would with a button in this chat.
    pub async fn decide(
        &self,
        app: &App,
        id: chat::ApprovalId,
        decision: chat::Decision,
    ) -> codex_gateway::router::ApprovalOutcome {
        let answer = codex_gateway::router::Answer {
            decision,
            by: "tester".into(),
            at: 1_000,
        };
        app.router().decide_approval(&self.key, id, answer).await
    }

    /// Sends a document `name` holding `bytes`, with `caption`.
    pub fn send_file(&self, app: &App, name: &str, bytes: Vec<u8>, caption: &str) {
        let file = chat::Attachment {
            name: name.into(),
            kind: chat::AttachmentKind::Document,
            size: Some(bytes.len() as u64),
            source: std::sync::Arc::new(InMemoryFile(bytes)),
        };
        self.send_with_files(app, caption, vec![file]);
    }

    fn send_with_files(&self, app: &App, text: &str, attachments: Vec<chat::Attachment>) {
        app.router().dispatch(Inbound {
            chat: self.key.clone(),
            user: "tester".into(),
            text: text.into(),
            reply_to: self.outbox.clone(),
            answer_slot: None,
            can_approve: self.can_approve,
            private: true,
            admin: self.admin,
            attachments,
            ticket: None,
        });
    }

    /// Waits for the next answer that `pick` accepts, keeping every answer in `seen`.
    pub async fn wait_for<T>(&mut self, mut pick: impl FnMut(&OutboundKind) -> Option<T>) -> T {
        let deadline = tokio::time::Instant::now() + ANSWER_TIMEOUT;
        loop {
            let answer = tokio::time::timeout_at(deadline, self.answers.recv())
                .await
                .unwrap_or_else(|_| panic!("no matching answer in time; seen: {:#?}", self.seen))
                .expect("outbox open");
            assert_eq!(answer.chat, self.key, "answer went to the wrong chat");
            self.seen.push(answer.kind.clone());
            if let Some(found) = pick(&answer.kind) {
                return found;
            }
        }
    }

    /// Waits for the next agent reply.
    pub async fn reply(&mut self) -> String {
        self.wait_for(|kind| match kind {
            OutboundKind::Reply(text) => Some(text.clone()),
            _ => None,
        })
        .await
    }

    /// Waits for the next gateway notice (a listing with buttons too) containing `part`.
    pub async fn notice(&mut self, part: &str) -> String {
        self.wait_for(|kind| match kind {
            OutboundKind::Notice(text) | OutboundKind::Choices { text, .. }
                if text.contains(part) =>
            {
                Some(text.clone())
            }
            _ => None,
        })
        .await
    }

    /// Sends and waits for the agent's reply.
    pub async fn ask(&mut self, app: &App, text: &str) -> String {
        self.send(app, text);
        self.reply().await
    }

    /// Waits for the next approval prompt.
    pub async fn approval(&mut self) -> chat::ApprovalPrompt {
        self.wait_for(|kind| match kind {
            OutboundKind::Approval(prompt) => Some(prompt.clone()),
            _ => None,
        })
        .await
    }

    /// The replies seen so far, in order.
    pub fn replies(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|kind| match kind {
                OutboundKind::Reply(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }

    pub fn notices(&self) -> Vec<String> {
        self.seen
            .iter()
            .filter_map(|kind| match kind {
                OutboundKind::Notice(text) => Some(text.clone()),
                _ => None,
            })
            .collect()
    }
}

/// An attachment's bytes, already at hand.
struct InMemoryFile(Vec<u8>);

impl chat::FetchFile for InMemoryFile {
    fn fetch(&self, _limit: u64) -> chat::Fetched<'_> {
        let bytes = self.0.clone();
        Box::pin(async move { Ok(bytes) })
    }
}

/// A credential for a test config.
pub fn secret(value: &str) -> codex_gateway::config::Secret {
    serde_json::from_value(serde_json::Value::from(value)).unwrap()
}

/// `codex_gateway::run` in the background, as `codex-gateway run` would serve.
pub struct Gateway {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<Result<(), codex_gateway::StartError>>,
}

impl Gateway {
    pub fn start(config: &Config) -> Self {
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let config = config.clone();
        let task = tokio::spawn(async move {
            codex_gateway::run(&config, async {
                let _ = stopped.await;
            })
            .await
        });
        Self { stop, task }
    }

    /// Stops it as SIGTERM would, and waits until it has exited cleanly.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        tokio::time::timeout(ANSWER_TIMEOUT, self.task)
            .await
            .expect("the gateway did not stop in time")
            .unwrap()
            .expect("gateway ran and stopped cleanly");
    }
}

/// Pids of running processes whose command line contains `marker`.
pub fn processes_named(marker: &str) -> Vec<u32> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let state = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            let zombie = state
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
            !zombie
                && std::fs::read(format!("/proc/{pid}/cmdline"))
                    .is_ok_and(|line| String::from_utf8_lossy(&line).contains(marker))
        })
        .collect()
}

/// The user a process runs as.
pub fn owner_of(pid: u32) -> u32 {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(format!("/proc/{pid}")).map_or(u32::MAX, |meta| meta.uid())
}

/// A port free on 127.0.0.1 right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain HTTP GET on 127.0.0.1: status code and body.
pub async fn http_get(port: u16, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split("\r\n\r\n")
        .nth(1)
        .unwrap_or_default()
        .to_owned();
    (status, body)
}

/// `http_get`, once something listens on `port` (a gateway that is still starting).
pub async fn http_get_when_up(port: u16, path: &str) -> (u16, String) {
    let deadline = tokio::time::Instant::now() + ANSWER_TIMEOUT;
    while tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .is_err()
    {
        assert!(
            tokio::time::Instant::now() < deadline,
            "nothing listens on {port}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    http_get(port, path).await
}
