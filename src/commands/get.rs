//! `/get PATH`: sends a file from the chat's folder (where Codex runs: through its
//! app-server). A turn's reply that names files Codex wrote offers them as its buttons.

use tracing::info;

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies};

const GET_WHICH: &str = "Say which file: /get PATH (relative to this chat's folder).";

fn nothing_sent(refusal: &impl std::fmt::Display) -> String {
    format!("{refusal}; nothing sent.")
}

/// A path in the chat's folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Get(pub String);

impl ChatCommand for Get {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "path",
            about: "A file in this chat's folder",
            shown: "PATH",
        }),
        buttons: true,
        ..Spec::plain(
            "get",
            "Send a file from this chat's folder",
            "send a file from this chat's folder (20 MB at most)",
        )
    };

    fn parse(path: &str) -> Result<Self, String> {
        match path {
            "" => Err(GET_WHICH.into()),
            path => Ok(Get(path.to_owned())),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.file(&self.0).await {
            Ok((name, bytes)) => {
                info!(chat = %chat.chat, bytes = bytes.len(), "file sent");
                replies.file(name, bytes);
            }
            Err(refusal) => replies.notice(nothing_sent(&refusal)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_path_is_needed() {
        assert_eq!(Get::parse("out.txt"), Ok(Get("out.txt".into())));
        assert_eq!(Get::parse(""), Err(GET_WHICH.into()));
    }
}
