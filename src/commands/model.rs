//! `/model [NAME]`: the chat's model and the choices (a button each); with a name, the
//! chat uses it from the next turn on.

use tracing::info;

use super::{Argument, ChatCommand, Pick, Spec};
use crate::router::{Actor, Replies, texts};
use chat::Chosen;
use codex::{ModelConfig, ModelInfo};

fn model_listing(current: &str, names: &str) -> String {
    format!(
        "Model: {current}\nChoices: {names}\nSay /model NAME to switch from the next turn on, \
         /model default to go back to the configured one."
    )
}

fn back_to_configured(model: &str) -> String {
    format!("This chat uses the configured model, {model}, from the next turn on.")
}

/// Longest model name taken: OpenAI's are under 40 characters, a provider's path-like
/// ones (`accounts/fireworks/models/...`) under 100.
const MAX_MODEL_NAME: usize = 128;

fn no_such_model(name: &str, names: &str) -> String {
    format!("There is no model {name} here; nothing changed. Choices: {names}")
}

fn model_chosen(model: &str) -> String {
    format!("This chat uses {model} from the next turn on.")
}

/// Added to `model_chosen` when the chosen effort does not fit the new model.
fn effort_dropped(effort: &str) -> String {
    format!(" It has no {effort} effort, so the model's default applies.")
}

/// The models a person may pick: Codex's configured one marked (listed first when
/// `model/list` lacks it), else Codex's default.
pub(super) fn model_names(models: &[ModelInfo], configured: Option<&str>) -> String {
    let listed = |name: &str| models.iter().any(|m| m.id == name);
    let unlisted = configured.filter(|name| !listed(name));
    let marked = |id: &str, is_default: bool| match (configured, is_default) {
        (Some(configured), _) if configured == id => format!("{id} (configured)"),
        (None, true) => format!("{id} (default)"),
        _ => id.to_owned(),
    };
    let shown: Vec<String> = unlisted
        .map(|name| marked(name, false))
        .into_iter()
        .chain(
            models
                .iter()
                .filter(|m| !m.hidden)
                .map(|m| marked(&m.id, m.is_default)),
        )
        .collect();
    match shown.is_empty() {
        true => "none listed".into(),
        false => shown.join(", "),
    }
}

/// A model name, the configured model, or the list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Model(pub Pick);

impl ChatCommand for Model {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "name",
            about: "The model to use from the next turn on",
            shown: "[NAME]",
        }),
        buttons: true,
        ..Spec::plain(
            "model",
            "Show or choose this chat's model",
            "this chat's model and the choices; with a name, use it from the next turn (default: the configured one)",
        )
    };

    fn parse(name: &str) -> Result<Self, String> {
        Pick::parse(name, "/model", MAX_MODEL_NAME).map(Model)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let (models, config, choices) = match chat.catalog().await {
            Ok(catalog) => catalog,
            Err(notice) => return replies.notice(notice),
        };
        let configured = config.model.as_deref();
        let name = match self.0 {
            Pick::Named(name) => name,
            Pick::List => {
                let current = choices
                    .model
                    .clone()
                    .unwrap_or_else(|| chat.default_model(&models, &config));
                let text = model_listing(&current, &model_names(&models, configured));
                let options = model_options(&models, configured);
                return replies.choices(text, &Self::SPEC, options);
            }
            Pick::Default => {
                let model = chat.default_model(&models, &config);
                return match chat.session.choose(Chosen::Model(None)).await {
                    Ok(()) => replies.notice(back_to_configured(&model)),
                    Err(error) => replies.notice(texts::choice_unstored(&error)),
                };
            }
        };
        let (model, listed) = match pick_model(&models, &config, &name) {
            Some(ModelPick::Listed(model)) => (model.id.clone(), Some(model)),
            Some(ModelPick::Configured(model)) => (model, None),
            Some(ModelPick::AsGiven(model)) => {
                info!(chat = %chat.chat, model, "a model Codex does not list, as given");
                (model, None)
            }
            None => {
                let names = model_names(&models, configured);
                return replies.notice(no_such_model(&name, &names));
            }
        };
        let mut answer = model_chosen(&model);
        if listed.is_none() && configured != Some(model.as_str()) {
            answer.push_str(texts::MODEL_AS_GIVEN);
        }
        if let (Some(effort), Some(listed)) = (&choices.effort, listed)
            && !listed.efforts().any(|e| e == effort)
        {
            if let Err(error) = chat.session.choose(Chosen::Effort(None)).await {
                return replies.notice(texts::choice_unstored(&error));
            }
            answer.push_str(&effort_dropped(effort));
        }
        match chat.session.choose(Chosen::Model(Some(model.clone()))).await {
            Ok(()) => {
                info!(chat = %chat.chat, model, "model chosen");
                replies.notice(answer)
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }
}

/// What `/model NAME` picks.
#[derive(Debug, PartialEq, Eq)]
enum ModelPick<'a> {
    Listed(&'a ModelInfo),
    /// The model Codex's config names, which `model/list` may not carry.
    Configured(String),
    /// A name a provider other than OpenAI may serve; it says on the turn if not.
    AsGiven(String),
}

/// `name` as one of Codex's models, its configured one, or (for a provider other than
/// OpenAI) as given; `None` when OpenAI's catalog has no such model.
fn pick_model<'a>(
    models: &'a [ModelInfo],
    config: &ModelConfig,
    name: &str,
) -> Option<ModelPick<'a>> {
    if let Some(model) = models.iter().find(|m| m.id.eq_ignore_ascii_case(name)) {
        return Some(ModelPick::Listed(model));
    }
    if let Some(configured) = config
        .model
        .as_ref()
        .filter(|m| m.eq_ignore_ascii_case(name))
    {
        return Some(ModelPick::Configured(configured.clone()));
    }
    match config.lists_every_model() {
        true => None,
        false => Some(ModelPick::AsGiven(name.to_owned())),
    }
}

/// The buttons of `/model`: the configured model first when Codex does not list it.
fn model_options(models: &[ModelInfo], configured: Option<&str>) -> Vec<String> {
    let listed = |name: &str| models.iter().any(|m| m.id == name);
    let unlisted = configured.filter(|name| !listed(name)).map(str::to_owned);
    let shown = models.iter().filter(|m| !m.hidden).map(|m| m.id.clone());
    unlisted.into_iter().chain(shown).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn model(id: &str) -> ModelInfo {
        serde_json::from_value(serde_json::json!({"id": id, "supportedReasoningEfforts": [
            {"reasoningEffort": "low"}, {"reasoningEffort": "high"}]}))
        .unwrap()
    }

    fn config(model: &str, provider: Option<&str>) -> ModelConfig {
        ModelConfig {
            model: Some(model.into()),
            model_provider: provider.map(str::to_owned),
            model_reasoning_effort: None,
        }
    }

    #[test]
    fn the_name_is_optional_one_word_and_bounded() {
        assert_eq!(Model::parse(""), Ok(Model(Pick::List)));
        assert_eq!(Model::parse("Default"), Ok(Model(Pick::Default)));
        assert_eq!(Model::parse("gpt-5"), Ok(Model(Pick::Named("gpt-5".into()))));
        let long = "m".repeat(MAX_MODEL_NAME + 1);
        let refused = Model::parse(&long).unwrap_err();
        assert!(refused.contains("129 characters long; /model takes at most 128"), "{refused}");
        let two = Model::parse("gpt 5").unwrap_err();
        assert!(two.starts_with("/model takes one word"), "{two}");
    }

    #[test]
    fn a_custom_providers_models_are_taken_as_given_and_openais_are_checked() {
        let models = [model("gpt-a"), model("gpt-b")];
        let custom = config("mock-model", Some("mock"));
        assert_eq!(
            pick_model(&models, &custom, "GPT-B"),
            Some(ModelPick::Listed(&models[1]))
        );
        assert_eq!(
            pick_model(&models, &custom, "mock-model"),
            Some(ModelPick::Configured("mock-model".into()))
        );
        assert_eq!(
            pick_model(&models, &custom, "mock-alt"),
            Some(ModelPick::AsGiven("mock-alt".into()))
        );
        for openai in [config("gpt-a", None), config("gpt-a", Some("openai"))] {
            assert_eq!(pick_model(&models, &openai, "mock-alt"), None);
        }
        assert_eq!(
            model_options(&models, Some("mock-model")),
            ["mock-model", "gpt-a", "gpt-b"]
        );
        assert_eq!(model_options(&models, Some("gpt-b")), ["gpt-a", "gpt-b"]);
    }
}
