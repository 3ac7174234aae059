//! A chat whose Codex worker is down: it is told once, and its message waits for the
//! worker (up to `codex.worker_wait_secs`), then runs, or fails with a clear reason.

use tracing::{info, warn};

use super::Actor;
use crate::router::replies::Replies;
use crate::router::texts;
use crate::session::SessionError;
use codex::CodexError;

impl Actor {
    /// Whether the chat's Codex server can take its message now; when its worker is
    /// down, the chat is told and the message waits for it. A `false` was reported.
    pub(super) async fn reach_codex(&mut self, replies: &Replies<'_>) -> bool {
        match self.session.reach_server().await {
            Err(SessionError::Codex(error)) if is_unreachable(&error) => {
                let back = self.wait_for_worker(replies, &error).await;
                if !back {
                    self.report(replies, &error.into());
                }
                back
            }
            // Anything else shows when the message is handled.
            _ => true,
        }
    }

    /// Says the worker is down and waits until it is back, answering the mailbox
    /// meanwhile (`/stop` ends the wait, and the message is not sent). Whether it came back in time.
    async fn wait_for_worker(&mut self, replies: &Replies<'_>, error: &CodexError) -> bool {
        let (server, reason) = match error {
            CodexError::Unreachable { server, message } => {
                (Some(server.as_str()), message.as_str())
            }
            _ => (None, "every worker is down"),
        };
        let wait = self.ctx.settings.worker_wait;
        warn!(chat = %self.chat, %error, ?wait, "message waits for its Codex worker");
        self.ctx.metrics.error("codex_unreachable");
        replies.notice(texts::waiting_for_worker(server, reason, wait));
        let back = self.session.wait_for_server(server, wait);
        tokio::pin!(back);
        loop {
            tokio::select! {
                back = &mut back => {
                    info!(chat = %self.chat, back, "done waiting for the Codex worker");
                    return back;
                }
                message = self.mailbox.recv(), if self.mailbox_open => match message {
                    Some(message) => {
                        if self.while_busy(message, None).await {
                            return false;
                        }
                    }
                    None => self.mailbox_open = false,
                },
            }
        }
    }
}

fn is_unreachable(error: &CodexError) -> bool {
    matches!(
        error,
        CodexError::Unreachable { .. } | CodexError::NoServerReachable
    )
}
