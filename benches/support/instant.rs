//! The gateway alone, against the instant app-server (`instant_app_server.rs`): added
//! latency next to the same fake spoken to directly, throughput over many chats with the
//! gateway's CPU time, memory with many known and live chats, start-up time.

use std::time::{Duration, Instant};

use chat::{ChatKey, Inbound, Outbound, OutboundKind, Platform};
use codex::{AppServer, Notification, ThreadEvent, ThreadSettings, TurnOverrides, UserInput};
use codex_gateway::App;
use codex_gateway::config::{ApprovalPolicy, Config, FollowUp, SandboxMode};
use tokio::sync::mpsc;

use crate::support::{Chat, TestEnv};

/// The env's config with the bench binary itself as Codex: it serves the instant fake.
pub fn config(env: &TestEnv) -> Config {
    let mut config = env.config();
    config.codex.binary = std::env::current_exe().unwrap();
    config
}

/// Settings of the threads the bench starts directly.
pub fn thread_settings(env: &TestEnv) -> ThreadSettings {
    ThreadSettings {
        cwd: env.workspace().to_string_lossy().into_owned(),
        model: None,
        approval_policy: ApprovalPolicy::Never,
        sandbox: SandboxMode::DangerFullAccess,
    }
}

/// Runs one turn on `thread` directly and waits until it completes.
pub async fn one_turn(
    server: &AppServer,
    events: &mut mpsc::UnboundedReceiver<ThreadEvent>,
    thread: &str,
    text: &str,
) {
    let input = [UserInput::Text { text }];
    let turn = server
        .start_turn(thread, &input, &TurnOverrides::default())
        .await
        .unwrap();
    turn_completed(events, &turn).await;
}

/// Waits until the turn `turn` of the subscribed thread completes.
pub async fn turn_completed(events: &mut mpsc::UnboundedReceiver<ThreadEvent>, turn: &str) {
    while let Some(event) = events.recv().await {
        if let ThreadEvent::Notification(Notification::TurnCompleted { turn_id, .. }) = event
            && turn_id == turn
        {
            return;
        }
    }
}

/// Turns on the app-server of `config`, spoken to directly (no gateway): the floor for
/// any client. The first turn warms up and is not counted.
pub async fn direct_turns(env: &TestEnv, config: &Config, turns: usize) -> Vec<Duration> {
    let spec = codex_gateway::spawn_spec(config).unwrap();
    let server = AppServer::spawn(&spec).await.unwrap();
    let thread = server.start_thread(&thread_settings(env)).await.unwrap().id;
    let mut events = server.subscribe(&thread);
    let mut samples = Vec::with_capacity(turns);
    for i in 0..=turns {
        let started = Instant::now();
        one_turn(&server, &mut events, &thread, &format!("direct {i}")).await;
        if i > 0 {
            samples.push(started.elapsed());
        }
    }
    server.shutdown().await;
    samples
}

/// A console message from chat `name`, its answers to `outbox`.
fn message(name: &str, text: String, outbox: &mpsc::UnboundedSender<Outbound>) -> Inbound {
    Inbound {
        chat: ChatKey::new(Platform::Console, name),
        user: "bench".into(),
        text,
        reply_to: outbox.clone(),
        answer_slot: None,
        can_approve: false,
        private: true,
        admin: false,
        attachments: Vec::new(),
        ticket: None,
    }
}

/// Waits for `count` replies among the answers.
async fn replies(answers: &mut mpsc::UnboundedReceiver<Outbound>, count: usize) {
    let mut seen = 0;
    while seen < count {
        let answer = answers.recv().await.unwrap();
        seen += usize::from(matches!(answer.kind, OutboundKind::Reply(_)));
    }
}

/// Messages through the gateway on one live chat, each to its reply.
pub async fn gateway_turns(app: &App, turns: usize) -> Vec<Duration> {
    let mut chat = Chat::new("latency");
    chat.ask(app, "warm up").await;
    let mut samples = Vec::with_capacity(turns);
    for i in 0..turns {
        let started = Instant::now();
        chat.ask(app, &format!("gateway {i}")).await;
        samples.push(started.elapsed());
        chat.seen.clear();
    }
    samples
}

/// CPU time this process has used (user + system).
pub fn cpu_time() -> Duration {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let usage = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr());
        usage.assume_init()
    };
    let time = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    time(usage.ru_utime) + time(usage.ru_stime)
}

/// Many chats sending at once, all answered.
pub struct Throughput {
    pub chats: usize,
    pub messages: usize,
    pub wall: Duration,
    pub cpu: Duration,
}

/// Sends `per_chat` messages in each of `chats` chats at once (after one each to start
/// their threads) and waits for every reply.
pub async fn throughput(env: &TestEnv, chats: usize, per_chat: usize) -> Throughput {
    let mut config = config(env);
    config.chat.follow_up = FollowUp::Queue;
    config.codex.max_queued_messages = per_chat;
    config.hygiene.max_live_threads = chats;
    let app = App::start(&config).await.unwrap();
    let (outbox, mut answers) = mpsc::unbounded_channel();
    let send = |chat: usize, text: String| {
        app.router()
            .dispatch(message(&format!("load-{chat}"), text, &outbox))
    };
    for chat in 0..chats {
        send(chat, "start".into());
    }
    replies(&mut answers, chats).await;
    let (cpu, started) = (cpu_time(), Instant::now());
    for round in 0..per_chat {
        for chat in 0..chats {
            send(chat, format!("message {round}"));
        }
    }
    replies(&mut answers, chats * per_chat).await;
    let figures = Throughput {
        chats,
        messages: chats * per_chat,
        wall: started.elapsed(),
        cpu: cpu_time() - cpu,
    };
    app.shutdown(None).await;
    figures
}

/// Memory and start-up with many chats.
pub struct Memory {
    pub known: usize,
    pub live: usize,
    /// Start with an empty database, and with `known` chats stored.
    pub start_empty: Duration,
    pub start_known: Duration,
    pub rss_started: f64,
    pub rss_live: f64,
    pub database_mib: f64,
}

/// Stores `known` chats (each with a thread and two transcript lines) in the database.
async fn store_known_chats(env: &TestEnv, known: usize) {
    let options = sqlx::sqlite::SqliteConnectOptions::new().filename(env.database());
    let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
    const CHATS: &str =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
        INSERT INTO chats (chat_key, thread_id, cwd, turns, created_at, updated_at)
        SELECT 'console:known-' || i, 'thread-known-' || i, '/w', 1, 0, 0 FROM n";
    const TRANSCRIPT: &str =
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?1)
        INSERT INTO transcript (chat_key, thread_id, role, text, at)
        SELECT 'console:known-' || i, 'thread-known-' || i, role, 'a line of the chat', 0
        FROM n, (SELECT 'user' AS role UNION ALL SELECT 'assistant')";
    for statement in [CHATS, TRANSCRIPT] {
        let query = sqlx::query(statement).bind(known as i64);
        query.execute(&pool).await.unwrap();
    }
    pool.close().await;
}

pub async fn memory(env: &TestEnv, known: usize, live: usize) -> Memory {
    let mut config = config(env);
    config.hygiene.max_live_threads = live;
    let started = Instant::now();
    let app = App::start(&config).await.unwrap();
    let start_empty = started.elapsed();
    app.shutdown(None).await;
    store_known_chats(env, known).await;

    let started = Instant::now();
    let app = App::start(&config).await.unwrap();
    let start_known = started.elapsed();
    let me = std::process::id();
    let rss_started = crate::rss_mib(me);
    let (outbox, mut answers) = mpsc::unbounded_channel();
    for chat in 0..live {
        let hello = message(&format!("live-{chat}"), "hello".into(), &outbox);
        app.router().dispatch(hello);
    }
    replies(&mut answers, live).await;
    let rss_live = crate::rss_mib(me);
    app.shutdown(None).await;
    let database = std::fs::metadata(env.database()).unwrap().len() as f64;
    Memory {
        known,
        live,
        start_empty,
        start_known,
        rss_started,
        rss_live,
        database_mib: database / 1024.0 / 1024.0,
    }
}
