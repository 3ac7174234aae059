//! What the router reads of a chat to choose which one to unload: when it was last
//! active, and whether it is busy (a running turn, queued messages, a pending approval).

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

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
