//! Files on the app-server's machine, as its user: what `/get` sends (`fs/readFile`), what
//! people send Codex (`fs/writeFile`), and where a path leads (`realpath` run through
//! `command/exec`: 0.171's `fs/getMetadata` follows no symlink and gives no size), so all
//! of it works wherever Codex runs.

use std::path::{Path, PathBuf};

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

use super::catalog::QUICK;
use super::error::CodexError;
use super::process::AppServer;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileData {
    data_base64: String,
}

/// Where a path leads on the app-server's machine, symlinks and `..` followed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RealPath {
    pub path: PathBuf,
    pub kind: PathKind,
    pub bytes: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathKind {
    File,
    Folder,
    /// A device, socket or pipe.
    Other,
}

/// What a command run on the app-server's machine printed, and how it exited.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Exec {
    pub exit_code: i32,
    pub stdout: String,
    #[serde(default)]
    pub stderr: String,
}

/// Longest a script of the gateway's own may run (git on a large repository).
const SCRIPT_TIME: std::time::Duration = std::time::Duration::from_secs(120);

/// Prints the real path, then `kind|bytes`; the path is an argument, never shell text.
const RESOLVE_SCRIPT: &str = r#"realpath -e -- "$1" && stat -L -c '%F|%s' -- "$1""#;

impl AppServer {
    /// The bytes of the file at `path` (absolute).
    pub async fn read_file(&self, path: &std::path::Path) -> Result<Vec<u8>, CodexError> {
        let method = "fs/readFile";
        let data: FileData = self
            .request_within(method, json!({"path": path}), QUICK)
            .await?;
        base64::engine::general_purpose::STANDARD
            .decode(data.data_base64)
            .map_err(|error| CodexError::Protocol {
                method: method.to_owned(),
                message: error.to_string(),
            })
    }

    /// Writes `bytes` to the file at `path` (absolute), replacing it if it exists.
    pub async fn write_file(&self, path: &std::path::Path, bytes: &[u8]) -> Result<(), CodexError> {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let params = json!({"path": path, "dataBase64": data});
        self.request::<Value>("fs/writeFile", params)
            .await
            .map(drop)
    }

    /// Where `path` (absolute) leads, or `None` if nothing is there (or it cannot be reached).
    pub async fn resolve(&self, path: &Path) -> Result<Option<RealPath>, CodexError> {
        let method = "command/exec";
        let command = ["sh", "-c", RESOLVE_SCRIPT, "sh", &path.to_string_lossy()];
        let params = json!({"command": command, "timeoutMs": QUICK.as_millis() as u64});
        let exec: Exec = self.request_within(method, params, QUICK).await?;
        if exec.exit_code != 0 {
            return Ok(None);
        }
        parse_resolved(&exec.stdout)
            .map(Some)
            .ok_or_else(|| CodexError::Protocol {
                method: method.to_owned(),
                message: format!("unexpected realpath output {:?}", exec.stdout),
            })
    }

    /// Runs the gateway's own `script` with `sh -c` on the app-server's machine, as Codex's
    /// user and outside Codex's sandbox (it is the gateway's, never the model's), with
    /// `args` as `$1`.. (never shell text).
    pub async fn run_script(&self, script: &str, args: &[&str]) -> Result<Exec, CodexError> {
        let command: Vec<&str> = ["sh", "-c", script, "sh"]
            .into_iter()
            .chain(args.iter().copied())
            .collect();
        let params = json!({
            "command": command,
            "timeoutMs": SCRIPT_TIME.as_millis() as u64,
            "sandboxPolicy": {"type": "dangerFullAccess"},
        });
        self.request_within("command/exec", params, SCRIPT_TIME + QUICK)
            .await
    }

    /// Whether anything exists at `path` (absolute). Codex answers a missing path with an
    /// error; only a failure to ask at all is an error here.
    pub async fn exists(&self, path: &std::path::Path) -> Result<bool, CodexError> {
        let asked = self
            .request_within::<Value>("fs/getMetadata", json!({"path": path}), QUICK)
            .await;
        match asked {
            Ok(_) => Ok(true),
            Err(CodexError::Rpc { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }
}

/// `realpath`'s line, then `stat`'s `kind|bytes` (a path may hold newlines: the last line
/// is stat's).
fn parse_resolved(stdout: &str) -> Option<RealPath> {
    let (path, stat) = stdout.strip_suffix('\n')?.rsplit_once('\n')?;
    let (kind, bytes) = stat.rsplit_once('|')?;
    let kind = match kind {
        "regular file" | "regular empty file" => PathKind::File,
        "directory" => PathKind::Folder,
        _ => PathKind::Other,
    };
    Some(RealPath {
        path: PathBuf::from(path),
        kind,
        bytes: bytes.parse().ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn realpath_and_stat_are_read_as_the_app_server_prints_them() {
        let file = parse_resolved("/w/sub/f.txt\nregular file|3\n").unwrap();
        assert_eq!(
            file,
            RealPath {
                path: "/w/sub/f.txt".into(),
                kind: PathKind::File,
                bytes: 3
            }
        );
        let empty = parse_resolved("/w/e\nregular empty file|0\n").unwrap();
        assert_eq!((empty.kind, empty.bytes), (PathKind::File, 0));
        let folder = parse_resolved("/w/sub\ndirectory|4096\n").unwrap();
        assert_eq!(folder.kind, PathKind::Folder);
        let odd = parse_resolved("/w/a\nb|c\nfifo|0\n").unwrap();
        assert_eq!((odd.path, odd.kind), ("/w/a\nb|c".into(), PathKind::Other));
        assert_eq!(parse_resolved(""), None);
        assert_eq!(parse_resolved("/w/x\n"), None);
        assert_eq!(parse_resolved("/w/x\nregular file|many\n"), None);
    }
}
