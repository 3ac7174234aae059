//! The `codex-gateway` binary: console chat, check-config and bad input, run as a user would.

use std::io::Write;
use std::process::{Command, Output, Stdio};

use crate::support::{TestEnv, codex_binary};

fn gateway(args: &[&str], stdin: &[u8], envs: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_codex-gateway"))
        .args(args)
        .envs(envs.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin).unwrap();
    drop(input);
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs the blocking binary off the async runtime that serves the fake model.
async fn console(env: &TestEnv, stdin: Vec<u8>, envs: Vec<(&'static str, &'static str)>) -> Output {
    let config = env.config_file("");
    tokio::task::spawn_blocking(move || {
        let config = config.to_str().unwrap();
        gateway(
            &["console", "--config", config, "--chat", "me"],
            &stdin,
            &envs,
        )
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_chat_continues_across_runs() {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), "console-heron-93").unwrap();

    let first = console(&env, b"read file notes.txt\n".to_vec(), vec![]).await;
    assert!(first.status.success(), "stderr: {}", text(&first.stderr));
    let stdout = text(&first.stdout);
    assert!(stdout.contains("running: "), "no progress line: {stdout}");
    assert!(
        stdout.contains("Tool said: console-heron-93"),
        "stdout: {stdout}"
    );

    let second = console(&env, b"what did you just read?\n/status\n".to_vec(), vec![]).await;
    assert!(second.status.success(), "stderr: {}", text(&second.stderr));
    let stdout = text(&second.stdout);
    assert!(
        stdout.contains("Earlier I read: console-heron-93"),
        "stdout: {stdout}"
    );
    // /status is answered at once, while the turn still runs.
    assert!(
        stdout.contains("(live)"),
        "status during the turn: {stdout}"
    );
    assert!(
        env.model
            .request_for("what did you just read?")
            .tool_outputs()
            .iter()
            .any(|o| o.contains("console-heron-93"))
    );
    assert_eq!(env.rollouts().len(), 1, "one thread across both runs");

    let third = console(&env, b"/status\n".to_vec(), vec![]).await;
    let stdout = text(&third.stdout);
    assert!(
        stdout.contains("(stored; resumed on the next message)"),
        "{stdout}"
    );
    assert!(stdout.contains("Turns: 2"), "{stdout}");
    assert!(stdout.contains("Context: 110 / "), "{stdout}");
    assert_eq!(
        env.codex_processes(),
        Vec::<u32>::new(),
        "app-server outlived the gateway"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gateway_secrets_never_reach_codex() {
    let env = TestEnv::new().await;
    let output = console(
        &env,
        b"run: env | grep -e secret -e CODEX_GATEWAY -e MOCK_API\n".to_vec(),
        vec![
            ("CODEX_GATEWAY__TELEGRAM__TOKEN", "tg-secret-5150"),
            ("CODEX_GATEWAY__DISCORD__TOKEN", "dc-secret-6160"),
            ("SOME_OTHER_NAME", "tg-secret-5150"),
        ],
    )
    .await;
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let request = env.model.request_for("run: env");
    let request = env
        .model
        .requests()
        .into_iter()
        .find(|r| !r.tool_outputs().is_empty())
        .unwrap_or_else(|| panic!("env never ran: {}", request.text()));
    let env_dump = request.tool_outputs().join("\n");
    assert!(
        env_dump.contains("MOCK_API_KEY=test-key"),
        "env not captured: {env_dump}"
    );
    for secret in ["tg-secret-5150", "dc-secret-6160", "CODEX_GATEWAY__"] {
        assert!(
            !env_dump.contains(secret),
            "{secret} reached codex: {env_dump}"
        );
    }
    let all_output = text(&output.stdout) + &text(&output.stderr);
    assert!(!all_output.contains("tg-secret-5150") && !all_output.contains("dc-secret-6160"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_answers_and_no_codex_turn() {
    let env = TestEnv::new().await;
    let mut stdin = b"\n   \n/frobnicate now\n\xff\xfe broken\n".to_vec();
    stdin.extend(std::iter::repeat_n(b'x', 1024 * 1024));
    stdin.extend(b"\n/help\n");
    let output = console(&env, stdin, vec![]).await;
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    for expected in [
        "(empty message ignored)",
        "Unknown command /frobnicate",
        "Line 4 is not valid UTF-8",
        "the limit is 262144",
        "/new - start a fresh Codex thread",
    ] {
        assert!(
            stdout.contains(expected),
            "missing {expected:?} in: {stdout}"
        );
    }
    assert!(
        env.model.requests().is_empty(),
        "bad input reached the model"
    );
    assert!(env.rollouts().is_empty(), "a thread was started");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_config_reports_what_it_checked() {
    let env = TestEnv::new().await;
    let config = env.config_file("");
    let output = gateway(
        &["check-config", "--config", config.to_str().unwrap()],
        b"",
        &[],
    );
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    let told = [
        format!("config: {} read", config.display()),
        format!("database: {} opened and migrated", env.database().display()),
        format!(
            "{} 0.171.0 started and answered initialize",
            codex_binary().display()
        ),
        "codex: logged in, or its model provider needs no login".into(),
        "platforms: none enabled".into(),
        format!("workspace: {} is usable", env.workspace().display()),
    ];
    for line in told {
        assert!(stdout.contains(&line), "missing {line:?}: {stdout}");
    }
    assert!(env.database().exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_setups_fail_with_a_clear_message() {
    let env = TestEnv::new().await;
    let config = env.config_file("");
    let config = config.to_str().unwrap();
    let cases: &[(&[(&str, &str)], &str)] = &[
        (
            &[("CODEX_GATEWAY__CODEX__BINARY", "/nonexistent/codex")],
            "could not start the Codex app-server (/nonexistent/codex)",
        ),
        (
            &[("CODEX_GATEWAY__CODEX__BINARY", "/bin/true")],
            "could not start the Codex app-server (/bin/true)",
        ),
        (
            &[("CODEX_GATEWAY__STORAGE__DATABASE", "/proc/nope/gateway.db")],
            "cannot open the database at /proc/nope/gateway.db",
        ),
        (
            &[("CODEX_GATEWAY__CODEX__SANDBOX", "sometimes")],
            "unknown variant `sometimes`, expected one of `read-only`, `workspace-write`, \
             `danger-full-access` for key `codex.sandbox`",
        ),
        (
            &[("CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS", "123,@alice")],
            "\"@alice\" is not an id: users, channels, roles and servers are given by their \
             numeric id (123456789), not by name. Your Telegram id: message @userinfobot.",
        ),
        (
            &[("CODEX_GATEWAY__CODEX__BINARY", "/nonexistent/codex")],
            "install Codex (npm install -g @openai/codex@0.171.0",
        ),
    ];
    for (envs, expected) in cases {
        for command in ["check-config", "console"] {
            let output = gateway(&[command, "--config", config], b"hello\n", envs);
            let stderr = text(&output.stderr);
            assert_eq!(
                output.status.code(),
                Some(1),
                "{command} {envs:?}: {stderr}"
            );
            assert!(stderr.contains(expected), "{command} {envs:?}: {stderr}");
            assert!(!stderr.contains("panicked"), "{stderr}");
        }
    }
    let missing = gateway(&["check-config", "--config", "/nonexistent.toml"], b"", &[]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(text(&missing.stderr).contains("/nonexistent.toml does not exist"));
    assert!(env.model.requests().is_empty());
}

/// Codex's own reason for not starting is in the error at the default log level, the
/// gateway's secrets replaced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn codex_says_why_it_did_not_start() {
    let env = TestEnv::new().await;
    let config = env.config_file("");
    let config = config.to_str().unwrap();
    let home_file = env.dir.path().join("home-is-a-file");
    std::fs::write(&home_file, "").unwrap();
    let secret = "sk-test-secret-4711";
    let leaky = env.dir.path().join("leaky-codex");
    std::fs::write(
        &leaky,
        format!("#!/bin/sh\necho \"Error: key {secret} was refused\" >&2\nexit 1\n"),
    )
    .unwrap();
    let executable = std::os::unix::fs::PermissionsExt::from_mode(0o755);
    std::fs::set_permissions(&leaky, executable).unwrap();
    let cases = [
        (
            vec![("CODEX_GATEWAY__CODEX__HOME", home_file.to_str().unwrap())],
            "Codex said: ",
            "but that path is not a directory",
        ),
        (
            vec![
                ("CODEX_GATEWAY__CODEX__BINARY", leaky.to_str().unwrap()),
                ("CODEX_GATEWAY_TRANSCRIPTION_KEY", secret),
            ],
            "Codex said: Error: key *** was refused",
            "initialize failed",
        ),
    ];
    for (envs, said, why) in cases {
        let output = gateway(&["check-config", "--config", config], b"", &envs);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{envs:?}: {stderr}");
        assert!(stderr.contains(said), "{envs:?}: {stderr}");
        assert!(stderr.contains(why), "{envs:?}: {stderr}");
        assert!(!stderr.contains(secret), "a secret in the error: {stderr}");
        assert!(
            !stderr.contains("<unknown>"),
            "a backtrace in the error: {stderr}"
        );
    }
}

/// CODEX_HOME/config.toml of a fresh install: the default OpenAI provider, no login.
const DEFAULT_PROVIDER: &str = r#"check_for_update_on_startup = false
[analytics]
enabled = false
"#;

/// No login and no route to the model: the gateway says so at once, in check-config (which
/// fails) and in the console (to every message), instead of Codex retrying in silence.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_login_is_said_at_once() {
    let env = TestEnv::new().await;
    std::fs::write(env.codex_home().join("config.toml"), DEFAULT_PROVIDER).unwrap();
    // No key from the machine running the tests, and nothing leaves this host.
    let envs = vec![
        ("OPENAI_API_KEY", ""),
        ("CODEX_API_KEY", ""),
        ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1"),
    ];
    let config = env.config_file("");
    let started = std::time::Instant::now();
    let check_envs = envs.clone();
    let check = tokio::task::spawn_blocking(move || {
        let config = config.to_str().unwrap().to_owned();
        gateway(&["check-config", "--config", &config], b"", &check_envs)
    })
    .await
    .unwrap();
    let took = started.elapsed();
    assert!(
        !check.status.success(),
        "check-config passed without a login"
    );
    assert!(
        text(&check.stderr).contains("not logged in"),
        "{}",
        text(&check.stderr)
    );
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");

    let started = std::time::Instant::now();
    let chat = console(&env, b"hello\nstill there?\n".to_vec(), envs).await;
    let took = started.elapsed();
    let stdout = text(&chat.stdout);
    assert_eq!(stdout.matches("not logged in").count(), 2, "{stdout}");
    assert!(
        text(&chat.stderr).contains("not logged in"),
        "no line at start"
    );
    assert!(took < std::time::Duration::from_secs(5), "{took:?}");
    assert!(env.model.requests().is_empty());
}
