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
    token_file: PathBuf,
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
        let token_file = env.dir.path().join(format!("worker-{name}.token"));
        std::fs::write(&token_file, token).unwrap();
        let mut worker = Worker {
            name: name.to_owned(),
            port: free_port(),
            home,
            token_file,
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

    /// Starts the worker (again) on its port, with its home; waits until it is ready.
    pub async fn restart(&mut self) {
        let mut command = match &self.own_disk {
            None => Command::new(codex_binary()),
            Some((disk, setup)) => {
                let mut command = Command::new("unshare");
                let script = r#"mount -t tmpfs tmpfs "$1" && (cd "$1" && sh -c "$2") && shift 2 && exec "$@""#;
                command
                    .args(["--mount", "--propagation", "private", "--", "sh", "-c"])
                    .args([script, "sh"])
                    .arg(disk)
                    .arg(setup)
                    .arg(codex_binary());
                command
            }
        };
        let child = command
            .arg("app-server")
            .arg("--listen")
            .arg(format!("ws://127.0.0.1:{}", self.port))
            .arg("--ws-auth")
            .arg("capability-token")
            .arg("--ws-token-file")
            .arg(&self.token_file)
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
