//! Commands and turn control: /stop, /compact, /status, queued messages, approvals,
//! the turn time limit and an app-server crash in the middle of a turn.

use crate::support::{Chat, TestEnv, stored_thread};
use chat::{Decision, OutboundKind};
use codex_gateway::config::ApprovalPolicy;
use codex_gateway::router::{Answer, ApprovalOutcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stop_interrupts_the_running_turn() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("stop");
    chat.send(
        &app,
        "slow: a long story that should never finish being told",
    );
    chat.send(&app, "/stop");
    chat.notice("Stopped.").await;
    assert!(
        !chat
            .seen
            .iter()
            .any(|k| matches!(k, OutboundKind::Reply(_))),
        "the stopped turn still delivered a reply: {:?}",
        chat.seen
    );
    let thread = stored_thread(&app, &chat).await.expect("thread stored");
    assert_eq!(chat.ask(&app, "after stop").await, "Echo: after stop");
    assert_eq!(stored_thread(&app, &chat).await, Some(thread));
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_during_a_turn_are_queued_in_order() {
    let env = TestEnv::new().await;
    let app = env.start_queueing().await;
    let mut chat = Chat::new("queue");
    chat.send(&app, "slow: first answer");
    chat.send(&app, "second");
    chat.send(&app, "third");
    assert_eq!(chat.reply().await, "first answer");
    assert_eq!(chat.reply().await, "Echo: second");
    assert_eq!(chat.reply().await, "Echo: third");
    assert_eq!(
        chat.notices()
            .iter()
            .filter(|n| n.starts_with("Queued"))
            .count(),
        2
    );
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_keeps_the_thread_and_the_model_gets_the_summary() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("compact");
    chat.send(&app, "/compact");
    chat.notice("Nothing to compact yet").await;

    chat.ask(&app, "remember the word kestrel").await;
    let thread = stored_thread(&app, &chat).await;
    chat.send(&app, "/compact");
    chat.notice("Compacted").await;
    assert_eq!(env.model.compactions(), 1);

    chat.ask(&app, "after compaction").await;
    let request = env.model.request_for("after compaction");
    assert!(
        request.text().contains("SUMMARY: the conversation so far"),
        "{}",
        request.text()
    );
    assert_eq!(
        stored_thread(&app, &chat).await,
        thread,
        "compaction replaced the thread"
    );
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_requests_are_declined_and_the_chat_is_told() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("approve");
    chat.send(&app, "run: touch created-by-codex.txt");
    let notice = chat.notice("asked for approval").await;
    assert!(notice.contains("touch created-by-codex.txt"), "{notice}");
    let reply = chat.reply().await;
    assert!(reply.starts_with("Tool said:"), "{reply}");
    assert!(!env.workspace().join("created-by-codex.txt").exists());
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_prompts_are_answered_by_a_person_or_time_out() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    config.codex.approval_timeout_secs = 2;
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("approver");
    chat.can_approve = true;

    chat.send(&app, "run: touch accepted.txt");
    let prompt = chat.approval().await;
    assert!(
        prompt
            .command
            .as_deref()
            .unwrap_or_default()
            .contains("touch accepted.txt")
    );
    let decided = chat.decide(&app, prompt.id, Decision::Accept).await;
    assert_eq!(decided, ApprovalOutcome::Decided);
    chat.reply().await;
    assert!(
        env.workspace().join("accepted.txt").exists(),
        "accepted command did not run"
    );
    // A second answer to the same prompt changes nothing: the first one stands.
    let first = Answer {
        decision: Decision::Accept,
        by: "tester".into(),
        at: 1_000,
    };
    assert_eq!(
        chat.decide(&app, prompt.id, Decision::Decline).await,
        ApprovalOutcome::AnsweredBefore(first)
    );

    chat.send(&app, "run: touch declined.txt");
    let prompt = chat.approval().await;
    let decided = chat.decide(&app, prompt.id, Decision::Decline).await;
    assert_eq!(decided, ApprovalOutcome::Decided);
    chat.reply().await;
    assert!(!env.workspace().join("declined.txt").exists());

    chat.send(&app, "run: touch ignored.txt");
    chat.approval().await;
    chat.notice("Nobody answered the approval request in time")
        .await;
    chat.reply().await;
    assert!(!env.workspace().join("ignored.txt").exists());
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn turn_time_limit_interrupts_and_the_chat_goes_on() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.codex.turn_timeout_secs = 2;
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("timeout");
    // Busy for five seconds, never silent for two: not cut.
    let answer = "this takes five seconds to stream";
    assert_eq!(chat.ask(&app, &format!("slow: {answer}")).await, answer);
    // Silent for six seconds (a command with no output): cut at two.
    chat.send(&app, "run: sleep 6");
    let notice = chat.notice("turn time limit").await;
    assert!(
        notice.contains("silent on this turn for 2 seconds"),
        "{notice}"
    );
    assert_eq!(chat.ask(&app, "still there?").await, "Echo: still there?");
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn app_server_crash_mid_turn_is_reported_and_the_thread_continues() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("crash-mid-turn");
    chat.ask(&app, "remember the word osprey").await;
    let thread = stored_thread(&app, &chat).await;

    chat.send(&app, "slow: a story cut short");
    // Wait until the slow answer is being streamed, then kill the process under it.
    while !env
        .model
        .requests()
        .iter()
        .any(|r| r.last_human_text().starts_with("slow:"))
    {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let server = app.codex().servers().await.remove(0);
    std::process::Command::new("kill")
        .args(["-9", &server.pid().unwrap().to_string()])
        .status()
        .unwrap();
    // Cut short as by a gateway crash: a Continue button, not "send it again".
    let offered = chat
        .wait_for(|kind| match kind {
            OutboundKind::Choices { text, command, .. } if text.contains("Codex restarted") => {
                Some(*command)
            }
            _ => None,
        })
        .await;
    assert_eq!(offered, "continue");

    chat.ask(&app, "what was the word?").await;
    let request = env.model.request_for("what was the word?");
    assert!(
        request.text().contains("osprey"),
        "context lost: {}",
        request.text()
    );
    assert_eq!(stored_thread(&app, &chat).await, thread);
    app.shutdown(None).await;
}

/// At `max_live_threads = 1` another chat's message must not unload a chat that is busy:
/// its approval buttons and `/stop` keep working.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_chat_is_never_unloaded() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    config.hygiene.max_live_threads = 1;
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut busy = Chat::new("busy");
    busy.can_approve = true;
    busy.send(&app, "run: touch approved-while-others-wrote.txt");
    let prompt = busy.approval().await;
    let mut other = Chat::new("other");
    assert_eq!(other.ask(&app, "hello").await, "Echo: hello");
    assert_eq!(
        busy.decide(&app, prompt.id, Decision::Accept).await,
        ApprovalOutcome::Decided,
        "the busy chat's approval was dropped"
    );
    busy.reply().await;
    assert!(
        env.workspace()
            .join("approved-while-others-wrote.txt")
            .exists()
    );

    busy.send(
        &app,
        "slow: a story long enough to be stopped halfway through",
    );
    busy.wait_for(|k| matches!(k, OutboundKind::Status(_)).then_some(()))
        .await;
    assert_eq!(other.ask(&app, "hello again").await, "Echo: hello again");
    busy.send(&app, "/stop");
    busy.notice("Stopped.").await;
    // Idle again: the router comes back under its limit.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while app.router().active_chats() > 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the limit was not restored"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    app.shutdown(None).await;
}

/// Once `turn/start` succeeded the turn runs in Codex: a failed database write must not
/// hide it (nor make a retry run it twice).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_started_turn_is_delivered_even_if_the_database_fails() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("store-fails");
    assert_eq!(chat.ask(&app, "first").await, "Echo: first");
    let database = sqlx::SqlitePool::connect(&format!("sqlite://{}", env.database().display()))
        .await
        .unwrap();
    // The answer goes out before its turn is written: wait for the write.
    let written = "SELECT COUNT(*) FROM transcript WHERE text = 'Echo: first'";
    while sqlx::query_scalar::<_, i64>(written)
        .fetch_one(&database)
        .await
        .unwrap()
        == 0
    {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sqlx::query("ALTER TABLE transcript RENAME TO transcript_away")
        .execute(&database)
        .await
        .unwrap();
    chat.send(&app, "slow: delivered despite the database");
    while env.model.requests().len() < 2 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    sqlx::query("ALTER TABLE transcript_away RENAME TO transcript")
        .execute(&database)
        .await
        .unwrap();
    assert_eq!(chat.reply().await, "delivered despite the database");
    assert!(
        chat.notices().iter().all(|n| !n.contains("database")),
        "{:?}",
        chat.notices()
    );
    app.shutdown(None).await;
    let texts: Vec<String> = sqlx::query_scalar("SELECT text FROM transcript ORDER BY id")
        .fetch_all(&database)
        .await
        .unwrap();
    assert_eq!(
        texts,
        [
            "first",
            "Echo: first",
            "slow: delivered despite the database",
            "delivered despite the database"
        ],
        "the write was not retried after the turn"
    );
    assert_eq!(env.model.turn_requests().len(), 2, "the turn ran twice");
}

/// A chat's queue is bounded: past `max_queued_messages` (20) the sender is told, and the
/// queued ones still run in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_queue_refuses_more_and_says_so() {
    let env = TestEnv::new().await;
    let app = env.start_queueing().await;
    let mut chat = Chat::new("flooded");
    chat.send(&app, "slow: a turn that the queue waits for");
    chat.wait_for(|k| matches!(k, OutboundKind::Status(_)).then_some(()))
        .await;
    for i in 0..25 {
        chat.send(&app, &format!("queued {i}"));
    }
    assert_eq!(chat.reply().await, "a turn that the queue waits for");
    for i in 0..20 {
        assert_eq!(chat.reply().await, format!("Echo: queued {i}"));
    }
    app.shutdown(None).await;
    let notices = chat.notices();
    let count = |part: &str| notices.iter().filter(|n| n.contains(part)).count();
    assert_eq!(count("Queued"), 20, "{notices:?}");
    assert_eq!(count("The queue is full (20"), 5, "{notices:?}");
    assert!(
        env.model
            .requests()
            .iter()
            .all(|r| !r.text().contains("queued 20"))
    );
}
