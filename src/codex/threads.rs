//! The threads of this Codex home (`thread/list`): the chat's own, other chats', and those
//! started in the Codex CLI or an IDE on the same machine.

use serde::Deserialize;
use serde_json::json;

use super::error::CodexError;
use super::process::AppServer;

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
}
