//! One gateway per database: a second one would poll the same bots and resume the same
//! threads as the first. An exclusive OS lock on a file beside the database keeps it out;
//! the OS drops the lock when the process ends, however it ends.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another codex-gateway is already running on {}", .database.display())]
    Held { database: PathBuf },
    #[error("cannot open the database at {}: its lock file {}: {source}", .database.display(), .path.display())]
    Io {
        database: PathBuf,
        path: PathBuf,
        source: std::io::Error,
    },
}

/// Held while the gateway runs.
#[derive(Debug)]
pub struct InstanceLock {
    _file: File,
}

impl InstanceLock {
    /// Locks `<database>.lock` (created readable by this user only), or says who holds it.
    pub fn acquire(database: &Path) -> Result<Self, LockError> {
        let mut path = database.as_os_str().to_owned();
        path.push(".lock");
        let path = PathBuf::from(path);
        let io = |source| LockError::Io {
            database: database.to_owned(),
            path: path.clone(),
            source,
        };
        if let Some(folder) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(folder).map_err(io)?;
        }
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(io)?;
        match file.try_lock() {
            Ok(()) => Ok(Self { _file: file }),
            Err(TryLockError::WouldBlock) => Err(LockError::Held {
                database: database.to_owned(),
            }),
            Err(TryLockError::Error(source)) => Err(io(source)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_holder_is_refused_until_the_first_lets_go() {
        let dir = tempfile::tempdir().unwrap();
        let database = dir.path().join("gateway.db");
        let first = InstanceLock::acquire(&database).unwrap();
        let second = InstanceLock::acquire(&database).unwrap_err();
        assert!(
            second.to_string().contains("already running on"),
            "{second}"
        );
        drop(first);
        InstanceLock::acquire(&database).expect("free again");
    }
}
