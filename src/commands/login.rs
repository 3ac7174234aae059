//! `/login`: Codex's own login with a device code, from a direct message by an admin, so
//! a fresh deployment needs no shell in the container.

use std::time::Duration;

use tracing::{info, warn};

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use codex::LoginOutcome;

/// How long a device code is waited on (OpenAI's codes last 15 minutes).
const LOGIN_WAIT: Duration = Duration::from_secs(15 * 60);

const LOGGED_IN: &str = "Codex is logged in.";
const LOGIN_EXPIRED: &str = "The login code expired unused; send /login to try again.";

fn login_unstarted(error: &impl std::fmt::Display) -> String {
    format!("Codex's login could not start: {error}")
}

fn login_code(url: &str, code: &str) -> String {
    format!(
        "To log Codex in, open {url} and enter the code {code}. I will say here when it is done."
    )
}

fn login_failed(reason: &str) -> String {
    format!("Codex's login failed: {reason}")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login;

impl ChatCommand for Login {
    const SPEC: Spec = Spec {
        admin_only: true,
        ..Spec::plain(
            "login",
            "Log Codex in (admins, in a direct message)",
            "log Codex in with a device code (admins, in a direct message)",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Login)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let (login, pending) = match chat.session.start_login().await {
            Ok(started) => started,
            Err(error) => {
                warn!(chat = %chat.chat, %error, "device-code login could not start");
                return replies.notice(login_unstarted(&error));
            }
        };
        info!(chat = %chat.chat, "device-code login started");
        replies.notice(login_code(&login.verification_url, &login.user_code));
        let later = replies.later();
        let completed = chat.session.await_login(pending, LOGIN_WAIT).await;
        let key = chat.chat.clone();
        tokio::spawn(async move {
            let text = match completed.await {
                LoginOutcome::LoggedIn => {
                    info!(chat = %key, "Codex logged in");
                    LOGGED_IN.to_owned()
                }
                LoginOutcome::Failed(reason) => login_failed(&reason),
                LoginOutcome::TimedOut => LOGIN_EXPIRED.to_owned(),
            };
            later.send(text);
        });
    }
}
