//! `/threads [PAGE]`: the recent threads of this Codex home, the chat's own and other
//! chats', and those started in the Codex CLI or an IDE on the same machine.

use super::{Argument, ChatCommand, Spec};
use crate::clock::unix_now;
use crate::router::{Actor, Replies, texts};

/// Threads per page.
const PER_PAGE: u32 = 10;
/// Least characters of an id shown; `/resume` takes any unique prefix. Ids begin with
/// their time (UUID v7), so threads started close together need more to tell apart.
const SHORT_ID: usize = 8;

/// How much of each id tells the listed threads apart: at least [`SHORT_ID`] characters.
fn short_id_length(ids: &[&str]) -> usize {
    let longest = ids.iter().map(|id| id.len()).max().unwrap_or(SHORT_ID);
    let distinct = |length: usize| {
        let prefixes: std::collections::HashSet<&str> =
            ids.iter().map(|id| &id[..length.min(id.len())]).collect();
        prefixes.len() == ids.len()
    };
    (SHORT_ID..longest).find(|&length| distinct(length)).unwrap_or(longest)
}

/// Also `/resume`'s, which looks its thread up in the list.
pub(super) fn threads_unlisted(error: &impl std::fmt::Display) -> String {
    format!("Codex did not list its threads: {error}")
}

fn no_threads_on(page: usize) -> String {
    format!("No threads on page {page}.")
}

/// Page `page` of the threads, a line each, and how to go on.
fn thread_listing(page: usize, lines: &[String], more: bool) -> String {
    let next = match more {
        true => format!(
            "/resume ID continues one here; /threads {} shows more.",
            page + 1
        ),
        false => "/resume ID continues one here.".to_owned(),
    };
    format!(
        "Threads, newest first (page {page}):\n{}\n{next}",
        lines.join("\n")
    )
}

/// "019a2b3c  fix the parser  2 h ago  /home/me/app".
fn thread_line(thread: &codex::ThreadSummary, now: i64, short_id: usize) -> String {
    let short: String = thread.id.chars().take(short_id).collect();
    let age = texts::duration_words((now - thread.updated_at).max(0));
    format!(
        "{short}  {}  {age} ago  {}",
        texts::thread_title(thread),
        thread.cwd
    )
}

/// The page, from 1 (the newest).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Threads(pub usize);

impl ChatCommand for Threads {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "page",
            about: "Which page of threads (1 is the newest)",
            shown: "[PAGE]",
        }),
        ..Spec::plain(
            "threads",
            "Recent Codex threads on this machine",
            "recent Codex threads here, the terminal's and IDE's included",
        )
    };

    fn parse(page: &str) -> Result<Self, String> {
        match page {
            "" => Ok(Threads(1)),
            page => match page.parse::<usize>() {
                Ok(page) if page >= 1 => Ok(Threads(page)),
                _ => Err(format!("/threads takes a page number, not {page:?}.")),
            },
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let page = self.0;
        let (threads, more) = match chat.session.threads(page - 1, PER_PAGE).await {
            Ok(listed) => listed,
            Err(error) => return replies.notice(threads_unlisted(&error)),
        };
        if threads.is_empty() {
            return replies.notice(no_threads_on(page));
        }
        let now = unix_now();
        let ids: Vec<&str> = threads.iter().map(|t| t.id.as_str()).collect();
        let short_id = short_id_length(&ids);
        let lines: Vec<String> = threads
            .iter()
            .map(|thread| thread_line(thread, now, short_id))
            .collect();
        replies.notice(thread_listing(page, &lines, more));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codex::ThreadSummary;

    #[test]
    fn a_page_is_a_number_from_one() {
        assert_eq!(Threads::parse(""), Ok(Threads(1)));
        assert_eq!(Threads::parse("2"), Ok(Threads(2)));
        let refused = "/threads takes a page number, not \"0\".";
        assert_eq!(Threads::parse("0"), Err(refused.into()));
    }

    #[test]
    fn ids_are_shown_as_long_as_it_takes_to_tell_them_apart() {
        let close = ["01a24ef0-3f40-7482", "01a24ef0-3d6f-7e72", "01b00000-0000-0000"];
        assert_eq!(short_id_length(&close), 11);
        assert_eq!(short_id_length(&["019a2b3c-dead", "01ffffff-beef"]), 8);
        assert_eq!(short_id_length(&[]), 8);
    }

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
            thread_line(&thread, 1_000 + 7_800, 8),
            "019a2b3c  read file notes.txt please and then tell me eve…  2 h 10 min ago  /w/app"
        );
        let named = ThreadSummary {
            name: Some("Parser fix".into()),
            ..thread
        };
        assert_eq!(texts::thread_title(&named), "Parser fix");
    }
}
