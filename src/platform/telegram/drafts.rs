//! Telegram's own streaming in private chats (`sendMessageDraft`, Bot API 9.5): the
//! running turn's status is an animated draft with Telegram's stop button (`can_stop`;
//! a press comes back as a `stopped_message_generation` update), and the answer is then
//! sent as a message. A Bot API server that refuses drafts (an older one, or a chat that
//! cannot have them) turns them off: from then on the status is an edited message, as in
//! groups, and the log says so once.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tracing::warn;

/// A draft is shown for about 30 seconds after its last change; one sent again this often
/// stays on screen while nothing changes (a long command, `/quiet` aside).
pub(super) const REFRESH: Duration = Duration::from_secs(20);

/// Whether drafts are used, and the next draft's id.
pub(super) struct Drafts {
    on: AtomicBool,
    next_id: AtomicI64,
}

impl Drafts {
    pub(super) fn new(enabled: bool) -> Self {
        // Ids count on from the clock, so a restarted gateway does not reuse one a chat
        // still shows (a draft with a known id animates from it).
        let seed = crate::clock::unix_now().rem_euclid(1 << 30).max(1);
        Self {
            on: AtomicBool::new(enabled),
            next_id: AtomicI64::new(seed),
        }
    }

    pub(super) fn on(&self) -> bool {
        self.on.load(Ordering::Relaxed)
    }

    /// A new draft's id: never zero.
    pub(super) fn next_id(&self) -> i64 {
        self.next_id.fetch_add(1, Ordering::Relaxed)
    }

    /// The Bot API refused a draft: statuses are messages from now on.
    pub(super) fn refused(&self) {
        if self.on.swap(false, Ordering::Relaxed) {
            warn!(
                "telegram: the Bot API refused a message draft; running turns show an edited status message instead"
            );
        }
    }
}

/// The `sendMessageDraft` call, which teloxide does not have.
#[derive(Serialize)]
pub(super) struct SendMessageDraft<'a> {
    pub(super) chat_id: i64,
    pub(super) draft_id: i64,
    pub(super) text: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) message_thread_id: Option<i32>,
    /// Telegram shows its stop button on the draft.
    pub(super) can_stop: bool,
}

impl SendMessageDraft<'_> {
    pub(super) const METHOD: &'static str = "sendMessageDraft";
}

/// A `stopped_message_generation` update: a person pressed Telegram's stop on a draft.
#[derive(Debug, Deserialize)]
pub(super) struct Stopped {
    pub(super) chat: StoppedIn,
    pub(super) draft_id: i64,
    pub(super) message_thread_id: Option<i32>,
}

/// The private chat it was pressed in (its id is the person's).
#[derive(Debug, Deserialize)]
pub(super) struct StoppedIn {
    pub(super) id: i64,
    #[serde(default)]
    pub(super) first_name: String,
    pub(super) username: Option<String>,
}

/// The update's key, for `allowed_updates`.
pub(super) const STOPPED_UPDATE: &str = "stopped_message_generation";
