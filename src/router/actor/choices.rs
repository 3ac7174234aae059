//! What the choice commands (`/model`, `/effort`, `/steer`, `/queue`, `/verbose`,
//! `/quiet`) share: the catalog they choose from, and storing a choice.

use super::Actor;
use crate::router::replies::Replies;
use crate::router::texts;
use chat::{ChatChoices, Chosen, Progress};
use codex::{ModelConfig, ModelInfo};

impl Actor {
    /// What `/model` and `/effort` choose from: Codex's models, its configured model and
    /// provider, and the chat's choices; else the notice saying which could not be read.
    pub(crate) async fn catalog(
        &mut self,
    ) -> Result<(Vec<ModelInfo>, ModelConfig, ChatChoices), String> {
        let models = self.session.models().await;
        let models = models.map_err(|error| texts::models_unlisted(&error))?;
        let config = self.session.model_config().await;
        let config = config.map_err(|error| texts::models_unlisted(&error))?;
        let choices = self.session.choices().await;
        let choices = choices.map_err(|error| texts::choices_unreadable(&error))?;
        let model = self.default_model(&models, &config);
        let current = choices.model.clone().unwrap_or_else(|| model.clone());
        let effort = config.model_reasoning_effort.clone().or_else(|| {
            let listed = models.iter().find(|m| m.id == current);
            listed.and_then(|m| m.default_reasoning_effort.clone())
        });
        self.session.know_defaults(model, current, effort);
        Ok((models, config, choices))
    }

    /// The model a chat without a choice uses: the gateway's `[codex] model`, else the
    /// one Codex's config names, else Codex's listed default.
    pub(crate) fn default_model(&self, models: &[ModelInfo], config: &ModelConfig) -> String {
        let gateway = self.ctx.settings.model.clone();
        let listed = models.iter().find(|m| m.is_default).map(|m| m.id.clone());
        gateway
            .or_else(|| config.model.clone())
            .or(listed)
            .unwrap_or_else(|| texts::CODEX_DEFAULT_MODEL.into())
    }

    /// Stores `chosen` from the next turn on; the chat is told `said`, or why it failed.
    pub(crate) async fn choose(&mut self, replies: &Replies<'_>, chosen: Chosen, said: &str) {
        match self.session.choose(chosen).await {
            Ok(()) => replies.notice(said),
            Err(error) => self.report(replies, &error),
        }
    }

    /// `/verbose` or `/quiet`: switches this chat to `progress`, or back to the short
    /// status when it is on already.
    pub(crate) async fn toggle_progress(&mut self, replies: &Replies<'_>, progress: Progress) {
        if let Err(error) = self.session.choices().await {
            return self.report(replies, &error);
        }
        let chosen = match self.session.progress() == progress {
            true => Progress::Status,
            false => progress,
        };
        let said = texts::progress_chosen(chosen);
        self.choose(replies, Chosen::Progress(Some(chosen)), said)
            .await
    }
}
