//! What Codex asks a person to approve (`item/commandExecution/requestApproval`,
//! `item/fileChange/requestApproval`, `item/permissions/requestApproval`) and the
//! decisions a person can give.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::protocol::text;

/// What kind of action Codex asks a person to approve.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalKind {
    Command,
    FileChange,
    /// More access for the turn or the session: network, folders to read or write.
    Permissions,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ApprovalRequest {
    pub kind: ApprovalKind,
    pub command: Option<String>,
    pub cwd: Option<String>,
    pub reason: Option<String>,
    /// The files a file change touches (from its `item/started`).
    pub files: Vec<ChangedFile>,
    /// A folder outside the workspace the change asks write access to, for the session.
    pub grant_root: Option<String>,
    /// The decisions Codex allows for this request (`availableDecisions`; all when absent).
    pub decisions: Vec<ApprovalDecision>,
    /// For a permissions request: what is asked, one line each ("network access",
    /// "write /srv/data").
    pub permissions: Vec<String>,
}

/// One file of a file change: its path and what happens to it (`add`, `update`, `delete`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChangedFile {
    pub path: String,
    pub kind: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ApprovalDecision {
    Accept,
    AcceptForSession,
    Decline,
    Cancel,
}

impl ApprovalDecision {
    pub const ALL: [ApprovalDecision; 4] = [
        ApprovalDecision::Accept,
        ApprovalDecision::AcceptForSession,
        ApprovalDecision::Decline,
        ApprovalDecision::Cancel,
    ];
}

impl ApprovalRequest {
    /// Parses a server->client approval request; `None` for other server requests.
    /// `files` are those of the file change it names, as its `item/started` listed them.
    pub(crate) fn parse(method: &str, params: &Value, files: Vec<ChangedFile>) -> Option<Self> {
        let kind = match method {
            "item/commandExecution/requestApproval" => ApprovalKind::Command,
            "item/fileChange/requestApproval" => ApprovalKind::FileChange,
            "item/permissions/requestApproval" => ApprovalKind::Permissions,
            _ => return None,
        };
        let (permissions, decisions) = match kind {
            // A grant is for the turn or the session; declining grants nothing.
            ApprovalKind::Permissions => (
                asked_permissions(params.get("permissions").unwrap_or(&Value::Null)),
                vec![
                    ApprovalDecision::Accept,
                    ApprovalDecision::AcceptForSession,
                    ApprovalDecision::Decline,
                ],
            ),
            _ => (Vec::new(), available_decisions(params)),
        };
        Some(ApprovalRequest {
            kind,
            command: text(params, "command"),
            cwd: text(params, "cwd"),
            reason: text(params, "reason"),
            files,
            grant_root: text(params, "grantRoot"),
            decisions,
            permissions,
        })
    }
}

/// A permission profile (`RequestPermissionProfile`) as lines a person reads: network
/// access, then each folder with read or write (`fileSystem.entries`, else the older
/// `read` and `write` lists).
fn asked_permissions(profile: &Value) -> Vec<String> {
    let mut lines = Vec::new();
    if profile.pointer("/network/enabled") == Some(&Value::Bool(true)) {
        lines.push("network access".to_owned());
    }
    let file_system = profile.get("fileSystem").unwrap_or(&Value::Null);
    let entries = file_system.get("entries").and_then(Value::as_array);
    for entry in entries.into_iter().flatten() {
        let access = entry.get("access").and_then(Value::as_str).unwrap_or("?");
        let path = entry.get("path").unwrap_or(&Value::Null);
        let shown = match path.get("type").and_then(Value::as_str) {
            Some("path") => text(path, "path"),
            Some("glob_pattern") => text(path, "pattern"),
            _ => path
                .pointer("/value/kind")
                .and_then(Value::as_str)
                .map(|k| format!("<{k}>")),
        };
        lines.push(format!("{access} {}", shown.unwrap_or_else(|| "?".into())));
    }
    if entries.is_none() {
        for access in ["read", "write"] {
            let paths = file_system.get(access).and_then(Value::as_array);
            for path in paths.into_iter().flatten().filter_map(Value::as_str) {
                lines.push(format!("{access} {path}"));
            }
        }
    }
    lines
}

/// The plain decisions of `availableDecisions`; the ones with a policy amendment (objects)
/// are not offered by the gateway. Every decision when the list is absent.
fn available_decisions(params: &Value) -> Vec<ApprovalDecision> {
    match params.get("availableDecisions").and_then(Value::as_array) {
        Some(listed) => listed
            .iter()
            .filter_map(|d| serde_json::from_value(d.clone()).ok())
            .collect(),
        None => ApprovalDecision::ALL.to_vec(),
    }
}
