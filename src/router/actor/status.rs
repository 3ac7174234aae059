//! `/status`: the chat's thread and Codex server, usage, model, effort, working directory and what a
//! message sent during a turn does.

use super::Actor;
use crate::session::{ChatRow, FollowUp, ServerPlace};

impl Actor {
    pub(super) async fn status(&mut self) -> String {
        let record = match self.session.record().await {
            Ok(record) => record,
            Err(error) => return format!("Status unavailable: {error}"),
        };
        let stored = record.as_ref().and_then(|r| r.thread_id.as_deref());
        let thread = match (self.session.thread_id(), stored) {
            (Some(live), _) if self.session.is_live() => format!("{live} (live)"),
            (_, Some(stored)) => format!("{stored} (stored; resumed on the next message)"),
            _ => "none yet (the next message starts one)".to_owned(),
        };
        let mut lines = vec![format!("Chat: {}", self.chat), format!("Thread: {thread}")];
        lines.push(format!("Codex server: {}", self.server_line().await));
        if let Some(record) = &record {
            lines.push(format!("Turns: {}", record.turns));
            lines.push(context_line(Some(record)));
            if let Some(total) = record.total_tokens {
                lines.push(format!("Tokens used by this thread: {total}"));
            }
        }
        let choices = self.session.choices().await.unwrap_or_default();
        let fixed = self.session.fixed_folder().map(|f| f.display().to_string());
        let folder = fixed.or(choices.folder).or_else(|| {
            let cwd = record.as_ref().map(|r| r.cwd.clone());
            cwd.filter(|cwd| !cwd.is_empty())
        });
        let folder = folder.unwrap_or_else(|| "set when the first thread starts".into());
        lines.push(format!("Working directory: {folder}"));
        let model = choices.model.or_else(|| self.ctx.settings.model.clone());
        let model = model.unwrap_or_else(|| "Codex's configured default".into());
        lines.push(format!("Model: {model}"));
        let effort = choices
            .effort
            .unwrap_or_else(|| "the model's default".into());
        lines.push(format!("Reasoning effort: {effort}"));
        let follow_up = match self.session.follow_up() {
            FollowUp::Steer => "join the running turn (/queue to make them wait)",
            FollowUp::Queue => "wait for the running turn (/steer to add them to it)",
        };
        lines.push(format!("Messages sent while Codex works: {follow_up}"));
        lines.join("\n")
    }
}

impl Actor {
    /// Where the chat's thread runs, and whether that server is up.
    async fn server_line(&self) -> String {
        match self.session.server_place().await {
            ServerPlace::NotYet => "chosen when the first thread starts".to_owned(),
            ServerPlace::On(state) => match &state.problem {
                None => state.label(),
                Some(problem) => format!("{}; down: {problem}", state.label()),
            },
            ServerPlace::Gone(name) => {
                format!("{name} (no longer configured; the next message moves the chat)")
            }
        }
    }
}

/// How full the thread's context is, as the latest turn left it.
pub(super) fn context_line(record: Option<&ChatRow>) -> String {
    match record.map(|r| (r.last_tokens, r.context_window)) {
        Some((Some(used), Some(limit))) if limit > 0 => {
            format!("Context: {used} / {limit} tokens ({}%)", used * 100 / limit)
        }
        Some((Some(used), _)) => format!("Context: {used} tokens"),
        _ => "Context: no usage reported yet".to_owned(),
    }
}
