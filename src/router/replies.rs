//! Where one message's answers go.

use std::sync::Mutex;

use chat::{AnswerSlot, ChatKey, Inbound, Outbound, OutboundKind, Outbox};

pub(super) struct Replies<'a> {
    chat: &'a ChatKey,
    outbox: &'a Outbox,
    /// The sender's platform user id.
    pub(super) user: &'a str,
    pub(super) can_approve: bool,
    /// From a direct conversation with the bot.
    pub(super) private: bool,
    /// From someone who may log Codex in and out.
    pub(super) admin: bool,
    /// The message's answer slot, until the first notice has used it.
    slot: Mutex<Option<AnswerSlot>>,
    /// The scheduled job this is a run of: its notices say so.
    job: Option<i64>,
}

impl<'a> Replies<'a> {
    pub(super) fn to(inbound: &'a Inbound) -> Self {
        Self {
            chat: &inbound.chat,
            outbox: &inbound.reply_to,
            user: &inbound.user,
            can_approve: inbound.can_approve,
            private: inbound.private,
            admin: inbound.admin,
            slot: Mutex::new(inbound.answer_slot),
            job: None,
        }
    }

    /// Replies to a run of the scheduled job `id` (if any), each notice headed by it.
    pub(super) fn for_job(self, job: Option<i64>) -> Self {
        Self { job, ..self }
    }
}

impl Replies<'_> {
    pub(super) fn send(&self, kind: OutboundKind) {
        // A closed outbox means the platform is shutting down; nothing is left to tell.
        let _ = self.outbox.send(Outbound {
            chat: self.chat.clone(),
            kind,
        });
    }

    /// Where a notice goes that comes long after the message (a login completing).
    pub(super) fn later(&self) -> LaterNotice {
        LaterNotice {
            chat: self.chat.clone(),
            outbox: self.outbox.clone(),
        }
    }

    /// A file for the chat.
    pub(super) fn file(&self, name: String, bytes: Vec<u8>) {
        self.send(OutboundKind::File { name, bytes });
    }

    /// A listing whose options become buttons sending `/{command} {option}`.
    pub(super) fn choices(&self, text: String, command: &str, options: Vec<String>) {
        let slot = self.slot.lock().expect("lock").take();
        self.send(OutboundKind::Choices {
            slot,
            text,
            command: command.to_owned(),
            options,
        });
    }

    /// `text` with a button that sends `/last`, for an answer that may not have arrived.
    pub(super) fn offer_last(&self, text: &str) {
        let slot = self.slot.lock().expect("lock").take();
        self.send(OutboundKind::Choices {
            slot,
            text: text.to_owned(),
            command: "last".into(),
            options: vec![super::texts::SEND_AGAIN.into()],
        });
    }

    /// `text` with a Continue button (`/continue`), for a turn that was cut off.
    pub(super) fn offer_continue(&self, text: &str) {
        let slot = self.slot.lock().expect("lock").take();
        self.send(continue_offer(slot, text));
    }

    /// A gateway notice; the first one answers the message at its answer slot.
    pub(super) fn notice(&self, text: impl Into<String>) {
        let text = match self.job {
            Some(id) => super::texts::jobs::during_run(id, &text.into()),
            None => text.into(),
        };
        match self.slot.lock().expect("lock").take() {
            Some(slot) => self.send(OutboundKind::Answer { slot, text }),
            None => self.send(OutboundKind::Notice(text)),
        }
    }
}

/// A notice to the chat at some later time, held by a task of its own.
pub(super) struct LaterNotice {
    chat: ChatKey,
    outbox: Outbox,
}

impl LaterNotice {
    pub(super) fn send(self, text: String) {
        let _ = self.outbox.send(Outbound {
            chat: self.chat,
            kind: OutboundKind::Notice(text),
        });
    }
}

/// `text` with a Continue button: its press sends `/continue continue`.
pub(super) fn continue_offer(slot: Option<AnswerSlot>, text: &str) -> OutboundKind {
    OutboundKind::Choices {
        slot,
        text: text.to_owned(),
        command: "continue".into(),
        options: vec![super::texts::CONTINUE.into()],
    }
}
