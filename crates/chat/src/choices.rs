//! What a person chooses for their chat (`/model`, `/steer`, `/verbose`, `/mode`, ...):
//! kept with the chat across restarts and `/new`; `None` keeps the gateway's default.

use crate::named::Named;

/// A chat's choices as stored; `None` keeps the gateway's default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChatChoices {
    pub model: Option<String>,
    pub effort: Option<String>,
    pub folder: Option<String>,
    pub follow_up: Option<FollowUp>,
    pub progress: Option<Progress>,
    pub mode: Option<Mode>,
    pub notify: Option<Notify>,
}

/// One choice made (or, with `None`, taken back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chosen {
    Model(Option<String>),
    Effort(Option<String>),
    Folder(Option<String>),
    FollowUp(Option<FollowUp>),
    Progress(Option<Progress>),
    Mode(Option<Mode>),
    Notify(Option<Notify>),
}

impl Chosen {
    /// The value as the store keeps it.
    pub fn stored(&self) -> Option<&str> {
        match self {
            Chosen::Model(text) | Chosen::Effort(text) | Chosen::Folder(text) => text.as_deref(),
            Chosen::FollowUp(value) => value.map(Named::name),
            Chosen::Progress(value) => value.map(Named::name),
            Chosen::Mode(value) => value.map(Named::name),
            Chosen::Notify(value) => value.map(Named::name),
        }
    }
}

impl ChatChoices {
    pub fn set(&mut self, chosen: Chosen) {
        match chosen {
            Chosen::Model(model) => self.model = model,
            Chosen::Effort(effort) => self.effort = effort,
            Chosen::Folder(folder) => self.folder = folder,
            Chosen::FollowUp(follow_up) => self.follow_up = follow_up,
            Chosen::Progress(progress) => self.progress = progress,
            Chosen::Mode(mode) => self.mode = mode,
            Chosen::Notify(notify) => self.notify = notify,
        }
    }
}

/// What becomes of a message that arrives while the chat's turn runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FollowUp {
    /// Codex hears it in the running turn (`turn/steer`).
    Steer,
    /// It waits and runs as the next turn.
    Queue,
}

impl Named for FollowUp {
    const WHAT: &'static str = "follow-up";
    const NAMES: &'static [(FollowUp, &'static str)] =
        &[(FollowUp::Steer, "steer"), (FollowUp::Queue, "queue")];
}

crate::serde_by_name!(FollowUp);

/// How much of a running turn a chat sees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// One status message: elapsed time, what Codex does now, counts and plan.
    Status,
    /// The status plus every command with its exit code and every commentary line.
    Verbose,
    /// The typing indicator and the answer only.
    Quiet,
}

impl Named for Progress {
    const WHAT: &'static str = "progress";
    const NAMES: &'static [(Progress, &'static str)] = &[
        (Progress::Status, "status"),
        (Progress::Verbose, "verbose"),
        (Progress::Quiet, "quiet"),
    ];
}

crate::serde_by_name!(Progress);

/// Which of the bot's messages make the phone buzz.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Notify {
    /// Every message, the running turn's status too.
    All,
    /// The answer, approvals, questions and the gateway's notices; the status and
    /// progress are silent.
    #[default]
    Important,
    /// None: every message arrives silently.
    Off,
}

impl Named for Notify {
    const WHAT: &'static str = "notification setting";
    const NAMES: &'static [(Notify, &'static str)] = &[
        (Notify::All, "all"),
        (Notify::Important, "important"),
        (Notify::Off, "off"),
    ];
}

/// A chat's preset of sandbox and approval policy (`/mode`); without one the chat runs
/// with the config's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Codex reads; a command that writes fails in the sandbox, more asks first.
    ReadOnly,
    /// Codex writes in the workspace and asks for anything beyond it.
    Auto,
    /// No sandbox and no questions: admins only.
    Full,
}

impl Named for Mode {
    const WHAT: &'static str = "mode";
    const NAMES: &'static [(Mode, &'static str)] = &[
        (Mode::ReadOnly, "read-only"),
        (Mode::Auto, "auto"),
        (Mode::Full, "full"),
    ];
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_choice_is_stored_by_its_name_and_set_on_the_chat() {
        let mut choices = ChatChoices::default();
        let chosen = [
            (Chosen::Mode(Some(Mode::ReadOnly)), Some("read-only")),
            (Chosen::FollowUp(Some(FollowUp::Queue)), Some("queue")),
            (Chosen::Progress(None), None),
            (Chosen::Notify(Some(Notify::Off)), Some("off")),
            (Chosen::Model(Some("gpt-6".into())), Some("gpt-6")),
        ];
        for (choice, stored) in chosen {
            assert_eq!(choice.stored(), stored);
            choices.set(choice);
        }
        assert_eq!(choices.mode, Some(Mode::ReadOnly));
        assert_eq!(choices.follow_up, Some(FollowUp::Queue));
        assert_eq!(choices.model.as_deref(), Some("gpt-6"));
        assert_eq!(choices.notify, Some(Notify::Off));
    }
}
