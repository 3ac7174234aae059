//! Other threads of this Codex home: listed for `/threads`, and attached with `/resume`
//! ("continue here what you started in your terminal"); and the chat's own thread
//! forked (`/fork`), its last turn taken back (`/undo`), and named (`/name`).

use tracing::info;

use super::{Session, SessionError};
use codex::{LastTurn, ThreadSummary};
use store::RetireReason;

/// How many of the most recent threads `/resume` searches for an id prefix.
const SEARCHED_PAGES: usize = 10;
const SEARCH_PAGE: u32 = 50;

/// What `/undo` did.
#[derive(Debug, PartialEq, Eq)]
pub enum Undo {
    NoThread,
    NoTurn,
    Undone(LastTurn),
}

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
            // Pages can overlap when a thread is updated between them.
            let fresh: Vec<_> = page
                .data
                .into_iter()
                .filter(|t| {
                    t.id.starts_with(id) && !found.iter().any(|f: &ThreadSummary| f.id == t.id)
                })
                .collect();
            found.extend(fresh);
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

    /// Moves the chat to a copy of its thread, context and all; the old thread stays
    /// in the history. Returns the old id and the copy; `None` if the chat has no thread.
    pub async fn fork(&mut self) -> Result<Option<(String, ThreadSummary)>, SessionError> {
        let Some(thread_id) = self.live_thread().await? else {
            return Ok(None);
        };
        let fork = self.server().await?.fork_thread(&thread_id).await?;
        self.switch_thread(&fork).await?;
        info!(chat = %self.chat, from = thread_id, thread_id = fork.id, "thread forked");
        Ok(Some((thread_id, fork)))
    }

    /// Takes the thread's last turn out of its context (files stay as they are).
    pub async fn undo(&mut self) -> Result<Undo, SessionError> {
        let Some(thread_id) = self.live_thread().await? else {
            return Ok(Undo::NoThread);
        };
        let server = self.server().await?;
        let Some(last) = server.last_turn(&thread_id).await? else {
            return Ok(Undo::NoTurn);
        };
        server.revert_turn(&thread_id, &last.id).await?;
        info!(chat = %self.chat, thread_id, turn_id = last.id, "last turn undone");
        Ok(Undo::Undone(last))
    }

    /// Names the chat's thread; false if the chat has no thread yet.
    pub async fn name_thread(&mut self, name: &str) -> Result<bool, SessionError> {
        let Some(thread_id) = self.live_thread().await? else {
            return Ok(false);
        };
        self.server().await?.name_thread(&thread_id, name).await?;
        info!(chat = %self.chat, thread_id, "thread named");
        Ok(true)
    }

    /// The name of the chat's live thread, if it has one (for `/status`, which starts
    /// nothing: `None` without a live thread).
    pub async fn live_thread_name(&self) -> Option<String> {
        let thread_id = self.thread_id().filter(|_| self.is_live())?;
        let server = self.live_server()?;
        server.thread_name(thread_id).await.ok().flatten()
    }

    /// The chat's thread, loaded; `None` if it has none yet (one is not started for this).
    async fn live_thread(&mut self) -> Result<Option<String>, SessionError> {
        let stored = self.record().await?.and_then(|r| r.thread_id);
        if stored.is_none() && !self.is_live() {
            return Ok(None);
        }
        self.ensure_thread().await?;
        Ok(self.thread_id().map(str::to_owned))
    }
}
