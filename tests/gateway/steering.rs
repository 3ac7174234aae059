//! A message sent while Codex works: by default it joins the running turn (`turn/steer`);
//! where Codex cannot take it, or the chat chose `/queue`, it runs next. Real Codex, fake
//! model.

use std::time::Duration;

use crate::support::{Chat, ModelRequest, Reply, TestEnv};
use chat::OutboundKind;

/// The default script, with a review that streams its findings slowly.
fn slow_reviewer() -> crate::support::Brain {
    let default = crate::support::default_brain();
    std::sync::Arc::new(move |request: &ModelRequest| {
        let text = request.last_human_text();
        if !text.starts_with("Review the current code changes") {
            return default(request);
        }
        let findings = serde_json::json!({
            "findings": [], "overall_correctness": "patch is correct",
            "overall_explanation": "Nothing to fix here at all.",
            "overall_confidence_score": 0.9});
        Reply::Slow {
            text: findings.to_string(),
            chunks: 10,
            delay: Duration::from_millis(400),
        }
    })
}

/// Waits until the running turn has shown streamed text.
async fn streaming(chat: &mut Chat) {
    chat.wait_for(|k| matches!(k, OutboundKind::Status(_)).then_some(()))
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_turn_reaches_the_model_inside_that_turn() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("steer");
    chat.send(&app, "slow: a long first answer that takes a while");
    streaming(&mut chat).await;
    chat.send(&app, "also mention\nthe second thought");
    chat.notice("Added to the running turn").await;
    let reply = chat.reply().await;
    chat.wait_for(|k| matches!(k, OutboundKind::TurnEnded { .. }).then_some(()))
        .await;
    // Codex drops the answer it was streaming and answers again with both messages in
    // view: one turn, one final reply.
    assert_eq!(reply, "Echo: also mention\nthe second thought");
    let steered = env.model.request_for("the second thought");
    let first = env.model.request_for("a long first answer");
    assert!(
        steered
            .human_texts()
            .iter()
            .any(|t| t.contains("a long first answer")),
        "{:?}",
        steered.human_texts()
    );
    let turn_of = |r: &ModelRequest| {
        let meta: serde_json::Value =
            serde_json::from_str(&r.headers["x-codex-turn-metadata"]).unwrap();
        meta["turn_id"].as_str().unwrap().to_owned()
    };
    assert_eq!(
        turn_of(&steered),
        turn_of(&first),
        "the steer ran a turn of its own"
    );
    // The next message is an ordinary turn on the same thread.
    assert_eq!(chat.ask(&app, "after").await, "Echo: after");
    assert_eq!(chat.replies().len(), 2, "{:?}", chat.seen);
    assert!(!chat.notices().iter().any(|n| n.starts_with("Queued")));
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_steer_codex_refuses_runs_next() {
    let env = TestEnv::with_brain(slow_reviewer()).await;
    env.uncommitted_change("a.py", "print('hi')\n");
    let app = env.start().await;
    let mut chat = Chat::new("review-steer");
    chat.send(&app, "/review");
    // A review streams no text: wait until its findings are being written (4 s).
    env.model_asked_for("the review", |r| {
        r.last_human_text()
            .starts_with("Review the current code changes")
    })
    .await;
    chat.send(&app, "while reviewing");
    chat.notice("runs next").await;
    let findings = chat.reply().await;
    assert_eq!(findings, "Nothing to fix here at all.");
    assert_eq!(chat.reply().await, "Echo: while reviewing");
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_makes_messages_wait_and_is_kept_across_restarts() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("queueing");
    chat.send(&app, "/queue");
    chat.notice("waits and runs as the next turn").await;
    env.shut_down(app).await;

    let app = env.start().await;
    chat.send(&app, "slow: first answer");
    streaming(&mut chat).await;
    chat.send(&app, "second");
    chat.notice("Queued").await;
    assert_eq!(chat.reply().await, "first answer");
    assert_eq!(chat.reply().await, "Echo: second");
    assert_eq!(env.model.request_for("second").last_human_text(), "second");

    chat.send(&app, "/status");
    chat.notice("Messages sent while Codex works: wait for the running turn")
        .await;
    chat.send(&app, "/steer");
    chat.notice("joins the running turn").await;
    chat.send(&app, "slow: third answer");
    streaming(&mut chat).await;
    chat.send(&app, "fourth");
    chat.notice("Added to the running turn").await;
    assert_eq!(chat.reply().await, "Echo: fourth");
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_during_a_compaction_runs_after_it() {
    let default = crate::support::default_brain();
    let env = TestEnv::with_brain(std::sync::Arc::new(
        move |request: &ModelRequest| match request.is_compaction() {
            true => Reply::Slow {
                text: "SUMMARY: the conversation so far, compacted.".into(),
                chunks: 10,
                delay: Duration::from_millis(300),
            },
            false => default(request),
        },
    ))
    .await;
    let app = env.start().await;
    let mut chat = Chat::new("compact-steer");
    chat.ask(&app, "remember the word heron").await;
    chat.send(&app, "/compact");
    // The summary is being written (3 s).
    env.model_asked_for("the summary", ModelRequest::is_compaction)
        .await;
    chat.send(&app, "after the summary");
    // Steered, refused and run next; or queued when it came before the gateway heard the
    // compaction's turn start (the model may be asked before that notification arrives).
    chat.wait_for(|kind| match kind {
        OutboundKind::Notice(text) if text.contains("runs next") || text.starts_with("Queued") => {
            Some(())
        }
        _ => None,
    })
    .await;
    chat.notice("Compacted").await;
    assert_eq!(chat.reply().await, "Echo: after the summary");
    let request = env.model.request_for("after the summary");
    assert!(request.text().contains("SUMMARY: the conversation so far"));
    env.shut_down(app).await;
}
