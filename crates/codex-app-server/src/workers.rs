//! Remote app-servers (workers), each kept connected: a lost or refused connection is
//! retried with back-off for as long as the gateway runs.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::{oneshot, watch};
use tracing::{debug, warn};

use super::error::CodexError;
use super::process::AppServer;
use super::remote::RemoteSpec;
use super::supervisor::{backoff, until_dead_or_wedged};

/// One worker and its connection, shared by clones.
#[derive(Clone)]
pub(super) struct Worker {
    inner: Arc<Inner>,
}

struct Inner {
    spec: RemoteSpec,
    /// The connection while it is up.
    current: watch::Sender<Option<AppServer>>,
    /// Why the last attempt to connect failed, while the worker is down.
    problem: Mutex<Option<String>>,
    stopping: watch::Sender<bool>,
    reconnects: AtomicU64,
    wedged: AtomicU64,
}

impl Worker {
    /// Starts connecting; the receiver learns how the first attempt went.
    pub(super) fn launch(spec: RemoteSpec) -> (Self, oneshot::Receiver<Result<(), CodexError>>) {
        let worker = Worker {
            inner: Arc::new(Inner {
                spec,
                current: watch::Sender::new(None),
                problem: Mutex::new(Some("not connected yet".into())),
                stopping: watch::Sender::new(false),
                reconnects: AtomicU64::new(0),
                wedged: AtomicU64::new(0),
            }),
        };
        let (first, first_rx) = oneshot::channel();
        tokio::spawn(worker.clone().keep_connected(first));
        (worker, first_rx)
    }

    pub(super) fn name(&self) -> &str {
        &self.inner.spec.name
    }

    pub(super) fn url(&self) -> &str {
        &self.inner.spec.url
    }

    /// The live connection, if the worker is up.
    pub(super) fn current(&self) -> Option<AppServer> {
        self.inner
            .current
            .borrow()
            .clone()
            .filter(AppServer::is_alive)
    }

    /// The connection, or why there is none.
    pub(super) fn server(&self) -> Result<AppServer, CodexError> {
        self.current().ok_or_else(|| CodexError::Unreachable {
            server: self.name().to_owned(),
            message: self.problem().unwrap_or_else(|| "connection lost".into()),
        })
    }

    /// Why the worker is down, if it is.
    pub(super) fn problem(&self) -> Option<String> {
        match self.current() {
            Some(_) => None,
            None => self.inner.problem.lock().expect("lock").clone(),
        }
    }

    /// Resolves once the worker is connected.
    pub(super) async fn connected(&self) {
        let mut current = self.inner.current.subscribe();
        let up = |server: &Option<AppServer>| server.as_ref().is_some_and(AppServer::is_alive);
        let _ = current.wait_for(up).await;
    }

    pub(super) fn reconnects(&self) -> u64 {
        self.inner.reconnects.load(Ordering::Relaxed)
    }

    pub(super) fn wedged(&self) -> u64 {
        self.inner.wedged.load(Ordering::Relaxed)
    }

    /// Stops reconnecting and closes the connection.
    pub(super) async fn shutdown(&self) {
        self.inner.stopping.send_replace(true);
        if let Some(server) = self.inner.current.send_replace(None) {
            server.shutdown().await;
        }
    }

    fn stopping(&self) -> bool {
        *self.inner.stopping.borrow()
    }

    async fn keep_connected(self, first: oneshot::Sender<Result<(), CodexError>>) {
        let mut first = Some(first);
        let mut failures = 0;
        let mut stopping = self.inner.stopping.subscribe();
        while !self.stopping() {
            let attempt = tokio::select! {
                attempt = AppServer::connect(&self.inner.spec) => attempt,
                _ = stopping.wait_for(|stop| *stop) => return,
            };
            match attempt {
                Ok(server) => {
                    failures = 0;
                    self.inner.problem.lock().expect("lock").take();
                    self.inner.current.send_replace(Some(server.clone()));
                    if let Some(first) = first.take() {
                        let _ = first.send(Ok(()));
                    }
                    let wedged = until_dead_or_wedged(&server, self.inner.spec.health_check).await;
                    if wedged {
                        self.inner.wedged.fetch_add(1, Ordering::Relaxed);
                    }
                    self.inner.current.send_replace(None);
                    *self.inner.problem.lock().expect("lock") = Some("connection lost".into());
                    if self.stopping() {
                        return;
                    }
                    self.inner.reconnects.fetch_add(1, Ordering::Relaxed);
                    warn!(server = self.name(), "lost the codex worker; reconnecting");
                }
                Err(error) => {
                    // The first failure of a series is worth a line; the retries are not.
                    match failures {
                        0 => {
                            warn!(server = self.name(), url = self.url(), %error, "codex worker unreachable; retrying")
                        }
                        _ => debug!(server = self.name(), %error, "codex worker still unreachable"),
                    }
                    *self.inner.problem.lock().expect("lock") = Some(reason(&error));
                    if let Some(first) = first.take() {
                        let _ = first.send(Err(error));
                    }
                    failures += 1;
                    tokio::select! {
                        () = tokio::time::sleep(backoff(failures)) => {}
                        _ = stopping.wait_for(|stop| *stop) => return,
                    }
                }
            }
        }
    }
}

/// The error without the worker's name, which the reader already knows.
fn reason(error: &CodexError) -> String {
    match error {
        CodexError::Unreachable { message, .. } => message.clone(),
        CodexError::Refused { status, .. } => format!("token refused (HTTP {status})"),
        other => other.to_string(),
    }
}
