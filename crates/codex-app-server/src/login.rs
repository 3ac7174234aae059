//! Codex's own login from a chat: the device-code flow (`account/login/start`, then the
//! `account/login/completed` notification) and `account/logout`.

use std::time::Duration;

use serde::Deserialize;
use serde_json::{Value, json};
use tokio::sync::broadcast;

use super::catalog::QUICK;
use super::error::CodexError;
use super::process::AppServer;

/// A started device-code login: where to go and what to enter.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceLogin {
    pub login_id: String,
    pub verification_url: String,
    pub user_code: String,
}

/// How a login ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoginOutcome {
    LoggedIn,
    Failed(String),
    /// No word from Codex within the wait.
    TimedOut,
}

/// A login waiting for the person to enter the code.
pub struct PendingLogin {
    login_id: String,
    /// The app-server logging in: each server has its own Codex home and login.
    server: AppServer,
    events: broadcast::Receiver<(String, Value)>,
}

impl AppServer {
    /// Starts the device-code flow; listening for its end begins before it starts, so a
    /// quick end is not missed.
    pub async fn start_device_login(&self) -> Result<(DeviceLogin, PendingLogin), CodexError> {
        let events = self.account_events();
        let params = json!({"type": "chatgptDeviceCode"});
        let login: DeviceLogin = self
            .request_within("account/login/start", params, QUICK)
            .await?;
        let pending = PendingLogin {
            login_id: login.login_id.clone(),
            server: self.clone(),
            events,
        };
        Ok((login, pending))
    }

    pub async fn logout(&self) -> Result<(), CodexError> {
        self.request_within::<Value>("account/logout", Value::Null, QUICK)
            .await
            .map(drop)
    }
}

impl PendingLogin {
    pub fn server(&self) -> &AppServer {
        &self.server
    }

    /// Waits for `account/login/completed` of this login, at most `within`.
    pub async fn completed(mut self, within: Duration) -> LoginOutcome {
        let wait = async {
            loop {
                let Ok((method, params)) = self.events.recv().await else {
                    return LoginOutcome::Failed("the Codex app-server stopped".into());
                };
                let ours =
                    params.get("loginId").and_then(Value::as_str) == Some(self.login_id.as_str());
                if method != "account/login/completed" || !ours {
                    continue;
                }
                return match params.get("success").and_then(Value::as_bool) {
                    Some(true) => LoginOutcome::LoggedIn,
                    _ => LoginOutcome::Failed(
                        params
                            .get("error")
                            .and_then(Value::as_str)
                            .unwrap_or("Codex gave no reason")
                            .to_owned(),
                    ),
                };
            }
        };
        tokio::time::timeout(within, wait)
            .await
            .unwrap_or(LoginOutcome::TimedOut)
    }
}
