//! Counters of what the gateway did, rendered in Prometheus' text format.

use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

#[derive(Default)]
pub struct Metrics {
    pub turns: AtomicU64,
    pub resumes: AtomicU64,
    pub thread_starts: AtomicU64,
    pub compactions: AtomicU64,
    pub approval_requests: AtomicU64,
    errors: Mutex<Vec<(&'static str, u64)>>,
}

/// Gauges read at scrape time.
pub struct Gauges {
    pub active_chats: usize,
    pub live_threads: usize,
    pub codex_processes: usize,
    pub codex_restarts: u64,
}

impl Metrics {
    pub fn count(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts an error of `kind` (a fixed label such as `codex` or `store`).
    pub fn error(&self, kind: &'static str) {
        let mut errors = self.errors.lock().expect("lock");
        match errors.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, count)) => *count += 1,
            None => errors.push((kind, 1)),
        }
    }

    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::new();
        let mut metric = |name: &str, kind: &str, help: &str, value: u64| {
            let _ = writeln!(out, "# HELP codex_gateway_{name} {help}");
            let _ = writeln!(out, "# TYPE codex_gateway_{name} {kind}");
            let _ = writeln!(out, "codex_gateway_{name} {value}");
        };
        let read = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        metric(
            "active_chats",
            "gauge",
            "Chats held in memory.",
            gauges.active_chats as u64,
        );
        metric(
            "live_threads",
            "gauge",
            "Codex threads the gateway holds live.",
            gauges.live_threads as u64,
        );
        metric(
            "codex_processes",
            "gauge",
            "Running app-server processes.",
            gauges.codex_processes as u64,
        );
        metric(
            "codex_restarts_total",
            "counter",
            "App-server processes replaced after dying.",
            gauges.codex_restarts,
        );
        metric(
            "turns_total",
            "counter",
            "Turns finished.",
            read(&self.turns),
        );
        metric(
            "resumes_total",
            "counter",
            "Threads resumed from their stored id.",
            read(&self.resumes),
        );
        metric(
            "thread_starts_total",
            "counter",
            "Threads started.",
            read(&self.thread_starts),
        );
        metric(
            "compactions_total",
            "counter",
            "Compactions run.",
            read(&self.compactions),
        );
        metric(
            "approval_requests_total",
            "counter",
            "Approval requests from Codex.",
            read(&self.approval_requests),
        );
        let _ = writeln!(out, "# HELP codex_gateway_errors_total Errors by kind.");
        let _ = writeln!(out, "# TYPE codex_gateway_errors_total counter");
        for (kind, count) in self.errors.lock().expect("lock").iter() {
            let _ = writeln!(out, "codex_gateway_errors_total{{kind=\"{kind}\"}} {count}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_prometheus_text() {
        let metrics = Metrics::default();
        Metrics::count(&metrics.turns);
        Metrics::count(&metrics.turns);
        metrics.error("codex");
        metrics.error("codex");
        metrics.error("store");
        let text = metrics.render(&Gauges {
            active_chats: 3,
            live_threads: 2,
            codex_processes: 1,
            codex_restarts: 0,
        });
        assert!(
            text.contains(
                "# TYPE codex_gateway_turns_total counter\ncodex_gateway_turns_total 2\n"
            )
        );
        assert!(text.contains("codex_gateway_active_chats 3\n"));
        assert!(text.contains("codex_gateway_errors_total{kind=\"codex\"} 2\n"));
        assert!(text.contains("codex_gateway_errors_total{kind=\"store\"} 1\n"));
    }
}
