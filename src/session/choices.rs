//! A chat's choices of model, reasoning effort and folder: checked against what Codex
//! offers and the project roots, stored with the chat, and given to every turn as
//! `turn/start` overrides.

use std::path::{Path, PathBuf};

use super::{Session, SessionError};
use chat::{ChatChoices, Chosen, FollowUp, Mode, Notify, Progress};
use codex::{ApprovalPolicy, SandboxMode};
use codex::{
    ModelConfig, ModelInfo, PathKind, Permissions, RateLimits, RealPath, SandboxPolicy,
    TurnOverrides,
};

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
    #[error("Codex could not check {dir}: {reason}")]
    Unchecked { dir: String, reason: String },
}

/// The folder `dir` leads to (`target`, as Codex's machine resolved it, symlinks
/// followed) if it is a folder inside one of `roots` (resolved likewise).
pub fn check_folder(
    roots: &[PathBuf],
    target: Option<RealPath>,
    dir: &str,
) -> Result<PathBuf, FolderRefusal> {
    let target = target.ok_or_else(|| FolderRefusal::Missing(dir.into()))?;
    if target.kind != PathKind::Folder {
        return Err(FolderRefusal::NotAFolder(dir.into()));
    }
    match roots.iter().any(|root| target.path.starts_with(root)) {
        true => Ok(target.path),
        false => Err(FolderRefusal::Outside(dir.into())),
    }
}

impl Session {
    /// The chat's choices, read once per session and kept up to date by [`Session::choose`].
    pub async fn choices(&mut self) -> Result<ChatChoices, SessionError> {
        if self.choices.is_none() {
            self.choices = Some(self.ctx.store.choices(&self.chat).await?);
        }
        Ok(self.choices.clone().unwrap_or_default())
    }

    /// Sets (or with `None` clears) one choice, from the next turn on.
    pub async fn choose(&mut self, chosen: Chosen) -> Result<(), SessionError> {
        self.ctx.store.set_choice(&self.chat, &chosen).await?;
        let mut choices = self.choices().await?;
        if let Chosen::Folder(_) = chosen {
            // Project layers of Codex's config depend on the folder.
            self.model_config = None;
        }
        choices.set(chosen);
        self.choices = Some(choices);
        Ok(())
    }

    /// `dir` (absolute, or relative to the first root) as a folder inside one of `roots`,
    /// resolved where this chat's Codex runs (its folders may exist only there).
    pub async fn resolve_folder(
        &self,
        roots: &[PathBuf],
        dir: &str,
    ) -> Result<PathBuf, FolderRefusal> {
        let first = roots.first().ok_or(FolderRefusal::NoRoots)?;
        let unchecked = |error: SessionError| FolderRefusal::Unchecked {
            dir: dir.into(),
            reason: error.to_string(),
        };
        let server = self.server().await.map_err(unchecked)?;
        let codex_failed = |error: codex::CodexError| unchecked(error.into());
        let mut real_roots = Vec::new();
        for root in roots {
            let real = server.resolve(root).await.map_err(codex_failed)?;
            real_roots.extend(real.filter(|r| r.kind == PathKind::Folder).map(|r| r.path));
        }
        // An absolute `dir` replaces the root.
        let target = server.resolve(&first.join(dir)).await;
        check_folder(&real_roots, target.map_err(codex_failed)?, dir)
    }

    /// The models Codex offers this chat.
    pub async fn models(&self) -> Result<Vec<ModelInfo>, SessionError> {
        Ok(self.server().await?.models().await?)
    }

    /// Codex's configured model and provider, as its effective config for the chat's
    /// folder says (asked once per session).
    pub async fn model_config(&mut self) -> Result<ModelConfig, SessionError> {
        if let Some(config) = &self.model_config {
            return Ok(config.clone());
        }
        let cwd = self.folder().ok().map(|f| f.display().to_string());
        let config = self.server().await?.model_config(cwd.as_deref()).await?;
        self.model_config = Some(config.clone());
        Ok(config)
    }

    /// Codex's configured model and provider if already asked (for `/status`).
    pub fn known_model_config(&self) -> Option<&ModelConfig> {
        self.model_config.as_ref()
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

    /// The model a chat without a choice uses, and the default effort of `current` (the
    /// model the chat runs on), as the actor worked them out from Codex's catalog and
    /// config.
    pub fn know_defaults(&mut self, model: String, current: String, effort: Option<String>) {
        self.defaults = ModelDefaults {
            model: Some(model),
            effort: effort.map(|effort| (current, effort)),
        };
    }

    /// What the chat chose (else the defaults, once known), as the turn's overrides of
    /// what its thread runs with (loaded by `start_turn` first).
    pub(super) fn overrides(&self) -> TurnOverrides {
        let choices = self.choices.clone().unwrap_or_default();
        let permissions = self.permissions();
        let model = choices.model.or_else(|| self.defaults.model.clone());
        // A default effort is one model's: another model keeps its own.
        let default_effort = match &self.defaults.effort {
            Some((of, effort)) if Some(of) == model.as_ref() => Some(effort.clone()),
            _ => None,
        };
        let wanted = TurnOverrides {
            cwd: self.chosen_folder().map(|f| f.display().to_string()),
            model,
            effort: choices.effort.or(default_effort),
            approval_policy: Some(permissions.approval_policy),
            sandbox_policy: Some(permissions.sandbox),
        };
        match &self.live {
            Some(live) => wanted.changed_from(&live.runs_with),
            None => wanted,
        }
    }

    /// The sandbox and approval policy the chat's turns run with: its `/mode`'s, else
    /// the config's.
    pub(super) fn permissions(&self) -> Permissions {
        let settings = &self.ctx.settings;
        let (sandbox, approval_policy) = match self.mode() {
            Some(mode) => mode_permissions(mode),
            None => (settings.sandbox, settings.approval_policy),
        };
        Permissions {
            sandbox: SandboxPolicy::of(sandbox),
            approval_policy,
        }
    }

    /// The chat's `/mode`, if it chose one (else the config's sandbox and approval policy
    /// apply).
    pub fn mode(&self) -> Option<Mode> {
        self.choices.as_ref().and_then(|c| c.mode)
    }

    /// What a message sent during this chat's turn does: its choice, else the default.
    /// Read once the chat's choices are loaded (every turn loads them first).
    pub fn follow_up(&self) -> FollowUp {
        let chosen = self.choices.as_ref().and_then(|c| c.follow_up);
        chosen.unwrap_or(self.ctx.settings.follow_up)
    }

    /// How this chat sees a running turn: its choice, else the default.
    pub fn progress(&self) -> Progress {
        let chosen = self.choices.as_ref().and_then(|c| c.progress);
        chosen.unwrap_or(self.ctx.settings.progress)
    }

    /// Which of this chat's messages notify: its choice, else the important ones.
    pub fn notify(&self) -> Notify {
        let chosen = self.choices.as_ref().and_then(|c| c.notify);
        chosen.unwrap_or_default()
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

/// A `/mode`'s sandbox and approval policy.
pub fn mode_permissions(mode: Mode) -> (SandboxMode, ApprovalPolicy) {
    match mode {
        Mode::ReadOnly => (SandboxMode::ReadOnly, ApprovalPolicy::OnRequest),
        Mode::Auto => (SandboxMode::WorkspaceWrite, ApprovalPolicy::OnRequest),
        Mode::Full => (SandboxMode::DangerFullAccess, ApprovalPolicy::Never),
    }
}

/// The model and effort a chat without a choice runs with, once worked out.
#[derive(Debug, Clone, Default)]
pub(super) struct ModelDefaults {
    model: Option<String>,
    /// The default effort, and the model it is the default of.
    effort: Option<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_resolve_inside_the_roots_only() {
        let roots = vec![PathBuf::from("/p/projects"), PathBuf::from("/srv/other")];
        let check = |path: Option<&str>, kind, dir: &str| {
            let target = path.map(|path| RealPath {
                path: path.into(),
                kind,
                bytes: 4096,
            });
            check_folder(&roots, target, dir)
        };
        let folder = PathKind::Folder;
        let app = Some("/p/projects/app");
        assert_eq!(check(app, folder, "app"), Ok("/p/projects/app".into()));
        assert_eq!(
            check(app, folder, "app/src/.."),
            Ok("/p/projects/app".into())
        );
        let other = Some("/srv/other/x");
        assert_eq!(
            check(other, folder, "/srv/other/x"),
            Ok("/srv/other/x".into())
        );
        let outside = |dir: &str| FolderRefusal::Outside(dir.into());
        assert_eq!(check(Some("/etc"), folder, "/etc"), Err(outside("/etc")));
        assert_eq!(check(Some("/"), folder, "../.."), Err(outside("../..")));
        // A symlink out of the roots: where it leads counts.
        assert_eq!(
            check(Some("/etc"), folder, "escape"),
            Err(outside("escape"))
        );
        let sibling = Some("/p/projects-old");
        assert_eq!(
            check(sibling, folder, "../projects-old"),
            Err(outside("../projects-old"))
        );
        let missing = FolderRefusal::Missing("nope".into());
        assert_eq!(check(None, folder, "nope"), Err(missing));
        let notes = Some("/p/projects/notes.txt");
        let not_a_folder = FolderRefusal::NotAFolder("notes.txt".into());
        assert_eq!(check(notes, PathKind::File, "notes.txt"), Err(not_a_folder));
    }
}
