//! The threads of this Codex home (`thread/list`): the chat's own, other chats', and those
//! started in the Codex CLI or an IDE on the same machine; one turn of a thread as
//! Codex kept it (`thread/turns/list`); and what a chat does to its thread besides
//! turns: fork it, take its last turn back, name it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::answer::TurnAnswer;
use super::error::CodexError;
use super::process::AppServer;
use super::protocol::{Item, TurnError, TurnStatus};

/// How a turn stands, as the thread's history has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnState {
    pub status: TurnStatus,
    pub error: Option<String>,
    /// Its final answer: the `final_answer` messages, else its last agent message.
    pub answer: String,
}

/// One listed thread.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSummary {
    pub id: String,
    /// Usually the first user message.
    #[serde(default)]
    pub preview: String,
    #[serde(default)]
    pub name: Option<String>,
    /// Unix seconds.
    #[serde(default)]
    pub updated_at: i64,
    #[serde(default)]
    pub cwd: String,
}

/// One page of threads, newest first, and the cursor of the next page.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadPage {
    pub data: Vec<ThreadSummary>,
    pub next_cursor: Option<String>,
}

impl AppServer {
    /// `limit` threads after `cursor`, the most recently updated first.
    pub async fn threads(
        &self,
        limit: u32,
        cursor: Option<&str>,
    ) -> Result<ThreadPage, CodexError> {
        let mut params = json!({"limit": limit, "sortKey": "updated_at", "sortDirection": "desc"});
        if let Some(cursor) = cursor {
            params["cursor"] = json!(cursor);
        }
        let mut page: ThreadPage = self
            .request_within("thread/list", params, super::catalog::QUICK)
            .await?;
        // 0.171 lists a thread once per rollout file, and `thread/revert` (`/undo`) leaves
        // a second one (measured): the newest stands for the thread.
        let mut seen = std::collections::HashSet::new();
        page.data.retain(|thread| seen.insert(thread.id.clone()));
        Ok(page)
    }

    /// The turn `turn_id` of the thread, among its latest, with its items; `None` when
    /// the thread's recent history has no such turn.
    pub async fn turn_state(
        &self,
        thread_id: &str,
        turn_id: &str,
    ) -> Result<Option<TurnState>, CodexError> {
        let params = json!({"threadId": thread_id, "limit": RECENT_TURNS, "itemsView": "full"});
        let page: TurnsPage = self.request("thread/turns/list", params).await?;
        let Some(turn) = page.data.into_iter().find(|turn| turn.id == turn_id) else {
            return Ok(None);
        };
        let mut answer = TurnAnswer::default();
        turn.items.iter().for_each(|item| answer.take(item));
        Ok(Some(TurnState {
            status: turn.status.unwrap_or(TurnStatus::Completed),
            error: turn.error.map(|e| e.message),
            answer: answer.text().unwrap_or_default(),
        }))
    }
}

/// A page of `thread/turns/list`.
#[derive(Deserialize)]
struct TurnsPage {
    data: Vec<StoredTurn>,
}

/// A turn as the thread's history keeps it (`itemsView: "full"`).
#[derive(Deserialize)]
struct StoredTurn {
    id: String,
    #[serde(default)]
    status: Option<TurnStatus>,
    #[serde(default)]
    error: Option<TurnError>,
    #[serde(default, deserialize_with = "items")]
    items: Vec<Item>,
}

/// Items as the live notifications carry them.
fn items<'de, D: serde::Deserializer<'de>>(input: D) -> Result<Vec<Item>, D::Error> {
    let items = Vec::<Value>::deserialize(input)?;
    Ok(items.iter().map(Item::parse).collect())
}

/// A thread's latest turn: its id and what the person asked in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LastTurn {
    pub id: String,
    pub asked: String,
}

#[derive(Deserialize)]
struct ThreadReply {
    thread: ThreadSummary,
}

impl AppServer {
    /// A new thread holding a copy of `thread_id`'s history (`thread/fork`, measured:
    /// its next request carries the whole context); the original stays as it was.
    pub async fn fork_thread(&self, thread_id: &str) -> Result<ThreadSummary, CodexError> {
        let params = json!({"threadId": thread_id});
        let reply: ThreadReply = self.request("thread/fork", params).await?;
        Ok(reply.thread)
    }

    /// The thread's latest turn, if it has one.
    pub async fn last_turn(&self, thread_id: &str) -> Result<Option<LastTurn>, CodexError> {
        let params = json!({"threadId": thread_id, "limit": 1, "sortDirection": "desc",
            "itemsView": "full"});
        let page: TurnsPage = self.request("thread/turns/list", params).await?;
        let Some(turn) = page.data.into_iter().next() else {
            return Ok(None);
        };
        let asked = turn.items.iter().filter_map(|item| match item {
            Item::UserMessage { text } => Some(text.as_str()),
            _ => None,
        });
        let asked = asked.collect::<Vec<_>>().join(" ");
        Ok(Some(LastTurn { id: turn.id, asked }))
    }

    /// Takes `turn_id` and every later turn out of the thread's context
    /// (`thread/revert`); files the turns changed stay as they are.
    pub async fn revert_turn(&self, thread_id: &str, turn_id: &str) -> Result<(), CodexError> {
        let params = json!({"threadId": thread_id, "beforeTurnId": turn_id});
        let _: Value = self.request("thread/revert", params).await?;
        Ok(())
    }

    /// Names the thread (`thread/name/set`); `thread/list` and `thread/read` carry it.
    pub async fn name_thread(&self, thread_id: &str, name: &str) -> Result<(), CodexError> {
        let params = json!({"threadId": thread_id, "name": name});
        let _: Value = self
            .request_within("thread/name/set", params, super::catalog::QUICK)
            .await?;
        Ok(())
    }

    /// The thread's name, if it has one (`thread/read` without its turns).
    pub async fn thread_name(&self, thread_id: &str) -> Result<Option<String>, CodexError> {
        let params = json!({"threadId": thread_id, "includeTurns": false});
        let reply: ThreadReply = self
            .request_within("thread/read", params, super::catalog::QUICK)
            .await?;
        Ok(reply.thread.name)
    }
}

/// Turns read back to find one that ended while nobody listened.
const RECENT_TURNS: u32 = 5;
