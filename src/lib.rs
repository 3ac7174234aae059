//! codex-gateway: one Codex thread per chat, kept across everything but `/new`.

pub mod chat;
pub mod codex;
pub mod config;
pub mod deadline;
pub mod hygiene;
pub mod metrics;
pub mod platform;
pub mod render;
pub mod router;
pub mod server;
pub mod session;
pub mod store;

use std::sync::Arc;
use std::time::Duration;

use tracing::info;

use crate::codex::{Codex, CodexError, SpawnSpec};
use crate::config::Config;
use crate::router::Router;
use crate::session::{Context, SessionSettings};
use crate::store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Codex(#[from] CodexError),
    #[error("{0}")]
    Platform(String),
    #[error("cannot listen on {address} (server.listen): {source}")]
    Listen {
        address: String,
        source: std::io::Error,
    },
}

/// The running gateway core: store, Codex supervisor and router. Clones share it.
#[derive(Clone)]
pub struct App {
    ctx: Arc<Context>,
    router: Router,
    processes: usize,
}

impl App {
    /// Opens the database (migrating it) and starts the Codex app-server.
    pub async fn start(config: &Config) -> Result<Self, StartError> {
        let store = Store::open(&config.storage.database).await?;
        let codex = Codex::start(spawn_spec(config), config.codex.processes).await?;
        let ctx = Arc::new(Context {
            store,
            codex,
            settings: SessionSettings::from_config(&config.codex),
            hygiene: config.hygiene.policy(),
            metrics: metrics::Metrics::default(),
        });
        info!(database = %config.storage.database.display(), "codex-gateway started");
        Ok(Self {
            router: Router::new(ctx.clone(), config.hygiene.max_live_threads),
            ctx,
            processes: config.codex.processes,
        })
    }

    pub fn router(&self) -> &Router {
        &self.router
    }

    pub fn codex(&self) -> &Codex {
        &self.ctx.codex
    }

    pub fn store(&self) -> &Store {
        &self.ctx.store
    }

    /// Whether the database answers and every app-server process runs.
    pub async fn health(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if let Err(error) = self.ctx.store.ping().await {
            problems.push(format!("database: {error}"));
        }
        let running = self.ctx.codex.servers().await.len();
        if running < self.processes {
            problems.push(format!(
                "codex: {running} of {} processes running",
                self.processes
            ));
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems.join("; ")),
        }
    }

    /// The counters and gauges in Prometheus' text format.
    pub async fn metrics(&self) -> String {
        let servers = self.ctx.codex.servers().await;
        self.ctx.metrics.render(&metrics::Gauges {
            active_chats: self.router.active_chats(),
            live_threads: servers.iter().map(|s| s.subscriptions()).sum(),
            codex_processes: servers.len(),
            codex_restarts: self.ctx.codex.restarts(),
        })
    }

    /// Lets queued work finish (within `grace`, if given), then stops Codex and closes
    /// the database.
    pub async fn shutdown(self, grace: Option<Duration>) {
        self.router.shutdown(grace).await;
        self.ctx.codex.shutdown().await;
        self.ctx.store.close().await;
        info!("codex-gateway stopped");
    }
}

/// How to start the app-server, from the config.
pub fn spawn_spec(config: &Config) -> SpawnSpec {
    SpawnSpec {
        binary: config.codex.binary.clone(),
        home: config.codex.home.clone(),
        overrides: config.codex.config.clone(),
        env: config.codex.env.clone(),
        secrets: config
            .secrets()
            .into_iter()
            .map(|s| s.expose().to_owned())
            .collect(),
        request_timeout: Duration::from_secs(config.codex.request_timeout_secs),
    }
}

/// Serves every enabled platform until `shutdown` resolves, then stops in order: no new
/// messages, queued turns finish, the last answers are delivered, Codex stops.
pub async fn run(config: &Config, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
    let app = App::start(config).await?;
    let grace = Some(Duration::from_secs(config.server.shutdown_grace_secs));
    let listen = config
        .server
        .listen
        .parse()
        .expect("validated in Config::load");
    let server = match server::Server::start(listen, app.clone()).await {
        Ok(server) => server,
        Err(source) => {
            app.shutdown(None).await;
            return Err(StartError::Listen {
                address: config.server.listen.clone(),
                source,
            });
        }
    };
    let mut platforms = Vec::new();
    if let Some(token) = config
        .telegram
        .token
        .as_ref()
        .filter(|_| config.telegram.enabled)
    {
        let started = platform::telegram::start(
            &config.telegram,
            token.expose(),
            app.router().clone(),
            app.store().clone(),
        )
        .await;
        match started {
            Ok(telegram) => platforms.push(telegram),
            Err(error) => {
                server.stop().await;
                app.shutdown(grace).await;
                return Err(StartError::Platform(error.to_string()));
            }
        }
    }
    if let Some(token) = config
        .discord
        .token
        .as_ref()
        .filter(|_| config.discord.enabled)
    {
        match platform::discord::start(&config.discord, token.expose(), app.router().clone()).await
        {
            Ok(discord) => platforms.push(discord),
            Err(error) => {
                for mut platform in platforms {
                    platform.stop_intake().await;
                }
                server.stop().await;
                app.shutdown(grace).await;
                return Err(StartError::Platform(error.to_string()));
            }
        }
    }
    if platforms.is_empty() {
        info!(
            "no chat platform is enabled; serving nothing until one is (see config.example.toml)"
        );
    }
    shutdown.await;
    info!("shutting down");
    for platform in &mut platforms {
        platform.stop_intake().await;
    }
    app.shutdown(grace).await;
    for platform in platforms {
        platform.finish_delivery().await;
    }
    server.stop().await;
    Ok(())
}
