//! What Codex sent that the gateway could not read: a notification it knows whose params
//! did not parse, or a server request it does not support. Each method is logged at WARN
//! the first time and then at most every `RELOG_AFTER` with its count, so a protocol
//! change in Codex shows as a named method in the log (and in `/metrics`), not as silence.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tracing::warn;

/// The least time between two log lines for one method.
const RELOG_AFTER: Duration = Duration::from_secs(10 * 60);

/// Shared by every app-server of one gateway (local processes and workers).
#[derive(Debug, Clone, Default)]
pub struct UnreadLog(Arc<Mutex<BTreeMap<String, Seen>>>);

#[derive(Debug, Default)]
struct Seen {
    count: u64,
    logged_at: Option<Instant>,
}

/// What kind of message was not read.
#[derive(Debug, Clone, Copy)]
pub(super) enum Unread {
    /// A notification the gateway reads, with params it could not parse.
    Notification,
    /// A server request the gateway does not answer (Codex gets -32601).
    Request,
}

impl UnreadLog {
    pub(super) fn note(&self, method: &str, kind: Unread) {
        let mut seen = self.0.lock().expect("lock");
        let now = Instant::now();
        let entry = seen.entry(method.to_owned()).or_default();
        entry.count += 1;
        if entry
            .logged_at
            .is_none_or(|at| now.duration_since(at) >= RELOG_AFTER)
        {
            entry.logged_at = Some(now);
            let count = entry.count;
            match kind {
                Unread::Notification => warn!(
                    method,
                    count, "codex app-server sent a notification the gateway cannot read"
                ),
                Unread::Request => warn!(
                    method,
                    count, "codex app-server sent a request the gateway does not support"
                ),
            }
        }
    }

    /// How many messages of each method were not read, by method.
    pub fn counts(&self) -> Vec<(String, u64)> {
        let seen = self.0.lock().expect("lock");
        seen.iter()
            .map(|(method, s)| (method.clone(), s.count))
            .collect()
    }

    /// When `method` was last logged.
    #[cfg(test)]
    fn logged_at(&self, method: &str) -> Option<Instant> {
        self.0.lock().unwrap().get(method)?.logged_at
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_method_is_counted_and_logged_once_in_a_while() {
        let log = UnreadLog::default();
        log.note("turn/completed", Unread::Notification);
        let first = log.logged_at("turn/completed").unwrap();
        log.note("turn/completed", Unread::Notification);
        log.note("mcpServer/elicitation/request", Unread::Request);
        assert_eq!(
            log.logged_at("turn/completed"),
            Some(first),
            "not logged again"
        );
        assert_eq!(
            log.counts(),
            [
                ("mcpServer/elicitation/request".to_owned(), 1),
                ("turn/completed".to_owned(), 2)
            ]
        );
    }
}
