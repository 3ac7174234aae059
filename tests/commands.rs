//! Commands and turn control: /stop, /compact, /status, queued messages, approvals,
//! the turn time limit and an app-server crash in the middle of a turn.

mod support;

use codex_gateway::chat::{Decision, OutboundKind};
use codex_gateway::config::ApprovalPolicy;
use support::{Chat, TestEnv, stored_thread};

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
    let app = env.start().await;
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
    assert!(
        app.router()
            .decide_approval(prompt.id, Decision::Accept)
            .await
    );
    chat.reply().await;
    assert!(
        env.workspace().join("accepted.txt").exists(),
        "accepted command did not run"
    );
    // A second answer to the same prompt changes nothing.
    assert!(
        !app.router()
            .decide_approval(prompt.id, Decision::Decline)
            .await
    );

    chat.send(&app, "run: touch declined.txt");
    let prompt = chat.approval().await;
    assert!(
        app.router()
            .decide_approval(prompt.id, Decision::Decline)
            .await
    );
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
    config.codex.turn_timeout_secs = 1;
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("timeout");
    chat.send(&app, "slow: this takes five seconds to stream");
    let notice = chat.notice("turn time limit").await;
    assert!(notice.contains("1 second"), "{notice}");
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
    chat.notice("Codex restarted; your last request was interrupted")
        .await;

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
