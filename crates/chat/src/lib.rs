//! What flows between the chat platforms and the router, and what a chat chooses.

pub mod choices;
pub mod inbox;
pub mod jobs;
pub mod named;

pub use choices::{ChatChoices, Chosen, FollowUp, Mode, Notify, Progress};
pub use inbox::{Stage, Step, Ticket};
pub use jobs::{NewJob, ScheduledJob};
pub use named::{Named, UnknownName};

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use tokio::sync::mpsc;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Platform {
    Console,
    Telegram,
    Discord,
}

/// A platform's name is its part of every chat key, and what the store keeps.
impl Named for Platform {
    const WHAT: &'static str = "platform";
    const NAMES: &'static [(Self, &'static str)] = &[
        (Platform::Console, "console"),
        (Platform::Telegram, "telegram"),
        (Platform::Discord, "discord"),
    ];
}

/// Identifies one conversation: a DM, a channel, or a topic/thread inside one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ChatKey {
    pub platform: Platform,
    pub chat: String,
    pub topic: Option<String>,
}

impl ChatKey {
    pub fn new(platform: Platform, chat: impl Into<String>) -> Self {
        Self {
            platform,
            chat: chat.into(),
            topic: None,
        }
    }

    /// A folder name for the chat's working directory: the key with unsafe characters replaced.
    pub fn folder_name(&self) -> String {
        self.to_string()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    }
}

impl fmt::Display for ChatKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.platform.name(), self.chat)?;
        if let Some(topic) = &self.topic {
            write!(f, "/{topic}")?;
        }
        Ok(())
    }
}

/// A message from a person in a chat.
#[derive(Debug, Clone)]
pub struct Inbound {
    pub chat: ChatKey,
    pub user: String,
    pub text: String,
    /// Where this chat's answers go.
    pub reply_to: Outbox,
    /// Where the answer to this very message goes, when the platform keeps a place for it
    /// (a Discord slash command's interaction). Used once; later answers are notices.
    pub answer_slot: Option<AnswerSlot>,
    /// Whether the platform can show approval prompts (and so answer Codex's requests).
    pub can_approve: bool,
    /// A direct conversation with the bot, not a group or a channel.
    pub private: bool,
    /// The sender may log Codex in and out (`/login`, `/logout`).
    pub admin: bool,
    /// Files sent with the message (`text` is then their caption, possibly empty).
    pub attachments: Vec<Attachment>,
    /// Its place in the durable inbox, when the platform stored it there.
    pub ticket: Option<Ticket>,
}

/// A file sent with a message. It is fetched when the chat's turn for it comes, so a
/// chat's messages keep their order and the platform's intake never waits for a download.
#[derive(Clone)]
pub struct Attachment {
    /// The file's name as sent (not yet made safe for a folder).
    pub name: String,
    pub kind: AttachmentKind,
    /// The size the platform reported, when it did: larger files are refused unfetched.
    pub size: Option<u64>,
    pub source: Arc<dyn FetchFile>,
}

impl fmt::Debug for Attachment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Attachment")
            .field("name", &self.name)
            .field("kind", &self.kind)
            .field("size", &self.size)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttachmentKind {
    /// Shown to the model as an image.
    Image,
    /// A voice note or audio file: transcribed into text.
    Voice,
    /// Any other file: saved for Codex to read.
    Document,
}

/// The result of fetching an attachment.
pub type Fetched<'a> = Pin<Box<dyn Future<Output = Result<Vec<u8>, FetchError>> + Send + 'a>>;

/// How a platform fetches one attachment's bytes.
pub trait FetchFile: Send + Sync {
    /// The file's bytes; more than `limit` is refused.
    fn fetch(&self, limit: u64) -> Fetched<'_>;
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("it is {bytes} bytes, over the limit")]
    TooLarge { bytes: u64 },
    #[error("the download failed: {0}")]
    Failed(String),
}

/// A platform's handle for the place one message's answer goes; opaque to the router.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct AnswerSlot(pub u64);

/// What the router sends back to a chat.
#[derive(Debug, Clone, PartialEq)]
pub enum OutboundKind {
    /// The agent's answer to a turn.
    Reply(String),
    /// A line about what the running turn does (a command, commentary, the plan), for
    /// platforms that show a log rather than a status message (the console).
    Progress(String),
    /// A message from the gateway itself (command results, errors, warnings).
    Notice(String),
    /// The running turn's live status (elapsed time, what Codex does now, commands and
    /// files so far, its plan): the whole text each time, one message edited in place
    /// where the platform can edit.
    Status(String),
    /// What keeps the running turn back ("Codex is reconnecting to the model, attempt 2
    /// of 5"): one line per turn, updated in place where the platform can edit.
    Trouble(String),
    /// A turn started (`true`) or ended (`false`): platforms show a typing indicator.
    Working(bool),
    /// Which of the chat's next messages notify (its `/notify` choice).
    Notify(Notify),
    /// The turn is over and its reply (if any) was sent: the next turn's status starts a
    /// new message. A status message that was shown becomes `summary` ("Worked 4 min 12 s
    /// · 23 commands").
    TurnEnded { summary: String },
    /// Codex asks to approve an action; answer with `Router::decide_approval`.
    Approval(ApprovalPrompt),
    /// An approval prompt closed without a press: its buttons go and it says why.
    ApprovalClosed { id: ApprovalId, end: PromptEnd },
    /// A gateway notice that answers one message, to that message's answer slot
    /// (platforms without slots show it as a notice).
    Answer { slot: AnswerSlot, text: String },
    /// A file for the chat (`/get`), sent as a document.
    File { name: String, bytes: Vec<u8> },
    /// A notice listing options, with a button per option where the platform has them;
    /// pressing one is its presser sending `/{command} {option}` (the command's name, as
    /// its spec has it).
    Choices {
        slot: Option<AnswerSlot>,
        text: String,
        command: &'static str,
        options: Vec<String>,
    },
    /// `/task TITLE`: open a place of its own for a task (a Discord thread, a Telegram
    /// topic), whose messages are a conversation with a Codex thread of its own; the
    /// platform says where it opened, or why it could not (at the answer slot).
    OpenTask {
        slot: Option<AnswerSlot>,
        title: String,
    },
    /// The Codex thread of a task's place (a thread or topic the bot opened) was named
    /// (`/name`): the place takes the name too.
    Named(String),
    /// The answer to a message kept in the durable inbox: sent like `Reply`, from its
    /// ledger's `from_piece`, the ledger told where each piece stands.
    KeptReply { text: String, ledger: Ledger },
}

/// Where a kept answer stands, as its delivery tells it: a restart sends again no piece
/// the platform took, and does not send by itself a piece that may have arrived. Each
/// note is recorded before the delivery goes on, so a graceful stop never loses one.
#[derive(Clone)]
pub struct Ledger {
    /// The first piece to send: the ones before it reached the chat before a restart.
    pub from_piece: usize,
    note: Arc<dyn Fn(AnswerStep) -> Noted + Send + Sync>,
}

/// The recording of one [`AnswerStep`].
type Noted = Pin<Box<dyn Future<Output = ()> + Send>>;

/// One step of a kept answer's delivery; pieces count from 0, split as the platform's
/// delivery splits the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AnswerStep {
    /// This piece is on its way to the platform.
    Sending(usize),
    /// It did not get there (an outage): it is tried again.
    NotSent(usize),
    /// The platform took the pieces before this one (or refused one for good).
    Taken(usize),
    /// Every piece is settled: the message is done.
    Delivered,
}

impl Ledger {
    pub fn new<F>(from_piece: usize, note: impl Fn(AnswerStep) -> F + Send + Sync + 'static) -> Self
    where
        F: Future<Output = ()> + Send + 'static,
    {
        Self {
            from_piece,
            note: Arc::new(move |step| Box::pin(note(step))),
        }
    }

    pub async fn note(&self, step: AnswerStep) {
        (self.note)(step).await
    }
}

impl fmt::Debug for Ledger {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Ledger from piece {}", self.from_piece)
    }
}

/// Ledgers are told apart by identity.
impl PartialEq for Ledger {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.note, &other.note)
    }
}

/// Names one approval request: unique across chats, and bound to the gateway run that
/// asked it, so a button left from an earlier run never decides a request of this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ApprovalId {
    /// Drawn at random when the gateway starts.
    pub run: u64,
    /// Counts the run's requests from 1.
    pub seq: u64,
}

/// Why an approval prompt closed without a press.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PromptEnd {
    /// Nobody answered in time: declined.
    TimedOut,
    /// Its turn ended first.
    TurnEnded,
    /// The gateway stopped while it waited (Codex asks again after a restart, when the
    /// turn goes on on a worker).
    Stopped,
    /// Another client of the thread (a terminal) answered it first.
    AnsweredElsewhere,
}

/// What a person is asked to approve.
#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalPrompt {
    /// A button names exactly one prompt, of this gateway run.
    pub id: ApprovalId,
    pub action: ActionKind,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub reason: Option<String>,
    /// For a file change: the files, each as what happens to it and its path.
    pub files: Vec<(String, String)>,
    /// For a file change: the folder outside the workspace it asks write access to.
    pub grant_root: Option<String>,
    /// For more permissions: what is asked, one line each ("network access").
    pub permissions: Vec<String>,
    /// The decisions offered, in button order.
    pub decisions: Vec<Decision>,
}

/// The kind of action waiting for approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Command,
    FileChange,
    /// More access: network, folders to read or write.
    Permissions,
}

/// A person's answer to an approval prompt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    Accept,
    AcceptForSession,
    Decline,
    Cancel,
}

impl Decision {
    /// Every decision, in button order.
    pub const ALL: [Decision; 4] = [
        Decision::Accept,
        Decision::AcceptForSession,
        Decision::Decline,
        Decision::Cancel,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Decision::Accept => "Accept",
            Decision::AcceptForSession => "Accept for session",
            Decision::Decline => "Decline",
            Decision::Cancel => "Cancel",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Outbound {
    pub chat: ChatKey,
    pub kind: OutboundKind,
}

pub type Outbox = mpsc::UnboundedSender<Outbound>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_renders_and_folds_to_a_safe_folder() {
        let mut key = ChatKey::new(Platform::Telegram, "-100123");
        key.topic = Some("7".into());
        assert_eq!(key.to_string(), "telegram:-100123/7");
        assert_eq!(key.folder_name(), "telegram_-100123_7");
        let sneaky = ChatKey::new(Platform::Console, "../../etc");
        assert!(!sneaky.folder_name().contains('/'));
        assert!(!sneaky.folder_name().contains(".."));
    }
}
