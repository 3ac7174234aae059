//! codex-gateway: one Codex thread per chat, kept across everything but `/new`.

pub mod attach_token;
pub mod check;
pub mod clock;
pub mod commands;
pub mod config;
pub mod deadline;
pub mod inbox;
pub mod instance_lock;
pub mod metrics;
pub mod platform;
pub mod redact;
pub mod render;
pub mod router;
pub mod schedule;
pub mod server;
pub mod session;
pub mod transcription;

use std::os::unix::fs::DirBuilderExt;
use std::sync::Arc;
use std::time::Duration;

use tracing::{info, warn};

use crate::config::{Config, TokenOf};
use crate::instance_lock::{InstanceLock, LockError};
use crate::platform::PlatformHandle;
use crate::platform::discord::DiscordError;
use crate::platform::intake::IntakeHealth;
use crate::platform::telegram::TelegramError;
use crate::router::Router;
use crate::session::{Context, LoginCheck, SessionSettings};
use crate::transcription::{Transcriber, TranscriptionError};
use codex::{
    Codex, CodexError, HealthCheck, RemoteSpec, RunAs, RunAsError, SpawnSpec, Starting, UnreadLog,
};
use store::{Store, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Codex(#[from] CodexError),
    #[error(transparent)]
    RunAs(#[from] RunAsError),
    #[error("cannot create codex.home {path}: {source}")]
    CodexHome {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    AttachToken(#[from] attach_token::TokenError),
    #[error("cannot set up transcription: {0}")]
    Transcription(#[from] TranscriptionError),
    #[error(transparent)]
    Telegram(#[from] TelegramError),
    #[error(transparent)]
    Discord(#[from] DiscordError),
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
    /// Keeps a second gateway off this database while any clone lives.
    _lock: Arc<InstanceLock>,
}

impl App {
    /// Opens the database (migrating it) and starts the Codex app-server.
    pub async fn start(config: &Config) -> Result<Self, StartError> {
        let (app, starting) = Self::launch(config).await?;
        app.finish_start(starting).await?;
        Ok(app)
    }

    /// Opens the database (migrating it) and launches the Codex app-servers without
    /// waiting for them, so the platforms can start meanwhile; a message that comes
    /// first waits for Codex. [`App::finish_start`] waits for them.
    pub async fn launch(config: &Config) -> Result<(Self, Starting), StartError> {
        let lock = InstanceLock::acquire(&config.storage.database)?;
        let store = Store::open(&config.storage.database).await?;
        ensure_codex_home(config)?;
        let mut spec = spawn_spec(config)?;
        if let Some(user) = &spec.run_as {
            check_run_as(user, config)?;
        }
        if config.codex.attach {
            let token = attach_token::load_or_make(&attach_token::token_file(config))?;
            let attach = codex::Attach {
                token,
                port: config.codex.attach_port,
            };
            codex::end_leftovers(&attach).await;
            spec.attach = Some(attach);
        }
        let transcriber = Transcriber::from_config(&config.transcription)?;
        let remotes = remote_specs(config, &spec.unread);
        let (codex, starting) = Codex::launch(spec.clone(), config.codex.processes, remotes);
        let ctx = Arc::new(Context {
            inbox: inbox::Inbox::new(store.clone()),
            store,
            codex,
            settings: SessionSettings::from_config(config),
            hygiene: config.hygiene.policy(),
            metrics: metrics::Metrics::default(),
            login: LoginCheck::new(spec),
            transcriber,
        });
        let home = config
            .codex
            .home
            .as_deref()
            .map(|home| home.display().to_string());
        info!(
            database = %config.storage.database.display(),
            workspace = %config.codex.workspace.display(),
            codex_home = home.as_deref().unwrap_or("Codex's default (~/.codex)"),
            "codex-gateway started"
        );
        let app = Self {
            router: Router::new(ctx.clone(), config.hygiene.max_live_threads),
            ctx,
            _lock: Arc::new(lock),
        };
        Ok((app, starting))
    }

    /// Waits until every app-server has started (a broken binary is an error here), then
    /// checks that Codex is logged in.
    pub async fn finish_start(&self, starting: Starting) -> Result<(), StartError> {
        if let Err(error) = starting.finished().await {
            self.ctx.codex.shutdown().await;
            return Err(error.into());
        }
        for (name, server) in self.ctx.codex.running() {
            if self.ctx.login.refresh(&name, &server).await {
                warn!(server = name, "{}", LoginCheck::missing_text(&name));
            }
        }
        info!("codex ready");
        Ok(())
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

    pub fn inbox(&self) -> &inbox::Inbox {
        &self.ctx.inbox
    }

    /// What to tell the operator when a Codex server has no login to reach its model
    /// with (as found at start); `None` when every server that is up has one.
    pub async fn login_missing(&self) -> Option<&'static str> {
        for (name, server) in self.ctx.codex.running() {
            if self.ctx.login.still_missing(&name, &server).await {
                return Some(LoginCheck::missing_text(&name));
            }
        }
        None
    }

    /// Lets queued work finish (within `grace`, if given), then stops Codex and closes
    /// the database.
    pub async fn shutdown(self, grace: Option<Duration>) {
        let store = self.stop_work(grace).await;
        store.close().await;
        info!("codex-gateway stopped");
    }

    /// Lets queued work finish, then stops Codex; the database stays open (for the
    /// receipts of answers still being delivered) and is returned for closing.
    async fn stop_work(self, grace: Option<Duration>) -> Store {
        self.router.shutdown(grace).await;
        self.ctx.codex.shutdown().await;
        codex::end_orphans(codex::TERM_GRACE).await;
        self.ctx.store.clone()
    }
}

/// How to start the app-server, from the config.
pub fn spawn_spec(config: &Config) -> Result<SpawnSpec, RunAsError> {
    let run_as = config.codex.run_as.as_deref().map(RunAs::resolve);
    Ok(SpawnSpec {
        run_as: run_as.transpose()?,
        binary: config.codex.binary.clone(),
        home: config.codex.home.clone(),
        overrides: config.codex.config.clone(),
        env: config.codex.env.clone(),
        withheld_env_prefixes: vec![config::ENV_PREFIX.to_owned()],
        secrets: config
            .secrets()
            .into_iter()
            .map(|s| s.expose().to_owned())
            .collect(),
        request_timeout: request_timeout(config),
        health_check: health_check(config),
        unread: UnreadLog::default(),
        log_level: config.codex.log_level.clone(),
        // Made attachable at start (`App::launch`); `check-config` asks over stdio.
        attach: None,
    })
}

fn request_timeout(config: &Config) -> Duration {
    Duration::from_secs(config.codex.request_timeout_secs)
}

fn health_check(config: &Config) -> HealthCheck {
    HealthCheck {
        every: Duration::from_secs(config.codex.health_check_secs),
        timeout: Duration::from_secs(config.codex.health_check_timeout_secs),
    }
}

/// How to reach each `[[codex.remote]]` worker, from the config; their unread messages
/// go to `unread` with the local processes'.
pub fn remote_specs(config: &Config, unread: &UnreadLog) -> Vec<RemoteSpec> {
    config
        .codex
        .remote
        .iter()
        .map(|remote| RemoteSpec {
            name: remote.name(),
            url: remote.url.clone(),
            token: remote
                .token
                .as_ref()
                .map(|token| token.expose().to_owned())
                .unwrap_or_default(),
            request_timeout: request_timeout(config),
            health_check: health_check(config),
            unread: unread.clone(),
        })
        .collect()
}

/// Creates `codex.home` when it is missing (Codex refuses a home that does not exist),
/// saying so: a new home has no login and no threads. Run as another user, the home must
/// already be that user's.
pub fn ensure_codex_home(config: &Config) -> Result<(), StartError> {
    let Some(home) = &config.codex.home else {
        return Ok(());
    };
    if home.exists() || config.codex.run_as.is_some() {
        return Ok(());
    }
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(home)
        .map_err(|source| StartError::CodexHome {
            path: home.clone(),
            source,
        })?;
    info!(path = %home.display(), "created codex.home: Codex starts there with no login and no threads");
    Ok(())
}

/// Codex can run as `user` here: the gateway may switch to it, and Codex's home and the
/// workspaces are that user's.
fn check_run_as(user: &RunAs, config: &Config) -> Result<(), RunAsError> {
    user.check_privilege()?;
    // Codex's home as the child gets it: configured, or inherited as CODEX_HOME. Codex
    // makes its default (~/.codex) itself.
    let home = config.codex.home.clone();
    if let Some(home) = home.or_else(|| std::env::var_os("CODEX_HOME").map(Into::into)) {
        user.check_owns("codex.home", &home)?;
    }
    user.check_owns("codex.workspace", &config.codex.workspace)
}

impl server::Observed for App {
    /// Whether the database answers and every app-server process runs.
    async fn health(&self) -> Result<(), String> {
        let mut problems = Vec::new();
        if let Err(error) = self.ctx.store.ping().await {
            problems.push(format!("database: {error}"));
        }
        let states = self.ctx.codex.states();
        // A worker that is down is retried, and its chats wait for it; the gateway is
        // unhealthy only when its own processes are not all running, or when no Codex
        // server at all is reachable.
        for state in &states {
            if let (None, Some(problem)) = (&state.url, &state.problem) {
                problems.push(format!("codex: {problem}"));
            }
        }
        if !states.iter().any(|state| state.up) {
            problems.push("codex: no server is reachable".to_owned());
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(problems.join("; ")),
        }
    }

    /// One line per Codex server: up or why not, and its live threads.
    async fn details(&self) -> String {
        let line = |state: &codex::ServerState| match &state.problem {
            None => format!(
                "codex {}: up, {} live threads\n",
                state.label(),
                state.live_threads
            ),
            Some(problem) => format!("codex {}: down: {problem}\n", state.label()),
        };
        self.ctx.codex.states().iter().map(line).collect()
    }

    async fn metrics(&self) -> String {
        let servers = self.ctx.codex.servers().await;
        let jobs = self.ctx.job_count().await.unwrap_or_else(|error| {
            warn!(%error, "cannot count the scheduled jobs");
            0
        });
        self.ctx.metrics.render(&metrics::Gauges {
            active_chats: self.router.active_chats(),
            live_threads: servers.iter().map(|s| s.subscriptions()).sum(),
            codex_processes: servers.iter().filter(|s| s.pid().is_some()).count(),
            servers: self
                .ctx
                .codex
                .states()
                .into_iter()
                .map(|state| metrics::ServerGauge {
                    name: state.name,
                    up: state.up,
                    live_threads: state.live_threads,
                })
                .collect(),
            codex_restarts: self.ctx.codex.restarts(),
            codex_unread: self.ctx.codex.unread(),
            codex_wedged: self.ctx.codex.wedged(),
            jobs: jobs as usize,
        })
    }
}

/// Serves every enabled platform until `shutdown` resolves, then stops in order: no new
/// messages, queued turns finish, the last answers are delivered, Codex stops. A start
/// that fails midway stops what it had started the same way.
pub async fn run(config: &Config, shutdown: impl Future<Output = ()>) -> Result<(), StartError> {
    let (app, starting) = App::launch(config).await?;
    let mut serving = Serving::default();
    // The platforms start while Codex does; a failed Codex start stops them again.
    let mut started = serving.start(config, &app).await;
    tokio::pin!(shutdown);
    let mut stopping = false;
    if started.is_ok() {
        tokio::select! {
            finished = app.finish_start(starting) => started = finished,
            () = &mut shutdown => stopping = true,
        }
    }
    if started.is_ok() {
        if !stopping {
            shutdown.await;
        }
        info!("shutting down");
    }
    let grace = Duration::from_secs(config.server.shutdown_grace_secs);
    serving.stop(app, grace).await;
    started
}

/// Whether the gateway runs as root (Codex would too, without `run_as`).
pub fn running_as_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// A token that does not look like one is said before its API refuses it; a setting that
/// hands Codex a secret is said too.
fn warn_of_setup(config: &Config) {
    for warning in config::secret_warnings(config, running_as_root()) {
        warn!("{warning}");
    }
    let tokens = [
        (
            "telegram",
            TokenOf::Telegram,
            config.telegram.enabled,
            &config.telegram.token,
        ),
        (
            "discord",
            TokenOf::Discord,
            config.discord.enabled,
            &config.discord.token,
        ),
    ];
    for (platform, of, enabled, token) in tokens {
        let shape = token.as_ref().filter(|_| enabled);
        if let Some(problem) = shape.and_then(|token| config::shape_problem(of, token.expose())) {
            warn!(platform, "the token {problem}");
        }
    }
}

/// At stop, how long the platforms get to deliver the last answers.
const DELIVERY_WAIT: Duration = Duration::from_secs(2);

/// What `run` started besides the core.
#[derive(Default)]
struct Serving {
    server: Option<server::Server>,
    platforms: Vec<PlatformHandle>,
    intakes: IntakeHealth,
}

/// What `/healthz` and `/metrics` look at: the core, and the platforms' intakes.
#[derive(Clone)]
struct Observer {
    app: App,
    intakes: IntakeHealth,
}

impl server::Observed for Observer {
    async fn health(&self) -> Result<(), String> {
        let down = self.intakes.down();
        let intakes = match down.is_empty() {
            true => Ok(()),
            false => Err(down.join("; ")),
        };
        let core = self.app.health().await;
        match (core, intakes) {
            (Ok(()), Ok(())) => Ok(()),
            (Err(problem), Ok(())) | (Ok(()), Err(problem)) => Err(problem),
            (Err(core), Err(intakes)) => Err(format!("{core}; {intakes}")),
        }
    }

    async fn details(&self) -> String {
        self.app.details().await
    }

    async fn metrics(&self) -> String {
        self.app.metrics().await
    }
}

impl Serving {
    async fn start(&mut self, config: &Config, app: &App) -> Result<(), StartError> {
        let listen = config
            .server
            .listen
            .parse()
            .expect("validated in Config::load");
        let observer = Observer {
            app: app.clone(),
            intakes: self.intakes.clone(),
        };
        let server = server::Server::start(listen, observer)
            .await
            .map_err(|source| StartError::Listen {
                address: config.server.listen.clone(),
                source,
            })?;
        self.server = Some(server);
        let (telegram, discord) = (&config.telegram, &config.discord);
        warn_of_setup(config);
        if let Some(token) = telegram.token.as_ref().filter(|_| telegram.enabled) {
            let router = app.router().clone();
            let inbox = app.inbox().clone();
            let health = self.intakes.clone();
            let token = token.expose();
            let handle = platform::telegram::start(telegram, token, router, inbox, health).await?;
            self.platforms.push(handle);
        }
        if let Some(token) = discord.token.as_ref().filter(|_| discord.enabled) {
            let router = app.router().clone();
            let inbox = app.inbox().clone();
            let health = self.intakes.clone();
            let handle =
                platform::discord::start(discord, token.expose(), router, inbox, health).await?;
            self.platforms.push(handle);
        }
        if self.platforms.is_empty() {
            info!(
                "no chat platform is enabled; serving nothing until one is (see config.example.toml)"
            );
        }
        Ok(())
    }

    async fn stop(mut self, app: App, grace: Duration) {
        for platform in &mut self.platforms {
            platform.stop_intake().await;
        }
        let store = app.stop_work(Some(grace)).await;
        // Answers still waiting get a moment (a rate limit may hold them back); their
        // receipts are written before the database closes.
        for platform in self.platforms {
            platform.finish_delivery(DELIVERY_WAIT).await;
        }
        store.close().await;
        info!("codex-gateway stopped");
        if let Some(server) = self.server {
            server.stop().await;
        }
    }
}
