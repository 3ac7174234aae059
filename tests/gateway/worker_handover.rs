//! What the pinned app-server does with a running turn whose WebSocket client goes away
//! and a new client that comes back (as a gateway restart does to a remote worker),
//! measured over a real WebSocket to a real worker and the fake model.

use std::time::{Duration, Instant};

use crate::support::telegram::FakeTelegram;
use crate::support::workers::Worker;
use crate::support::ws_client::Client;
use crate::support::{Gateway, TestEnv};
use serde_json::json;

const TOKEN: &str = "handover-token";

/// Measured with codex 0.171.0: a turn keeps running when its only client disconnects; a
/// client that resumes the thread mid-turn is told the rest of the turn live (its command
/// ending, the answer, `turn/completed`), and one that comes after the end reads the
/// answer back with `thread/turns/list`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_turn_outlives_its_websocket_client() {
    let env = TestEnv::new().await;
    let worker = Worker::start(&env, "handover", TOKEN).await;
    let cwd = env.workspace().display().to_string();

    // The first client starts a turn that runs a 4 s command, then goes away.
    let mut first = Client::connect(&worker.url(), TOKEN).await;
    let turn = json!({});
    let thread_id = first
        .start_turn(&cwd, "run: sleep 4; echo handed-over", turn)
        .await;
    first.until("item/started", Duration::from_secs(30)).await;
    let left = Instant::now();
    first.socket.close(None).await.unwrap();
    drop(first);

    // A second client comes back a second later, while the 4 s command still runs (a
    // moment of the story, not a wait for an effect), and resumes the thread.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let mut second = Client::connect(&worker.url(), TOKEN).await;
    let resumed = second
        .call("thread/resume", json!({"threadId": thread_id}))
        .await;
    assert!(resumed.get("error").is_none(), "{resumed}");
    let status = &resumed["result"]["thread"]["status"];
    let completed = second
        .until("turn/completed", Duration::from_secs(30))
        .await
        .expect("the resumed client hears the turn end");
    assert!(
        left.elapsed() >= Duration::from_secs(3),
        "the turn was cut short"
    );
    assert_eq!(completed["turn"]["status"], "completed", "{completed}");
    let answered = second.seen.iter().any(|(_, method, params)| {
        method == "item/completed" && params["item"]["text"] == "Tool said: handed-over"
    });
    assert!(
        answered,
        "no answer to the resumed client; status at resume: {status}"
    );
    drop(second);

    // A third client, after the end, reads the answer back.
    let mut third = Client::connect(&worker.url(), TOKEN).await;
    let turns = third
        .call("thread/turns/list", json!({"threadId": thread_id}))
        .await;
    let turns = turns["result"].to_string();
    assert!(turns.contains("Tool said: handed-over"), "{turns}");
}

/// The gateway restarts (as a deploy does) while a turn runs on its worker and a message
/// waits behind it: the turn goes on on the worker, the next start follows it and
/// delivers its answer, then runs the queued message; each once. A turn that ends while
/// the gateway is away is read back from the thread and delivered once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_on_a_worker_survives_a_gateway_restart() {
    const ALICE: i64 = 1001;
    let env = TestEnv::new().await;
    let worker = Worker::start(&env, "w1", "token-w1").await;
    let tg = FakeTelegram::start().await;
    let mut config = crate::support::workers::workers_only(&env, &[&worker]);
    config.telegram = env.telegram_config(&tg, ALICE).telegram;
    config.server.shutdown_grace_secs = 1;
    let count = |text: &str| tg.texts(ALICE).iter().filter(|(_, t)| t == text).count();

    // Restarted while the command runs: followed again, answered once.
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "/queue");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("From now on, a message sent while Codex works waits")
    })
    .await;
    tg.dm(ALICE, "run: sleep 6; echo handed-over");
    tg.wait_for_status(ALICE, |t| t.contains("running: sleep 6"))
        .await;
    tg.dm(ALICE, "after the job");
    tg.wait_for_text(ALICE, |t| t.starts_with("Queued: ")).await;
    gateway.stop().await;
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("The gateway is restarting. Codex goes on with this on the worker w1")
    })
    .await;
    let gateway = Gateway::start(&config);
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("The gateway is back, and Codex is still working")
    })
    .await;
    let (answer, _) = tg
        .wait_for_text(ALICE, |t| t == "Tool said: handed-over")
        .await;
    let (queued, _) = tg
        .wait_for_text(ALICE, |t| t == "Echo: after the job")
        .await;
    assert!(
        answer < queued,
        "the queued message ran before the handed-over turn ended"
    );

    // Restarted, and the turn ends while the gateway is away: read back.
    tg.dm(ALICE, "run: sleep 2; echo while-away");
    tg.wait_for_status(ALICE, |t| t.contains("running: sleep 2"))
        .await;
    gateway.stop().await;
    // The command's output reaches the model, whose answer ends the turn.
    env.model_asked_for("the command's output", |r| {
        r.tool_outputs().iter().any(|o| o.contains("while-away"))
    })
    .await;
    let gateway = Gateway::start(&config);
    tg.wait_for_text(ALICE, |t| t == "Tool said: while-away")
        .await;
    tg.dm(ALICE, "anything else?");
    tg.wait_for_text(ALICE, |t| t == "Echo: anything else?")
        .await;
    gateway.stop().await;

    assert_eq!(count("Tool said: handed-over"), 1);
    assert_eq!(count("Echo: after the job"), 1);
    assert_eq!(count("Tool said: while-away"), 1);
    let interrupted = tg.texts(ALICE);
    let interrupted = interrupted
        .iter()
        .filter(|(_, t)| t.contains("interrupted") || t.starts_with("The gateway went away"));
    assert_eq!(interrupted.count(), 0, "a turn on the worker was cut");
    let jobs = env.model.turn_requests();
    let job_turns = jobs
        .iter()
        .filter(|r| r.last_human_text().starts_with("run: sleep 6") && r.starts_turn());
    assert_eq!(job_turns.count(), 1, "the handed-over turn ran twice");
}

/// Measured with codex 0.171.0: an approval a turn asked of a client that went away is
/// asked again of the client that resumes the thread (the same request id), and the
/// thread's status at resume says it waits on it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_asked_while_away_is_asked_again_on_resume() {
    let env = TestEnv::new().await;
    let worker = Worker::start(&env, "approve", TOKEN).await;
    let cwd = env.workspace().display().to_string();
    let mut first = Client::connect(&worker.url(), TOKEN).await;
    // Commands need approval, and a write cannot pass the sandbox unasked.
    let turn = json!({"approvalPolicy": "untrusted", "sandboxPolicy": {"type": "readOnly"}});
    let thread_id = first
        .start_turn(&cwd, "run: touch approved.txt", turn)
        .await;
    let asked = first.server_request().await.expect("an approval request");
    first.socket.close(None).await.unwrap();
    drop(first);

    let mut second = Client::connect(&worker.url(), TOKEN).await;
    let resumed = second
        .call("thread/resume", json!({"threadId": thread_id}))
        .await;
    let status = &resumed["result"]["thread"]["status"];
    assert_eq!(
        status["activeFlags"],
        json!(["waitingOnApproval"]),
        "{status}"
    );
    let again = second.server_request().await.expect("asked again");
    assert_eq!(again["method"], asked["method"]);
    assert_eq!(again["params"]["command"], asked["params"]["command"]);
}

/// Through the gateway: an approval card shown before a restart is shown again after it
/// (the turn was handed over on its worker), and pressing it lets the command run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_pending_at_a_restart_is_asked_again_and_answered() {
    const ALICE: i64 = 1001;
    let env = TestEnv::new().await;
    let worker = Worker::start(&env, "w1", "token-w1").await;
    let tg = FakeTelegram::start().await;
    let mut config = crate::support::workers::workers_only(&env, &[&worker]);
    config.telegram = env.telegram_config(&tg, ALICE).telegram;
    config.codex.approval_policy = codex_gateway::config::ApprovalPolicy::Untrusted;
    config.server.shutdown_grace_secs = 1;
    let asks = |tg: &FakeTelegram| {
        let texts = tg.texts(ALICE);
        let asks: Vec<i64> = texts
            .iter()
            .filter(|(_, t)| t.starts_with("Codex asks to run"))
            .map(|(id, _)| *id)
            .collect();
        asks
    };
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "run: touch approved.txt");
    tg.wait_for_text(ALICE, |t| t.starts_with("Codex asks to run"))
        .await;
    gateway.stop().await;
    let gateway = Gateway::start(&config);
    let deadline = Instant::now() + crate::support::ANSWER_TIMEOUT;
    while asks(&tg).len() < 2 {
        assert!(
            Instant::now() < deadline,
            "the approval was not asked again"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let prompt = asks(&tg)[1];
    let cards = tg
        .wait_for_calls("sendMessage", 2, |b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Codex asks"))
                && b["reply_markup"].to_string().contains("Accept")
        })
        .await;
    let accept = cards[1].body["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
        .as_str()
        .unwrap()
        .to_owned();
    tg.press(ALICE, ALICE, prompt, &accept);
    tg.wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    gateway.stop().await;
}
