//! Remote Codex workers for tests: the real `codex app-server` listening on a WebSocket
//! on 127.0.0.1 with token authentication, each with its own Codex home.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use codex_gateway::config::{Config, RemoteConfig};

use super::{TestEnv, codex_binary, codex_config, free_port, http_get, secret};

/// One worker process; killed when dropped.
pub struct Worker {
    pub name: String,
    pub port: u16,
    pub home: PathBuf,
    /// The token's SHA-256, made as the README says: all the worker is given.
    digest_file: PathBuf,
    /// A folder only this worker sees, and the shell lines that fill it (see
    /// [`Worker::start_with_own_disk`]).
    own_disk: Option<(PathBuf, String)>,
    child: Option<Child>,
}

impl Worker {
    /// Starts a worker whose token is `token`, on a free port, and waits until it is ready.
    pub async fn start(env: &TestEnv, name: &str, token: &str) -> Self {
        Self::start_with(env, name, token, &codex_config(&env.model.base_url)).await
    }

    /// As [`Worker::start`], with `codex_config` as its Codex home's config.toml.
    pub async fn start_with(env: &TestEnv, name: &str, token: &str, codex_config: &str) -> Self {
        let home = env.dir.path().join(format!("worker-{name}-home"));
        std::fs::create_dir_all(&home).unwrap();
        std::fs::write(home.join("config.toml"), codex_config).unwrap();
        let digest_file = env.dir.path().join(format!("worker-{name}.token.sha256"));
        digest_as_the_readme_makes_it(token, &digest_file);
        let mut worker = Worker {
            name: name.to_owned(),
            port: free_port(),
            home,
            digest_file,
            own_disk: None,
            child: None,
        };
        worker.restart().await;
        worker
    }

    /// A worker on a machine of its own, as far as files go: in a mount namespace of its
    /// own, `disk` (an empty folder on the gateway's side) is a fresh tmpfs that `setup`
    /// fills (run there with sh). Needs root.
    pub async fn start_with_own_disk(
        env: &TestEnv,
        name: &str,
        token: &str,
        disk: &std::path::Path,
        setup: &str,
    ) -> Self {
        std::fs::create_dir_all(disk).unwrap();
        let mut worker = Self::start(env, name, token).await;
        worker.kill();
        worker.own_disk = Some((disk.to_owned(), setup.to_owned()));
        worker.restart().await;
        worker
    }

    /// Starts the worker (again) on its port, with its home, as the Dockerfile's `worker`
    /// stage starts it (its command, given only the token's digest); waits until it is
    /// ready.
    pub async fn restart(&mut self) {
        let worker = worker_stage_command(self.port, &self.digest_file);
        let mut command = match &self.own_disk {
            None => Command::new("sh"),
            Some((disk, setup)) => {
                let mut command = Command::new("unshare");
                let script = r#"mount -t tmpfs tmpfs "$1" && (cd "$1" && sh -c "$2") && shift 2 && exec "$@""#;
                command
                    .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
                    .args([script, "sh"])
                    .arg(disk)
                    .arg(setup)
                    .arg("sh");
                command
            }
        };
        let child = command
            .args(["-c", &worker])
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("CODEX_HOME", &self.home)
            .env("MOCK_API_KEY", "test-key")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(30);
        while http_get_quietly(self.port, "/readyz").await != Some(200) {
            assert!(
                Instant::now() < deadline,
                "worker {} never got ready",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The token's digest, as the worker's user (and so a command Codex runs) can read it.
    pub fn digest(&self) -> String {
        std::fs::read_to_string(&self.digest_file)
            .unwrap()
            .trim()
            .to_owned()
    }

    /// Kills the worker process, as a crash or a lost machine would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            child.kill().unwrap();
            child.wait().unwrap();
        }
    }

    pub fn url(&self) -> String {
        format!("ws://127.0.0.1:{}", self.port)
    }

    /// This worker in a gateway config, with a token file holding `token`.
    pub fn remote(&self, env: &TestEnv, token: &str) -> RemoteConfig {
        let file = env.dir.path().join(format!("gateway-{}.token", self.name));
        std::fs::write(&file, token).unwrap();
        RemoteConfig {
            name: Some(self.name.clone()),
            url: self.url(),
            token_file: file,
            token: Some(secret(token)),
        }
    }

    /// Rollout files under this worker's Codex home.
    pub fn rollouts(&self) -> usize {
        count_rollouts(&self.home.join("sessions"))
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.kill();
    }
}

fn count_rollouts(dir: &std::path::Path) -> usize {
    let mut found = 0;
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found += count_rollouts(&path);
        } else if path.extension().is_some_and(|e| e == "jsonl") {
            found += 1;
        }
    }
    found
}

async fn http_get_quietly(port: u16, path: &str) -> Option<u16> {
    tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .ok()?;
    Some(http_get(port, path).await.0)
}

/// The token's digest file, made by the README's own line from a token file as openssl
/// writes it (with a newline).
fn digest_as_the_readme_makes_it(token: &str, digest_file: &std::path::Path) {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let line = readme
        .lines()
        .find(|line| line.contains("> deploy/worker-token.sha256"))
        .expect("the README makes the worker's digest");
    let folder = digest_file
        .parent()
        .unwrap()
        .join(format!("readme-{}", std::process::id()));
    std::fs::create_dir_all(folder.join("deploy")).unwrap();
    std::fs::write(folder.join("deploy/worker-token"), format!("{token}\n")).unwrap();
    let made = Command::new("sh")
        .args(["-c", line])
        .current_dir(&folder)
        .status()
        .unwrap();
    assert!(made.success(), "{line}");
    std::fs::rename(folder.join("deploy/worker-token.sha256"), digest_file).unwrap();
}

/// The Dockerfile's `worker` stage command, on 127.0.0.1:`port`, the test's Codex and the
/// digest in `digest_file`.
fn worker_stage_command(port: u16, digest_file: &std::path::Path) -> String {
    let dockerfile =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/Dockerfile")).unwrap();
    let stage = dockerfile
        .split("AS worker")
        .nth(1)
        .expect("a worker stage");
    let cmd = stage
        .lines()
        .find_map(|line| line.strip_prefix("CMD "))
        .expect("its CMD");
    let cmd: Vec<String> = serde_json::from_str(cmd).expect("CMD as a JSON array");
    assert_eq!(cmd[..2], ["sh", "-c"], "{cmd:?}");
    let script = &cmd[2];
    for part in [
        "exec codex ",
        "ws://0.0.0.0:4500",
        "/run/secrets/codex_worker_token_sha256",
    ] {
        assert!(script.contains(part), "{part} not in {script}");
    }
    assert!(
        !script.contains("--ws-token-file"),
        "the worker reads the token itself: {script}"
    );
    script
        .replace(
            "exec codex ",
            &format!("exec '{}' ", codex_binary().display()),
        )
        .replace("ws://0.0.0.0:4500", &format!("ws://127.0.0.1:{port}"))
        .replace(
            "/run/secrets/codex_worker_token_sha256",
            &digest_file.display().to_string(),
        )
}

/// A gateway config with no local app-server, only `workers` (their right tokens).
pub fn workers_only(env: &TestEnv, workers: &[&Worker]) -> Config {
    let mut config = env.config();
    config.codex.processes = 0;
    config.codex.remote = workers
        .iter()
        .map(|worker| worker.remote(env, &format!("token-{}", worker.name)))
        .collect();
    config
}
