//! A real multi-step Codex turn as a Telegram user sees it: the real app-server runs the
//! fake model's three rounds of commentary and a command that takes seconds, a file change
//! and a final answer, at the default first flush and edit interval.

use std::sync::Arc;

use crate::support::model::{Brain, ModelRequest, Output, Reply, default_brain};
use crate::support::telegram::FakeTelegram;
use crate::support::{Gateway, TestEnv};
use serde_json::Value;

const ALICE: i64 = 1001;
const GROUP: i64 = -100500;
const ANSWER: &str = "Done with the repo: fixed.txt now says fixed.";

/// "work: …" is a turn of three commentary-and-command rounds, a file change and a final
/// answer; anything else is the default brain's.
fn working_brain() -> Brain {
    let fallback = default_brain();
    Arc::new(move |request: &ModelRequest| {
        let asked = request.last_human_text();
        if !asked.starts_with("work: ") {
            return fallback(request);
        }
        let commentary = |text: &str| Output::Message {
            text: text.into(),
            phase: Some("commentary"),
        };
        match request.tool_outputs().len() {
            n @ 0..=1 => Reply::Round(vec![
                commentary(&format!("Step {}: looking at the repo.", n + 1)),
                Output::Exec(format!("sleep 2; echo step-{}", n + 1)),
            ]),
            2 => Reply::Round(vec![
                commentary("Step 3: writing the fix."),
                Output::Exec(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: fixed.txt\n+fixed\n*** End Patch\nEOF"
                        .into(),
                ),
            ]),
            _ => Reply::Round(vec![Output::Message {
                text: ANSWER.into(),
                phase: Some("final_answer"),
            }]),
        }
    })
}

async fn setup() -> (TestEnv, FakeTelegram, codex_gateway::config::Config) {
    let env = TestEnv::with_brain(working_brain()).await;
    let telegram = FakeTelegram::start().await;
    let config = env.telegram_config(&telegram, ALICE);
    (env, telegram, config)
}

/// Every text the bot sent or edited to in `chat`, with when.
fn shown_in(tg: &FakeTelegram, chat: i64) -> Vec<(std::time::Instant, String)> {
    let mut shown: Vec<_> = ["sendMessage", "editMessageText"]
        .into_iter()
        .flat_map(|method| tg.calls(method))
        .filter(|call| call.body["chat_id"] == chat)
        .map(|call| (call.at, call.body["text"].as_str().unwrap_or("").to_owned()))
        .collect();
    shown.sort_by_key(|(at, _)| *at);
    shown
}

fn shown(tg: &FakeTelegram) -> Vec<(std::time::Instant, String)> {
    shown_in(tg, ALICE)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_turn_shows_its_commands_live_and_answers_in_a_new_message() {
    let (_env, tg, mut config) = setup().await;
    // The status message and its summary (a private chat's draft: telegram.rs).
    config.telegram.drafts = false;
    assert_eq!(config.telegram.first_flush_ms, 1000, "the default");
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "work: the repo");
    let (answered, _) = tg.wait_for_text(ALICE, |t| t == ANSWER).await;
    let (status, summary) = tg.wait_for_text(ALICE, |t| t.starts_with("Worked ")).await;

    let answer_sent = tg
        .calls("sendMessage")
        .into_iter()
        .find(|call| call.body["text"] == ANSWER)
        .expect("the answer is a new message")
        .at;
    let before: Vec<String> = shown(&tg)
        .into_iter()
        .filter(|(at, _)| *at < answer_sent)
        .map(|(_, text)| text)
        .collect();
    let running = before
        .iter()
        .any(|t| t.starts_with("Working · ") && t.contains("running: sleep 2; echo step-"));
    assert!(running, "no command shown while it ran: {before:#?}");
    assert!(
        before
            .iter()
            .any(|t| t.contains("Step 2: looking at the repo.")),
        "no commentary in the status: {before:#?}"
    );
    // The answer, once, as its own message, without the commentary.
    assert_ne!(answered, status);
    let answers = tg.texts(ALICE).into_iter().filter(|(_, t)| t == ANSWER);
    assert_eq!(answers.count(), 1);
    assert!(!tg.text_of(answered).unwrap().contains("Step 1"));
    assert!(summary.contains("commands"), "{summary}");
    assert!(summary.contains("+1 −0 in 1 file"), "{summary}");

    // /diff sends the turn's unified diff.
    tg.dm(ALICE, "/diff");
    let sent = tg
        .wait_for_call("sendDocument", |b| {
            b["document"]["file_name"] == "last-turn.diff"
        })
        .await;
    let diff = sent.body["document"]["content"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        diff.contains("+fixed") && diff.contains("fixed.txt"),
        "{diff}"
    );

    // /quiet: the next turn shows no status, only the answer; kept across a restart.
    tg.dm(ALICE, "/quiet");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("From now on, a running turn shows only")
    })
    .await;
    gateway.stop().await;
    let gateway = Gateway::start(&config);
    // The diff is kept across the restart.
    tg.dm(ALICE, "/diff");
    let is_diff = |b: &Value| b["document"]["file_name"] == "last-turn.diff";
    let sent = tg.wait_for_calls("sendDocument", 2, is_diff).await;
    assert_eq!(sent[1].body["document"]["content"], diff);
    new_thread(&tg, 1).await;
    let statuses_before = count_statuses(&tg);
    tg.dm(ALICE, "work: quietly");
    let answers_before = tg.texts(ALICE).iter().filter(|(_, t)| t == ANSWER).count();
    wait_for_answers(&tg, answers_before + 1).await;
    assert_eq!(
        count_statuses(&tg),
        statuses_before,
        "a status in a quiet chat"
    );

    // /verbose: the status lists each command with its exit code.
    tg.dm(ALICE, "/verbose");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("From now on, the status also lists")
    })
    .await;
    new_thread(&tg, 2).await;
    tg.dm(ALICE, "work: verbosely");
    wait_for_answers(&tg, answers_before + 2).await;
    gateway.stop().await;
    let logged = shown(&tg)
        .into_iter()
        .any(|(_, t)| t.contains("Log:") && t.contains("$ sleep 2; echo step-1 (exit 0)"));
    assert!(logged, "the verbose status lists no command");
}

/// A Telegram group takes 20 messages a minute from a bot: the status is edited at most
/// every 4 s there, and nothing is refused with 429.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_status_is_edited_within_the_groups_limit() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    let bot = crate::support::telegram::BOT_USERNAME;
    tg.group_message(GROUP, ALICE, &format!("@{bot} work: in the group"), None);
    tg.wait_for_text(GROUP, |t| t == ANSWER).await;
    tg.wait_for_text(GROUP, |t| t.starts_with("Worked ")).await;
    gateway.stop().await;

    // The status as first sent, then each of its edits.
    let status_sent = tg.calls("sendMessage").into_iter().find(|call| {
        let text = call.body["text"].as_str().unwrap_or_default();
        call.body["chat_id"] == GROUP && text.starts_with("Working · ")
    });
    let edits: Vec<_> = tg
        .calls("editMessageText")
        .into_iter()
        .filter(|call| call.body["chat_id"] == GROUP)
        .collect();
    let changes: Vec<_> = status_sent.into_iter().chain(edits.clone()).collect();
    assert!(
        changes.len() >= 2,
        "the status was hardly shown: {changes:#?}"
    );
    for pair in changes.windows(2) {
        let gap = pair[1].at.duration_since(pair[0].at);
        assert!(
            gap >= std::time::Duration::from_secs(4),
            "status changes {gap:?} apart"
        );
    }
    let refused = tg.calls("sendMessage").into_iter().chain(edits);
    assert!(refused.filter(|call| call.rate_limited).count() == 0);
    assert!(
        shown_in(&tg, GROUP)
            .iter()
            .any(|(_, t)| t.contains("running: sleep 2"))
    );
}

/// `/new`, so the next "work:" turn's rounds count from zero; `nth` new thread.
async fn new_thread(tg: &FakeTelegram, nth: usize) {
    tg.dm(ALICE, "/new");
    let started = |tg: &FakeTelegram| {
        let texts = tg.texts(ALICE);
        let new = texts
            .iter()
            .filter(|(_, t)| t.starts_with("Started a new conversation"));
        new.count()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while started(tg) < nth {
        assert!(std::time::Instant::now() < deadline, "no new thread");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

fn count_statuses(tg: &FakeTelegram) -> usize {
    let calls = tg.calls("sendMessage");
    let is_status = |body: &Value| {
        body["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Working · "))
    };
    calls.iter().filter(|call| is_status(&call.body)).count()
}

async fn wait_for_answers(tg: &FakeTelegram, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while tg.texts(ALICE).iter().filter(|(_, t)| t == ANSWER).count() < count {
        assert!(std::time::Instant::now() < deadline, "no answer");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}
