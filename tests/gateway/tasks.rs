//! Parallel tasks (#48): a Discord thread or a Telegram topic per task, each its own
//! conversation with a Codex thread of its own, over real traffic to the fakes.

use crate::support::discord::{BOT_ID, FakeDiscord};
use crate::support::platform::FakePlatform;
use crate::support::telegram::{FakeTelegram, Fault, visible_text};
use crate::support::{Gateway, TestEnv, free_port, http_get_when_up};
use codex_gateway::config::Config;

const ALICE: u64 = 1001;
const CHANNEL: u64 = 600;
const FORUM: u64 = 650;
/// A Telegram forum group.
const GROUP: i64 = -100500;

fn mention(text: &str) -> String {
    format!("<@{BOT_ID}> {text}")
}

async fn discord_setup() -> (TestEnv, FakeDiscord, Config) {
    let env = TestEnv::new().await;
    let (discord, config) = <FakeDiscord as FakePlatform>::start(&env).await;
    (env, discord, config)
}

/// The thread the bot opened with the name `name`.
async fn opened_thread(dc: &FakeDiscord, name: &str) -> u64 {
    let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    loop {
        let found = dc.threads_opened().into_iter().find(|(_, _, n)| n == name);
        if let Some((thread, _, _)) = found {
            return thread;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no thread {name:?}: {:?}",
            dc.threads_opened()
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The chats the gateway holds in memory, from its metrics.
async fn active_chats(port: u16) -> u64 {
    let (_, metrics) = http_get_when_up(port, "/metrics").await;
    let line = metrics
        .lines()
        .find_map(|line| line.strip_prefix("codex_gateway_active_chats "));
    line.and_then(|n| n.trim().parse().ok())
        .expect("the metrics count the active chats")
}

/// With `auto_thread`, each request to the bot in a channel opens a thread from it: the
/// answer and the follow-ups live there, no mention needed, each thread its own Codex
/// thread; an archived one is unloaded and resumed by its next message, after a restart
/// too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn auto_thread_makes_each_request_a_task_of_its_own() {
    let (env, dc, mut config) = discord_setup().await;
    config.discord.auto_thread = true;
    let port = free_port();
    config.server.listen = format!("127.0.0.1:{port}");
    let gateway = dc.gateway(&config).await;
    dc.channel_message(
        CHANNEL,
        ALICE,
        &[],
        &mention("remember alphaword\nand more"),
    );
    let first = opened_thread(&dc, "remember alphaword and more").await;
    dc.wait_for_content(first, |t| t == "Echo: remember alphaword\nand more")
        .await;
    dc.channel_message(first, ALICE, &[], "which word here?");
    dc.wait_for_content(first, |t| t == "Echo: which word here?")
        .await;
    // The task's Codex thread has the task's title, which /status and /threads show.
    dc.channel_message(first, ALICE, &[], "/status");
    dc.wait_for_content(first, |t| {
        t.contains("Thread name: remember alphaword and more")
    })
    .await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("remember betaword"));
    let second = opened_thread(&dc, "remember betaword").await;
    dc.wait_for_content(second, |t| t == "Echo: remember betaword")
        .await;
    dc.channel_message(second, ALICE, &[], "and which word there?");
    dc.wait_for_content(second, |t| t == "Echo: and which word there?")
        .await;
    assert!(
        dc.contents(CHANNEL).is_empty(),
        "{:?}",
        dc.contents(CHANNEL)
    );
    assert_eq!(dc.threads_opened().len(), 2);
    let seen = |text: &str| env.model.request_for(text).text();
    assert!(seen("which word here?").contains("alphaword"));
    assert!(!seen("and which word there?").contains("alphaword"));
    assert!(seen("and which word there?").contains("betaword"));

    assert_eq!(active_chats(port).await, 2);
    dc.archive(first);
    let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    while active_chats(port).await != 1 {
        assert!(
            std::time::Instant::now() < deadline,
            "the archived task stays loaded"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    dc.channel_message(first, ALICE, &[], "still there?");
    dc.wait_for_content(first, |t| t == "Echo: still there?")
        .await;
    gateway.stop().await;

    // After a restart the bot's threads are still tasks (Discord says whose they are).
    let gateway = dc.gateway(&config).await;
    dc.channel_message(first, ALICE, &[], "after the restart?");
    dc.wait_for_content(first, |t| t == "Echo: after the restart?")
        .await;
    gateway.stop().await;
    assert!(seen("still there?").contains("alphaword"));
    assert!(seen("after the restart?").contains("alphaword"));
    assert_eq!(env.rollouts().len(), 2, "one Codex thread per task");
}

/// Without `auto_thread` a channel stays one conversation; `/task` opens a thread (a
/// post in a forum channel) whose messages are a task of their own; in a DM it says why
/// not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn task_opens_a_thread_and_a_channel_stays_one_conversation() {
    let (env, dc, config) = discord_setup().await;
    dc.add_forum(FORUM);
    let gateway = dc.gateway(&config).await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("remember gammaword"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: remember gammaword")
        .await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("what did I say?"));
    dc.wait_for_content(CHANNEL, |t| t == "Echo: what did I say?")
        .await;
    assert!(dc.threads_opened().is_empty());
    assert!(
        env.model
            .request_for("what did I say?")
            .text()
            .contains("gammaword")
    );

    dc.slash_with(CHANNEL, ALICE, "task", &[("title", "fix the  login page")]);
    let thread = opened_thread(&dc, "fix the login page").await;
    dc.wait_for_content(thread, |t| t.starts_with("Task: fix the login page\n"))
        .await;
    let answered = dc
        .wait_for_call("PATCH", "@original", |b| {
            b["content"]
                .as_str()
                .is_some_and(|t| t.starts_with("Opened"))
        })
        .await;
    assert_eq!(
        answered.body["content"],
        format!("Opened <#{thread}> for \"fix the login page\": write there.")
    );
    dc.channel_message(thread, ALICE, &[], "anything said here before?");
    dc.wait_for_content(thread, |t| t == "Echo: anything said here before?")
        .await;
    assert!(
        !env.model
            .request_for("anything said here before?")
            .text()
            .contains("gammaword")
    );
    // Naming the task's Codex thread names its Discord thread; a channel keeps its name.
    dc.channel_message(thread, ALICE, &[], "/name login fix");
    opened_thread(&dc, "login fix").await;
    dc.channel_message(CHANNEL, ALICE, &[], &mention("/name channel talk"));
    dc.wait_for_content(CHANNEL, |t| t.contains("named \"channel talk\""))
        .await;
    let renamed = |c: &str| {
        dc.calls("PATCH", &format!("/channels/{c}"))
            .iter()
            .any(|call| call.path.ends_with(&format!("/channels/{c}")))
    };
    assert!(!renamed(&CHANNEL.to_string()), "the channel was renamed");

    dc.slash_with(FORUM, ALICE, "task", &[("title", "a forum post")]);
    let post = opened_thread(&dc, "a forum post").await;
    dc.wait_for_content(post, |t| t.starts_with("Task: a forum post\n"))
        .await;
    dc.slash_with(post, ALICE, "task", &[("title", "inside a thread")]);
    dc.wait_for_call("PATCH", "@original", |b| {
        b["content"]
            .as_str()
            .is_some_and(|t| t.starts_with("This is a thread already"))
    })
    .await;
    gateway.stop().await;
    assert_eq!(dc.threads_opened().len(), 2);
}

/// The answers to a Telegram private chat `user`'s topic `topic`: their visible texts.
fn topic_texts(tg: &FakeTelegram, user: i64, topic: i64) -> Vec<String> {
    tg.calls("sendMessage")
        .iter()
        .filter(|c| c.body["chat_id"] == user && c.body["message_thread_id"] == topic)
        .map(|c| visible_text(c.body["text"].as_str().unwrap_or_default()))
        .collect()
}

async fn wait_in_topic(tg: &FakeTelegram, user: i64, topic: i64, text: &str) {
    let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    while !topic_texts(tg, user, topic).iter().any(|t| t == text) {
        assert!(
            std::time::Instant::now() < deadline,
            "no {text:?} in topic {topic}: {:?}",
            topic_texts(tg, user, topic)
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Each topic of a private chat is a conversation of its own, answered in its topic;
/// `/task` opens one once the bot's Threaded Mode is on, and says how to turn it on
/// before.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_topics_of_a_dm_are_tasks_and_task_opens_one() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let config = env.telegram_config(&tg, ALICE as i64);
    let alice = ALICE as i64;
    let gateway = Gateway::start(&config);
    tg.group_message(alice, alice, "remember deltaword", Some(3));
    wait_in_topic(&tg, alice, 3, "Echo: remember deltaword").await;
    tg.group_message(alice, alice, "what is the word?", Some(4));
    wait_in_topic(&tg, alice, 4, "Echo: what is the word?").await;
    assert!(
        !env.model
            .request_for("what is the word?")
            .text()
            .contains("deltaword")
    );

    // An answer its topic refuses (the topic deleted meanwhile) goes to the chat itself.
    let lost = "Bad Request: message thread not found";
    tg.fail_next("sendMessage", Fault::refusal(400, lost));
    tg.group_message(alice, alice, "into a deleted topic", Some(9));
    tg.wait_for_calls("sendMessage", 1, |body| {
        body.get("message_thread_id").is_none()
            && visible_text(body["text"].as_str().unwrap_or_default())
                == "Echo: into a deleted topic"
    })
    .await;
    // A file too.
    std::fs::write(env.workspace().join("notes.txt"), "topic-notes-4").unwrap();
    tg.fail_next("sendDocument", Fault::refusal(400, lost));
    tg.group_message(alice, alice, "/get notes.txt", Some(9));
    tg.wait_for_calls("sendDocument", 1, |body| {
        body.get("message_thread_id").is_none() && body["document"]["content"] == "topic-notes-4"
    })
    .await;
    let tried = tg.calls("sendDocument");
    assert!(
        tried.iter().any(|c| c.body["message_thread_id"] == 9),
        "first in its topic"
    );

    tg.dm(alice, "/task fix the login page");
    tg.wait_for_text(alice, |t| t.contains("Threaded Mode"))
        .await;
    tg.turn_on_threaded_mode();
    tg.dm(alice, "/task fix the login page");
    tg.wait_for_text(alice, |t| {
        t == "Opened a topic for \"fix the login page\": write there."
    })
    .await;
    let opened = tg.calls("createForumTopic");
    let topic = opened
        .iter()
        .find(|c| c.body["name"] == "fix the login page")
        .expect("a topic was asked for");
    assert_eq!(topic.body["chat_id"], alice);
    let greetings = tg.task_topics();
    assert_eq!(greetings.len(), 1, "{greetings:?}");
    let new_topic = greetings[0];
    // In a forum group too.
    tg.group_message(GROUP, alice, "/task group work", None);
    tg.wait_for_text(GROUP, |t| {
        t == "Opened a topic for \"group work\": write there."
    })
    .await;
    tg.group_message(alice, alice, "first words of the task", Some(new_topic));
    wait_in_topic(&tg, alice, new_topic, "Echo: first words of the task").await;
    // Naming a task's thread names its topic; Alice's own topics keep their names.
    tg.group_message(alice, alice, "/name login fix", Some(3));
    tg.wait_for_text(alice, |t| t.contains("named \"login fix\""))
        .await;
    tg.group_message(alice, alice, "/name the login fix", Some(new_topic));
    let renamed = tg
        .wait_for_calls("editForumTopic", 1, |b| b["name"] == "the login fix")
        .await;
    assert_eq!(renamed[0].body["message_thread_id"], new_topic);
    assert_eq!(
        tg.calls("editForumTopic").len(),
        1,
        "a person's topic was renamed"
    );
    gateway.stop().await;
    assert_eq!(
        env.rollouts().len(),
        4,
        "one Codex thread per topic (3, 4, 9, the task)"
    );
}
