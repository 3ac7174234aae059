//! Whether Codex can reach its model at all. A provider that needs an OpenAI login, with
//! no login stored and no API key given, makes every turn retry in silence; the gateway
//! says so instead, at start and to every message, until the login is there.

use std::collections::HashSet;
use std::sync::Mutex;
use std::time::Duration;

use tracing::warn;

use codex::{AccountState, AppServer, DeviceLogin, LoginOutcome, PendingLogin, SpawnSpec};

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

/// The gateway's view of each Codex server's login (every server has its own Codex home),
/// asked again while it is missing.
pub struct LoginCheck {
    spec: SpawnSpec,
    /// The servers found without a login, by name.
    missing: Mutex<HashSet<String>>,
}

impl LoginCheck {
    pub fn new(spec: SpawnSpec) -> Self {
        Self {
            spec,
            missing: Mutex::new(HashSet::new()),
        }
    }

    /// Asks server `name` for its account; returns whether its login is missing. A failed
    /// question is logged and counts as no news.
    pub async fn refresh(&self, name: &str, server: &AppServer) -> bool {
        let now = match server.account().await {
            Ok(state) => login_missing(&state, &self.spec),
            Err(error) => {
                warn!(server = name, %error, "account/read failed; cannot tell whether Codex is logged in");
                return self.missing.lock().expect("lock").contains(name);
            }
        };
        let mut missing = self.missing.lock().expect("lock");
        match now {
            true => missing.insert(name.to_owned()),
            false => missing.remove(name),
        };
        now
    }

    /// Whether server `name` still has no login: known fine stays fine, missing is asked
    /// again.
    pub async fn still_missing(&self, name: &str, server: &AppServer) -> bool {
        let known = self.missing.lock().expect("lock").contains(name);
        known && self.refresh(name, server).await
    }

    /// What to tell people while server `name` has no login: log in here, or on the worker.
    pub fn missing_text(name: &str) -> &'static str {
        match name == codex::LOCAL {
            true => LOGIN_MISSING,
            false => WORKER_LOGIN_MISSING,
        }
    }
}

impl super::Session {
    /// Starts Codex's device-code login; the person then enters the code on the page.
    pub async fn start_login(&self) -> Result<(DeviceLogin, PendingLogin), SessionError> {
        Ok(self.server().await?.start_device_login().await?)
    }

    /// How the device-code login `pending` ends (within `within`); a completed one is
    /// recorded for the chat's server, so its chats may send messages again. Owns what it
    /// needs, to be awaited apart from the chat.
    pub async fn await_login(
        &self,
        pending: PendingLogin,
        within: Duration,
    ) -> impl Future<Output = LoginOutcome> + Send + 'static {
        let ctx = self.ctx.clone();
        let name = self.server_name().await.unwrap_or_default();
        async move {
            let server = pending.server().clone();
            let outcome = pending.completed(within).await;
            if outcome == LoginOutcome::LoggedIn {
                ctx.login.refresh(&name, &server).await;
            }
            outcome
        }
    }

    pub async fn logout(&self) -> Result<(), SessionError> {
        let server = self.server().await?;
        server.logout().await?;
        self.refresh_login(&server).await;
        Ok(())
    }

    /// The line to show when the chat's Codex server has no login to reach its model
    /// with; `None` when it has one, or cannot be asked now (a worker that is down is
    /// dealt with when the message is sent).
    pub async fn login_missing(&self) -> Option<&'static str> {
        let name = self.placement().await.ok()?;
        let server = self.server().await.ok()?;
        let missing = self.ctx.login.still_missing(&name, &server).await;
        missing.then(|| LoginCheck::missing_text(&name))
    }

    /// Asks the chat's server for its login again (after a login or logout there).
    pub async fn refresh_login(&self, server: &AppServer) {
        if let Ok(name) = self.placement().await {
            self.ctx.login.refresh(&name, server).await;
        }
    }
}
