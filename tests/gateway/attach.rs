//! A terminal on a chat's live thread (`/attach`): the gateway's own app-server listens on
//! loopback WebSocket, the chat prints the command, and the real `codex` binary joins the
//! thread with the token from its file.

use std::os::unix::fs::PermissionsExt;
use std::time::Duration;

use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use crate::support::telegram::{BOT_USERNAME, FakeTelegram};
use crate::support::ws_client::Client;
use crate::support::{Gateway, TestEnv, codex_binary, processes_named};
use codex_gateway::config::{ApprovalPolicy, Config};
use serde_json::json;

const ALICE: i64 = 1001;
const GROUP: i64 = -100500;

/// What `/attach` printed: the thread, the address, the token's file.
struct Printed {
    thread: String,
    url: String,
    token_file: String,
}

fn read_printed(text: &str) -> Printed {
    let token_file = text
        .split("$(cat ")
        .nth(1)
        .and_then(|rest| rest.split(')').next())
        .expect("no token file in the reply");
    let resume = text
        .lines()
        .find(|line| line.starts_with("codex resume "))
        .expect("no codex resume line");
    let words: Vec<&str> = resume.split_whitespace().collect();
    Printed {
        thread: words[2].to_owned(),
        url: words[4].to_owned(),
        token_file: token_file.to_owned(),
    }
}

/// A gateway on a fake Telegram (`tune` adjusts its config) whose chat with Alice has a
/// thread: one turn answered.
async fn chat_with_a_thread(
    env: &TestEnv,
    tune: impl FnOnce(&mut Config),
) -> (FakeTelegram, Config, Gateway) {
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    tune(&mut config);
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "hello");
    tg.wait_for_text(ALICE, |t| t == "Echo: hello").await;
    (tg, config, gateway)
}

/// Alice's `/attach`, read, and a scripted client connected as it says.
async fn attach_terminal(tg: &FakeTelegram) -> (Printed, Client) {
    tg.dm(ALICE, "/attach");
    let (_, printed) = tg
        .wait_for_text(ALICE, |t| t.starts_with("To join this chat's Codex thread"))
        .await;
    let printed = read_printed(&printed);
    let token = std::fs::read_to_string(&printed.token_file).unwrap();
    let terminal = Client::connect(&printed.url, &token).await;
    (printed, terminal)
}

/// Opens a WebSocket to `url` with `token`; the HTTP status of a refusal, or 101.
async fn upgrade_status(url: &str, token: &str) -> u16 {
    let mut request = url.into_client_request().unwrap();
    let bearer = HeaderValue::from_str(&format!("Bearer {token}")).unwrap();
    request.headers_mut().insert("authorization", bearer);
    match tokio_tungstenite::connect_async(request).await {
        Ok((_, response)) => response.status().as_u16(),
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => response.status().as_u16(),
        Err(error) => panic!("{error}"),
    }
}

/// The terminal's turn runs in the chat's thread and shows in the chat like the chat's
/// own: the prompt headed "From the terminal", the answer as a message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminal_attaches_to_the_chats_live_thread_with_the_printed_command() {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), "attach-gannet-31").unwrap();
    let tg = FakeTelegram::start().await;
    let config = env.telegram_config(&tg, ALICE);
    let gateway = Gateway::start(&config);

    tg.dm(ALICE, "/attach");
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("This chat has no Codex thread yet")
    })
    .await;
    tg.dm(ALICE, "read file notes.txt");
    tg.wait_for_text(ALICE, |t| t == "Tool said: attach-gannet-31")
        .await;
    tg.dm(ALICE, "/attach");
    let (_, printed) = tg
        .wait_for_text(ALICE, |t| t.starts_with("To join this chat's Codex thread"))
        .await;
    let printed = read_printed(&printed);
    assert!(
        printed.url.starts_with("ws://127.0.0.1:"),
        "{}",
        printed.url
    );

    // The token: in a file only the gateway's user reads, never in the chat, never on
    // the app-server's command line (which every user of the machine can read).
    let mode = std::fs::metadata(&printed.token_file)
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");
    let token = std::fs::read_to_string(&printed.token_file).unwrap();
    assert_eq!(token.len(), 64);
    assert!(tg.texts(ALICE).iter().all(|(_, t)| !t.contains(&token)));
    for pid in processes_named("app-server") {
        let command_line = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&command_line).contains(&token));
    }
    assert_eq!(upgrade_status(&printed.url, "not-the-token").await, 401);

    // The terminal's message runs in the chat's own thread: the model sees what the
    // chat's turn read.
    let queued = tokio::process::Command::new(codex_binary())
        .args(["queue", "--thread", &printed.thread])
        .args(["--message", "what did you just read?"])
        .args(["--remote", &printed.url])
        .args(["--remote-auth-token-env", "CODEX_GATEWAY_ATTACH_TOKEN"])
        .env("CODEX_GATEWAY_ATTACH_TOKEN", &token)
        .env("CODEX_HOME", env.codex_home())
        .output();
    let queued = tokio::time::timeout(Duration::from_secs(60), queued)
        .await
        .expect("codex queue hung")
        .unwrap();
    assert!(
        queued.status.success(),
        "codex queue: {}",
        String::from_utf8_lossy(&queued.stderr)
    );
    env.model_asked("what did you just read?").await;
    let request = env.model.request_for("what did you just read?");
    assert!(
        request
            .tool_outputs()
            .iter()
            .any(|output| output.contains("attach-gannet-31")),
        "the terminal's turn ran outside the chat's thread"
    );

    // The chat sees the terminal's turn as its own: what was asked, then the answer.
    tg.wait_for_text(ALICE, |t| t == "From the terminal: what did you just read?")
        .await;
    tg.wait_for_text(ALICE, |t| t == "Earlier I read: attach-gannet-31")
        .await;
    let kept = "SELECT COUNT(*) FROM transcript WHERE text IN \
        ('what did you just read?', 'Earlier I read: attach-gannet-31')";
    env.wait_in_database(kept, |lines| lines == 2).await;

    // The chat goes on in the same thread.
    tg.dm(ALICE, "and now?");
    tg.wait_for_text(ALICE, |t| t == "Echo: and now?").await;
    gateway.stop().await;
    assert_eq!(env.rollouts().len(), 1, "one thread in all");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn attach_is_refused_in_a_group() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let config = env.telegram_config(&tg, ALICE);
    let gateway = Gateway::start(&config);
    tg.group_message(GROUP, ALICE, &format!("/attach@{BOT_USERNAME}"), None);
    tg.wait_for_text(GROUP, |t| {
        t.starts_with("/attach works in a direct message")
    })
    .await;
    gateway.stop().await;
}

/// An approval of the terminal's turn is asked in the chat as well as in the terminal;
/// the first answer wins. Answered in the terminal, the chat's card says so and loses its
/// buttons, and the command runs once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_approval_answered_in_the_terminal_closes_the_chats_card() {
    let env = TestEnv::new().await;
    let untrusted = |config: &mut Config| config.codex.approval_policy = ApprovalPolicy::Untrusted;
    let (tg, _, gateway) = chat_with_a_thread(&env, untrusted).await;
    let (printed, mut terminal) = attach_terminal(&tg).await;
    terminal
        .turn_on(&printed.thread, "run: touch from-terminal.txt")
        .await;
    let asked = terminal
        .server_request()
        .await
        .expect("the terminal is asked");
    let (card, _) = tg
        .wait_for_text(ALICE, |t| {
            t.starts_with("Codex asks to run") && t.contains("touch from-terminal.txt")
        })
        .await;
    terminal
        .respond(&asked["id"], json!({"decision": "accept"}))
        .await;
    tg.wait_for_text(ALICE, |t| t.ends_with("Answered in the terminal."))
        .await;
    tg.wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    gateway.stop().await;
    assert!(env.workspace().join("from-terminal.txt").exists());
    let buttons = &tg.message_of(card).unwrap_or_default()["reply_markup"]["inline_keyboard"];
    assert!(
        buttons.as_array().is_none_or(Vec::is_empty),
        "the card still has buttons: {buttons}"
    );
}

/// A thread started in the terminal on the gateway's Codex is listed by `/threads` and
/// taken into the chat with `/resume`, live: the chat's next message is a turn of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_started_in_the_terminal_is_listed_and_resumed_in_the_chat() {
    let env = TestEnv::new().await;
    let (tg, _, gateway) = chat_with_a_thread(&env, |_| {}).await;
    let (_, mut terminal) = attach_terminal(&tg).await;
    let cwd = env.workspace().display().to_string();
    let thread = terminal
        .start_turn(&cwd, "remember the word osprey", json!({}))
        .await;
    terminal
        .until("turn/completed", Duration::from_secs(30))
        .await
        .expect("the terminal's turn ended");

    tg.dm(ALICE, "/threads");
    let short = &thread[..8];
    tg.wait_for_text(ALICE, |t| t.starts_with("Threads") && t.contains(short))
        .await;
    tg.dm(ALICE, &format!("/resume {thread}"));
    tg.wait_for_text(ALICE, |t| t.starts_with("This chat continues thread"))
        .await;
    tg.dm(ALICE, "which word?");
    tg.wait_for_text(ALICE, |t| t == "Echo: which word?").await;
    gateway.stop().await;
    let seen = env.model.request_for("which word?").text();
    assert!(seen.contains("remember the word osprey"), "{seen}");
}

/// Codex's question in the terminal's turn is asked in the chat too; answered in the
/// terminal first, the chat is told so and Codex goes on with the terminal's answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_answered_in_the_terminal_is_closed_in_the_chat() {
    let env = TestEnv::with_brain(crate::codex_requests::asking_brain()).await;
    let (tg, _, gateway) = chat_with_a_thread(&env, |_| {}).await;
    let (printed, mut terminal) = attach_terminal(&tg).await;
    terminal
        .turn_on(&printed.thread, "ask: set up the app")
        .await;
    let asked = terminal
        .server_request()
        .await
        .expect("the terminal is asked");
    tg.wait_for_text(ALICE, |t| t.starts_with("Codex asks (1 of 2) - Database"))
        .await;
    let answers = json!({"answers": {"db": {"answers": ["Postgres"]},
                                     "name": {"answers": ["tracker"]}}});
    terminal.respond(&asked["id"], answers).await;
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("Codex's question was answered in the terminal")
    })
    .await;
    tg.wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    gateway.stop().await;
    let output = env
        .model
        .requests()
        .iter()
        .rev()
        .find_map(|r| r.tool_outputs().pop());
    let output = output.expect("no answer reached the model");
    assert!(
        output.contains("Postgres") && output.contains("tracker"),
        "{output}"
    );
    assert!(
        tg.texts(ALICE)
            .iter()
            .all(|(_, t)| !t.starts_with("Codex asks (2 of 2)")),
        "the chat went on asking"
    );
}

/// After a restart the chat's thread is not live until the chat uses it; `/attach` makes
/// it live, so the terminal's turns show in the chat at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_a_restart_attach_makes_the_terminals_turns_show() {
    let env = TestEnv::new().await;
    let (tg, config, gateway) = chat_with_a_thread(&env, |_| {}).await;
    gateway.stop().await;

    let gateway = Gateway::start(&config);
    let (printed, mut terminal) = attach_terminal(&tg).await;
    terminal
        .turn_on(&printed.thread, "typed in the terminal")
        .await;
    tg.wait_for_text(ALICE, |t| t == "From the terminal: typed in the terminal")
        .await;
    tg.wait_for_text(ALICE, |t| t == "Echo: typed in the terminal")
        .await;
    gateway.stop().await;
    assert_eq!(env.rollouts().len(), 1, "one thread in all");
}

/// A chat on a worker attaches to the worker: `/attach` prints the worker's address and
/// says the token is the worker's, and a terminal there joins the chat's thread live.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_on_a_worker_attaches_to_the_worker() {
    let env = TestEnv::new().await;
    let worker = crate::support::workers::Worker::start(&env, "w", "token-w").await;
    let (tg, _, gateway) = chat_with_a_thread(&env, |config| {
        config.codex.processes = 0;
        config.codex.remote = vec![worker.remote(&env, "token-w")];
    })
    .await;
    tg.dm(ALICE, "/attach");
    let (_, text) = tg
        .wait_for_text(ALICE, |t| t.starts_with("To join this chat's Codex thread"))
        .await;
    assert!(
        text.contains("export CODEX_GATEWAY_ATTACH_TOKEN=<the worker's token"),
        "{text}"
    );
    let resume = text
        .lines()
        .find(|l| l.starts_with("codex resume "))
        .unwrap();
    let words: Vec<&str> = resume.split_whitespace().collect();
    assert_eq!(words[4], worker.url(), "{resume}");
    // All the worker holds is the token's digest, and the digest opens nothing.
    assert_eq!(upgrade_status(words[4], &worker.digest()).await, 401);
    let mut terminal = Client::connect(words[4], "token-w").await;
    terminal.turn_on(words[2], "typed on the worker").await;
    tg.wait_for_text(ALICE, |t| t == "From the terminal: typed on the worker")
        .await;
    tg.wait_for_text(ALICE, |t| t == "Echo: typed on the worker")
        .await;
    gateway.stop().await;
    assert_eq!(worker.rollouts(), 1, "one thread, on the worker");
}
