//! Telegram end to end: the gateway's `run` against a fake Bot API on 127.0.0.1, the real
//! codex app-server and the fake model.

use std::time::{Duration, Instant};

use crate::support::telegram::{
    BOT_USERNAME, FakeTelegram, Fault, LONE_SURROGATE, button_data, button_labels, buttons,
    visible_text,
};
use crate::support::{Gateway, PASTED_CODE, TestEnv, model::long_reply};
use codex_gateway::config::{ApprovalPolicy, Config, GroupThreads};
use serde_json::Value;

const ALICE: i64 = 1001;
const BOB: i64 = 1002;
const GROUP: i64 = -100500;

async fn setup() -> (TestEnv, FakeTelegram, Config) {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), "telegram-puffin-58").unwrap();
    let telegram = FakeTelegram::start().await;
    let config = env.telegram_config(&telegram, ALICE);
    (env, telegram, config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_command_starts_a_fresh_thread() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "read file notes.txt");
    tg.wait_for_text(ALICE, |t| t.contains("Tool said")).await;
    tg.dm(ALICE, &format!("/new@{BOT_USERNAME}"));
    tg.wait_for_text(ALICE, |t| t.contains("Started a new conversation"))
        .await;
    tg.dm(ALICE, "what did you just read?");
    tg.wait_for_text(ALICE, |t| t.contains("I have not read anything"))
        .await;
    assert!(
        !env.model
            .request_for("what did you just read?")
            .text()
            .contains("telegram-puffin-58")
    );
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_reply_is_edited_at_the_configured_rate() {
    let (_env, tg, mut config) = setup().await;
    // The edited status message (groups, and private chats with drafts off).
    config.telegram.drafts = false;
    let gateway = Gateway::start(&config);
    let answer =
        "One two three four five six seven eight nine ten eleven twelve thirteen fourteen.";
    tg.dm(ALICE, &format!("slow: {answer}"));
    let (answered, _) = tg.wait_for_text(ALICE, |t| t == answer).await;
    let (status, _) = tg.wait_for_text(ALICE, |t| t.starts_with("Worked ")).await;
    gateway.stop().await;

    // The running turn showed a status message, edited as Codex wrote; the answer came
    // as a new message of its own, so the phone notifies.
    assert_ne!(answered, status, "the answer is not an edit of the status");
    let edits: Vec<_> = tg
        .calls("editMessageText")
        .into_iter()
        .filter(|c| c.body["message_id"].as_i64() == Some(status))
        .collect();
    assert!(
        edits.len() >= 2,
        "expected several edits, got {}",
        edits.len()
    );
    let writing = edits.iter().any(|e| {
        let text = e.body["text"].as_str().unwrap_or("");
        text.starts_with("Working · ") && text.contains("writing: One two")
    });
    assert!(writing, "the status never showed the text being written");
    let sent = tg
        .calls("sendMessage")
        .into_iter()
        .find(|c| c.body["chat_id"] == ALICE)
        .unwrap();
    assert!(
        sent.body["text"]
            .as_str()
            .unwrap()
            .starts_with("Working · ")
    );
    let mut times = vec![sent.at];
    times.extend(edits.iter().map(|e| e.at));
    let min_gap = times.windows(2).map(|w| w[1] - w[0]).min().unwrap();
    println!(
        "telegram status: {} edits, min gap {min_gap:?}",
        edits.len()
    );
    assert!(
        min_gap.as_millis() >= 1000,
        "edits {min_gap:?} apart, limit 1 per second"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_reply_is_split_with_balanced_fences() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "long: 10000");
    tg.wait_for_text(ALICE, |t| t.contains("That is all."))
        .await;
    gateway.stop().await;

    let messages = tg.texts(ALICE);
    println!(
        "telegram: a {}-character reply became {} messages",
        long_reply(10_000).len(),
        messages.len()
    );
    assert!(messages.len() >= 3, "{} messages", messages.len());
    for (_, html) in &messages {
        let units = visible_text(html).encode_utf16().count();
        assert!(units <= 4096, "{units} UTF-16 units in one message");
        // Every code block opened in a message is closed in it ("<pre>" also starts "<pre><code").
        assert_eq!(
            html.matches("<pre>").count(),
            html.matches("</pre>").count(),
            "{html}"
        );
    }
    let shown: String = messages
        .iter()
        .map(|(_, html)| visible_text(html))
        .collect::<Vec<_>>()
        .join("\n");
    for line in ["let value_0 = 0;", "let value_250 = 250;", "That is all."] {
        assert!(shown.contains(line), "{line:?} lost in the split");
    }
}

/// An approval prompt shows the command exactly: HTML kept literal in a code block,
/// hidden characters made visible, and a command too long for a message attached whole
/// as a file under the buttons, never cut.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approval_prompts_show_the_whole_command_exactly() {
    let (env, tg, mut config) = setup().await;
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let gateway = Gateway::start(&config);

    tg.dm(ALICE, "run: echo '<b>x</b> & @admin' > safe\u{202E}txt.sh");
    let call = tg.sent_message(|t| t.starts_with("Codex asks")).await;
    assert_eq!(call.body["parse_mode"], "HTML");
    // Accepting is green; Cancel keeps the app's own colour.
    let styles: Vec<(String, Value)> = buttons(&call.body)
        .iter()
        .map(|b| (b["text"].as_str().unwrap().to_owned(), b["style"].clone()))
        .collect();
    let accept = ("Accept".to_owned(), Value::from("success"));
    let cancel = ("Cancel".to_owned(), Value::Null);
    assert_eq!(styles, [accept, cancel]);
    let id = tg.message_id_of(&call).await;
    let shown = tg.message_of(id).unwrap();
    let text = shown["text"].as_str().unwrap();
    assert!(
        text.contains("echo '<b>x</b> & @admin' > safe<U+202E>txt.sh"),
        "{text}"
    );
    assert!(!text.contains('\u{202E}'));
    let pre = shown["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "pre")
        .cloned()
        .expect("the command is in a code block");
    let in_block: String = text
        .encode_utf16()
        .skip(pre["offset"].as_u64().unwrap() as usize)
        .take(pre["length"].as_u64().unwrap() as usize)
        .map(|u| char::from_u32(u32::from(u)).unwrap_or('?'))
        .collect();
    assert!(in_block.contains("safe<U+202E>txt.sh"), "{in_block}");
    tg.press(ALICE, ALICE, id, &button_data(&call.body, "Cancel"));
    let edit = tg
        .wait_for_call("editMessageText", |b| b["message_id"] == id)
        .await;
    assert!(
        edit.body["text"]
            .as_str()
            .unwrap()
            .contains("\n\nCancel by User1001 at ")
    );
    assert_eq!(
        edit.body["entities"][0]["type"], "pre",
        "the code block was lost when the verdict was added"
    );

    let long_command = format!("echo {} END", "x".repeat(5000));
    tg.dm(ALICE, &format!("run: {long_command}"));
    let call = tg
        .wait_for_call("sendDocument", |b| {
            b["caption"]
                .as_str()
                .is_some_and(|t| t.starts_with("Codex asks to run"))
        })
        .await;
    let id = tg.message_id_of(&call).await;
    let (name, content) = tg.document_of(id).unwrap();
    assert_eq!(name, "approval.txt");
    assert!(
        content.contains(&long_command),
        "the attached command was cut"
    );
    assert!(
        call.body["caption"]
            .as_str()
            .unwrap()
            .contains("approval.txt")
    );
    assert_eq!(button_labels(&call.body), ["Accept", "Cancel"]);
    tg.press(ALICE, ALICE, id, &button_data(&call.body, "Accept"));
    tg.wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    let edit = tg
        .wait_for_call("editMessageCaption", |b| b["message_id"] == id)
        .await;
    assert!(
        edit.body["caption"]
            .as_str()
            .unwrap()
            .contains("Accept by User1001 at ")
    );
    gateway.stop().await;
    drop(env);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_the_bot_cannot_read_is_told_and_reaches_no_model() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm_location(ALICE);
    tg.wait_for_text(ALICE, |t| t.contains("not this kind of message"))
        .await;
    gateway.stop().await;
    assert!(
        env.model.requests().is_empty(),
        "a refused message reached the model"
    );
    assert!(env.rollouts().is_empty());
}

/// `group_threads = "per_user"`: in one group each person has a conversation of their
/// own; with the default, the group shares one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn per_user_group_threads_keep_each_persons_conversation() {
    let (env, tg, mut config) = setup().await;
    config.telegram.allowed_users = vec![ALICE, BOB];
    config.telegram.group_threads = GroupThreads::PerUser;
    let gateway = Gateway::start(&config);
    let to_bot = |text: &str| format!("@{BOT_USERNAME} {text}");
    tg.group_message(GROUP, ALICE, &to_bot("remember alicesword"), None);
    tg.wait_for_text(GROUP, |t| t == "Echo: remember alicesword")
        .await;
    tg.group_message(GROUP, BOB, &to_bot("which word did I say?"), None);
    tg.wait_for_text(GROUP, |t| t == "Echo: which word did I say?")
        .await;
    tg.group_message(GROUP, ALICE, &to_bot("and mine?"), None);
    tg.wait_for_text(GROUP, |t| t == "Echo: and mine?").await;
    gateway.stop().await;
    let seen = |text: &str| env.model.request_for(text).text();
    assert!(!seen("which word did I say?").contains("alicesword"));
    assert!(seen("and mine?").contains("alicesword"));
    assert_eq!(env.rollouts().len(), 2, "one thread per person");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forum_topics_are_separate_conversations() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.group_message(GROUP, ALICE, "just chatting among humans", Some(7));
    tg.group_message(
        GROUP,
        ALICE,
        &format!("@{BOT_USERNAME} remember topicseven"),
        Some(7),
    );
    tg.wait_for_text(GROUP, |t| t == "Echo: remember topicseven")
        .await;
    tg.group_message(
        GROUP,
        ALICE,
        &format!("@{BOT_USERNAME} which word?"),
        Some(8),
    );
    tg.wait_for_text(GROUP, |t| t == "Echo: which word?").await;
    gateway.stop().await;

    assert!(
        !env.model
            .request_for("which word?")
            .text()
            .contains("topicseven")
    );
    assert!(
        env.model
            .requests()
            .iter()
            .all(|r| !r.text().contains("among humans"))
    );
    let topics: Vec<Value> = tg
        .calls("sendMessage")
        .iter()
        .map(|c| c.body["message_thread_id"].clone())
        .collect();
    assert!(
        topics.contains(&Value::from(7)) && topics.contains(&Value::from(8)),
        "{topics:?}"
    );
    assert_eq!(env.rollouts().len(), 2, "one thread per topic");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn updates_pending_over_a_restart_are_handled_exactly_once() {
    let (env, tg, mut config) = setup().await;
    // Each message its own turn and reply (steering would fold them into one turn).
    config.chat.follow_up = codex_gateway::config::FollowUp::Queue;
    Gateway::start(&config).stop().await;
    for word in ["one", "two", "three"] {
        tg.dm(ALICE, &format!("echo {word}"));
    }
    let gateway = Gateway::start(&config);
    tg.wait_for_text(ALICE, |t| t == "Echo: echo three").await;
    gateway.stop().await;
    assert_eq!(tg.pending_updates(), 0, "updates not acknowledged");
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "echo four");
    tg.wait_for_text(ALICE, |t| t == "Echo: echo four").await;
    gateway.stop().await;

    for word in ["one", "two", "three", "four"] {
        let text = format!("echo {word}");
        let turns = env
            .model
            .requests()
            .iter()
            .filter(|r| r.last_human_text() == text)
            .count();
        assert_eq!(turns, 1, "{text:?} ran {turns} times");
        let replies = tg
            .texts(ALICE)
            .iter()
            .filter(|(_, t)| *t == format!("Echo: {text}"))
            .count();
        assert_eq!(replies, 1, "{text:?} answered {replies} times");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_and_rejected_markup_never_lose_the_reply() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.rate_limit_next("sendMessage", 1);
    tg.reject_html_next("sendMessage");
    tg.dm(ALICE, "say **bold** <things>");
    let (_, text) = tg
        .wait_for_text(ALICE, |t| t.starts_with("Echo: say"))
        .await;
    gateway.stop().await;
    // The HTML send was refused, so the Markdown arrived as plain text, in one message.
    assert_eq!(text, "Echo: say **bold** <things>");
    assert_eq!(tg.texts(ALICE).len(), 1, "{:?}", tg.texts(ALICE));
    let sends = tg.calls("sendMessage");
    assert!(sends.len() >= 2, "the rate-limited send was not retried");
    assert!(sends[1].at - sends[0].at >= std::time::Duration::from_millis(950));
}

/// The messages in `chat` that read exactly `text`, and the calls of `method` that carried it.
fn seen(tg: &FakeTelegram, chat: i64, method: &str, text: &str) -> (usize, usize) {
    let shown = tg.texts(chat).iter().filter(|(_, t)| t == text).count();
    let calls = tg.calls(method);
    let carried = calls.iter().filter(|c| c.body["text"] == text).count();
    (shown, carried)
}

/// Telegram's outages as they come: server errors with its JSON body or a proxy's HTML
/// page, two in a row, on a quick answer's send and on a streamed answer's final edit, at
/// the default settings. Each answer arrives exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_errors_on_sends_and_edits_are_retried_and_the_answer_arrives_once() {
    let (_env, tg, config) = setup().await;
    assert_eq!(config.telegram.first_flush_ms, 1000, "the default");
    let gateway = Gateway::start(&config);
    let faults = [(500, "json"), (502, "json"), (502, "html"), (504, "html")];
    for (status, body) in faults {
        // A quick answer: one send, failing twice.
        for _ in 0..2 {
            tg.fail_next("sendMessage", Fault::server(status, body));
        }
        let answer = format!("Echo: quick {status} {body}");
        tg.dm(ALICE, &format!("quick {status} {body}"));
        tg.wait_for_text(ALICE, |t| t == answer).await;
        assert_eq!(seen(&tg, ALICE, "sendMessage", &answer), (1, 3), "{answer}");

        // A streamed turn: its answer (a new message, in HTML) fails twice.
        for _ in 0..2 {
            tg.fail_next("sendMessage+html", Fault::server(status, body));
        }
        let words = format!("streamed {status} {body} one two three four five six");
        tg.dm(ALICE, &format!("slow: {words}"));
        let is_answer = |b: &Value| b["text"] == words.as_str() && b["parse_mode"] == "HTML";
        tg.wait_for_calls("sendMessage", 3, is_answer).await;
        tg.wait_for_text(ALICE, |t| t == words).await;
        // The next turn's answer is news: by then this chat's worker is done with this one.
        tg.dm(ALICE, &format!("after {status} {body}"));
        let next = format!("Echo: after {status} {body}");
        tg.wait_for_text(ALICE, |t| t == next).await;
        let answers = tg.calls("sendMessage");
        let answers = answers.iter().filter(|c| is_answer(&c.body)).count();
        assert_eq!(answers, 3, "two failed sends and one that went through");
        let shown = tg.texts(ALICE).iter().filter(|(_, t)| t == &words).count();
        assert_eq!(shown, 1, "{:#?}", tg.texts(ALICE));
    }
    gateway.stop().await;
}

/// An outage longer than the retry policy's tries (1 + 2 + 4 s): the answer is held back,
/// tried again later and arrives once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_outage_longer_than_the_retries_delays_the_answer_but_never_loses_it() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    for _ in 0..6 {
        tg.fail_next("sendMessage", Fault::server(502, "html"));
    }
    tg.dm(ALICE, "during the outage");
    tg.wait_for_text(ALICE, |t| t == "Echo: during the outage")
        .await;
    let answer = "Echo: during the outage";
    assert_eq!(seen(&tg, ALICE, "sendMessage", answer), (1, 7));
    let sends = tg.calls("sendMessage");
    let took = sends.last().unwrap().at - sends[0].at;
    assert!(
        took >= Duration::from_secs(7 + 5),
        "tried again too soon: {took:?}"
    );
    gateway.stop().await;
}

/// A refusal (400) is final: neither the HTML send nor its plain-text fallback is repeated,
/// and the chat goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_send_is_not_retried() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    for _ in 0..2 {
        let refusal = Fault::refusal(400, "Bad Request: chat not found");
        tg.fail_next("sendMessage", refusal);
    }
    tg.dm(ALICE, "refused one");
    let refused = |b: &Value| b["text"] == "Echo: refused one";
    tg.wait_for_calls("sendMessage", 2, refused).await;
    tg.dm(ALICE, "next one");
    tg.wait_for_text(ALICE, |t| t == "Echo: next one").await;
    gateway.stop().await;
    let refused = seen(&tg, ALICE, "sendMessage", "Echo: refused one");
    assert_eq!(refused, (0, 2), "one HTML try and one plain; no retry");
    assert_eq!(seen(&tg, ALICE, "sendMessage", "Echo: next one"), (1, 1));
}

/// Telegram holds an idle long poll for its full timeout (30 s by default). The bot must
/// wait each one out without an error, and still take the first message after a quiet
/// spell at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_bot_holds_full_polls_and_answers_at_once() {
    let (_env, tg, config) = setup().await;
    assert_eq!(config.telegram.poll_timeout_secs, 30, "the default");
    let gateway = Gateway::start(&config);
    tokio::time::sleep(Duration::from_secs(40)).await;
    let sent = Instant::now();
    tg.dm(ALICE, "after a quiet spell");
    tg.wait_for_text(ALICE, |t| t == "Echo: after a quiet spell")
        .await;
    gateway.stop().await;

    let polls: Vec<_> = tg
        .polls()
        .into_iter()
        .filter(|p| p.started < sent)
        .collect();
    let (last, quiet) = polls.split_last().expect("polls during the quiet spell");
    assert!(!quiet.is_empty(), "{polls:?}");
    for (poll, next) in quiet.iter().zip(&polls[1..]) {
        let answered = poll.answered.expect("the bot gave up on a held poll");
        assert!(
            answered - poll.started >= Duration::from_secs(29),
            "{poll:?}"
        );
        assert_eq!(poll.updates, 0);
        let gap = next.started - answered;
        assert!(gap < Duration::from_millis(500), "{gap:?} between polls");
    }
    let picked_up = last.answered.expect("the message's poll was answered") - sent;
    println!("telegram: message picked up {picked_up:?} after a 40 s quiet spell");
    assert!(picked_up < Duration::from_secs(1), "{picked_up:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pasted_code_in_groups_and_topics_reaches_codex_byte_for_byte() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.group_message(
        GROUP,
        ALICE,
        &format!("@{BOT_USERNAME} {PASTED_CODE}"),
        None,
    );
    tg.group_message(
        GROUP,
        ALICE,
        &format!("@{BOT_USERNAME}\n{PASTED_CODE}"),
        Some(7),
    );
    tg.wait_for_call("sendMessage", |b| {
        b["message_thread_id"] == 7 && b["text"].as_str().is_some_and(|t| t.contains("fix this"))
    })
    .await;
    tg.wait_for_call("sendMessage", |b| {
        b["chat_id"] == GROUP
            && b.get("message_thread_id").is_none()
            && b["text"].as_str().is_some_and(|t| t.contains("fix this"))
    })
    .await;
    gateway.stop().await;
    assert_eq!(
        env.model.turn_texts(),
        [PASTED_CODE; 2],
        "the text Codex got was changed"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quick_answer_is_one_message_and_each_turn_starts_a_new_one() {
    let (_env, tg, mut config) = setup().await;
    // The status message's life, from sent to summary (drafts have none).
    config.telegram.drafts = false;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "quick one");
    tg.wait_for_text(ALICE, |t| t == "Echo: quick one").await;
    // Any status message would have been sent before the turn ended.
    _env.wait_turns_ended(1).await;
    assert_eq!(
        tg.calls("sendMessage").len(),
        1,
        "a quick answer is one send"
    );
    assert!(tg.calls("editMessageText").is_empty(), "and no edit");

    // A streamed answer, stopped: the final message has what Codex wrote and says so.
    tg.dm(ALICE, "slow: alpha beta gamma delta epsilon zeta eta theta");
    let (status, _) = tg.wait_for_text(ALICE, |t| t.contains("alpha")).await;
    tg.dm(ALICE, "/stop");
    let (stopped, _) = tg
        .wait_for_text(ALICE, |t| {
            t.starts_with("alpha") && t.ends_with("(stopped)")
        })
        .await;
    tg.wait_for_text(ALICE, |t| t.starts_with("Ended after "))
        .await;
    // The next answer is a new message, not an edit of the stopped one.
    tg.dm(ALICE, "after the stop");
    let (next, _) = tg
        .wait_for_text(ALICE, |t| t == "Echo: after the stop")
        .await;
    gateway.stop().await;
    assert!(next != stopped && next != status);
    assert!(tg.text_of(status).unwrap().starts_with("Ended after "));
}

/// 300 strangers write at once, to a Bot API that answers 429 past 30 sends a second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_strangers_never_slows_the_owner() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "warm up");
    tg.wait_for_text(ALICE, |t| t == "Echo: warm up").await;

    let strangers: Vec<i64> = (0..300).map(|i| 50_000 + i).collect();
    for stranger in &strangers {
        tg.dm(*stranger, "let me in");
    }
    let asked = Instant::now();
    tg.dm(ALICE, "owner here");
    tg.wait_for_text(ALICE, |t| t == "Echo: owner here").await;
    let answered = asked.elapsed();
    for stranger in &strangers[..10] {
        tg.dm(*stranger, "let me in, again");
    }
    while tg.pending_updates() > 0 {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Read and judged. A repeat refusal is kept out of the queue as the message is read
    // (src/platform/refusals.rs tests it); the queue is sent 3 a second, so 3 s more
    // lets the ones under way arrive before they are counted.
    tokio::time::sleep(Duration::from_secs(3)).await;
    gateway.stop().await;

    println!("telegram: owner answered {answered:?} into a flood of 300 strangers");
    assert!(answered < Duration::from_secs(5), "{answered:?}");
    let refusals = tg.calls("sendMessage");
    for stranger in &strangers {
        let told = refusals
            .iter()
            .filter(|c| c.body["chat_id"] == *stranger && !c.rate_limited)
            .count();
        assert!(told <= 1, "stranger {stranger} was refused {told} times");
    }
    let delivered = refusals
        .iter()
        .filter(|c| c.body["chat_id"] != ALICE)
        .count();
    assert!(delivered > 0, "no stranger was told anything");
    assert!(
        env.model
            .turn_requests()
            .iter()
            .all(|r| !r.text().contains("let me in")),
        "a stranger reached Codex"
    );
}

/// The model fails and Codex retries: the chat sees one line about it, updated in place,
/// then what Codex said when it gave up. Never silence, never a stream of messages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_trouble_is_one_line_updated_in_place() {
    let env = TestEnv::with_brain(std::sync::Arc::new(
        |_: &crate::support::model::ModelRequest| crate::support::model::Reply::Fail(500),
    ))
    .await;
    let retrying = crate::support::codex_config(&env.model.base_url)
        .replace("request_max_retries = 0", "request_max_retries = 2")
        .replace("stream_max_retries = 0", "stream_max_retries = 2");
    std::fs::write(env.codex_home().join("config.toml"), retrying).unwrap();
    let tg = FakeTelegram::start().await;
    let config = env.telegram_config(&tg, ALICE);
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "are you there?");
    let (failed, _) = tg
        .wait_for_text(ALICE, |t| t.starts_with("Codex failed"))
        .await;
    gateway.stop().await;
    // One tap tries again.
    let keyboard = &tg.message_of(failed).unwrap()["reply_markup"]["inline_keyboard"];
    assert_eq!(keyboard[0][0]["callback_data"], "cmd:continue continue");

    let texts = tg.texts(ALICE);
    let trouble: Vec<_> = texts
        .iter()
        .filter(|(_, t)| t.contains("reconnecting"))
        .collect();
    assert_eq!(trouble.len(), 1, "one line, updated in place: {texts:?}");
    assert_eq!(
        trouble[0].1,
        "Codex is reconnecting to the model, attempt 2 of 2."
    );
    let edits = tg.calls("editMessageText");
    assert!(
        edits.iter().any(|e| e.body["message_id"] == trouble[0].0),
        "the line was not updated"
    );
}

/// The update loop ends when it cannot read its offset: it is started again with a
/// back-off, and `/healthz` says so until it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_intake_is_started_again_and_health_shows_it() {
    let (env, tg, mut config) = setup().await;
    let port = crate::support::free_port();
    config.server.listen = format!("127.0.0.1:{port}");
    Gateway::start(&config).stop().await; // creates and migrates the database
    let database = sqlx::SqlitePool::connect(&format!("sqlite://{}", env.database().display()))
        .await
        .unwrap();
    sqlx::query("ALTER TABLE platform_offsets RENAME TO offsets_away")
        .execute(&database)
        .await
        .unwrap();
    let gateway = Gateway::start(&config);
    let deadline = Instant::now() + Duration::from_secs(20);
    let down = loop {
        // Codex may still be starting (503 too): wait for the intake's own line.
        let answer = crate::support::http_get_when_up(port, "/healthz").await;
        if answer.0 == 503 && answer.1.contains("telegram intake stopped") {
            break answer.1;
        }
        assert!(
            Instant::now() < deadline,
            "health never showed the stopped intake"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(down.contains("telegram intake stopped"), "{down}");
    sqlx::query("ALTER TABLE offsets_away RENAME TO platform_offsets")
        .execute(&database)
        .await
        .unwrap();
    tg.dm(ALICE, "are you back?");
    tg.wait_for_text(ALICE, |t| t == "Echo: are you back?")
        .await;
    assert_eq!(crate::support::http_get(port, "/healthz").await.0, 200);
    gateway.stop().await;
}

/// `/login` and `/logout` are for admins (by default the first allowed user), and only in
/// a direct message: a code shown in a group is anyone's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_is_for_admins_in_direct_messages() {
    let (_env, tg, mut config) = setup().await;
    config.telegram.allowed_users = vec![ALICE, BOB];
    let gateway = Gateway::start(&config);
    tg.group_message(GROUP, ALICE, &format!("/login@{BOT_USERNAME}"), None);
    tg.wait_for_text(GROUP, |t| t.contains("from a direct message with the bot"))
        .await;
    tg.dm(BOB, "/logout");
    tg.wait_for_text(BOB, |t| t.contains("Only the bot's admins"))
        .await;
    gateway.stop().await;
}

/// An update the gateway cannot read as it came (a lone UTF-16 surrogate in its text,
/// which no Rust string holds) neither stops the bot for everyone nor is lost: it arrives
/// with a replacement character, and the messages around it are answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_with_a_lone_surrogate_stops_nothing_and_is_answered() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "before");
    tg.wait_for_text(ALICE, |t| t == "Echo: before").await;
    tg.dm(ALICE, &format!("cut {LONE_SURROGATE} emoji"));
    tg.wait_for_text(ALICE, |t| t == "Echo: cut \u{FFFD} emoji")
        .await;
    tg.dm(ALICE, "after");
    tg.wait_for_text(ALICE, |t| t == "Echo: after").await;
    gateway.stop().await;
}

/// Polls that keep failing (here 502s from a proxy in front of the Bot API) turn
/// `/healthz` unhealthy, saying so; the first poll that goes through makes it healthy.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn polls_that_keep_failing_turn_health_unhealthy() {
    let (_env, tg, mut config) = setup().await;
    let port = crate::support::free_port();
    config.server.listen = format!("127.0.0.1:{port}");
    for _ in 0..4 {
        tg.fail_next("getUpdates", Fault::server(502, "<html>Bad Gateway</html>"));
    }
    let gateway = Gateway::start(&config);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = crate::support::http_get_when_up(port, "/healthz").await;
        if status == 503 && body.contains("telegram getUpdates keeps failing") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "health never said so: {status} {body}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    tg.dm(ALICE, "through at last");
    tg.wait_for_text(ALICE, |t| t == "Echo: through at last")
        .await;
    assert_eq!(crate::support::http_get(port, "/healthz").await.0, 200);
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_chats_turn_streams_as_a_draft_and_the_answer_is_one_message() {
    let (_env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    let answer = "Drafted word by word, then sent once as a message of its own.";
    tg.dm(ALICE, &format!("slow: {answer}"));
    tg.wait_for_text(ALICE, |t| t == answer).await;
    tg.dm(ALICE, "slow: a second turn");
    tg.wait_for_text(ALICE, |t| t == "a second turn").await;
    gateway.stop().await;

    let drafts = tg.drafts(ALICE);
    let first = drafts[0].0;
    let (turn_one, turn_two): (Vec<_>, Vec<_>) = drafts.iter().partition(|d| d.0 == first);
    assert!(turn_one.len() >= 2, "{drafts:#?}");
    assert!(!turn_two.is_empty(), "the second turn drafted nothing");
    assert!(
        first != 0
            && turn_two
                .iter()
                .all(|d| d.0 == turn_two[0].0 && d.0 != first)
    );
    for (_, text, can_stop, _) in &drafts {
        assert!(text.starts_with("Working · "), "{text}");
        assert!(can_stop, "no Telegram stop on a draft");
    }
    let gaps: Vec<_> = turn_one.windows(2).map(|w| w[1].3 - w[0].3).collect();
    assert!(
        gaps.iter().all(|gap| *gap >= Duration::from_millis(950)),
        "drafts closer than the edit interval: {gaps:?}"
    );
    // No status message and no edit: the two answers are the chat's only messages.
    let texts: Vec<String> = tg.texts(ALICE).into_iter().map(|(_, t)| t).collect();
    assert_eq!(texts, [answer, "a second turn"]);
    assert!(tg.calls("editMessageText").is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegrams_stop_on_a_draft_stops_the_turn() {
    let (env, tg, config) = setup().await;
    let gateway = Gateway::start(&config);
    tg.dm(
        ALICE,
        "slow: a story long enough to be stopped half way through",
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    let draft_id = loop {
        if let Some(draft) = tg.drafts(ALICE).first() {
            break draft.0;
        }
        assert!(Instant::now() < deadline, "no draft");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    tg.stop_draft(ALICE, draft_id);
    tg.wait_for_text(ALICE, |t| t == "Stopped.").await;
    gateway.stop().await;
    let texts: Vec<String> = tg.texts(ALICE).into_iter().map(|(_, t)| t).collect();
    assert!(
        !texts.iter().any(|t| t.contains("half way through")),
        "the whole answer came: {texts:?}"
    );
    assert_eq!(env.model.turn_requests().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn drafts_a_bot_api_server_refuses_fall_back_to_an_edited_status_once() {
    let (_env, tg, config) = setup().await;
    tg.know_no_drafts();
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "slow: first of two turns on an older server");
    tg.wait_for_text(ALICE, |t| t == "first of two turns on an older server")
        .await;
    tg.dm(ALICE, "slow: second of two");
    tg.wait_for_text(ALICE, |t| t == "second of two").await;
    let statuses = tg.calls("sendMessage").into_iter().filter(|c| {
        c.body["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Working · "))
    });
    assert_eq!(statuses.count(), 2, "each turn shows a status message");
    assert!(
        !tg.calls("editMessageText").is_empty(),
        "the status is edited"
    );
    gateway.stop().await;
    assert_eq!(
        tg.calls("sendMessageDraft").len(),
        1,
        "drafts are tried once, then no more"
    );
}
