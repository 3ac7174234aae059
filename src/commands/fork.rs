//! `/fork`: the chat goes on in a copy of its thread, context and all; the original
//! stays in `/threads`.

use super::{ChatCommand, Spec};
use crate::router::{Actor, Replies, texts};

fn forked(old: &str, new: &str) -> String {
    format!(
        "Forked: this chat goes on in thread {new}, a copy of {old} with all its context. \
         {old} stays as it was (/threads lists it; /resume {old} goes back)."
    )
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fork;

impl ChatCommand for Fork {
    const SPEC: Spec = Spec::plain(
        "fork",
        "Go on in a copy of this thread",
        "go on in a copy of this chat's thread, context and all; the original stays in /threads",
    );

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Fork)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        match chat.session.fork().await {
            Ok(Some((old, fork))) => replies.notice(forked(&old, &fork.id)),
            Ok(None) => replies.notice(texts::NO_THREAD_YET),
            Err(error) => chat.report(replies, &error),
        }
    }
}
