//! Approval requests waiting for a person, each declined if nobody answers in time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::time::{Duration, Instant};

use crate::codex::{ApprovalDecision, ApprovalResponder};

/// Ids are unique across chats, so a button press names exactly one request.
static NEXT_ID: AtomicU64 = AtomicU64::new(1);

#[derive(Default)]
pub(super) struct PendingApprovals {
    pending: HashMap<u64, (ApprovalResponder, Instant)>,
}

impl PendingApprovals {
    /// Holds the request until answered or `timeout` passes; returns its id.
    pub(super) fn add(&mut self, responder: ApprovalResponder, timeout: Duration) -> u64 {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        self.pending
            .insert(id, (responder, Instant::now() + timeout));
        id
    }

    /// Answers Codex; false if the request is no longer pending.
    pub(super) fn answer(&mut self, id: u64, decision: ApprovalDecision) -> bool {
        match self.pending.remove(&id) {
            Some((responder, _)) => {
                responder.answer(decision);
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
            self.answer(*id, ApprovalDecision::Decline);
        }
        expired
    }

    /// Drops every request (declining it): the turn they belonged to is over.
    pub(super) fn clear(&mut self) {
        self.pending.clear();
    }
}
