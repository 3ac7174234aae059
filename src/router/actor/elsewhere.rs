//! Turns another client started on the chat's live thread (a terminal attached with
//! `/attach`, `codex queue`): between the chat's own turns the actor watches the thread,
//! and such a turn is shown and answered in the chat like its own.

use tracing::info;

use super::Actor;
use crate::router::replies::Replies;
use crate::router::turn::TurnTracker;
use chat::Inbound;
use codex::{Notification, ThreadEvent};

impl Actor {
    /// Where the chat's own messages come from, kept (without their content) so a turn
    /// from elsewhere can be shown there.
    pub(super) fn remember_place(&mut self, inbound: &Inbound) {
        self.place = Some(Inbound {
            chat: inbound.chat.clone(),
            user: inbound.user.clone(),
            text: String::new(),
            reply_to: inbound.reply_to.clone(),
            answer_slot: None,
            can_approve: inbound.can_approve,
            private: inbound.private,
            admin: inbound.admin,
            attachments: Vec::new(),
            ticket: None,
        });
    }

    /// Whether the actor, idle, watches its thread for turns from elsewhere.
    pub(super) fn watches_thread(&self) -> bool {
        self.place.is_some() && self.session.is_live()
    }

    /// What a thread event means while the chat runs no turn: the id of a turn another
    /// client started, or nothing.
    pub(super) fn started_elsewhere(&mut self, event: Option<ThreadEvent>) -> Option<String> {
        // No more events (the thread was let go): nothing left to watch.
        let Some(event) = event else {
            self.session.lose_live_thread();
            return None;
        };
        match event {
            ThreadEvent::Notification(Notification::TurnStarted { turn_id }) => Some(turn_id),
            // Asked of the client whose turn it is, which answers: never declined here.
            ThreadEvent::Approval(_, responder) => {
                responder.leave();
                None
            }
            ThreadEvent::Question(_, responder) => {
                responder.leave();
                None
            }
            ThreadEvent::ProcessExited => {
                self.session.lose_live_thread();
                None
            }
            ThreadEvent::Notification(_) => None,
        }
    }

    /// Shows a turn another client started, as the chat's own: its prompt, its work, its
    /// answer; it goes into the chat's transcript.
    pub(super) async fn serve_elsewhere(&mut self, turn_id: String) {
        let Some(place) = self.place.clone() else {
            return;
        };
        info!(chat = %self.chat, turn_id, "following a turn started elsewhere on the thread");
        let replies = Replies::to(&place);
        self.activity.touch();
        self.activity.set_busy(true);
        let tracker = TurnTracker::elsewhere(turn_id, self.ctx.settings.turn_timeout);
        let outcome = self.follow(&replies, tracker, true).await;
        self.end_turn(&replies, outcome).await;
        self.activity.touch();
        self.activity.set_busy(!self.queue.is_empty());
    }
}
