//! Tasks: places the bot opened for a task (a Discord thread, a Telegram topic), kept
//! with their titles. A task's first message names its Codex thread after it and, with
//! `codex.task_worktrees`, gives it a worktree of its own.

use tracing::warn;

use super::{Context, Session, SessionError, Worktree, WorktreeRefusal};
use chat::ChatKey;

/// Keeps `chat` as the place of the task `title`, so its messages belong to the task,
/// across restarts.
pub async fn keep_task(ctx: &Context, chat: &ChatKey, title: &str) -> Result<(), SessionError> {
    Ok(ctx.store.set_task(chat, title).await?)
}

/// The branch of a task's own worktree: `task/` and its title's words, then its place
/// (a thread's or topic's id), so two tasks of one title differ.
fn task_branch(title: &str, chat: &ChatKey) -> String {
    let mut slug = String::new();
    for c in title.chars().flat_map(char::to_lowercase) {
        match c.is_ascii_alphanumeric() {
            true => slug.push(c),
            false if !slug.ends_with('-') && !slug.is_empty() => slug.push('-'),
            false => {}
        }
    }
    let slug: String = slug.chars().take(40).collect();
    let place = chat.topic.as_deref().unwrap_or(&chat.chat);
    let place: String = place.chars().filter(char::is_ascii_alphanumeric).collect();
    let place = &place[place.len().saturating_sub(6)..];
    let slug = match slug.trim_end_matches('-') {
        "" => "task",
        slug => slug,
    };
    format!("task/{slug}-{place}")
}

impl Session {
    /// The title of the task this chat is the place of, if it is one.
    pub async fn task_title(&self) -> Result<Option<String>, SessionError> {
        Ok(self.ctx.store.task(&self.chat).await?)
    }

    /// A message for Codex in a task's place: if it is the task's first (the chat has no
    /// thread yet), the thread it starts is named after the task, and with
    /// `codex.task_worktrees` the task gets a worktree of its own, which is returned.
    pub async fn begin_task(&mut self) -> Option<Result<Worktree, WorktreeRefusal>> {
        if self.is_live() {
            return None;
        }
        let title = match self.task_title().await {
            Ok(title) => title?,
            Err(error) => return Some(Err(error.into())),
        };
        let stored = match self.record().await {
            Ok(record) => record.and_then(|r| r.thread_id),
            Err(error) => return Some(Err(error.into())),
        };
        if stored.is_some() {
            return None;
        }
        self.task_name = Some(title.clone());
        if !self.ctx.settings.task_worktrees {
            return None;
        }
        match self.worktree().await {
            Ok(Some(_)) => None,
            Ok(None) => Some(self.make_worktree(&task_branch(&title, &self.chat)).await),
            Err(error) => Some(Err(error.into())),
        }
    }

    /// Names the thread just started after its task, if it is a task's first.
    pub(super) async fn name_after_task(&mut self) {
        let (Some(name), Some(live)) = (self.task_name.take(), self.live.as_ref()) else {
            return;
        };
        if let Err(error) = live.server.name_thread(&live.thread_id, &name).await {
            warn!(chat = %self.chat, %error, "could not name a task's thread");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tasks_branch_is_its_title_and_its_place() {
        let mut topic = ChatKey::new(chat::Platform::Telegram, "1001");
        topic.topic = Some("1234567".into());
        assert_eq!(
            task_branch("Fix the Login page!", &topic),
            "task/fix-the-login-page-234567"
        );
        let thread = ChatKey::new(chat::Platform::Discord, "42");
        assert_eq!(task_branch("ünïcode ✓", &thread), "task/n-code-42");
    }
}
