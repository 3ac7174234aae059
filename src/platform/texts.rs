//! Every line the platforms say to a chat themselves (the router's are in
//! `router/texts.rs`): refusals, what a platform cannot read, and the approval cards.

use crate::clock;
use crate::router::Answer;
use chat::PromptEnd;

/// To a stranger in a DM (or a Telegram group): their id, for the owner's allowlist.
pub fn stranger_refusal(platform: &str, config_key: &str, user_id: u64) -> String {
    format!(
        "Sorry, you are not allowed to use this bot. Your {platform} user id is {user_id}; \
         the bot's owner can add it to {config_key}."
    )
}

/// To a stranger's slash command (Discord answers it only to them).
pub fn command_refusal(user_id: u64) -> String {
    format!("You (user id {user_id}) are not allowed to use this bot.")
}

/// A Telegram message of a kind the bot cannot read (a location, a sticker...).
pub const UNREADABLE_KIND: &str = "I can read text, photos, files and voice notes, but not this \
     kind of message: please send your request as text.";

pub fn console_not_utf8(line: usize) -> String {
    format!("Line {line} is not valid UTF-8 text; it was skipped.")
}

// Approval cards and their buttons.

pub const ASKS_TO_RUN: &str = "Codex asks to run a command:";
pub const ASKS_TO_CHANGE: &str = "Codex asks to change files:";
pub const ASKS_FOR_ACCESS: &str = "Codex asks for more access:";
pub const NO_ACCESS_GIVEN: &str = "(Codex did not say what access)";
pub const NO_COMMAND_GIVEN: &str = "(no command given)";
pub const NO_FILES_GIVEN: &str = "(no file list given)";
pub const NO_DECISION_OFFERED: &str =
    "Codex offers no decision the bot can give; it will be refused.";

pub fn approval_folder(cwd: &str) -> String {
    format!("in {cwd}")
}

pub fn approval_grant_root(root: &str) -> String {
    format!(
        "and asks to write anywhere under {root} (outside the workspace) for the rest of the session"
    )
}

pub fn approval_reason(reason: &str) -> String {
    format!("Reason: {reason}")
}

pub fn approval_attached(characters: usize, file: &str) -> String {
    format!(
        "The full request ({characters} characters) is in the attached {file}: read it before you decide."
    )
}

pub const UNKNOWN_BUTTON: &str = "This button is not known to the bot.";

pub fn may_not_decide(user_id: u64) -> String {
    format!("You (user id {user_id}) are not allowed to decide this.")
}

pub fn decided(answer: &Answer) -> String {
    let (decision, by) = (answer.decision.label(), &answer.by);
    format!("{decision} by {by} at {}", clock::time_of_day(answer.at))
}

/// Under a question's card once an option was pressed.
pub fn chosen(option: &str, by: &str, at: i64) -> String {
    format!("Answered {option} by {by} at {}", clock::time_of_day(at))
}

pub const NO_LONGER_PENDING: &str = "No longer pending (answered, timed out, or the turn ended).";

/// The line an approval prompt ends with when it closed without a press.
pub fn prompt_closed(end: PromptEnd) -> &'static str {
    match end {
        PromptEnd::TimedOut => "Nobody answered in time: declined.",
        PromptEnd::TurnEnded => "No longer pending: the turn ended.",
        PromptEnd::Stopped => "Expired: the gateway stopped before anyone answered.",
        PromptEnd::AnsweredElsewhere => "Answered in the terminal.",
    }
}

pub const FROM_EARLIER_RUN: &str =
    "Expired: this request was asked before the gateway restarted, and decides nothing now.";

/// The button under a running turn's status that stops it.
pub const STOP_BUTTON: &str = "Stop";
