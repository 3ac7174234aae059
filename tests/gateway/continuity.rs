//! A chat's Codex thread survives follow-ups, restarts, unloads and app-server crashes;
//! only /new starts over. Real codex app-server, real SQLite, fake model on 127.0.0.1.

use crate::support::{Chat, TestEnv, stored_thread};
use codex_gateway::App;
use store::RetireReason;

const NOTES: &str = "the secret word is pelican-4471";

async fn env_with_notes() -> TestEnv {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), NOTES).unwrap();
    env
}

async fn read_notes(app: &App, chat: &mut Chat) -> String {
    let reply = chat.ask(app, "read file notes.txt").await;
    assert!(reply.contains("pelican-4471"), "first reply: {reply}");
    thread_id(app, chat).await
}

async fn thread_id(app: &App, chat: &Chat) -> String {
    stored_thread(app, chat)
        .await
        .expect("thread id stored after the first turn")
}

/// The follow-up reached the model with the first turn's tool output, on the same thread,
/// and no other thread was ever started for the chat.
async fn assert_context_kept(env: &TestEnv, app: &App, chat: &mut Chat, thread: &str) {
    let reply = chat.ask(app, "what did you just read?").await;
    let request = env.model.request_for("what did you just read?");
    assert!(
        request
            .tool_outputs()
            .iter()
            .any(|o| o.contains("pelican-4471")),
        "the model's request lacks the earlier tool output: {}",
        request.text()
    );
    assert!(reply.contains("pelican-4471"), "reply: {reply}");
    assert_eq!(thread_id(app, chat).await, thread, "thread id changed");
    assert!(
        app.store()
            .thread_history(&chat.key)
            .await
            .unwrap()
            .is_empty()
    );
    let threads_seen: Vec<_> = env.model.requests().iter().map(|r| r.thread_id()).collect();
    assert!(
        threads_seen.iter().all(|t| t.as_deref() == Some(thread)),
        "model requests came from other threads: {threads_seen:?} (stored {thread})"
    );
    // A thread writes its rollout at its first turn: one file means one thread/start.
    assert_eq!(
        env.rollouts().len(),
        1,
        "threads started: {:?}",
        env.rollouts()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_follow_up_keeps_context() {
    let env = env_with_notes().await;
    let app = env.start().await;
    let mut chat = Chat::new("plain");
    let thread = read_notes(&app, &mut chat).await;
    assert_context_kept(&env, &app, &mut chat, &thread).await;
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_restart_resumes_the_thread() {
    let env = env_with_notes().await;
    let app = env.start().await;
    let mut chat = Chat::new("restart");
    let thread = read_notes(&app, &mut chat).await;
    app.shutdown(None).await;

    let app = env.start().await;
    assert_context_kept(&env, &app, &mut chat, &thread).await;
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unloaded_chat_resumes_the_thread() {
    let env = env_with_notes().await;
    let app = env.start().await;
    let mut chat = Chat::new("unload");
    let thread = read_notes(&app, &mut chat).await;
    app.router().unload(&chat.key).await;
    assert_eq!(app.router().active_chats(), 0);
    assert_context_kept(&env, &app, &mut chat, &thread).await;
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_app_server_is_restarted_and_the_thread_resumed() {
    let env = env_with_notes().await;
    let app = env.start().await;
    let mut chat = Chat::new("crash");
    let thread = read_notes(&app, &mut chat).await;
    let before = app.codex().servers().await.remove(0);
    let pid = before.pid().expect("pid");
    let killed = std::process::Command::new("kill")
        .args(["-9", &pid.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    before.exited().await;

    assert_context_kept(&env, &app, &mut chat, &thread).await;
    let after = app.codex().servers().await;
    assert_eq!(after.len(), 1, "exactly one app-server process");
    assert_ne!(after[0].pid(), Some(pid), "a new process serves the chat");
    assert_eq!(app.codex().restarts(), 1);
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_starts_a_fresh_thread_and_keeps_the_old_id() {
    let env = env_with_notes().await;
    let app = env.start().await;
    let mut chat = Chat::new("new");
    let old = read_notes(&app, &mut chat).await;

    chat.send(&app, "/new");
    chat.notice("new conversation").await;
    let reply = chat.ask(&app, "what did you just read?").await;
    assert!(reply.contains("not read anything"), "reply: {reply}");
    let request = env.model.request_for("what did you just read?");
    assert!(
        !request.text().contains("pelican-4471"),
        "old context leaked: {}",
        request.text()
    );

    let new = thread_id(&app, &chat).await;
    assert_ne!(new, old);
    assert_eq!(
        app.store().thread_history(&chat.key).await.unwrap(),
        vec![(old, RetireReason::New)]
    );
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_rollout_starts_a_seeded_thread_and_says_so() {
    let env = env_with_notes().await;
    let app = env.start().await;
    let mut chat = Chat::new("lost");
    let old = read_notes(&app, &mut chat).await;
    app.shutdown(None).await;
    for rollout in env.rollouts() {
        std::fs::remove_file(rollout).unwrap();
    }

    let app = env.start().await;
    // A /compact first finds nothing to compact and must not cost the transcript seed.
    chat.send(&app, "/compact");
    chat.notice("Nothing to compact").await;
    let reply = chat.ask(&app, "what did you just read?").await;
    assert!(
        chat.notices()
            .iter()
            .any(|n| n.contains("could not be restored")),
        "user not told: {:?}",
        chat.seen
    );
    let request = env.model.request_for("what did you just read?");
    let seen = request.text();
    assert!(
        seen.contains("read file notes.txt"),
        "transcript not given: {seen}"
    );
    assert!(
        seen.contains("pelican-4471"),
        "earlier reply not given: {seen}"
    );
    assert!(!reply.is_empty());

    let new = thread_id(&app, &chat).await;
    assert_ne!(new, old);
    assert_eq!(
        app.store().thread_history(&chat.key).await.unwrap(),
        vec![(old, RetireReason::RolloutMissing)]
    );
    // The replacement is resumed like any other thread from now on.
    let again = chat.ask(&app, "hello again").await;
    assert_eq!(again, "Echo: hello again");
    assert_eq!(thread_id(&app, &chat).await, new);
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interleaved_chats_never_see_each_other() {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("a.txt"), "alpha-1111").unwrap();
    std::fs::write(env.workspace().join("b.txt"), "bravo-2222").unwrap();
    let app = env.start().await;
    let (mut a, mut b) = (Chat::new("alice"), Chat::new("bob"));
    a.send(&app, "read file a.txt");
    b.send(&app, "read file b.txt");
    assert!(a.reply().await.contains("alpha-1111"));
    assert!(b.reply().await.contains("bravo-2222"));
    a.send(&app, "what did you just read? (alice)");
    b.send(&app, "what did you just read? (bob)");
    let (ra, rb) = (a.reply().await, b.reply().await);
    assert!(
        ra.contains("alpha-1111") && !ra.contains("bravo"),
        "alice got: {ra}"
    );
    assert!(
        rb.contains("bravo-2222") && !rb.contains("alpha"),
        "bob got: {rb}"
    );
    let seen_by_a = env.model.request_for("(alice)").text();
    let seen_by_b = env.model.request_for("(bob)").text();
    assert!(!seen_by_a.contains("bravo-2222") && !seen_by_b.contains("alpha-1111"));
    assert_ne!(thread_id(&app, &a).await, thread_id(&app, &b).await);
    app.shutdown(None).await;
}

/// A second gateway on the same database would poll the same bots and resume the same
/// threads: it is refused at once, and the database is free again once the first stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_gateway_per_database() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let second = codex_gateway::App::start(&env.config()).await;
    let error = second
        .err()
        .expect("a second gateway started on the same database");
    let expected = format!(
        "another codex-gateway is already running on {}",
        env.database().display()
    );
    assert_eq!(error.to_string(), expected);
    env.shut_down(app).await;
    let again = env.start().await;
    env.shut_down(again).await;
}
