//! `/get`: a file from the chat's folder, read by the app-server (as Codex's user, on
//! Codex's machine), never from outside that folder.

use std::path::{Path, PathBuf};

use super::{Session, SessionError};

/// Larger files are refused: Telegram's bots download at most 20 MB, and Discord's
/// default upload limit is lower still for most servers.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// Why a file is not sent; the chat is told.
#[derive(Debug, thiserror::Error)]
pub enum GetRefusal {
    #[error("{0} does not exist in this chat's folder")]
    Missing(String),
    #[error("not allowed: {0} is outside this chat's folder")]
    Outside(String),
    #[error("{0} is not a file")]
    NotAFile(String),
    #[error("{path} is {bytes} bytes; files over {} MB are not sent", MAX_FILE_BYTES / 1024 / 1024)]
    TooLarge { path: String, bytes: u64 },
    #[error("Codex could not read {path}: {error}")]
    Unreadable { path: String, error: SessionError },
}

/// `path` (relative to `folder`, or absolute) with symlinks followed; it must be a file
/// inside `folder`, small enough to send.
pub fn resolve_file(folder: &Path, path: &str) -> Result<PathBuf, GetRefusal> {
    let resolved =
        std::fs::canonicalize(folder.join(path)).map_err(|_| GetRefusal::Missing(path.into()))?;
    let folder = std::fs::canonicalize(folder).map_err(|_| GetRefusal::Missing(path.into()))?;
    if !resolved.starts_with(&folder) {
        return Err(GetRefusal::Outside(path.into()));
    }
    let meta = std::fs::metadata(&resolved).map_err(|_| GetRefusal::Missing(path.into()))?;
    if !meta.is_file() {
        return Err(GetRefusal::NotAFile(path.into()));
    }
    if meta.len() > MAX_FILE_BYTES {
        let bytes = meta.len();
        return Err(GetRefusal::TooLarge {
            path: path.into(),
            bytes,
        });
    }
    Ok(resolved)
}

impl Session {
    /// The folder this chat works in: fixed or chosen, else its workspace folder.
    pub fn folder(&self) -> Result<PathBuf, SessionError> {
        match self.chosen_folder() {
            Some(folder) => Ok(folder.to_owned()),
            None => self.workspace_folder(),
        }
    }

    /// The file `path` of the chat's folder, as a name and its bytes.
    pub async fn file(&mut self, path: &str) -> Result<(String, Vec<u8>), GetRefusal> {
        let _ = self.choices().await; // a chosen folder counts; unreadable choices do not
        let folder = self
            .folder()
            .map_err(|_| GetRefusal::Missing(path.into()))?;
        let resolved = resolve_file(&folder, path)?;
        let unreadable = |error| GetRefusal::Unreadable {
            path: path.into(),
            error,
        };
        let server = self.server().await.map_err(unreadable)?;
        let bytes = server.read_file(&resolved).await;
        let bytes = bytes.map_err(|error| unreadable(error.into()))?;
        let name = resolved.file_name().map_or_else(
            || "file".to_owned(),
            |name| name.to_string_lossy().into_owned(),
        );
        Ok((name, bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_files_inside_the_folder_are_sent() {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join("chat");
        std::fs::create_dir_all(folder.join("sub")).unwrap();
        std::fs::write(folder.join("sub/out.txt"), "x").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "s").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), folder.join("link")).unwrap();
        let inside = std::fs::canonicalize(folder.join("sub/out.txt")).unwrap();
        assert_eq!(resolve_file(&folder, "sub/out.txt").unwrap(), inside);
        assert_eq!(
            resolve_file(&folder, &inside.display().to_string()).unwrap(),
            inside
        );
        let refused = |path: &str| resolve_file(&folder, path).unwrap_err().to_string();
        assert!(refused("/etc/passwd").contains("outside"));
        assert!(refused("../secret.txt").contains("outside"));
        assert!(refused("link").contains("outside"));
        assert!(refused("sub").contains("not a file"));
        assert!(refused("nope").contains("does not exist"));
    }
}
