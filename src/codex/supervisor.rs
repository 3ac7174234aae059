//! Keeps one app-server process running: restarts it with backoff after a crash.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Mutex;
use tracing::{error, warn};

use super::error::CodexError;
use super::process::{AppServer, SpawnSpec};

/// A process that lived at least this long resets the backoff.
const HEALTHY_UPTIME: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Shared handle to the supervised app-server.
#[derive(Clone)]
pub struct Codex {
    inner: Arc<Inner>,
}

struct Inner {
    spec: SpawnSpec,
    slot: Mutex<Slot>,
    shutting_down: AtomicBool,
    restarts: AtomicU64,
}

#[derive(Default)]
struct Slot {
    server: Option<AppServer>,
    started_at: Option<Instant>,
    /// Spawns that failed or died young in a row; drives the backoff.
    failures: u32,
}

impl Codex {
    /// Starts the first process (so a broken binary is reported at once) and its supervisor.
    pub async fn start(spec: SpawnSpec) -> Result<Self, CodexError> {
        let codex = Codex {
            inner: Arc::new(Inner {
                spec,
                slot: Mutex::new(Slot::default()),
                shutting_down: AtomicBool::new(false),
                restarts: AtomicU64::new(0),
            }),
        };
        let first = codex.server().await?;
        tokio::spawn(codex.clone().supervise(first));
        Ok(codex)
    }

    /// The live process, started anew (after the backoff) if the last one died.
    pub async fn server(&self) -> Result<AppServer, CodexError> {
        let mut slot = self.inner.slot.lock().await;
        if let Some(server) = slot.server.as_ref().filter(|s| s.is_alive()) {
            return Ok(server.clone());
        }
        if self.inner.shutting_down.load(Ordering::SeqCst) {
            return Err(CodexError::ProcessExited);
        }
        if let Some(started) = slot.started_at.take() {
            self.inner.restarts.fetch_add(1, Ordering::Relaxed);
            if started.elapsed() >= HEALTHY_UPTIME {
                slot.failures = 0;
            } else {
                slot.failures += 1;
            }
        }
        tokio::time::sleep(backoff(slot.failures)).await;
        match AppServer::spawn(&self.inner.spec).await {
            Ok(server) => {
                slot.server = Some(server.clone());
                slot.started_at = Some(Instant::now());
                Ok(server)
            }
            Err(error) => {
                slot.server = None;
                slot.failures += 1;
                Err(error)
            }
        }
    }

    /// How many times a dead process has been replaced.
    pub fn restarts(&self) -> u64 {
        self.inner.restarts.load(Ordering::Relaxed)
    }

    /// Stops supervising and kills the process.
    pub async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let server = self.inner.slot.lock().await.server.take();
        if let Some(server) = server {
            server.shutdown().await;
        }
    }

    async fn supervise(self, mut server: AppServer) {
        loop {
            server.exited().await;
            if self.inner.shutting_down.load(Ordering::SeqCst) {
                return;
            }
            warn!(pid = ?server.pid(), "codex app-server died; restarting it");
            server = loop {
                match self.server().await {
                    Ok(server) => break server,
                    Err(_) if self.inner.shutting_down.load(Ordering::SeqCst) => return,
                    Err(e) => error!(error = %e, "codex app-server restart failed; retrying"),
                }
            };
        }
    }
}

fn backoff(failures: u32) -> Duration {
    match failures {
        0 => Duration::ZERO,
        n => (Duration::from_millis(250) * 2u32.saturating_pow(n - 1)).min(MAX_BACKOFF),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_and_is_capped() {
        assert_eq!(backoff(0), Duration::ZERO);
        assert_eq!(backoff(1), Duration::from_millis(250));
        assert_eq!(backoff(3), Duration::from_secs(1));
        assert_eq!(backoff(40), MAX_BACKOFF);
    }
}
