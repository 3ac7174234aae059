//! Measured costs of the gateway against the real codex app-server and the fake model:
//! message latency through the gateway next to the bare app-server, resuming after an
//! unload, memory, and delivery to a fake Telegram (final text after the model finished,
//! calls per answer, the owner's latency in a flood of strangers). Run with
//! `scripts/bench`; the figures go to docs/benchmarks.md.

#[path = "../tests/gateway/support/mod.rs"]
mod support;

#[path = "support/instant.rs"]
mod instant;
#[path = "support/instant_app_server.rs"]
mod instant_app_server;
#[path = "support/outside.rs"]
mod outside;
#[path = "support/tap.rs"]
mod tap;

use std::process::ExitCode;
use std::time::{Duration, Instant};

use chat::{ChatKey, Platform};
use codex::AppServer;
use codex_gateway::App;
use support::model::{Brain, ModelRequest, Output, Reply, default_brain};
use support::telegram::{BOT_USERNAME, Call, FakeTelegram};
use support::{Chat, Gateway, TestEnv};

const TURNS: usize = 30;
const RESUMES: usize = 10;
const STORED_CHATS: usize = 1000;
const LIVE_CHATS: usize = 20;
const QUICK_ANSWERS: usize = 20;
const STREAMED_ANSWERS: usize = 5;
const STRANGERS: i64 = 300;
const OWNER: i64 = 1001;

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

/// Delivery to a fake Telegram at the default settings.
struct Delivery {
    /// Model done -> final text accepted by Telegram, quick answers.
    quick: Vec<Duration>,
    quick_calls: (usize, usize),
    streamed: Vec<Duration>,
    streamed_calls: (usize, usize),
    /// The owner's message -> its answer, alone and in a flood of strangers.
    owner_alone: Duration,
    owner_in_flood: Duration,
}

/// Asks `text` as the owner; returns the time to the answer and the model request.
async fn ask_telegram(
    env: &TestEnv,
    telegram: &FakeTelegram,
    text: &str,
    answer: &str,
) -> (Duration, support::model::ModelRequest) {
    let started = Instant::now();
    telegram.dm(OWNER, text);
    telegram.wait_for_text(OWNER, |t| t == answer).await;
    let elapsed = started.elapsed();
    (elapsed, env.model.request_for(text))
}

/// Time from the model's last event to the last call that put `answer` on screen (a
/// streamed text can show whole before Codex has closed the turn; its final edit counts).
fn final_text(telegram: &FakeTelegram, answer: &str, model_done: Instant) -> Duration {
    let shown = ["sendMessage", "editMessageText"]
        .iter()
        .flat_map(|m| telegram.calls(m))
        .filter(|c| c.body["text"] == answer && !c.rate_limited)
        .map(|c| c.at)
        .max()
        .expect("the answer was shown");
    shown.saturating_duration_since(model_done)
}

/// Sends and edits so far.
fn calls(telegram: &FakeTelegram) -> (usize, usize) {
    let sends = telegram.calls("sendMessage").len();
    (sends, telegram.calls("editMessageText").len())
}

async fn telegram_delivery() -> Delivery {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let mut config = env.config();
    config.telegram.enabled = true;
    config.telegram.token = Some(support::secret(support::telegram::TOKEN));
    config.telegram.api_url = telegram.url.clone();
    config.telegram.allowed_users = vec![OWNER];
    let gateway = Gateway::start(&config);
    ask_telegram(&env, &telegram, "warm up", "Echo: warm up").await;
    let mut figures = Delivery {
        quick: Vec::new(),
        quick_calls: (0, 0),
        streamed: Vec::new(),
        streamed_calls: (0, 0),
        owner_alone: Duration::ZERO,
        owner_in_flood: Duration::ZERO,
    };
    for i in 0..QUICK_ANSWERS {
        let answer = format!("Echo: quick {i}");
        let before = calls(&telegram);
        let (_, request) = ask_telegram(&env, &telegram, &format!("quick {i}"), &answer).await;
        tokio::time::sleep(Duration::from_millis(1200)).await; // whatever follows, counted
        let after = calls(&telegram);
        figures.quick_calls = (after.0 - before.0, after.1 - before.1);
        let model_done = request.answered_at().unwrap();
        figures
            .quick
            .push(final_text(&telegram, &answer, model_done));
    }
    for i in 0..STREAMED_ANSWERS {
        let text = format!("streamed answer number {i} arrives in ten slow pieces");
        let before = calls(&telegram);
        let (_, request) = ask_telegram(&env, &telegram, &format!("slow: {text}"), &text).await;
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let after = calls(&telegram);
        figures.streamed_calls = (after.0 - before.0, after.1 - before.1);
        let model_done = request.answered_at().unwrap();
        figures
            .streamed
            .push(final_text(&telegram, &text, model_done));
    }
    figures.owner_alone = ask_telegram(&env, &telegram, "owner alone", "Echo: owner alone")
        .await
        .0;
    for stranger in 0..STRANGERS {
        telegram.dm(50_000 + stranger, "let me in");
    }
    figures.owner_in_flood = ask_telegram(
        &env,
        &telegram,
        "owner in a flood",
        "Echo: owner in a flood",
    )
    .await
    .0;
    gateway.stop().await;
    figures
}

fn main() -> ExitCode {
    // The gateway starts its Codex binary as `<binary> app-server`: here, the instant
    // fake, or the tap in front of the real app-server.
    if std::env::args().nth(1).as_deref() == Some("app-server") {
        if std::env::var_os(tap::LOG).is_some() {
            return tap::serve();
        }
        instant_app_server::serve();
        return ExitCode::SUCCESS;
    }
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            // `scripts/bench -- alone` or `-- codex` runs one half; `-- throughput` only
            // the throughput run (for profiling).
            if std::env::args().any(|a| a == "throughput") {
                return throughput().await;
            }
            // `scripts/soak`: a long seeded chaos run, alone.
            if std::env::args().any(|a| a == "soak") {
                return soak().await;
            }
            let parts = ["alone", "codex", "outside", "long"];
            let only = |part: &str| {
                !std::env::args().any(|a| parts.contains(&a.as_str()))
                    || std::env::args().any(|a| a == part)
            };
            if only("alone") {
                gateway_alone().await;
            }
            if only("codex") {
                with_real_codex().await;
            }
            if only("outside") {
                outside::from_outside().await;
            }
            if only("long") {
                long_turn().await;
            }
        });
    ExitCode::SUCCESS
}

/// The chaos run of `support/soak.rs` at `SOAK_SEED` for `SOAK_MINUTES` (30): 30
/// messages and 4 faults a minute. Its table goes to docs/benchmarks.md.
async fn soak() {
    let number = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|value| value.parse().ok())
            .unwrap_or(default)
    };
    let minutes = number("SOAK_MINUTES", 30);
    let plan = support::soak::Plan {
        seed: number("SOAK_SEED", 1),
        duration: Duration::from_secs(minutes * 60),
        messages: (minutes * 30) as usize,
        faults: (minutes * 4) as usize,
    };
    let report = support::soak::run(plan).await;
    println!("| chaos run | |\n|---|---|\n{}", report.table(&plan));
    if !report.problems.is_empty() {
        std::process::exit(1);
    }
}

/// Commands in the long turn, one every [`LONG_STEP`]: ten minutes of work.
const LONG_COMMANDS: usize = 300;
const LONG_STEP: &str = "sleep 1.9";
const LONG_ANSWER: &str = "Done: 300 steps.";
const LONG_GROUP: i64 = -100700;

/// "long: …" is [`LONG_COMMANDS`] rounds of a command (a commentary line every tenth),
/// then a final answer.
fn long_brain() -> Brain {
    let fallback = default_brain();
    std::sync::Arc::new(move |request: &ModelRequest| {
        if !request.last_human_text().starts_with("long: ") {
            return fallback(request);
        }
        let step = request.tool_outputs().len();
        if step >= LONG_COMMANDS {
            let text = LONG_ANSWER.into();
            return Reply::Round(vec![Output::Message {
                text,
                phase: Some("final_answer"),
            }]);
        }
        let mut round = Vec::new();
        if step.is_multiple_of(10) {
            let text = format!("Step {step}: checking the next part.");
            round.push(Output::Message {
                text,
                phase: Some("commentary"),
            });
        }
        round.push(Output::Exec(format!("{LONG_STEP}; echo step-{step}")));
        Reply::Round(round)
    })
}

/// A ten-minute turn of 300 commands in a Telegram DM and in a group at once, at the
/// default settings: how often the status is edited, and whether Telegram refused any
/// call (the fake answers 429 past 30 a second, or 20 a minute in a group).
async fn long_turn() {
    let env = TestEnv::with_brain(long_brain()).await;
    let telegram = FakeTelegram::start().await;
    let gateway = Gateway::start(&env.telegram_config(&telegram, OWNER));
    let started = Instant::now();
    telegram.dm(OWNER, "long: the DM");
    let mention = format!("@{BOT_USERNAME} long: the group");
    telegram.group_message(LONG_GROUP, OWNER, &mention, None);
    // Longer than a test waits for one answer: the turn takes ten minutes.
    let deadline = started + Duration::from_secs(20 * 60);
    // The group's status message becomes its summary; the DM's draft just ends.
    let ended = |chat| {
        let texts = telegram.texts(chat);
        let answered = texts.iter().any(|(_, t)| t == LONG_ANSWER);
        let summed_up = chat == OWNER || texts.iter().any(|(_, t)| t.starts_with("Worked "));
        answered && summed_up
    };
    for chat in [OWNER, LONG_GROUP] {
        while !ended(chat) {
            assert!(
                Instant::now() < deadline,
                "the long turn never ended in {chat}"
            );
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
    let took = started.elapsed();
    gateway.stop().await;
    println!(
        "Long turn ({LONG_COMMANDS} commands, `{LONG_STEP}` each, {:.0} s):",
        took.as_secs_f64()
    );
    println!();
    println!(
        "| chat | status updates (edits and drafts) | a minute, most in any second | least gap | 429s |"
    );
    println!("|---|---|---|---|---|");
    for (what, chat) in [("DM", OWNER), ("group", LONG_GROUP)] {
        let of_chat = |method: &str| -> Vec<Call> {
            let calls = telegram.calls(method).into_iter();
            calls.filter(|c| c.body["chat_id"] == chat).collect()
        };
        let mut edits = of_chat("editMessageText");
        edits.extend(of_chat("sendMessageDraft"));
        edits.sort_by_key(|call| call.at);
        let refused = edits
            .iter()
            .chain(&of_chat("sendMessage"))
            .filter(|c| c.rate_limited)
            .count();
        let most_in_a_second = edits
            .iter()
            .map(|first| {
                edits
                    .iter()
                    .filter(|c| c.at >= first.at && c.at < first.at + Duration::from_secs(1))
                    .count()
            })
            .max()
            .unwrap_or(0);
        let least_gap = edits
            .windows(2)
            .map(|pair| pair[1].at - pair[0].at)
            .min()
            .unwrap_or_default();
        println!(
            "| {what} | {} | {:.1}, {most_in_a_second} | {:.2} s | {refused} |",
            edits.len(),
            edits.len() as f64 * 60.0 / took.as_secs_f64(),
            least_gap.as_secs_f64()
        );
    }
    println!();
}

/// Time from `run` to the first getUpdates long poll on a fake Telegram.
async fn start_to_first_poll(mut config: codex_gateway::config::Config) -> Duration {
    let telegram = FakeTelegram::start().await;
    config.telegram.enabled = true;
    config.telegram.token = Some(support::secret(support::telegram::TOKEN));
    config.telegram.api_url = telegram.url.clone();
    config.telegram.allowed_users = vec![OWNER];
    let started = Instant::now();
    let gateway = Gateway::start(&config);
    while telegram.polls().is_empty() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let elapsed = started.elapsed();
    gateway.stop().await;
    elapsed
}

/// Telegram messages answered through the gateway, each from the update being ready at
/// the fake Bot API to the answer's `sendMessage` arriving there: every cost of the
/// gateway around a turn (intake, routing, delivery), the turn itself instant.
async fn telegram_round_trips(mut config: codex_gateway::config::Config) -> Vec<Duration> {
    const MESSAGES: usize = 200;
    let telegram = FakeTelegram::start().await;
    config.telegram.enabled = true;
    config.telegram.token = Some(support::secret(support::telegram::TOKEN));
    config.telegram.api_url = telegram.url.clone();
    config.telegram.allowed_users = vec![OWNER];
    let gateway = Gateway::start(&config);
    telegram.dm(OWNER, "warm up");
    telegram
        .wait_for_text(OWNER, |t| t == "Echo: warm up")
        .await;
    let mut samples = Vec::with_capacity(MESSAGES);
    for i in 0..MESSAGES {
        let answer = format!("Echo: round trip {i}");
        let sent = Instant::now();
        telegram.dm(OWNER, &format!("round trip {i}"));
        let call = telegram
            .wait_for_call("sendMessage", |body| body["text"] == answer.as_str())
            .await;
        samples.push(call.at.duration_since(sent));
    }
    gateway.stop().await;
    samples
}

/// Messages per second over 1,000 chats at once, and the gateway's CPU per message.
async fn throughput() {
    let env = TestEnv::new().await;
    let load = instant::throughput(&env, 1000, 20).await;
    let rate = load.messages as f64 / load.wall.as_secs_f64();
    let cpu = load.cpu.as_secs_f64() * 1e6 / load.messages as f64;
    println!(
        "| throughput: {} messages over {} chats at once | {:.0} messages/s | {:.1} µs gateway CPU per message | wall {:.2} s |",
        load.messages,
        load.chats,
        rate,
        cpu,
        load.wall.as_secs_f64()
    );
}

/// The gateway's own costs, against the instant fake app-server.
async fn gateway_alone() {
    const TURNS: usize = 2000;
    let env = TestEnv::new().await;
    let memory = instant::memory(&env, 100_000, 1000).await;
    println!("Against the instant app-server (the gateway alone):");
    println!();
    println!(
        "| start with an empty database | {:.1} ms |",
        ms(memory.start_empty)
    );
    println!(
        "| start with {} known chats | {:.1} ms |",
        memory.known,
        ms(memory.start_known)
    );
    println!(
        "| RSS after that start | {:.1} MiB | database {:.1} MiB |",
        memory.rss_started, memory.database_mib
    );
    println!(
        "| RSS with {} live chats | {:.1} MiB | {:.1} KiB per live chat |",
        memory.live,
        memory.rss_live,
        (memory.rss_live - memory.rss_started) * 1024.0 / memory.live as f64
    );
    let env = TestEnv::new().await;
    let bare = instant::direct_turns(&env, &instant::config(&env), TURNS).await;
    let app = App::start(&instant::config(&env)).await.unwrap();
    let through = instant::gateway_turns(&app, TURNS).await;
    app.shutdown(None).await;
    println!();
    println!("| what | n | median | p90 | p99 |");
    println!("|---|---|---|---|---|");
    row99("turn on the instant app-server, spoken to directly", &bare);
    row99("message through the gateway to its reply", &through);
    let added = |p| percentile(&through, p).saturating_sub(percentile(&bare, p));
    println!(
        "| added by the gateway | | {:.2} ms | {:.2} ms | {:.2} ms |",
        ms(added(50)),
        ms(added(90)),
        ms(added(99))
    );
    println!(
        "| ratio to the direct turn | | {} |",
        ratios(&through, &bare, &[50, 90, 99])
    );

    println!();
    throughput().await;

    let env = TestEnv::new().await;
    let telegram = telegram_round_trips(instant::config(&env)).await;
    row99(
        "Telegram message to the answer's sendMessage (instant app-server)",
        &telegram,
    );

    let env = TestEnv::new().await;
    let first_poll = start_to_first_poll(instant::config(&env)).await;
    println!(
        "| start to the first Telegram poll (instant app-server) | {:.1} ms |",
        ms(first_poll)
    );
    let env = TestEnv::new().await;
    let first_poll = start_to_first_poll(env.config()).await;
    println!(
        "| start to the first Telegram poll (real codex) | {:.1} ms |",
        ms(first_poll)
    );
    println!();
}

/// The gateway's percentiles `ps` as multiples of the bare app-server's, as table cells.
fn ratios(gateway: &[Duration], bare: &[Duration], ps: &[usize]) -> String {
    let ratio = |p| percentile(gateway, p).as_secs_f64() / percentile(bare, p).as_secs_f64();
    let cells: Vec<String> = ps.iter().map(|p| format!("{:.3}", ratio(*p))).collect();
    cells.join(" | ")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn row99(what: &str, samples: &[Duration]) {
    println!(
        "| {what} | {} | {:.2} ms | {:.2} ms | {:.2} ms |",
        samples.len(),
        ms(percentile(samples, 50)),
        ms(percentile(samples, 90)),
        ms(percentile(samples, 99))
    );
}

/// Resident memory of one app-server with 1, 10 and 50 threads loaded (each after a turn).
async fn codex_rss(env: &TestEnv) -> Vec<(usize, f64)> {
    let server = AppServer::spawn(&codex_gateway::spawn_spec(&env.config()).expect("no run_as"))
        .await
        .unwrap();
    let settings = instant::thread_settings(env);
    let mut figures = vec![(0, rss_mib(server.pid().unwrap()))];
    for loaded in 1..=50 {
        let thread = server.start_thread(&settings).await.unwrap().id;
        let mut events = server.subscribe(&thread);
        instant::one_turn(&server, &mut events, &thread, &format!("thread {loaded}")).await;
        if [1, 10, 50].contains(&loaded) {
            figures.push((loaded, rss_mib(server.pid().unwrap())));
        }
    }
    server.shutdown().await;
    figures
}

/// The costs with the real codex app-server and the fake model.
async fn with_real_codex() {
    let env = TestEnv::new().await;
    println!("| codex app-server threads loaded | RSS MiB |");
    println!("|---|---|");
    for (loaded, rss) in codex_rss(&env).await {
        println!("| {loaded} | {rss:.1} |");
    }
    println!();
    let env = TestEnv::new().await;
    let bare = instant::direct_turns(&env, &env.config(), TURNS).await;

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
            .set_thread(&key, "local", "/w", &format!("thread-{i}"), None)
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
    println!(
        "| ratio to the bare app-server | | {} |",
        ratios(&live, &bare, &[50, 90])
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

    let delivery = telegram_delivery().await;
    println!();
    println!("| Telegram delivery (fake Bot API, default settings) | n | median | p90 |");
    println!("|---|---|---|---|");
    row(
        "quick answer: model done to final text on Telegram",
        &delivery.quick,
    );
    row(
        "streamed answer (5 s): model done to final text",
        &delivery.streamed,
    );
    println!(
        "| calls per answer: quick {} send + {} edits; streamed {} send + {} edits | | | |",
        delivery.quick_calls.0,
        delivery.quick_calls.1,
        delivery.streamed_calls.0,
        delivery.streamed_calls.1
    );
    println!(
        "| owner's message to answer: alone {:.1} ms, with {STRANGERS} strangers writing at once {:.1} ms | | | |",
        delivery.owner_alone.as_secs_f64() * 1000.0,
        delivery.owner_in_flood.as_secs_f64() * 1000.0
    );
}
