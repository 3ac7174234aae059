//! Hygiene never costs a conversation: native mode skips, gateway mode compacts the same
//! thread (and backs off after a failure), memory bounds unload losslessly, and no
//! app-server outlives the gateway. Real codex app-server, fake model.

use std::sync::Arc;
use std::time::Duration;

use crate::support::{Chat, Reply, TestEnv, default_brain, stored_thread};
use codex_gateway::App;
use codex_gateway::config::{CompactionMode, Config};

/// Past 85% of the 258,400-token window codex reports for the fake model.
const NEARLY_FULL: i64 = 230_000;

async fn start(config: &Config) -> App {
    App::start(config).await.expect("app starts")
}

/// The other gateway's logged failure, replayed: usage passes the threshold over many
/// turns; with native compaction hygiene skips and the thread and its context stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn native_mode_never_replaces_a_full_thread() {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), "native-ibis-31").unwrap();
    let app = start(&env.config()).await;
    let mut chat = Chat::new("native");
    chat.ask(&app, "read file notes.txt").await;
    let thread = stored_thread(&app, &chat).await;
    for (i, tokens) in [120_000, 200_000, NEARLY_FULL, NEARLY_FULL + 10_000]
        .into_iter()
        .enumerate()
    {
        env.model.set_input_tokens(tokens);
        chat.ask(&app, &format!("turn {i}")).await;
    }
    let status = {
        chat.send(&app, "/status");
        chat.notice("Context:").await
    };
    assert!(
        status.contains("(92%)"),
        "usage not shown as percent: {status}"
    );

    chat.ask(&app, "what did you just read?").await;
    let request = env.model.request_for("what did you just read?");
    assert!(
        request
            .tool_outputs()
            .iter()
            .any(|o| o.contains("native-ibis-31")),
        "first turn's tool output lost: {}",
        request.text()
    );
    assert_eq!(stored_thread(&app, &chat).await, thread);
    assert!(
        env.model.requests().iter().all(|r| !r.is_compaction()),
        "the gateway compacted"
    );
    assert!(
        app.store()
            .thread_history(&chat.key)
            .await
            .unwrap()
            .is_empty()
    );
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_mode_compacts_the_same_thread_once() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.hygiene.compaction = CompactionMode::Gateway;
    let app = start(&config).await;
    let mut chat = Chat::new("gateway");
    chat.ask(&app, "first words").await;
    let thread = stored_thread(&app, &chat).await;

    env.model.set_input_tokens(NEARLY_FULL);
    chat.ask(&app, "this fills the context").await;
    // Hygiene compacts after that turn; the next message waits behind it in the queue.
    env.model.set_input_tokens(1_000);
    chat.ask(&app, "after compaction").await;
    chat.ask(&app, "one more").await;

    let compactions = env.model.compactions();
    assert_eq!(compactions, 1);
    let request = env.model.request_for("after compaction");
    assert!(
        request.text().contains("SUMMARY: the conversation so far"),
        "{}",
        request.text()
    );
    assert_eq!(
        stored_thread(&app, &chat).await,
        thread,
        "hygiene replaced the thread"
    );
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_compaction_leaves_the_thread_and_is_not_retried_next_turn() {
    let brain = default_brain();
    let env = TestEnv::with_brain(Arc::new(move |request| {
        if request.is_compaction() {
            Reply::Fail(500)
        } else {
            brain(request)
        }
    }))
    .await;
    let mut config = env.config();
    config.hygiene.compaction = CompactionMode::Gateway;
    let app = start(&config).await;
    let mut chat = Chat::new("failing");
    env.model.set_input_tokens(NEARLY_FULL);
    chat.ask(&app, "remember the word plover").await;
    let thread = stored_thread(&app, &chat).await;
    chat.ask(&app, "second turn").await;
    chat.ask(&app, "third turn").await;

    let compactions = env.model.compactions();
    assert_eq!(compactions, 1, "a failed compaction was retried at once");
    assert!(
        env.model
            .request_for("third turn")
            .text()
            .contains("plover")
    );
    assert_eq!(stored_thread(&app, &chat).await, thread);
    assert!(
        !chat.notices().iter().any(|n| n.contains("failed")),
        "{:?}",
        chat.seen
    );
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_chats_with_two_live_threads_keep_their_context() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.hygiene.max_live_threads = 2;
    let app = start(&config).await;
    let mut chats: Vec<Chat> = (0..5).map(|i| Chat::new(&format!("rr{i}"))).collect();
    let mut max_held = 0;
    for round in 0..3 {
        for (i, chat) in chats.iter_mut().enumerate() {
            let text = if round == 0 {
                format!("remember the word w{i}x{i}")
            } else {
                format!("round {round}: which word, chat {i}?")
            };
            chat.ask(&app, &text).await;
            let servers = app.codex().servers().await;
            assert_eq!(servers.len(), 1, "exactly one app-server process");
            assert!(app.router().active_chats() <= 2);
            max_held = max_held.max(servers[0].subscriptions());
        }
    }
    // Codex unloads a thread some time after its last subscriber left (not at once), so
    // the bound is on the threads the gateway holds.
    assert!(max_held <= 2, "{max_held} threads held at once");
    for (i, chat) in chats.iter().enumerate() {
        let request = env
            .model
            .request_for(&format!("round 2: which word, chat {i}?"));
        let text = request.text();
        assert!(
            text.contains(&format!("w{i}x{i}")),
            "chat {i} lost its context"
        );
        for other in (0..5).filter(|o| *o != i) {
            assert!(
                !text.contains(&format!("w{other}x{other}")),
                "chat {i} saw chat {other}"
            );
        }
        assert!(
            app.store()
                .thread_history(&chat.key)
                .await
                .unwrap()
                .is_empty()
        );
    }
    assert_eq!(env.rollouts().len(), 5, "one thread per chat");
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_chat_is_unloaded_and_resumed() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.hygiene.idle_unload_secs = 1;
    let app = start(&config).await;
    let mut chat = Chat::new("idle");
    chat.ask(&app, "remember the word curlew").await;
    let thread = stored_thread(&app, &chat).await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while app.router().active_chats() > 0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "idle chat never unloaded"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    chat.ask(&app, "which word?").await;
    assert!(
        env.model
            .request_for("which word?")
            .text()
            .contains("curlew")
    );
    assert_eq!(stored_thread(&app, &chat).await, thread);
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pool_processes_serve_chats_and_none_outlives_it() {
    let env = TestEnv::new().await;
    let mut config = env.config();
    config.codex.processes = 2;
    let app = start(&config).await;
    assert_eq!(app.codex().servers().await.len(), 2);
    assert_eq!(env.codex_processes().len(), 2);
    let mut chats: Vec<Chat> = (0..4).map(|i| Chat::new(&format!("pool{i}"))).collect();
    for (i, chat) in chats.iter_mut().enumerate() {
        assert_eq!(
            chat.ask(&app, &format!("hello {i}")).await,
            format!("Echo: hello {i}")
        );
    }
    chats[0].send(&app, "/new");
    chats[0].notice("new conversation").await;
    app.router().unload(&chats[1].key).await;
    assert_eq!(
        env.codex_processes().len(),
        2,
        "/new or unload changed the process count"
    );
    env.shut_down(app).await;
}
