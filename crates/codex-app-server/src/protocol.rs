//! The subset of the app-server protocol (v2, codex 0.171) that the gateway uses: threads,
//! turns, items and notifications (approvals are in `approvals.rs`).

use serde::{Deserialize, Serialize};

use super::approvals::ChangedFile;
use super::catalog::TurnOverrides;
use serde_json::Value;

/// When Codex asks a person before it acts (`approvalPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ApprovalPolicy {
    Never,
    OnRequest,
    Untrusted,
}

/// What Codex's commands may touch (`sandbox`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum SandboxMode {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

/// The account Codex would use (`account/read`).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountState {
    /// A ChatGPT or API-key login Codex has stored; `None` when there is none.
    #[serde(default)]
    pub account: Option<Value>,
    /// Whether the configured model provider needs an OpenAI login.
    #[serde(default)]
    pub requires_openai_auth: bool,
}

/// Settings a thread is started or resumed with.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ThreadSettings {
    pub cwd: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    pub approval_policy: ApprovalPolicy,
    pub sandbox: SandboxMode,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadResumeParams<'a> {
    pub thread_id: &'a str,
    /// Without it the reply carries the whole history (over 10 MiB seen).
    pub exclude_turns: bool,
    #[serde(flatten)]
    pub settings: &'a ThreadSettings,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ThreadReply {
    pub thread: ThreadInfo,
    #[serde(default)]
    cwd: Value,
    #[serde(default)]
    model: Value,
    #[serde(default)]
    reasoning_effort: Value,
    #[serde(default)]
    approval_policy: Value,
    #[serde(default)]
    sandbox: Value,
}

/// A thread Codex started or resumed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenedThread {
    pub id: String,
    /// What it runs with, as Codex reports it (a loaded thread keeps its own, whatever a
    /// resume asked); a setting Codex names in a way the gateway cannot read is `None`,
    /// and the next turn says what it should be.
    pub runs_with: TurnOverrides,
}

impl From<ThreadReply> for OpenedThread {
    fn from(reply: ThreadReply) -> Self {
        fn read<T: serde::de::DeserializeOwned>(value: Value) -> Option<T> {
            serde_json::from_value(value).ok()
        }
        OpenedThread {
            id: reply.thread.id,
            runs_with: TurnOverrides {
                model: read(reply.model),
                effort: read(reply.reasoning_effort),
                cwd: read(reply.cwd),
                approval_policy: read(reply.approval_policy),
                sandbox_policy: read(reply.sandbox),
            },
        }
    }
}

#[derive(Debug, Deserialize)]
pub(crate) struct ThreadInfo {
    pub id: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TurnStartParams<'a> {
    pub thread_id: &'a str,
    pub input: &'a [UserInput<'a>],
    #[serde(flatten)]
    pub overrides: &'a TurnOverrides,
}

/// One piece of what a person gives a turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum UserInput<'a> {
    Text {
        text: &'a str,
    },
    /// An image file on the app-server's machine.
    LocalImage {
        path: &'a std::path::Path,
    },
}

#[derive(Debug, Deserialize)]
pub(crate) struct TurnReply {
    pub turn: TurnInfo,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TurnInfo {
    pub id: String,
    #[serde(default)]
    pub status: Option<TurnStatus>,
    #[serde(default)]
    pub error: Option<TurnError>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum TurnStatus {
    Completed,
    Interrupted,
    Failed,
    InProgress,
}

#[derive(Debug, Clone, Deserialize)]
pub(crate) struct TurnError {
    pub message: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenCounts {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub total_tokens: i64,
}

/// A thread's token usage as `thread/tokenUsage/updated` reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenUsage {
    /// Sum over the thread's whole life.
    pub total: TokenCounts,
    /// The latest model request: how full the context window is now.
    pub last: TokenCounts,
    pub model_context_window: Option<i64>,
}

/// A finished item of a turn (`item/completed` is the source of truth).
#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// What a person (or another client) asked, its text parts joined.
    UserMessage {
        text: String,
    },
    AgentMessage {
        text: String,
        phase: Phase,
    },
    CommandExecution {
        command: String,
        exit_code: Option<i64>,
    },
    ContextCompaction,
    /// A review's findings (`exitedReviewMode`): the review turn's answer.
    Review {
        text: String,
    },
    /// Files Codex wrote (a `fileChange` that was applied), as absolute paths.
    FileChange {
        paths: Vec<String>,
    },
    Other {
        kind: String,
    },
}

/// What an agent message is for (`phase`): narration between tools, or the turn's answer.
/// Older models send none: `Unknown`, and the turn's last message is its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Commentary,
    FinalAnswer,
    Unknown,
}

/// One step of Codex's plan (`turn/plan/updated`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct PlanStep {
    pub step: String,
    pub status: PlanStatus,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum PlanStatus {
    Pending,
    InProgress,
    Completed,
}

/// The notifications the gateway acts on, each already tied to its thread.
#[derive(Debug, Clone, PartialEq)]
pub enum Notification {
    TurnStarted {
        turn_id: String,
    },
    TurnCompleted {
        turn_id: String,
        status: TurnStatus,
        error: Option<String>,
    },
    /// An item begins: a command is known before it runs.
    ItemStarted {
        turn_id: String,
        item: Item,
    },
    ItemCompleted {
        turn_id: String,
        item: Item,
    },
    PlanUpdated {
        turn_id: String,
        plan: Vec<PlanStep>,
    },
    /// The turn's unified diff so far.
    DiffUpdated {
        turn_id: String,
        diff: String,
    },
    /// Any other news of the thread: Codex is still at work on it.
    Activity,
    AgentMessageDelta {
        turn_id: String,
        delta: String,
    },
    TokenUsage(TokenUsage),
    /// A request Codex made of its clients was answered (by any of them: the first answer
    /// wins); every client of the thread hears it.
    RequestResolved {
        request_id: Value,
    },
    /// A model or transport error; `will_retry` false means the turn is failing.
    Error {
        message: String,
        will_retry: bool,
    },
    /// The account's usage limit stopped the turn (an `error` whose `codexErrorInfo` is
    /// `usageLimitExceeded`; the turn then completes as failed). `resets_at` (unix
    /// seconds) is the time its message names, read in this machine's zone.
    UsageLimitReached {
        turn_id: String,
        resets_at: Option<i64>,
    },
    /// Codex answers this turn with another model.
    ModelRerouted {
        turn_id: String,
        to_model: String,
    },
}

/// Reads the thread id a notification or server request belongs to, if any.
pub(crate) fn thread_id_of(params: &Value) -> Option<&str> {
    params.get("threadId").and_then(Value::as_str)
}

/// An `error` notification's `codexErrorInfo`, when it is one of the plain kinds.
fn error_info(params: &Value) -> Option<&str> {
    params.pointer("/error/codexErrorInfo")?.as_str()
}

pub(crate) fn text(params: &Value, key: &str) -> Option<String> {
    params.get(key).and_then(Value::as_str).map(str::to_owned)
}

impl Notification {
    /// The notifications the gateway reads; one of these that does not parse is news.
    const READ: [&'static str; 11] = [
        "turn/started",
        "turn/completed",
        "item/started",
        "item/completed",
        "turn/plan/updated",
        "turn/diff/updated",
        "item/agentMessage/delta",
        "thread/tokenUsage/updated",
        "error",
        "model/rerouted",
        "serverRequest/resolved",
    ];

    /// Whether the gateway reads `method` (and ignores every other notification).
    pub(crate) fn reads(method: &str) -> bool {
        Self::READ.contains(&method)
    }

    /// Parses a notification of a thread: one the gateway reads, or `Activity` for the many
    /// it only counts as a sign of life; `None` for a read one it cannot parse.
    pub(crate) fn of_thread(method: &str, params: &Value) -> Option<Self> {
        match Self::parse(method, params) {
            None if !Self::reads(method) => Some(Notification::Activity),
            parsed => parsed,
        }
    }

    /// Parses a known notification; `None` for the many the gateway ignores, and for a
    /// known one it cannot read.
    pub(crate) fn parse(method: &str, params: &Value) -> Option<Self> {
        let turn_id = || text(params, "turnId").unwrap_or_default();
        match method {
            "turn/started" | "turn/completed" => {
                let turn: TurnInfo = serde_json::from_value(params.get("turn")?.clone()).ok()?;
                Some(if method == "turn/started" {
                    Notification::TurnStarted { turn_id: turn.id }
                } else {
                    Notification::TurnCompleted {
                        turn_id: turn.id,
                        status: turn.status.unwrap_or(TurnStatus::Completed),
                        error: turn.error.map(|e| e.message),
                    }
                })
            }
            "item/started" => Some(Notification::ItemStarted {
                turn_id: turn_id(),
                item: Item::parse(params.get("item")?),
            }),
            "item/completed" => Some(Notification::ItemCompleted {
                turn_id: turn_id(),
                item: Item::parse(params.get("item")?),
            }),
            "turn/plan/updated" => Some(Notification::PlanUpdated {
                turn_id: turn_id(),
                plan: serde_json::from_value(params.get("plan")?.clone()).ok()?,
            }),
            "turn/diff/updated" => Some(Notification::DiffUpdated {
                turn_id: turn_id(),
                diff: text(params, "diff")?,
            }),
            "item/agentMessage/delta" => Some(Notification::AgentMessageDelta {
                turn_id: turn_id(),
                delta: text(params, "delta")?,
            }),
            "thread/tokenUsage/updated" => {
                serde_json::from_value(params.get("tokenUsage")?.clone())
                    .ok()
                    .map(Notification::TokenUsage)
            }
            "error" if error_info(params) == Some("usageLimitExceeded") => {
                let message = params.pointer("/error/message").and_then(Value::as_str);
                Some(Notification::UsageLimitReached {
                    turn_id: turn_id(),
                    resets_at: message.and_then(super::usage::limit_resets_at_here),
                })
            }
            "error" => Some(Notification::Error {
                message: params
                    .pointer("/error/message")
                    .and_then(Value::as_str)
                    .unwrap_or("unknown error")
                    .to_owned(),
                will_retry: params
                    .get("willRetry")
                    .and_then(Value::as_bool)
                    .unwrap_or(false),
            }),
            "model/rerouted" => Some(Notification::ModelRerouted {
                turn_id: turn_id(),
                to_model: text(params, "toModel").unwrap_or_default(),
            }),
            "serverRequest/resolved" => Some(Notification::RequestResolved {
                request_id: params.get("requestId")?.clone(),
            }),
            _ => None,
        }
    }
}

impl Item {
    pub(crate) fn parse(item: &Value) -> Self {
        match item.get("type").and_then(Value::as_str).unwrap_or("") {
            "userMessage" => Item::UserMessage {
                text: user_text(item),
            },
            "agentMessage" => Item::AgentMessage {
                text: text(item, "text").unwrap_or_default(),
                phase: match item.get("phase").and_then(Value::as_str) {
                    Some("commentary") => Phase::Commentary,
                    Some("final_answer") => Phase::FinalAnswer,
                    _ => Phase::Unknown,
                },
            },
            "commandExecution" => Item::CommandExecution {
                command: shown_command(item),
                exit_code: item.get("exitCode").and_then(Value::as_i64),
            },
            "contextCompaction" => Item::ContextCompaction,
            "exitedReviewMode" => Item::Review {
                text: text(item, "review").unwrap_or_default(),
            },
            "fileChange" => Item::FileChange {
                paths: match text(item, "status").as_deref() {
                    Some("completed") => changed_files(item)
                        .unwrap_or_default()
                        .into_iter()
                        .filter(|file| file.kind != "delete")
                        .map(|file| file.path)
                        .collect(),
                    _ => Vec::new(),
                },
            },
            other => Item::Other {
                kind: other.to_owned(),
            },
        }
    }
}

/// A `userMessage` item's text parts, joined with spaces (images and the like have none).
fn user_text(item: &Value) -> String {
    let parts = item.get("content").and_then(Value::as_array);
    let texts = parts
        .into_iter()
        .flatten()
        .filter_map(|part| part["text"].as_str());
    texts.collect::<Vec<_>>().join(" ")
}

/// A command as the model wrote it: Codex wraps it (`/bin/bash -c '…'`) in `command`
/// and keeps the original in its one `commandActions` entry.
fn shown_command(item: &Value) -> String {
    let actions = item.get("commandActions").and_then(Value::as_array);
    match actions.map(Vec::as_slice) {
        Some([action]) => text(action, "command"),
        _ => None,
    }
    .or_else(|| text(item, "command"))
    .unwrap_or_default()
}

/// The files of a `fileChange` item (`item/started`), or `None` for other items.
pub(crate) fn changed_files(item: &Value) -> Option<Vec<ChangedFile>> {
    if item.get("type")?.as_str()? != "fileChange" {
        return None;
    }
    let changes = item.get("changes").and_then(Value::as_array);
    Some(
        changes
            .into_iter()
            .flatten()
            .filter_map(|change| {
                Some(ChangedFile {
                    path: text(change, "path")?,
                    kind: change
                        .pointer("/kind/type")
                        .and_then(Value::as_str)
                        .unwrap_or("change")
                        .to_owned(),
                })
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_thread_reply_says_what_the_thread_runs_with() {
        // thread/start's reply as 0.171.0 sends it (the thread's own fields cut short).
        let reply = json!({"thread": {"id": "t1", "cwd": "/w", "turns": []},
            "model": "mock-model", "modelProvider": "mock", "serviceTier": null,
            "cwd": "/w", "runtimeWorkspaceRoots": ["/w"], "instructionSources": [],
            "approvalPolicy": "never", "approvalsReviewer": "user",
            "sandbox": {"type": "workspaceWrite", "writableRoots": [], "networkAccess": false},
            "activePermissionProfile": null, "reasoningEffort": null});
        let opened = OpenedThread::from(serde_json::from_value::<ThreadReply>(reply).unwrap());
        assert_eq!(opened.id, "t1");
        assert_eq!(
            opened.runs_with,
            TurnOverrides {
                model: Some("mock-model".into()),
                effort: None,
                cwd: Some("/w".into()),
                approval_policy: Some(ApprovalPolicy::Never),
                sandbox_policy: Some(crate::SandboxPolicy::WorkspaceWrite),
            }
        );
        // A policy the gateway has no name for is unknown, not an error.
        let odd = json!({"thread": {"id": "t2"}, "approvalPolicy": {"granular": {}},
            "sandbox": {"type": "externalSandbox"}, "reasoningEffort": "high"});
        let opened = OpenedThread::from(serde_json::from_value::<ThreadReply>(odd).unwrap());
        assert_eq!(
            opened.runs_with,
            TurnOverrides {
                effort: Some("high".into()),
                ..TurnOverrides::default()
            }
        );
    }

    #[test]
    fn a_usage_limit_error_is_told_apart() {
        // As app-server 0.171.0 sends it for the model server's 429 `usage_limit_reached`.
        let params = json!({"error": {"message": "You’ve hit your usage limit. … try again at 4:22 AM.",
            "codexErrorInfo": "usageLimitExceeded", "additionalDetails": null},
            "willRetry": false, "threadId": "t", "turnId": "u1"});
        assert_eq!(
            Notification::parse("error", &params),
            Some(Notification::UsageLimitReached {
                turn_id: "u1".into(),
                resets_at: super::super::usage::limit_resets_at_here(
                    "You’ve hit your usage limit. … try again at 4:22 AM."
                ),
            })
        );
        let other =
            json!({"error": {"message": "boom", "codexErrorInfo": "other"}, "willRetry": false});
        assert!(matches!(
            Notification::parse("error", &other),
            Some(Notification::Error { .. })
        ));
    }

    #[test]
    fn parses_turn_completed_with_error() {
        let params = json!({"threadId":"t","turn":{"id":"u1","items":[],"status":"failed","error":{"message":"boom"}}});
        assert_eq!(
            Notification::parse("turn/completed", &params),
            Some(Notification::TurnCompleted {
                turn_id: "u1".into(),
                status: TurnStatus::Failed,
                error: Some("boom".into())
            })
        );
    }

    #[test]
    fn parses_items_and_usage() {
        let params = json!({"threadId":"t","turnId":"u","item":{"type":"commandExecution","id":"c","command":"/bin/bash -c 'cat x'","exitCode":0,"status":"completed"}});
        assert_eq!(
            Notification::parse("item/completed", &params),
            Some(Notification::ItemCompleted {
                turn_id: "u".into(),
                item: Item::CommandExecution {
                    command: "/bin/bash -c 'cat x'".into(),
                    exit_code: Some(0)
                }
            })
        );
        let usage = json!({"threadId":"t","turnId":"u","tokenUsage":{
            "total":{"inputTokens":10,"cachedInputTokens":0,"outputTokens":5,"reasoningOutputTokens":0,"totalTokens":15},
            "last":{"inputTokens":4,"cachedInputTokens":0,"outputTokens":1,"reasoningOutputTokens":0,"totalTokens":5},
            "modelContextWindow":1000}});
        let Some(Notification::TokenUsage(usage)) =
            Notification::parse("thread/tokenUsage/updated", &usage)
        else {
            panic!("usage not parsed");
        };
        assert_eq!(usage.total.total_tokens, 15);
        assert_eq!(usage.last.total_tokens, 5);
        assert_eq!(usage.model_context_window, Some(1000));
    }

    #[test]
    fn ignores_unknown_notifications() {
        assert_eq!(
            Notification::parse("account/rateLimits/updated", &json!({})),
            None
        );
        assert_eq!(
            Notification::parse("turn/completed", &json!({"threadId":"t"})),
            None
        );
    }

    #[test]
    fn serializes_params_as_codex_expects() {
        let settings = ThreadSettings {
            cwd: "/w".into(),
            model: None,
            approval_policy: ApprovalPolicy::OnRequest,
            sandbox: SandboxMode::DangerFullAccess,
        };
        let resume = ThreadResumeParams {
            thread_id: "t",
            exclude_turns: true,
            settings: &settings,
        };
        assert_eq!(
            serde_json::to_value(&resume).unwrap(),
            json!({"threadId":"t","excludeTurns":true,"cwd":"/w","approvalPolicy":"on-request","sandbox":"danger-full-access"})
        );
        let turn = TurnStartParams {
            thread_id: "t",
            input: &[UserInput::Text { text: "hi" }],
            overrides: &TurnOverrides::default(),
        };
        assert_eq!(
            serde_json::to_value(&turn).unwrap(),
            json!({"threadId":"t","input":[{"type":"text","text":"hi"}]})
        );
        assert_eq!(
            serde_json::to_value(crate::ApprovalDecision::AcceptForSession).unwrap(),
            json!("acceptForSession")
        );
    }
}
