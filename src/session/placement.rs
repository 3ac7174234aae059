//! Which Codex server holds a chat's thread: chosen once, stored with the thread, and
//! used ever after, because the thread's rollout lives on that machine.

use tracing::{info, warn};

use super::{Session, SessionError};
use crate::codex::AppServer;

impl Session {
    /// The app-server for this chat: its live thread's, else the one on the server its
    /// thread lives on, else one on a server chosen now.
    pub(super) async fn server(&self) -> Result<AppServer, SessionError> {
        if let Some(live) = self.live.as_ref().filter(|live| live.server.is_alive()) {
            return Ok(live.server.clone());
        }
        let name = self.placement().await?;
        let affinity = self.chat.to_string();
        Ok(self.ctx.codex.server_at(&name, &affinity).await?)
    }

    /// Whether the chat's server is up (a worker may be unreachable).
    pub async fn reach_server(&self) -> Result<(), SessionError> {
        self.server().await.map(drop)
    }

    /// The name of the chat's server. A chat without one gets the reachable server with
    /// the fewest live threads, kept until its thread is stored there.
    pub(super) async fn placement(&self) -> Result<String, SessionError> {
        if let Some(name) = self.placed.lock().expect("lock").clone() {
            return Ok(name);
        }
        let codex = &self.ctx.codex;
        let name = match self.record().await?.and_then(|r| r.codex_server) {
            Some(name) if codex.knows(&name) => name,
            Some(gone) => {
                // Its thread cannot be resumed elsewhere: the new server starts a
                // replacement seeded with the transcript.
                warn!(chat = %self.chat, server = gone, "the chat's Codex server is no longer configured; placing it anew");
                codex.place()?
            }
            None => {
                let name = codex.place()?;
                info!(chat = %self.chat, server = name, "chat placed on a Codex server");
                name
            }
        };
        *self.placed.lock().expect("lock") = Some(name.clone());
        Ok(name)
    }

    /// The chat's server as far as it is known, without choosing one: for `/status`.
    pub async fn server_name(&self) -> Option<String> {
        if let Some(name) = self.placed.lock().expect("lock").clone() {
            return Some(name);
        }
        self.record().await.ok().flatten()?.codex_server
    }

    /// Lets the chat's next thread be placed anew (after `/new`).
    pub(super) fn unplace(&self) {
        self.placed.lock().expect("lock").take();
    }
}
