//! The operations endpoint of `run`: `/healthz` (database and Codex pool up) and
//! `/metrics` (Prometheus text).

use std::net::SocketAddr;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{info, warn};

/// What the endpoint reports on: the running gateway.
pub trait Observed: Clone + Send + Sync + 'static {
    /// `Err` names what is down.
    fn health(&self) -> impl Future<Output = Result<(), String>> + Send;
    /// Lines shown under the verdict (one per Codex server).
    fn details(&self) -> impl Future<Output = String> + Send {
        async { String::new() }
    }
    /// The metrics in Prometheus' text format.
    fn metrics(&self) -> impl Future<Output = String> + Send;
}

/// The endpoint while it runs.
pub struct Server {
    stop: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Server {
    pub async fn start<O: Observed>(listen: SocketAddr, observed: O) -> std::io::Result<Self> {
        let listener = TcpListener::bind(listen).await?;
        info!(address = %listener.local_addr()?, "health and metrics endpoint listening");
        let routes = Router::new()
            .route("/healthz", get(healthz::<O>))
            .route("/metrics", get(metrics::<O>))
            .with_state(observed);
        let (stop, mut stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            let shutdown = async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            };
            if let Err(error) = axum::serve(listener, routes)
                .with_graceful_shutdown(shutdown)
                .await
            {
                warn!(%error, "health endpoint failed");
            }
        });
        Ok(Self { stop, task })
    }

    pub async fn stop(self) {
        let _ = self.stop.send(true);
        let _ = self.task.await;
    }
}

async fn healthz<O: Observed>(State(observed): State<O>) -> impl IntoResponse {
    let details = observed.details().await;
    match observed.health().await {
        Ok(()) => (StatusCode::OK, format!("ok\n{details}")),
        Err(problem) => (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("unhealthy: {problem}\n{details}"),
        ),
    }
}

async fn metrics<O: Observed>(State(observed): State<O>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
        observed.metrics().await,
    )
}

/// `codex-gateway health`: asks the running gateway's `/healthz`.
pub async fn probe(listen: SocketAddr) -> Result<(), String> {
    // A gateway listening on all interfaces is reached on loopback.
    let address = match listen.ip().is_unspecified() {
        true => SocketAddr::from(([127, 0, 0, 1], listen.port())),
        false => listen,
    };
    let exchange = async {
        let mut stream = TcpStream::connect(address).await?;
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            .await?;
        let mut response = String::new();
        stream.read_to_string(&mut response).await?;
        Ok::<_, std::io::Error>(response)
    };
    let response = tokio::time::timeout(std::time::Duration::from_secs(5), exchange)
        .await
        .map_err(|_| format!("no answer from {address} within 5 s"))?
        .map_err(|e| format!("cannot reach the gateway at {address}: {e}"))?;
    let body = response.split("\r\n\r\n").nth(1).unwrap_or_default().trim();
    match response.starts_with("HTTP/1.1 200") {
        true => Ok(()),
        false => Err(format!("the gateway at {address} is {body}")),
    }
}
