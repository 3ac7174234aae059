//! Where one message's answers go.

use std::sync::Mutex;

use crate::commands::r#continue::{CONTINUE, Continue};
use crate::commands::last::Last;
use crate::commands::{ChatCommand, Spec};
use chat::{AnswerSlot, ChatKey, Inbound, Outbound, OutboundKind, Outbox};

pub(crate) struct Replies<'a> {
    chat: &'a ChatKey,
    outbox: &'a Outbox,
    /// The sender's platform user id.
    pub(crate) user: &'a str,
    pub(crate) can_approve: bool,
    /// From a direct conversation with the bot.
    pub(crate) private: bool,
    /// From someone who may log Codex in and out.
    pub(crate) admin: bool,
    /// The message's answer slot, until the first notice has used it.
    slot: Mutex<Option<AnswerSlot>>,
    /// The scheduled job this is a run of: its notices say so.
    job: Option<i64>,
}

impl<'a> Replies<'a> {
    pub(crate) fn to(inbound: &'a Inbound) -> Self {
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
    pub(crate) fn for_job(self, job: Option<i64>) -> Self {
        Self { job, ..self }
    }
}

impl Replies<'_> {
    pub(crate) fn send(&self, kind: OutboundKind) {
        // A closed outbox means the platform is shutting down; nothing is left to tell.
        let _ = self.outbox.send(Outbound {
            chat: self.chat.clone(),
            kind,
        });
    }

    /// Where a notice goes that comes long after the message (a login completing).
    pub(crate) fn later(&self) -> LaterNotice {
        LaterNotice {
            chat: self.chat.clone(),
            outbox: self.outbox.clone(),
        }
    }

    /// A file for the chat.
    pub(crate) fn file(&self, name: String, bytes: Vec<u8>) {
        self.send(OutboundKind::File { name, bytes });
    }

    /// A listing whose options become buttons that send `command` (`/{name} {option}`).
    pub(crate) fn choices(&self, text: String, command: &'static Spec, options: Vec<String>) {
        let slot = self.slot.lock().expect("lock").take();
        self.send(OutboundKind::Choices {
            slot,
            text,
            command: command.name,
            options,
        });
    }

    /// Asks the platform to open a place of its own for the task `title`; the platform
    /// answers the message.
    pub(crate) fn open_task(&self, title: String) {
        let slot = self.slot.lock().expect("lock").take();
        self.send(OutboundKind::OpenTask { slot, title });
    }

    /// `text` with a button that sends `/last`, for an answer that may not have arrived.
    pub(crate) fn offer_last(&self, text: &str) {
        let options = vec![super::texts::SEND_AGAIN.into()];
        self.choices(text.to_owned(), &Last::SPEC, options);
    }

    /// `text` with a Continue button (`/continue`), for a turn that was cut off or failed.
    pub(crate) fn offer_continue(&self, text: &str) {
        let slot = self.slot.lock().expect("lock").take();
        self.send(continue_offer(slot, &self.headed(text.into())));
    }

    /// A gateway notice; the first one answers the message at its answer slot.
    pub(crate) fn notice(&self, text: impl Into<String>) {
        let text = self.headed(text.into());
        match self.slot.lock().expect("lock").take() {
            Some(slot) => self.send(OutboundKind::Answer { slot, text }),
            None => self.send(OutboundKind::Notice(text)),
        }
    }

    /// `text` headed by the scheduled job whose run it is about, if any.
    fn headed(&self, text: String) -> String {
        match self.job {
            Some(id) => super::texts::jobs::during_run(id, &text),
            None => text,
        }
    }
}

/// A notice to the chat at some later time, held by a task of its own.
pub(crate) struct LaterNotice {
    chat: ChatKey,
    outbox: Outbox,
}

impl LaterNotice {
    pub(crate) fn send(self, text: String) {
        let _ = self.outbox.send(Outbound {
            chat: self.chat,
            kind: OutboundKind::Notice(text),
        });
    }
}

/// `text` with a Continue button: its press sends `/continue continue`.
pub(crate) fn continue_offer(slot: Option<AnswerSlot>, text: &str) -> OutboundKind {
    OutboundKind::Choices {
        slot,
        text: text.to_owned(),
        command: Continue::SPEC.name,
        options: vec![CONTINUE.into()],
    }
}
