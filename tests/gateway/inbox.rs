//! The durable inbox over real traffic (real app-server, fake Telegram): a restart, or a
//! SIGKILL, neither drops a message the gateway accepted nor runs one twice; a turn the
//! stop cut short is offered a Continue button instead of being run again.

use std::time::Duration;

use crate::support::binary::{ALICE, crash, run_healthy, telegram_env};
use crate::support::discord::{APP_ID, FakeDiscord};
use crate::support::telegram::{FakeTelegram, Fault};
use crate::support::{Gateway, TestEnv};
use serde_json::Value;

const LONG_JOB: &str = "run: sleep 30; echo done";
const CONTINUE_BUTTON: &str = "cmd:continue continue";
const SEND_AGAIN_BUTTON: &str = "cmd:last send again";

/// Texts Alice's chat shows exactly equal to `text`.
fn count(tg: &FakeTelegram, text: &str) -> usize {
    tg.texts(ALICE).iter().filter(|(_, t)| t == text).count()
}

/// Model requests for a turn that `text` started (not the rounds after a tool call).
fn turns_asked(env: &TestEnv, text: &str) -> usize {
    let requests = env.model.turn_requests();
    let started =
        |r: &&crate::support::ModelRequest| r.last_human_text() == text && r.starts_turn();
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
    tg.wait_for_status(ALICE, |t| t.contains("running: sleep 30"))
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

/// On Discord too: a message queued behind a turn at a restart runs once afterwards.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_discord_message_queued_at_a_restart_runs_once_afterwards() {
    const DM: u64 = 800;
    let env = TestEnv::new().await;
    let discord = FakeDiscord::start().await;
    let mut config = env.config();
    config.discord.enabled = true;
    config.discord.token = Some(crate::support::secret(crate::support::discord::TOKEN));
    config.discord.application_id = Some(APP_ID);
    discord.configure(&mut config.discord);
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

/// Where in a message's life the gateway is killed (SIGKILL, as a crash or the OOM killer
/// does it).
#[derive(Debug, Clone, Copy)]
enum KillPoint {
    /// Accepted, and waiting behind a running turn.
    Waiting,
    /// Its turn running: the model asked, a command under way.
    TurnRunning,
    /// Its turn finished; Telegram answers 502 and the answer waits out the outage.
    AnswerWaiting,
    /// The answer sent, Telegram's reply to the send still on its way.
    AnswerInFlight,
    /// The answer taken by Telegram.
    AnswerTaken,
}

/// The message each point kills the gateway over, and its answer.
fn message_at(point: KillPoint) -> (&'static str, &'static str) {
    match point {
        KillPoint::Waiting => ("waiting at the kill", "Echo: waiting at the kill"),
        KillPoint::TurnRunning => (LONG_JOB, ""),
        KillPoint::AnswerWaiting => ("kept from the chat", "Echo: kept from the chat"),
        KillPoint::AnswerInFlight => ("answer in flight", "Echo: answer in flight"),
        KillPoint::AnswerTaken => ("answered before the kill", "Echo: answered before the kill"),
    }
}

/// Runs the gateway until its message reaches `point`.
async fn drive_to(point: KillPoint, env: &TestEnv, tg: &FakeTelegram) {
    let (text, answer) = message_at(point);
    match point {
        KillPoint::Waiting => long_turn_and_queued(tg, text).await,
        KillPoint::TurnRunning => {
            tg.dm(ALICE, text);
            tg.wait_for_status(ALICE, |t| t.contains("running: sleep 30"))
                .await;
        }
        KillPoint::AnswerWaiting => {
            for _ in 0..50 {
                tg.fail_next("sendMessage+html", Fault::server(502, "html"));
            }
            tg.dm(ALICE, text);
            // Four tries (1, 2, 4 s apart) fail; the answer then waits 5 s for the next.
            tg.wait_for_calls("sendMessage", 4, |body| body["text"] == answer)
                .await;
            assert_eq!(count(tg, answer), 0, "the outage let the answer through");
        }
        KillPoint::AnswerInFlight => {
            tg.hold_answer("sendMessage", answer, Duration::from_secs(60));
            tg.dm(ALICE, text);
            tg.wait_for_text(ALICE, |t| t == answer).await;
        }
        KillPoint::AnswerTaken => {
            tg.dm(ALICE, text);
            tg.wait_for_text(ALICE, |t| t == answer).await;
            // Taken, and noted so: the message is done.
            let unfinished = "SELECT COUNT(*) FROM inbox WHERE state != 'done'";
            env.wait_in_database(unfinished, |left| left == 0).await;
        }
    }
}

/// SIGKILL at each point of a message's life, then a start: nothing is lost, nothing
/// runs twice, no answer is sent twice by itself. A turn the kill cut is offered a
/// Continue button; an answer that was on its way, a button to send it again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_gateway_loses_no_message_and_repeats_none() {
    use KillPoint::*;
    for point in [
        Waiting,
        TurnRunning,
        AnswerWaiting,
        AnswerInFlight,
        AnswerTaken,
    ] {
        let env = TestEnv::new().await;
        let tg = FakeTelegram::start().await;
        let port = crate::support::free_port();
        let envs = telegram_env(&tg, port);
        let gateway = run_healthy(&env, &envs, port).await;
        drive_to(point, &env, &tg).await;
        crash(gateway);
        tg.clear_faults();

        let gateway = run_healthy(&env, &envs, port).await;
        let (text, answer) = message_at(point);
        match point {
            Waiting => {
                continue_offer(&tg, "The gateway went away while Codex worked").await;
                tg.wait_for_text(ALICE, |t| t == answer).await;
            }
            TurnRunning => {
                continue_offer(&tg, "The gateway went away while Codex worked").await;
            }
            AnswerWaiting => {
                tg.wait_for_text(ALICE, |t| t == answer).await;
            }
            AnswerInFlight => {
                let offer = last_offer(&tg).await;
                assert_eq!(count(&tg, answer), 1, "{point:?}: sent again by itself");
                tg.press(ALICE, ALICE, offer, SEND_AGAIN_BUTTON);
                let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
                while count(&tg, answer) < 2 {
                    assert!(std::time::Instant::now() < deadline, "not sent on request");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
            AnswerTaken => {}
        }
        tg.dm(ALICE, "anything else?");
        tg.wait_for_text(ALICE, |t| t == "Echo: anything else?")
            .await;
        crash(gateway);

        assert_eq!(turns_asked(&env, text), 1, "{point:?}: the turn ran again");
        let shown = match point {
            TurnRunning => 0,
            AnswerInFlight => 2, // the second on request
            _ => 1,
        };
        if !answer.is_empty() {
            assert_eq!(count(&tg, answer), shown, "{point:?}: answer shown");
        }
        let texts = tg.texts(ALICE);
        let told = |start: &str| texts.iter().filter(|(_, t)| t.starts_with(start)).count();
        let cut = told("The gateway went away while Codex worked");
        let cut_expected = usize::from(matches!(point, Waiting | TurnRunning));
        assert_eq!(cut, cut_expected, "{point:?}: cut-short notices");
        let maybe = told("The gateway went away while it was sending");
        let maybe_expected = usize::from(matches!(point, AnswerInFlight));
        assert_eq!(maybe, maybe_expected, "{point:?}: may-have-arrived notices");
    }
}

/// The notice that an answer may not have arrived, with its button; its id.
async fn last_offer(tg: &FakeTelegram) -> i64 {
    let start = "The gateway went away while it was sending";
    let offered = |body: &Value| {
        let text = body["text"].as_str().unwrap_or_default();
        text.starts_with(start) && body["reply_markup"].to_string().contains(SEND_AGAIN_BUTTON)
    };
    tg.wait_for_call("sendMessage", offered).await;
    let (id, _) = tg.wait_for_text(ALICE, |t| t.starts_with(start)).await;
    id
}
