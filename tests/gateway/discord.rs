//! Discord end to end: the gateway's `run` against a fake Discord (REST + WebSocket
//! gateway) on 127.0.0.1, the real codex app-server and the fake model.

use std::sync::Arc;
use std::time::Duration;

use crate::support::discord::{
    self, APP_ID, BOT_ID, BOT_ROLE, DEVS_ROLE, FAULT_RETRY_AFTER, FakeDiscord,
};
use crate::support::model::{Reply, default_brain};
use crate::support::rate_limits;
use crate::support::{Gateway, PASTED_CODE, TestEnv, secret};
use codex_gateway::config::{ApprovalPolicy, Config};

const ALICE: u64 = 1001;
const MALLORY: u64 = 2002;
const CHANNEL: u64 = 600;
const LISTED: u64 = 700;
const THREAD: u64 = 701;
const ALICE_DM: u64 = 800;

fn mention(text: &str) -> String {
    format!("<@{BOT_ID}> {text}")
}

async fn setup() -> (TestEnv, FakeDiscord, Config) {
    setup_in(TestEnv::new().await).await
}

async fn setup_in(env: TestEnv) -> (TestEnv, FakeDiscord, Config) {
    std::fs::write(env.workspace().join("notes.txt"), "discord-gannet-72").unwrap();
    let discord = FakeDiscord::start().await;
    let mut config = env.config();
    config.discord.enabled = true;
    config.discord.token = Some(secret(crate::support::discord::TOKEN));
    config.discord.application_id = Some(APP_ID);
    discord.configure(&mut config.discord);
    config.discord.allowed_users = vec![ALICE];
    config.discord.channels = vec![LISTED];
    (env, discord, config)
}

async fn start(discord: &FakeDiscord, config: &Config) -> Gateway {
    let connections = discord.identifies() + discord.resumes();
    let gateway = Gateway::start(config);
    discord.wait_connected(connections + 1).await;
    gateway
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slash_commands_offer_their_argument_and_a_turn_shows_typing() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("read file notes.txt"));
    dc.wait_for_content(CHANNEL, |t| t.contains("Tool said: discord-gannet-72"))
        .await;
    gateway.stop().await;
    assert!(
        !dc.calls("POST", "/typing").is_empty(),
        "no typing indicator"
    );
    let commands = dc.calls("PUT", &format!("/applications/{APP_ID}/commands"));
    let commands = commands[0].body.as_array().unwrap().clone();
    // A command that takes an argument offers it as an optional string option.
    let model = commands.iter().find(|c| c["name"] == "model").unwrap();
    assert_eq!(model["options"][0]["name"], "name");
    assert_eq!(model["options"][0]["type"], 3);
    assert_eq!(model["options"][0]["required"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_slash_command_is_deferred_answered_and_starts_over() {
    let (env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("read file notes.txt"));
    dc.wait_for_content(CHANNEL, |t| t.contains("Tool said"))
        .await;
    // The streamed text shows before the turn has ended; a /new sent during the turn
    // would be answered "Queued" (also correct, but not what this test is about).
    env.wait_turns_ended(1).await;
    dc.slash(CHANNEL, ALICE, "new");
    dc.wait_for_call("POST", "/callback", |b| b["type"] == 5)
        .await;
    dc.wait_for_call("PATCH", "/messages/@original", |b| {
        b["content"]
            .as_str()
            .is_some_and(|t| t.contains("Started a new conversation"))
    })
    .await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("what did you just read?"));
    dc.wait_for_content(CHANNEL, |t| t.contains("I have not read anything"))
        .await;
    // A slash command's option is its argument, as if typed after the name.
    dc.slash_with(CHANNEL, ALICE, "model", &[("name", "mock-alt")]);
    dc.wait_for_call("PATCH", "/messages/@original", |b| {
        b["content"]
            .as_str()
            .is_some_and(|t| t.contains("uses mock-alt from the next turn on"))
    })
    .await;
    gateway.stop().await;
    assert!(
        !env.model
            .request_for("what did you just read?")
            .text()
            .contains("discord-gannet-72")
    );
}

/// A session Discord will not resume (4009: timed out) is identified anew, and Discord
/// replays nothing to it: what was sent for the bot meanwhile is read back and answered,
/// once, and nothing answered before is answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_session_was_lost_are_read_back_once() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(LISTED, ALICE, &[], "before the drop");
    dc.wait_for_content(LISTED, |t| t == "Echo: before the drop")
        .await;
    let identified = dc.identifies();
    // Sent as the session dies: Discord dispatches them to no one.
    dc.channel_message_while_away(LISTED, ALICE, "while away");
    dc.channel_message_while_away(LISTED, MALLORY, "a stranger while away");
    dc.close_gateway(4009);
    dc.wait_for_content(LISTED, |t| t == "Echo: while away")
        .await;
    assert_eq!(dc.identifies(), identified + 1, "not identified anew");
    dc.channel_message(LISTED, ALICE, &[], "once back");
    dc.wait_for_content(LISTED, |t| t == "Echo: once back")
        .await;
    let answers: Vec<String> = dc.contents(LISTED).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        answers,
        [
            "Echo: before the drop",
            "Echo: while away",
            "Echo: once back"
        ],
        "answered twice, or a stranger's message taken"
    );
    let read_back = dc.calls("GET", &format!("/channels/{LISTED}/messages"));
    assert_eq!(read_back.len(), 1, "{read_back:?}");
    gateway.stop().await;
}

/// Discord moves sessions: a RECONNECT (op 7) is resumed, and an INVALID_SESSION (op 9)
/// is identified anew and read back; no message is lost or answered twice either way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_is_resumed_and_an_invalid_session_identified_anew() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    let resumed = dc.resumes();
    dc.request_reconnect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while dc.resumes() == resumed {
        assert!(std::time::Instant::now() < deadline, "op 7 was not resumed");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    dc.channel_message(LISTED, ALICE, &[], "after the reconnect");
    dc.wait_for_content(LISTED, |t| t == "Echo: after the reconnect")
        .await;
    let identified = dc.identifies();
    dc.channel_message_while_away(LISTED, ALICE, "as the session ended");
    dc.invalidate_session();
    dc.wait_for_content(LISTED, |t| t == "Echo: as the session ended")
        .await;
    assert_eq!(dc.identifies(), identified + 1);
    let answers: Vec<String> = dc.contents(LISTED).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        answers,
        ["Echo: after the reconnect", "Echo: as the session ended"]
    );
    gateway.stop().await;
}

/// Discord replays nothing to a gateway that was down: at start each channel kept in the
/// inbox is read back from its newest kept message, and what was sent meanwhile is
/// answered, once; what the last run answered is not answered again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn messages_sent_while_the_gateway_was_down_are_read_back_at_start() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(LISTED, ALICE, &[], "before the stop");
    dc.wait_for_content(LISTED, |t| t == "Echo: before the stop")
        .await;
    gateway.stop().await;
    dc.channel_message_while_away(LISTED, ALICE, "while it was down");
    let gateway = start(&dc, &config).await;
    dc.wait_for_content(LISTED, |t| t == "Echo: while it was down")
        .await;
    dc.channel_message(LISTED, ALICE, &[], "after the start");
    dc.wait_for_content(LISTED, |t| t == "Echo: after the start")
        .await;
    let answers: Vec<String> = dc.contents(LISTED).into_iter().map(|(_, t)| t).collect();
    assert_eq!(
        answers,
        [
            "Echo: before the stop",
            "Echo: while it was down",
            "Echo: after the start"
        ]
    );
    gateway.stop().await;
}

/// A thread's parent is looked up once; a lookup Discord fails for a moment (a 500) is
/// tried again, not the end of the message it is for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_channel_lookup_is_retried_not_a_dropped_message() {
    let (_env, dc, config) = setup().await;
    dc.add_thread(THREAD, LISTED);
    let gateway = start(&dc, &config).await;
    dc.fail_next("GET", &format!("/channels/{THREAD}"), 500);
    dc.channel_message(THREAD, ALICE, &[], "after a hiccup");
    dc.wait_for_content(THREAD, |t| t == "Echo: after a hiccup")
        .await;
    let lookups = dc.calls("GET", &format!("/channels/{THREAD}"));
    assert_eq!(lookups.len(), 2, "tried once more after the 500");
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_and_its_parent_channel_are_separate_conversations() {
    let (env, dc, config) = setup().await;
    dc.add_thread(THREAD, LISTED);
    let gateway = start(&dc, &config).await;
    // No mention needed in a listed channel, nor in a thread of one.
    dc.channel_message(LISTED, ALICE, &[], "remember parentword");
    dc.wait_for_content(LISTED, |t| t == "Echo: remember parentword")
        .await;
    dc.channel_message(THREAD, ALICE, &[], "which word?");
    dc.wait_for_content(THREAD, |t| t == "Echo: which word?")
        .await;
    // Elsewhere the bot needs a mention.
    dc.channel_message(CHANNEL, ALICE, &[], "not for the bot");
    dc.channel_message(CHANNEL, ALICE, &[], &mention("for the bot"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: for the bot")
        .await;
    gateway.stop().await;
    assert!(
        !env.model
            .request_for("which word?")
            .text()
            .contains("parentword")
    );
    assert!(
        env.model
            .requests()
            .iter()
            .all(|r| !r.text().contains("not for the bot"))
    );
    assert_eq!(env.rollouts().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_and_long_replies_respect_discord_limits() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    let answer = "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu.";
    dc.channel_message(CHANNEL, ALICE, &[], &mention(&format!("slow: {answer}")));
    let (answered, _) = dc.wait_for_content(CHANNEL, |t| t == answer).await;
    // The status message is edited as Codex writes, and becomes the summary; the
    // answer is a message of its own.
    let (id, _) = dc
        .wait_for_content(CHANNEL, |t| t.starts_with("Worked "))
        .await;
    assert_ne!(answered, id);
    let edits = dc.calls("PATCH", &format!("/messages/{id}"));
    assert!(edits.len() >= 2, "{} edits", edits.len());
    let gaps: Vec<_> = edits.windows(2).map(|w| w[1].at - w[0].at).collect();
    assert!(
        gaps.iter().all(|g| g.as_millis() >= 1000),
        "edits too close: {gaps:?}"
    );

    dc.channel_message(LISTED, ALICE, &[], "long: 5000");
    dc.wait_for_content(LISTED, |t| t.contains("That is all."))
        .await;
    gateway.stop().await;
    let messages = dc.contents(LISTED);
    assert!(messages.len() >= 3, "{} messages", messages.len());
    for (_, text) in &messages {
        assert!(
            text.chars().count() <= 2000,
            "{} characters",
            text.chars().count()
        );
        let fences = text
            .lines()
            .filter(|l| l.trim_start().starts_with("```"))
            .count();
        assert_eq!(fences % 2, 0, "unbalanced fences:\n{text}");
    }
}

/// The prompt in `channel` whose command holds `command`: its message id and the
/// custom ids of its buttons, by label.
async fn prompt_in(dc: &FakeDiscord, channel: u64, command: &str) -> (u64, Vec<(String, String)>) {
    let sent = dc
        .wait_for_call("POST", &format!("/channels/{channel}/messages"), |b| {
            b["content"].as_str().is_some_and(|t| t.contains(command))
        })
        .await;
    let buttons = sent.body["components"][0]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            let label = b["label"].as_str().unwrap().to_owned();
            (label, b["custom_id"].as_str().unwrap().to_owned())
        })
        .collect();
    let (id, _) = dc.wait_for_content(channel, |t| t.contains(command)).await;
    (id, buttons)
}

fn button<'a>(buttons: &'a [(String, String)], label: &str) -> &'a str {
    &buttons.iter().find(|(l, _)| l == label).unwrap().1
}

/// A button left from before a restart decides nothing (the security bug of issue 44):
/// the stopping gateway closes its prompt, and a press of it after the restart, while
/// the new run's first request (the same number in the old scheme) waits in another
/// channel, is told it expired. A button counts only in its prompt's channel, and a
/// second press leaves the first answer on the prompt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leftover_button_never_decides_another_channels_request() {
    let (env, dc, mut config) = setup().await;
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    // The turn waits for a person, so the stop interrupts it when its grace is over: one
    // second instead of 20 keeps the test short (the grace is not what it is about).
    config.server.shutdown_grace_secs = 1;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("run: touch old.txt"));
    let (old_prompt, old_buttons) = prompt_in(&dc, CHANNEL, "touch old.txt").await;
    gateway.stop().await;
    let closed = dc
        .calls("PATCH", &format!("/messages/{old_prompt}"))
        .into_iter()
        .find(|c| {
            c.body["content"].as_str().is_some_and(|t| {
                t.ends_with("Expired: the gateway stopped before anyone answered.")
            })
        })
        .expect("the stopping gateway closed its prompt");
    assert_eq!(closed.body["components"], serde_json::json!([]));

    let gateway = start(&dc, &config).await;
    dc.channel_message(LISTED, ALICE, &[], "run: touch new.txt");
    let (new_prompt, new_buttons) = prompt_in(&dc, LISTED, "touch new.txt").await;
    let token = dc.click(CHANNEL, ALICE, old_prompt, button(&old_buttons, "Accept"));
    let expired = dc
        .wait_for_call("POST", &format!("/{token}/callback"), |_| true)
        .await;
    assert_eq!(expired.body["type"], 7, "the old prompt is updated");
    assert!(
        expired.body["data"]["content"]
            .as_str()
            .unwrap()
            .contains("before the gateway restarted")
    );
    assert_eq!(expired.body["data"]["components"], serde_json::json!([]));
    // The new request's own button, pressed under a message of another channel.
    let token = dc.click(CHANNEL, ALICE, old_prompt, button(&new_buttons, "Accept"));
    let ignored = dc
        .wait_for_call("POST", &format!("/{token}/callback"), |_| true)
        .await;
    assert_eq!(
        ignored.body["data"]["flags"], 64,
        "told only to the presser"
    );
    assert!(!env.workspace().join("new.txt").exists());
    assert!(!env.workspace().join("old.txt").exists());

    let token = dc.click(LISTED, ALICE, new_prompt, button(&new_buttons, "Accept"));
    dc.wait_for_call("POST", &format!("/{token}/callback"), |_| true)
        .await;
    dc.wait_for_content(LISTED, |t| t.starts_with("Tool said"))
        .await;
    assert!(env.workspace().join("new.txt").exists());
    // A later press (here Cancel) shows the first answer again, and only it.
    let token = dc.click(LISTED, ALICE, new_prompt, button(&new_buttons, "Cancel"));
    let again = dc
        .wait_for_call("POST", &format!("/{token}/callback"), |_| true)
        .await;
    let content = again.body["data"]["content"].as_str().unwrap();
    assert!(content.contains("Accept by user1001 at "), "{content}");
    assert!(!content.contains("Cancel by"), "{content}");
    gateway.stop().await;
}

/// An approval prompt shows the command exactly: Markdown that could hide part of it
/// stays literal in a code block; a command holding a fence (which would end the block)
/// is attached whole as a file, under the buttons.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_prompts_show_the_whole_command_exactly() {
    let (env, dc, mut config) = setup().await;
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let gateway = start(&dc, &config).await;
    let messages = format!("/channels/{CHANNEL}/messages");

    dc.channel_message(
        CHANNEL,
        ALICE,
        &[],
        &mention("run: echo ||hidden|| ~~gone~~ [x](http://e.st) \u{200B}ok"),
    );
    let prompt = dc
        .wait_for_call("POST", &messages, |b| {
            b["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("Codex asks"))
        })
        .await;
    let content = prompt.body["content"].as_str().unwrap();
    assert!(
        content.contains(
            "```\n/bin/bash -c 'echo ||hidden|| ~~gone~~ [x](http://e.st) <U+200B>ok'\n```"
        ),
        "{content}"
    );
    assert_eq!(
        prompt.body["allowed_mentions"]["parse"],
        serde_json::json!([])
    );
    let labels: Vec<_> = prompt.body["components"][0]["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["label"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(labels, ["Accept", "Cancel"]);
    let cancel = prompt.body["components"][0]["components"][1]["custom_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let (prompt_id, _) = dc.wait_for_content(CHANNEL, |t| t == content).await;
    let token = dc.click(CHANNEL, ALICE, prompt_id, &cancel);
    dc.wait_for_call("POST", &format!("/{token}/callback"), |b| {
        b["data"]["content"]
            .as_str()
            .is_some_and(|t| t.contains("\n\nCancel by user1001 at "))
    })
    .await;

    let fenced = "echo ```\n@everyone look here\n```";
    dc.channel_message(CHANNEL, ALICE, &[], &mention(&format!("run: {fenced}")));
    let prompt = dc
        .wait_for_call("POST", &messages, |b| {
            b["content"]
                .as_str()
                .is_some_and(|t| t.contains(r"approval\.txt"))
        })
        .await;
    let content = prompt.body["content"].as_str().unwrap();
    assert!(!content.contains("@everyone"), "{content}");
    let (prompt_id, _) = dc.wait_for_content(CHANNEL, |t| t == content).await;
    let files = dc.attachments_of(prompt_id);
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].0, "approval.txt");
    assert!(files[0].1.contains(fenced), "{}", files[0].1);
    let buttons = &prompt.body["components"][0]["components"];
    assert_eq!(buttons[0]["label"], "Accept");
    let token = dc.click(
        CHANNEL,
        ALICE,
        prompt_id,
        buttons[1]["custom_id"].as_str().unwrap(),
    );
    dc.wait_for_call("POST", &format!("/{token}/callback"), |b| b["type"] == 7)
        .await;
    gateway.stop().await;
    drop(env);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strangers_in_channels_are_ignored() {
    let (env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, MALLORY, &[], &mention("read file notes.txt"));
    dc.channel_message(LISTED, MALLORY, &[], "read file notes.txt");
    dc.dm(ALICE_DM, ALICE, "hello in private");
    dc.wait_for_content(ALICE_DM, |t| t == "Echo: hello in private")
        .await;
    gateway.stop().await;
    let requests = env.model.requests();
    assert!(
        requests.iter().all(|r| !r.text().contains("notes.txt")),
        "a stranger reached the model"
    );
    assert!(dc.contents(CHANNEL).is_empty() && dc.contents(LISTED).is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_resume_keeps_the_conversation() {
    let (env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("read file notes.txt"));
    dc.wait_for_content(CHANNEL, |t| t.contains("Tool said"))
        .await;
    dc.close_gateway(4000);
    dc.wait_connected(2).await;
    assert_eq!(dc.resumes(), 1, "the bot did not RESUME");
    dc.channel_message(CHANNEL, ALICE, &[], &mention("what did you just read?"));
    dc.wait_for_content(CHANNEL, |t| t.contains("Earlier I read: discord-gannet-72"))
        .await;
    gateway.stop().await;
    assert_eq!(env.rollouts().len(), 1);
}

/// Behind a REST proxy (`api_url`) serenity's limiter is off, the proxy limits; a 429 or a
/// failure that passes it is tried again after a back-off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_rate_limited_and_failed_rest_calls_are_retried() {
    let (_env, dc, mut config) = setup().await;
    (config.discord.connect_to, config.discord.ca_file) = (None, None);
    config.discord.api_url = Some(dc.url.clone());
    let gateway = start(&dc, &config).await;
    let messages = format!("/channels/{CHANNEL}/messages");
    dc.fail_next("POST", &messages, 429);
    dc.fail_next("POST", &messages, 502);
    dc.channel_message(CHANNEL, ALICE, &[], &mention("hello despite errors"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: hello despite errors")
        .await;
    gateway.stop().await;
    let posts = dc.calls("POST", &messages);
    assert!(posts.len() >= 3, "{} calls", posts.len());
    // A retry waits its back-off; a send given up would be followed at once by the next.
    let waited = posts[1].at - posts[0].at;
    assert!(
        waited.as_millis() >= 900,
        "no back-off before the retry: {waited:?}"
    );
    assert_eq!(
        dc.contents(CHANNEL).len(),
        1,
        "the reply was not one message"
    );
}

/// A long answer is more messages than a channel takes in Discord's window: the bot
/// waits for the window as the limit headers say, instead of running into 429s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_messages_waits_for_the_channels_rate_limit() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(LISTED, ALICE, &[], "long: 14000");
    dc.wait_for_content(LISTED, |t| t.contains("That is all."))
        .await;
    gateway.stop().await;
    let posts = dc.calls("POST", &format!("/channels/{LISTED}/messages"));
    let limit = rate_limits::LIMIT as usize;
    assert!(posts.len() > limit, "{} messages", posts.len());
    assert_eq!(dc.rate_limited(), 0, "the bot ran into the limit");
    let waited = posts[limit].at - posts[0].at;
    assert!(
        waited >= rate_limits::WINDOW - Duration::from_millis(500),
        "message {} came {waited:?} after the first",
        limit + 1
    );
}

/// A 429 is waited out as long as Discord asks (here longer than any back-off of the
/// bot's own), then the message goes once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_429_is_waited_out_as_long_as_discord_asks() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    let messages = format!("/channels/{CHANNEL}/messages");
    dc.fail_next("POST", &messages, 429);
    dc.channel_message(CHANNEL, ALICE, &[], &mention("hello despite a limit"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: hello despite a limit")
        .await;
    gateway.stop().await;
    let posts = dc.calls("POST", &messages);
    let waited = posts[1].at - posts[0].at;
    assert!(
        waited >= FAULT_RETRY_AFTER,
        "tried again {waited:?} after a 429 asking for {FAULT_RETRY_AFTER:?}"
    );
    assert_eq!(
        dc.contents(CHANNEL).len(),
        1,
        "the reply was not one message"
    );
}

/// `allowed_roles`: a member of an allowed role is answered without being listed; the
/// same words from someone without the role reach nobody.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_of_an_allowed_role_is_answered_and_others_are_not() {
    let (env, dc, mut config) = setup().await;
    config.discord.allowed_roles = vec![DEVS_ROLE];
    let gateway = start(&dc, &config).await;
    dc.channel_message(LISTED, MALLORY, &[], "no role here");
    dc.channel_message(LISTED, MALLORY, &[DEVS_ROLE], "a developer asks");
    dc.wait_for_content(LISTED, |t| t == "Echo: a developer asks")
        .await;
    gateway.stop().await;
    let asked = env.model.turn_texts();
    assert_eq!(asked, ["a developer asks"], "{asked:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasted_code_after_a_mention_in_a_thread_reaches_codex_byte_for_byte() {
    let (env, dc, config) = setup().await;
    dc.add_thread(THREAD, LISTED);
    let gateway = start(&dc, &config).await;
    dc.channel_message(THREAD, ALICE, &[], &format!("<@!{BOT_ID}>\n{PASTED_CODE}"));
    dc.wait_for_content(THREAD, |t| t.starts_with("Echo: fix this:"))
        .await;
    dc.dm(ALICE_DM, ALICE, PASTED_CODE);
    dc.wait_for_content(ALICE_DM, |t| t.starts_with("Echo: fix this:"))
        .await;
    gateway.stop().await;
    assert_eq!(
        env.model.turn_texts(),
        [PASTED_CODE; 2],
        "the text Codex got was changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn system_messages_are_not_prompts() {
    let (env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    // In a listed channel every message from a person is a prompt; these are not.
    for (kind, content) in [(18, "thread opened"), (6, ""), (7, ""), (8, "boost")] {
        dc.system_message(LISTED, ALICE, kind, content);
    }
    dc.channel_message(LISTED, ALICE, &[], "a real question");
    dc.wait_for_content(LISTED, |t| t == "Echo: a real question")
        .await;
    gateway.stop().await;
    assert_eq!(
        env.model.turn_requests().len(),
        1,
        "a system message reached Codex"
    );
    assert_eq!(dc.contents(LISTED).len(), 1, "{:?}", dc.contents(LISTED));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_and_the_message_after_it_keep_their_order() {
    let (env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("remember orderword"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: remember orderword")
        .await;
    env.wait_turns_ended(1).await;
    // As a person types them: `/new`, then at once the next message. Discord needs a
    // moment to accept the command's deferral; the message must not overtake the command.
    dc.slash(CHANNEL, ALICE, "new");
    dc.channel_message(CHANNEL, ALICE, &[], &mention("which word?"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: which word?")
        .await;
    dc.wait_for_call("PATCH", "/messages/@original", |b| {
        b["content"]
            .as_str()
            .is_some_and(|t| t.contains("Started a new conversation"))
    })
    .await;
    gateway.stop().await;
    let request = env.model.request_for("which word?");
    assert!(
        !request.text().contains("orderword"),
        "the message ran before /new, in the old thread"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_during_a_turn_is_answered_at_once_and_its_result_posted() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(
        CHANNEL,
        ALICE,
        &[],
        &mention("slow: one two three four five"),
    );
    dc.wait_for_call("POST", &format!("/channels/{CHANNEL}/messages"), |_| true)
        .await;
    dc.slash(CHANNEL, ALICE, "new");
    // The interaction is answered while the turn still runs, not 15 minutes later.
    dc.wait_for_call("PATCH", "/messages/@original", |b| {
        b["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("Queued"))
    })
    .await;
    assert!(
        dc.contents(CHANNEL)
            .iter()
            .all(|(_, t)| !t.contains("one two three four five")),
        "the queued answer came after the turn"
    );
    // After the turn, the command's result is a message of its own.
    dc.wait_for_content(CHANNEL, |t| t.contains("Started a new conversation"))
        .await;
    gateway.stop().await;
    let answers = dc.calls("PATCH", "/messages/@original");
    assert_eq!(answers.len(), 1, "one answer per interaction");
}

/// Text from Codex can quote `@everyone`, a role or a user (from a web page, say): no
/// message, edit or interaction answer of the bot pings anyone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replies_never_ping_anyone() {
    let (_env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    let pings = "@everyone @here <@&5555> <@1001> look";
    dc.channel_message(CHANNEL, ALICE, &[], &mention(&format!("slow: {pings}")));
    dc.wait_for_content(CHANNEL, |t| t == pings).await;
    dc.slash(CHANNEL, ALICE, "help");
    dc.wait_for_call("PATCH", "/messages/@original", |_| true)
        .await;
    gateway.stop().await;
    let writes: Vec<_> = [("POST", "/messages"), ("PATCH", "/messages")]
        .iter()
        .flat_map(|(method, path)| dc.calls(method, path))
        .collect();
    assert!(writes.len() >= 3, "{} writes", writes.len());
    for write in writes {
        assert_eq!(
            write.body["allowed_mentions"]["parse"],
            serde_json::json!([]),
            "{} {} may ping: {}",
            write.method,
            write.path,
            write.body
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_to_the_bot_or_a_mention_of_its_role_addresses_it() {
    let (env, dc, config) = setup().await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(CHANNEL, ALICE, &[], "to nobody");
    let to_devs = format!("<@&{DEVS_ROLE}> to the devs");
    dc.channel_message_to_role(CHANNEL, ALICE, DEVS_ROLE, &to_devs);
    let to_bot = format!("<@&{BOT_ROLE}> to the bot's role");
    dc.channel_message_to_role(CHANNEL, ALICE, BOT_ROLE, &to_bot);
    let (answer, text) = dc
        .wait_for_content(CHANNEL, |t| t == "Echo: to the bot's role")
        .await;
    let alices = discord::message(1, CHANNEL, ALICE, "to nobody", true);
    dc.channel_reply(CHANNEL, ALICE, alices, "a reply to Alice");
    let bots = discord::message(answer, CHANNEL, BOT_ID, &text, true);
    dc.channel_reply(CHANNEL, ALICE, bots, "a reply to the bot");
    dc.wait_for_content(CHANNEL, |t| t == "Echo: a reply to the bot")
        .await;
    gateway.stop().await;
    // Each channel's messages are taken in order: the ones before an answer were read.
    assert_eq!(
        env.model.turn_texts(),
        vec!["to the bot's role", "a reply to the bot"],
        "only the bot's role and a reply to the bot address it"
    );
}

/// Answers "fence" with a code fence opened mid-line, longer than a message, and
/// "words" with one line of words longer than a message.
fn splitting_brain() -> crate::support::model::Brain {
    let default = default_brain();
    Arc::new(move |request| match request.last_human_text().as_str() {
        "fence" => {
            let code: String = (0..150).map(|i| format!("echo step {i}\n")).collect();
            Reply::Text(format!("Run this: ```bash\n{code}``` and you are done."))
        }
        "words" => Reply::Text(format!("{}end.", "codex ".repeat(700))),
        _ => default(request),
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_answers_split_with_fences_kept_and_words_whole() {
    let (_env, dc, config) = setup_in(TestEnv::with_brain(splitting_brain()).await).await;
    let gateway = start(&dc, &config).await;
    dc.channel_message(LISTED, ALICE, &[], "fence");
    dc.wait_for_content(LISTED, |t| t.ends_with("``` and you are done."))
        .await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("words"));
    dc.wait_for_content(CHANNEL, |t| t.ends_with("end.")).await;
    gateway.stop().await;
    let fenced: Vec<_> = dc
        .contents(LISTED)
        .into_iter()
        .filter(|(_, text)| text.contains("echo step"))
        .collect();
    assert!(fenced.len() >= 2, "{} messages", fenced.len());
    for (_, text) in &fenced {
        assert!(
            text.chars().count() <= 2000,
            "{} characters",
            text.chars().count()
        );
        assert_eq!(
            text.matches("```").count() % 2,
            0,
            "a fence left open:\n{text}"
        );
    }
    assert!(
        fenced[1].1.starts_with("```bash\n"),
        "not reopened: {}",
        fenced[1].1
    );
    let words: Vec<_> = dc
        .contents(CHANNEL)
        .into_iter()
        .filter(|(_, text)| text.starts_with("codex"))
        .collect();
    assert!(words.len() >= 3, "{} messages", words.len());
    for (_, text) in &words {
        assert!(text.chars().count() <= 2000);
        let whole = |word: &str| word == "codex" || word == "end.";
        assert!(text.split(' ').all(whole), "a word cut: {text:?}");
    }
}
