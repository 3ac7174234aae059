//! Buttons that stand for a command with its argument (`/model gpt-5.1` under a model
//! listing): pressing one is the presser sending that command, so it goes through the
//! allowlist and the chat's actor like any message.

use crate::commands;

const PREFIX: &str = "cmd:";
/// Telegram's limit for callback data (Discord allows 100).
const MAX_DATA_BYTES: usize = 64;
/// Discord shows at most 25 buttons under a message.
const MAX_BUTTONS: usize = 25;

/// One button: what it says and what its press sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChoiceButton {
    pub label: String,
    pub data: String,
}

/// A button per option, as many as platforms show; an option too long for a button's
/// data stays in the listing's text only.
pub fn buttons(command: &str, options: &[String]) -> Vec<ChoiceButton> {
    options
        .iter()
        .map(|option| ChoiceButton {
            label: option.clone(),
            data: format!("{PREFIX}{command} {option}"),
        })
        .filter(|button| button.data.len() <= MAX_DATA_BYTES)
        .take(MAX_BUTTONS)
        .collect()
}

/// The Stop button under a running turn's status: its press is `/stop`.
pub fn stop_button() -> ChoiceButton {
    let label = super::texts::STOP_BUTTON;
    ChoiceButton {
        label: label.to_owned(),
        data: format!("{PREFIX}stop {label}"),
    }
}

/// A pressed choice button.
#[derive(Debug, PartialEq, Eq)]
pub struct Choice {
    /// The command it stands for (`/model gpt-5.1`).
    pub command: String,
    /// The option, when one press answers the card (a question's): its buttons go and
    /// who chose is shown under it.
    pub answers_card: Option<String>,
}

/// The choice a pressed button stands for; `None` for any other button, or data that
/// names a command whose spec offers no buttons.
pub fn pressed(data: &str) -> Option<Choice> {
    let (command, option) = data.strip_prefix(PREFIX)?.split_once(' ')?;
    let spec = commands::with_buttons(command).filter(|_| !option.trim().is_empty())?;
    Some(Choice {
        command: format!("/{command} {option}"),
        answers_card: spec.answers_card.then(|| option.to_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_button_stands_for_its_command() {
        let options = vec!["gpt-5.1-codex".to_owned(), "x".repeat(80)];
        let made = buttons("model", &options);
        assert_eq!(made.len(), 1, "an option too long for the data is left out");
        assert_eq!(made[0].data, "cmd:model gpt-5.1-codex");
        let command = |data: &str| pressed(data).map(|choice| choice.command);
        assert_eq!(
            command(&made[0].data).as_deref(),
            Some("/model gpt-5.1-codex")
        );
        assert_eq!(pressed("cmd:new now"), None);
        assert_eq!(pressed("cmd:model "), None);
        assert_eq!(pressed("ap:1:a"), None);
        assert_eq!(command(&stop_button().data).as_deref(), Some("/stop Stop"));
        assert_eq!(pressed(&made[0].data).unwrap().answers_card, None);
        let answer = pressed("cmd:answer 2").unwrap();
        assert_eq!(
            answer.answers_card.as_deref(),
            Some("2"),
            "a question's card"
        );
    }
}
