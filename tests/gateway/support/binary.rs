//! The gateway binary as a child process, as a container runs it: its command line, a
//! Telegram setup, health, SIGTERM and exit; executable stand-ins for `codex`.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::telegram::FakeTelegram;
use super::{TestEnv, http_get};

/// The Telegram user `telegram_env` allows.
pub const ALICE: i64 = 1001;

/// `codex-gateway ARGS` with the test's config file and `envs`.
pub fn gateway_command(env: &TestEnv, args: &[&str], envs: &[(&str, String)]) -> Command {
    gateway_command_of(env!("CARGO_BIN_EXE_codex-gateway"), env, args, envs)
}

/// The same with the gateway binary at `program` (a copy another user can reach).
pub fn gateway_command_of(
    program: impl AsRef<std::ffi::OsStr>,
    env: &TestEnv,
    args: &[&str],
    envs: &[(&str, String)],
) -> Command {
    let mut command = Command::new(program);
    command
        .args(args)
        .arg("--config")
        .arg(env.config_file(""))
        .envs(envs.iter().map(|(k, v)| (*k, v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    command
}

pub fn telegram_env(telegram: &FakeTelegram, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("CODEX_GATEWAY__SERVER__LISTEN", format!("127.0.0.1:{port}")),
        ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true".into()),
        (
            "CODEX_GATEWAY__TELEGRAM__TOKEN",
            super::telegram::TOKEN.into(),
        ),
        ("CODEX_GATEWAY__TELEGRAM__API_URL", telegram.url.clone()),
        ("CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS", ALICE.to_string()),
        ("CODEX_GATEWAY__SERVER__SHUTDOWN_GRACE_SECS", "1".into()),
    ]
}

pub async fn wait_healthy(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
            && http_get(port, "/healthz").await.0 == 200
        {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "the gateway never became healthy"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `codex-gateway run` with `envs`, healthy on `port`; its log is drained as it comes,
/// so a full pipe never stalls it.
pub async fn run_healthy(env: &TestEnv, envs: &[(&str, String)], port: u16) -> Child {
    let mut child = gateway_command(env, &["run"], envs).spawn().unwrap();
    let mut log = child.stderr.take().unwrap();
    std::thread::spawn(move || std::io::copy(&mut log, &mut std::io::sink()));
    wait_healthy(port).await;
    child
}

/// Kills the gateway as a crash or the OOM killer would (SIGKILL), and reaps it.
pub fn crash(mut child: Child) {
    child.kill().unwrap();
    child.wait().unwrap();
}

pub fn terminate(child: &Child) {
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
}

pub async fn wait_exit(mut child: Child) -> (std::process::ExitStatus, String) {
    let status = tokio::task::spawn_blocking(move || {
        let status = child.wait().unwrap();
        let mut stderr = String::new();
        std::io::Read::read_to_string(child.stderr.as_mut().unwrap(), &mut stderr).unwrap();
        (status, stderr)
    });
    tokio::time::timeout(Duration::from_secs(60), status)
        .await
        .expect("the gateway did not exit")
        .unwrap()
}

/// Writes `script` into the test's folder as an executable stand-in for `codex`.
pub fn fake_app_server(env: &TestEnv, name: &str, script: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = env.workspace().join(name);
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}
