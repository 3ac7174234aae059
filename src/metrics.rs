//! What the gateway counts, kept in a registry of the Prometheus project's
//! `prometheus-client` crate and rendered in the OpenMetrics text format.

use std::sync::atomic::Ordering;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

/// The `Content-Type` of `Metrics::render`'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ErrorLabels {
    kind: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ServerLabels {
    server: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct MethodLabels {
    method: String,
}

pub struct Metrics {
    pub turns: Counter,
    pub resumes: Counter,
    pub thread_starts: Counter,
    pub compactions: Counter,
    pub approval_requests: Counter,
    /// Messages given to a running turn (`turn/steer`).
    pub steers: Counter,
    /// Files, images and voice notes received.
    pub attachments: Counter,
    /// Runs of scheduled jobs begun, and those that failed.
    pub job_runs: Counter,
    pub job_failures: Counter,
    jobs: Gauge,
    errors: Family<ErrorLabels, Counter>,
    active_chats: Gauge,
    live_threads: Gauge,
    codex_processes: Gauge,
    codex_restarts: Counter,
    codex_wedged: Counter,
    server_up: Family<ServerLabels, Gauge>,
    server_live_threads: Family<ServerLabels, Gauge>,
    codex_unread: Family<MethodLabels, Counter>,
    registry: Registry,
}

/// Values read at scrape time.
pub struct Gauges {
    pub active_chats: usize,
    pub live_threads: usize,
    pub codex_processes: usize,
    pub codex_restarts: u64,
    pub codex_wedged: u64,
    /// Scheduled jobs stored.
    pub jobs: usize,
    /// Messages Codex sent that could not be read, by method.
    pub codex_unread: Vec<(String, u64)>,
    /// Each Codex server: this machine's processes (`local`) and every worker.
    pub servers: Vec<ServerGauge>,
}

pub struct ServerGauge {
    pub name: String,
    pub up: bool,
    pub live_threads: usize,
}

// Help texts have no final period: the crate adds one.
impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("codex_gateway");
        let mut counter = |name: &str, help: &str| {
            let counter = Counter::default();
            registry.register(name, help, counter.clone());
            counter
        };
        let turns = counter("turns", "Turns finished");
        let resumes = counter("resumes", "Threads resumed from their stored id");
        let thread_starts = counter("thread_starts", "Threads started");
        let compactions = counter("compactions", "Compactions run");
        let approval_requests = counter("approval_requests", "Approval requests from Codex");
        let steers = counter("steers", "Messages added to a running turn");
        let attachments = counter("attachments", "Files, images and voice notes received");
        let job_runs = counter("job_runs", "Runs of scheduled jobs begun");
        let job_failures = counter("job_failures", "Runs of scheduled jobs that failed");
        let codex_restarts = counter(
            "codex_restarts",
            "App-server processes replaced after dying",
        );
        let codex_wedged = counter(
            "codex_wedged",
            "App-server processes restarted for not answering the health check",
        );
        let errors = Family::<ErrorLabels, Counter>::default();
        registry.register("errors", "Errors by kind", errors.clone());
        let server_up = Family::<ServerLabels, Gauge>::default();
        let help = "1 when the Codex server (local or a worker) is running or connected";
        registry.register("codex_server_up", help, server_up.clone());
        let server_live_threads = Family::<ServerLabels, Gauge>::default();
        let help = "Codex threads the gateway holds live, by server";
        registry.register(
            "codex_server_live_threads",
            help,
            server_live_threads.clone(),
        );
        let codex_unread = Family::<MethodLabels, Counter>::default();
        let help = "Notifications and requests from Codex the gateway could not read, by method";
        registry.register("codex_unread", help, codex_unread.clone());
        let mut gauge = |name: &str, help: &str| {
            let gauge = Gauge::default();
            registry.register(name, help, gauge.clone());
            gauge
        };
        Self {
            active_chats: gauge("active_chats", "Chats held in memory"),
            live_threads: gauge("live_threads", "Codex threads the gateway holds live"),
            codex_processes: gauge("codex_processes", "Running app-server processes"),
            jobs: gauge("jobs", "Scheduled jobs stored"),
            job_runs,
            job_failures,
            turns,
            resumes,
            thread_starts,
            compactions,
            approval_requests,
            steers,
            attachments,
            errors,
            codex_restarts,
            codex_wedged,
            server_up,
            server_live_threads,
            codex_unread,
            registry,
        }
    }
}

impl Metrics {
    /// Counts an error of `kind` (a fixed label such as `codex` or `store`).
    pub fn error(&self, kind: &'static str) {
        self.errors.get_or_create(&ErrorLabels { kind }).inc();
    }

    pub fn render(&self, gauges: &Gauges) -> String {
        let as_gauge = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
        self.active_chats.set(as_gauge(gauges.active_chats));
        self.live_threads.set(as_gauge(gauges.live_threads));
        self.codex_processes.set(as_gauge(gauges.codex_processes));
        self.jobs.set(as_gauge(gauges.jobs));
        // The supervisor counts restarts; the registry shows its count.
        let restarts = self.codex_restarts.inner();
        restarts.store(gauges.codex_restarts, Ordering::Relaxed);
        let wedged = self.codex_wedged.inner();
        wedged.store(gauges.codex_wedged, Ordering::Relaxed);
        for (method, count) in &gauges.codex_unread {
            let labels = MethodLabels {
                method: method.clone(),
            };
            let unread = self.codex_unread.get_or_create(&labels);
            unread.inner().store(*count, Ordering::Relaxed);
        }
        for server in &gauges.servers {
            let labels = ServerLabels {
                server: server.name.clone(),
            };
            let up = self.server_up.get_or_create(&labels);
            up.set(i64::from(server.up));
            let threads = self.server_live_threads.get_or_create(&labels);
            threads.set(as_gauge(server.live_threads));
        }
        let mut text = String::new();
        encode(&mut text, &self.registry).expect("writing to a String cannot fail");
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_openmetrics_text() {
        let metrics = Metrics::default();
        metrics.turns.inc();
        metrics.turns.inc();
        metrics.error("codex");
        metrics.error("codex");
        metrics.error("store");
        let text = metrics.render(&Gauges {
            active_chats: 3,
            live_threads: 2,
            codex_processes: 1,
            codex_restarts: 4,
            codex_wedged: 1,
            jobs: 2,
            codex_unread: vec![("turn/completed".into(), 3)],
            servers: vec![
                ServerGauge {
                    name: "local".into(),
                    up: true,
                    live_threads: 2,
                },
                ServerGauge {
                    name: "gpu1".into(),
                    up: false,
                    live_threads: 0,
                },
            ],
        });
        for line in [
            "# TYPE codex_gateway_turns counter\ncodex_gateway_turns_total 2\n",
            "codex_gateway_active_chats 3\n",
            "codex_gateway_codex_restarts_total 4\n",
            "codex_gateway_codex_wedged_total 1\n",
            "codex_gateway_jobs 2\n",
            "codex_gateway_codex_unread_total{method=\"turn/completed\"} 3\n",
            "codex_gateway_errors_total{kind=\"codex\"} 2\n",
            "codex_gateway_errors_total{kind=\"store\"} 1\n",
            "codex_gateway_codex_server_up{server=\"local\"} 1\n",
            "codex_gateway_codex_server_up{server=\"gpu1\"} 0\n",
            "codex_gateway_codex_server_live_threads{server=\"local\"} 2\n",
            "# HELP codex_gateway_turns Turns finished.\n",
        ] {
            assert!(text.contains(line), "{line:?} not in:\n{text}");
        }
        assert!(text.ends_with("# EOF\n"));
    }
}
