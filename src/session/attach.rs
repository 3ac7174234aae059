//! Where a terminal attaches to the chat's thread: the thread, the address of the
//! app-server it lives on, and the file of the token to show there.

use std::path::PathBuf;

use super::{Session, SessionError};

/// What `/attach` can offer.
#[derive(Debug, PartialEq, Eq)]
pub enum AttachPoint {
    /// The chat has no thread yet (Codex makes one at the first turn).
    NoThread,
    /// The chat's app-server talks over stdio only (`codex.attach = false`).
    NotListening,
    At {
        thread_id: String,
        url: String,
        /// The token's file, for the gateway's own app-servers; a worker's token is
        /// the one its `[[codex.remote]]` entry names.
        token_file: Option<PathBuf>,
    },
}

impl Session {
    /// Where to attach; the thread is made live first, so the chat sees the terminal's
    /// turns from now on (even before it sends anything itself).
    pub async fn attach_point(&mut self) -> Result<AttachPoint, SessionError> {
        let stored = self.record().await?.and_then(|row| row.thread_id);
        if self.thread_id().is_none() && stored.is_none() {
            return Ok(AttachPoint::NoThread);
        }
        self.ensure_thread().await?;
        let Some(thread_id) = self.thread_id().map(str::to_owned) else {
            return Ok(AttachPoint::NoThread);
        };
        let server = self.server().await?;
        let Some(url) = server.attach_url() else {
            return Ok(AttachPoint::NotListening);
        };
        let token_file = match server.pid() {
            // A process of this machine: the gateway's own token.
            Some(_) => self
                .ctx
                .settings
                .attach_token_file
                .as_ref()
                .map(|file| std::fs::canonicalize(file).unwrap_or_else(|_| file.clone())),
            None => None,
        };
        Ok(AttachPoint::At {
            thread_id,
            url: url.to_owned(),
            token_file,
        })
    }
}
