//! How an app-server child is started: its arguments and an environment that keeps the
//! gateway's own settings and secrets out.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::run_as::RunAs;
use super::unread::UnreadLog;

/// How to start an app-server process.
#[derive(Debug, Clone)]
pub struct SpawnSpec {
    pub binary: PathBuf,
    pub home: Option<PathBuf>,
    /// Passed as `-c key=value`.
    pub overrides: Vec<String>,
    pub env: BTreeMap<String, String>,
    /// Variables of ours whose names start with one of these are not passed on (the
    /// gateway's own settings).
    pub withheld_env_prefixes: Vec<String>,
    /// Values that must never reach the child's environment (the gateway's tokens).
    pub secrets: Vec<String>,
    pub request_timeout: Duration,
    /// The user the app-servers run as (`codex.run_as`); the gateway's own when `None`.
    pub run_as: Option<RunAs>,
    /// How often a running process is asked a cheap question, and how long it may take to
    /// answer before it counts as wedged and is restarted.
    pub health_check: HealthCheck,
    /// Where every app-server notes what it could not read.
    pub unread: UnreadLog,
    /// Codex's own `RUST_LOG` (`codex.log_level`), never the gateway's: at `info` its
    /// logging adds about 4 ms to every turn, at `trace` its log carries what commands
    /// print.
    pub log_level: String,
    /// Serve on loopback WebSocket (this token lets a terminal attach) instead of stdio.
    pub attach: Option<Attach>,
}

/// How a local app-server is made attachable: it listens on 127.0.0.1 (`port`, 0 for
/// any free one) and lets in who shows `token`; the process is given only its SHA-256,
/// so neither its command line nor its commands can read the token from it.
#[derive(Clone)]
pub struct Attach {
    pub token: String,
    pub port: u16,
}

impl std::fmt::Debug for Attach {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Attach")
            .field("port", &self.port)
            .finish_non_exhaustive()
    }
}

impl Attach {
    pub(super) fn token_sha256(&self) -> String {
        use sha2::{Digest, Sha256};
        let digest = Sha256::digest(self.token.as_bytes());
        digest.iter().map(|byte| format!("{byte:02x}")).collect()
    }
}

#[derive(Debug, Clone, Copy)]
pub struct HealthCheck {
    pub every: Duration,
    pub timeout: Duration,
}

impl SpawnSpec {
    /// Whether the app-server gets the variable `name` (from ours or the configured extras).
    pub fn passes_env(&self, name: &str) -> bool {
        child_env(std::env::vars_os(), self)
            .iter()
            .any(|(key, value)| key == name && !value.is_empty())
    }
}

pub(super) fn command(spec: &SpawnSpec) -> Command {
    let mut command = Command::new(&spec.binary);
    command.arg("app-server");
    for kv in &spec.overrides {
        command.arg("-c").arg(kv);
    }
    if let Some(attach) = &spec.attach {
        command
            .arg("--listen")
            .arg(format!("ws://127.0.0.1:{}", attach.port))
            .args(["--ws-auth", "capability-token", "--ws-token-sha256"])
            .arg(attach.token_sha256());
    }
    command
        .env_clear()
        .envs(child_env(std::env::vars_os(), spec));
    if let Some(user) = &spec.run_as {
        command.uid(user.uid).gid(user.gid);
        command.env("USER", &user.name).env("LOGNAME", &user.name);
        if let Some(home) = user.home.as_ref().or(spec.home.as_ref()) {
            command.env("HOME", home);
        }
    }
    // Over WebSocket stdin and stdout carry nothing.
    let (stdin, stdout) = match spec.attach {
        Some(_) => (Stdio::null(), Stdio::null()),
        None => (Stdio::piped(), Stdio::piped()),
    };
    command
        .stdin(stdin)
        .stdout(stdout)
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        // Its own group, so a terminal's Ctrl-C reaches the gateway only, which then
        // stops the app-server in order.
        .process_group(0);
    // SAFETY: the hook runs between fork and exec and makes one async-signal-safe
    // syscall. As a subreaper, the app-server keeps what its commands leave behind
    // below itself, so those are known to be its leftovers once it exits.
    unsafe {
        command.pre_exec(super::orphans::set_child_subreaper);
    }
    if spec.attach.is_some() {
        let gateway = std::process::id();
        // SAFETY: as above, async-signal-safe syscalls only.
        unsafe {
            command.pre_exec(move || super::listen::end_with_gateway(gateway));
        }
    }
    command
}

/// The child's environment: ours minus the gateway's own settings and secrets, plus
/// `CODEX_HOME` and the configured extras.
fn child_env(
    inherited: impl Iterator<Item = (OsString, OsString)>,
    spec: &SpawnSpec,
) -> Vec<(OsString, OsString)> {
    let is_secret = |value: &OsString| spec.secrets.iter().any(|s| value.to_str() == Some(s));
    let is_withheld = |name: &OsString| {
        let name = name.to_string_lossy();
        spec.withheld_env_prefixes
            .iter()
            .any(|prefix| name.starts_with(prefix.as_str()))
    };
    let mut env: Vec<_> = inherited
        .filter(|(name, value)| !is_withheld(name) && !is_secret(value) && name != "RUST_LOG")
        .collect();
    env.push(("RUST_LOG".into(), spec.log_level.clone().into()));
    if let Some(home) = &spec.home {
        env.push(("CODEX_HOME".into(), home.into()));
    }
    env.extend(spec.env.iter().map(|(k, v)| (k.into(), v.into())));
    env
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn child_env_drops_gateway_settings_and_secrets() {
        let spec = SpawnSpec {
            binary: "codex".into(),
            home: Some("/data/codex".into()),
            overrides: vec![],
            env: BTreeMap::from([("EXTRA".into(), "1".into())]),
            withheld_env_prefixes: vec!["CODEX_GATEWAY".into()],
            secrets: vec!["tg-secret".into()],
            request_timeout: Duration::from_secs(1),
            run_as: None,
            health_check: HealthCheck {
                every: Duration::from_secs(30),
                timeout: Duration::from_secs(10),
            },
            unread: UnreadLog::default(),
            log_level: "warn".into(),
            attach: None,
        };
        let inherited = [
            ("PATH", "/bin"),
            ("RUST_LOG", "trace"),
            ("CODEX_GATEWAY__TELEGRAM__TOKEN", "tg-secret"),
            ("CODEX_GATEWAY__STORAGE__DATABASE", "/x.db"),
            ("TELEGRAM_TOKEN", "tg-secret"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let env: HashMap<_, _> = child_env(inherited.into_iter(), &spec)
            .into_iter()
            .collect();
        let names: Vec<_> = env
            .keys()
            .map(|k| k.to_string_lossy().into_owned())
            .collect();
        assert_eq!(env.len(), 4, "{names:?}");
        assert_eq!(
            env[&OsString::from("RUST_LOG")],
            "warn",
            "Codex's level is its own"
        );
        assert_eq!(env[&OsString::from("PATH")], "/bin");
        assert_eq!(env[&OsString::from("CODEX_HOME")], "/data/codex");
        assert_eq!(env[&OsString::from("EXTRA")], "1");
    }

    /// What `printf %s TOKEN | sha256sum` prints, as `--ws-token-sha256` expects.
    #[test]
    fn the_token_is_given_as_its_sha256() {
        let attach = Attach {
            token: "abc123secret".into(),
            port: 0,
        };
        assert_eq!(
            attach.token_sha256(),
            "8cff8920e61778fa4adc9f9ef61eee565afea1d93dbead262237878002e57b5d"
        );
        assert!(!format!("{attach:?}").contains("abc123secret"));
    }
}
