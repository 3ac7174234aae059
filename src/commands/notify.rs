//! `/notify [all|important|off]`: which of the bot's messages make the phone buzz in this
//! chat, kept with it. By default the important ones: the answer, approvals, questions and
//! the gateway's notices; the running turn's status is silent.

use tracing::info;

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies, texts};
use chat::{Chosen, Named, Notify};

fn listing(notify: Notify) -> String {
    format!(
        "Notifications: {}\nChoices: all (the running turn's status too), important (the answer, approvals, questions and notices), off (nothing buzzes)\nSay /notify NAME to switch.",
        notify.name()
    )
}

fn chosen(notify: Notify) -> String {
    let what = match notify {
        Notify::All => "every message of the bot notifies, the running turn's status too",
        Notify::Important => {
            "the answer, approvals, questions and notices notify; the running turn's status is silent"
        }
        Notify::Off => "no message of the bot notifies",
    };
    format!("Notifications {}: {what}.", notify.name())
}

fn no_such_setting(name: &str) -> String {
    format!("There is no notification setting {name}; nothing changed. Choices: all, important, off")
}

/// What `/notify` was asked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetNotify {
    /// Show the chat's setting and the choices.
    Show,
    Set(Notify),
}

impl ChatCommand for SetNotify {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "setting",
            about: "all, important or off",
            shown: "[SETTING]",
        }),
        buttons: true,
        ..Spec::plain(
            "notify",
            "Which messages notify: all, important or off",
            "which of the bot's messages notify: all (the running turn's status too), important (the answer, approvals, questions and notices; the default) or off",
        )
    };

    fn parse(name: &str) -> Result<Self, String> {
        match name.to_lowercase().as_str() {
            "" => Ok(SetNotify::Show),
            name => Notify::from_name(name)
                .map(SetNotify::Set)
                .ok_or_else(|| no_such_setting(name)),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        if let Err(error) = chat.session.choices().await {
            return replies.notice(texts::choices_unreadable(&error));
        }
        let notify = match self {
            SetNotify::Show => {
                let options = Notify::names().map(str::to_owned).collect();
                return replies.choices(listing(chat.session.notify()), &Self::SPEC, options);
            }
            SetNotify::Set(notify) => notify,
        };
        match chat.session.choose(Chosen::Notify(Some(notify))).await {
            Ok(()) => {
                info!(chat = %chat.chat, notify = notify.name(), "notifications chosen");
                replies.send(chat::OutboundKind::Notify(notify));
                replies.notice(chosen(notify))
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_setting_by_its_name_or_nothing() {
        assert_eq!(SetNotify::parse(""), Ok(SetNotify::Show));
        assert_eq!(SetNotify::parse("Off"), Ok(SetNotify::Set(Notify::Off)));
        assert_eq!(SetNotify::parse("loud"), Err(no_such_setting("loud")));
    }
}
