//! Command line: wiring only.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use codex_gateway::config::Config;
use codex_gateway::redact::Redactor;
use codex_gateway::{App, platform};
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
            Action::CheckConfig => codex_gateway::check::run(&config, cli.config.as_deref()).await,
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
