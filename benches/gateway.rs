//! Measured costs of the gateway against the real codex app-server and the fake model:
//! message latency through the gateway next to the bare app-server, resuming after an
//! unload, and memory. Run with `scripts/bench`; the figures go to docs/benchmarks.md.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use codex_gateway::chat::{ChatKey, Platform};
use codex_gateway::codex::{AppServer, Notification, ThreadEvent, ThreadSettings};
use codex_gateway::config::{ApprovalPolicy, SandboxMode};
use support::{Chat, TestEnv};

const TURNS: usize = 30;
const RESUMES: usize = 10;
const STORED_CHATS: usize = 1000;
const LIVE_CHATS: usize = 20;

fn percentile(samples: &[Duration], p: usize) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[(sorted.len() - 1) * p / 100]
}

fn row(what: &str, samples: &[Duration]) {
    println!(
        "| {what} | {} | {:.1} ms | {:.1} ms |",
        samples.len(),
        percentile(samples, 50).as_secs_f64() * 1000.0,
        percentile(samples, 90).as_secs_f64() * 1000.0
    );
}

/// Resident memory of a process, in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap();
    kib / 1024.0
}

/// Turns on the bare app-server: what Codex costs without the gateway.
async fn bare_turns(env: &TestEnv) -> Vec<Duration> {
    let server = AppServer::spawn(&codex_gateway::spawn_spec(&env.config()))
        .await
        .unwrap();
    let settings = ThreadSettings {
        cwd: env.workspace().to_string_lossy().into_owned(),
        model: None,
        approval_policy: ApprovalPolicy::Never,
        sandbox: SandboxMode::DangerFullAccess,
    };
    let thread = server.start_thread(&settings).await.unwrap();
    let mut events = server.subscribe(&thread);
    let mut samples = Vec::new();
    for i in 0..=TURNS {
        let started = Instant::now();
        let turn = server
            .start_turn(&thread, &[&format!("bare {i}")])
            .await
            .unwrap();
        while let Some(event) = events.recv().await {
            if let ThreadEvent::Notification(Notification::TurnCompleted { turn_id, .. }) = event
                && turn_id == turn
            {
                break;
            }
        }
        if i > 0 {
            samples.push(started.elapsed()); // the first turn warms up
        }
    }
    server.shutdown().await;
    samples
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let env = TestEnv::new().await;
    let bare = bare_turns(&env).await;

    let app = env.start().await;
    let mut chat = Chat::new("bench");
    chat.ask(&app, "warm up").await;
    let mut live = Vec::new();
    for i in 0..TURNS {
        let started = Instant::now();
        chat.ask(&app, &format!("gateway {i}")).await;
        live.push(started.elapsed());
    }
    let mut resumed = Vec::new();
    for i in 0..RESUMES {
        app.router().unload(&chat.key).await;
        let started = Instant::now();
        chat.ask(&app, &format!("after unload {i}")).await;
        resumed.push(started.elapsed());
    }

    let me = std::process::id();
    let gateway_before = rss_mib(me);
    for i in 0..STORED_CHATS {
        let key = ChatKey::new(Platform::Console, format!("stored-{i}"));
        app.store()
            .set_thread(&key, "/w", &format!("thread-{i}"), None)
            .await
            .unwrap();
    }
    let gateway_stored = rss_mib(me);
    let mut chats: Vec<Chat> = (0..LIVE_CHATS)
        .map(|i| Chat::new(&format!("live-{i}")))
        .collect();
    for chat in &mut chats {
        chat.ask(&app, "hello").await;
    }
    let server = app.codex().servers().await.remove(0);
    let codex_rss = rss_mib(server.pid().unwrap());
    let gateway_live = rss_mib(me);
    let database = std::fs::metadata(env.database()).unwrap().len() as f64 / 1024.0;
    app.shutdown(None).await;

    println!("| what | n | median | p90 |");
    println!("|---|---|---|---|");
    row(
        "turn on the bare app-server (turn/start to turn/completed)",
        &bare,
    );
    row(
        "message through the gateway, live thread (dispatch to reply)",
        &live,
    );
    row("message after an unload (thread/resume + turn)", &resumed);
    println!();
    println!("| memory | MiB |");
    println!("|---|---|");
    println!(
        "| bench process (gateway + fakes) after {} turns | {gateway_before:.1} |",
        TURNS + RESUMES + 1
    );
    println!("| ... after {STORED_CHATS} more chats stored in SQLite | {gateway_stored:.1} |");
    println!("| ... with {LIVE_CHATS} more live chats | {gateway_live:.1} |");
    println!(
        "| codex app-server with {} threads loaded | {codex_rss:.1} |",
        LIVE_CHATS + 1
    );
    println!("| SQLite database file | {:.2} |", database / 1024.0);
}
