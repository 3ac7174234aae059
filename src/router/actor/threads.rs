//! `/threads` and `/resume`: the recent threads of this Codex home, and attaching the
//! chat to one of them.

use super::Actor;
use crate::codex::ThreadSummary;
use crate::router::replies::Replies;
use crate::session::ThreadMatch;

/// Threads per `/threads` page.
const PER_PAGE: u32 = 10;
/// Characters of an id shown; `/resume` takes any unique prefix.
const SHORT_ID: usize = 8;

impl Actor {
    /// Page `page` (from 1) of the threads.
    pub(super) async fn threads(&mut self, replies: &Replies<'_>, page: usize) {
        let (threads, more) = match self.session.threads(page - 1, PER_PAGE).await {
            Ok(listed) => listed,
            Err(error) => {
                return replies.notice(format!("Codex did not list its threads: {error}"));
            }
        };
        if threads.is_empty() {
            return replies.notice(format!("No threads on page {page}."));
        }
        let now = super::choices::unix_now();
        let mut lines = vec![format!("Threads, newest first (page {page}):")];
        lines.extend(threads.iter().map(|thread| thread_line(thread, now)));
        lines.push(match more {
            true => format!(
                "/resume ID continues one here; /threads {} shows more.",
                page + 1
            ),
            false => "/resume ID continues one here.".to_owned(),
        });
        replies.notice(lines.join("\n"));
    }

    pub(super) async fn resume(&mut self, replies: &Replies<'_>, id: &str) {
        if id.is_empty() {
            return replies.notice("Say which thread: /resume ID (see /threads).");
        }
        let thread = match self.session.find_thread(id).await {
            Ok(ThreadMatch::One(thread)) => thread,
            Ok(ThreadMatch::None) => {
                return replies.notice(format!("No thread {id} found; nothing changed."));
            }
            Ok(ThreadMatch::Several(ids)) => {
                return replies.notice(format!(
                    "{id} matches several threads ({}); give more of the id.",
                    ids.join(", ")
                ));
            }
            Err(error) => {
                return replies.notice(format!("Codex did not list its threads: {error}"));
            }
        };
        match self.session.switch_thread(&thread).await {
            Ok(()) => replies.notice(format!(
                "This chat continues thread {} ({}) from the next message on.",
                thread.id,
                title(&thread)
            )),
            Err(error) => self.report(replies, &error),
        }
    }
}

/// "019a2b3c  fix the parser  2 h ago  /home/me/app".
fn thread_line(thread: &ThreadSummary, now: i64) -> String {
    let short: String = thread.id.chars().take(SHORT_ID).collect();
    let age = super::choices::duration_words((now - thread.updated_at).max(0));
    format!("{short}  {}  {age} ago  {}", title(thread), thread.cwd)
}

/// The thread's name, else the first words of its first message.
fn title(thread: &ThreadSummary) -> String {
    let text = thread.name.as_deref().unwrap_or(&thread.preview);
    let words: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match words.chars().count() > 48 {
        true => format!("{}…", words.chars().take(47).collect::<String>()),
        false if words.is_empty() => "(no messages)".into(),
        false => words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_line_shows_short_id_title_age_and_folder() {
        let thread = ThreadSummary {
            id: "019a2b3c-dead-beef".into(),
            preview: "read file\nnotes.txt please and then tell me everything about what it says"
                .into(),
            name: None,
            updated_at: 1_000,
            cwd: "/w/app".into(),
        };
        assert_eq!(
            thread_line(&thread, 1_000 + 7_800),
            "019a2b3c  read file notes.txt please and then tell me eve…  2 h 10 min ago  /w/app"
        );
        let named = ThreadSummary {
            name: Some("Parser fix".into()),
            ..thread
        };
        assert_eq!(title(&named), "Parser fix");
    }
}
