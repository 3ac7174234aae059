//! `/effort [LEVEL]`: the model's reasoning effort and the choices (a button each); with
//! a level, the chat uses it from the next turn on.

use super::{Argument, ChatCommand, Pick, Spec};
use crate::router::{Actor, Replies, texts};
use chat::Chosen;
use codex::ModelInfo;

fn no_efforts(model: &str) -> String {
    format!("Codex lists no efforts for the model {model}.")
}

fn effort_listing(current: Option<&str>, model: &str, levels: &str) -> String {
    let current = current.unwrap_or("the model's default");
    format!(
        "Reasoning effort: {current}\nChoices for {model}: {levels}\nSay /effort LEVEL to switch from the next turn on, /effort default to go back to the configured one."
    )
}

fn no_such_effort(model: &str, level: &str, levels: &str) -> String {
    format!("{model} has no {level} effort; nothing changed. Choices: {levels}")
}

fn back_to_configured(level: Option<&str>) -> String {
    let level = level.unwrap_or("the model's default");
    format!("This chat uses the configured effort, {level}, from the next turn on.")
}

/// Codex keeps a thread on the last effort a turn named, and has no way to unname it.
fn effort_kept(model: &str, kept: &str) -> String {
    format!(
        "{model} has no default effort Codex could be told, so this chat's thread keeps \
         {kept} effort; /new starts a thread without it."
    )
}

/// Longest effort name taken (Codex's are words like `minimal` and `xhigh`).
const MAX_EFFORT_NAME: usize = 32;

fn effort_chosen(level: &str) -> String {
    format!("This chat uses {level} effort from the next turn on.")
}

/// A reasoning effort, the configured one, or the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Effort(pub Pick);

impl ChatCommand for Effort {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "level",
            about: "The reasoning effort to use from the next turn on",
            shown: "[LEVEL]",
        }),
        buttons: true,
        ..Spec::plain(
            "effort",
            "Show or choose the model's reasoning effort",
            "the model's reasoning effort and the choices; with a level, use it (default: the configured one)",
        )
    };

    fn parse(level: &str) -> Result<Self, String> {
        Pick::parse(level, "/effort", MAX_EFFORT_NAME).map(Effort)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let (models, config, choices) = match chat.catalog().await {
            Ok(catalog) => catalog,
            Err(notice) => return replies.notice(notice),
        };
        let name = choices
            .model
            .clone()
            .unwrap_or_else(|| chat.default_model(&models, &config));
        let listed = models.iter().find(|m| m.id == name);
        let efforts: Vec<&str> = match listed {
            Some(model) => model.efforts().collect(),
            // A provider's own model: the efforts Codex knows of any model, none enforced.
            None if !config.lists_every_model() => known_efforts(&models),
            None => return replies.notice(no_efforts(&name)),
        };
        let levels = efforts.join(", ");
        let default = listed.and_then(|m| m.default_reasoning_effort.as_deref());
        let configured = config.model_reasoning_effort.as_deref().or(default);
        let level = match self.0 {
            Pick::Named(level) => level,
            Pick::List => {
                let current = choices.effort.as_deref().or(configured);
                let text = effort_listing(current, &name, &levels);
                let options = efforts.iter().map(|e| (*e).to_owned()).collect();
                return replies.choices(text, &Self::SPEC, options);
            }
            Pick::Default => {
                let answer = match (configured, &choices.effort) {
                    (None, Some(kept)) => effort_kept(&name, kept),
                    (configured, _) => back_to_configured(configured),
                };
                return match chat.session.choose(Chosen::Effort(None)).await {
                    Ok(()) => replies.notice(answer),
                    Err(error) => replies.notice(texts::choice_unstored(&error)),
                };
            }
        };
        let known = efforts.iter().find(|e| e.eq_ignore_ascii_case(&level));
        let (level, answer) = match (known, listed) {
            (Some(known), _) => ((*known).to_owned(), effort_chosen(known)),
            (None, None) => {
                let answer = effort_chosen(&level) + texts::MODEL_AS_GIVEN;
                (level, answer)
            }
            (None, Some(_)) => {
                return replies.notice(no_such_effort(&name, &level, &levels));
            }
        };
        match chat.session.choose(Chosen::Effort(Some(level))).await {
            Ok(()) => replies.notice(answer),
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }
}

/// Every effort some listed model supports, in first-seen order.
fn known_efforts(models: &[ModelInfo]) -> Vec<&str> {
    let mut efforts: Vec<&str> = Vec::new();
    for effort in models.iter().flat_map(ModelInfo::efforts) {
        if !efforts.contains(&effort) {
            efforts.push(effort);
        }
    }
    efforts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_effort_once_in_first_seen_order() {
        let model = |id: &str, efforts: &[&str]| -> ModelInfo {
            let efforts: Vec<_> = efforts
                .iter()
                .map(|e| serde_json::json!({"reasoningEffort": e}))
                .collect();
            let info = serde_json::json!({"id": id, "supportedReasoningEfforts": efforts});
            serde_json::from_value(info).unwrap()
        };
        let models = [model("a", &["low", "high"]), model("b", &["minimal", "high"])];
        assert_eq!(known_efforts(&models), ["low", "high", "minimal"]);
        assert_eq!(Effort::parse(""), Ok(Effort(Pick::List)));
        assert_eq!(Effort::parse("default"), Ok(Effort(Pick::Default)));
        assert!(Effort::parse(&"x".repeat(33)).is_err());
    }
}
