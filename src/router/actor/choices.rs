//! `/model`, `/effort`, `/cwd` and `/usage`: what the chat uses, what it may choose, and
//! the account's limits. Choices apply from the next turn on and are kept.

use std::time::{SystemTime, UNIX_EPOCH};

use tracing::info;

use super::Actor;
use crate::codex::{ModelInfo, RateLimitWindow};
use crate::router::replies::Replies;
use crate::session::Choice;

impl Actor {
    pub(super) async fn model(&mut self, replies: &Replies<'_>, name: &str) {
        let models = match self.session.models().await {
            Ok(models) => models,
            Err(error) => return replies.notice(format!("Codex did not list its models: {error}")),
        };
        let choices = match self.session.choices().await {
            Ok(choices) => choices,
            Err(error) => return replies.notice(format!("Your choices cannot be read: {error}")),
        };
        if name.is_empty() {
            let current = choices
                .model
                .clone()
                .unwrap_or_else(|| self.default_model(&models));
            let text = format!(
                "Model: {current}\nChoices: {}\nSay /model NAME to switch from the next turn on.",
                model_names(&models)
            );
            let options = models.iter().filter(|m| !m.hidden).map(|m| m.id.clone());
            return replies.choices(text, "model", options.collect());
        }
        let Some(model) = models.iter().find(|m| m.id.eq_ignore_ascii_case(name)) else {
            return replies.notice(format!(
                "There is no model {name} here; nothing changed. Choices: {}",
                model_names(&models)
            ));
        };
        let mut answer = format!("This chat uses {} from the next turn on.", model.id);
        if let Some(effort) = &choices.effort
            && !model.efforts().any(|e| e == effort)
        {
            if let Err(error) = self.session.choose(Choice::Effort, None).await {
                return replies.notice(format!("Your choice cannot be stored: {error}"));
            }
            answer.push_str(&format!(
                " It has no {effort} effort, so the model's default applies."
            ));
        }
        match self.session.choose(Choice::Model, Some(&model.id)).await {
            Ok(()) => {
                info!(chat = %self.chat, model = model.id, "model chosen");
                replies.notice(answer)
            }
            Err(error) => replies.notice(format!("Your choice cannot be stored: {error}")),
        }
    }

    pub(super) async fn effort(&mut self, replies: &Replies<'_>, level: &str) {
        let (models, choices) = match (self.session.models().await, self.session.choices().await) {
            (Ok(models), Ok(choices)) => (models, choices),
            (Err(error), _) => {
                return replies.notice(format!("Codex did not list its models: {error}"));
            }
            (_, Err(error)) => {
                return replies.notice(format!("Your choices cannot be read: {error}"));
            }
        };
        let name = choices
            .model
            .clone()
            .unwrap_or_else(|| self.default_model(&models));
        let Some(model) = models.iter().find(|m| m.id == name) else {
            return replies.notice(format!("Codex lists no efforts for the model {name}."));
        };
        let levels = model.efforts().collect::<Vec<_>>().join(", ");
        if level.is_empty() {
            let current = choices
                .effort
                .as_deref()
                .or(model.default_reasoning_effort.as_deref());
            let text = format!(
                "Reasoning effort: {}\nChoices for {name}: {levels}\nSay /effort LEVEL to switch from the next turn on.",
                current.unwrap_or("the model's default")
            );
            let options = model.efforts().map(str::to_owned).collect();
            return replies.choices(text, "effort", options);
        }
        let Some(level) = model.efforts().find(|e| e.eq_ignore_ascii_case(level)) else {
            return replies.notice(format!(
                "{name} has no {level} effort; nothing changed. Choices: {levels}"
            ));
        };
        match self.session.choose(Choice::Effort, Some(level)).await {
            Ok(()) => replies.notice(format!(
                "This chat uses {level} effort from the next turn on."
            )),
            Err(error) => replies.notice(format!("Your choice cannot be stored: {error}")),
        }
    }

    pub(super) async fn cwd(&mut self, replies: &Replies<'_>, dir: &str) {
        if let Some(fixed) = self.session.fixed_folder() {
            let fixed = fixed.display();
            return replies.notice(match dir.is_empty() {
                true => format!("Folder: {fixed} (fixed for this chat by codex.chat_folders)"),
                false => format!(
                    "This chat's folder is fixed to {fixed} by codex.chat_folders; nothing changed."
                ),
            });
        }
        let roots = self.ctx.settings.project_roots.clone();
        if dir.is_empty() {
            // The chosen folder, if any, counts once the choices are read.
            if let Err(error) = self.session.choices().await {
                return replies.notice(format!("Your choices cannot be read: {error}"));
            }
            let folder = match self.session.folder() {
                Ok(folder) => folder.display().to_string(),
                Err(error) => return replies.notice(error.to_string()),
            };
            let roots = match roots.is_empty() {
                true => "none (set [codex] project_roots to allow moving)".to_owned(),
                false => roots
                    .iter()
                    .map(|r| r.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
            };
            return replies.notice(format!("Folder: {folder}\nProject roots: {roots}"));
        }
        let folder = match self.session.resolve_folder(&roots, dir).await {
            Ok(folder) => folder.display().to_string(),
            Err(refusal) => return replies.notice(format!("{refusal}; nothing changed.")),
        };
        match self.session.choose(Choice::Folder, Some(&folder)).await {
            Ok(()) => {
                info!(chat = %self.chat, folder, "folder chosen");
                replies.notice(format!(
                    "This chat works in {folder} from the next turn on."
                ))
            }
            Err(error) => replies.notice(format!("Your choice cannot be stored: {error}")),
        }
    }

    pub(super) async fn usage(&mut self, replies: &Replies<'_>) {
        let mut lines = match self.session.rate_limits().await {
            Ok(Some(limits)) => [limits.primary, limits.secondary]
                .into_iter()
                .flatten()
                .map(|window| window_line(&window, unix_now()))
                .collect(),
            Ok(None) => vec![
                "Codex reports no rate limits for this login (an API key or a \
                              custom model provider has none)."
                    .to_owned(),
            ],
            Err(error) => vec![format!("Codex did not say its rate limits: {error}")],
        };
        if lines.is_empty() {
            lines.push("Codex reports no rate-limit windows yet.".into());
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
            .unwrap_or_else(|| "Codex's default".into())
    }
}

/// The models a person may pick, the default marked.
fn model_names(models: &[ModelInfo]) -> String {
    let shown: Vec<String> = models
        .iter()
        .filter(|m| !m.hidden)
        .map(|m| match m.is_default {
            true => format!("{} (default)", m.id),
            false => m.id.clone(),
        })
        .collect();
    match shown.is_empty() {
        true => "none listed".into(),
        false => shown.join(", "),
    }
}

/// "5-hour window: 42% used, resets in 2 h 10 min".
pub(super) fn window_line(window: &RateLimitWindow, now: i64) -> String {
    let name = match window.window_duration_mins {
        Some(300) => "5-hour window".to_owned(),
        Some(10_080) => "Weekly window".to_owned(),
        Some(minutes) if minutes % 60 == 0 => format!("{}-hour window", minutes / 60),
        Some(minutes) => format!("{minutes}-minute window"),
        None => "Window".to_owned(),
    };
    let resets = match window.resets_at {
        Some(at) => format!(", resets in {}", duration_words((at - now).max(0))),
        None => String::new(),
    };
    format!("{name}: {}% used{resets}", window.used_percent)
}

/// "2 h 10 min", "3 d 4 h", "45 s".
pub(super) fn duration_words(seconds: i64) -> String {
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

pub(super) fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_read_in_words() {
        let window = |minutes, used, resets_in: i64| RateLimitWindow {
            used_percent: used,
            resets_at: Some(1_000 + resets_in),
            window_duration_mins: Some(minutes),
        };
        let cases = [
            (
                window(300, 42, 7_800),
                "5-hour window: 42% used, resets in 2 h 10 min",
            ),
            (
                window(10_080, 5, 280_800),
                "Weekly window: 5% used, resets in 3 d 6 h",
            ),
            (
                window(60, 100, 30),
                "1-hour window: 100% used, resets in 30 s",
            ),
            (
                window(90, 1, -5),
                "90-minute window: 1% used, resets in 0 s",
            ),
        ];
        for (window, expected) in cases {
            assert_eq!(window_line(&window, 1_000), expected);
        }
    }
}
