//! Every command of README's table, typed in a chat on each platform: the real app-server,
//! the fake model, the platform's rendering, buttons and the durable inbox on the way.
//! (`/new`, `/stop`, `/model`, `/get`, `/login`, `/logout` and the schedules have their
//! stories elsewhere: `both_platforms`, `commands`, `controls`, `schedule`.)

use crate::both_platforms;
use crate::support::TestEnv;
use crate::support::platform::{FakePlatform, said_times};

both_platforms!(
    name_status_usage_and_threads_show_the_chats_thread,
    undo_fork_and_resume_move_the_thread_and_keep_its_context,
    effort_mode_and_cwd_are_shown_and_chosen,
    queue_and_steer_decide_what_a_message_during_a_turn_does,
    last_continue_and_compact_work_in_the_chat,
    review_posts_codex_findings_like_a_reply,
    a_question_is_answered_with_its_number,
);

async fn setup<P: FakePlatform>(env: &TestEnv) -> (P, codex_gateway::config::Config) {
    std::fs::write(env.workspace().join("notes.txt"), "ibis-77").unwrap();
    P::start(env).await
}

/// The thread id a notice names after `marker` (`/fork`'s "in thread ID,").
fn id_after<'a>(text: &'a str, marker: &str) -> &'a str {
    let rest = &text[text.find(marker).unwrap_or_else(|| panic!("{text}")) + marker.len()..];
    rest.split([' ', ',', ')']).next().unwrap()
}

async fn name_status_usage_and_threads_show_the_chats_thread<P: FakePlatform>() {
    let env = TestEnv::new().await;
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("/name anything");
    platform.said(|t| t.contains("no Codex thread yet")).await;
    platform.send("hello");
    platform.said(|t| t == "Echo: hello").await;
    platform.send("/name Puffin   research");
    platform
        .said(|t| t.contains("is named \"Puffin research\""))
        .await;
    platform.send("/status");
    let (_, status) = platform.said(|t| t.starts_with("Chat: ")).await;
    for line in [
        "Thread name: Puffin research",
        "(live)",
        "Turns: 1",
        "Mode: default",
    ] {
        assert!(status.contains(line), "{line:?} not in {status}");
    }
    platform.send("/usage");
    let (_, usage) = platform.said(|t| t.contains("no rate limits")).await;
    assert!(usage.contains("Context: 110 / "), "{usage}");
    platform.send("/threads");
    let (_, listing) = platform
        .said(|t| t.starts_with("Threads, newest first"))
        .await;
    assert!(listing.contains("Puffin research"), "{listing}");
    platform.send("/threads x");
    platform
        .said(|t| t == "/threads takes a page number, not \"x\".")
        .await;
    gateway.stop().await;
}

async fn undo_fork_and_resume_move_the_thread_and_keep_its_context<P: FakePlatform>() {
    let env = TestEnv::new().await;
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("read file notes.txt");
    platform.said(|t| t == "Tool said: ibis-77").await;
    platform.send("remember the walrus");
    platform.said(|t| t == "Echo: remember the walrus").await;
    platform.send("/undo");
    let (_, undone) = platform
        .said(|t| t.contains("out of Codex's context"))
        .await;
    assert!(undone.contains("remember the walrus") && undone.contains("NOT restored"));
    platform.send("after the undo");
    platform.said(|t| t == "Echo: after the undo").await;
    let request = env.model.request_for("after the undo");
    let original = request.thread_id().unwrap();
    assert!(
        !request
            .human_texts()
            .contains(&"remember the walrus".to_owned())
    );

    platform.send("/fork");
    let (_, forked) = platform.said(|t| t.starts_with("Forked:")).await;
    let fork = id_after(&forked, "in thread ").to_owned();
    assert_ne!(fork, original);
    platform.send("what did you just read?");
    platform.said(|t| t == "Earlier I read: ibis-77").await;
    let on_fork = env.model.request_for("what did you just read?");
    assert_eq!(on_fork.thread_id().as_deref(), Some(fork.as_str()));

    platform.send("/new");
    platform
        .said(|t| t.starts_with("Started a new conversation"))
        .await;
    platform.send("/resume no-such-thread");
    platform
        .said(|t| t == "No thread no-such-thread found; nothing changed.")
        .await;
    // Thread ids begin with their time (UUID v7): a prefix must reach past it.
    platform.send("/threads");
    let (_, listing) = platform
        .said(|t| t.starts_with("Threads, newest first"))
        .await;
    let shown = listing
        .lines()
        .find(|line| original.starts_with(line.split(' ').next().unwrap()));
    let short = shown
        .and_then(|line| line.split(' ').next())
        .expect("the thread is listed");
    assert!(short.len() < original.len(), "{listing}");
    platform.send(&format!("/resume {short}"));
    platform
        .said(|t| t.contains(&format!("continues thread {original}")))
        .await;
    platform.send("what did you just read? again");
    said_times(&platform, 2, |t| t == "Earlier I read: ibis-77").await;
    let resumed = env.model.request_for("what did you just read? again");
    assert_eq!(resumed.thread_id(), Some(original));
    gateway.stop().await;
}

async fn effort_mode_and_cwd_are_shown_and_chosen<P: FakePlatform>() {
    let env = TestEnv::new().await;
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("/effort");
    let (listing, _) = platform.said(|t| t.starts_with("Reasoning effort:")).await;
    let efforts = platform.buttons(listing);
    assert!(!efforts.is_empty(), "no effort buttons");
    let effort = &efforts[0];
    platform.press(false, listing, effort);
    let chosen = format!(
        "This chat uses {} effort from the next turn on.",
        effort.label
    );
    platform.said(|t| t.starts_with(&chosen)).await;
    platform.send("/mode read-only");
    platform
        .said(|t| t.starts_with("This chat runs in mode read-only"))
        .await;
    platform.send("/mode yolo");
    platform
        .said(|t| t.starts_with("There is no mode yolo"))
        .await;
    platform.send("with effort");
    platform.said(|t| t == "Echo: with effort").await;
    let request = env.model.request_for("with effort");
    assert_eq!(request.body["reasoning"]["effort"], effort.label.as_str());
    platform.send("/cwd");
    let (_, folder) = platform.said(|t| t.starts_with("Folder: ")).await;
    assert!(folder.contains("Project roots: none"), "{folder}");
    platform.send("/cwd /etc");
    platform.said(|t| t.contains("no project roots")).await;
    gateway.stop().await;
}

async fn queue_and_steer_decide_what_a_message_during_a_turn_does<P: FakePlatform>() {
    let env = TestEnv::new().await;
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("/queue");
    platform
        .said(|t| t.contains("waits and runs as the next turn"))
        .await;
    platform.send("run: sleep 2; echo queued-turn");
    env.model_asked("run: sleep 2; echo queued-turn").await;
    platform.send("after the sleep");
    platform.said(|t| t.starts_with("Queued")).await;
    platform.said(|t| t == "Tool said: queued-turn").await;
    platform.said(|t| t == "Echo: after the sleep").await;

    platform.send("/steer");
    platform
        .said(|t| t.contains("joins the running turn"))
        .await;
    platform.send("run: sleep 2; echo steered-turn");
    env.model_asked("run: sleep 2; echo steered-turn").await;
    platform.send("also this");
    platform
        .said(|t| t.starts_with("Added to the running turn"))
        .await;
    // The model hears it in the same turn, after the command's output.
    platform.said(|t| t == "Echo: also this").await;
    gateway.stop().await;
    let steered = env.model.request_for("also this");
    let outputs = steered.tool_outputs();
    assert!(
        outputs.iter().any(|o| o.contains("steered-turn")),
        "not heard in the running turn, after its command: {outputs:?}"
    );
}

async fn last_continue_and_compact_work_in_the_chat<P: FakePlatform>() {
    let env = TestEnv::new().await;
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("/last");
    platform
        .said(|t| t == "Codex has not answered in this chat yet.")
        .await;
    platform.send("hello");
    platform.said(|t| t == "Echo: hello").await;
    platform.send("/last");
    said_times(&platform, 2, |t| t == "Echo: hello").await;
    platform.send("/continue go on");
    platform.said(|t| t == "Echo: go on").await;
    platform.send("/continue");
    platform.said(|t| t == "Echo: continue").await;
    platform.send("/compact");
    platform.said(|t| t.starts_with("Compacted")).await;
    assert_eq!(env.model.compactions(), 1);
    gateway.stop().await;
}

async fn review_posts_codex_findings_like_a_reply<P: FakePlatform>() {
    let env = TestEnv::with_brain(crate::controls::reviewing_brain()).await;
    env.uncommitted_change("parser.py", "def parse(x):\n    return eval(x)\n");
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("/review");
    platform
        .said(|t| t.contains("eval on untrusted input"))
        .await;
    platform.send("thanks");
    platform.said(|t| t == "Echo: thanks").await;
    gateway.stop().await;
    let reviewed = env.model.requests().iter().any(|r| {
        let asked = r.last_human_text();
        asked.starts_with("Review the current code changes")
    });
    assert!(reviewed, "Codex's review prompt never reached the model");
}

async fn a_question_is_answered_with_its_number<P: FakePlatform>() {
    let env = TestEnv::with_brain(crate::codex_requests::asking_brain()).await;
    let (platform, config) = setup::<P>(&env).await;
    let gateway = platform.gateway(&config).await;
    platform.send("ask: set up the app");
    platform
        .said(|t| t.starts_with("Codex asks (1 of 2)"))
        .await;
    platform.send("/answer");
    platform
        .said(|t| t.starts_with("Say /answer and your reply"))
        .await;
    platform.send("/answer 2");
    platform
        .said(|t| t.starts_with("Codex asks (2 of 2)"))
        .await;
    platform.send("/answer Puffin Tracker");
    platform.said(|t| t.starts_with("Tool said:")).await;
    gateway.stop().await;
    let requests = env.model.requests();
    let answers = requests.iter().rev().find_map(|r| r.tool_outputs().pop());
    let answers = answers.expect("the answers reached the model");
    assert!(
        answers.contains("Postgres") && answers.contains("Puffin Tracker"),
        "{answers}"
    );
}
