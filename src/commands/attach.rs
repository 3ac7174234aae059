//! `/attach`: the command line that attaches a terminal to this chat's live Codex thread
//! (`codex resume THREAD --remote URL`), in a direct message only: it names where the
//! token is, never the token.

use std::path::Path;

use tracing::warn;

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies};
use crate::session::AttachPoint;

/// The variable the printed command reads the token from.
const TOKEN_VARIABLE: &str = "CODEX_GATEWAY_ATTACH_TOKEN";
const ONLY_IN_PRIVATE: &str =
    "/attach works in a direct message with the bot: what it prints is for you alone.";
const NO_THREAD: &str =
    "This chat has no Codex thread yet: send a message first, then /attach.";
const NOT_LISTENING: &str = "Codex here talks to the gateway over stdio only \
     (codex.attach = false in the gateway's config), so a terminal cannot attach.";
const UNKNOWN: &str = "The chat's Codex could not be reached to find its address. Try again.";

fn attach_lines(thread_id: &str, url: &str, token_file: Option<&Path>) -> String {
    let token = match token_file {
        Some(file) => format!("export {TOKEN_VARIABLE}=\"$(cat {})\"", file.display()),
        None => format!("export {TOKEN_VARIABLE}=<the worker's token, as in its [[codex.remote]]>"),
    };
    format!(
        "To join this chat's Codex thread from a terminal on the gateway's machine:\n\
         ```\n{token}\ncodex resume {thread_id} --remote {url} --remote-auth-token-env {TOKEN_VARIABLE}\n```\n\
         Turns from either side show live in both. From another machine, forward the \
         port with SSH first (ssh -L PORT:127.0.0.1:PORT the-gateway-host)."
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attach;

impl ChatCommand for Attach {
    const SPEC: Spec = Spec {
        during_turn: true,
        ..Spec::plain(
            "attach",
            "Attach a terminal to this chat's Codex thread",
            "print the command that joins a terminal to this chat's live Codex thread (in a direct message)",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Attach)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        if !replies.private {
            return replies.notice(ONLY_IN_PRIVATE);
        }
        match chat.session.attach_point().await {
            Ok(AttachPoint::At {
                thread_id,
                url,
                token_file,
            }) => replies.notice(attach_lines(&thread_id, &url, token_file.as_deref())),
            Ok(AttachPoint::NoThread) => replies.notice(NO_THREAD),
            Ok(AttachPoint::NotListening) => replies.notice(NOT_LISTENING),
            Err(error) => {
                warn!(chat = %chat.chat, %error, "could not find where to attach");
                replies.notice(UNKNOWN);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lines_name_the_token_file_never_a_token() {
        let file = Path::new("/data/codex-attach-token");
        let lines = attach_lines("th-1", "ws://127.0.0.1:4500", Some(file));
        assert!(lines.contains(
            "export CODEX_GATEWAY_ATTACH_TOKEN=\"$(cat /data/codex-attach-token)\"\n"
        ));
        assert!(lines.contains(
            "codex resume th-1 --remote ws://127.0.0.1:4500 --remote-auth-token-env CODEX_GATEWAY_ATTACH_TOKEN\n"
        ));
    }
}
