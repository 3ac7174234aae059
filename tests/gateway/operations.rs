//! Operating the gateway: the health and metrics endpoint over a real conversation, the
//! `health` command, SIGTERM during a slow turn, and a start with no platform enabled.
//! The binary runs as a child process, as a container would run it.

use std::time::{Duration, Instant};

use crate::support::binary::{
    ALICE, fake_app_server, gateway_command, telegram_env, terminate, wait_exit, wait_healthy,
};
use crate::support::telegram::FakeTelegram;
use crate::support::{Gateway, TestEnv, free_port, http_get};

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|line| line.strip_prefix(&format!("codex_gateway_{name} ")))
        .unwrap_or_else(|| panic!("no {name} in:\n{text}"))
        .parse()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_and_metrics_reflect_a_real_conversation() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let port = free_port();
    let mut config = env.telegram_config(&telegram, ALICE);
    config.server.listen = format!("127.0.0.1:{port}");
    let gateway = Gateway::start(&config);
    wait_healthy(port).await;

    let envs = [("CODEX_GATEWAY__SERVER__LISTEN", format!("127.0.0.1:{port}"))];
    let probe = gateway_command(&env, &["health"], &envs).output().unwrap();
    assert!(
        probe.status.success(),
        "{}",
        String::from_utf8_lossy(&probe.stderr)
    );

    let (_, before) = http_get(port, "/metrics").await;
    assert_eq!(metric(&before, "turns_total"), 0);
    assert_eq!(metric(&before, "codex_processes"), 1);
    telegram.dm(ALICE, "hello metrics");
    telegram
        .wait_for_text(ALICE, |t| t == "Echo: hello metrics")
        .await;
    // The streamed text can show before the turn has ended: wait for the count.
    let deadline = Instant::now() + Duration::from_secs(10);
    let after = loop {
        let (status, after) = http_get(port, "/metrics").await;
        assert_eq!(status, 200);
        if metric(&after, "turns_total") == 1 || Instant::now() > deadline {
            break after;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert_eq!(metric(&after, "turns_total"), 1);
    assert_eq!(metric(&after, "thread_starts_total"), 1);
    assert_eq!(metric(&after, "active_chats"), 1);
    assert_eq!(metric(&after, "live_threads"), 1);
    gateway.stop().await;

    let probe = gateway_command(&env, &["health"], &envs).output().unwrap();
    assert_eq!(
        probe.status.code(),
        Some(1),
        "health passed with the gateway stopped"
    );
    assert!(String::from_utf8_lossy(&probe.stderr).contains("cannot reach the gateway"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_during_a_slow_turn_tells_the_chat_and_exits_cleanly() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let port = free_port();
    let child = gateway_command(&env, &["run"], &telegram_env(&telegram, port))
        .spawn()
        .unwrap();
    wait_healthy(port).await;

    telegram.dm(
        ALICE,
        "slow: a story that takes five seconds to tell, at least",
    );
    // The status showing the first streamed words says the turn is running.
    telegram
        .wait_for_status(ALICE, |t| {
            t.starts_with("Working · ") && t.contains("writing: a story")
        })
        .await;
    let signalled = Instant::now();
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    let took = signalled.elapsed();
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} to stop with a 1 s grace"
    );
    telegram
        .wait_for_text(ALICE, |t| t.contains("The gateway is restarting"))
        .await;
    assert_eq!(
        env.codex_processes(),
        Vec::<u32>::new(),
        "app-server left running"
    );
    assert!(!stderr.contains("123:TEST"), "the token reached the logs");

    // The next start resumes the same thread: the model sees the interrupted request.
    let child = gateway_command(&env, &["run"], &telegram_env(&telegram, port))
        .spawn()
        .unwrap();
    wait_healthy(port).await;
    telegram.dm(ALICE, "still there?");
    telegram
        .wait_for_text(ALICE, |t| t == "Echo: still there?")
        .await;
    terminate(&child);
    assert!(wait_exit(child).await.0.success());
    let request = env.model.request_for("still there?");
    assert!(
        request.text().contains("a story that takes five seconds"),
        "context lost"
    );
    assert_eq!(env.rollouts().len(), 1, "a new thread was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_no_platform_it_is_healthy_and_says_so() {
    let env = TestEnv::new().await;
    let port = free_port();
    let envs = [("CODEX_GATEWAY__SERVER__LISTEN", format!("127.0.0.1:{port}"))];
    let child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    wait_healthy(port).await;
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    assert!(status.success(), "{stderr}");
    assert!(stderr.contains("no chat platform is enabled"), "{stderr}");
}

/// At the default grace period (20 s), with a turn waiting for an approval nobody gives:
/// the process is gone within the grace plus 5 s (compose allows 30 s), and the chat is told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_an_approval_pending_exits_within_the_bound() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let port = free_port();
    let mut envs: Vec<_> = telegram_env(&telegram, port)
        .into_iter()
        .filter(|(name, _)| *name != "CODEX_GATEWAY__SERVER__SHUTDOWN_GRACE_SECS")
        .collect();
    envs.push(("CODEX_GATEWAY__CODEX__APPROVAL_POLICY", "untrusted".into()));
    let child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    wait_healthy(port).await;

    telegram.dm(ALICE, "run: touch never-approved.txt");
    telegram
        .wait_for_text(ALICE, |t| t.starts_with("Codex asks to run a command"))
        .await;
    let signalled = Instant::now();
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    let took = signalled.elapsed();
    println!("stop with an approval pending took {took:?} (grace 20 s)");
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(took < Duration::from_secs(25), "took {took:?}");
    telegram
        .wait_for_text(ALICE, |t| t.contains("The gateway is restarting"))
        .await;
    assert!(!env.workspace().join("never-approved.txt").exists());
    assert!(
        !stderr.contains("never-approved.txt"),
        "the command waiting for approval reached the INFO log: {stderr}"
    );
    assert_eq!(
        env.codex_processes(),
        Vec::<u32>::new(),
        "app-server left running"
    );
}

/// An app-server that answers `initialize` and then nothing: alive, but wedged.
/// Answers `initialize` and nothing else; writes each request's line to `<itself>.log`.
const WEDGED_APP_SERVER: &str = r#"#!/usr/bin/env bash
while IFS= read -r line; do
  printf '%s\n' "$line" >> "$0.log"
  if [[ $line == *'"method":"initialize"'* ]]; then
    id=${line#*\"id\":}
    printf '{"id":%s,"result":{"userAgent":"wedged"}}\n' "${id%%,*}"
  fi
done
"#;

/// A process that stops answering is found by the health check and restarted, and
/// `/healthz` answers at once all along (a restart's back-off holds no lock it needs).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wedged_app_server_is_restarted_and_health_never_blocks() {
    use codex_gateway::server::Observed;

    let env = TestEnv::new().await;
    let script = fake_app_server(&env, "wedged-app-server", WEDGED_APP_SERVER);
    let mut config = env.config();
    config.codex.binary = script;
    config.codex.attach = false; // the fake speaks stdio only
    // Shortened for speed: the defaults are a check every 30 s, 10 s to answer.
    config.codex.health_check_secs = 1;
    config.codex.health_check_timeout_secs = 1;
    let app = codex_gateway::App::start(&config).await.unwrap();

    let deadline = Instant::now() + Duration::from_secs(30);
    let mut slowest = Duration::ZERO;
    let mut unhealthy = 0;
    loop {
        let asked = Instant::now();
        let health = app.health().await;
        slowest = slowest.max(asked.elapsed());
        unhealthy += usize::from(health.is_err());
        let text = app.metrics().await;
        if metric(&text, "codex_wedged_total") >= 2 {
            assert!(metric(&text, "codex_restarts_total") >= 1, "{text}");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no wedged process found:\n{text}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    app.shutdown(None).await;
    println!("health check: slowest answer {slowest:?}, {unhealthy} unhealthy answers");
    assert!(slowest < Duration::from_millis(100), "{slowest:?}");
    assert!(unhealthy > 0, "health never showed the restart");
}

/// An app-server that answers `initialize`, then writes a line of 70 MB without an end.
const FLOODING_APP_SERVER: &str = r#"#!/usr/bin/env bash
IFS= read -r line
id=${line#*\"id\":}
printf '{"id":%s,"result":{"userAgent":"flooding"}}\n' "${id%%,*}"
head -c 70000000 /dev/zero | tr '\0' 'x'
sleep 600
"#;

/// A line over 64 MiB from Codex is a broken process: the gateway stops reading it at the
/// cap and restarts the process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_line_from_codex_restarts_it() {
    use codex_gateway::server::Observed;

    let env = TestEnv::new().await;
    let script = fake_app_server(&env, "flooding-app-server", FLOODING_APP_SERVER);
    let mut config = env.config();
    config.codex.binary = script;
    config.codex.attach = false; // the fake speaks stdio only
    let app = codex_gateway::App::start(&config).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while metric(&app.metrics().await, "codex_restarts_total") == 0 {
        assert!(
            Instant::now() < deadline,
            "the flooding process was not restarted"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    app.shutdown(None).await;
}

/// SIGTERM while a message waits on a Codex that stopped answering (its turn is being
/// started): the process still exits within the grace plus 5 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_with_codex_hung_exits_within_the_bound() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let port = free_port();
    let script = fake_app_server(&env, "wedged-app-server", WEDGED_APP_SERVER);
    let mut envs = telegram_env(&telegram, port);
    envs.push(("CODEX_GATEWAY__CODEX__BINARY", script.display().to_string()));
    envs.push(("CODEX_GATEWAY__CODEX__ATTACH", "false".into())); // the fake speaks stdio only
    let child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    wait_healthy(port).await;
    telegram.dm(ALICE, "hello, hung Codex");
    // Taken at once; its working directory (asked for ahead of its thread) is being made
    // by a Codex that never answers.
    let asked = script.with_extension("log");
    let deadline = Instant::now() + crate::support::ANSWER_TIMEOUT;
    let working = |log: String| log.contains("\"fs/createDirectory\"");
    while !std::fs::read_to_string(&asked).is_ok_and(working) {
        assert!(
            Instant::now() < deadline,
            "Codex was never asked for the message"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let signalled = Instant::now();
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    let took = signalled.elapsed();
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(
        took < Duration::from_secs(6),
        "took {took:?} with a 1 s grace"
    );
}

/// An app-server that never answers `initialize` (it hangs at start).
const MUTE_APP_SERVER: &str = "#!/usr/bin/env bash\nexec sleep 3600\n";

/// SIGTERM while Codex hangs at start (its `initialize` unanswered): the gateway exits
/// within the stop grace, as compose's `stop_grace_period` expects, not after the 60 s a
/// request may take.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_while_codex_hangs_at_start_exits_within_the_grace() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let port = free_port();
    let script = fake_app_server(&env, "mute-app-server", MUTE_APP_SERVER);
    let mut envs = telegram_env(&telegram, port);
    envs.push(("CODEX_GATEWAY__CODEX__BINARY", script.display().to_string()));
    envs.push(("CODEX_GATEWAY__CODEX__ATTACH", "false".into())); // the fake speaks stdio only
    let child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    // Serving (its endpoint answers: not yet healthy) while Codex is still starting.
    let (status, _) = crate::support::http_get_when_up(port, "/healthz").await;
    assert_eq!(status, 503, "healthy with a Codex that never started");
    let signalled = Instant::now();
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    let took = signalled.elapsed();
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(
        took < Duration::from_secs(6),
        "took {took:?} with a 1 s grace"
    );
}

/// The Bot API puts the token in every URL, and a proxy in front of it may echo the URL
/// back (Express answers 404 with "Cannot POST <path>"): whatever `api_url` looks like,
/// the token never reaches the log, at DEBUG either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_never_reaches_the_log_whatever_the_api_url() {
    use axum::http::{StatusCode, Uri};

    let env = TestEnv::new().await;
    let echo = axum::Router::new().fallback(|uri: Uri| async move {
        (StatusCode::NOT_FOUND, format!("Cannot POST {}", uri.path()))
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let proxy = format!("http://{}/proxy/bot/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, echo).await.unwrap() });

    let secret = "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsaw0";
    let envs = [
        ("RUST_LOG", "debug".to_owned()),
        (
            "CODEX_GATEWAY__SERVER__LISTEN",
            format!("127.0.0.1:{}", free_port()),
        ),
        ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true".into()),
        (
            "CODEX_GATEWAY__TELEGRAM__TOKEN",
            format!("123456789:{secret}"),
        ),
        ("CODEX_GATEWAY__TELEGRAM__API_URL", proxy),
        ("CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS", ALICE.to_string()),
    ];
    let child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    let (status, stderr) = wait_exit(child).await;
    assert!(!status.success(), "started with a proxy that answers 404");
    assert!(
        stderr.contains("Cannot POST /proxy/bot/bot<redacted>/GetMe"),
        "{stderr}"
    );
    assert!(!stderr.contains(secret), "the token reached the log");
}

/// Telegram is polled while Codex is still starting, and a message that comes meanwhile
/// is answered once Codex is up. The stand-in starts the real Codex after 3 s, leaving a
/// marker when it does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn telegram_polls_while_codex_starts_and_early_messages_wait_for_it() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let marker = env.dir.path().join("codex-started");
    let script = format!(
        "#!/bin/sh\nsleep 3\ntouch {:?}\nexec {:?} \"$@\"\n",
        marker,
        crate::support::codex_binary()
    );
    let mut config = env.telegram_config(&telegram, ALICE);
    config.codex.binary = fake_app_server(&env, "slow-codex", &script);
    config.codex.attach = false; // the fake speaks stdio only
    let gateway = Gateway::start(&config);
    while telegram.polls().is_empty() {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(
        !marker.exists(),
        "Telegram was polled only after Codex started"
    );
    telegram.dm(ALICE, "hello early");
    telegram
        .wait_for_text(ALICE, |t| t == "Echo: hello early")
        .await;
    assert!(marker.exists());
    gateway.stop().await;
}
