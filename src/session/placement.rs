//! Which Codex server holds a chat's thread: chosen once, stored with the thread, and
//! used ever after, because the thread's rollout lives on that machine.

use std::time::Duration;

use tracing::{info, warn};

use super::{Session, SessionError};
use codex::{AppServer, ServerState};

/// Where a chat's thread runs, for `/status`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerPlace {
    /// The chat has no thread yet; its first one is placed then.
    NotYet,
    On(ServerState),
    /// A server the config no longer names; the next message moves the chat.
    Gone(String),
}

impl Session {
    /// The server holding this chat's thread, and how it is doing.
    pub async fn server_place(&self) -> ServerPlace {
        let Some(name) = self.server_name().await else {
            return ServerPlace::NotYet;
        };
        let states = self.ctx.codex.states();
        match states.into_iter().find(|state| state.name == name) {
            Some(state) => ServerPlace::On(state),
            None => ServerPlace::Gone(name),
        }
    }

    /// Resolves when the worker `server` (or, with `None`, any server) is reachable
    /// again, `false` when `within` passed first. Owns what it needs, so the chat's
    /// actor can answer its mailbox meanwhile.
    pub fn wait_for_server(
        &self,
        server: Option<&str>,
        within: Duration,
    ) -> impl Future<Output = bool> + Send + 'static {
        let ctx = self.ctx.clone();
        let server = server.map(str::to_owned);
        async move { ctx.codex.until_reachable(server.as_deref(), within).await }
    }

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

    /// Whether the chat's Codex is a remote worker (whose turns outlive the gateway).
    pub async fn on_remote_worker(&self) -> bool {
        self.server_name()
            .await
            .is_some_and(|name| name != codex::LOCAL)
    }

    /// Lets the chat's next thread be placed anew (after `/new`).
    pub(super) fn unplace(&self) {
        self.placed.lock().expect("lock").take();
    }
}
