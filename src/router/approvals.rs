//! Approval requests waiting for a person, each declined if nobody answers in time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use tokio::time::{Duration, Instant};

use crate::chat::{ChatKey, Decision};
use crate::codex::{ApprovalDecision, ApprovalResponder};

/// Ids are unique across chats, so a button press names exactly one request.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Which chat holds each pending request: the router finds the chat of a button press here.
pub(super) type ApprovalIndex = Arc<Mutex<HashMap<u64, ChatKey>>>;

/// One chat's pending requests.
pub(super) struct PendingApprovals {
    chat: ChatKey,
    index: ApprovalIndex,
    pending: HashMap<u64, (ApprovalResponder, Instant)>,
}

impl PendingApprovals {
    pub(super) fn new(chat: ChatKey, index: ApprovalIndex) -> Self {
        Self {
            chat,
            index,
            pending: HashMap::new(),
        }
    }

    /// Holds the request until answered or `timeout` passes; returns its id.
    pub(super) fn add(&mut self, responder: ApprovalResponder, timeout: Duration) -> u64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.pending
            .insert(id, (responder, Instant::now() + timeout));
        self.index
            .lock()
            .expect("lock")
            .insert(id, self.chat.clone());
        id
    }

    /// Answers Codex; false if the request is no longer pending.
    pub(super) fn answer(&mut self, id: u64, decision: Decision) -> bool {
        self.index.lock().expect("lock").remove(&id);
        match self.pending.remove(&id) {
            Some((responder, _)) => {
                responder.answer(codex_decision(decision));
                true
            }
            None => false,
        }
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().map(|(_, deadline)| *deadline).min()
    }

    /// Declines every request past its deadline; returns their ids.
    pub(super) fn expire(&mut self, now: Instant) -> Vec<u64> {
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, (_, deadline))| *deadline <= now)
            .map(|(id, _)| *id)
            .collect();
        for id in &expired {
            self.answer(*id, Decision::Decline);
        }
        expired
    }

    /// Drops every request (declining it): the turn they belonged to is over.
    /// The turn is handed over at shutdown: its requests stay unanswered, to be asked
    /// again of the next start.
    pub(super) fn leave(&mut self) {
        let mut index = self.index.lock().expect("lock");
        for (id, (responder, _)) in self.pending.drain() {
            index.remove(&id);
            responder.leave();
        }
    }

    pub(super) fn clear(&mut self) {
        let mut index = self.index.lock().expect("lock");
        for id in self.pending.keys() {
            index.remove(id);
        }
        self.pending.clear();
    }
}

impl Drop for PendingApprovals {
    fn drop(&mut self) {
        self.clear();
    }
}

/// A person's decision as Codex takes it.
pub(super) fn codex_decision(decision: Decision) -> ApprovalDecision {
    match decision {
        Decision::Accept => ApprovalDecision::Accept,
        Decision::AcceptForSession => ApprovalDecision::AcceptForSession,
        Decision::Decline => ApprovalDecision::Decline,
        Decision::Cancel => ApprovalDecision::Cancel,
    }
}
