//! Typed configuration: built-in defaults < TOML file < `CODEX_GATEWAY__*` environment variables.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub use chat::{FollowUp, Progress};

mod paths;
mod read;
mod tokens;
mod workers;

pub use codex::{ApprovalPolicy, SandboxMode};
pub use hygiene::CompactionMode;
use hygiene::Policy;
use read::{by_name, id_list};
pub use tokens::{Secret, TokenOf, secret_warnings, shape_problem};
use tokens::{read_token, token_from_file};
pub use workers::RemoteConfig;

/// Prefix of the environment variables that override the config file
/// (`CODEX_GATEWAY__TELEGRAM__TOKEN` sets `telegram.token`).
pub const ENV_PREFIX: &str = "CODEX_GATEWAY";

#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    pub storage: StorageConfig,
    pub codex: CodexConfig,
    pub hygiene: HygieneConfig,
    pub server: ServerConfig,
    pub chat: ChatConfig,
    pub schedule: ScheduleConfig,
    pub transcription: TranscriptionConfig,
    pub telegram: TelegramConfig,
    pub discord: DiscordConfig,
}

/// Scheduled work (`/every`, `/at`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ScheduleConfig {
    /// The shortest interval a job may run at.
    pub min_interval_secs: u64,
    pub max_jobs_per_chat: usize,
    /// The zone times and cron patterns are read in: an IANA name (`Europe/Berlin`).
    pub timezone: String,
}

impl Default for ScheduleConfig {
    fn default() -> Self {
        Self {
            min_interval_secs: 60,
            max_jobs_per_chat: 20,
            timezone: "UTC".into(),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ChatConfig {
    /// What a message sent while a turn runs does, in chats that did not choose
    /// (`/steer`, `/queue`).
    pub follow_up: FollowUp,
    /// How a running turn is shown in chats that did not choose (`/verbose`, `/quiet`).
    pub progress: Progress,
    /// Largest file, in MB, a person may send Codex.
    pub max_attachment_mb: u64,
}

impl Default for ChatConfig {
    fn default() -> Self {
        Self {
            follow_up: FollowUp::Steer,
            progress: Progress::Status,
            max_attachment_mb: 20,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TranscriptionConfig {
    /// An OpenAI-compatible `audio/transcriptions` endpoint; unset, voice messages are
    /// answered with a hint instead.
    pub url: Option<String>,
    pub model: String,
    /// The environment variable holding the endpoint's API key.
    pub api_key_env: String,
    /// Read from `api_key_env` when the config is loaded.
    #[serde(skip)]
    pub api_key: Option<Secret>,
}

impl Default for TranscriptionConfig {
    fn default() -> Self {
        Self {
            url: None,
            model: "whisper-1".into(),
            api_key_env: "CODEX_GATEWAY_TRANSCRIPTION_KEY".into(),
            api_key: None,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StorageConfig {
    /// SQLite file holding the chat -> thread mapping and transcripts.
    pub database: PathBuf,
}

impl Default for StorageConfig {
    fn default() -> Self {
        Self {
            database: PathBuf::from("codex-gateway.db"),
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct CodexConfig {
    /// The `codex` executable (a path, or a name looked up in PATH).
    pub binary: PathBuf,
    /// `CODEX_HOME` for the app-server; unset keeps Codex's own default (`~/.codex`).
    pub home: Option<PathBuf>,
    /// Run the app-servers as this user (`name` or `uid:gid`), so Codex's commands cannot
    /// read the gateway's tokens, database or config. Needs root or CAP_SETUID, CAP_SETGID
    /// and CAP_KILL.
    pub run_as: Option<String>,
    /// `key=value` overrides passed to the app-server as `-c key=value`.
    pub config: Vec<String>,
    /// Extra environment variables for the app-server.
    pub env: BTreeMap<String, String>,
    /// Root of the working directories Codex runs in.
    pub workspace: PathBuf,
    /// Absolute folders a chat may move to with `/cwd` (empty: `/cwd` only shows).
    pub project_roots: Vec<PathBuf>,
    /// Chats whose folder is fixed, by the key `/status` shows ("discord:123"): a channel
    /// that *is* a repository.
    pub chat_folders: BTreeMap<String, PathBuf>,
    #[serde(deserialize_with = "by_name")]
    pub workspace_mode: WorkspaceMode,
    /// Model slug for new and resumed threads; unset uses Codex's configured model.
    pub model: Option<String>,
    #[serde(deserialize_with = "by_name")]
    pub approval_policy: ApprovalPolicy,
    #[serde(deserialize_with = "by_name")]
    pub sandbox: SandboxMode,
    /// A turn Codex says nothing about for this long (no event of any kind) is
    /// interrupted and the chat is told; a busy turn is never cut by it.
    pub turn_timeout_secs: u64,
    /// An optional hard cap on a turn's whole run, busy or not; unset, none.
    pub max_turn_secs: Option<u64>,
    /// How long one JSON-RPC request (not a turn) may take before it counts as failed.
    pub request_timeout_secs: u64,
    /// Codex's own log level (its `RUST_LOG`), never the gateway's.
    pub log_level: String,
    /// How often each app-server is asked a cheap question; one that does not answer within
    /// `health_check_timeout_secs` counts as wedged and is restarted.
    pub health_check_secs: u64,
    pub health_check_timeout_secs: u64,
    /// App-server processes on this machine; each hosts many threads, and a chat sticks
    /// to one. 0 runs Codex only on the remote workers.
    pub processes: usize,
    /// App-servers on other machines (`[[codex.remote]]`).
    pub remote: Vec<RemoteConfig>,
    /// How long a message waits for its chat's unreachable worker before it fails.
    pub worker_wait_secs: u64,
    /// An approval request nobody answers is declined after this long.
    pub approval_timeout_secs: u64,
    /// Messages a chat may have waiting behind its running turn; more are refused.
    pub max_queued_messages: usize,
    /// The local app-servers listen on loopback WebSocket with a token, so a terminal can
    /// attach to a chat's live thread (`/attach`); false talks to them over stdio.
    pub attach: bool,
    /// Their port when attachable (one process only); 0 takes any free port.
    pub attach_port: u16,
    /// Every task (a thread or topic the bot opened) works in a git worktree of its own,
    /// on a branch named after it, made from the chat's folder's repository.
    pub task_worktrees: bool,
}

impl Default for CodexConfig {
    fn default() -> Self {
        Self {
            binary: PathBuf::from("codex"),
            home: None,
            run_as: None,
            project_roots: Vec::new(),
            chat_folders: BTreeMap::new(),
            config: Vec::new(),
            env: BTreeMap::new(),
            workspace: PathBuf::from("workspace"),
            workspace_mode: WorkspaceMode::PerChat,
            model: None,
            approval_policy: ApprovalPolicy::OnRequest,
            sandbox: SandboxMode::WorkspaceWrite,
            turn_timeout_secs: 30 * 60,
            max_turn_secs: None,
            request_timeout_secs: 60,
            log_level: "warn".into(),
            health_check_secs: 30,
            health_check_timeout_secs: 10,
            processes: 1,
            remote: Vec::new(),
            worker_wait_secs: 300,
            approval_timeout_secs: 600,
            max_queued_messages: 20,
            attach: true,
            attach_port: 0,
            task_worktrees: false,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ServerConfig {
    /// Address of the health and metrics endpoint (`/healthz`, `/metrics`) of `run`.
    pub listen: String,
    /// On SIGTERM/SIGINT, how long running turns may go on before they are interrupted.
    pub shutdown_grace_secs: u64,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:8787".into(),
            shutdown_grace_secs: 20,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct HygieneConfig {
    #[serde(deserialize_with = "by_name")]
    pub compaction: CompactionMode,
    /// In `gateway` mode, compact after a turn that left the context this full.
    pub compact_at_percent: u8,
    /// Chats kept in memory at most; the least recently used is unloaded (losslessly).
    pub max_live_threads: usize,
    /// Unload a chat idle this long; 0 never does.
    pub idle_unload_secs: u64,
}

impl Default for HygieneConfig {
    fn default() -> Self {
        Self {
            compaction: CompactionMode::Native,
            compact_at_percent: 85,
            max_live_threads: 64,
            idle_unload_secs: 3600,
        }
    }
}

impl HygieneConfig {
    pub fn policy(&self) -> Policy {
        Policy {
            mode: self.compaction,
            compact_at_percent: self.compact_at_percent,
            idle_unload: (self.idle_unload_secs > 0)
                .then(|| std::time::Duration::from_secs(self.idle_unload_secs)),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkspaceMode {
    /// Each chat works in its own subfolder of `workspace`.
    PerChat,
    /// Every chat works in `workspace` itself (one shared project).
    Shared,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct TelegramConfig {
    pub enabled: bool,
    pub token: Option<Secret>,
    /// A file holding the token (a Docker secret, say), instead of `token`.
    pub token_file: Option<PathBuf>,
    /// Bot API base URL, for a self-hosted Bot API server.
    pub api_url: String,
    /// Telegram user ids allowed to talk to the bot and to answer approval prompts.
    #[serde(deserialize_with = "id_list")]
    pub allowed_users: Vec<i64>,
    /// Users who may log Codex in and out from a DM; empty: the first allowed user.
    #[serde(deserialize_with = "id_list")]
    pub admins: Vec<i64>,
    /// Chats (groups) whose members may all talk to the bot.
    #[serde(deserialize_with = "id_list")]
    pub allowed_chats: Vec<i64>,
    /// In groups: one Codex thread for the whole group, or one per user.
    pub group_threads: GroupThreads,
    /// Least time between two edits of a streaming reply in one chat.
    pub edit_interval_ms: u64,
    /// How long a turn runs before its reply starts streaming; quicker answers are sent
    /// as one message.
    pub first_flush_ms: u64,
    /// How long one getUpdates long poll waits for news.
    pub poll_timeout_secs: u32,
    /// In private chats, the running turn streams as a Telegram draft (`sendMessageDraft`)
    /// instead of an edited status message.
    pub drafts: bool,
}

impl Default for TelegramConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            token_file: None,
            api_url: "https://api.telegram.org".into(),
            allowed_users: Vec::new(),
            admins: Vec::new(),
            allowed_chats: Vec::new(),
            group_threads: GroupThreads::PerChat,
            edit_interval_ms: 1000,
            first_flush_ms: 1000,
            poll_timeout_secs: 30,
            drafts: true,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GroupThreads {
    PerChat,
    PerUser,
}

#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct DiscordConfig {
    pub enabled: bool,
    pub token: Option<Secret>,
    /// A file holding the token (a Docker secret, say), instead of `token`.
    pub token_file: Option<PathBuf>,
    /// The application's id (Developer Portal, General Information), for slash commands.
    pub application_id: Option<u64>,
    /// REST base URL of a Discord API proxy; unset talks to Discord itself.
    pub api_url: Option<String>,
    /// Reach discord.com at this address instead of the one DNS gives (the tests' fake
    /// Discord, a pinned egress); unlike `api_url`, serenity's rate limiter stays on.
    pub connect_to: Option<std::net::SocketAddr>,
    /// A PEM file of certificate authorities trusted besides the built-in ones (a
    /// TLS-inspecting proxy, the tests' fake Discord).
    pub ca_file: Option<PathBuf>,
    /// User ids allowed to talk to the bot and to answer approval prompts.
    #[serde(deserialize_with = "id_list")]
    pub allowed_users: Vec<u64>,
    /// Users who may log Codex in and out from a DM; empty: the first allowed user.
    #[serde(deserialize_with = "id_list")]
    pub admins: Vec<u64>,
    /// Role ids whose members are allowed too.
    #[serde(deserialize_with = "id_list")]
    pub allowed_roles: Vec<u64>,
    /// Channels where the bot answers every message (elsewhere only when mentioned).
    #[serde(deserialize_with = "id_list")]
    pub channels: Vec<u64>,
    /// A message addressed to the bot in a channel opens a thread of its own (a task
    /// with its own Codex thread) instead of going to the channel's conversation.
    pub auto_thread: bool,
    /// Register slash commands in these guilds (instant) instead of globally.
    #[serde(deserialize_with = "id_list")]
    pub guild_ids: Vec<u64>,
    /// Least time between two edits of a streaming reply in one channel.
    pub edit_interval_ms: u64,
    /// How long a turn runs before its reply starts streaming; quicker answers are sent
    /// as one message.
    pub first_flush_ms: u64,
}

impl Default for DiscordConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            token: None,
            token_file: None,
            application_id: None,
            api_url: None,
            connect_to: None,
            ca_file: None,
            allowed_users: Vec::new(),
            admins: Vec::new(),
            allowed_roles: Vec::new(),
            channels: Vec::new(),
            auto_thread: false,
            guild_ids: Vec::new(),
            edit_interval_ms: 1000,
            first_flush_ms: 1000,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("config file {path} does not exist")]
    Missing { path: PathBuf },
    #[error("invalid configuration: {0}")]
    Invalid(#[from] config::ConfigError),
    #[error("invalid configuration: {0}")]
    Rule(String),
}

impl Config {
    /// Loads defaults, then the TOML file (if given), then `CODEX_GATEWAY__*` variables.
    pub fn load(file: Option<&Path>) -> Result<Self, ConfigError> {
        Self::load_with_env(file, std::env::vars())
    }

    /// As [`Config::load`], with the environment passed in (tests use this).
    pub fn load_with_env(
        file: Option<&Path>,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, ConfigError> {
        let mut builder = config::Config::builder();
        if let Some(path) = file {
            if !path.exists() {
                return Err(ConfigError::Missing {
                    path: path.to_owned(),
                });
            }
            builder = builder.add_source(config::File::from(path).format(config::FileFormat::Toml));
        }
        let env: Vec<(String, String)> = env.into_iter().collect();
        let overrides = env
            .iter()
            .filter(|(name, _)| name.starts_with(&format!("{ENV_PREFIX}__")))
            .cloned()
            .collect();
        let environment = config::Environment::with_prefix(ENV_PREFIX)
            .prefix_separator("__")
            .separator("__")
            .try_parsing(true)
            .source(Some(overrides));
        builder = builder.add_source(environment);
        let mut config: Config = builder.build()?.try_deserialize()?;
        paths::anchor(&mut config, &paths::base_folder(file));
        config.telegram.token = token_from_file(
            "telegram",
            &config.telegram.token,
            &config.telegram.token_file,
        )?;
        config.discord.token =
            token_from_file("discord", &config.discord.token, &config.discord.token_file)?;
        workers::load(&mut config.codex.remote, config.codex.processes)?;
        let key_name = &config.transcription.api_key_env;
        config.transcription.api_key = env
            .iter()
            .find(|(name, value)| name == key_name && !value.is_empty())
            .map(|(_, value)| Secret::new(value.clone()));
        config.validate()?;
        tokens::refuse_secrets_in_codex_env(&config)?;
        Ok(config)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        let codex = &self.codex;
        let periods = [
            codex.turn_timeout_secs,
            codex.request_timeout_secs,
            codex.health_check_secs,
            codex.health_check_timeout_secs,
            codex.worker_wait_secs,
        ];
        if periods.contains(&0) || codex.max_turn_secs == Some(0) {
            return Err(ConfigError::Rule(
                "codex.turn_timeout_secs, max_turn_secs, request_timeout_secs, \
                 health_check_secs, health_check_timeout_secs and worker_wait_secs must be \
                 above 0"
                    .into(),
            ));
        }
        if codex.attach_port != 0 && codex.processes > 1 {
            return Err(ConfigError::Rule(
                "codex.attach_port names the port of one app-server; with codex.processes \
                 above 1 leave it 0 (any free port each)"
                    .into(),
            ));
        }
        if self.hygiene.max_live_threads == 0 {
            return Err(ConfigError::Rule(
                "hygiene.max_live_threads must be at least 1".into(),
            ));
        }
        if !(1..=100).contains(&self.hygiene.compact_at_percent) {
            return Err(ConfigError::Rule(
                "hygiene.compact_at_percent must be between 1 and 100".into(),
            ));
        }
        if let Some(bad) = self.codex.config.iter().find(|kv| !kv.contains('=')) {
            return Err(ConfigError::Rule(format!(
                "codex.config entries must look like key=value, got {bad:?}"
            )));
        }
        let platforms = [
            ("telegram", self.telegram.enabled, &self.telegram.token),
            ("discord", self.discord.enabled, &self.discord.token),
        ];
        for (name, enabled, token) in platforms {
            let variable = format!("CODEX_GATEWAY__{}__TOKEN", name.to_uppercase());
            match token {
                None if enabled => {
                    return Err(ConfigError::Rule(format!(
                        "{name} is enabled but neither {name}.token ({variable}) nor {name}.token_file is set"
                    )));
                }
                Some(token) if enabled && token.expose().trim().is_empty() => {
                    return Err(ConfigError::Rule(format!(
                        "{name}.token is empty (in the config file or {variable}); give the bot's token"
                    )));
                }
                _ => {}
            }
        }
        if self.server.listen.parse::<std::net::SocketAddr>().is_err() {
            return Err(ConfigError::Rule(format!(
                "server.listen must be an address like 127.0.0.1:8787, got {:?}",
                self.server.listen
            )));
        }
        if self.discord.enabled && self.discord.application_id.is_none() {
            return Err(ConfigError::Rule(
                "discord is enabled but discord.application_id is not set".into(),
            ));
        }
        if crate::schedule::timezone(&self.schedule.timezone).is_none() {
            return Err(ConfigError::Rule(format!(
                "schedule.timezone must be an IANA time zone such as Europe/Berlin, got {:?}",
                self.schedule.timezone
            )));
        }
        if self.schedule.min_interval_secs == 0 {
            return Err(ConfigError::Rule(
                "schedule.min_interval_secs must be at least 1".into(),
            ));
        }
        if self.chat.max_attachment_mb == 0 {
            return Err(ConfigError::Rule(
                "chat.max_attachment_mb must be at least 1".into(),
            ));
        }
        if let Some(url) = &self.transcription.url
            && !url.starts_with("http")
        {
            return Err(ConfigError::Rule(format!(
                "transcription.url must be an http(s) URL, got {url:?}"
            )));
        }
        if self.telegram.enabled && !self.telegram.api_url.starts_with("http") {
            return Err(ConfigError::Rule(format!(
                "telegram.api_url must be an http(s) URL, got {:?}",
                self.telegram.api_url
            )));
        }
        Ok(())
    }

    /// The gateway's own credentials, which must never reach the Codex child.
    pub fn secrets(&self) -> Vec<&Secret> {
        let keys = [
            &self.telegram.token,
            &self.discord.token,
            &self.transcription.api_key,
        ];
        let workers = self.codex.remote.iter().map(|remote| &remote.token);
        keys.into_iter().chain(workers).flatten().collect()
    }
}

/// Whether `user` is an admin: listed in `admins`, or, with none listed, the first
/// allowed user.
pub fn is_admin<T: PartialEq>(admins: &[T], allowed_users: &[T], user: &T) -> bool {
    match admins.is_empty() {
        true => allowed_users.first() == Some(user),
        false => admins.contains(user),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follow_up_names_are_the_configs() {
        use chat::Named;
        for name in ["steer", "queue"] {
            let parsed: FollowUp = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(
                (FollowUp::from_name(name), parsed.name()),
                (Some(parsed), name)
            );
        }
        assert_eq!(FollowUp::from_name("later"), None);
        for name in ["status", "verbose", "quiet"] {
            let parsed: Progress = serde_json::from_value(serde_json::json!(name)).unwrap();
            assert_eq!(
                (Progress::from_name(name), parsed.name()),
                (Some(parsed), name)
            );
        }
        assert_eq!(Progress::from_name("loud"), None);
        let refused = serde_json::from_value::<Progress>(serde_json::json!("loud")).unwrap_err();
        assert!(
            refused
                .to_string()
                .contains("one of status, verbose, quiet"),
            "{refused}"
        );
    }

    fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn write_toml(text: &str) -> tempfile::NamedTempFile {
        let file = tempfile::Builder::new().suffix(".toml").tempfile().unwrap();
        std::fs::write(file.path(), text).unwrap();
        file
    }

    #[test]
    fn defaults_apply_without_file_or_env() {
        let config = Config::load_with_env(None, env(&[])).unwrap();
        assert_eq!(config.codex.binary, PathBuf::from("codex"));
        assert_eq!(config.codex.turn_timeout_secs, 1800);
        assert_eq!(config.codex.workspace_mode, WorkspaceMode::PerChat);
        assert!(!config.telegram.enabled);
    }

    #[test]
    fn file_overrides_defaults_and_env_overrides_file() {
        let file = write_toml(
            r#"
            [storage]
            database = "/data/file.db"
            [codex]
            model = "from-file"
            approval_policy = "untrusted"
            turn_timeout_secs = 60
            config = ["model_provider=mock"]
            env = { FOO = "bar" }
            "#,
        );
        let config = Config::load_with_env(
            Some(file.path()),
            env(&[
                ("CODEX_GATEWAY__CODEX__MODEL", "from-env"),
                ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true"),
                ("CODEX_GATEWAY__TELEGRAM__TOKEN", "123:abc"),
                ("UNRELATED", "x"),
            ]),
        )
        .unwrap();
        assert_eq!(config.storage.database, PathBuf::from("/data/file.db"));
        assert_eq!(config.codex.model.as_deref(), Some("from-env"));
        assert_eq!(config.codex.approval_policy, ApprovalPolicy::Untrusted);
        assert_eq!(config.codex.turn_timeout_secs, 60);
        assert_eq!(config.codex.config, vec!["model_provider=mock"]);
        assert_eq!(config.codex.env.get("FOO").map(String::as_str), Some("bar"));
        assert!(config.telegram.enabled);
        assert_eq!(config.secrets()[0].expose(), "123:abc");
    }

    #[test]
    fn env_number_is_parsed() {
        let config = Config::load_with_env(
            None,
            env(&[("CODEX_GATEWAY__CODEX__TURN_TIMEOUT_SECS", "90")]),
        )
        .unwrap();
        assert_eq!(config.codex.turn_timeout_secs, 90);
    }

    #[test]
    fn env_lists_are_comma_separated() {
        let config = Config::load_with_env(
            None,
            env(&[
                ("CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS", "1001,1002"),
                ("CODEX_GATEWAY__DISCORD__CHANNELS", "600"),
                ("CODEX_GATEWAY__TELEGRAM__API_URL", "http://127.0.0.1:1,2"),
            ]),
        )
        .unwrap();
        assert_eq!(config.telegram.allowed_users, vec![1001, 1002]);
        assert_eq!(config.discord.channels, vec![600]);
        assert_eq!(config.telegram.api_url, "http://127.0.0.1:1,2");
    }

    #[test]
    fn tokens_can_be_files() {
        let file = write_toml("123456:from-a-secret-file\n");
        let path = file.path().display().to_string();
        let config = Config::load_with_env(
            None,
            env(&[
                ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true"),
                ("CODEX_GATEWAY__TELEGRAM__TOKEN_FILE", &path),
            ]),
        )
        .unwrap();
        let token = config.telegram.token.as_ref().map(Secret::expose);
        assert_eq!(token, Some("123456:from-a-secret-file"));

        let both = Config::load_with_env(
            None,
            env(&[
                ("CODEX_GATEWAY__DISCORD__TOKEN", "inline-token"),
                ("CODEX_GATEWAY__DISCORD__TOKEN_FILE", &path),
            ]),
        );
        assert!(both.unwrap_err().to_string().contains("both set"));
        let missing = Config::load_with_env(
            None,
            env(&[("CODEX_GATEWAY__DISCORD__TOKEN_FILE", "/nonexistent/token")]),
        );
        let error = missing.unwrap_err().to_string();
        assert!(
            error.contains("discord.token_file /nonexistent/token cannot be read"),
            "{error}"
        );
    }

    #[test]
    fn secret_never_prints() {
        let config = Config::load_with_env(
            None,
            env(&[("CODEX_GATEWAY__DISCORD__TOKEN", "very-secret-token")]),
        )
        .unwrap();
        assert!(!format!("{config:?}").contains("very-secret-token"));
    }

    #[test]
    fn bad_input_is_rejected_with_a_reason() {
        let typo = write_toml("[codex]\nbinnary = \"codex\"\n");
        let err = Config::load_with_env(Some(typo.path()), env(&[])).unwrap_err();
        assert!(err.to_string().contains("binnary"), "{err}");

        let missing = Config::load_with_env(Some(Path::new("/nonexistent/x.toml")), env(&[]));
        assert!(matches!(missing, Err(ConfigError::Missing { .. })));

        let no_token =
            Config::load_with_env(None, env(&[("CODEX_GATEWAY__TELEGRAM__ENABLED", "true")]))
                .unwrap_err();
        assert!(
            no_token.to_string().contains("telegram.token"),
            "{no_token}"
        );

        let bad_override = write_toml("[codex]\nconfig = [\"novalue\"]\n");
        let err = Config::load_with_env(Some(bad_override.path()), env(&[])).unwrap_err();
        assert!(err.to_string().contains("key=value"), "{err}");

        let bad_policy = write_toml("[codex]\napproval_policy = \"sometimes\"\n");
        assert!(Config::load_with_env(Some(bad_policy.path()), env(&[])).is_err());
    }
}
