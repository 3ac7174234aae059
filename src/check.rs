//! `check-config`: everything a start needs, each checked for real and said in one line:
//! the config, the database, Codex (its version, its warnings, its login), each worker,
//! each enabled platform's token as its API sees it, the workspace. Every check runs;
//! the problems are returned together.

use std::path::Path;

use crate::config::{self, Config, Secret, TokenOf};
use crate::platform::connect::BotIdentity;
use crate::platform::{discord, telegram};
use crate::session;

/// Runs every check, printing what each found; the problems, if any, as one error.
pub async fn run(config: &Config, file: Option<&Path>) -> Result<(), String> {
    let mut problems = Vec::new();
    match file {
        Some(file) => println!("config: {} read", absolute(file)),
        None => println!("config: no file; the defaults and CODEX_GATEWAY__* variables"),
    }
    let db = &config.storage.database;
    match store::Store::open(db).await {
        Ok(store) => {
            store.close().await;
            println!("database: {} opened and migrated", absolute(db));
        }
        Err(error) => problems.push(error.to_string()),
    }
    if let Err(error) = crate::ensure_codex_home(config) {
        problems.push(error.to_string());
    }
    match crate::spawn_spec(config) {
        Ok(spec) => {
            if config.codex.processes > 0
                && let Err(problem) = check_codex(config, &spec).await
            {
                problems.push(problem);
            }
            if let Err(problem) = check_workers(config, &spec).await {
                problems.push(problem);
            }
        }
        Err(error) => problems.push(error.to_string()),
    }
    for warning in config::secret_warnings(config, crate::running_as_root()) {
        println!("warning: {warning}");
    }
    for problem in check_platforms(config).await {
        problems.push(problem);
    }
    let workspace = &config.codex.workspace;
    match std::fs::create_dir_all(workspace) {
        Ok(()) => println!("workspace: {} is usable", absolute(workspace)),
        Err(error) => problems.push(format!(
            "workspace {} cannot be created: {error}",
            absolute(workspace)
        )),
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("\n")),
    }
}

/// The local app-server: started, its version and warnings, its login.
async fn check_codex(config: &Config, spec: &codex::SpawnSpec) -> Result<(), String> {
    let server = codex::AppServer::spawn(spec)
        .await
        .map_err(|e| e.to_string())?;
    let version = server.version().unwrap_or("of an unknown version");
    println!(
        "codex: {} {version} started and answered initialize",
        absolute(&config.codex.binary)
    );
    if version != codex::TESTED_VERSION {
        println!(
            "warning: codex {version} is not the version this gateway is tested with ({})",
            codex::TESTED_VERSION
        );
    }
    let login = check_login("codex", &server, spec, session::LOGIN_MISSING).await;
    // Codex says what is wrong with its setup right after `initialize`; the login
    // question's answer comes after those words.
    for warning in server.config_warnings() {
        println!("warning: codex says: {warning}");
    }
    login
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

/// One line per `[[codex.remote]]` worker: connected and logged in, or why not.
async fn check_workers(config: &Config, spec: &codex::SpawnSpec) -> Result<(), String> {
    let mut failed = Vec::new();
    for remote in crate::remote_specs(config, &spec.unread) {
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

/// Each enabled platform's token: its look, then who its API says the bot is.
async fn check_platforms(config: &Config) -> Vec<String> {
    let mut problems = Vec::new();
    let (tg, dc) = (&config.telegram, &config.discord);
    if let Some(token) = enabled_token(tg.enabled, &tg.token) {
        note_shape("telegram", TokenOf::Telegram, token);
        let answer = telegram::check_token(tg, token).await;
        if let Some(problem) = say_identity("telegram", &tg.api_url, answer, "@") {
            problems.push(problem);
        }
    }
    if let Some(token) = enabled_token(dc.enabled, &dc.token) {
        note_shape("discord", TokenOf::Discord, token);
        let api = dc.api_url.as_deref().unwrap_or("https://discord.com/api");
        let answer = discord::check_token(dc, token).await;
        if let Some(problem) = say_identity("discord", api, answer, "") {
            problems.push(problem);
        }
    }
    if !tg.enabled && !dc.enabled {
        println!("platforms: none enabled (telegram.enabled, discord.enabled); the console works");
    }
    problems
}

fn enabled_token(enabled: bool, token: &Option<Secret>) -> Option<&str> {
    token.as_ref().filter(|_| enabled).map(Secret::expose)
}

fn note_shape(platform: &str, of: TokenOf, token: &str) {
    if let Some(problem) = config::shape_problem(of, token) {
        println!("warning: {platform}.token {problem}");
    }
}

/// The platform's answer in one line; a problem when it did not say who the bot is.
fn say_identity(
    platform: &str,
    api: &str,
    answer: Result<BotIdentity, String>,
    handle: &str,
) -> Option<String> {
    match answer {
        Ok(bot) => {
            println!(
                "{platform}: {api} accepts the token: the bot is {handle}{} (id {})",
                bot.name, bot.id
            );
            None
        }
        Err(why) => Some(format!("{platform}: {api}: {why}")),
    }
}

/// `path` from the root, for lines a person reads without knowing the current folder.
fn absolute(path: &Path) -> String {
    std::path::absolute(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}
