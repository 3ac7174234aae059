//! The gateway from outside, as a user's clock sees it: the release binary as its own
//! process (as a container runs it) against the fake Bot API and the fake model, with
//! the real app-server. Exec to the first long poll; a Telegram update to the model's
//! request for it, next to what any client pays in the same run: `turn/start` sent
//! straight to a bare app-server, and a bare long poll taking an update from a second
//! fake Bot API; the gateway process's RSS when idle.
//!
//! Both app-servers run behind the tap (`tap.rs`), which notes when each `turn/start`
//! reaches the app-server: the gateway's own time is read up to that door, without
//! Codex's, whose turn-to-turn spread (several milliseconds) hides it otherwise.

use std::path::Path;
use std::process::Child;
use std::time::{Duration, Instant};

use codex::{AppServer, ThreadEvent, TurnOverrides, UserInput};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::instant::{thread_settings, turn_completed};
use crate::support::binary::{self, ALICE};
use crate::support::telegram::{FakeTelegram, TOKEN};
use crate::support::{TestEnv, codex_binary, free_port};
use crate::tap;

/// Process starts measured; the first (a new database, migrated) is shown apart.
const STARTS: usize = 16;
/// Warm turns measured each way, taken in turn, after [`WARM_UP`] not counted.
const SAMPLES: usize = 30;
const WARM_UP: usize = 3;
/// Between turns, each way: a person takes a moment to type.
const IDLE: Duration = Duration::from_millis(200);

pub async fn from_outside() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let mut starts = Vec::with_capacity(STARTS);
    for _ in 0..STARTS {
        let (gateway, took) = start_gateway(&env, &telegram, None).await;
        starts.push(took);
        stop(gateway).await;
    }
    let idle_rss = idle_memory(&env, &telegram).await;
    let turns = interleaved_turns(&env, &telegram).await;

    println!(
        "| from outside (release binary as a process, real app-server 0.171.0) | n | median | p90 |"
    );
    println!("|---|---|---|---|");
    println!(
        "| exec to the first getUpdates, new database | 1 | {:.1} ms | |",
        crate::ms(starts[0])
    );
    crate::row("exec to the first getUpdates, database there", &starts[1..]);
    crate::row(
        "bare long poll: update pushed to the client's answer",
        &turns.poll,
    );
    crate::row(
        "bare app-server: turn/start written to its arrival there",
        &turns.bare.door,
    );
    crate::row(
        "gateway: update pushed to turn/start's arrival at the app-server",
        &turns.gateway.door,
    );
    let own: Vec<Duration> = (0..turns.poll.len())
        .map(|i| {
            let floor = turns.bare.door[i] + turns.poll[i];
            turns.gateway.door[i].saturating_sub(floor)
        })
        .collect();
    crate::row(
        "**the gateway's own time**: each of those less the bare long poll and bare turn/start next to it",
        &own,
    );
    crate::row(
        "bare app-server: turn/start written to the model's request",
        &turns.bare.model,
    );
    crate::row(
        "gateway: update pushed to the model's request",
        &turns.gateway.model,
    );
    println!(
        "| ratio to the bare app-server (to the model's request) | | {} |",
        crate::ratios(&turns.gateway.model, &turns.bare.model, &[50, 90])
    );
    let (rss, anon) = idle_rss;
    println!(
        "| gateway process RSS, idle after start (of which heap and stacks) | | {rss:.1} MiB ({anon:.1}) | |"
    );
    let (rss, anon) = turns.idle_rss;
    println!(
        "| gateway process RSS, idle after the turns (of which heap and stacks) | | {rss:.1} MiB ({anon:.1}) | |"
    );
    println!();
}

/// One way's turns: to the app-server's door, and to the model's request.
#[derive(Default)]
struct Timings {
    door: Vec<Duration>,
    model: Vec<Duration>,
}

/// Turns each way, taken in turn so that all see the same moment of this noisy VM.
struct Turns {
    bare: Timings,
    poll: Vec<Duration>,
    gateway: Timings,
    /// The gateway process's RSS and anonymous part of it, idle after them.
    idle_rss: (f64, f64),
}

/// The gateway's memory a moment after start, with no message yet.
async fn idle_memory(env: &TestEnv, telegram: &FakeTelegram) -> (f64, f64) {
    let (gateway, _) = start_gateway(env, telegram, None).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let memory = memory(gateway.id());
    stop(gateway).await;
    memory
}

/// A process's resident memory and the anonymous part of it (heap, stacks; the rest is
/// its code and libraries, mapped from their files), in MiB.
fn memory(pid: u32) -> (f64, f64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let field = |name: &str| -> f64 {
        let kib: f64 = status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|value| value.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap();
        kib / 1024.0
    };
    (field("VmRSS:"), field("RssAnon:"))
}

async fn interleaved_turns(env: &TestEnv, telegram: &FakeTelegram) -> Turns {
    let tapped = tempfile::tempdir().unwrap();
    let tap_log = tapped.path().join("turn-starts");
    let mut config = env.config();
    config.codex.binary = std::env::current_exe().unwrap();
    let tap = tap_env(&tap_log).map(|(name, value)| (name.to_owned(), value));
    config.codex.env.extend(tap);
    let spec = codex_gateway::spawn_spec(&config).unwrap();
    let server = AppServer::spawn(&spec).await.unwrap();
    let thread = server.start_thread(&thread_settings(env)).await.unwrap().id;
    let mut events = server.subscribe(&thread);
    let (gateway, _) = start_gateway(env, telegram, Some(&tap_log)).await;
    let bare_telegram = FakeTelegram::start().await;
    let client = reqwest::Client::new();
    let mut turns = Turns {
        bare: Timings::default(),
        poll: Vec::with_capacity(SAMPLES),
        gateway: Timings::default(),
        idle_rss: (0.0, 0.0),
    };
    for i in 0..WARM_UP + SAMPLES {
        let bare = bare_turn(env, &tap_log, &server, &mut events, &thread, i).await;
        tokio::time::sleep(IDLE).await;
        let poll = bare_poll(&client, &bare_telegram, i).await;
        tokio::time::sleep(IDLE).await;
        let through_gateway = gateway_turn(env, &tap_log, telegram, i).await;
        tokio::time::sleep(IDLE).await;
        if i >= WARM_UP {
            turns.bare.door.push(bare.0);
            turns.bare.model.push(bare.1);
            turns.poll.push(poll);
            turns.gateway.door.push(through_gateway.0);
            turns.gateway.model.push(through_gateway.1);
        }
    }
    server.shutdown().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    turns.idle_rss = memory(gateway.id());
    stop(gateway).await;
    turns
}

/// What makes the bench binary a tap in front of the real app-server.
fn tap_env(log: &Path) -> [(&'static str, String); 2] {
    [
        (tap::LOG, log.display().to_string()),
        (tap::CODEX, codex_binary().display().to_string()),
    ]
}

/// `codex-gateway run` as a process, and the time from exec to its first long poll; its
/// Codex behind the tap when `tap_log` is given.
async fn start_gateway(
    env: &TestEnv,
    telegram: &FakeTelegram,
    tap_log: Option<&Path>,
) -> (Child, Duration) {
    let polls = telegram.polls().len();
    let port = free_port();
    let mut envs = binary::telegram_env(telegram, port);
    if let Some(log) = tap_log {
        let bench = std::env::current_exe().unwrap().display().to_string();
        envs.push(("CODEX_GATEWAY__CODEX__BINARY", bench));
        envs.extend(tap_env(log));
    }
    let mut command = binary::gateway_command(env, &["run"], &envs);
    let started = Instant::now();
    let mut child = command.spawn().unwrap();
    let mut log = child.stderr.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    let first_poll = loop {
        if let Some(poll) = telegram.polls().get(polls) {
            break poll.started;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    binary::wait_healthy(port).await;
    (child, first_poll.duration_since(started))
}

/// SIGTERM, and waits for a clean exit (its log is drained by then).
async fn stop(mut gateway: Child) {
    binary::terminate(&gateway);
    let status = tokio::task::spawn_blocking(move || gateway.wait().unwrap());
    let status = status.await.unwrap();
    assert!(status.success(), "the gateway exited with {status}");
}

/// `turn/start` written to the bare app-server: to its arrival there, and to the model's
/// request for its text.
async fn bare_turn(
    env: &TestEnv,
    tap_log: &Path,
    server: &AppServer,
    events: &mut UnboundedReceiver<ThreadEvent>,
    thread: &str,
    i: usize,
) -> (Duration, Duration) {
    let text = format!("bare {i}");
    let (started, written) = (Instant::now(), tap::now_ns());
    let input = [UserInput::Text { text: &text }];
    let overrides = TurnOverrides::default();
    let turn = server.start_turn(thread, &input, &overrides).await.unwrap();
    turn_completed(events, &turn).await;
    let door = Duration::from_nanos(tap::reached(tap_log, &text).await - written);
    let model = env
        .model
        .request_for(&text)
        .received
        .duration_since(started);
    (door, model)
}

/// A long poll held by the fake Bot API, as the gateway's is, and a DM pushed to it: the
/// time until the client has the answer (the platform's and HTTP's share of a message).
async fn bare_poll(client: &reqwest::Client, telegram: &FakeTelegram, i: usize) -> Duration {
    let polls = telegram.polls().len();
    let url = format!("{}/bot{}/getUpdates", telegram.url, TOKEN);
    let offset = i as i64 + 1;
    let request = client
        .post(url)
        .json(&serde_json::json!({"offset": offset, "timeout": 30}))
        .send();
    let answer = tokio::spawn(async move {
        let body = request.await.unwrap().bytes().await.unwrap();
        (Instant::now(), body)
    });
    while telegram.polls().len() == polls {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let pushed = Instant::now();
    telegram.dm(ALICE, &format!("bare poll {i}"));
    let (answered, body) = answer.await.unwrap();
    let updates: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(updates["result"].as_array().map(Vec::len), Some(1));
    answered.duration_since(pushed)
}

/// A Telegram DM pushed to the gateway's long poll: to its `turn/start`'s arrival at the
/// app-server, and to the model's request for its text.
async fn gateway_turn(
    env: &TestEnv,
    tap_log: &Path,
    telegram: &FakeTelegram,
    i: usize,
) -> (Duration, Duration) {
    let text = format!("through the gateway {i}");
    let answer = format!("Echo: {text}");
    let (sent, pushed) = (Instant::now(), tap::now_ns());
    telegram.dm(ALICE, &text);
    telegram.wait_for_text(ALICE, |t| t == answer).await;
    let door = Duration::from_nanos(tap::reached(tap_log, &text).await - pushed);
    let model = env.model.request_for(&text).received.duration_since(sent);
    (door, model)
}
