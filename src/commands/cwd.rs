//! `/cwd [DIR]`: the chat's folder and the project roots; with a folder inside the roots
//! (checked where Codex runs), the chat works there from the next turn on.

use tracing::info;

use super::{Argument, ChatCommand, Spec, optional};
use crate::router::{Actor, Replies, texts};
use chat::Chosen;

/// `/cwd` in a chat whose folder the config fixes; whether it was only shown.
fn fixed_folder(folder: &str, shown_only: bool) -> String {
    match shown_only {
        true => format!("Folder: {folder} (fixed for this chat by codex.chat_folders)"),
        false => format!(
            "This chat's folder is fixed to {folder} by codex.chat_folders; nothing changed."
        ),
    }
}

fn folder_listing(folder: &str, roots: &[String]) -> String {
    let roots = match roots.is_empty() {
        true => "none (set [codex] project_roots to allow moving)".to_owned(),
        false => roots.join(", "),
    };
    format!("Folder: {folder}\nProject roots: {roots}")
}

fn folder_chosen(folder: &str) -> String {
    format!("This chat works in {folder} from the next turn on.")
}

/// A refusal that left everything as it was.
fn nothing_changed(refusal: &impl std::fmt::Display) -> String {
    format!("{refusal}; nothing changed.")
}

/// A folder; `None` shows the chat's folder and the roots.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cwd(pub Option<String>);

impl ChatCommand for Cwd {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "folder",
            about: "A folder inside the project roots",
            shown: "[DIR]",
        }),
        ..Spec::plain(
            "cwd",
            "Show or move this chat's folder",
            "this chat's folder; with a folder inside the project roots, move there",
        )
    };

    fn parse(dir: &str) -> Result<Self, String> {
        Ok(Cwd(optional(dir)))
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        if let Some(fixed) = chat.session.fixed_folder() {
            let fixed = fixed.display().to_string();
            return replies.notice(fixed_folder(&fixed, self.0.is_none()));
        }
        let roots = chat.ctx.settings.project_roots.clone();
        let Some(dir) = self.0 else {
            // The chosen folder, if any, counts once the choices are read.
            if let Err(error) = chat.session.choices().await {
                return replies.notice(texts::choices_unreadable(&error));
            }
            let folder = match chat.session.folder() {
                Ok(folder) => folder.display().to_string(),
                Err(error) => return replies.notice(error.to_string()),
            };
            let roots: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
            return replies.notice(folder_listing(&folder, &roots));
        };
        let folder = match chat.session.resolve_folder(&roots, &dir).await {
            Ok(folder) => folder.display().to_string(),
            Err(refusal) => return replies.notice(nothing_changed(&refusal)),
        };
        match chat.session.choose(Chosen::Folder(Some(folder.clone()))).await {
            Ok(()) => {
                info!(chat = %chat.chat, folder, "folder chosen");
                replies.notice(folder_chosen(&folder))
            }
            Err(error) => replies.notice(texts::choice_unstored(&error)),
        }
    }
}
