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

// Tasks (`/task`): a thread or topic of their own.

/// Where `/task` has no place to open (the console).
pub const NO_TASK_PLACES: &str = "Tasks open a Discord thread or a Telegram topic, which this \
     chat has not; /new starts a fresh conversation here instead.";

/// The first message in a task's new thread or topic.
pub fn task_greeting(title: &str) -> String {
    format!(
        "Task: {title}\nWrite here: this is a conversation of its own, with a Codex thread of \
         its own."
    )
}

/// The answer to `/task` once its place is open: `place` names it ("the topic", a
/// Discord channel mention).
pub fn task_opened(title: &str, place: &str) -> String {
    format!("Opened {place} for \"{title}\": write there.")
}

/// Telegram would not open a topic: how to turn topics on.
pub fn telegram_no_topics(private: bool) -> &'static str {
    match private {
        true => {
            "Telegram would not open a topic in this chat. Topics in a direct message need \
             the bot's Threaded Mode: its owner turns it on in @BotFather (Bot Settings, \
             Threaded Mode), then /task works here."
        }
        false => {
            "Telegram would not open a topic in this group. Turn Topics on in the group's \
             settings and give the bot the Manage Topics right, then /task works here."
        }
    }
}

pub const DISCORD_NO_THREADS_IN_DMS: &str =
    "Discord has no threads in direct messages: /task works in a server's channel.";

pub const DISCORD_THREAD_ALREADY: &str =
    "This is a thread already, a task of its own: open the next task from its channel.";

pub const DISCORD_THREAD_REFUSED: &str = "Discord would not open a thread here: the bot needs \
     the Create Public Threads and Send Messages in Threads permissions in this channel.";

/// The platform did not answer while opening a task's place.
pub fn task_unreachable(platform: &str) -> String {
    format!("{platform} could not be reached to open the task; try /task again.")
}
