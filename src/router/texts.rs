//! Every line the router says to a chat, in one place.

use std::time::Duration;

use super::live::Work;
use crate::clock;
use crate::commands::MAX_INPUT_BYTES;
use crate::session::{ChatRow, SessionError, mode_permissions};
use chat::Progress;
use chat::{Mode, Named};
use codex::{
    ApprovalPolicy, CodexError, PlanStatus, PlanStep, RateLimitWindow, SandboxMode, ThreadSummary,
    TurnStatus,
};

pub const EMPTY_MESSAGE: &str = "(empty message ignored)";
pub const STOPPING: &str = "Stopping...";
pub const STOPPED: &str = "Stopped.";
pub const QUEUED: &str =
    "Queued: Codex is still working on the previous message. (/stop interrupts it.)";
pub const STEERED: &str = "Added to the running turn: Codex reads it now.";
pub const STEER_REFUSED: &str = "Codex cannot take this into the running turn (it is a review \
     or compaction, or it just ended), so it runs next.";

/// A voice message's transcript, shown before Codex gets it.
pub fn heard(transcript: &str) -> String {
    format!("Heard: {transcript}")
}

pub fn queue_full(limit: usize) -> String {
    format!(
        "The queue is full ({limit} messages wait behind the running turn), so this one was \
         not taken. Send it again once Codex has caught up, or /stop the turn."
    )
}

pub const THREAD_REPLACED: &str = "This chat's earlier Codex session could not be restored (its \
     history is gone from disk), so a new one was started and given the recent conversation.";
pub const NO_REPLY: &str = "(Codex finished without a reply)";
pub const TURN_ABANDONED: &str = "Codex did not stop the turn in time; the chat is detached from \
     it. Your next message resumes the thread.";
pub const APPROVAL_EXPIRED: &str =
    "Nobody answered the approval request in time, so it was declined.";
pub const SHUTTING_DOWN: &str = "The gateway is shutting down; please send that again in a minute.";
pub const RESTART_INTERRUPTED: &str = "The gateway is restarting: this turn was interrupted. \
     The conversation continues where it was: once the gateway is back, press continue (or \
     send /continue) to have Codex go on.";
pub const RESTART_DROPPED: &str = "The gateway is restarting, so this message was not handled. \
     Send it again in a minute; the conversation continues where it was.";
pub const RESTART_QUEUED: &str =
    "The gateway is restarting; this message waits and runs as soon as it is back.";
pub const CUT_SHORT: &str = "The gateway went away while Codex worked on this message, so \
     its turn was cut short (it is not run again: its commands may have had effects). Press \
     continue (or send /continue) to have Codex go on in the same thread.";
pub const TAKEN_OVER: &str =
    "The gateway is back, and Codex is still working on this on its worker: following it again.";

/// The gateway stops while the chat's turn runs on worker `worker`.
pub fn handed_over(worker: &str) -> String {
    format!(
        "The gateway is restarting. Codex goes on with this on the worker {worker}; its \
         answer comes here once the gateway is back."
    )
}

/// The status's last line for a turn left running on its worker.
pub fn still_running(worker: &str) -> String {
    format!("Still running on the worker {worker}")
}

/// What a Continue button (and a bare `/continue`) tells Codex.
pub fn too_long(bytes: usize) -> String {
    format!(
        "That message is {bytes} bytes; the limit is {MAX_INPUT_BYTES}. \
         Please send a shorter one (or put the text in a file in the workspace)."
    )
}

pub fn unknown_command(name: &str) -> String {
    format!("Unknown command {name}. /help lists the commands.")
}

/// A failed turn, with the one tap that tries again (a model's 502 passes; the thread
/// keeps everything the turn did).
pub fn turn_failed(error: Option<&str>) -> String {
    format!(
        "Codex failed: {}\nPress continue (or send /continue) to have Codex try again in the same thread.",
        error.unwrap_or("no reason given")
    )
}

/// The prompt of a turn another client started on the chat's thread.
pub fn asked_elsewhere(text: &str) -> String {
    format!("From the terminal: {text}")
}

pub fn turn_timed_out(limit: Duration) -> String {
    format!(
        "Codex has been silent on this turn for {} (the turn time limit); interrupting it.",
        human_duration(limit)
    )
}

pub fn approval_declined(what: &str) -> String {
    format!(
        "Codex asked for approval to run `{what}`; this chat cannot approve requests, so it was declined."
    )
}

/// A line for Codex's `error` notification that it will retry: "Reconnecting... 2/5"
/// becomes "attempt 2 of 5"; anything else is quoted.
pub fn trouble(message: &str) -> String {
    let attempt = message
        .strip_prefix("Reconnecting... ")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(n, of)| n.parse::<u32>().is_ok() && of.parse::<u32>().is_ok());
    match attempt {
        Some((n, of)) => format!("Codex is reconnecting to the model, attempt {n} of {of}."),
        None => format!("Codex ran into trouble and is retrying: {message}"),
    }
}

pub fn rerouted(model: &str) -> String {
    format!("Codex answers this one with another model ({model}).")
}

// The live status of a running turn, and its summary.

/// The status message's text: elapsed time and counts, what Codex does now, its plan and
/// (`verbose`) the log of commands and commentary.
pub(super) fn live_status(work: &Work, elapsed: Duration, verbose: bool) -> String {
    let mut lines = vec![format!(
        "Working · {}{}",
        clock_words(elapsed),
        counts(work)
    )];
    lines.extend(work.said.clone());
    lines.extend(work.now.clone());
    if !work.plan.is_empty() {
        lines.push("Plan:".into());
        for step in &work.plan {
            lines.push(format!("{} {}", plan_mark(step.status), step.step));
        }
    }
    if verbose && !work.log.is_empty() {
        lines.push("Log:".into());
        lines.extend(work.log.iter().cloned());
    }
    lines.join("\n")
}

/// The line a shown status becomes when its turn ends: "Worked 4 min 12 s · 23 commands
/// · +40 −12 in 5 files".
pub(super) fn work_summary(work: &Work, elapsed: Duration, completed: bool) -> String {
    let head = if completed { "Worked" } else { "Ended after" };
    format!("{head} {}{}", clock_words(elapsed), counts(work))
}

fn counts(work: &Work) -> String {
    let mut parts = Vec::new();
    match work.commands {
        0 => {}
        1 => parts.push("1 command".to_owned()),
        n => parts.push(format!("{n} commands")),
    }
    match (work.diff_stat(), work.files.len()) {
        (Some(stat), _) => parts.push(format!(
            "+{} −{} in {}",
            stat.added,
            stat.removed,
            plural(stat.files, "file")
        )),
        (None, 0) => {}
        (None, n) => parts.push(format!("{} changed", plural(n, "file"))),
    }
    parts.iter().map(|part| format!(" · {part}")).collect()
}

fn plural(n: usize, noun: &str) -> String {
    match n {
        1 => format!("1 {noun}"),
        n => format!("{n} {noun}s"),
    }
}

/// Codex's plan as one line, for the console: "plan: ✓ look · ▸ fix · ○ test".
pub fn plan_line(plan: &[PlanStep]) -> String {
    let steps: Vec<String> = plan
        .iter()
        .map(|step| format!("{} {}", plan_mark(step.status), step.step))
        .collect();
    format!("plan: {}", steps.join(" · "))
}

fn plan_mark(status: PlanStatus) -> &'static str {
    match status {
        PlanStatus::Completed => "✓",
        PlanStatus::InProgress => "▸",
        PlanStatus::Pending => "○",
    }
}

/// "45 s", "4 min 12 s", "2 h 05 min": a running clock.
pub fn clock_words(elapsed: Duration) -> String {
    let secs = elapsed.as_secs();
    match secs {
        0..60 => format!("{secs} s"),
        60..3600 => format!("{} min {} s", secs / 60, secs % 60),
        _ => format!("{} h {:02} min", secs / 3600, secs % 3600 / 60),
    }
}

pub fn progress_chosen(progress: Progress) -> &'static str {
    match progress {
        Progress::Status => {
            "From now on, a running turn shows one status message: what Codex does now, \
             its commands, files and plan. (/verbose lists every step, /quiet shows none.)"
        }
        Progress::Verbose => {
            "From now on, the status also lists each command with its exit code and every \
             commentary line. (/verbose again goes back to the short status.)"
        }
        Progress::Quiet => {
            "From now on, a running turn shows only the typing indicator, then the answer. \
             (/quiet again brings the status back.)"
        }
    }
}

/// The gateway went away while an answer was on its way to the chat.
pub const ANSWER_MAY_HAVE_ARRIVED: &str = "The gateway went away while it was sending \
    Codex's answer to this message, so it may not have arrived in full. It is not sent again \
    by itself (it may be here already): press below (or send /last) to have it sent again.";

/// The button under [`ANSWER_MAY_HAVE_ARRIVED`] (it sends `/last`).
pub const SEND_AGAIN: &str = "send again";

/// A timeout's notice for a turn that ran past `[codex] max_turn_secs`.
pub fn turn_capped(limit: Duration) -> String {
    format!(
        "Codex has worked on this for {} (the longest a turn may run); interrupting it.",
        human_duration(limit)
    )
}

/// How a turn that did not complete ended, as a marker under its streamed text.
pub fn turn_marker(status: TurnStatus, timed_out: bool, error: Option<&str>) -> Option<String> {
    match status {
        TurnStatus::Interrupted if timed_out => Some("stopped at the time limit".into()),
        TurnStatus::Interrupted => Some("stopped".into()),
        TurnStatus::Failed => Some(format!("failed: {}", error.unwrap_or("no reason given"))),
        TurnStatus::Completed | TurnStatus::InProgress => None,
    }
}

/// The marker of a turn Codex never closed.
pub fn lost_turn_marker(process_died: bool) -> &'static str {
    match process_died {
        true => "interrupted: Codex restarted",
        false => "detached: Codex did not stop",
    }
}

/// The line the chat sees for a failed request; details go to the log.
pub fn session_error(error: &SessionError) -> String {
    match error {
        SessionError::Codex(CodexError::ProcessExited) => process_lost().into(),
        SessionError::Codex(CodexError::Spawn { .. }) => {
            "Codex is not available right now; the operator has been told (see the logs).".into()
        }
        SessionError::Codex(CodexError::Unreachable { server, message }) => format!(
            "This chat's Codex worker {server} is unreachable ({message}), so nothing was sent \
             to Codex. Try again once it is back."
        ),
        SessionError::Codex(CodexError::NoServerReachable) => {
            "No Codex worker is reachable, so nothing was sent to Codex. Try again once one is back."
                .into()
        }
        SessionError::Codex(error) => format!("Codex could not take the request: {error}"),
        SessionError::Store(_) => {
            "The gateway's database failed, so nothing was sent to Codex. Try again.".into()
        }
        SessionError::Workspace { .. } => {
            "The working directory for this chat could not be created; see the logs.".into()
        }
    }
}

/// The chat's worker (`None`: every worker) is down; the message waits for it.
pub fn waiting_for_worker(server: Option<&str>, reason: &str, wait: Duration) -> String {
    let who = match server {
        Some(server) => format!("This chat's Codex worker {server} is unreachable"),
        None => "No Codex worker is reachable".to_owned(),
    };
    format!(
        "{who} right now ({reason}). Your message will run when it is back; I will wait \
         up to {}.",
        human_duration(wait)
    )
}

/// The connection to the chat's worker broke under a turn.
pub fn worker_lost(worker: &str) -> String {
    format!(
        "The connection to this chat's Codex worker {worker} was lost, so this turn was cut \
         short (it is not run again: its commands may have had effects). Press continue (or \
         send /continue) to have Codex go on; it waits for the worker if it is still down."
    )
}

/// The app-server died under a request (it is restarted).
pub fn process_lost() -> &'static str {
    "Codex restarted while handling this, so it was not done. Send it again (the \
     conversation continues where it was)."
}

/// The app-server died under a turn: cut short, offered Continue like a gateway crash.
pub const CODEX_RESTARTED: &str = "Codex restarted while it worked on this, so its turn was \
     cut short (it is not run again: its commands may have had effects). Press continue (or \
     send /continue) to have Codex go on in the same thread.";

/// Why this person may not run an admins' command here (`/login`, `/logout`), if they may not.
pub fn admin_refusal(private: bool, admin: bool) -> Option<&'static str> {
    match (private, admin) {
        (false, _) => Some(
            "Log Codex in or out from a direct message with the bot, not in a group or channel.",
        ),
        (true, false) => Some(
            "Only the bot's admins may log Codex in or out \
             (telegram.admins / discord.admins; by default the first allowed user).",
        ),
        (true, true) => None,
    }
}

/// "90 seconds", "30 minutes": how long, in the unit a person would say.
pub fn human_duration(duration: Duration) -> String {
    match duration.as_secs() {
        1 => "1 second".into(),
        secs if secs < 120 => format!("{secs} seconds"),
        secs => format!("{} minutes", secs / 60),
    }
}

// /model, /effort, /cwd and /usage.

pub fn models_unlisted(error: &impl std::fmt::Display) -> String {
    format!("Codex did not list its models: {error}")
}

pub fn choices_unreadable(error: &impl std::fmt::Display) -> String {
    format!("Your choices cannot be read: {error}")
}

pub fn choice_unstored(error: &impl std::fmt::Display) -> String {
    format!("Your choice cannot be stored: {error}")
}

/// The model a chat uses when neither it nor the config chose one and Codex names none.
pub const CODEX_DEFAULT_MODEL: &str = "Codex's default";

/// Added when a provider's model (or effort) is not in Codex's list.
pub const MODEL_AS_GIVEN: &str = " It is not in Codex's list; using it as given (the provider says on the next turn if it has no such model).";

/// "5-hour", "weekly", "90-minute": a rate-limit window by its length.
fn window_span(minutes: Option<i64>) -> Option<String> {
    Some(match minutes? {
        10_080 => "weekly".to_owned(),
        minutes if minutes % 60 == 0 => format!("{}-hour", minutes / 60),
        minutes => format!("{minutes}-minute"),
    })
}

/// "5-hour window: 42% used, resets in 2 h 10 min".
pub fn window_line(window: &RateLimitWindow, now: i64) -> String {
    let name = match window_span(window.window_duration_mins) {
        Some(span) => capitalized(&format!("{span} window")),
        None => "Window".to_owned(),
    };
    let resets = match window.resets_at {
        Some(at) => format!(", resets in {}", duration_words((at - now).max(0))),
        None => String::new(),
    };
    format!("{name}: {}% used{resets}", window.used_percent)
}

fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect()
    })
}

/// When a turn hit the account's usage limit: which window is used up, when it resets
/// (`None`: Codex did not say, so `retry_at` is a guess), and that the message will run
/// by itself then.
pub fn usage_limit_hit(
    window_mins: Option<i64>,
    resets_at: Option<i64>,
    retry_at: i64,
    now: i64,
) -> String {
    let when = format!(
        "{}, in {}",
        clock::time_of_day(retry_at),
        duration_words((retry_at - now).max(0))
    );
    match resets_at {
        Some(_) => {
            let limit = window_span(window_mins)
                .map_or("usage limit".to_owned(), |span| format!("{span} limit"));
            format!(
                "Codex's {limit} is used up; it resets at {when}. I will run this then; /stop cancels."
            )
        }
        None => format!(
            "Codex's usage limit is used up, and it did not say until when. I will try this \
             again at {when}; /stop cancels."
        ),
    }
}

/// A message for Codex while the usage limit holds: it waits with the others.
pub fn usage_limit_waiting(retry_at: i64, now: i64) -> String {
    format!(
        "Codex's usage limit is still used up: this waits too and runs at {}, in {}. /stop \
         cancels.",
        clock::time_of_day(retry_at),
        duration_words((retry_at - now).max(0))
    )
}

/// `/stop` with messages waiting for the usage limit.
pub fn usage_limit_cancelled(count: usize) -> String {
    match count {
        1 => "Cancelled: the message waiting for the usage limit will not run.".into(),
        n => format!("Cancelled: the {n} messages waiting for the usage limit will not run."),
    }
}

/// "2 h 10 min", "3 d 4 h", "45 s".
pub fn duration_words(seconds: i64) -> String {
    let (days, hours, minutes) = (
        seconds / 86_400,
        seconds % 86_400 / 3600,
        seconds % 3600 / 60,
    );
    match (days, hours, minutes) {
        (0, 0, 0) => format!("{seconds} s"),
        (0, 0, m) => format!("{m} min"),
        (0, h, m) => format!("{h} h {m} min"),
        (d, h, _) => format!("{d} d {h} h"),
    }
}

/// The thread's name, else the first words of its first message.
pub fn thread_title(thread: &ThreadSummary) -> String {
    let text = thread.name.as_deref().unwrap_or(&thread.preview);
    let words: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match words.chars().count() > 48 {
        true => format!("{}…", words.chars().take(47).collect::<String>()),
        false if words.is_empty() => "(no messages)".into(),
        false => words,
    }
}

/// A mode as a person reads it: its name and what it means.
pub fn mode_line(mode: Option<Mode>, configured: (SandboxMode, ApprovalPolicy)) -> String {
    let (sandbox, approvals) = match mode {
        Some(mode) => mode_permissions(mode),
        None => configured,
    };
    let name = mode.map_or("default (the config's)", Mode::name);
    format!(
        "{name}: sandbox {}, approvals {}",
        kebab(&sandbox),
        kebab(&approvals)
    )
}

fn kebab(value: &impl serde::Serialize) -> String {
    let value = serde_json::to_value(value).unwrap_or_default();
    value.as_str().unwrap_or("?").to_owned()
}

/// `/fork`, `/undo` and `/name` in a chat that has not talked to Codex yet.
pub const NO_THREAD_YET: &str = "This chat has no Codex thread yet: send a message first.";

/// How full the thread's context is, as the latest turn left it (`/status`, `/usage`).
pub fn context_line(record: Option<&ChatRow>) -> String {
    let (used, window) = record.map_or((None, None), |r| (r.last_tokens, r.context_window));
    context_use(used, window)
}

pub fn context_use(used: Option<i64>, window: Option<i64>) -> String {
    match (used, window) {
        (Some(used), Some(limit)) if limit > 0 => {
            format!("Context: {used} / {limit} tokens ({}%)", used * 100 / limit)
        }
        (Some(used), _) => format!("Context: {used} tokens"),
        _ => "Context: no usage reported yet".to_owned(),
    }
}

// Codex's questions.

/// A task's first message made it a worktree of its own (`codex.task_worktrees`).
pub fn task_worktree(branch: &str, path: &str) -> String {
    format!(
        "This task works in a worktree of its own, on branch {branch} at {path}. /merge \
         merges it into the branch it came from; /discard removes it."
    )
}

pub fn task_without_worktree(refusal: &impl std::fmt::Display) -> String {
    format!("This task works in the chat's folder, without a worktree of its own: {refusal}.")
}

pub const ANSWER_SENT: &str = "Answer sent to Codex.";
pub const QUESTION_ANSWERED_ELSEWHERE: &str =
    "Codex's question was answered in the terminal; a press here changes nothing now.";

pub const QUESTION_EXPIRED: &str = "Nobody answered Codex's question in time; Codex was told what was answered (if anything) and goes on.";

/// One of Codex's questions: its header, the question, the options numbered with what
/// each means, and how to answer.
pub fn question(question: &codex::UserQuestion, number: usize, of: usize) -> String {
    let mut text = match of {
        1 => "Codex asks".to_owned(),
        of => format!("Codex asks ({number} of {of})"),
    };
    if !question.header.is_empty() {
        text.push_str(&format!(" - {}", question.header));
    }
    text.push_str(&format!(":\n{}", question.question));
    for (index, option) in question.options.iter().enumerate() {
        text.push_str(&format!("\n{}. {}", index + 1, option.label));
        if !option.description.is_empty() {
            text.push_str(&format!(": {}", option.description));
        }
    }
    let typed = question.is_other || question.options.is_empty();
    text.push_str(match (question.options.is_empty(), typed) {
        (true, _) => "\nReply with your answer.",
        (false, true) => "\nPress an option, reply with its number, or reply with your own answer.",
        (false, false) => "\nPress an option or reply with its number.",
    });
    if question.is_secret {
        text.push_str(
            " (Your reply is a secret: it goes to Codex only, but it stays in this chat.)",
        );
    }
    text
}

/// Scheduled jobs (`/every`, `/at`, `/jobs`, `/unschedule`).
pub mod jobs {
    use crate::schedule::{self, ScheduleError};

    pub fn scheduled(id: i64, schedule: &str, next: &str) -> String {
        format!(
            "Job {id} scheduled: {schedule}, next run {next}. It runs in this chat's thread as \
             if you had sent it; /jobs lists the jobs, /unschedule {id} removes it."
        )
    }

    pub fn bad_schedule(error: &ScheduleError, example: &str) -> String {
        format!("That schedule was not taken: {error}. For example: {example}.")
    }

    pub fn too_many(max: usize) -> String {
        format!("This chat has {max} jobs, as many as allowed; /unschedule one first.")
    }

    /// `Fri 4 Dec 09:00 (in 2 h)`.
    pub fn next_run_shown(at: i64, now: i64, timezone: chrono_tz::Tz) -> String {
        let wait = schedule::span((at - now).max(0) as u64);
        format!("{} (in {wait})", schedule::local_time(at, timezone))
    }

    /// A run's answer, headed by its job.
    pub fn answer(id: i64, label: &str, answer: &str) -> String {
        format!("Job {id} ({label}):\n{answer}")
    }

    /// A notice during a run (a failure, the limit), headed by its job.
    pub fn during_run(id: i64, notice: &str) -> String {
        format!("Job {id}: {notice}")
    }

    pub fn not_run_at_restart(id: i64) -> String {
        format!(
            "Job {id} did not run: the gateway restarted before its turn came. It runs at its \
             next time (/jobs)."
        )
    }

    pub const RESULT_OK: &str = "answered";
    pub const RESULT_NO_REPLY: &str = "no reply";
    pub const RESULT_STOPPED: &str = "stopped";
    pub const RESULT_LOST: &str = "cut off (Codex went away)";
    pub const RESULT_LIMITED: &str = "waiting for the usage limit";
    pub const RESULT_NOT_RUN: &str = "not run (see the chat)";

    pub fn result_failed(why: &str) -> String {
        format!("failed: {why}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trouble_lines_read_naturally() {
        assert_eq!(
            trouble("Reconnecting... 2/5"),
            "Codex is reconnecting to the model, attempt 2 of 5."
        );
        assert_eq!(
            trouble("Reconnecting... soon"),
            "Codex ran into trouble and is retrying: Reconnecting... soon"
        );
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(1)), "1 second");
        assert_eq!(human_duration(Duration::from_secs(90)), "90 seconds");
        assert_eq!(human_duration(Duration::from_secs(1800)), "30 minutes");
    }

    #[test]
    fn windows_read_in_words() {
        let window = |minutes, used, resets_in: i64| RateLimitWindow {
            used_percent: used,
            resets_at: Some(1_000 + resets_in),
            window_duration_mins: Some(minutes),
        };
        let cases = [
            (
                window(300, 42, 7_800),
                "5-hour window: 42% used, resets in 2 h 10 min",
            ),
            (
                window(10_080, 5, 280_800),
                "Weekly window: 5% used, resets in 3 d 6 h",
            ),
            (
                window(60, 100, 30),
                "1-hour window: 100% used, resets in 30 s",
            ),
            (
                window(90, 1, -5),
                "90-minute window: 1% used, resets in 0 s",
            ),
        ];
        for (window, expected) in cases {
            assert_eq!(window_line(&window, 1_000), expected);
        }
    }
}
