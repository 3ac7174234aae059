//! What a turn left, sent on request: `/get` sends a file from the chat's folder (and a
//! turn's reply that names files Codex wrote in that turn offers them), `/diff` the last
//! turn's changes, `/last` Codex's last answer.

use std::path::Path;

use tracing::{info, warn};

use super::Actor;
use crate::router::replies::Replies;
use crate::router::texts;
use chat::OutboundKind;

/// Files offered under one reply, at most.
const MAX_OFFERED: usize = 10;

impl Actor {
    pub(super) async fn get(&mut self, replies: &Replies<'_>, path: &str) {
        if path.is_empty() {
            return replies.notice(texts::GET_WHICH);
        }
        match self.session.file(path).await {
            Ok((name, bytes)) => {
                info!(chat = %self.chat, bytes = bytes.len(), "file sent");
                replies.file(name, bytes);
            }
            Err(refusal) => replies.notice(texts::nothing_sent(&refusal)),
        }
    }

    /// Offers the files the turn wrote that its reply names, each with its `/get` (a
    /// button where the platform has them).
    pub(super) fn offer_files(&self, replies: &Replies<'_>, changed: &[String], reply: &str) {
        let Ok(folder) = self.session.folder() else {
            return;
        };
        let offered = named_files(&folder, changed, reply);
        if offered.is_empty() {
            return;
        }
        replies.choices(texts::files_offered(&offered), "get", offered);
    }

    /// `/last`: Codex's newest answer in the chat, sent again.
    pub(super) async fn send_last_answer(&self, replies: &Replies<'_>) {
        match self.session.last_answer().await {
            Ok(Some(answer)) => replies.send(OutboundKind::Reply(answer)),
            Ok(None) => replies.notice(texts::NO_LAST_ANSWER),
            Err(error) => {
                warn!(chat = %self.chat, %error, "could not read the last answer");
                replies.notice(texts::LAST_ANSWER_UNREADABLE);
            }
        }
    }

    /// `/diff`: the last turn's changes as a `.diff` file.
    pub(super) async fn send_diff(&self, replies: &Replies<'_>) {
        match self.session.last_diff().await {
            Ok(Some(diff)) => replies.file("last-turn.diff".into(), diff.into_bytes()),
            Ok(None) => replies.notice(texts::NO_DIFF),
            Err(error) => {
                warn!(chat = %self.chat, %error, "could not read the last diff");
                replies.notice(texts::DIFF_UNREADABLE);
            }
        }
    }
}

/// The files of `changed` (absolute) inside `folder` that `reply` names, by their path in
/// the folder or their file name; as paths relative to the folder.
fn named_files(folder: &Path, changed: &[String], reply: &str) -> Vec<String> {
    changed
        .iter()
        .filter_map(|path| Path::new(path).strip_prefix(folder).ok())
        .filter(|relative| {
            let name = relative.file_name().map(|n| n.to_string_lossy());
            let named = |text: &str| !text.is_empty() && reply.contains(text);
            named(&relative.to_string_lossy()) || name.is_some_and(|name| named(&name))
        })
        .map(|relative| relative.to_string_lossy().into_owned())
        .take(MAX_OFFERED)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offers_the_changed_files_the_reply_names() {
        let folder = Path::new("/work/chat");
        let changed = [
            "/work/chat/src/main.rs".to_owned(),
            "/work/chat/notes.txt".to_owned(),
            "/work/chat/untold.txt".to_owned(),
            "/etc/outside.conf".to_owned(),
        ];
        let reply = "I fixed main.rs and wrote notes.txt; see also outside.conf.";
        assert_eq!(
            named_files(folder, &changed, reply),
            ["src/main.rs", "notes.txt"]
        );
        assert!(named_files(folder, &changed, "Done.").is_empty());
    }
}
