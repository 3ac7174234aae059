//! The threads of this Codex home (`thread/list`): the chat's own, other chats', and those
//! started in the Codex CLI or an IDE on the same machine; one turn of a thread as
//! Codex kept it (`thread/turns/list`); and what a chat does to its thread besides
//! turns: fork it, take its last turn back, name it.

use serde::Deserialize;
use serde_json::{Value, json};

use super::error::CodexError;
use super::process::AppServer;
use super::protocol::{TurnInfo, TurnStatus};

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
        self.request_within("thread/list", params, super::catalog::QUICK)
            .await
    }

    /// The turn `turn_id` of the thread, among its latest, with its items; `None` when
    /// the thread's recent history has no such turn.
    pub async fn turn_state(
        &self,
        thread_id: &str,
        turn_id: &str,
    ) -> Result<Option<TurnState>, CodexError> {
        let params = json!({"threadId": thread_id, "limit": RECENT_TURNS, "itemsView": "full"});
        let page: Value = self.request("thread/turns/list", params).await?;
        let turns = page["data"].as_array().map_or(&[][..], Vec::as_slice);
        let Some(turn) = turns.iter().find(|turn| turn["id"] == turn_id) else {
            return Ok(None);
        };
        let info: TurnInfo =
            serde_json::from_value(turn.clone()).map_err(|error| CodexError::Protocol {
                method: "thread/turns/list".into(),
                message: error.to_string(),
            })?;
        Ok(Some(TurnState {
            status: info.status.unwrap_or(TurnStatus::Completed),
            error: info.error.map(|e| e.message),
            answer: final_answer(turn["items"].as_array().map_or(&[][..], Vec::as_slice)),
        }))
    }
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
        let page: Value = self.request("thread/turns/list", params).await?;
        let Some(turn) = page["data"].get(0) else {
            return Ok(None);
        };
        let items = turn["items"].as_array().map_or(&[][..], Vec::as_slice);
        let asked = items
            .iter()
            .filter(|item| item["type"] == "userMessage")
            .flat_map(|item| item["content"].as_array().into_iter().flatten())
            .filter_map(|part| part["text"].as_str())
            .collect::<Vec<_>>()
            .join(" ");
        Ok(turn["id"].as_str().map(|id| LastTurn {
            id: id.to_owned(),
            asked,
        }))
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

/// The answer among a turn's items: its `final_answer` messages, else its last agent
/// message (models that send no phase).
fn final_answer(items: &[Value]) -> String {
    let messages: Vec<(&str, Option<&str>)> = items
        .iter()
        .filter(|item| item["type"] == "agentMessage")
        .filter_map(|item| Some((item["text"].as_str()?, item["phase"].as_str())))
        .collect();
    let finals: Vec<&str> = messages
        .iter()
        .filter(|(_, phase)| *phase == Some("final_answer"))
        .map(|(text, _)| *text)
        .collect();
    match finals.is_empty() {
        false => finals.join("\n\n"),
        true => messages
            .last()
            .map_or_else(String::new, |(text, _)| (*text).to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_answer_is_the_final_messages_else_the_last() {
        let item = |text: &str, phase: Option<&str>| json!({"type": "agentMessage", "text": text, "phase": phase});
        let phased = [
            item("Looking.", Some("commentary")),
            json!({"type": "commandExecution"}),
            item("Done.", Some("final_answer")),
        ];
        assert_eq!(final_answer(&phased), "Done.");
        let plain = [item("First.", None), item("Last.", None)];
        assert_eq!(final_answer(&plain), "Last.");
        assert_eq!(final_answer(&[]), "");
    }
}
