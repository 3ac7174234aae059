//! `/model`, `/effort`, `/cwd` and `/usage`: what the chat uses, what it may choose, and
//! the account's limits. Choices apply from the next turn on and are kept.

use tracing::info;

use super::Actor;
use crate::clock::unix_now;
use crate::codex::ModelInfo;
use crate::router::replies::Replies;
use crate::router::texts;
use crate::session::Choice;

impl Actor {
    pub(super) async fn model(&mut self, replies: &Replies<'_>, name: &str) {
        let models = match self.session.models().await {
            Ok(models) => models,
            Err(error) => return replies.notice(texts::models_unlisted(&error)),
        };
        let choices = match self.session.choices().await {
            Ok(choices) => choices,
            Err(error) => return replies.notice(texts::choices_unreadable(&error)),
        };
        if name.is_empty() {
            let current = choices
                .model
                .clone()
                .unwrap_or_else(|| self.default_model(&models));
            let text = texts::model_listing(&current, &texts::model_names(&models));
            let options = models.iter().filter(|m| !m.hidden).map(|m| m.id.clone());
            return replies.choices(text, "model", options.collect());
        }
        let Some(model) = models.iter().find(|m| m.id.eq_ignore_ascii_case(name)) else {
            return replies.notice(texts::no_such_model(name, &texts::model_names(&models)));
        };
        let mut answer = texts::model_chosen(&model.id);
        if let Some(effort) = &choices.effort
            && !model.efforts().any(|e| e == effort)
        {
            if let Err(error) = self.session.choose(Choice::Effort, None).await {
                return replies.notice(texts::choice_unstored(&error));
            }
            answer.push_str(&texts::effort_dropped(effort));
        }
        match self.session.choose(Choice::Model, Some(&model.id)).await {
            Ok(()) => {
                info!(chat = %self.chat, model = model.id, "model chosen");
                replies.notice(answer)
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }

    pub(super) async fn effort(&mut self, replies: &Replies<'_>, level: &str) {
        let (models, choices) = match (self.session.models().await, self.session.choices().await) {
            (Ok(models), Ok(choices)) => (models, choices),
            (Err(error), _) => return replies.notice(texts::models_unlisted(&error)),
            (_, Err(error)) => return replies.notice(texts::choices_unreadable(&error)),
        };
        let name = choices
            .model
            .clone()
            .unwrap_or_else(|| self.default_model(&models));
        let Some(model) = models.iter().find(|m| m.id == name) else {
            return replies.notice(texts::no_efforts(&name));
        };
        let levels = model.efforts().collect::<Vec<_>>().join(", ");
        if level.is_empty() {
            let current = choices
                .effort
                .as_deref()
                .or(model.default_reasoning_effort.as_deref());
            let text = texts::effort_listing(current, &name, &levels);
            let options = model.efforts().map(str::to_owned).collect();
            return replies.choices(text, "effort", options);
        }
        let Some(level) = model.efforts().find(|e| e.eq_ignore_ascii_case(level)) else {
            return replies.notice(texts::no_such_effort(&name, level, &levels));
        };
        match self.session.choose(Choice::Effort, Some(level)).await {
            Ok(()) => replies.notice(texts::effort_chosen(level)),
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
        match self.session.choose(Choice::Folder, Some(&folder)).await {
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

    /// The model a chat without a choice uses: the configured one, else Codex's default.
    fn default_model(&self, models: &[ModelInfo]) -> String {
        let configured = self.ctx.settings.model.clone();
        let listed = models.iter().find(|m| m.is_default).map(|m| m.id.clone());
        configured
            .or(listed)
            .unwrap_or_else(|| texts::CODEX_DEFAULT_MODEL.into())
    }
}
