//! `/status`: the chat's thread and Codex server, usage, model, effort, working directory and what a
//! message sent during a turn does.

use super::Actor;
use crate::router::texts;
use crate::session::{ChatRow, ServerPlace};

impl Actor {
    pub(super) async fn status(&mut self) -> String {
        let record = match self.session.record().await {
            Ok(record) => record,
            Err(error) => return texts::status_unavailable(&error),
        };
        let stored = record.as_ref().and_then(|r| r.thread_id.as_deref());
        let thread = match (self.session.thread_id(), stored) {
            (Some(live), _) if self.session.is_live() => texts::ThreadState::Live(live.to_owned()),
            (_, Some(stored)) => texts::ThreadState::Stored(stored.to_owned()),
            _ => texts::ThreadState::None,
        };
        let choices = self.session.choices().await.unwrap_or_default();
        let fixed = self.session.fixed_folder().map(|f| f.display().to_string());
        let folder = fixed.or(choices.folder).or_else(|| {
            let cwd = record.as_ref().map(|r| r.cwd.clone());
            cwd.filter(|cwd| !cwd.is_empty())
        });
        let configured = self.configured_model().await;
        let model = choices
            .model
            .or_else(|| self.ctx.settings.model.clone())
            .or(configured);
        let limits = self.session.known_rate_limits();
        let windows = limits
            .map(|l| [l.primary, l.secondary])
            .into_iter()
            .flatten();
        let now = crate::clock::unix_now();
        let rate_limits = windows
            .flatten()
            .map(|window| texts::window_line(&window, now))
            .collect();
        let thread_name = self.session.live_thread_name().await;
        let settings = &self.ctx.settings;
        let mode = texts::status_mode(
            self.session.mode(),
            (settings.sandbox, settings.approval_policy),
        );
        texts::status(&texts::StatusFacts {
            chat: self.chat.to_string(),
            thread,
            thread_name,
            mode,
            server: self.server_line().await,
            usage: record
                .as_ref()
                .map(|r| (r.turns, context_line(Some(r)), r.total_tokens)),
            folder,
            model,
            effort: choices.effort,
            follow_up: self.session.follow_up(),
            progress: self.session.progress(),
            rate_limits,
        })
    }
}

impl Actor {
    /// The model Codex's config names, asked only of a server already running this chat's
    /// thread: `/status` answers at once and starts nothing.
    async fn configured_model(&mut self) -> Option<String> {
        if let Some(config) = self.session.known_model_config() {
            return config.model.clone();
        }
        match self.session.is_live() {
            true => self.session.model_config().await.ok()?.model,
            false => None,
        }
    }

    /// Where the chat's thread runs, and whether that server is up.
    async fn server_line(&self) -> String {
        match self.session.server_place().await {
            ServerPlace::NotYet => texts::SERVER_NOT_YET.to_owned(),
            ServerPlace::On(state) => texts::server_state(&state.label(), state.problem.as_deref()),
            ServerPlace::Gone(name) => texts::server_gone(&name),
        }
    }
}

/// How full the thread's context is, as the latest turn left it.
pub(super) fn context_line(record: Option<&ChatRow>) -> String {
    let (used, window) = record.map_or((None, None), |r| (r.last_tokens, r.context_window));
    texts::context_use(used, window)
}
