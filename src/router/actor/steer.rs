//! A message that arrives while Codex works: given to the running turn (`turn/steer`), or
//! queued for the next one, as the chat chose (`/steer`, `/queue`).

use tracing::{info, warn};

use super::{Actor, ActorMsg};
use crate::router::replies::Replies;
use crate::router::texts;
use chat::{FollowUp, Inbound};

impl Actor {
    /// Gives a message for Codex to the running turn `turn_id`, when the chat steers and
    /// Codex takes it; otherwise queues it for the next turn.
    pub(super) async fn steer_or_queue(&mut self, inbound: Inbound, turn_id: Option<&str>) {
        // A compaction may run before any turn has read the chat's choices.
        let _ = self.session.choices().await;
        // Behind a queued command (a `/new`, say) a message waits its turn: steering it
        // into the running turn would answer it before the command that came first.
        let steering = self.session.follow_up() == FollowUp::Steer && self.queued_messages() == 0;
        let Some(turn_id) = turn_id.filter(|_| steering) else {
            return self.queue_message(inbound, texts::QUEUED);
        };
        let replies = Replies::to(&inbound);
        let Some(prompt) = self.prompt_of(&replies, &inbound).await else {
            // Its files were refused, and the chat told why.
            return self.ticket_done(&inbound).await;
        };
        match self.session.steer(turn_id, &prompt).await {
            Ok(()) => {
                info!(chat = %self.chat, turn_id, "message added to the running turn");
                self.ctx.metrics.steers.inc();
                replies.notice(texts::STEERED);
                self.ticket_done(&inbound).await;
            }
            Err(error) => {
                // The turn just ended, or cannot take input (a review, a compaction).
                warn!(chat = %self.chat, turn_id, %error, "steer refused; message queued");
                replies.notice(texts::STEER_REFUSED);
                let mut inbound = inbound;
                inbound.answer_slot = None;
                self.queue.push_back(ActorMsg::Prepared { inbound, prompt });
            }
        }
    }

    /// Puts a message behind the running turn, telling the chat `notice`.
    pub(super) fn queue_message(&mut self, mut inbound: Inbound, notice: &str) {
        Replies::to(&inbound).notice(notice);
        // The notice answered the message; its result comes as a notice.
        inbound.answer_slot = None;
        self.queue.push_back(ActorMsg::Inbound(inbound));
    }
}
