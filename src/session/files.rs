//! `/get`: a file from the chat's folder, resolved and read by the chat's app-server (as
//! Codex's user, on Codex's machine, which may be a worker), never from outside that folder.

use std::path::{Path, PathBuf};

use super::{Session, SessionError};
use codex::{PathKind, RealPath};

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

/// The file `asked` leads to (`target`, as Codex's machine resolved it, symlinks
/// followed) if it is a file inside `folder` (resolved likewise), small enough to send.
pub fn check_file(
    folder: &Path,
    target: Option<RealPath>,
    asked: &str,
) -> Result<PathBuf, GetRefusal> {
    let target = target.ok_or_else(|| GetRefusal::Missing(asked.into()))?;
    if !target.path.starts_with(folder) {
        return Err(GetRefusal::Outside(asked.into()));
    }
    if target.kind != PathKind::File {
        return Err(GetRefusal::NotAFile(asked.into()));
    }
    if target.bytes > MAX_FILE_BYTES {
        return Err(GetRefusal::TooLarge {
            path: asked.into(),
            bytes: target.bytes,
        });
    }
    Ok(target.path)
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
        let unreadable = |error| GetRefusal::Unreadable {
            path: path.into(),
            error,
        };
        let server = self.server().await.map_err(unreadable)?;
        let real_folder = server.resolve(&folder).await;
        let real_folder = real_folder.map_err(|error| unreadable(error.into()))?;
        let real_folder = real_folder.filter(|f| f.kind == PathKind::Folder);
        let real_folder = real_folder.ok_or_else(|| GetRefusal::Missing(path.into()))?;
        let target = server.resolve(&folder.join(path)).await;
        let target = target.map_err(|error| unreadable(error.into()))?;
        let resolved = check_file(&real_folder.path, target, path)?;
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

    fn real(path: &str, kind: PathKind, bytes: u64) -> Option<RealPath> {
        let path = path.into();
        Some(RealPath { path, kind, bytes })
    }

    #[test]
    fn only_files_inside_the_folder_are_sent() {
        let folder = Path::new("/w/chat");
        let check = |target, asked: &str| check_file(folder, target, asked);
        let inside = real("/w/chat/sub/out.txt", PathKind::File, 1);
        assert_eq!(
            check(inside, "sub/out.txt").unwrap(),
            Path::new("/w/chat/sub/out.txt")
        );
        let refused = |target, asked| check(target, asked).unwrap_err().to_string();
        let passwd = real("/etc/passwd", PathKind::File, 1221);
        assert!(refused(passwd, "/etc/passwd").contains("outside"));
        // A symlink or `..` out of the folder: where it leads counts.
        let secret = real("/w/secret.txt", PathKind::File, 1);
        assert!(refused(secret.clone(), "../secret.txt").contains("outside"));
        assert!(refused(secret, "link").contains("outside"));
        let sibling = real("/w/chat-other/x", PathKind::File, 1);
        assert!(refused(sibling, "/w/chat-other/x").contains("outside"));
        let sub = real("/w/chat/sub", PathKind::Folder, 4096);
        assert!(refused(sub, "sub").contains("not a file"));
        let pipe = real("/w/chat/fifo", PathKind::Other, 0);
        assert!(refused(pipe, "fifo").contains("not a file"));
        assert!(refused(None, "nope").contains("does not exist"));
        let big = real("/w/chat/big", PathKind::File, MAX_FILE_BYTES + 1);
        assert!(refused(big, "big").contains("files over 20 MB"));
    }
}
