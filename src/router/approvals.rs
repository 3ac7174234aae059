//! Approval requests waiting for a person, each declined if nobody answers in time.
//!
//! A request's id carries the gateway run that asked it, and the book knows each pending
//! request's chat: a button left from an earlier run, or pressed in another chat, decides
//! nothing. Who answered is remembered for a while, so a second press of the same
//! prompt shows the first answer instead of replacing it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use tokio::time::{Duration, Instant};

use super::replies::Replies;
use chat::{ApprovalId, ChatKey, Decision, OutboundKind, PromptEnd};
use codex::{ApprovalDecision, ApprovalResponder};

/// How many answered requests the book remembers for a later press.
const REMEMBERED: usize = 1024;

/// Every pending request's chat, and who answered the recent ones: shared by the router
/// (which finds the chat of a press here) and the chats' actors.
#[derive(Clone)]
pub(super) struct ApprovalBook {
    run: u64,
    inner: Arc<Mutex<Book>>,
}

#[derive(Default)]
struct Book {
    next_seq: u64,
    pending: HashMap<u64, ChatKey>,
    /// By sequence number, so the oldest is forgotten first.
    answered: BTreeMap<u64, Answer>,
}

/// A decision and who made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub decision: Decision,
    pub by: String,
    /// When, in unix seconds.
    pub at: i64,
}

/// What a press of an approval button came to.
#[derive(Debug, PartialEq, Eq)]
pub enum ApprovalOutcome {
    /// Codex has the decision.
    Decided,
    /// Someone answered first: their answer stands.
    AnsweredBefore(Answer),
    /// The prompt was left by an earlier run of the gateway.
    FromEarlierRun,
    /// It timed out, or its turn ended.
    NoLongerPending,
    /// The button is not in the chat the request was asked in.
    NotThisChat,
}

/// Where a press leads.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Lookup {
    /// Pending in this chat: its actor decides.
    Pending(ChatKey),
    /// Answered already: the first answer stands.
    Answered(Answer),
    /// Asked by an earlier run of the gateway.
    EarlierRun,
    /// Pending in another chat than the one the button is in.
    OtherChat,
    /// Timed out, or its turn ended.
    Gone,
}

impl ApprovalBook {
    /// A book for one run of the gateway, its id drawn at random.
    pub(super) fn new() -> Self {
        Self::for_run(getrandom::u64().unwrap_or_else(|_| fallback_run_id()))
    }

    fn for_run(run: u64) -> Self {
        Self {
            run,
            inner: Arc::default(),
        }
    }

    /// Where a press of `id` in `place` (the chat the button is in) leads. Chats are
    /// compared by platform and chat: a group's per-user conversations share its buttons.
    pub(super) fn lookup(&self, id: ApprovalId, place: &ChatKey) -> Lookup {
        if id.run != self.run {
            return Lookup::EarlierRun;
        }
        let book = self.inner.lock().expect("lock");
        if let Some(answer) = book.answered.get(&id.seq) {
            return Lookup::Answered(answer.clone());
        }
        match book.pending.get(&id.seq) {
            Some(chat) if chat.platform == place.platform && chat.chat == place.chat => {
                Lookup::Pending(chat.clone())
            }
            Some(_) => Lookup::OtherChat,
            None => Lookup::Gone,
        }
    }

    fn register(&self, chat: &ChatKey) -> ApprovalId {
        let mut book = self.inner.lock().expect("lock");
        book.next_seq += 1;
        let seq = book.next_seq;
        book.pending.insert(seq, chat.clone());
        ApprovalId { run: self.run, seq }
    }

    fn settle(&self, seq: u64, answer: Option<Answer>) {
        let mut book = self.inner.lock().expect("lock");
        book.pending.remove(&seq);
        if let Some(answer) = answer {
            book.answered.insert(seq, answer);
            while book.answered.len() > REMEMBERED {
                book.answered.pop_first();
            }
        }
    }
}

/// Without the system's randomness (it never failed here), the clock and the process id
/// still tell runs apart.
fn fallback_run_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 32)
}

/// One chat's pending requests.
pub(super) struct PendingApprovals {
    chat: ChatKey,
    book: ApprovalBook,
    pending: HashMap<u64, (ApprovalResponder, Instant)>,
}

impl PendingApprovals {
    pub(super) fn new(chat: ChatKey, book: ApprovalBook) -> Self {
        Self {
            chat,
            book,
            pending: HashMap::new(),
        }
    }

    /// Holds the request until answered or `timeout` passes; returns its id.
    pub(super) fn add(&mut self, responder: ApprovalResponder, timeout: Duration) -> ApprovalId {
        let id = self.book.register(&self.chat);
        self.pending
            .insert(id.seq, (responder, Instant::now() + timeout));
        id
    }

    /// Answers Codex with a person's decision; false if the request is no longer pending.
    pub(super) fn answer(&mut self, id: ApprovalId, answer: Answer) -> bool {
        let Some((responder, _)) = self.pending.remove(&id.seq) else {
            return false;
        };
        responder.answer(codex_decision(answer.decision));
        self.book.settle(id.seq, Some(answer));
        true
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.pending.values().map(|(_, deadline)| *deadline).min()
    }

    /// Declines every request past its deadline, closing its prompt; returns their ids.
    pub(super) fn expire(&mut self, now: Instant, replies: &Replies<'_>) -> Vec<ApprovalId> {
        let expired: Vec<u64> = self
            .pending
            .iter()
            .filter(|(_, (_, deadline))| *deadline <= now)
            .map(|(seq, _)| *seq)
            .collect();
        expired
            .into_iter()
            .filter_map(|seq| {
                let (responder, _) = self.pending.remove(&seq)?;
                responder.answer(ApprovalDecision::Decline);
                Some(self.close(seq, PromptEnd::TimedOut, replies))
            })
            .collect()
    }

    /// Another client answered the request `request_id` first: its prompt here closes,
    /// and nothing more is sent to Codex for it.
    pub(super) fn resolved_elsewhere(
        &mut self,
        request_id: &serde_json::Value,
        replies: &Replies<'_>,
    ) -> Option<ApprovalId> {
        let seq = *self
            .pending
            .iter()
            .find(|(_, (responder, _))| responder.is_for(request_id))?
            .0;
        let (responder, _) = self.pending.remove(&seq)?;
        responder.leave();
        Some(self.close(seq, PromptEnd::AnsweredElsewhere, replies))
    }

    /// The turn is handed over at shutdown: its requests stay unanswered, to be asked
    /// again of the next start; their prompts here are closed.
    pub(super) fn leave(&mut self, replies: &Replies<'_>) {
        for (seq, (responder, _)) in std::mem::take(&mut self.pending) {
            responder.leave();
            self.close(seq, PromptEnd::Stopped, replies);
        }
    }

    /// The turn is over: its requests can no longer be answered (dropping a responder
    /// declines it) and their prompts say why (`end`).
    pub(super) fn clear(&mut self, end: PromptEnd, replies: &Replies<'_>) {
        for seq in std::mem::take(&mut self.pending).into_keys() {
            self.close(seq, end, replies);
        }
    }

    fn close(&self, seq: u64, end: PromptEnd, replies: &Replies<'_>) -> ApprovalId {
        self.book.settle(seq, None);
        let id = ApprovalId {
            run: self.book.run,
            seq,
        };
        replies.send(OutboundKind::ApprovalClosed { id, end });
        id
    }
}

impl Drop for PendingApprovals {
    fn drop(&mut self) {
        for seq in self.pending.keys() {
            self.book.settle(*seq, None);
        }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session;
    use chat::{Inbound, Platform, PromptEnd};
    use tokio::sync::mpsc;

    fn chat(id: &str) -> ChatKey {
        ChatKey::new(Platform::Discord, id)
    }

    #[test]
    fn a_press_finds_its_request_only_in_its_run_and_its_chat() {
        let earlier = ApprovalBook::for_run(7);
        let book = ApprovalBook::for_run(8);
        let (alice, bob) = (chat("1"), chat("2"));
        let old = earlier.register(&alice);
        let new = book.register(&bob);
        // Both runs count from 1: only the run tells the two apart.
        assert_eq!(old.seq, new.seq);
        assert_eq!(book.lookup(old, &alice), Lookup::EarlierRun);
        assert_eq!(book.lookup(old, &bob), Lookup::EarlierRun);
        assert_eq!(book.lookup(new, &alice), Lookup::OtherChat);
        assert_eq!(book.lookup(new, &bob), Lookup::Pending(bob.clone()));

        // A per-user conversation of a group is pressed from the group's message.
        let mut per_user = chat("2");
        per_user.topic = Some("u5".into());
        let theirs = book.register(&per_user);
        assert_eq!(book.lookup(theirs, &bob), Lookup::Pending(per_user));
    }

    #[test]
    fn the_first_answer_is_remembered_and_a_closed_request_is_gone() {
        let book = ApprovalBook::for_run(1);
        let alice = chat("1");
        let (answered, closed) = (book.register(&alice), book.register(&alice));
        let first = Answer {
            decision: Decision::Accept,
            by: "Alice".into(),
            at: 0,
        };
        book.settle(answered.seq, Some(first.clone()));
        book.settle(closed.seq, None);
        assert_eq!(book.lookup(answered, &alice), Lookup::Answered(first));
        assert_eq!(book.lookup(closed, &alice), Lookup::Gone);

        for _ in 0..REMEMBERED {
            let id = book.register(&alice);
            book.settle(
                id.seq,
                Some(Answer {
                    decision: Decision::Decline,
                    by: "Bob".into(),
                    at: 0,
                }),
            );
        }
        assert_eq!(
            book.lookup(answered, &alice),
            Lookup::Gone,
            "forgotten first"
        );
    }

    /// The default (ten minutes): a request nobody answers is declined, and its prompt
    /// closed as timed out, at ten minutes and not before.
    #[tokio::test(start_paused = true)]
    async fn at_the_default_an_unanswered_request_is_declined_after_ten_minutes() {
        let timeout = session::defaults().0.approval_timeout;
        assert_eq!(timeout, Duration::from_secs(600));
        let alice = chat("1");
        let (outbox, mut shown) = mpsc::unbounded_channel();
        let inbound = Inbound {
            chat: alice.clone(),
            user: "1".into(),
            text: String::new(),
            reply_to: outbox,
            answer_slot: None,
            can_approve: true,
            private: true,
            admin: false,
            attachments: Vec::new(),
            ticket: None,
        };
        let replies = Replies::to(&inbound);
        let (to_codex, mut codex_heard) = mpsc::unbounded_channel();
        let mut pending = PendingApprovals::new(alice, ApprovalBook::for_run(1));
        let id = pending.add(ApprovalResponder::for_tests(7, to_codex), timeout);

        tokio::time::advance(timeout - Duration::from_secs(1)).await;
        assert!(pending.expire(Instant::now(), &replies).is_empty(), "9:59");
        assert!(
            codex_heard.try_recv().is_err(),
            "Codex heard before the time"
        );
        assert_eq!(
            pending.next_deadline(),
            Some(Instant::now() + Duration::from_secs(1))
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        assert_eq!(pending.expire(Instant::now(), &replies), [id]);
        let answer = codex_heard.try_recv().expect("Codex heard nothing");
        assert!(
            answer.contains("\"id\":7") && answer.contains("decline"),
            "{answer}"
        );
        let closed = shown.try_recv().expect("the prompt was not closed").kind;
        assert!(
            matches!(
                closed,
                OutboundKind::ApprovalClosed {
                    end: PromptEnd::TimedOut,
                    ..
                }
            ),
            "{closed:?}"
        );
    }
}
