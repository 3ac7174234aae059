//! `/mode [read-only|auto|full|default]`: the chat's sandbox and approvals, a preset per
//! chat kept with it and sent on every turn; `full` is for admins only.

use tracing::info;

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies, texts};
use chat::{Chosen, Mode, Named};

const FULL_MODE_ADMINS_ONLY: &str =
    "full mode (no sandbox, no questions) is for admins only; nothing changed.";
/// What `/mode` takes besides the modes' names: back to the config's.
const DEFAULT: &str = "default";

fn mode_listing(mode: &str) -> String {
    format!(
        "Mode: {mode}\nChoices: read-only (Codex reads; a write fails in the sandbox), auto (writes in the workspace, asks beyond it), full (no sandbox, no questions; admins only), default\nSay /mode NAME to switch from the next turn on."
    )
}

fn mode_chosen(mode: &str) -> String {
    format!("This chat runs in mode {mode} from the next turn on.")
}

fn no_such_mode(name: &str) -> String {
    format!("There is no mode {name}; nothing changed. Choices: read-only, auto, full, default")
}

/// What `/mode` was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetMode {
    /// Show the chat's mode and the choices.
    Show,
    /// Use this mode, or (`None`) the config's sandbox and approvals.
    Set(Option<Mode>),
}

impl ChatCommand for SetMode {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "mode",
            about: "read-only, auto, full (admins) or default",
            shown: "[MODE]",
        }),
        buttons: true,
        ..Spec::plain(
            "mode",
            "Sandbox and approvals: read-only, auto or full",
            "the chat's sandbox and approvals: read-only (Codex reads; more asks first), auto (writes in the workspace, asks beyond it), full (no sandbox, no questions; admins only) or default (the config's)",
        )
    };

    fn parse(name: &str) -> Result<Self, String> {
        match name.to_lowercase().as_str() {
            "" => Ok(SetMode::Show),
            DEFAULT => Ok(SetMode::Set(None)),
            name => Mode::from_name(name)
                .map(|mode| SetMode::Set(Some(mode)))
                .ok_or_else(|| no_such_mode(name)),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        if let Err(error) = chat.session.choices().await {
            return replies.notice(texts::choices_unreadable(&error));
        }
        let settings = &chat.ctx.settings;
        let configured = (settings.sandbox, settings.approval_policy);
        let mode = match self {
            SetMode::Show => {
                let text = mode_listing(&texts::mode_line(chat.session.mode(), configured));
                let options = Mode::names().chain([DEFAULT]).map(str::to_owned);
                return replies.choices(text, &Self::SPEC, options.collect());
            }
            SetMode::Set(mode) => mode,
        };
        if mode == Some(Mode::Full) && !replies.admin {
            info!(chat = %chat.chat, "full mode refused: not an admin");
            return replies.notice(FULL_MODE_ADMINS_ONLY);
        }
        match chat.session.choose(Chosen::Mode(mode)).await {
            Ok(()) => {
                info!(chat = %chat.chat, mode = mode.map(Mode::name), "mode chosen");
                replies.notice(mode_chosen(&texts::mode_line(mode, configured)))
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mode_by_its_name_default_or_nothing() {
        assert_eq!(SetMode::parse(""), Ok(SetMode::Show));
        assert_eq!(SetMode::parse("Read-Only"), Ok(SetMode::Set(Some(Mode::ReadOnly))));
        assert_eq!(SetMode::parse("default"), Ok(SetMode::Set(None)));
        assert_eq!(SetMode::parse("yolo"), Err(no_such_mode("yolo")));
    }
}
