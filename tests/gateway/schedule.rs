//! Scheduled work over real traffic: jobs made with `/every` and `/at` in a Telegram DM
//! (the fake Bot API), run by the real app-server against the fake model in the chat's
//! own thread, kept in the gateway's SQLite file across restarts. `min_interval_secs` is
//! 1 here so a 15-second job is allowed; the default (60) is held in the last test.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::model::{Brain, ModelRequest, Reply, default_brain};
use crate::support::telegram::FakeTelegram;
use crate::support::{Chat, Gateway, TestEnv};
use chat::{Inbound, OutboundKind};
use codex_gateway::config::Config;
use sqlx::Connection;

const ALICE: i64 = 1001;

/// "broken: …" is refused as a model the provider does not serve; the rest as by default.
fn brain() -> Brain {
    let fallback = default_brain();
    Arc::new(move |request: &ModelRequest| {
        match request.last_human_text().starts_with("broken: ") {
            true => Reply::NoSuchModel,
            false => fallback(request),
        }
    })
}

async fn setup() -> (TestEnv, FakeTelegram, Config) {
    let env = TestEnv::with_brain(brain()).await;
    let telegram = FakeTelegram::start().await;
    let mut config = env.telegram_config(&telegram, ALICE);
    config.schedule.min_interval_secs = 1;
    (env, telegram, config)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// The chat's messages that `pick` accepts.
fn matching(tg: &FakeTelegram, pick: impl Fn(&str) -> bool) -> usize {
    tg.texts(ALICE).iter().filter(|(_, t)| pick(t)).count()
}

/// Waits until `count` of the chat's messages match `pick`.
async fn wait_for_count(tg: &FakeTelegram, count: usize, pick: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + crate::support::ANSWER_TIMEOUT;
    while matching(tg, &pick) < count {
        assert!(
            Instant::now() < deadline,
            "not {count} matching messages: {:#?}",
            tg.texts(ALICE)
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends `/jobs` and returns the listing that answers it.
async fn jobs_listing(tg: &FakeTelegram, heading: &str) -> String {
    let before = matching(tg, |t| t.starts_with(heading));
    tg.dm(ALICE, "/jobs");
    wait_for_count(tg, before + 1, |t| t.starts_with(heading)).await;
    let texts = tg.texts(ALICE);
    let mut listings = texts.iter().filter(|(_, t)| t.starts_with(heading));
    listings.next_back().unwrap().1.clone()
}

/// The thread of each model request whose prompt starts with `prompt`.
fn threads_of(env: &TestEnv, prompt: &str) -> Vec<Option<String>> {
    let requests = env.model.turn_requests();
    let runs = requests
        .iter()
        .filter(|r| r.last_human_text().starts_with(prompt));
    runs.map(ModelRequest::thread_id).collect()
}

async fn set_next_run(env: &TestEnv, id: i64, next_run: i64) {
    let url = format!("sqlite://{}", env.database().display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("UPDATE jobs SET next_run = ? WHERE id = ?")
        .bind(next_run)
        .bind(id)
        .execute(&mut db)
        .await
        .unwrap();
}

async fn next_run_of(env: &TestEnv, id: i64) -> i64 {
    let url = format!("sqlite://{}", env.database().display());
    let mut db = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query_scalar("SELECT next_run FROM jobs WHERE id = ?")
        .bind(id)
        .fetch_one(&mut db)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_in_the_chats_own_thread_on_its_schedule_and_after_a_restart() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "hello there");
    tg.wait_for_text(ALICE, |t| t == "Echo: hello there").await;
    let thread = env.model.request_for("hello there").thread_id();
    assert!(thread.is_some());

    // A prompt of two lines, as people write them.
    tg.dm(ALICE, "/every 15s check the CI\nand summarise it");
    let (_, scheduled) = tg
        .wait_for_text(ALICE, |t| {
            t.starts_with("Job 1 scheduled: every 15 s, next run ")
        })
        .await;
    assert!(
        scheduled.contains("/unschedule 1 removes it"),
        "{scheduled}"
    );
    let is_run =
        |t: &str| t.starts_with("Job 1 (every 15 s):\nEcho: check the CI\nand summarise it");
    wait_for_count(&tg, 1, is_run).await;
    let first = Instant::now();
    wait_for_count(&tg, 2, is_run).await;
    let gap = first.elapsed();
    assert!(
        gap >= Duration::from_secs(12) && gap <= Duration::from_secs(25),
        "the second run came {gap:?} after the first"
    );
    let listing = jobs_listing(&tg, "Jobs of this chat (times in UTC):").await;
    assert!(listing.contains("\n1. every 15 s, next "), "{listing}");
    assert!(listing.contains("; last run: answered ("), "{listing}");
    assert!(listing.contains("check the CI"), "{listing}");

    // A restart (as a deploy does) keeps the job; it runs again, in the same thread.
    gateway.stop().await;
    let gateway = Gateway::start(&config);
    wait_for_count(&tg, 3, is_run).await;
    let runs = threads_of(&env, "check the CI");
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(
        runs.iter().all(|run| *run == thread),
        "a run left the chat's thread {thread:?}: {runs:?}"
    );

    tg.dm(ALICE, "/unschedule all");
    tg.wait_for_text(ALICE, |t| t == "Removed this chat's one job.")
        .await;
    // A run handed over just before the removal may still answer: wait until every
    // turn Codex was asked for has ended (its answer goes out before its end is written).
    env.wait_turns_ended(env.model.turn_requests().len() as i64)
        .await;
    let runs = matching(&tg, is_run);
    // Nothing more may come: watched for one whole period of the job (15 s) and 2 s more.
    tokio::time::sleep(Duration::from_secs(17)).await;
    assert_eq!(
        matching(&tg, is_run),
        runs,
        "the job ran after /unschedule all"
    );
    let listing_heading = "This chat has no scheduled jobs.";
    jobs_listing(&tg, listing_heading).await;
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_missed_while_the_gateway_was_down_run_once_and_a_failed_run_says_why() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "/every 1h look at the night's builds");
    tg.wait_for_text(ALICE, |t| t.starts_with("Job 1 scheduled: every 1 h"))
        .await;
    gateway.stop().await;

    // Down for three hours: three runs were missed.
    set_next_run(&env, 1, now() - 3 * 3600 - 60).await;
    let gateway = Gateway::start(&config);
    let is_run = |t: &str| t == "Job 1 (every 1 h):\nEcho: look at the night's builds";
    wait_for_count(&tg, 1, is_run).await;
    let ran_at = now();

    // A one-off job, and one whose turn fails.
    tg.dm(ALICE, "/at in 2s the one-off check");
    tg.wait_for_text(ALICE, |t| t.starts_with("Job 2 scheduled: once, "))
        .await;
    tg.dm(ALICE, "/every 1h broken: the deploy check");
    tg.wait_for_text(ALICE, |t| t.starts_with("Job 3 scheduled: every 1 h"))
        .await;
    set_next_run(&env, 3, now()).await;
    // The runner learns of changes from the chat, not the file: another job wakes it.
    tg.dm(ALICE, "/at in 1s wake the runner");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("Job 4 (once, ") && t.contains("Echo: wake the runner")
    })
    .await;
    let (_, once) = tg
        .wait_for_text(ALICE, |t| t.starts_with("Job 2 (once, "))
        .await;
    assert!(once.ends_with("\nEcho: the one-off check"), "{once}");
    let (_, failed) = tg.wait_for_text(ALICE, |t| t.starts_with("Job 3: ")).await;
    assert!(
        failed.contains("mock-model"),
        "the failure does not say why: {failed}"
    );

    let listing = jobs_listing(&tg, "Jobs of this chat").await;
    assert!(listing.contains("\n1. every 1 h, next "), "{listing}");
    assert!(listing.contains("\n3. every 1 h, next "), "{listing}");
    assert!(listing.contains("last run: failed: "), "{listing}");
    assert!(
        !listing.contains("\n2. ") && !listing.contains("\n4. "),
        "one-off jobs stay: {listing}"
    );
    // A second catch-up run would follow the first at once; 2 s more shows none came.
    tokio::time::sleep(Duration::from_secs(2)).await;
    gateway.stop().await;

    assert_eq!(matching(&tg, is_run), 1, "a missed run ran more than once");
    // The next run is an hour after the catch-up run, not on the missed ticks.
    let next = next_run_of(&env, 1).await;
    assert!(
        (ran_at + 3590..=ran_at + 3610).contains(&next),
        "next run {next}, ran at {ran_at}"
    );
}

/// Sends `text` to `chat` as `user`, a person other than the chat's `tester`.
fn send_as(app: &codex_gateway::App, chat: &Chat, user: &str, admin: bool) -> Receiver {
    let (outbox, answers) = tokio::sync::mpsc::unbounded_channel();
    let send = move |text: &str| {
        app.router().dispatch(Inbound {
            chat: chat.key.clone(),
            user: user.into(),
            text: text.into(),
            reply_to: outbox.clone(),
            answer_slot: None,
            can_approve: false,
            private: false,
            admin,
            attachments: Vec::new(),
            ticket: None,
        })
    };
    send("/unschedule 1");
    send("/unschedule all");
    answers
}

type Receiver = tokio::sync::mpsc::UnboundedReceiver<chat::Outbound>;

async fn next_notice(answers: &mut Receiver) -> String {
    let answer = tokio::time::timeout(crate::support::ANSWER_TIMEOUT, answers.recv())
        .await
        .unwrap()
        .unwrap();
    match answer.kind {
        OutboundKind::Notice(text) => text,
        other => panic!("not a notice: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_schedules_and_limits_are_answered_clearly() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.schedule.max_jobs_per_chat = 2;
    config.schedule.timezone = "Europe/Berlin".into();
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("schedules");
    let cases = [
        // The default min_interval_secs (60) holds.
        ("/every 15s check", "at most once every 60 s"),
        ("/every soon check", "\"soon\" is not an interval"),
        (
            "/every \"0 9 * *\" check",
            "is not a five-field cron pattern",
        ),
        ("/every \"0 9 * * 1-5 check", "no closing quote"),
        ("/every \"0 0 30 2 *\" check", "that time never comes"),
        ("/every 10m", "say what to do after the time"),
        ("/at 25:00 check", "\"25:00\" is not a time"),
        ("/at 2020-01-01 09:00 check", "2020-01-01 09:00 has passed"),
        (
            "/every",
            "/every needs a time and a prompt, for example: /every 2h",
        ),
        ("/unschedule", "/unschedule takes a job's number from /jobs"),
        ("/unschedule 7", "This chat has no job 7"),
    ];
    for (typed, expected) in cases {
        chat.send(&app, typed);
        let answer = chat.notice(expected).await;
        if typed.starts_with("/every ") || typed.starts_with("/at ") {
            assert!(answer.contains("For example: /"), "{typed}: {answer}");
        }
    }
    chat.send(&app, "/every \"0 9 * * 1-5\" summarise yesterday's commits");
    chat.notice("Job 1 scheduled: cron \"0 9 * * 1-5\", next run ")
        .await;
    chat.send(&app, "/at 2099-12-24 09:00 wish a merry Christmas");
    chat.notice("Job 2 scheduled: once, Thu 24 Dec 09:00").await;
    chat.send(&app, "/every 2h one too many");
    chat.notice("This chat has 2 jobs, as many as allowed")
        .await;
    chat.send(&app, "/jobs");
    let listing = chat
        .notice("Jobs of this chat (times in Europe/Berlin):")
        .await;
    assert!(
        listing.contains("\n1. cron \"0 9 * * 1-5\", next "),
        "{listing}"
    );
    assert!(listing.contains(" 09:00 (in "), "{listing}");
    assert!(listing.contains("\n2. once, Thu 24 Dec 09:00"), "{listing}");

    // Someone else in the chat removes no job of tester's; an admin removes any.
    let mut other = send_as(&app, &chat, "mallory", false);
    assert!(
        next_notice(&mut other)
            .await
            .starts_with("Only the job's creator or an admin")
    );
    let all = next_notice(&mut other).await;
    assert!(
        all.starts_with("None of this chat's 2 jobs is yours"),
        "{all}"
    );
    let mut admin = send_as(&app, &chat, "root", true);
    assert_eq!(next_notice(&mut admin).await, "Job 1 removed.");
    assert_eq!(
        next_notice(&mut admin).await,
        "Removed this chat's one job."
    );
    env.shut_down(app).await;
}
