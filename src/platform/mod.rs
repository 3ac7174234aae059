//! Chat platforms: each turns its events into `Inbound` and delivers `Outbound`.

pub mod approvals;
pub mod choices;
pub mod connect;
pub mod console;
pub mod delivery;
pub mod discord;
pub mod intake;
pub mod mention;
pub mod refusals;
pub mod retry;
pub mod telegram;
mod texts;

use tokio::sync::watch;
use tokio::task::JoinHandle;

/// A running platform adapter: first it stops taking messages, then (once the router has
/// drained) its delivery of the last answers finishes.
pub struct PlatformHandle {
    pub name: &'static str,
    stop: watch::Sender<bool>,
    intake: JoinHandle<()>,
    delivery: JoinHandle<()>,
}

impl PlatformHandle {
    pub(crate) fn new(
        name: &'static str,
        stop: watch::Sender<bool>,
        intake: JoinHandle<()>,
        delivery: JoinHandle<()>,
    ) -> Self {
        Self {
            name,
            stop,
            intake,
            delivery,
        }
    }

    /// Stops taking new messages and waits until the intake has ended.
    pub async fn stop_intake(&mut self) {
        let _ = self.stop.send(true);
        let _ = (&mut self.intake).await;
    }

    /// Waits until every answer handed to the platform has been delivered (for at most
    /// `limit`); call after the router has shut down (which closes the outboxes).
    pub async fn finish_delivery(self, limit: std::time::Duration) {
        if tokio::time::timeout(limit, self.delivery).await.is_err() {
            tracing::warn!(platform = self.name, "last answers not delivered in time");
        }
    }
}
