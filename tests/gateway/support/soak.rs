//! A seeded chaos run, as an operator's worst day goes: chats on Telegram and Discord in
//! `/queue` mode, Codex locally and on a worker, messages at random moments, and faults
//! at random moments (the gateway SIGKILLed and SIGTERMed, the local app-server
//! SIGKILLed, the worker restarted, Telegram answering 429 and 502, Discord 502, the
//! model 502, updates nobody can read). Then a check proves what a user needs: every
//! message answered exactly once, or its turn cut short and the chat offered Continue or
//! `/last`; never "send it again"; each chat's answers in the order sent; no chat moved
//! to another thread; no Codex process left; the database intact.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::discord::{self, FakeDiscord};
use super::model::{Brain, Reply, default_brain};
use super::telegram::{self, FakeTelegram, Fault, LONE_SURROGATE};
use super::workers::Worker;
use super::{TestEnv, free_port, http_get};

/// How long a run lasts and how busy it is.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    pub seed: u64,
    /// Messages and faults come in the first 80 % of it; the rest lets them settle.
    pub duration: Duration,
    pub messages: usize,
    pub faults: usize,
}

/// What happened, and what the check found wrong (nothing, for a pass).
#[derive(Debug, Default)]
pub struct Report {
    pub messages: usize,
    pub answered: usize,
    /// Not answered, their chat offered Continue or `/last` instead.
    pub cut_short: usize,
    pub offers: usize,
    pub faults: BTreeMap<&'static str, usize>,
    pub problems: Vec<String>,
    pub took: Duration,
}

/// The Telegram users and the Discord channels of the run, one chat each.
const TELEGRAM_USERS: [i64; 3] = [1001, 1002, 1003];
const DISCORD_CHANNELS: [u64; 3] = [700, 701, 702];
const DISCORD_USER: u64 = 1001;
const WORKER_TOKEN: &str = "soak-worker-token-5f1c";
/// How long the run waits at its end for every message to settle.
const SETTLE: Duration = Duration::from_secs(120);

/// A small seeded generator (xorshift64*): the same seed, the same run.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

#[derive(Debug, Clone, Copy)]
enum Chaos {
    GatewayKill,
    GatewayTerm,
    CodexKill,
    WorkerRestart,
    TelegramRateLimits,
    TelegramServerErrors,
    DiscordServerErrors,
    ModelServerErrors,
}

const CHAOS: [Chaos; 8] = [
    Chaos::GatewayKill,
    Chaos::GatewayTerm,
    Chaos::CodexKill,
    Chaos::WorkerRestart,
    Chaos::TelegramRateLimits,
    Chaos::TelegramServerErrors,
    Chaos::DiscordServerErrors,
    Chaos::ModelServerErrors,
];

impl Chaos {
    fn name(self) -> &'static str {
        match self {
            Chaos::GatewayKill => "gateway SIGKILL",
            Chaos::GatewayTerm => "gateway SIGTERM",
            Chaos::CodexKill => "app-server SIGKILL",
            Chaos::WorkerRestart => "worker restart",
            Chaos::TelegramRateLimits => "Telegram 429 storm",
            Chaos::TelegramServerErrors => "Telegram 502s",
            Chaos::DiscordServerErrors => "Discord 502s",
            Chaos::ModelServerErrors => "model 502s",
        }
    }
}

/// One chat of the run and what was sent in it, in order.
struct Chat {
    place: Place,
    sent: Vec<Sent>,
}

#[derive(Clone, Copy)]
enum Place {
    Telegram(i64),
    Discord(u64),
}

impl std::fmt::Display for Place {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Place::Telegram(user) => write!(f, "Telegram DM {user}"),
            Place::Discord(channel) => write!(f, "Discord channel {channel}"),
        }
    }
}

struct Sent {
    /// The answer it must get, exactly.
    expected: String,
}

/// What is planned at a moment of the run.
enum Event {
    Message(usize),
    Chaos(Chaos),
}

pub async fn run(plan: Plan) -> Report {
    let started = Instant::now();
    let model_faults = Arc::new(AtomicU32::new(0));
    let env = TestEnv::with_brain(faulty_brain(model_faults.clone())).await;
    let tg = FakeTelegram::start().await;
    let dc = FakeDiscord::start().await;
    let mut worker = Worker::start(&env, "soak", WORKER_TOKEN).await;
    let gateway = GatewayRun::new(&env, &tg, &dc, &worker);
    let mut report = Report::default();
    let mut dice = Dice(plan.seed.max(1));
    let mut chats: Vec<Chat> = TELEGRAM_USERS
        .iter()
        .map(|user| Place::Telegram(*user))
        .chain(
            DISCORD_CHANNELS
                .iter()
                .map(|channel| Place::Discord(*channel)),
        )
        .map(|place| Chat {
            place,
            sent: Vec::new(),
        })
        .collect();
    let mut child = gateway.start(&dc).await;

    let active = plan.duration.mul_f64(0.8);
    let moment = |dice: &mut Dice| active.mul_f64(dice.below(10_000) as f64 / 10_000.0);
    let mut events: Vec<(Duration, Event)> = Vec::new();
    for n in 0..plan.messages {
        events.push((moment(&mut dice), Event::Message(n)));
    }
    for _ in 0..plan.faults {
        let chaos = CHAOS[dice.below(CHAOS.len() as u64) as usize];
        events.push((moment(&mut dice), Event::Chaos(chaos)));
    }
    events.sort_by_key(|(at, _)| *at);
    let begun = Instant::now();
    for (at, event) in events {
        tokio::time::sleep_until((begun + at).into()).await;
        match event {
            Event::Message(n) => {
                let chat = &mut chats[dice.below(6) as usize];
                let sent = send(&tg, &dc, chat.place, plan.seed, n, dice.below(10));
                chat.sent.push(sent);
                report.messages += 1;
            }
            Event::Chaos(chaos) => {
                *report.faults.entry(chaos.name()).or_default() += 1;
                child = match chaos {
                    Chaos::GatewayKill => {
                        gateway.kill(child);
                        tokio::time::sleep(Duration::from_millis(300 + dice.below(1500))).await;
                        gateway.start(&dc).await
                    }
                    Chaos::GatewayTerm => {
                        gateway.terminate(child).await;
                        gateway.start(&dc).await
                    }
                    Chaos::CodexKill => {
                        env.kill_codex();
                        child
                    }
                    Chaos::WorkerRestart => {
                        worker.kill();
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        worker.restart().await;
                        child
                    }
                    Chaos::TelegramRateLimits => {
                        for _ in 0..3 {
                            tg.rate_limit_next("sendMessage", 1 + dice.below(3));
                        }
                        child
                    }
                    Chaos::TelegramServerErrors => {
                        for _ in 0..2 {
                            let page = "<html><body>502 Bad Gateway</body></html>";
                            tg.fail_next("sendMessage", Fault::server(502, page));
                        }
                        child
                    }
                    Chaos::DiscordServerErrors => {
                        for _ in 0..2 {
                            dc.fail_next("POST", "/messages", 502);
                        }
                        child
                    }
                    Chaos::ModelServerErrors => {
                        model_faults.store(2, Ordering::SeqCst);
                        child
                    }
                };
            }
        }
    }

    let settle_until = Instant::now() + SETTLE.max(plan.duration.mul_f64(0.2));
    while Instant::now() < settle_until && !settled(&tg, &dc, &chats) {
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    gateway.terminate(child).await;
    worker.kill();
    check(&env, &tg, &dc, &chats, &mut report).await;
    if !report.problems.is_empty() {
        // The gateway's logs outlive the run's folder, for finding out why.
        let kept = std::env::temp_dir().join(format!("codex-gateway-soak-{}", plan.seed));
        let _ = std::fs::remove_dir_all(&kept);
        std::fs::create_dir_all(&kept).unwrap();
        for log in std::fs::read_dir(&gateway.logs).unwrap().flatten() {
            let _ = std::fs::copy(log.path(), kept.join(log.file_name()));
        }
        report
            .problems
            .push(format!("the gateway's logs: {}", kept.display()));
    }
    report.took = started.elapsed();
    report
}

/// The default brain, failing the next requests with a 502 while `faults` lasts.
fn faulty_brain(faults: Arc<AtomicU32>) -> Brain {
    let brain = default_brain();
    Arc::new(move |request| {
        let failing = faults
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |left| {
                left.checked_sub(1)
            })
            .is_ok();
        match failing {
            true => Reply::Fail(502),
            false => brain(request),
        }
    })
}

/// Sends message `n` to `place`: one in ten streams slowly (a turn long enough to be cut),
/// one in twenty cannot be read as it comes (Telegram's lone surrogate).
fn send(tg: &FakeTelegram, dc: &FakeDiscord, place: Place, seed: u64, n: usize, roll: u64) -> Sent {
    let words = format!("soak {seed} message {n}");
    let unreadable = roll == 0 && matches!(place, Place::Telegram(_));
    let (text, expected) = match (roll, unreadable) {
        (_, true) => (
            format!("{words} {LONE_SURROGATE}"),
            format!("Echo: {words} \u{FFFD}"),
        ),
        (1, _) => (format!("slow: {words}"), words.clone()),
        _ => (words.clone(), format!("Echo: {words}")),
    };
    match place {
        Place::Telegram(user) => tg.dm(user, &text),
        Place::Discord(channel) if dc.is_connected() => {
            dc.channel_message(channel, DISCORD_USER, &[], &text)
        }
        Place::Discord(channel) => dc.channel_message_while_away(channel, DISCORD_USER, &text),
    }
    Sent { expected }
}

/// What the bot said in a chat, oldest first.
fn said(tg: &FakeTelegram, dc: &FakeDiscord, place: Place) -> Vec<String> {
    match place {
        Place::Telegram(user) => tg.texts(user).into_iter().map(|(_, t)| t).collect(),
        Place::Discord(channel) => dc.contents(channel).into_iter().map(|(_, t)| t).collect(),
    }
}

/// A notice offering Continue or `/last` (the one tap that recovers a cut turn).
fn is_offer(text: &str) -> bool {
    text.contains("(or send /continue)") || text.contains("(or send /last)")
}

/// Every message answered, or as many offers as messages left unanswered.
fn settled(tg: &FakeTelegram, dc: &FakeDiscord, chats: &[Chat]) -> bool {
    chats.iter().all(|chat| {
        let said = said(tg, dc, chat.place);
        let unanswered = chat
            .sent
            .iter()
            .filter(|sent| !said.contains(&sent.expected))
            .count();
        unanswered <= said.iter().filter(|t| is_offer(t)).count()
    })
}

async fn check(
    env: &TestEnv,
    tg: &FakeTelegram,
    dc: &FakeDiscord,
    chats: &[Chat],
    report: &mut Report,
) {
    for chat in chats {
        let said = said(tg, dc, chat.place);
        let offers = said.iter().filter(|t| is_offer(t)).count();
        report.offers += offers;
        let mut last_position = None;
        let mut unanswered = Vec::new();
        for sent in &chat.sent {
            let positions: Vec<usize> = (0..said.len())
                .filter(|i| said[*i] == sent.expected)
                .collect();
            match positions.as_slice() {
                [] => unanswered.push(sent.expected.as_str()),
                [position] => {
                    report.answered += 1;
                    if last_position.is_some_and(|last| last > *position) {
                        let problem = format!("{:?} answered out of order", sent.expected);
                        report.problems.push(problem);
                    }
                    last_position = Some(*position);
                }
                _ => report.problems.push(format!(
                    "{:?} answered {} times",
                    sent.expected,
                    positions.len()
                )),
            }
        }
        report.cut_short += unanswered.len();
        if unanswered.len() > offers {
            report.problems.push(format!(
                "{}: {} messages unanswered ({unanswered:?}) and {offers} offers to go on",
                chat.place,
                unanswered.len()
            ));
        }
        let again = |t: &&String| t.to_lowercase().contains("send it again");
        for text in said.iter().filter(again) {
            report
                .problems
                .push(format!("told to send it again: {text:?}"));
        }
    }
    let database = sqlx::SqlitePool::connect(&format!("sqlite://{}", env.database().display()))
        .await
        .unwrap();
    let integrity: String = sqlx::query_scalar("PRAGMA integrity_check")
        .fetch_one(&database)
        .await
        .unwrap();
    if integrity != "ok" {
        report
            .problems
            .push(format!("integrity_check: {integrity}"));
    }
    let moved: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM thread_history")
        .fetch_one(&database)
        .await
        .unwrap();
    if moved != 0 {
        report
            .problems
            .push(format!("{moved} chats moved to another thread"));
    }
    database.close().await;
    let left = env.codex_processes();
    if !left.is_empty() {
        report
            .problems
            .push(format!("Codex processes left behind: {left:?}"));
    }
}

/// The gateway binary as the run starts it, again and again, with one config.
struct GatewayRun {
    config: PathBuf,
    port: u16,
    logs: PathBuf,
    envs: Vec<(&'static str, String)>,
}

impl GatewayRun {
    fn new(env: &TestEnv, tg: &FakeTelegram, dc: &FakeDiscord, worker: &Worker) -> Self {
        let remote = worker.remote(env, WORKER_TOKEN);
        let extra = format!(
            "[[codex.remote]]\nname = {:?}\nurl = {:?}\ntoken_file = {:?}\n",
            remote.name.unwrap(),
            remote.url,
            remote.token_file
        );
        let config = env.config_file(&extra);
        let port = free_port();
        let ids = |ids: &[i64]| ids.iter().map(i64::to_string).collect::<Vec<_>>().join(",");
        let channels = DISCORD_CHANNELS.map(|c| c.to_string()).join(",");
        let envs = vec![
            ("CODEX_GATEWAY__SERVER__LISTEN", format!("127.0.0.1:{port}")),
            ("CODEX_GATEWAY__SERVER__SHUTDOWN_GRACE_SECS", "2".into()),
            ("CODEX_GATEWAY__CHAT__FOLLOW_UP", "queue".into()),
            ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true".into()),
            ("CODEX_GATEWAY__TELEGRAM__TOKEN", telegram::TOKEN.into()),
            ("CODEX_GATEWAY__TELEGRAM__API_URL", tg.url.clone()),
            (
                "CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS",
                ids(&TELEGRAM_USERS),
            ),
            ("CODEX_GATEWAY__DISCORD__ENABLED", "true".into()),
            ("CODEX_GATEWAY__DISCORD__TOKEN", discord::TOKEN.into()),
            (
                "CODEX_GATEWAY__DISCORD__APPLICATION_ID",
                discord::APP_ID.to_string(),
            ),
            (
                "CODEX_GATEWAY__DISCORD__CONNECT_TO",
                dc.rest_address.to_string(),
            ),
            (
                "CODEX_GATEWAY__DISCORD__CA_FILE",
                dc.ca_file.display().to_string(),
            ),
            (
                "CODEX_GATEWAY__DISCORD__ALLOWED_USERS",
                DISCORD_USER.to_string(),
            ),
            ("CODEX_GATEWAY__DISCORD__CHANNELS", channels),
        ];
        let logs = env.dir.path().join("soak-logs");
        std::fs::create_dir_all(&logs).unwrap();
        Self {
            config,
            port,
            logs,
            envs,
        }
    }

    /// Starts the gateway and waits until it serves both platforms.
    async fn start(&self, dc: &FakeDiscord) -> Child {
        let runs = std::fs::read_dir(&self.logs).unwrap().count();
        let log = std::fs::File::create(self.logs.join(format!("run-{runs}.log"))).unwrap();
        let sessions = dc.identifies() + dc.resumes();
        let child = Command::new(env!("CARGO_BIN_EXE_codex-gateway"))
            .args(["run", "--config"])
            .arg(&self.config)
            .envs(self.envs.iter().map(|(k, v)| (*k, v.as_str())))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while dc.identifies() + dc.resumes() == sessions {
            assert!(Instant::now() < deadline, "the gateway did not connect");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        while tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .is_err()
            || http_get(self.port, "/healthz").await.0 != 200
        {
            assert!(
                Instant::now() < deadline,
                "the gateway never became healthy"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        child
    }

    /// SIGKILL, as a crash or the OOM killer would.
    fn kill(&self, mut child: Child) {
        child.kill().unwrap();
        child.wait().unwrap();
    }

    /// SIGTERM, and waits for its exit.
    async fn terminate(&self, mut child: Child) {
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .status();
        tokio::task::spawn_blocking(move || child.wait().unwrap())
            .await
            .unwrap();
    }
}

impl Report {
    /// The run as a table row set, for docs/benchmarks.md.
    pub fn table(&self, plan: &Plan) -> String {
        let faults: Vec<String> = self
            .faults
            .iter()
            .map(|(name, count)| format!("{name} {count}"))
            .collect();
        format!(
            "| seed | {} |\n| ran | {:.0} s |\n| messages | {} |\n| answered once | {} |\n\
             | cut short, Continue or /last offered | {} ({} offers) |\n| faults | {} |\n\
             | problems | {} |",
            plan.seed,
            self.took.as_secs_f64(),
            self.messages,
            self.answered,
            self.cut_short,
            self.offers,
            faults.join(", "),
            match self.problems.is_empty() {
                true => "none".to_owned(),
                false => self.problems.join("; "),
            }
        )
    }
}
