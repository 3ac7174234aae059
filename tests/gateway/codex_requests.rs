//! Codex's own requests of a person, over real traffic (the real app-server, the fake
//! model calling Codex's `request_user_input` and `request_permissions` tools, fake
//! Telegram): questions answered by a button press and by a typed reply, or by nobody in
//! time; more access granted by Accept and refused by Decline; a sub-agent's approval
//! asked in the chat of the thread that spawned it; an MCP server's form (the stand-in
//! `examples/fake_mcp_server.rs`) filled in by presses and a typed reply.

use std::sync::Arc;

use crate::support::telegram::{FakeTelegram, button_data, button_labels};
use crate::support::{Brain, Gateway, Reply, TestEnv, default_brain};
use codex_gateway::config::ApprovalPolicy;
use serde_json::{Value, json};

const ALICE: i64 = 1001;
const MALLORY: i64 = 666;

/// The default brain, plus: "ask: …" has the model ask two questions (each with
/// options, Codex adding "Other"), "access: PATH" has it ask for network access and writing PATH.
pub(crate) fn asking_brain() -> Brain {
    let default = default_brain();
    Arc::new(move |request| {
        let text = request.last_human_text();
        if request.ends_with_tool_output() {
            let output = request.tool_outputs().pop().unwrap_or_default();
            let spawned = serde_json::from_str::<Value>(&output).ok();
            if let Some(agent) = spawned.as_ref().and_then(|o| o["agent_id"].as_str()) {
                return Reply::Call {
                    name: "multi_agent_v1.wait_agent",
                    arguments: json!({"targets": [agent], "timeout_ms": 10000}),
                };
            }
            if text.starts_with("delegate: ") {
                return Reply::Text("The sub-agent is done.".into());
            }
            return default(request);
        }
        if text.starts_with("ask: ") {
            let arguments = json!({"questions": [
                {"id": "db", "header": "Database", "question": "Which database should the app use?",
                 "options": [{"label": "SQLite (Recommended)", "description": "one file, no server"},
                             {"label": "Postgres", "description": "a server to run"}]},
                // 0.171 refuses a question without options; "Other" is a typed answer.
                {"id": "name", "header": "Name", "question": "What is the app called?",
                 "options": [{"label": "app", "description": "the folder's name"},
                             {"label": "tracker", "description": "what it does"}]}]});
            return Reply::Call {
                name: "request_user_input",
                arguments,
            };
        }
        if let Some(work) = text.strip_prefix("delegate: ") {
            // Codex's default multi-agent tool: the sub-agent gets `work` as its prompt.
            return Reply::Call {
                name: "multi_agent_v1.spawn_agent",
                arguments: json!({"message": work}),
            };
        }
        if text.starts_with("deploy: ") {
            return Reply::Call {
                name: "mcp__deploy.deploy",
                arguments: json!({}),
            };
        }
        if let Some(path) = text.strip_prefix("access: ") {
            let arguments = json!({"reason": "to fetch the dependencies",
                "permissions": {"network": {"enabled": true},
                                "file_system": {"write": [path.trim()]}}});
            return Reply::Call {
                name: "request_permissions",
                arguments,
            };
        }
        default(request)
    })
}

/// Waits until `count` of Alice's messages show an answer to a tool's output.
async fn answers_shown(tg: &FakeTelegram, count: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let texts = tg.texts(ALICE);
        let shown = texts
            .iter()
            .filter(|(_, t)| t.contains("Tool said:"))
            .count();
        if shown >= count {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{shown} of {count} answers: {texts:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// What the model got back from its last tool call, as JSON.
fn last_tool_output(env: &TestEnv) -> Value {
    let requests = env.model.requests();
    let output = requests.iter().rev().find_map(|r| r.tool_outputs().pop());
    serde_json::from_str(&output.expect("no tool output reached the model")).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_questions_are_answered_by_a_press_and_a_typed_reply_or_time_out() {
    let env = TestEnv::with_brain(asking_brain()).await;
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    let gateway = Gateway::start(&config);

    tg.dm(ALICE, "ask: set up the app");
    let call = tg
        .sent_message(|t| t.starts_with("Codex asks (1 of 2) - Database"))
        .await;
    let text = call.body["text"].as_str().unwrap();
    assert!(text.contains("2. Postgres: a server to run"), "{text}");
    let labels = button_labels(&call.body);
    assert_eq!(labels, ["SQLite (Recommended)", "Postgres"]);
    let question = tg.message_id_of(&call).await;
    let postgres = button_data(&call.body, "Postgres");
    // Someone not allowed answers nothing (and is told why, in an alert only they see).
    tg.press(MALLORY, ALICE, question, &postgres);
    tg.wait_for_call("answerCallbackQuery", |b| {
        let said = b["text"].as_str().unwrap_or_default();
        b["show_alert"] == true && said.contains("not allowed") && said.contains("666")
    })
    .await;
    tg.press(ALICE, ALICE, question, &postgres);
    tg.wait_for_text(ALICE, |t| t.starts_with("Codex asks (2 of 2) - Name"))
        .await;
    // The answered card says who chose and when, and keeps nothing to press.
    tg.wait_for_call("editMessageText", |b| b["message_id"] == question)
        .await;
    let card = tg.text_of(question).unwrap_or_default();
    assert!(
        card.contains("\n\nAnswered Postgres by User1001 at "),
        "{card}"
    );
    let keyboard = &tg.message_of(question).unwrap_or_default()["reply_markup"];
    assert!(keyboard.is_null(), "buttons left: {keyboard}");
    // A plain message answers the question Codex waits on ("Other"); it does not steer.
    tg.dm(ALICE, "Puffin Tracker");
    answers_shown(&tg, 1).await;
    let answers = last_tool_output(&env);
    assert_eq!(
        answers,
        json!({"answers": {"db": {"answers": ["Postgres"]},
                           "name": {"answers": ["Puffin Tracker"]}}})
    );
    gateway.stop().await;

    // Nobody answers: Codex hears so when approval_timeout_secs passes, and goes on.
    config.codex.approval_timeout_secs = 2;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "ask: again");
    tg.wait_for_calls("sendMessage", 2, |b| {
        b["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("Codex asks (1 of 2)"))
    })
    .await;
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("Nobody answered Codex's question in time")
    })
    .await;
    answers_shown(&tg, 2).await;
    assert_eq!(last_tool_output(&env), json!({"answers": {}}));
    gateway.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn more_access_is_granted_by_accept_and_refused_by_decline() {
    let env = TestEnv::with_brain(asking_brain()).await;
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    config.codex.approval_policy = ApprovalPolicy::OnRequest;
    let gateway = Gateway::start(&config);
    let outside = env.dir.path().join("outside");

    tg.dm(ALICE, &format!("access: {}", outside.display()));
    let call = tg
        .sent_message(|t| t.starts_with("Codex asks for more access"))
        .await;
    let text = call.body["text"].as_str().unwrap();
    assert!(text.contains("network access"), "{text}");
    assert!(
        text.contains(&format!("write {}", outside.display())),
        "{text}"
    );
    assert!(text.contains("to fetch the dependencies"), "{text}");
    let labels = button_labels(&call.body);
    assert_eq!(labels, ["Accept", "Accept for session", "Decline"]);
    let card = tg.message_id_of(&call).await;
    tg.press(ALICE, ALICE, card, &button_data(&call.body, "Accept"));
    answers_shown(&tg, 1).await;
    let granted = last_tool_output(&env);
    assert_eq!(granted["scope"], "turn");
    assert_eq!(granted["permissions"]["network"]["enabled"], true);

    tg.dm(ALICE, &format!("access: {}", outside.display()));
    let call = tg
        .wait_for_calls("sendMessage", 2, |b| {
            b["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Codex asks for more access"))
        })
        .await
        .pop()
        .unwrap();
    let card = tg.message_id_of(&call).await;
    tg.press(ALICE, ALICE, card, &button_data(&call.body, "Decline"));
    tg.wait_for_text(ALICE, |t| t.contains("Decline by")).await;
    answers_shown(&tg, 2).await;
    let refused = last_tool_output(&env);
    assert_eq!(refused["permissions"]["network"], Value::Null, "{refused}");
    gateway.stop().await;
}

/// Measured with 0.171.0: a sub-agent's requests carry its own thread id, which only the
/// parent's `spawnAgent` item names; nobody follows that thread, so before the gateway
/// routed them to the parent's chat they were declined unseen.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sub_agents_approval_is_asked_in_the_chat_of_its_parent() {
    let env = TestEnv::with_brain(asking_brain()).await;
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let gateway = Gateway::start(&config);

    tg.dm(ALICE, "delegate: run: touch by-sub-agent.txt");
    let call = tg
        .sent_message(|t| t.starts_with("Codex asks to run") && t.contains("by-sub-agent.txt"))
        .await;
    let card = tg.message_id_of(&call).await;
    tg.press(ALICE, ALICE, card, &button_data(&call.body, "Accept"));
    tg.wait_for_text(ALICE, |t| t.contains("The sub-agent is done."))
        .await;
    assert!(
        env.workspace().join("by-sub-agent.txt").exists(),
        "the sub-agent's approved command did not run"
    );
    gateway.stop().await;
}

/// The stand-in MCP server, built with the tests (`cargo test` builds the examples).
fn fake_mcp_server() -> std::path::PathBuf {
    let test = std::env::current_exe().unwrap();
    let debug = test.parent().and_then(|deps| deps.parent()).unwrap();
    let server = debug.join("examples").join("fake_mcp_server");
    assert!(server.exists(), "{} not built", server.display());
    server
}

/// Alice presses the button labelled `label` on the message `call` sent.
async fn press(tg: &FakeTelegram, call: &crate::support::telegram::Call, label: &str) {
    let message = tg.message_id_of(call).await;
    tg.press(ALICE, ALICE, message, &button_data(&call.body, label));
}

/// Measured with 0.171.0: with approvals on, Codex first asks itself, as an elicitation
/// without fields ("Allow the deploy MCP server to run tool \"deploy\"?"), then relays
/// the server's form; its fields come in name order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_mcp_servers_form_is_filled_in_from_the_chat() {
    let env = TestEnv::with_brain(asking_brain()).await;
    let config_file = env.codex_home().join("config.toml");
    let mut codex_config = std::fs::read_to_string(&config_file).unwrap();
    codex_config.push_str(&format!(
        "[mcp_servers.deploy]\ncommand = {:?}\n",
        fake_mcp_server().display().to_string()
    ));
    std::fs::write(&config_file, codex_config).unwrap();
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let gateway = Gateway::start(&config);

    tg.dm(ALICE, "deploy: the app");
    let consent = tg
        .sent_message(|t| t.contains("MCP server deploy") && t.contains("run tool"))
        .await;
    press(&tg, &consent, "Accept").await;
    let note = tg
        .sent_message(|t| t.starts_with("Codex asks (1 of 3)"))
        .await;
    assert!(
        note.body["text"]
            .as_str()
            .unwrap()
            .contains("Where should I deploy?\nNote")
    );
    press(&tg, &note, "Skip").await;
    let region = tg
        .sent_message(|t| t.starts_with("Codex asks (2 of 3)"))
        .await;
    assert_eq!(button_labels(&region.body), ["eu-west", "us-east"]);
    press(&tg, &region, "us-east").await;
    tg.sent_message(|t| t.starts_with("Codex asks (3 of 3)") && t.contains("Replicas"))
        .await;
    tg.dm(ALICE, "3");
    answers_shown(&tg, 1).await;
    let requests = env.model.requests();
    let output = requests
        .iter()
        .rev()
        .find_map(|r| r.tool_outputs().pop())
        .unwrap();
    assert!(output.contains("deploy answer"), "{output}");
    for part in ["accept", "us-east", "replicas", ":3"] {
        assert!(output.contains(part), "{part} not in {output}");
    }
    assert!(
        !output.contains("note"),
        "a skipped field was sent: {output}"
    );
    gateway.stop().await;

    // Nobody fills the form in: the MCP server hears "decline" at approval_timeout_secs.
    config.codex.approval_timeout_secs = 2;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "deploy: again");
    let consent = tg
        .wait_for_calls("sendMessage", 2, |b| {
            b["text"].as_str().is_some_and(|t| t.contains("run tool"))
        })
        .await;
    press(&tg, consent.last().unwrap(), "Accept").await;
    tg.wait_for_text(ALICE, |t| t.starts_with("Nobody answered"))
        .await;
    answers_shown(&tg, 2).await;
    let requests = env.model.requests();
    let output = requests.iter().rev().find_map(|r| r.tool_outputs().pop());
    let output = output.unwrap();
    assert!(
        output.contains("deploy answer") && output.contains("decline"),
        "{output}"
    );
    gateway.stop().await;
}
