//! A chat whose Codex worker is down: it is told once, and its message waits for the
//! worker (up to `codex.worker_wait_secs`), then runs, or fails with a clear reason.

use tracing::{info, warn};

use super::Actor;
use crate::codex::CodexError;
use crate::router::replies::Replies;
use crate::router::texts;
use crate::session::{SessionError, StartedTurn, TurnRequest};

impl Actor {
    /// Starts the turn; when the chat's worker is unreachable, waits for it once.
    pub(super) async fn start_turn(
        &mut self,
        replies: &Replies<'_>,
        request: TurnRequest<'_>,
    ) -> Result<StartedTurn, SessionError> {
        match self.session.start_turn(request).await {
            Err(SessionError::Codex(error)) if is_unreachable(&error) => {
                if !self.wait_for_worker(replies, &error).await {
                    return Err(error.into());
                }
                self.session.start_turn(request).await
            }
            other => other,
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
        let ctx = self.ctx.clone();
        let back = ctx.codex.until_reachable(server, wait);
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
