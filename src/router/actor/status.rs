//! `/status`: the chat's thread, usage, model and working directory.

use super::Actor;

impl Actor {
    pub(super) async fn status(&self) -> String {
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
        let mut lines = vec![format!("Thread: {thread}")];
        if let Some(record) = &record {
            lines.push(format!("Turns: {}", record.turns));
            lines.push(match (record.last_tokens, record.context_window) {
                (Some(used), Some(limit)) if limit > 0 => {
                    format!("Context: {used} / {limit} tokens ({}%)", used * 100 / limit)
                }
                (Some(used), _) => format!("Context: {used} tokens"),
                _ => "Context: no usage reported yet".to_owned(),
            });
            if let Some(total) = record.total_tokens {
                lines.push(format!("Tokens used by this thread: {total}"));
            }
            lines.push(format!("Working directory: {}", record.cwd));
        }
        let model = self.ctx.settings.model.as_deref();
        let model = model.unwrap_or("Codex's configured default");
        lines.push(format!("Model: {model}"));
        lines.join("\n")
    }
}
