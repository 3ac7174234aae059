//! The durable inbox over real traffic (real app-server, fake Telegram): a restart, or a
//! SIGKILL, neither drops a message the gateway accepted nor runs one twice; a turn the
//! stop cut short is offered a Continue button instead of being run again.

mod support;

use std::time::Duration;

use serde_json::Value;
use support::binary::{ALICE, crash, run_healthy, telegram_env};
use support::discord::{APP_ID, FakeDiscord};
use support::telegram::{FakeTelegram, Fault};
use support::{Gateway, TestEnv};

const LONG_JOB: &str = "run: sleep 30; echo done";
const CONTINUE_BUTTON: &str = "cmd:continue continue";

/// Texts Alice's chat shows exactly equal to `text`.
fn count(tg: &FakeTelegram, text: &str) -> usize {
    tg.texts(ALICE).iter().filter(|(_, t)| t == text).count()
}

/// Model requests for a turn that `text` started (not the rounds after a tool call).
fn turns_asked(env: &TestEnv, text: &str) -> usize {
    let requests = env.model.turn_requests();
    let started = |r: &&support::ModelRequest| r.last_human_text() == text && r.starts_turn();
    requests.iter().filter(started).count()
}

/// The bot message starting with `start` that carries the Continue button; its id.
async fn continue_offer(tg: &FakeTelegram, start: &str) -> i64 {
    let offered = |body: &Value| {
        let text = body["text"].as_str().unwrap_or_default();
        text.starts_with(start) && body["reply_markup"].to_string().contains(CONTINUE_BUTTON)
    };
    tg.wait_for_call("sendMessage", offered).await;
    let (id, _) = tg.wait_for_text(ALICE, |t| t.starts_with(start)).await;
    id
}

/// A long turn runs and a message waits behind it (the chat queues).
async fn long_turn_and_queued(tg: &FakeTelegram, queued: &str) {
    tg.dm(ALICE, "/queue");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("From now on, a message sent while Codex works waits")
    })
    .await;
    tg.dm(ALICE, LONG_JOB);
    tg.wait_for_text(ALICE, |t| t.contains("running: sleep 30"))
        .await;
    tg.dm(ALICE, queued);
    tg.wait_for_text(ALICE, |t| t.starts_with("Queued: ")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restart_runs_queued_messages_once_and_offers_to_continue_the_cut_turn() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    config.server.shutdown_grace_secs = 1;
    let gateway = Gateway::start(&config);
    long_turn_and_queued(&tg, "after the restart").await;
    gateway.stop().await;
    let interrupted =
        continue_offer(&tg, "The gateway is restarting: this turn was interrupted").await;
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("The gateway is restarting; this message waits")
    })
    .await;

    // Back: the queued message runs without being sent again; the cut turn does not.
    let gateway = Gateway::start(&config);
    tg.wait_for_text(ALICE, |t| t == "Echo: after the restart")
        .await;
    let job_thread = env.model.request_for(LONG_JOB).thread_id();
    // Continue goes on in the same thread.
    tg.press(ALICE, ALICE, interrupted, CONTINUE_BUTTON);
    tg.wait_for_text(ALICE, |t| t == "Echo: continue").await;
    assert_eq!(env.model.request_for("continue").thread_id(), job_thread);
    gateway.stop().await;

    // Once more: nothing is left to run again.
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "still one each?");
    tg.wait_for_text(ALICE, |t| t == "Echo: still one each?")
        .await;
    gateway.stop().await;
    assert_eq!(count(&tg, "Echo: after the restart"), 1);
    assert_eq!(count(&tg, "Echo: continue"), 1);
    assert_eq!(turns_asked(&env, LONG_JOB), 1, "the cut turn ran again");
    assert_eq!(turns_asked(&env, "after the restart"), 1);
}

/// SIGKILL of the gateway at each point of a message's life: waiting behind a turn,
/// its turn running, answered. After the restart nothing is lost and nothing repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_loses_no_message_and_repeats_none() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let port = support::free_port();
    let envs = telegram_env(&tg, port);

    // Answered, then killed: the answer is not sent again.
    let gateway = run_healthy(&env, &envs, port).await;
    tg.dm(ALICE, "answered before the kill");
    tg.wait_for_text(ALICE, |t| t == "Echo: answered before the kill")
        .await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    crash(gateway);

    // Killed while one turn runs and a message waits behind it.
    let gateway = run_healthy(&env, &envs, port).await;
    long_turn_and_queued(&tg, "waiting at the kill").await;
    crash(gateway);

    let gateway = run_healthy(&env, &envs, port).await;
    continue_offer(
        &tg,
        "The gateway went away while Codex worked on this message",
    )
    .await;
    tg.wait_for_text(ALICE, |t| t == "Echo: waiting at the kill")
        .await;
    tg.dm(ALICE, "anything else?");
    tg.wait_for_text(ALICE, |t| t == "Echo: anything else?")
        .await;
    crash(gateway);

    assert_eq!(count(&tg, "Echo: answered before the kill"), 1);
    assert_eq!(turns_asked(&env, "answered before the kill"), 1);
    assert_eq!(turns_asked(&env, LONG_JOB), 1, "the cut turn ran again");
    assert_eq!(count(&tg, "Echo: waiting at the kill"), 1);
    let cut = tg.texts(ALICE);
    let cut = cut
        .iter()
        .filter(|(_, t)| t.starts_with("The gateway went away"));
    assert_eq!(cut.count(), 1, "the cut turn is told once");
}

/// On Discord too: a message queued behind a turn at a restart runs once afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_message_queued_at_a_restart_runs_once_afterwards() {
    const DM: u64 = 800;
    let env = TestEnv::new().await;
    let discord = FakeDiscord::start().await;
    let mut config = env.config();
    config.discord.enabled = true;
    config.discord.token = Some(support::secret("discord-test-token"));
    config.discord.application_id = Some(APP_ID);
    config.discord.api_url = Some(discord.url.clone());
    config.discord.allowed_users = vec![ALICE as u64];
    config.server.shutdown_grace_secs = 1;
    let gateway = Gateway::start(&config);
    discord.wait_connected(1).await;
    let alice = ALICE as u64;
    discord.dm(DM, alice, "/queue");
    discord
        .wait_for_content(DM, |t| {
            t.starts_with("From now on, a message sent while Codex works waits")
        })
        .await;
    discord.dm(DM, alice, LONG_JOB);
    discord
        .wait_for_content(DM, |t| t.contains("running: sleep 30"))
        .await;
    discord.dm(DM, alice, "after the restart");
    discord
        .wait_for_content(DM, |t| t.starts_with("Queued: "))
        .await;
    gateway.stop().await;
    discord
        .wait_for_content(DM, |t| {
            t.starts_with("The gateway is restarting; this message waits")
        })
        .await;

    let gateway = Gateway::start(&config);
    discord.wait_connected(2).await;
    discord
        .wait_for_content(DM, |t| t == "Echo: after the restart")
        .await;
    discord.dm(DM, alice, "and now?");
    discord
        .wait_for_content(DM, |t| t == "Echo: and now?")
        .await;
    gateway.stop().await;
    let echoes = discord.contents(DM);
    let echoes = echoes
        .iter()
        .filter(|(_, t)| t == "Echo: after the restart");
    assert_eq!(echoes.count(), 1);
    assert_eq!(turns_asked(&env, LONG_JOB), 1, "the cut turn ran again");
}

/// SIGKILL while the platform is down and the answer waits to be sent: the answer is
/// sent at the next start, once, not lost and not repeated.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_a_crash_kept_from_the_chat_is_sent_at_the_next_start_once() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let port = support::free_port();
    let envs = telegram_env(&tg, port);
    let answer = "Echo: kept from the chat";
    let tries = |tg: &FakeTelegram| {
        let calls = tg.calls("sendMessage");
        calls.iter().filter(|c| c.body["text"] == answer).count()
    };

    let gateway = run_healthy(&env, &envs, port).await;
    for _ in 0..50 {
        tg.fail_next("sendMessage+html", Fault::server(502, "html"));
    }
    tg.dm(ALICE, "kept from the chat");
    let deadline = std::time::Instant::now() + support::ANSWER_TIMEOUT;
    while tries(&tg) < 2 {
        assert!(
            std::time::Instant::now() < deadline,
            "the answer was never tried"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    crash(gateway);
    tg.clear_faults();
    assert_eq!(count(&tg, answer), 0, "the outage let the answer through");

    let gateway = run_healthy(&env, &envs, port).await;
    tg.wait_for_text(ALICE, |t| t == answer).await;
    crash(gateway);
    let gateway = run_healthy(&env, &envs, port).await;
    tg.dm(ALICE, "and after that?");
    tg.wait_for_text(ALICE, |t| t == "Echo: and after that?")
        .await;
    crash(gateway);
    assert_eq!(count(&tg, answer), 1);
    assert_eq!(
        turns_asked(&env, "kept from the chat"),
        1,
        "the turn ran again"
    );
    let cut = tg.texts(ALICE);
    assert!(
        !cut.iter()
            .any(|(_, t)| t.starts_with("The gateway went away"))
    );
}
