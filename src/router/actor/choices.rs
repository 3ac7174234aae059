//! `/model`, `/effort`, `/cwd`, `/mode` and `/usage`: what the chat uses, what it may
//! choose, and the account's limits. Choices apply from the next turn on and are kept.

use tracing::info;

use super::Actor;
use crate::clock::unix_now;
use crate::router::replies::Replies;
use crate::router::texts;
use chat::{ChatChoices, Chosen, Mode, Named};
use codex::{ModelConfig, ModelInfo};

impl Actor {
    pub(super) async fn model(&mut self, replies: &Replies<'_>, name: &str) {
        let (models, config, choices) = match self.catalog().await {
            Ok(catalog) => catalog,
            Err(notice) => return replies.notice(notice),
        };
        let configured = config.model.as_deref();
        if name.is_empty() {
            let current = choices
                .model
                .clone()
                .unwrap_or_else(|| self.default_model(&models, &config));
            let text = texts::model_listing(&current, &texts::model_names(&models, configured));
            return replies.choices(text, "model", model_options(&models, configured));
        }
        let (model, listed) = match pick_model(&models, &config, name) {
            Some(ModelPick::Listed(model)) => (model.id.clone(), Some(model)),
            Some(ModelPick::Configured(model)) => (model, None),
            Some(ModelPick::AsGiven(model)) => {
                info!(chat = %self.chat, model, "a model Codex does not list, as given");
                (model, None)
            }
            None => {
                let names = texts::model_names(&models, configured);
                return replies.notice(texts::no_such_model(name, &names));
            }
        };
        let mut answer = texts::model_chosen(&model);
        if listed.is_none() && configured != Some(model.as_str()) {
            answer.push_str(texts::MODEL_AS_GIVEN);
        }
        if let (Some(effort), Some(listed)) = (&choices.effort, listed)
            && !listed.efforts().any(|e| e == effort)
        {
            if let Err(error) = self.session.choose(Chosen::Effort(None)).await {
                return replies.notice(texts::choice_unstored(&error));
            }
            answer.push_str(&texts::effort_dropped(effort));
        }
        match self
            .session
            .choose(Chosen::Model(Some(model.clone())))
            .await
        {
            Ok(()) => {
                info!(chat = %self.chat, model, "model chosen");
                replies.notice(answer)
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }

    pub(super) async fn effort(&mut self, replies: &Replies<'_>, level: &str) {
        let (models, config, choices) = match self.catalog().await {
            Ok(catalog) => catalog,
            Err(notice) => return replies.notice(notice),
        };
        let name = choices
            .model
            .clone()
            .unwrap_or_else(|| self.default_model(&models, &config));
        let listed = models.iter().find(|m| m.id == name);
        let efforts: Vec<&str> = match listed {
            Some(model) => model.efforts().collect(),
            // A provider's own model: the efforts Codex knows of any model, none enforced.
            None if !config.lists_every_model() => known_efforts(&models),
            None => return replies.notice(texts::no_efforts(&name)),
        };
        let levels = efforts.join(", ");
        if level.is_empty() {
            let default = listed.and_then(|m| m.default_reasoning_effort.as_deref());
            let current = choices
                .effort
                .as_deref()
                .or(default)
                .or(config.model_reasoning_effort.as_deref());
            let text = texts::effort_listing(current, &name, &levels);
            let options = efforts.iter().map(|e| (*e).to_owned()).collect();
            return replies.choices(text, "effort", options);
        }
        let known = efforts.iter().find(|e| e.eq_ignore_ascii_case(level));
        let (level, answer) = match (known, listed) {
            (Some(known), _) => (*known, texts::effort_chosen(known)),
            (None, None) => (level, texts::effort_chosen(level) + texts::MODEL_AS_GIVEN),
            (None, Some(_)) => {
                return replies.notice(texts::no_such_effort(&name, level, &levels));
            }
        };
        match self
            .session
            .choose(Chosen::Effort(Some(level.to_owned())))
            .await
        {
            Ok(()) => replies.notice(answer),
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }

    /// What `/model` and `/effort` choose from: Codex's models, its configured model and
    /// provider, and the chat's choices; else the notice saying which could not be read.
    async fn catalog(&mut self) -> Result<(Vec<ModelInfo>, ModelConfig, ChatChoices), String> {
        let models = self.session.models().await;
        let models = models.map_err(|error| texts::models_unlisted(&error))?;
        let config = self.session.model_config().await;
        let config = config.map_err(|error| texts::models_unlisted(&error))?;
        let choices = self.session.choices().await;
        let choices = choices.map_err(|error| texts::choices_unreadable(&error))?;
        Ok((models, config, choices))
    }

    pub(super) async fn mode(&mut self, replies: &Replies<'_>, name: &str) {
        if let Err(error) = self.session.choices().await {
            return replies.notice(texts::choices_unreadable(&error));
        }
        let settings = &self.ctx.settings;
        let configured = (settings.sandbox, settings.approval_policy);
        if name.is_empty() {
            let text = texts::mode_listing(self.session.mode(), configured);
            let options = Mode::names().map(str::to_owned);
            let options = options.chain(["default".to_owned()]).collect();
            return replies.choices(text, "mode", options);
        }
        let mode = match (name, Mode::from_name(name)) {
            ("default", _) => None,
            (_, Some(mode)) => Some(mode),
            (_, None) => return replies.notice(texts::no_such_mode(name)),
        };
        if mode == Some(Mode::Full) && !replies.admin {
            info!(chat = %self.chat, "full mode refused: not an admin");
            return replies.notice(texts::FULL_MODE_ADMINS_ONLY);
        }
        match self.session.choose(Chosen::Mode(mode)).await {
            Ok(()) => {
                info!(chat = %self.chat, mode = mode.map(Mode::name), "mode chosen");
                replies.notice(texts::mode_chosen(mode, configured))
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }

    pub(super) async fn cwd(&mut self, replies: &Replies<'_>, dir: &str) {
        if let Some(fixed) = self.session.fixed_folder() {
            let fixed = fixed.display().to_string();
            return replies.notice(texts::fixed_folder(&fixed, dir.is_empty()));
        }
        let roots = self.ctx.settings.project_roots.clone();
        if dir.is_empty() {
            // The chosen folder, if any, counts once the choices are read.
            if let Err(error) = self.session.choices().await {
                return replies.notice(texts::choices_unreadable(&error));
            }
            let folder = match self.session.folder() {
                Ok(folder) => folder.display().to_string(),
                Err(error) => return replies.notice(error.to_string()),
            };
            let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            return replies.notice(texts::folder_listing(&folder, &roots));
        }
        let folder = match self.session.resolve_folder(&roots, dir).await {
            Ok(folder) => folder.display().to_string(),
            Err(refusal) => return replies.notice(texts::nothing_changed(&refusal)),
        };
        match self
            .session
            .choose(Chosen::Folder(Some(folder.clone())))
            .await
        {
            Ok(()) => {
                info!(chat = %self.chat, folder, "folder chosen");
                replies.notice(texts::folder_chosen(&folder))
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }

    pub(super) async fn usage(&mut self, replies: &Replies<'_>) {
        let mut lines = match self.session.rate_limits().await {
            Ok(Some(limits)) => [limits.primary, limits.secondary]
                .into_iter()
                .flatten()
                .map(|window| texts::window_line(&window, unix_now()))
                .collect(),
            Ok(None) => vec![texts::NO_RATE_LIMITS.to_owned()],
            Err(error) => vec![texts::rate_limits_unread(&error)],
        };
        if lines.is_empty() {
            lines.push(texts::NO_RATE_LIMIT_WINDOWS.into());
        }
        let record = self.session.record().await.ok().flatten();
        lines.push(super::status::context_line(record.as_ref()));
        replies.notice(lines.join("\n"));
    }

    /// The model a chat without a choice uses: the gateway's `[codex] model`, else the
    /// one Codex's config names, else Codex's listed default.
    fn default_model(&self, models: &[ModelInfo], config: &ModelConfig) -> String {
        let gateway = self.ctx.settings.model.clone();
        let listed = models.iter().find(|m| m.is_default).map(|m| m.id.clone());
        gateway
            .or_else(|| config.model.clone())
            .or(listed)
            .unwrap_or_else(|| texts::CODEX_DEFAULT_MODEL.into())
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
        assert_eq!(known_efforts(&models), ["low", "high"]);
    }
}
