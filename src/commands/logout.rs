//! `/logout`: logs Codex out (admins, in a direct message); `/login` logs it in again.

use tracing::info;

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};

const LOGGED_OUT: &str = "Codex is logged out; /login logs it in again.";

fn logout_failed(error: &impl std::fmt::Display) -> String {
    format!("Codex could not log out: {error}")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Logout;

impl ChatCommand for Logout {
    const SPEC: Spec = Spec {
        admin_only: true,
        ..Spec::plain(
            "logout",
            "Log Codex out (admins, in a direct message)",
            "log Codex out (admins, in a direct message)",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Logout)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.logout().await {
            Ok(()) => {
                info!(chat = %chat.chat, "Codex logged out");
                replies.notice(LOGGED_OUT)
            }
            Err(error) => replies.notice(logout_failed(&error)),
        }
    }
}
