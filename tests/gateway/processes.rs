//! Nothing Codex starts outlives the gateway: a command Codex leaves running on purpose
//! (`setsid ... &`) is ended when the gateway stops, and when its app-server is restarted.
//! The binary runs as a child process, as a container would run it.

use std::time::{Duration, Instant};

use crate::support::binary::{
    ALICE, fake_app_server, gateway_command, telegram_env, terminate, wait_exit, wait_healthy,
};
use crate::support::telegram::FakeTelegram;
use crate::support::{TestEnv, processes_named};

async fn wait_until(what: &str, within: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + within;
    while !done() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A shell command that leaves `sleep 600` running under the name `marker`, detached
/// from its session and its output, as a background server would be started.
fn detached_sleep(marker: &str) -> String {
    format!("setsid bash -c 'exec -a {marker} sleep 600' </dev/null >/dev/null 2>&1 &")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_codex_detached_is_ended_with_the_gateway() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let port = crate::support::free_port();
    let child = gateway_command(&env, &["run"], &telegram_env(&telegram, port))
        .spawn()
        .unwrap();
    wait_healthy(port).await;

    let marker = format!("leftover-of-test-{}", std::process::id());
    telegram.dm(ALICE, &format!("run: {}", detached_sleep(&marker)));
    telegram
        .wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    wait_until(
        "the detached command never ran",
        Duration::from_secs(10),
        || !processes_named(&marker).is_empty(),
    )
    .await;

    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    assert!(status.success(), "exit {status}: {stderr}");
    assert_eq!(
        processes_named(&marker),
        Vec::<u32>::new(),
        "the detached command outlived the gateway: {stderr}"
    );
}

/// Starts a detached `sleep` named after itself, answers `initialize`, and exits a
/// moment later, the first time only; after that it answers `initialize` and waits.
const LEAVING_APP_SERVER: &str = r#"#!/usr/bin/env bash
first=0
if mkdir "$0.crashed" 2>/dev/null; then
  first=1
  setsid bash -c 'exec -a leftover-of-app-server-'"$PPID"'-'"$$"' sleep 600' </dev/null >/dev/null 2>&1 &
fi
while IFS= read -r line; do
  if [[ $line == *'"method":"initialize"'* ]]; then
    id=${line#*\"id\":}
    printf '{"id":%s,"result":{"userAgent":"leaving"}}\n' "${id%%,*}"
    if [[ $first == 1 ]]; then sleep 1; exit 1; fi
  fi
done
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_app_server_restart_ends_what_its_commands_left_running() {
    let env = TestEnv::new().await;
    let port = crate::support::free_port();
    let script = fake_app_server(&env, "leaving-app-server", LEAVING_APP_SERVER);
    let envs = [
        ("CODEX_GATEWAY__SERVER__LISTEN", format!("127.0.0.1:{port}")),
        ("CODEX_GATEWAY__CODEX__BINARY", script.display().to_string()),
        // The fake speaks stdio only.
        ("CODEX_GATEWAY__CODEX__ATTACH", "false".into()),
    ];
    let mut child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    let marker = format!("leftover-of-app-server-{}-", child.id());
    wait_until(
        "the first app-server left nothing running",
        Duration::from_secs(20),
        || !processes_named(&marker).is_empty(),
    )
    .await;

    // The first app-server exits; the gateway restarts it and ends its leftover, while
    // it keeps running itself.
    wait_until(
        "the leftover of the crashed app-server is still running",
        Duration::from_secs(20),
        || processes_named(&marker).is_empty(),
    )
    .await;
    assert!(child.try_wait().unwrap().is_none(), "the gateway exited");
    wait_healthy(port).await;
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(
        stderr.contains("codex app-server died; restarting it"),
        "{stderr}"
    );
}
