//! The account's usage limit over real traffic: the fake model answers a turn with the
//! 429 `usage_limit_reached` ChatGPT's backend sends (the 5-hour window at 100 %), the
//! real app-server reports it, and the chat is told when the limit resets; the message
//! waits and runs by itself then, across a restart too, and `/stop` cancels it.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::support::model::{Brain, ModelRequest, Reply, default_brain};
use crate::support::telegram::FakeTelegram;
use crate::support::{Gateway, TestEnv};

const ALICE: i64 = 1001;
const LIMIT_NOTICE: &str = "Codex's 5-hour limit is used up; it resets at ";

/// "limited N: …" is refused once by the usage limit, which resets in N seconds
/// ("unheaded N: …" likewise, the reset only in the 429's body); after that (and anything
/// else) the default brain answers.
fn limited_brain() -> Brain {
    let fallback = default_brain();
    let refused: Mutex<HashSet<String>> = Mutex::default();
    Arc::new(move |request: &ModelRequest| {
        let text = request.last_human_text();
        let (headers, rest) = match text.strip_prefix("limited ") {
            Some(rest) => (true, Some(rest)),
            None => (false, text.strip_prefix("unheaded ")),
        };
        let seconds = rest.and_then(|rest| rest.split(':').next()?.parse().ok());
        match seconds {
            Some(seconds) if refused.lock().unwrap().insert(text.clone()) => Reply::UsageLimit {
                resets_in: Duration::from_secs(seconds),
                headers,
            },
            _ => fallback(request),
        }
    })
}

/// A 429 whose reset is named only in its body (no rate-limit headers, so Codex reports
/// no window): the chat is told the time Codex named in its message (measured:
/// "… try again at 7:57 AM.", the app-server's local time), not "it did not say".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reset_named_only_in_the_body_is_told() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "unheaded 7380: a long wait");
    let (_, notice) = tg
        .wait_for_text(ALICE, |t| t.starts_with("Codex's usage limit is used up"))
        .await;
    // Codex names the minute (cut): the limit lifts by its end, 2 h 3 to 4 min away.
    let when = [", in 2 h 3 min", ", in 2 h 4 min"];
    assert!(
        notice.contains("; it resets at ") && when.iter().any(|w| notice.contains(w)),
        "{notice}"
    );
    tg.dm(ALICE, "/stop");
    tg.wait_for_text(ALICE, |t| t.starts_with("Cancelled: the message"))
        .await;
    gateway.stop().await;
}

async fn setup() -> (TestEnv, FakeTelegram, codex_gateway::config::Config) {
    let env = TestEnv::with_brain(limited_brain()).await;
    let telegram = FakeTelegram::start().await;
    let mut config = env.telegram_config(&telegram, ALICE);
    config.server.shutdown_grace_secs = 1;
    (env, telegram, config)
}

fn count(tg: &FakeTelegram, text: &str) -> usize {
    tg.texts(ALICE).iter().filter(|(_, t)| t == text).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_stopped_by_the_usage_limit_runs_by_itself_at_the_reset() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "limited 4: the first");
    let (_, notice) = tg
        .wait_for_text(ALICE, |t| t.starts_with(LIMIT_NOTICE))
        .await;
    let told = Instant::now();
    assert!(
        notice.contains("UTC, in ") && notice.ends_with("I will run this then; /stop cancels."),
        "{notice}"
    );
    // Another message for Codex meanwhile waits too, behind it.
    tg.dm(ALICE, "meanwhile");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("Codex's usage limit is still used up: this waits too")
    })
    .await;
    let (first, _) = tg
        .wait_for_text(ALICE, |t| t == "Echo: limited 4: the first")
        .await;
    let ran = told.elapsed();
    let (second, _) = tg.wait_for_text(ALICE, |t| t == "Echo: meanwhile").await;
    gateway.stop().await;
    assert!(
        ran >= Duration::from_secs(2),
        "it ran {ran:?} after the notice, before the reset"
    );
    assert!(first < second, "the held messages ran out of order");
    assert_eq!(count(&tg, "Echo: limited 4: the first"), 1);
    assert_eq!(count(&tg, "Echo: meanwhile"), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_message_waits_across_a_restart_and_stop_cancels_one() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "limited 8: across the restart");
    tg.wait_for_text(ALICE, |t| t.starts_with(LIMIT_NOTICE))
        .await;
    let told = Instant::now();
    gateway.stop().await;
    let gateway = Gateway::start(&config);
    tg.wait_for_text(ALICE, |t| t == "Echo: limited 8: across the restart")
        .await;
    let ran = told.elapsed();
    assert!(
        ran >= Duration::from_secs(5),
        "it ran {ran:?} after the notice, before the reset"
    );

    // /stop cancels a held message: it never runs.
    tg.dm(ALICE, "limited 3: cancel me");
    let notices = |tg: &FakeTelegram| {
        let texts = tg.texts(ALICE);
        texts
            .iter()
            .filter(|(_, t)| t.starts_with(LIMIT_NOTICE))
            .count()
    };
    let deadline = Instant::now() + crate::support::ANSWER_TIMEOUT;
    while notices(&tg) < 2 {
        assert!(Instant::now() < deadline, "no second limit notice");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tg.dm(ALICE, "/stop");
    tg.wait_for_text(ALICE, |t| {
        t == "Cancelled: the message waiting for the usage limit will not run."
    })
    .await;
    // Were it not cancelled, it would run (at its reset, 3 s on) before this one.
    tg.dm(ALICE, "still here?");
    tg.wait_for_text(ALICE, |t| t == "Echo: still here?").await;
    gateway.stop().await;
    assert_eq!(
        count(&tg, "Echo: limited 3: cancel me"),
        0,
        "a cancelled message ran"
    );
    assert_eq!(count(&tg, "Echo: limited 8: across the restart"), 1);
}
