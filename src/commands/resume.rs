//! `/resume ID`: the chat goes on in a listed thread (the one it leaves stays in the
//! history).

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies, texts};
use crate::session::ThreadMatch;

const RESUME_WHICH: &str = "Say which thread: /resume ID (see /threads).";

fn no_thread(id: &str) -> String {
    format!("No thread {id} found; nothing changed.")
}

fn several_threads(id: &str, ids: &[String]) -> String {
    format!(
        "{id} matches several threads ({}); give more of the id.",
        ids.join(", ")
    )
}

fn resumed(id: &str, title: &str) -> String {
    format!("This chat continues thread {id} ({title}) from the next message on.")
}

/// A thread id, or its first characters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resume(pub String);

impl ChatCommand for Resume {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "id",
            about: "A thread id from /threads, or its first characters",
            shown: "ID",
        }),
        ..Spec::plain(
            "resume",
            "Continue a listed thread in this chat",
            "continue that thread in this chat (the current one stays in the history)",
        )
    };

    fn parse(id: &str) -> Result<Self, String> {
        match id {
            "" => Err(RESUME_WHICH.into()),
            id => Ok(Resume(id.to_owned())),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let id = &self.0;
        let thread = match chat.session.find_thread(id).await {
            Ok(ThreadMatch::One(thread)) => thread,
            Ok(ThreadMatch::None) => return replies.notice(no_thread(id)),
            Ok(ThreadMatch::Several(ids)) => return replies.notice(several_threads(id, &ids)),
            Err(error) => return replies.notice(super::threads::threads_unlisted(&error)),
        };
        match chat.session.switch_thread(&thread).await {
            Ok(()) => replies.notice(resumed(&thread.id, &texts::thread_title(&thread))),
            Err(error) => chat.report(replies, &error),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_needed() {
        assert_eq!(Resume::parse("019a"), Ok(Resume("019a".into())));
        assert_eq!(Resume::parse(""), Err(RESUME_WHICH.into()));
    }
}
