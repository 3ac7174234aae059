//! `/threads` and `/resume`: the recent threads of this Codex home, and attaching the
//! chat to one of them; `/fork`, `/undo` and `/name` of the chat's own thread.

use super::Actor;
use crate::router::replies::Replies;
use crate::router::texts;
use crate::session::{ThreadMatch, Undo};

/// Threads per `/threads` page.
const PER_PAGE: u32 = 10;
/// Characters of an id shown; `/resume` takes any unique prefix.
const SHORT_ID: usize = 8;

impl Actor {
    /// Page `page` (from 1) of the threads.
    pub(super) async fn threads(&mut self, replies: &Replies<'_>, page: usize) {
        let (threads, more) = match self.session.threads(page - 1, PER_PAGE).await {
            Ok(listed) => listed,
            Err(error) => return replies.notice(texts::threads_unlisted(&error)),
        };
        if threads.is_empty() {
            return replies.notice(texts::no_threads_on(page));
        }
        let now = crate::clock::unix_now();
        let lines: Vec<String> = threads
            .iter()
            .map(|thread| texts::thread_line(thread, now, SHORT_ID))
            .collect();
        replies.notice(texts::thread_listing(page, &lines, more));
    }

    pub(super) async fn resume(&mut self, replies: &Replies<'_>, id: &str) {
        if id.is_empty() {
            return replies.notice(texts::RESUME_WHICH);
        }
        let thread = match self.session.find_thread(id).await {
            Ok(ThreadMatch::One(thread)) => thread,
            Ok(ThreadMatch::None) => return replies.notice(texts::no_thread(id)),
            Ok(ThreadMatch::Several(ids)) => {
                return replies.notice(texts::several_threads(id, &ids));
            }
            Err(error) => return replies.notice(texts::threads_unlisted(&error)),
        };
        match self.session.switch_thread(&thread).await {
            Ok(()) => replies.notice(texts::resumed(&thread.id, &texts::thread_title(&thread))),
            Err(error) => self.report(replies, &error),
        }
    }

    pub(super) async fn fork(&mut self, replies: &Replies<'_>) {
        match self.session.fork().await {
            Ok(Some((old, fork))) => replies.notice(texts::forked(&old, &fork.id)),
            Ok(None) => replies.notice(texts::NO_THREAD_YET),
            Err(error) => self.report(replies, &error),
        }
    }

    pub(super) async fn undo(&mut self, replies: &Replies<'_>) {
        match self.session.undo().await {
            Ok(Undo::Undone(last)) => replies.notice(texts::undone(&last.asked)),
            Ok(Undo::NoTurn) => replies.notice(texts::NOTHING_TO_UNDO),
            Ok(Undo::NoThread) => replies.notice(texts::NO_THREAD_YET),
            Err(error) => self.report(replies, &error),
        }
    }

    pub(super) async fn name_thread(&mut self, replies: &Replies<'_>, title: &str) {
        let title: String = title.split_whitespace().collect::<Vec<_>>().join(" ");
        if title.is_empty() {
            return replies.notice(texts::NAME_WHICH);
        }
        match self.session.name_thread(&title).await {
            Ok(true) => replies.notice(texts::named(&title)),
            Ok(false) => replies.notice(texts::NO_THREAD_YET),
            Err(error) => self.report(replies, &error),
        }
    }
}
