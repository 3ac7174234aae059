//! A user's words never reach the log: not at `RUST_LOG=trace`, not on a failure path, not
//! through a library's own logging. A marker string travels every path a message can
//! take, on both platforms, and the whole log of the run is searched for it.

use std::io::Read;
use std::sync::Arc;

use crate::support::binary::{ALICE, gateway_command, telegram_env, terminate};
use crate::support::discord::{self, BOT_ID, FakeDiscord};
use crate::support::model::{Brain, Reply, default_brain};
use crate::support::telegram::{FakeTelegram, Fault, LONE_SURROGATE};
use crate::support::{TestEnv, free_port};

const MARKER: &str = "zebra-marker-5521";
const DISCORD_CHANNEL: u64 = 600;
const STRANGER: i64 = 3003;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_message_text_reaches_the_log_even_at_trace() {
    let echo = default_brain();
    let brain: Brain = Arc::new(move |request| match request.last_human_text() {
        text if text.starts_with("fail:") => Reply::Fail(400),
        _ => echo(request),
    });
    let env = TestEnv::with_brain(brain).await;
    let tg = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let mut envs = telegram_env(&tg, free_port());
    envs.extend([
        ("RUST_LOG", "trace".to_owned()),
        ("CODEX_GATEWAY__DISCORD__ENABLED", "true".into()),
        ("CODEX_GATEWAY__DISCORD__TOKEN", discord::TOKEN.into()),
        (
            "CODEX_GATEWAY__DISCORD__APPLICATION_ID",
            discord::APP_ID.to_string(),
        ),
        ("CODEX_GATEWAY__DISCORD__API_URL", discord.url.clone()),
        ("CODEX_GATEWAY__DISCORD__ALLOWED_USERS", ALICE.to_string()),
    ]);
    let mut child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    // At trace the log is large: it is read as it comes, so the pipe never fills.
    let mut stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut log = String::new();
        stderr.read_to_string(&mut log).unwrap();
        log
    });
    discord.wait_connected(1).await;

    // A plain turn, on each platform.
    tg.dm(ALICE, &format!("hello {MARKER}"));
    tg.wait_for_text(ALICE, |t| t == format!("Echo: hello {MARKER}"))
        .await;
    discord.channel_message(
        DISCORD_CHANNEL,
        1001,
        &[],
        &format!("<@{BOT_ID}> hi {MARKER}"),
    );
    discord
        .wait_for_content(DISCORD_CHANNEL, |t| t == format!("Echo: hi {MARKER}"))
        .await;
    // An update that cannot be read as it came, and an answer Telegram first refuses.
    tg.dm(ALICE, &format!("cut {LONE_SURROGATE} {MARKER}"));
    tg.wait_for_text(ALICE, |t| t.starts_with("Echo: cut \u{FFFD}"))
        .await;
    tg.fail_next(
        "sendMessage",
        Fault::server(502, "<html>Bad Gateway</html>"),
    );
    tg.dm(ALICE, &format!("through a 502 {MARKER}"));
    tg.wait_for_text(ALICE, |t| t.contains("through a 502"))
        .await;
    // A message steered into a running turn, one the model fails, commands with it.
    let slow = format!("slow: a long story {MARKER}");
    tg.dm(ALICE, &slow);
    env.model_asked(&slow).await;
    tg.dm(ALICE, &format!("and also {MARKER}"));
    tg.wait_for_text(ALICE, |t| t.starts_with("Echo: and also"))
        .await;
    tg.dm(ALICE, &format!("fail: {MARKER}"));
    tg.wait_for_text(ALICE, |t| t.contains("Codex failed"))
        .await;
    for command in [
        format!("/name {MARKER}"),
        format!("/{MARKER}"),
        format!("/every 1000000d {MARKER}"),
        format!("/at 99:99 {MARKER}"),
        format!("/get {MARKER}.txt"),
    ] {
        let before = tg.texts(ALICE).len();
        tg.dm(ALICE, &command);
        while tg.texts(ALICE).len() == before {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
    // Strangers, who are refused.
    tg.dm(STRANGER, &format!("let me in {MARKER}"));
    tg.wait_for_text(STRANGER, |t| t.contains("not allowed"))
        .await;
    discord.dm(803, 3003, &format!("me too {MARKER}"));
    discord
        .wait_for_content(803, |t| t.contains("not allowed"))
        .await;

    terminate(&child);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success());
    let log = log.join().unwrap();
    assert!(log.contains("TRACE"), "the log was not at trace");
    assert!(log.len() > 100_000, "a short log: {} bytes", log.len());
    let leaks: Vec<&str> = log.lines().filter(|line| line.contains(MARKER)).collect();
    assert!(
        leaks.is_empty(),
        "{} lines carry message text:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}
