//! Whether Codex can reach its model at all. A provider that needs an OpenAI login, with
//! no login stored and no API key given, makes every turn retry in silence; the gateway
//! says so instead, at start and to every message, until the login is there.

use std::sync::atomic::{AtomicBool, Ordering};

use tracing::warn;

use crate::codex::{AccountState, AppServer, Codex, DeviceLogin, PendingLogin, SpawnSpec};

use super::SessionError;

/// The one line that names the problem and its fixes.
pub const LOGIN_MISSING: &str = "Codex is not logged in, so it cannot answer. Log in on the \
     gateway's machine with `codex login` (in Docker: `docker compose run --rm --user codex gateway codex \
     login --device-auth`), or give Codex an API key (OPENAI_API_KEY).";

/// The same for a Codex worker, which has its own Codex home and login.
pub const WORKER_LOGIN_MISSING: &str = "Codex on this worker is not logged in, so it cannot \
     answer. Log it in on the worker's machine with `codex login --device-auth` as the user it \
     runs as (with the compose file's workers profile: `docker compose run --rm worker codex \
     login --device-auth`), or with /login from a chat whose thread lives on it.";

/// Variables that give Codex an API key without a stored login.
const API_KEY_VARIABLES: [&str; 2] = ["OPENAI_API_KEY", "CODEX_API_KEY"];

/// Whether `state` (from `account/read`) means no turn can reach the model.
pub fn login_missing(state: &AccountState, spec: &SpawnSpec) -> bool {
    let key_given = API_KEY_VARIABLES.iter().any(|name| spec.passes_env(name));
    state.requires_openai_auth && state.account.is_none() && !key_given
}

/// The gateway's view of the login, asked again while it is missing.
pub struct LoginCheck {
    spec: SpawnSpec,
    missing: AtomicBool,
}

impl LoginCheck {
    pub fn new(spec: SpawnSpec) -> Self {
        Self {
            spec,
            missing: AtomicBool::new(false),
        }
    }

    /// Asks Codex for the account; returns whether a login is missing. A failed question
    /// is logged and counts as no news.
    pub async fn refresh(&self, server: &AppServer) -> bool {
        match server.account().await {
            Ok(state) => {
                let missing = login_missing(&state, &self.spec);
                self.missing.store(missing, Ordering::SeqCst);
                missing
            }
            Err(error) => {
                warn!(%error, "account/read failed; cannot tell whether Codex is logged in");
                self.missing.load(Ordering::SeqCst)
            }
        }
    }

    /// What to tell people while the login is missing: log in here, or on the worker
    /// (the login is checked on this machine's processes when there are any).
    pub fn missing_text(codex: &Codex) -> &'static str {
        match codex.knows(crate::codex::LOCAL) {
            true => LOGIN_MISSING,
            false => WORKER_LOGIN_MISSING,
        }
    }

    /// Whether the login is still missing: known fine stays fine, missing is asked again.
    pub async fn still_missing(&self, codex: &Codex) -> bool {
        if !self.missing.load(Ordering::SeqCst) {
            return false;
        }
        // With no server up, the message goes on and waits for one (a worker coming back).
        match codex.servers().await.first() {
            Some(server) => self.refresh(server).await,
            None => false,
        }
    }
}

impl super::Session {
    /// Starts Codex's device-code login; the person then enters the code on the page.
    pub async fn start_login(&self) -> Result<(DeviceLogin, PendingLogin), SessionError> {
        Ok(self.server().await?.start_device_login().await?)
    }

    pub async fn logout(&self) -> Result<(), SessionError> {
        let server = self.server().await?;
        server.logout().await?;
        self.ctx.login.refresh(&server).await;
        Ok(())
    }
}
