//! What a person does on either platform, written once and run on Telegram and on
//! Discord (`support::platform`): the gateway's `run` against the fake platform, the real
//! codex app-server and the fake model.

use codex_gateway::config::ApprovalPolicy;

use crate::both_platforms;
use crate::support::platform::{Button, FakePlatform};
use crate::support::{COMMAND_MENU, PASTED_CODE, TestEnv};

both_platforms!(
    a_conversation_survives_a_restart,
    pasted_code_reaches_codex_byte_for_byte,
    a_stranger_is_told_their_id_and_reaches_no_model,
    a_model_is_chosen_with_a_button,
    get_sends_a_file_from_the_chats_folder_only,
    approvals_by_button_and_only_by_the_allowed,
    an_approval_button_from_before_a_restart_decides_nothing,
    a_codex_crash_cuts_a_turn_short_and_loses_no_message,
    the_stop_button_stops_a_running_turn,
    notify_chooses_what_buzzes_and_is_kept,
    a_lost_rollout_is_told_and_the_thread_seeded_from_the_transcript,
    a_silent_turn_is_interrupted_at_the_turn_timeout,
    a_turn_past_max_turn_secs_is_interrupted,
    a_long_command_finishes_under_the_default_limits,
);

async fn setup<P: FakePlatform>() -> (TestEnv, P, codex_gateway::config::Config) {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), "puffin-58").unwrap();
    let (platform, config) = P::start(&env).await;
    (env, platform, config)
}

/// The story the project was founded on: what Codex read before a restart is still in
/// its thread after it (one thread in all), and the command menu is registered.
async fn a_conversation_survives_a_restart<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    let gateway = platform.gateway(&config).await;
    platform.send("read file notes.txt");
    platform.said(|t| t.contains("Tool said: puffin-58")).await;
    gateway.stop().await;

    let gateway = platform.gateway(&config).await;
    platform.send("what did you just read?");
    platform
        .said(|t| t.contains("Earlier I read: puffin-58"))
        .await;
    gateway.stop().await;
    let request = env.model.request_for("what did you just read?");
    assert!(
        request
            .tool_outputs()
            .iter()
            .any(|o| o.contains("puffin-58"))
    );
    assert_eq!(env.rollouts().len(), 1, "one thread/start in total");
    assert_eq!(platform.menu(), COMMAND_MENU, "{}", P::NAME);
    assert_eq!(env.codex_processes(), Vec::<u32>::new());
}

/// Newlines, indentation, tabs and repeated spaces reach Codex as they were typed.
async fn pasted_code_reaches_codex_byte_for_byte<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    let gateway = platform.gateway(&config).await;
    platform.send(PASTED_CODE);
    platform.said(|t| t.starts_with("Echo: fix this:")).await;
    gateway.stop().await;
    assert_eq!(env.model.turn_texts(), [PASTED_CODE], "{}", P::NAME);
}

/// A stranger is told their id (for the owner's allowlist) and never reaches Codex.
async fn a_stranger_is_told_their_id_and_reaches_no_model<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    let gateway = platform.gateway(&config).await;
    platform.stranger_writes("read file notes.txt");
    platform
        .told_stranger(|t| t.contains("not allowed") && t.contains("3003"))
        .await;
    platform.send("hello");
    platform.said(|t| t == "Echo: hello").await;
    gateway.stop().await;
    let requests = env.model.requests();
    assert!(
        requests.iter().all(|r| !r.text().contains("notes.txt")),
        "a stranger reached the model on {}",
        P::NAME
    );
}

/// `/model` lists the models as buttons; a stranger's press is refused, Alice's chooses
/// the model her next turn uses.
async fn a_model_is_chosen_with_a_button<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    let gateway = platform.gateway(&config).await;
    platform.send("/model");
    let (listing, _) = platform.said(|t| t.starts_with("Model:")).await;
    let buttons = platform.buttons(listing);
    assert!(buttons.len() > 1, "{buttons:?}");
    let last = buttons.last().unwrap();
    platform.press(true, listing, last);
    platform.press_refused().await;
    platform.press(false, listing, last);
    let chosen = format!("This chat uses {} from the next turn on.", last.label);
    platform.said(|t| t == chosen).await;
    platform.send("with the pressed model");
    platform.said(|t| t == "Echo: with the pressed model").await;
    gateway.stop().await;
    let request = env.model.request_for("with the pressed model");
    assert_eq!(request.body["model"], last.label.as_str());
}

/// `/get` sends a file Codex wrote, read through the app-server, and nothing from
/// outside the chat's folder.
async fn get_sends_a_file_from_the_chats_folder_only<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    std::fs::write(env.dir.path().join("beside.txt"), "not yours").unwrap();
    let gateway = platform.gateway(&config).await;
    platform.send("run: printf 'get-plover-5' > made-by-codex.txt");
    platform.said(|t| t.starts_with("Tool said")).await;
    platform.send("/get made-by-codex.txt");
    let refusals = [
        (
            "/etc/passwd",
            "not allowed: /etc/passwd is outside this chat's folder",
        ),
        (
            "../beside.txt",
            "not allowed: ../beside.txt is outside this chat's folder",
        ),
        (
            "nothing-here.txt",
            "nothing-here.txt does not exist in this chat's folder",
        ),
    ];
    for (path, refusal) in refusals {
        platform.send(&format!("/get {path}"));
        platform.said(|t| t.starts_with(refusal)).await;
    }
    gateway.stop().await;
    let sent = ("made-by-codex.txt".to_owned(), "get-plover-5".to_owned());
    assert_eq!(platform.files(), [sent], "a refused file was sent");
}

/// An approval prompt's buttons: a stranger's press is refused and changes nothing;
/// Alice's Accept runs the command, and the prompt says who decided.
async fn approvals_by_button_and_only_by_the_allowed<P: FakePlatform>() {
    let (env, platform, mut config) = setup::<P>().await;
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let gateway = platform.gateway(&config).await;
    platform.send("run: touch approved.txt");
    let (prompt, _) = platform.said(|t| t.starts_with("Codex asks to run")).await;
    let accept = button(&platform.buttons(prompt), "Accept");
    platform.press(true, prompt, &accept);
    platform.press_refused().await;
    assert!(!env.workspace().join("approved.txt").exists());
    platform.press(false, prompt, &accept);
    platform.said(|t| t.starts_with("Tool said")).await;
    assert!(
        env.workspace().join("approved.txt").exists(),
        "the accepted command did not run"
    );
    let decided = |t: &str| t.contains("touch approved.txt") && t.contains("Accept by");
    platform.said(decided).await;

    // Codex 0.171 offers accept and cancel for a command (and an amendment the bot does
    // not offer): only those are buttons.
    platform.send("run: touch cancelled.txt");
    let (second, _) = platform.said(|t| t.contains("touch cancelled.txt")).await;
    let buttons = platform.buttons(second);
    let labels: Vec<&str> = buttons.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["Accept", "Cancel"]);
    platform.press(false, second, &button(&buttons, "Cancel"));
    platform
        .said(|t| t.contains("touch cancelled.txt") && t.contains("Cancel by"))
        .await;
    // A later press of the first prompt keeps its first answer, and only it.
    platform.press(false, prompt, &accept);
    platform.presses_answered(4).await;
    let shown = platform.shown(prompt);
    assert_eq!(shown.matches("Accept by").count(), 1, "{shown}");
    assert!(!shown.contains("No longer pending"), "{shown}");
    gateway.stop().await;
    assert!(!env.workspace().join("cancelled.txt").exists());
}

/// A prompt a stopping gateway leaves is closed (a line saying so, no buttons); its
/// button pressed after the restart decides nothing.
async fn an_approval_button_from_before_a_restart_decides_nothing<P: FakePlatform>() {
    let (env, platform, mut config) = setup::<P>().await;
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    // The turn waits for a person, so the stop interrupts it when its grace is over: one
    // second instead of 20 keeps the test short (the grace is not what it is about).
    config.server.shutdown_grace_secs = 1;
    let gateway = platform.gateway(&config).await;
    platform.send("run: touch old.txt");
    let (prompt, _) = platform.said(|t| t.contains("touch old.txt")).await;
    let accept = button(&platform.buttons(prompt), "Accept");
    gateway.stop().await;
    let expired = "Expired: the gateway stopped before anyone answered.";
    platform
        .said(|t| t.contains("touch old.txt") && t.ends_with(expired))
        .await;

    let gateway = platform.gateway(&config).await;
    platform.press(false, prompt, &accept);
    platform
        .said(|t| t.contains("touch old.txt") && t.contains("before the gateway restarted"))
        .await;
    gateway.stop().await;
    assert!(!env.workspace().join("old.txt").exists());
}

/// Codex dies under a turn, and again as a message comes: the turn is offered Continue
/// (as after a gateway crash, never "send it again"), the message waits for the restarted
/// Codex and is answered, and the thread keeps its context throughout.
async fn a_codex_crash_cuts_a_turn_short_and_loses_no_message<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    let gateway = platform.gateway(&config).await;
    platform.send("remember the word osprey");
    platform
        .said(|t| t == "Echo: remember the word osprey")
        .await;
    platform.send("slow: a story cut short");
    env.model_asked("slow: a story cut short").await;
    let first = env.kill_codex();
    let (offer, _) = platform
        .said(|t| t.starts_with("Codex restarted while it worked"))
        .await;
    let labels: Vec<String> = platform
        .buttons(offer)
        .into_iter()
        .map(|b| b.label)
        .collect();
    assert_eq!(labels, ["continue"], "{}", P::NAME);

    // The restarted Codex dies again just as the next message comes.
    let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    while env.codex_processes().iter().all(|pid| first.contains(pid)) {
        assert!(
            std::time::Instant::now() < deadline,
            "Codex was not restarted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    env.kill_codex();
    platform.send("what was the word?");
    platform.said(|t| t == "Echo: what was the word?").await;
    gateway.stop().await;
    let request = env.model.request_for("what was the word?");
    assert!(
        request.text().contains("osprey"),
        "context lost on {}",
        P::NAME
    );
    let said = platform.messages();
    assert!(
        !said.iter().any(|(_, t)| t.contains("working directory")),
        "a crash read as a folder error: {said:?}"
    );
}

fn button(buttons: &[Button], label: &str) -> Button {
    let found = buttons.iter().find(|b| b.label == label);
    found
        .unwrap_or_else(|| panic!("no {label} in {buttons:?}"))
        .clone()
}

/// A running turn's status comes without a buzz and with a Stop button: a stranger's
/// press is refused, Alice's stops the turn, and once it is over the button goes and the
/// status is its summary. The answer of the next turn notifies.
async fn the_stop_button_stops_a_running_turn<P: FakePlatform>() {
    let (env, platform, mut config) = setup::<P>().await;
    // The button is under a status message; Telegram's private chats stream a draft with
    // Telegram's own stop instead (telegram.rs), unless drafts are off.
    config.telegram.drafts = false;
    let gateway = platform.gateway(&config).await;
    let story = "a story told slowly, to be stopped";
    platform.send(&format!("slow: {story}"));
    let (status, _) = platform.said(|t| t.starts_with("Working · ")).await;
    assert!(
        platform.is_quiet(status),
        "the status buzzed on {}",
        P::NAME
    );
    let buttons = platform.buttons(status);
    let labels: Vec<&str> = buttons.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["Stop"], "on {}", P::NAME);
    platform.press(true, status, &buttons[0]);
    platform.press_refused().await;
    platform.press(false, status, &buttons[0]);
    platform.said(|t| t == "Stopped.").await;
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !platform.shown(status).starts_with("Ended after") {
        assert!(
            std::time::Instant::now() < deadline,
            "the status never became its summary: {:?}",
            platform.shown(status)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(
        platform.buttons(status).is_empty(),
        "Stop stayed on {}",
        P::NAME
    );
    assert!(
        !platform.messages().iter().any(|(_, t)| t == story),
        "the stopped story was told in full"
    );
    platform.send("after the stop");
    let (answer, _) = platform.said(|t| t == "Echo: after the stop").await;
    assert!(!platform.is_quiet(answer), "the answer came without a buzz");
    gateway.stop().await;
    let request = env.model.request_for("after the stop");
    assert!(
        request.text().contains(story),
        "the thread lost the stopped turn"
    );
}

/// The first of the bot's messages after `after` that `pick` accepts: its id.
async fn said_after<P: FakePlatform>(platform: &P, after: u64, pick: impl Fn(&str) -> bool) -> u64 {
    let deadline = tokio::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    loop {
        let messages = platform.messages();
        if let Some((id, _)) = messages.iter().find(|(id, text)| *id > after && pick(text)) {
            return *id;
        }
        assert!(tokio::time::Instant::now() < deadline, "{messages:#?}");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// `/notify off` silences every message, `/notify all` makes the status buzz too and is
/// kept through a restart, and the listing's button goes back to the default (the
/// answer buzzes, the status does not).
async fn notify_chooses_what_buzzes_and_is_kept<P: FakePlatform>() {
    let (_env, platform, mut config) = setup::<P>().await;
    // The status as a message (a Telegram draft never buzzes).
    config.telegram.drafts = false;
    let name = P::NAME;
    let working = |t: &str| t.starts_with("Working · ");
    let gateway = platform.gateway(&config).await;
    platform.send("/notify off");
    let (chosen, _) = platform.said(|t| t.starts_with("Notifications off")).await;
    platform.send("slow: told under a blanket");
    let status = said_after(&platform, chosen, working).await;
    let (answer, _) = platform.said(|t| t == "told under a blanket").await;
    assert!(platform.is_quiet(status), "status buzzed on {name}");
    assert!(
        platform.is_quiet(answer),
        "answer buzzed with off on {name}"
    );

    platform.send("/notify all");
    platform.said(|t| t.starts_with("Notifications all")).await;
    gateway.stop().await;
    let gateway = platform.gateway(&config).await;
    platform.send("slow: told out loud");
    let status = said_after(&platform, answer, working).await;
    let (answer, _) = platform.said(|t| t == "told out loud").await;
    assert!(
        !platform.is_quiet(status),
        "all, after a restart: status quiet on {name}"
    );
    assert!(!platform.is_quiet(answer), "all: answer quiet on {name}");

    platform.send("/notify");
    let (listing, _) = platform.said(|t| t.starts_with("Notifications: all")).await;
    let buttons = platform.buttons(listing);
    let labels: Vec<&str> = buttons.iter().map(|b| b.label.as_str()).collect();
    assert_eq!(labels, ["all", "important", "off"], "on {name}");
    platform.press(false, listing, &buttons[1]);
    let (chosen, _) = platform
        .said(|t| t.starts_with("Notifications important"))
        .await;
    platform.send("slow: told as usual");
    let status = said_after(&platform, chosen, working).await;
    let (answer, _) = platform.said(|t| t == "told as usual").await;
    gateway.stop().await;
    assert!(
        platform.is_quiet(status),
        "important: status buzzed on {name}"
    );
    assert!(
        !platform.is_quiet(answer),
        "important: answer quiet on {name}"
    );
}

/// The thread's rollout is gone (a cleaned disk, a lost volume): the chat is told, and a
/// fresh thread is seeded from the chat's transcript, so the conversation goes on.
async fn a_lost_rollout_is_told_and_the_thread_seeded_from_the_transcript<P: FakePlatform>() {
    let (env, platform, config) = setup::<P>().await;
    let gateway = platform.gateway(&config).await;
    platform.send("read file notes.txt");
    platform.said(|t| t.contains("Tool said: puffin-58")).await;
    gateway.stop().await;
    for rollout in env.rollouts() {
        std::fs::remove_file(rollout).unwrap();
    }

    let gateway = platform.gateway(&config).await;
    platform.send("what did you just read?");
    platform.said(|t| t.contains("could not be restored")).await;
    // The fake model answers this from tool outputs, which a new thread has none of.
    platform.said(|t| t == "I have not read anything.").await;
    gateway.stop().await;
    let seen = env.model.request_for("what did you just read?").text();
    for said in ["read file notes.txt", "Tool said: puffin-58"] {
        assert!(seen.contains(said), "not seeded with {said:?}: {seen}");
    }
}

/// Codex silent for longer than `turn_timeout_secs` (shortened to 2 s; the next
/// scenario runs at the default): the turn is interrupted, the chat told, and the next
/// message is answered.
async fn a_silent_turn_is_interrupted_at_the_turn_timeout<P: FakePlatform>() {
    let (_env, platform, mut config) = setup::<P>().await;
    config.codex.turn_timeout_secs = 2;
    let gateway = platform.gateway(&config).await;
    platform.send("run: sleep 30");
    platform.said(|t| t.contains("(the turn time limit)")).await;
    platform.send("still there?");
    platform.said(|t| t == "Echo: still there?").await;
    gateway.stop().await;
}

/// A turn running past `max_turn_secs` is interrupted however busy it is.
async fn a_turn_past_max_turn_secs_is_interrupted<P: FakePlatform>() {
    let (_env, platform, mut config) = setup::<P>().await;
    config.codex.max_turn_secs = Some(3);
    let gateway = platform.gateway(&config).await;
    platform.send("run: sleep 30");
    platform
        .said(|t| t.contains("3 seconds (the longest a turn may run)"))
        .await;
    platform.send("still there?");
    platform.said(|t| t == "Echo: still there?").await;
    gateway.stop().await;
}

/// At the default limits (30 minutes of silence, no cap, approvals waited for 10
/// minutes) a command silent for longer than the shortened tests allow runs to its end.
async fn a_long_command_finishes_under_the_default_limits<P: FakePlatform>() {
    let (_env, platform, config) = setup::<P>().await;
    let defaults = codex_gateway::config::Config::default();
    assert_eq!(
        config.codex.turn_timeout_secs,
        defaults.codex.turn_timeout_secs
    );
    assert_eq!(config.codex.max_turn_secs, None);
    let gateway = platform.gateway(&config).await;
    platform.send("run: sleep 6; echo after-six-seconds");
    platform
        .said(|t| t.contains("Tool said: after-six-seconds"))
        .await;
    gateway.stop().await;
}
