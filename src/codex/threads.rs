//! The threads of this Codex home (`thread/list`): the chat's own, other chats', and those
//! started in the Codex CLI or an IDE on the same machine; and one turn of a thread as
//! Codex kept it (`thread/turns/list`).

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
