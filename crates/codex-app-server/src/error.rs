//! Typed failures of the Codex client; callers match variants, never message text.

use std::time::Duration;

#[derive(Debug, Clone, thiserror::Error)]
pub enum CodexError {
    /// The stored thread can no longer be resumed (rollout missing, unknown or invalid id).
    #[error("thread {thread_id} cannot be resumed: {message}")]
    ThreadGone { thread_id: String, message: String },
    /// Codex is unloading the thread right now; resuming works once it has closed.
    #[error("thread {0} is closing")]
    ThreadClosing(String),
    /// The thread is not loaded in this app-server process (resume it first).
    #[error("thread not loaded: {0}")]
    ThreadNotLoaded(String),
    #[error("the Codex app-server process exited")]
    ProcessExited,
    #[error("could not start the Codex app-server ({binary}): {message}")]
    Spawn { binary: String, message: String },
    /// A remote app-server (a worker) cannot be reached right now; it is retried.
    #[error("Codex worker {server} is unreachable: {message}")]
    Unreachable { server: String, message: String },
    /// A remote app-server turned the gateway's token away: its config needs fixing.
    #[error(
        "Codex worker {server} ({url}) refused the token (HTTP {status}); check its token_file"
    )]
    Refused {
        server: String,
        url: String,
        status: u16,
    },
    /// No Codex server at all can take a new chat now: every worker is unreachable.
    #[error("no Codex server is reachable")]
    NoServerReachable,
    #[error("Codex did not answer {method} within {timeout:?}")]
    Timeout { method: String, timeout: Duration },
    #[error("Codex rejected {method}: {message} (code {code})")]
    Rpc {
        method: String,
        code: i64,
        message: String,
    },
    #[error("unexpected reply to {method}: {message}")]
    Protocol { method: String, message: String },
}

/// JSON-RPC "invalid request": what app-server answers for unknown or unloadable threads.
pub(super) const INVALID_REQUEST: i64 = -32600;

impl CodexError {
    /// Maps an error answer to its variant. This is the one place that reads Codex's
    /// messages, because app-server reports these cases only through the text.
    pub(crate) fn from_rpc(
        method: &str,
        thread_id: Option<&str>,
        code: i64,
        message: String,
    ) -> Self {
        let gone =
            message.starts_with("no rollout found") || message.starts_with("invalid session id");
        match thread_id {
            Some(id) if code == INVALID_REQUEST && gone => CodexError::ThreadGone {
                thread_id: id.to_owned(),
                message,
            },
            Some(id) if message.contains("is closing; retry") => {
                CodexError::ThreadClosing(id.to_owned())
            }
            Some(id) if message.starts_with("thread not found") => {
                CodexError::ThreadNotLoaded(id.to_owned())
            }
            _ => CodexError::Rpc {
                method: method.to_owned(),
                code,
                message,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_error_answers() {
        let gone = CodexError::from_rpc(
            "thread/resume",
            Some("t1"),
            -32600,
            "no rollout found for thread id t1".into(),
        );
        assert!(matches!(gone, CodexError::ThreadGone { .. }));
        let invalid = CodexError::from_rpc(
            "thread/resume",
            Some("junk"),
            -32600,
            "invalid session id: junk".into(),
        );
        assert!(matches!(invalid, CodexError::ThreadGone { .. }));
        let not_loaded = CodexError::from_rpc(
            "turn/start",
            Some("t1"),
            -32600,
            "thread not found: t1".into(),
        );
        assert!(matches!(not_loaded, CodexError::ThreadNotLoaded(_)));
        let closing = CodexError::from_rpc(
            "thread/resume",
            Some("t1"),
            -32600,
            "thread t1 is closing; retry after the thread is closed".into(),
        );
        assert!(matches!(closing, CodexError::ThreadClosing(_)));
        let other = CodexError::from_rpc("turn/start", Some("t1"), -32603, "boom".into());
        assert!(matches!(other, CodexError::Rpc { code: -32603, .. }));
        let no_thread = CodexError::from_rpc("model/list", None, -32600, "no rollout found".into());
        assert!(matches!(no_thread, CodexError::Rpc { .. }));
    }
}
