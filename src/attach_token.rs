//! The token that lets a terminal attach to the gateway's own app-servers: made once and
//! kept beside the database in a file only the gateway's user may read. Codex gets its
//! digest only, so a command Codex runs (as `codex.run_as`) can neither read the token
//! nor answer its own approval requests with it.

use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use crate::config::Config;

const FILE_NAME: &str = "codex-attach-token";
/// Read and write for the gateway's user, nothing for anyone else.
const PRIVATE: u32 = 0o600;

/// Why the token could not be had.
#[derive(Debug, thiserror::Error)]
#[error("cannot keep the attach token in {path}: {source}")]
pub struct TokenError {
    path: PathBuf,
    source: std::io::Error,
}

/// Where the token is kept (whether or not it exists yet).
pub fn token_file(config: &Config) -> PathBuf {
    let database = &config.storage.database;
    let folder = database.parent().unwrap_or(Path::new("."));
    folder.join(FILE_NAME)
}

/// The token in `path`, made first if there is none; the file is left private.
pub fn load_or_make(path: &Path) -> Result<String, TokenError> {
    let failed = |source| TokenError {
        path: path.to_owned(),
        source,
    };
    match std::fs::read_to_string(path) {
        Ok(token) if !token.trim().is_empty() => {
            let private = std::fs::Permissions::from_mode(PRIVATE);
            std::fs::set_permissions(path, private).map_err(failed)?;
            return Ok(token.trim().to_owned());
        }
        Ok(_) => {}
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(failed(error)),
    }
    let token = new_token().map_err(failed)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(PRIVATE)
        .open(path)
        .map_err(failed)?;
    file.write_all(token.as_bytes()).map_err(failed)?;
    Ok(token)
}

/// 32 random bytes, as hex.
fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn made_once_private_and_kept() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join(FILE_NAME);
        let token = load_or_make(&path).unwrap();
        assert_eq!(token.len(), 64);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, PRIVATE, "{mode:o}");
        assert_eq!(load_or_make(&path).unwrap(), token, "made again");

        // A file someone made readable is made private again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        assert_eq!(load_or_make(&path).unwrap(), token);
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, PRIVATE, "{mode:o}");
    }
}
