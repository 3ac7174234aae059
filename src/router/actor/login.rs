//! `/login` and `/logout`: Codex's own login, managed from a direct message by an admin,
//! so a fresh deployment needs no shell in the container.

use std::time::Duration;

use tracing::{info, warn};

use super::Actor;
use crate::router::replies::Replies;
use crate::router::texts;
use codex::LoginOutcome;

/// How long a device code is waited on (OpenAI's codes last 15 minutes).
const LOGIN_WAIT: Duration = Duration::from_secs(15 * 60);

impl Actor {
    /// Only for admins in a direct message (the command table says so; `command` checks).
    pub(super) async fn login(&mut self, replies: &Replies<'_>) {
        let (login, pending) = match self.session.start_login().await {
            Ok(started) => started,
            Err(error) => {
                warn!(chat = %self.chat, %error, "device-code login could not start");
                return replies.notice(texts::login_unstarted(&error));
            }
        };
        info!(chat = %self.chat, "device-code login started");
        replies.notice(texts::login_code(&login.verification_url, &login.user_code));
        let later = replies.later();
        let completed = self.session.await_login(pending, LOGIN_WAIT).await;
        let chat = self.chat.clone();
        tokio::spawn(async move {
            let text = match completed.await {
                LoginOutcome::LoggedIn => {
                    info!(%chat, "Codex logged in");
                    texts::LOGGED_IN.to_owned()
                }
                LoginOutcome::Failed(reason) => texts::login_failed(&reason),
                LoginOutcome::TimedOut => texts::LOGIN_EXPIRED.to_owned(),
            };
            later.send(text);
        });
    }

    pub(super) async fn logout(&mut self, replies: &Replies<'_>) {
        match self.session.logout().await {
            Ok(()) => {
                info!(chat = %self.chat, "Codex logged out");
                replies.notice(texts::LOGGED_OUT)
            }
            Err(error) => replies.notice(texts::logout_failed(&error)),
        }
    }
}
