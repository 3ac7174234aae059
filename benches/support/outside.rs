//! The gateway from outside, as a user's clock sees it: the release binary as its own
//! process (as a container runs it) against the fake Bot API and the fake model, with
//! the real app-server. Exec to the first long poll; a Telegram update to the model's
//! request for it, next to `turn/start` sent straight to a bare app-server in the same
//! run; the gateway process's RSS when idle.

use std::process::Child;
use std::time::{Duration, Instant};

use codex_gateway::codex::{AppServer, ThreadEvent, TurnOverrides, UserInput};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::instant::{thread_settings, turn_completed};
use crate::support::binary::{self, ALICE};
use crate::support::telegram::FakeTelegram;
use crate::support::{TestEnv, free_port};

/// Process starts measured; the first (a new database, migrated) is shown apart.
const STARTS: usize = 16;
/// Warm turns measured each way, taken in turn, after [`WARM_UP`] not counted.
const SAMPLES: usize = 20;
const WARM_UP: usize = 3;
/// Between turns, each way: a person takes a moment to type.
const IDLE: Duration = Duration::from_millis(200);

pub async fn from_outside() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let mut starts = Vec::with_capacity(STARTS);
    for _ in 0..STARTS {
        let (gateway, took) = start_gateway(&env, &telegram).await;
        starts.push(took);
        stop(gateway).await;
    }
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
        "bare app-server: turn/start written to the model's request",
        &turns.bare,
    );
    crate::row(
        "gateway: Telegram update answered to the model's request",
        &turns.gateway,
    );
    let mut added: Vec<f64> = turns
        .gateway
        .iter()
        .zip(&turns.bare)
        .map(|(gateway, bare)| crate::ms(*gateway) - crate::ms(*bare))
        .collect();
    added.sort_by(f64::total_cmp);
    println!(
        "| added by the gateway (each gateway turn less the bare turn next to it) | {} | {:.2} ms | {:.2} ms |",
        added.len(),
        added[added.len() / 2],
        added[added.len() * 9 / 10]
    );
    println!(
        "| ratio to the bare app-server | | {} |",
        crate::ratios(&turns.gateway, &turns.bare, &[50, 90])
    );
    println!(
        "| gateway process RSS, idle after the turns | | {:.1} MiB | |",
        turns.idle_rss
    );
    println!();
}

/// Turns each way, taken in turn so that both see the same moment of this noisy VM.
struct Turns {
    bare: Vec<Duration>,
    gateway: Vec<Duration>,
    /// The gateway process's RSS, idle after them.
    idle_rss: f64,
}

async fn interleaved_turns(env: &TestEnv, telegram: &FakeTelegram) -> Turns {
    let spec = codex_gateway::spawn_spec(&env.config()).unwrap();
    let server = AppServer::spawn(&spec).await.unwrap();
    let thread = server.start_thread(&thread_settings(env)).await.unwrap().id;
    let mut events = server.subscribe(&thread);
    let (gateway, _) = start_gateway(env, telegram).await;
    let mut turns = Turns {
        bare: Vec::with_capacity(SAMPLES),
        gateway: Vec::with_capacity(SAMPLES),
        idle_rss: 0.0,
    };
    for i in 0..WARM_UP + SAMPLES {
        let bare = bare_turn(env, &server, &mut events, &thread, i).await;
        tokio::time::sleep(IDLE).await;
        let through_gateway = gateway_turn(env, telegram, i).await;
        tokio::time::sleep(IDLE).await;
        if i >= WARM_UP {
            turns.bare.push(bare);
            turns.gateway.push(through_gateway);
        }
    }
    server.shutdown().await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    turns.idle_rss = crate::rss_mib(gateway.id());
    stop(gateway).await;
    turns
}

/// `codex-gateway run` as a process, and the time from exec to its first long poll.
async fn start_gateway(env: &TestEnv, telegram: &FakeTelegram) -> (Child, Duration) {
    let polls = telegram.polls().len();
    let port = free_port();
    let envs = binary::telegram_env(telegram, port);
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

/// `turn/start` written to the bare app-server, to the model's request for its text.
async fn bare_turn(
    env: &TestEnv,
    server: &AppServer,
    events: &mut UnboundedReceiver<ThreadEvent>,
    thread: &str,
    i: usize,
) -> Duration {
    let text = format!("bare {i}");
    let started = Instant::now();
    let input = [UserInput::Text { text: &text }];
    let overrides = TurnOverrides::default();
    let turn = server.start_turn(thread, &input, &overrides).await.unwrap();
    turn_completed(events, &turn).await;
    env.model
        .request_for(&text)
        .received
        .duration_since(started)
}

/// A Telegram DM answered by the fake Bot API's long poll, to the model's request for
/// its text.
async fn gateway_turn(env: &TestEnv, telegram: &FakeTelegram, i: usize) -> Duration {
    let text = format!("through the gateway {i}");
    let answer = format!("Echo: {text}");
    let sent = Instant::now();
    telegram.dm(ALICE, &text);
    telegram.wait_for_text(ALICE, |t| t == answer).await;
    env.model.request_for(&text).received.duration_since(sent)
}
