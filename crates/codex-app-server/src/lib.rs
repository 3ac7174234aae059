//! Client for `codex app-server`: knows JSON-RPC and Codex threads, nothing of chats.

mod answer;
mod approvals;
mod catalog;
mod error;
mod files;
mod listen;
mod login;
mod orphans;
mod process;
mod protocol;
mod questions;
mod remote;
mod responder;
mod run_as;
mod spawn;
mod supervisor;
mod threads;
mod unread;
mod usage;
mod wire;
mod workers;

pub use answer::TurnAnswer;
pub use approvals::{ApprovalDecision, ApprovalKind, ApprovalRequest, ChangedFile};
pub use catalog::{
    ModelConfig, ModelInfo, Permissions, RateLimitWindow, RateLimits, SandboxPolicy, TurnOverrides,
};
pub use error::CodexError;
pub use files::{Exec, PathKind, RealPath};
pub use listen::end_leftovers;
pub use login::{DeviceLogin, LoginOutcome, PendingLogin};
pub use orphans::{TERM_GRACE, adopt_orphans, end_orphans};
pub use process::AppServer;
pub use protocol::{
    AccountState, ApprovalPolicy, Item, Notification, OpenedThread, Phase, PlanStatus, PlanStep,
    SandboxMode, ThreadSettings, TokenCounts, TokenUsage, TurnStatus, UserInput,
};
pub use questions::{Answers, QuestionOption, UserQuestion};
pub use remote::RemoteSpec;
pub use responder::{ApprovalResponder, QuestionResponder};
pub use run_as::{RunAs, RunAsError};
pub use spawn::{Attach, HealthCheck, SpawnSpec};
pub use supervisor::{Codex, LOCAL, ServerState, Starting};
pub use threads::{LastTurn, ThreadPage, ThreadSummary, TurnState};
pub use unread::UnreadLog;
pub use usage::{limit_resets_at, limit_resets_at_here};
pub use wire::ThreadEvent;

/// The Codex version this client is built and tested against (`scripts/install-codex`
/// installs it; the protocol notes in docs/app-server.md were measured with it).
pub const TESTED_VERSION: &str = "0.171.0";
