//! Every Codex server of the gateway: this machine's pool of app-server processes (the
//! server `local`), each kept running and restarted with backoff when it dies or wedges,
//! and the remote workers (`workers.rs`); new chats are placed on the reachable server with
//! the fewest live threads.

use std::hash::{Hash, Hasher};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::{Mutex, oneshot, watch};
use tracing::{error, warn};

use super::error::CodexError;
use super::process::AppServer;
use super::remote::RemoteSpec;
use super::spawn::{HealthCheck, SpawnSpec};
use super::unread::UnreadLog;
use super::workers::Worker;

/// A process that lived at least this long resets the backoff.
const HEALTHY_UPTIME: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(30);

/// Where chats' threads run: this machine's app-server processes (the server named
/// [`LOCAL`]) and remote workers. Clones share them.
#[derive(Clone)]
pub struct Codex {
    slots: Arc<[Supervised]>,
    workers: Arc<[Worker]>,
    /// Turns among servers tied for the fewest live threads, so chats that arrive
    /// together (before any of their threads is live) are spread too.
    placements: Arc<AtomicUsize>,
    /// What any of the servers sent that could not be read.
    unread: UnreadLog,
}

/// The name of this machine's app-servers, which share one Codex home.
pub const LOCAL: &str = "local";

/// How one Codex server is doing, for health, metrics and `/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerState {
    pub name: String,
    /// A worker's address; `None` for this machine's processes.
    pub url: Option<String>,
    pub up: bool,
    /// Threads the gateway holds live there.
    pub live_threads: usize,
    /// Why it is down, when it is.
    pub problem: Option<String>,
}

impl ServerState {
    /// "a (ws://10.0.0.5:4500)", "local (this machine)": the server and where it is.
    pub fn label(&self) -> String {
        let place = self.url.as_deref().unwrap_or("this machine");
        format!("{} ({place})", self.name)
    }
}

/// The first start of each process and the first connection to each worker.
pub struct Starting(Vec<oneshot::Receiver<Result<(), CodexError>>>);

impl Starting {
    /// Waits until every process has started once and every worker was tried once; the
    /// first failure that needs fixing, if any. An unreachable worker is not one: it is
    /// retried, and its chats wait for it.
    pub async fn finished(self) -> Result<(), CodexError> {
        for first in self.0 {
            match first.await.unwrap_or(Err(CodexError::ProcessExited)) {
                Ok(()) | Err(CodexError::Unreachable { .. }) => {}
                Err(error) => return Err(error),
            }
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
    /// Raised at shutdown: a start under way (its back-off, or an `initialize` Codex never
    /// answers) is given up at once, so a stop is never held by a hung start.
    stopping: watch::Sender<bool>,
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
    /// Starts `processes` local app-servers and connects to the workers without waiting
    /// for them: whoever asks for a server meanwhile waits until it is up. [`Starting`]
    /// tells how the first starts went.
    pub fn launch(spec: SpawnSpec, processes: usize, remotes: Vec<RemoteSpec>) -> (Self, Starting) {
        let mut slots = Vec::with_capacity(processes);
        let mut firsts = Vec::with_capacity(processes + remotes.len());
        for _ in 0..processes {
            let slot = Supervised {
                inner: Arc::new(Inner {
                    spec: spec.clone(),
                    slot: Mutex::new(Slot::default()),
                    current: std::sync::Mutex::new(None),
                    stopping: watch::Sender::new(false),
                    restarts: AtomicU64::new(0),
                    wedged: AtomicU64::new(0),
                }),
            };
            let (first, started) = oneshot::channel();
            tokio::spawn(slot.clone().start_and_supervise(first));
            slots.push(slot);
            firsts.push(started);
        }
        let mut workers = Vec::with_capacity(remotes.len());
        for remote in remotes {
            let (worker, connected) = Worker::launch(remote);
            workers.push(worker);
            firsts.push(connected);
        }
        let codex = Codex {
            slots: slots.into(),
            workers: workers.into(),
            placements: Arc::new(AtomicUsize::new(0)),
            unread: spec.unread.clone(),
        };
        (codex, Starting(firsts))
    }

    /// Whether `name` is one of the configured servers.
    pub fn knows(&self, name: &str) -> bool {
        (name == LOCAL && !self.slots.is_empty()) || self.worker(name).is_some()
    }

    /// Where a chat's first thread goes: the reachable server with the fewest live
    /// threads; servers tied for that take turns.
    pub fn place(&self) -> Result<String, CodexError> {
        let reachable: Vec<ServerState> = self
            .states()
            .into_iter()
            .filter(|server| server.up || server.url.is_none())
            .collect();
        let fewest = reachable.iter().map(|server| server.live_threads).min();
        let mut tied: Vec<ServerState> = reachable
            .into_iter()
            .filter(|server| Some(server.live_threads) == fewest)
            .collect();
        if tied.is_empty() {
            return Err(CodexError::NoServerReachable);
        }
        let turn = self.placements.fetch_add(1, Ordering::Relaxed) % tied.len();
        Ok(tied.swap_remove(turn).name)
    }

    /// The live app-server of server `name` for `affinity` (a chat's key). This
    /// machine's processes are waited for while they restart; a worker that is down
    /// answers [`CodexError::Unreachable`] at once.
    pub async fn server_at(&self, name: &str, affinity: &str) -> Result<AppServer, CodexError> {
        if name == LOCAL && !self.slots.is_empty() {
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            affinity.hash(&mut hasher);
            let index = (hasher.finish() % self.slots.len() as u64) as usize;
            return self.slots[index].server().await;
        }
        match self.worker(name) {
            Some(worker) => worker.server(),
            None => Err(CodexError::Unreachable {
                server: name.to_owned(),
                message: "no such Codex server is configured".into(),
            }),
        }
    }

    /// Waits up to `within` until server `name` (any server, if `None`) is reachable.
    pub async fn until_reachable(&self, name: Option<&str>, within: Duration) -> bool {
        let reachable = async {
            match name {
                Some(name) => match self.worker(name) {
                    Some(worker) => worker.connected().await,
                    None => std::future::pending().await,
                },
                None if self.workers.is_empty() => std::future::pending().await,
                None => {
                    let all = self.workers.iter().map(|w| Box::pin(w.connected()));
                    futures_util::future::select_all(all).await;
                }
            }
        };
        tokio::time::timeout(within, reachable).await.is_ok()
    }

    /// Every server, this machine's first, with what it is doing. Never waits.
    pub fn states(&self) -> Vec<ServerState> {
        let mut states = Vec::with_capacity(1 + self.workers.len());
        if !self.slots.is_empty() {
            let running = self.local_servers();
            states.push(ServerState {
                name: LOCAL.to_owned(),
                url: None,
                up: running.len() == self.slots.len(),
                live_threads: running.iter().map(AppServer::subscriptions).sum(),
                problem: (running.len() < self.slots.len()).then(|| {
                    format!(
                        "{} of {} processes running",
                        running.len(),
                        self.slots.len()
                    )
                }),
            });
        }
        for worker in self.workers.iter() {
            let current = worker.current();
            states.push(ServerState {
                name: worker.name().to_owned(),
                url: Some(worker.url().to_owned()),
                up: current.is_some(),
                live_threads: current.as_ref().map_or(0, AppServer::subscriptions),
                problem: worker.problem(),
            });
        }
        states
    }

    /// The app-servers running or connected now, local and remote. Never waits.
    pub async fn servers(&self) -> Vec<AppServer> {
        let mut servers = self.local_servers();
        servers.extend(self.workers.iter().filter_map(Worker::current));
        servers
    }

    /// One running app-server of each server that is up, with the server's name.
    pub fn running(&self) -> Vec<(String, AppServer)> {
        let local = self.local_servers().into_iter().next();
        let local = local.map(|server| (LOCAL.to_owned(), server));
        let workers = self.workers.iter().filter_map(|worker| {
            let server = worker.current()?;
            Some((worker.name().to_owned(), server))
        });
        local.into_iter().chain(workers).collect()
    }

    fn local_servers(&self) -> Vec<AppServer> {
        let current = |slot: &Supervised| slot.inner.current.lock().expect("lock").clone();
        self.slots
            .iter()
            .filter_map(current)
            .filter(AppServer::is_alive)
            .collect()
    }

    fn worker(&self, name: &str) -> Option<&Worker> {
        self.workers.iter().find(|worker| worker.name() == name)
    }

    /// How many processes were killed and restarted, or connections closed and opened
    /// again, for not answering.
    pub fn wedged(&self) -> u64 {
        let local: u64 = self
            .slots
            .iter()
            .map(|slot| slot.inner.wedged.load(Ordering::Relaxed))
            .sum();
        local + self.workers.iter().map(Worker::wedged).sum::<u64>()
    }

    /// How many messages of each method the servers sent that could not be read.
    pub fn unread(&self) -> Vec<(String, u64)> {
        self.unread.counts()
    }

    /// How many times a dead process has been replaced or a lost worker reconnected.
    pub fn restarts(&self) -> u64 {
        let local: u64 = self
            .slots
            .iter()
            .map(|slot| slot.inner.restarts.load(Ordering::Relaxed))
            .sum();
        local + self.workers.iter().map(Worker::reconnects).sum::<u64>()
    }

    /// Stops supervising, kills every process and closes every connection.
    pub async fn shutdown(&self) {
        for slot in self.slots.iter() {
            slot.shutdown().await;
        }
        for worker in self.workers.iter() {
            worker.shutdown().await;
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
        if *self.inner.stopping.borrow() {
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
        let pause = backoff(slot.failures);
        let start = async {
            tokio::time::sleep(pause).await;
            AppServer::spawn(&self.inner.spec).await
        };
        let mut stopping = self.inner.stopping.subscribe();
        // Dropping a start kills its process (`kill_on_drop`).
        let started = tokio::select! {
            started = start => started,
            _ = stopping.wait_for(|stop| *stop) => return Err(CodexError::ProcessExited),
        };
        match started {
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
        self.inner.stopping.send_replace(true);
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
            if until_dead_or_wedged(&server, self.inner.spec.health_check).await {
                self.inner.wedged.fetch_add(1, Ordering::Relaxed);
            }
            if *self.inner.stopping.borrow() {
                return;
            }
            warn!(pid = ?server.pid(), "codex app-server died; restarting it");
            server = loop {
                match self.server().await {
                    Ok(server) => break server,
                    Err(_) if *self.inner.stopping.borrow() => return,
                    Err(e) => error!(error = %e, "codex app-server restart failed; retrying"),
                }
            };
        }
    }
}

/// Returns when the server has died, or has stopped answering the periodic health check
/// (then it is shut down, and replaced like a crashed one); whether it was the latter.
pub(super) async fn until_dead_or_wedged(server: &AppServer, check: HealthCheck) -> bool {
    loop {
        tokio::select! {
            () = server.exited() => return false,
            () = tokio::time::sleep(check.every) => {}
        }
        if !server.answers(check.timeout).await && server.is_alive() {
            warn!(?server, timeout = ?check.timeout, "codex app-server stopped answering; replacing it");
            server.shutdown().await;
            return true;
        }
    }
}

pub(super) fn backoff(failures: u32) -> Duration {
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
