//! Every line the router says to a chat, in one place.

use std::time::Duration;

use super::command::MAX_INPUT_BYTES;
use crate::codex::{CodexError, TurnStatus};
use crate::session::FollowUp;
use crate::session::SessionError;

pub const EMPTY_MESSAGE: &str = "(empty message ignored)";
pub const NOTHING_RUNNING: &str = "Nothing is running.";
pub const STOPPING: &str = "Stopping...";
pub const STOPPED: &str = "Stopped.";
pub const QUEUED: &str =
    "Queued: Codex is still working on the previous message. (/stop interrupts it.)";
pub const STEERED: &str = "Added to the running turn: Codex reads it now.";
pub const STEER_REFUSED: &str = "Codex cannot take this into the running turn (it is a review \
     or compaction, or it just ended), so it runs next.";

pub fn follow_up_chosen(follow_up: FollowUp) -> &'static str {
    match follow_up {
        FollowUp::Steer => {
            "From now on, a message sent while Codex works joins the running turn. \
             (/queue makes it wait instead.)"
        }
        FollowUp::Queue => {
            "From now on, a message sent while Codex works waits and runs as the next turn. \
             (/steer adds it to the running turn instead.)"
        }
    }
}

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

pub const NEW_THREAD: &str =
    "Started a new conversation: the next message goes to a fresh Codex thread.";
pub const THREAD_REPLACED: &str = "This chat's earlier Codex session could not be restored (its \
     history is gone from disk), so a new one was started and given the recent conversation.";
pub const NO_REPLY: &str = "(Codex finished without a reply)";
pub const TURN_ABANDONED: &str = "Codex did not stop the turn in time; the chat is detached from \
     it. Your next message resumes the thread.";
pub const APPROVAL_EXPIRED: &str =
    "Nobody answered the approval request in time, so it was declined.";
pub const SHUTTING_DOWN: &str = "The gateway is shutting down; please send that again in a minute.";
pub const RESTART_INTERRUPTED: &str = "The gateway is restarting: this request was interrupted. \
     Send it again in a minute; the conversation continues where it was.";
pub const RESTART_DROPPED: &str = "The gateway is restarting, so this message was not handled. \
     Send it again in a minute; the conversation continues where it was.";
pub const NOTHING_TO_COMPACT: &str = "Nothing to compact yet: this chat has no Codex thread.";
pub const COMPACTED: &str = "Compacted: Codex replaced the thread's history with a summary.";
pub const COMPACTED_NOTHING: &str = "Codex compacted nothing; the thread is unchanged.";
pub const COMPACTION_FAILED: &str = "The compaction failed; the thread is unchanged.";

pub fn too_long(bytes: usize) -> String {
    format!(
        "That message is {bytes} bytes; the limit is {MAX_INPUT_BYTES}. \
         Please send a shorter one (or put the text in a file in the workspace)."
    )
}

pub fn unknown_command(name: &str) -> String {
    format!("Unknown command {name}. /help lists the commands.")
}

pub fn turn_failed(error: Option<&str>) -> String {
    format!("Codex failed: {}", error.unwrap_or("no reason given"))
}

pub fn turn_timed_out(limit: Duration) -> String {
    format!(
        "Codex has worked on this for {} (the turn time limit); interrupting it.",
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
        Some(server) => format!("This chat's Codex worker {server} is"),
        None => "No Codex worker is".to_owned(),
    };
    format!(
        "{who} unreachable right now ({reason}). Your message will run when it is back; \
         I will wait up to {}.",
        human_duration(wait)
    )
}

/// The connection to the chat's worker broke under a turn.
pub fn worker_lost(worker: &str) -> String {
    format!(
        "The connection to this chat's Codex worker {worker} was lost; your last request was \
         interrupted - send it again (it waits for the worker if it is still down)."
    )
}

/// The app-server died under a turn (or just before it).
pub fn process_lost() -> &'static str {
    "Codex restarted; your last request was interrupted - send it again."
}

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
}
