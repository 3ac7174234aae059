//! `[[codex.remote]]`: app-servers on other machines that the gateway connects to.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{ConfigError, Secret, read_token};

/// One remote app-server (`codex app-server --listen ws://… --ws-auth capability-token`).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RemoteConfig {
    /// What `/status`, logs and metrics call it; the URL's host and port when unset.
    pub name: Option<String>,
    /// `ws://host:port` (plain text: keep it on a private network or a tunnel) or `wss://`.
    pub url: String,
    /// A file holding the worker's token (its `--ws-token-file`).
    pub token_file: PathBuf,
    /// Read from `token_file` at load.
    #[serde(skip)]
    pub token: Option<Secret>,
}

impl RemoteConfig {
    /// The worker's name as configured, or its address.
    pub fn name(&self) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        match url::Url::parse(&self.url) {
            Ok(url) => match (url.host_str(), url.port_or_known_default()) {
                (Some(host), Some(port)) => format!("{host}:{port}"),
                _ => self.url.clone(),
            },
            Err(_) => self.url.clone(),
        }
    }
}

/// Reads every worker's token and checks the list: ws(s) URLs, distinct names, and at
/// least one place for Codex to run.
pub(super) fn load(remotes: &mut [RemoteConfig], processes: usize) -> Result<(), ConfigError> {
    if processes == 0 && remotes.is_empty() {
        return Err(ConfigError::Rule(
            "codex.processes is 0 and no [[codex.remote]] is configured: Codex has nowhere to run"
                .into(),
        ));
    }
    let mut names = Vec::new();
    for remote in remotes.iter_mut() {
        let name = remote.name();
        let scheme = url::Url::parse(&remote.url).map(|url| url.scheme().to_owned());
        if !matches!(scheme.as_deref(), Ok("ws" | "wss")) {
            return Err(ConfigError::Rule(format!(
                "codex.remote {name}: url must be ws://host:port or wss://host:port, got {:?}",
                remote.url
            )));
        }
        if name == codex::LOCAL || names.contains(&name) {
            return Err(ConfigError::Rule(format!(
                "codex.remote names must be distinct and not {:?}; {name:?} is taken",
                codex::LOCAL
            )));
        }
        remote.token = Some(read_token(
            &format!("codex.remote {name}"),
            &remote.token_file,
        )?);
        names.push(name);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use crate::config::Config;

    fn load(toml: &str) -> Result<Config, String> {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(toml.as_bytes()).unwrap();
        Config::load_with_env(Some(file.path()), Vec::new()).map_err(|e| e.to_string())
    }

    #[test]
    fn workers_load_their_tokens_and_are_named_by_address() {
        let mut token = tempfile::NamedTempFile::new().unwrap();
        token.write_all(b"s3cret-token\n").unwrap();
        let path = token.path().display();
        let config = load(&format!(
            "[codex]\nprocesses = 0\n[[codex.remote]]\nurl = \"ws://10.0.0.5:4500\"\n\
             token_file = \"{path}\"\n[[codex.remote]]\nname = \"gpu\"\n\
             url = \"wss://codex.example.com/ws\"\ntoken_file = \"{path}\"\n"
        ))
        .unwrap();
        let names: Vec<_> = config.codex.remote.iter().map(|r| r.name()).collect();
        assert_eq!(names, ["10.0.0.5:4500", "gpu"]);
        let token = config.codex.remote[0].token.as_ref().unwrap();
        assert_eq!(token.expose(), "s3cret-token");
        // A worker's token is a secret: redacted and kept from the Codex child.
        let secrets: Vec<_> = config.secrets().iter().map(|s| s.expose()).collect();
        assert_eq!(secrets, ["s3cret-token", "s3cret-token"]);
    }

    #[test]
    fn bad_worker_lists_are_refused_with_a_reason() {
        let nowhere = load("[codex]\nprocesses = 0\n").unwrap_err();
        assert!(nowhere.contains("nowhere to run"), "{nowhere}");

        let mut token = tempfile::NamedTempFile::new().unwrap();
        token.write_all(b"t").unwrap();
        let path = token.path().display();
        let http = load(&format!(
            "[[codex.remote]]\nurl = \"http://10.0.0.5:4500\"\ntoken_file = \"{path}\"\n"
        ))
        .unwrap_err();
        assert!(http.contains("ws://host:port"), "{http}");

        let twice = format!(
            "[[codex.remote]]\nname = \"a\"\nurl = \"ws://h:1\"\ntoken_file = \"{path}\"\n\
             [[codex.remote]]\nname = \"a\"\nurl = \"ws://h:2\"\ntoken_file = \"{path}\"\n"
        );
        assert!(load(&twice).unwrap_err().contains("distinct"));
        let local = format!(
            "[[codex.remote]]\nname = \"local\"\nurl = \"ws://h:1\"\ntoken_file = \"{path}\"\n"
        );
        assert!(load(&local).unwrap_err().contains("distinct"));

        let unreadable =
            load("[[codex.remote]]\nurl = \"ws://h:1\"\ntoken_file = \"/nonexistent/token\"\n")
                .unwrap_err();
        assert!(unreadable.contains("cannot be read"), "{unreadable}");
    }
}
