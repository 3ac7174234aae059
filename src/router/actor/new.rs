//! `/new`: the chat leaves its thread (kept in the history) for a fresh one.

use super::Actor;
use crate::router::replies::Replies;
use crate::router::texts;

impl Actor {
    pub(super) async fn start_over(&mut self, replies: &Replies<'_>) {
        match self.session.start_over().await {
            Ok(_) => replies.notice(texts::NEW_THREAD),
            Err(error) => self.report(replies, &error),
        }
    }
}
