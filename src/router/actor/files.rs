//! `/get`: a file from the chat's folder, sent to the chat.

use tracing::info;

use super::Actor;
use crate::router::replies::Replies;

impl Actor {
    pub(super) async fn get(&mut self, replies: &Replies<'_>, path: &str) {
        if path.is_empty() {
            return replies.notice("Say which file: /get PATH (relative to this chat's folder).");
        }
        match self.session.file(path).await {
            Ok((name, bytes)) => {
                info!(chat = %self.chat, bytes = bytes.len(), "file sent");
                replies.file(name, bytes);
            }
            Err(refusal) => replies.notice(format!("{refusal}; nothing sent.")),
        }
    }
}
