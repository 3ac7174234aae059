//! A pool of app-server processes, each kept running: a dead one is restarted with backoff.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, oneshot};
use tracing::{error, warn};

use super::error::CodexError;
use super::process::AppServer;
use super::spawn::SpawnSpec;

/// A process that lived at least this long resets the backoff.
const HEALTHY_UPTIME: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Shared handle to the pool.
#[derive(Clone)]
pub struct Codex {
    slots: Arc<[Supervised]>,
}

/// The first start of each process of a launched pool.
pub struct Starting(Vec<oneshot::Receiver<Result<(), CodexError>>>);

impl Starting {
    /// Waits until every process has started once; the first failure, if any.
    pub async fn finished(self) -> Result<(), CodexError> {
        for first in self.0 {
            first.await.unwrap_or(Err(CodexError::ProcessExited))?;
        }
        Ok(())
    }
}

/// One pool slot: at most one live process at a time.
#[derive(Clone)]
struct Supervised {
    inner: Arc<Inner>,
}

struct Inner {
    spec: SpawnSpec,
    slot: Mutex<Slot>,
    /// The slot's process as of its last start, read without waiting on `slot` (which a
    /// restart holds through its back-off): health and metrics never block.
    current: std::sync::Mutex<Option<AppServer>>,
    shutting_down: AtomicBool,
    restarts: AtomicU64,
    /// Processes killed for not answering the health check.
    wedged: AtomicU64,
}

#[derive(Default)]
struct Slot {
    server: Option<AppServer>,
    started_at: Option<Instant>,
    /// Spawns that failed or died young in a row; drives the backoff.
    failures: u32,
}

impl Codex {
    /// Starts `processes` app-servers (so a broken binary is reported at once) and their
    /// supervisors.
    pub async fn start(spec: SpawnSpec, processes: usize) -> Result<Self, CodexError> {
        let (codex, starting) = Self::launch(spec, processes);
        if let Err(error) = starting.finished().await {
            codex.shutdown().await;
            return Err(error);
        }
        Ok(codex)
    }

    /// Starts `processes` app-servers and their supervisors without waiting for them:
    /// whoever asks for a server meanwhile waits until it is up. [`Starting`] tells how
    /// the first starts went.
    pub fn launch(spec: SpawnSpec, processes: usize) -> (Self, Starting) {
        let mut slots = Vec::with_capacity(processes);
        let mut firsts = Vec::with_capacity(processes);
        for _ in 0..processes.max(1) {
            let slot = Supervised {
                inner: Arc::new(Inner {
                    spec: spec.clone(),
                    slot: Mutex::new(Slot::default()),
                    current: std::sync::Mutex::new(None),
                    shutting_down: AtomicBool::new(false),
                    restarts: AtomicU64::new(0),
                    wedged: AtomicU64::new(0),
                }),
            };
            let (first, started) = oneshot::channel();
            tokio::spawn(slot.clone().start_and_supervise(first));
            slots.push(slot);
            firsts.push(started);
        }
        let codex = Codex {
            slots: slots.into(),
        };
        (codex, Starting(firsts))
    }

    /// The live process serving `affinity` (a chat's key): the same one while it lives.
    pub async fn server(&self, affinity: &str) -> Result<AppServer, CodexError> {
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        affinity.hash(&mut hasher);
        let index = (hasher.finish() % self.slots.len() as u64) as usize;
        self.slots[index].server().await
    }

    /// The processes running now. Never waits for a restart.
    pub async fn servers(&self) -> Vec<AppServer> {
        let current = |slot: &Supervised| slot.inner.current.lock().expect("lock").clone();
        self.slots
            .iter()
            .filter_map(current)
            .filter(AppServer::is_alive)
            .collect()
    }

    /// How many processes were killed and restarted for not answering.
    pub fn wedged(&self) -> u64 {
        self.slots
            .iter()
            .map(|slot| slot.inner.wedged.load(Ordering::Relaxed))
            .sum()
    }

    /// How many times a dead process has been replaced, over all slots.
    pub fn restarts(&self) -> u64 {
        self.slots
            .iter()
            .map(|slot| slot.inner.restarts.load(Ordering::Relaxed))
            .sum()
    }

    /// Stops supervising and kills every process.
    pub async fn shutdown(&self) {
        for slot in self.slots.iter() {
            slot.shutdown().await;
        }
    }
}

impl Supervised {
    /// The live process, started anew (after the backoff) if the last one died.
    async fn server(&self) -> Result<AppServer, CodexError> {
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
                *self.inner.current.lock().expect("lock") = Some(server.clone());
                Ok(server)
            }
            Err(error) => {
                slot.server = None;
                slot.failures += 1;
                Err(error)
            }
        }
    }

    async fn shutdown(&self) {
        self.inner.shutting_down.store(true, Ordering::SeqCst);
        let server = self.inner.slot.lock().await.server.take();
        self.inner.current.lock().expect("lock").take();
        if let Some(server) = server {
            server.shutdown().await;
        }
    }

    /// Starts the slot's first process and supervises it; a first start that fails is
    /// reported and not retried (the gateway stops).
    async fn start_and_supervise(self, first: oneshot::Sender<Result<(), CodexError>>) {
        match self.server().await {
            Ok(server) => {
                let _ = first.send(Ok(()));
                self.supervise(server).await;
            }
            Err(error) => {
                let _ = first.send(Err(error));
            }
        }
    }

    async fn supervise(self, mut server: AppServer) {
        loop {
            self.until_dead_or_wedged(&server).await;
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

impl Supervised {
    /// Returns when the process has died, or has stopped answering the periodic health
    /// check (then it is killed, and restarted like a crashed one).
    async fn until_dead_or_wedged(&self, server: &AppServer) {
        let check = self.inner.spec.health_check;
        loop {
            tokio::select! {
                () = server.exited() => return,
                () = tokio::time::sleep(check.every) => {}
            }
            if !server.answers(check.timeout).await && server.is_alive() {
                warn!(pid = ?server.pid(), timeout = ?check.timeout, "codex app-server stopped answering; restarting it");
                self.inner.wedged.fetch_add(1, Ordering::Relaxed);
                server.shutdown().await;
                return;
            }
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
