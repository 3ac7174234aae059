//! Other threads of this Codex home: listed for `/threads`, and attached with `/resume`
//! ("continue here what you started in your terminal").

use tracing::info;

use super::{Session, SessionError};
use crate::codex::ThreadSummary;
use crate::store::RetireReason;

/// How many of the most recent threads `/resume` searches for an id prefix.
const SEARCHED_PAGES: usize = 10;
const SEARCH_PAGE: u32 = 50;

/// What an id (or a prefix of one) names.
#[derive(Debug, PartialEq, Eq)]
pub enum ThreadMatch {
    One(ThreadSummary),
    None,
    Several(Vec<String>),
}

impl Session {
    /// Page `page` (from 0) of the threads, `per_page` each, newest first; and whether
    /// there are more.
    pub async fn threads(
        &self,
        page: usize,
        per_page: u32,
    ) -> Result<(Vec<ThreadSummary>, bool), SessionError> {
        let server = self.server().await?;
        let mut cursor: Option<String> = None;
        for _ in 0..page {
            cursor = server
                .threads(per_page, cursor.as_deref())
                .await?
                .next_cursor;
            if cursor.is_none() {
                return Ok((Vec::new(), false));
            }
        }
        let listed = server.threads(per_page, cursor.as_deref()).await?;
        Ok((listed.data, listed.next_cursor.is_some()))
    }

    /// The thread whose id is `id` or starts with it, among the most recent ones.
    pub async fn find_thread(&self, id: &str) -> Result<ThreadMatch, SessionError> {
        let server = self.server().await?;
        let mut found = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..SEARCHED_PAGES {
            let page = server.threads(SEARCH_PAGE, cursor.as_deref()).await?;
            if let Some(exact) = page.data.iter().find(|t| t.id == id) {
                return Ok(ThreadMatch::One(exact.clone()));
            }
            found.extend(page.data.into_iter().filter(|t| t.id.starts_with(id)));
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        Ok(match found.len() {
            0 => ThreadMatch::None,
            1 => ThreadMatch::One(found.remove(0)),
            _ => ThreadMatch::Several(found.into_iter().map(|t| t.id).collect()),
        })
    }

    /// Makes `thread` the chat's thread (the old one goes to the history); it is resumed,
    /// with its context, on the next message.
    pub async fn switch_thread(&mut self, thread: &ThreadSummary) -> Result<(), SessionError> {
        self.unload().await;
        self.replacing = None;
        let server = self.placement().await?;
        let old = self.record().await?.and_then(|r| r.thread_id);
        let replaced = old
            .as_deref()
            .filter(|old| *old != thread.id)
            .map(|old| (old, RetireReason::New));
        self.ctx
            .store
            .set_thread(&self.chat, &server, &thread.cwd, &thread.id, replaced)
            .await?;
        info!(chat = %self.chat, thread_id = thread.id, previous = ?old, "thread attached by /resume");
        Ok(())
    }
}
