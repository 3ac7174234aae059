//! A chat's choices of model, reasoning effort and folder: checked against what Codex
//! offers and the project roots, stored with the chat, and given to every turn as
//! `turn/start` overrides.

use std::path::{Path, PathBuf};

use super::{Session, SessionError};
use crate::codex::{ModelInfo, RateLimits, TurnOverrides};
use crate::config::FollowUp;
use crate::store::StoreError;
pub use crate::store::{ChatChoices, Choice};

/// Why a folder was not taken; the chat is told, and nothing changes.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum FolderRefusal {
    #[error(
        "this gateway has no project roots ([codex] project_roots), so /cwd only shows the folder"
    )]
    NoRoots,
    #[error("{0} does not exist")]
    Missing(String),
    #[error("{0} is not a folder")]
    NotAFolder(String),
    #[error("not allowed: {0} is outside the project roots")]
    Outside(String),
}

/// `dir` (absolute, or relative to the first root) with symlinks followed; it must be a
/// folder inside one of `roots`.
pub fn resolve_folder(roots: &[PathBuf], dir: &str) -> Result<PathBuf, FolderRefusal> {
    let first = roots.first().ok_or(FolderRefusal::NoRoots)?;
    let asked = first.join(dir); // an absolute `dir` replaces the root
    let resolved = std::fs::canonicalize(&asked).map_err(|_| FolderRefusal::Missing(dir.into()))?;
    if !resolved.is_dir() {
        return Err(FolderRefusal::NotAFolder(dir.into()));
    }
    let inside =
        |root: &PathBuf| std::fs::canonicalize(root).is_ok_and(|root| resolved.starts_with(root));
    match roots.iter().any(inside) {
        true => Ok(resolved),
        false => Err(FolderRefusal::Outside(dir.into())),
    }
}

impl Session {
    /// The chat's choices, read once per session and kept up to date by [`Session::choose`].
    pub async fn choices(&mut self) -> Result<ChatChoices, StoreError> {
        if self.choices.is_none() {
            self.choices = Some(self.ctx.store.choices(&self.chat).await?);
        }
        Ok(self.choices.clone().unwrap_or_default())
    }

    /// Sets (or with `None` clears) one choice, from the next turn on.
    pub async fn choose(&mut self, choice: Choice, value: Option<&str>) -> Result<(), StoreError> {
        self.ctx.store.set_choice(&self.chat, choice, value).await?;
        let mut choices = self.choices().await?;
        let value = value.map(str::to_owned);
        match choice {
            Choice::Model => choices.model = value,
            Choice::Effort => choices.effort = value,
            Choice::Folder => choices.folder = value,
            Choice::FollowUp => choices.follow_up = value,
        }
        self.choices = Some(choices);
        Ok(())
    }

    /// The models Codex offers this chat.
    pub async fn models(&self) -> Result<Vec<ModelInfo>, SessionError> {
        Ok(self.server().await?.models().await?)
    }

    /// The account's rate-limit windows, when the provider reports them.
    pub async fn rate_limits(&self) -> Result<Option<RateLimits>, SessionError> {
        Ok(self.server().await?.rate_limits().await?)
    }

    /// The rate limits Codex last reported, without asking (for `/status`, which must
    /// answer at once even during a turn).
    pub fn known_rate_limits(&self) -> Option<RateLimits> {
        self.live_server()?.known_rate_limits()
    }

    /// What the chat chose, as the turn's overrides (loaded by `start_turn` first).
    pub(super) fn overrides(&self) -> TurnOverrides {
        let choices = self.choices.clone().unwrap_or_default();
        TurnOverrides {
            cwd: self.chosen_folder().map(|f| f.display().to_string()),
            model: choices.model,
            effort: choices.effort,
        }
    }

    /// What a message sent during this chat's turn does: its choice, else the default.
    /// Read once the chat's choices are loaded (every turn loads them first).
    pub fn follow_up(&self) -> FollowUp {
        let chosen = self.choices.as_ref().and_then(|c| c.follow_up.as_deref());
        match chosen {
            Some("queue") => FollowUp::Queue,
            Some("steer") => FollowUp::Steer,
            _ => self.ctx.settings.follow_up,
        }
    }

    /// The folder the config fixes for this chat, if it does.
    pub fn fixed_folder(&self) -> Option<&Path> {
        let folders = &self.ctx.settings.chat_folders;
        folders.get(&self.chat.to_string()).map(PathBuf::as_path)
    }

    /// The chat's folder when it is not the workspace default: fixed by the config, else
    /// chosen with `/cwd`.
    pub(super) fn chosen_folder(&self) -> Option<&Path> {
        let chosen = self.choices.as_ref().and_then(|c| c.folder.as_deref());
        self.fixed_folder().or(chosen.map(Path::new))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_resolve_inside_the_roots_only() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("projects");
        std::fs::create_dir_all(root.join("app/src")).unwrap();
        std::fs::write(root.join("notes.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc", root.join("escape")).unwrap();
        let roots = vec![root.clone()];
        let root = std::fs::canonicalize(&root).unwrap();

        assert_eq!(resolve_folder(&roots, "app"), Ok(root.join("app")));
        assert_eq!(resolve_folder(&roots, "app/src/.."), Ok(root.join("app")));
        let absolute = root.join("app/src").display().to_string();
        assert_eq!(resolve_folder(&roots, &absolute), Ok(root.join("app/src")));
        let refused = |dir: &str| resolve_folder(&roots, dir).unwrap_err();
        assert_eq!(refused("/etc"), FolderRefusal::Outside("/etc".into()));
        assert_eq!(refused("../.."), FolderRefusal::Outside("../..".into()));
        assert_eq!(refused("escape"), FolderRefusal::Outside("escape".into()));
        assert_eq!(refused("nope"), FolderRefusal::Missing("nope".into()));
        assert_eq!(
            refused("notes.txt"),
            FolderRefusal::NotAFolder("notes.txt".into())
        );
        assert_eq!(resolve_folder(&[], "x"), Err(FolderRefusal::NoRoots));
    }
}
