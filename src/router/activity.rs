//! What the router reads of a chat to choose which one to unload: when it was last
//! active, and whether it is busy (a running turn, queued messages, a pending approval).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use hygiene::{Action, Observation, Policy};
use tokio::sync::Notify;
use tokio::time::Instant;

pub(super) struct Activity {
    last: Mutex<Instant>,
    busy: AtomicBool,
    /// Told whenever a chat turns idle: the router may unload chats it kept over the limit.
    idle: std::sync::Arc<Notify>,
}

impl Activity {
    pub(super) fn new(idle: std::sync::Arc<Notify>) -> Self {
        Self {
            last: Mutex::new(Instant::now()),
            busy: AtomicBool::new(false),
            idle,
        }
    }

    pub(super) fn touch(&self) {
        *self.last.lock().expect("lock") = Instant::now();
    }

    pub(super) fn idle_for(&self) -> Duration {
        self.last.lock().expect("lock").elapsed()
    }

    /// Whether `policy` unloads the chat now: idle long enough, and not busy.
    pub(super) fn is_due_for_unload(&self, policy: &Policy) -> bool {
        let seen = Observation {
            idle: self.idle_for(),
            ..Observation::default()
        };
        !self.is_busy() && hygiene::decide(policy, &seen).action == Action::Unload
    }

    pub(super) fn is_busy(&self) -> bool {
        self.busy.load(Ordering::SeqCst)
    }

    pub(super) fn set_busy(&self, busy: bool) {
        let was = self.busy.swap(busy, Ordering::SeqCst);
        if was && !busy {
            self.idle.notify_one();
        }
    }
}

/// How often the router looks for chats idle past `limit`: a quarter of it, between a
/// tenth of a second and a minute.
pub(super) fn sweep_every(limit: Duration) -> Duration {
    (limit / 4).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::session;

    /// The default (an hour): unloaded by the first sweep after an hour idle, never
    /// before, never while busy; any activity starts the hour again.
    #[tokio::test(start_paused = true)]
    async fn at_the_default_an_idle_chat_is_unloaded_after_an_hour_not_before() {
        let (_, policy) = session::defaults();
        let hour = Duration::from_secs(3600);
        assert_eq!(policy.idle_unload, Some(hour));
        let every = sweep_every(hour);
        assert_eq!(every, Duration::from_secs(60));
        let chat = Activity::new(Arc::default());
        tokio::time::advance(hour - every).await;
        assert!(!chat.is_due_for_unload(&policy), "59 minutes");
        chat.touch();
        tokio::time::advance(hour - Duration::from_secs(1)).await;
        assert!(!chat.is_due_for_unload(&policy), "touched 59:59 ago");
        chat.set_busy(true);
        tokio::time::advance(every).await;
        assert!(!chat.is_due_for_unload(&policy), "busy");
        chat.set_busy(false);
        assert!(chat.is_due_for_unload(&policy), "an hour and a minute idle");
    }
}
