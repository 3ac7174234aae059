//! `/status`: the chat's thread and Codex server, usage, model, effort, mode, working
//! directory, what a message sent during a turn does, and the known rate limits. Answered
//! at once, during a turn too: it starts nothing.

use super::{ChatCommand, Spec};
use crate::clock::unix_now;
use crate::router::{Actor, Replies, texts};
use crate::session::ServerPlace;
use chat::{FollowUp, Progress};

const SERVER_NOT_YET: &str = "chosen when the first thread starts";

fn status_unavailable(error: &impl std::fmt::Display) -> String {
    format!("Status unavailable: {error}")
}

/// A server's label, and why it is down if it is.
fn server_state(label: &str, problem: Option<&str>) -> String {
    match problem {
        None => label.to_owned(),
        Some(problem) => format!("{label}; down: {problem}"),
    }
}

fn server_gone(name: &str) -> String {
    format!("{name} (no longer configured; the next message moves the chat)")
}

/// The chat's thread, as `/status` names it.
enum ThreadState {
    Live(String),
    Stored(String),
    None,
}

/// What `/status` says.
struct StatusFacts {
    chat: String,
    thread: ThreadState,
    /// The thread's name (`/name`), when Codex said it.
    thread_name: Option<String>,
    /// The `/mode` line.
    mode: String,
    server: String,
    /// Turns, the context line and the thread's tokens, once the chat has a row.
    usage: Option<(i64, String, Option<i64>)>,
    folder: Option<String>,
    /// The chat's worktree: its branch and the branch it came from.
    worktree: Option<(String, String)>,
    model: Option<String>,
    effort: Option<String>,
    follow_up: FollowUp,
    progress: Progress,
    /// The rate-limit windows Codex last reported during a turn, a line each.
    rate_limits: Vec<String>,
}

fn status(facts: &StatusFacts) -> String {
    let thread = match &facts.thread {
        ThreadState::Live(id) => format!("{id} (live)"),
        ThreadState::Stored(id) => format!("{id} (stored; resumed on the next message)"),
        ThreadState::None => "none yet (the next message starts one)".to_owned(),
    };
    let mut lines = vec![format!("Chat: {}", facts.chat), format!("Thread: {thread}")];
    if let Some(name) = &facts.thread_name {
        lines.push(format!("Thread name: {name}"));
    }
    lines.push(format!("Codex server: {}", facts.server));
    if let Some((turns, context, total)) = &facts.usage {
        lines.push(format!("Turns: {turns}"));
        lines.push(context.clone());
        if let Some(total) = total {
            lines.push(format!("Tokens used by this thread: {total}"));
        }
    }
    let folder = facts.folder.as_deref();
    let folder = folder.unwrap_or("set when the first thread starts");
    lines.push(format!("Working directory: {folder}"));
    if let Some((branch, base)) = &facts.worktree {
        lines.push(format!("Worktree: branch {branch} (from {base}; /merge, /discard)"));
    }
    let model = facts
        .model
        .as_deref()
        .unwrap_or("Codex's configured default");
    lines.push(format!("Model: {model}"));
    let effort = facts.effort.as_deref().unwrap_or("the model's default");
    lines.push(format!("Reasoning effort: {effort}"));
    lines.push(format!("Mode: {}", facts.mode));
    let follow_up = match facts.follow_up {
        FollowUp::Steer => "join the running turn (/queue to make them wait)",
        FollowUp::Queue => "wait for the running turn (/steer to add them to it)",
    };
    lines.push(format!("Messages sent while Codex works: {follow_up}"));
    let progress = match facts.progress {
        Progress::Status => "one status message (/verbose for every step, /quiet for none)",
        Progress::Verbose => "every command and commentary line (/verbose again: short status)",
        Progress::Quiet => "typing and the answer only (/quiet again: the status)",
    };
    lines.push(format!("While Codex works: {progress}"));
    if !facts.rate_limits.is_empty() {
        lines.push(format!("Rate limits: {}", facts.rate_limits.join("; ")));
    }
    lines.join("\n")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status;

impl ChatCommand for Status {
    const SPEC: Spec = Spec {
        during_turn: true,
        ..Spec::plain(
            "status",
            "Thread, usage, model and working directory",
            "thread, turns, token usage, model and working directory",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Status)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        replies.notice(facts(chat).await)
    }
}

async fn facts(chat: &mut Actor) -> String {
    let record = match chat.session.record().await {
        Ok(record) => record,
        Err(error) => return status_unavailable(&error),
    };
    let stored = record.as_ref().and_then(|r| r.thread_id.as_deref());
    let thread = match (chat.session.thread_id(), stored) {
        (Some(live), _) if chat.session.is_live() => ThreadState::Live(live.to_owned()),
        (_, Some(stored)) => ThreadState::Stored(stored.to_owned()),
        _ => ThreadState::None,
    };
    let choices = chat.session.choices().await.unwrap_or_default();
    let fixed = chat.session.fixed_folder().map(|f| f.display().to_string());
    let folder = fixed.or(choices.folder).or_else(|| {
        let cwd = record.as_ref().map(|r| r.cwd.clone());
        cwd.filter(|cwd| !cwd.is_empty())
    });
    let configured = configured_model(chat).await;
    let model = choices
        .model
        .or_else(|| chat.ctx.settings.model.clone())
        .or(configured);
    let limits = chat.session.known_rate_limits();
    let windows = limits
        .map(|l| [l.primary, l.secondary])
        .into_iter()
        .flatten();
    let now = unix_now();
    let rate_limits = windows
        .flatten()
        .map(|window| texts::window_line(&window, now))
        .collect();
    let thread_name = chat.session.live_thread_name().await;
    let worktree = chat.session.worktree().await.ok().flatten();
    let worktree = worktree.map(|row| (row.branch, row.base));
    let settings = &chat.ctx.settings;
    let mode = texts::mode_line(
        chat.session.mode(),
        (settings.sandbox, settings.approval_policy),
    );
    status(&StatusFacts {
        chat: chat.chat.to_string(),
        thread,
        thread_name,
        mode,
        server: server_line(chat).await,
        usage: record
            .as_ref()
            .map(|r| (r.turns, texts::context_line(Some(r)), r.total_tokens)),
        folder,
        worktree,
        model,
        effort: choices.effort,
        follow_up: chat.session.follow_up(),
        progress: chat.session.progress(),
        rate_limits,
    })
}

/// The model Codex's config names, asked only of a server already running this chat's
/// thread: `/status` answers at once and starts nothing.
async fn configured_model(chat: &mut Actor) -> Option<String> {
    if let Some(config) = chat.session.known_model_config() {
        return config.model.clone();
    }
    match chat.session.is_live() {
        true => chat.session.model_config().await.ok()?.model,
        false => None,
    }
}

/// Where the chat's thread runs, and whether that server is up.
async fn server_line(chat: &Actor) -> String {
    match chat.session.server_place().await {
        ServerPlace::NotYet => SERVER_NOT_YET.to_owned(),
        ServerPlace::On(state) => server_state(&state.label(), state.problem.as_deref()),
        ServerPlace::Gone(name) => server_gone(&name),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chat::Mode;
    use codex::{ApprovalPolicy, SandboxMode};

    #[test]
    fn status_names_everything_and_the_known_rate_limits() {
        let facts = StatusFacts {
            chat: "telegram:1".into(),
            thread: ThreadState::Stored("t1".into()),
            thread_name: Some("Puffins".into()),
            mode: texts::mode_line(
                Some(Mode::ReadOnly),
                (SandboxMode::DangerFullAccess, ApprovalPolicy::Never),
            ),
            server: "local (this machine)".into(),
            usage: Some((3, texts::context_use(Some(500), Some(1000)), Some(1200))),
            folder: None,
            worktree: Some(("fix-a".into(), "main".into())),
            model: Some("m1".into()),
            effort: None,
            follow_up: FollowUp::Queue,
            progress: Progress::Status,
            rate_limits: vec![
                "5-hour window: 42% used".into(),
                "Weekly window: 5% used".into(),
            ],
        };
        let text = status(&facts);
        for line in [
            "Chat: telegram:1",
            "Thread: t1 (stored; resumed on the next message)",
            "Thread name: Puffins",
            "Mode: read-only: sandbox read-only, approvals on-request",
            "Codex server: local (this machine)",
            "Turns: 3",
            "Context: 500 / 1000 tokens (50%)",
            "Tokens used by this thread: 1200",
            "Working directory: set when the first thread starts",
            "Worktree: branch fix-a (from main; /merge, /discard)",
            "Model: m1",
            "Reasoning effort: the model's default",
            "Messages sent while Codex works: wait for the running turn",
            "Rate limits: 5-hour window: 42% used; Weekly window: 5% used",
        ] {
            assert!(text.contains(line), "{line:?} not in {text}");
        }
        let quiet = status(&StatusFacts {
            rate_limits: Vec::new(),
            worktree: None,
            ..facts
        });
        assert!(!quiet.contains("Rate limits"), "{quiet}");
        assert!(!quiet.contains("Worktree"), "{quiet}");
    }
}
