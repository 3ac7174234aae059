//! Command line: wiring only.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use codex_gateway::config::Config;
use codex_gateway::redact::Redactor;
use codex_gateway::{App, platform, session};
use tracing_subscriber::EnvFilter;

#[derive(Parser)]
#[command(
    version,
    about = "Chat with OpenAI Codex from Discord, Telegram and the console"
)]
struct Cli {
    /// TOML config file; `CODEX_GATEWAY__SECTION__KEY` variables override it.
    #[arg(long, global = true)]
    config: Option<PathBuf>,
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Serve every chat platform enabled in the config until SIGINT/SIGTERM.
    Run,
    /// Chat with Codex in this terminal: one line is one message.
    Console {
        /// Name of the conversation; the same name continues the same Codex thread.
        #[arg(long, default_value = "local")]
        chat: String,
    },
    /// Check the config, the Codex binary and the database, then exit.
    CheckConfig,
    /// Exit 0 if the running gateway answers and is healthy (for container healthchecks).
    Health,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let default_log = if matches!(cli.command, Action::Console { .. }) {
        "warn"
    } else {
        "info"
    };
    let redactor = Redactor::default();
    tracing_subscriber::fmt()
        .with_env_filter(
            EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default_log)),
        )
        .with_writer(redactor.clone())
        .init();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            return fail(
                &redactor,
                format!("cannot start the async runtime: {error}"),
            );
        }
    };
    if matches!(cli.command, Action::Run | Action::Console { .. }) {
        guard_this_process();
    }
    let result = runtime.block_on(async {
        let config = Config::load(cli.config.as_deref()).map_err(|e| e.to_string())?;
        for secret in config.secrets() {
            redactor.add(secret.expose());
        }
        match cli.command {
            Action::Run => codex_gateway::run(&config, shutdown_signal())
                .await
                .map_err(|e| e.to_string()),
            Action::Console { chat } => console(&config, &chat).await,
            Action::CheckConfig => check_config(&config).await,
            Action::Health => {
                let listen = config
                    .server
                    .listen
                    .parse()
                    .expect("validated in Config::load");
                codex_gateway::server::probe(listen).await
            }
        }
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => fail(&redactor, message),
    }
}

/// What Codex's commands may do to the gateway: they are ended with it rather than left
/// running, and they cannot read its memory or environment (the tokens) even as the same
/// user: a non-dumpable process's `/proc` files belong to root.
fn guard_this_process() {
    if let Err(error) = codex::adopt_orphans() {
        tracing::warn!(%error, "cannot adopt what Codex's commands leave running; it may outlive the gateway");
    }
    // SAFETY: prctl with PR_SET_DUMPABLE takes integer arguments only.
    if unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) } != 0 {
        let error = std::io::Error::last_os_error();
        tracing::warn!(%error, "cannot make the gateway non-dumpable");
    }
}

fn fail(redactor: &Redactor, message: String) -> ExitCode {
    eprintln!("codex-gateway: {}", redactor.redact(&message));
    ExitCode::FAILURE
}

async fn console(config: &Config, chat: &str) -> Result<(), String> {
    let app = App::start(config).await.map_err(|e| e.to_string())?;
    if let Some(missing) = app.login_missing().await {
        eprintln!("codex-gateway: {missing}");
    }
    let stdin = tokio::io::BufReader::new(tokio::io::stdin());
    let result = platform::console::run(app.router(), chat, stdin, tokio::io::stdout()).await;
    app.shutdown(None).await;
    result.map_err(|e| format!("console I/O failed: {e}"))
}

async fn check_config(config: &Config) -> Result<(), String> {
    println!("config: ok");
    let db = &config.storage.database;
    let store = store::Store::open(db).await.map_err(|e| e.to_string())?;
    store.close().await;
    println!("database: {} opened and migrated", db.display());
    let spec = codex_gateway::spawn_spec(config).map_err(|e| e.to_string())?;
    if config.codex.processes > 0 {
        let server = codex::AppServer::spawn(&spec)
            .await
            .map_err(|e| e.to_string())?;
        println!(
            "codex: {} started and answered initialize",
            config.codex.binary.display()
        );
        check_login("codex", &server, &spec, session::LOGIN_MISSING).await?;
    }
    check_workers(config, &spec).await?;
    let workspace = &config.codex.workspace;
    std::fs::create_dir_all(workspace)
        .map_err(|e| format!("workspace {} cannot be created: {e}", workspace.display()))?;
    println!("workspace: {} is usable", workspace.display());
    Ok(())
}

/// Whether the app-server can reach its model: logged in, or a provider without login.
async fn check_login(
    label: &str,
    server: &codex::AppServer,
    spec: &codex::SpawnSpec,
    missing: &str,
) -> Result<(), String> {
    let account = server.account().await;
    server.shutdown().await;
    match account {
        Ok(state) if session::login_missing(&state, spec) => Err(format!("{label}: {missing}")),
        Ok(_) => {
            println!("{label}: logged in, or its model provider needs no login");
            Ok(())
        }
        Err(error) => Err(format!(
            "{label} did not say whether it is logged in: {error}"
        )),
    }
}

/// One line per `[[codex.remote]]` worker: connected and logged in, or why not. Every
/// worker is tried before the first failure is returned.
async fn check_workers(config: &Config, spec: &codex::SpawnSpec) -> Result<(), String> {
    let mut failed = Vec::new();
    for remote in codex_gateway::remote_specs(config, &spec.unread) {
        let label = format!("codex worker {} ({})", remote.name, remote.url);
        let checked = match codex::AppServer::connect(&remote).await {
            Ok(server) => {
                println!("{label}: connected and answered initialize");
                check_login(&label, &server, spec, session::WORKER_LOGIN_MISSING).await
            }
            Err(error) => Err(format!("{label}: {error}")),
        };
        if let Err(problem) = checked {
            println!("{problem}");
            failed.push(remote.name);
        }
    }
    match failed.is_empty() {
        true => Ok(()),
        false => Err(format!(
            "{} of the Codex workers failed the check: {}",
            failed.len(),
            failed.join(", ")
        )),
    }
}

/// Resolves on SIGTERM or SIGINT. The handlers are in place from the call on, so a
/// signal during the start stops the gateway gracefully too.
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).expect("SIGTERM handler");
    let mut interrupt = signal(SignalKind::interrupt()).expect("SIGINT handler");
    async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    }
}
