//! A turn's reply that names files Codex wrote in that turn offers them, each as a `/get`
//! button.

use std::path::Path;

use super::Actor;
use crate::commands::ChatCommand;
use crate::commands::get::Get;
use crate::router::replies::Replies;

/// Files offered under one reply, at most.
const MAX_OFFERED: usize = 10;

impl Actor {
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
        replies.choices(files_offered(&offered), &Get::SPEC, offered);
    }
}

fn files_offered(paths: &[String]) -> String {
    let hints: Vec<String> = paths.iter().map(|path| format!("/get {path}")).collect();
    format!("Files from this turn:\n{}", hints.join("\n"))
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
