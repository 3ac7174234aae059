//! Reads what a person typed: a gateway command or a message for Codex. No I/O.

/// Longest message passed to Codex; longer input is refused with a clear answer.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    New,
    Stop,
    Status,
    Compact,
    Help,
    Model,
    Effort,
    Cwd,
    Usage,
    Threads,
    Resume,
    Login,
    Logout,
    Review,
    Get,
    Steer,
    Queue,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    Command(Command),
    /// Looks like a command (`/word`) but is none of ours.
    UnknownCommand(&'a str),
    Text(&'a str),
    Empty,
    TooLong {
        bytes: usize,
    },
}

/// The commands as chat platforms list them in their command menus.
pub const MENU: &[(&str, &str)] = &[
    ("new", "Start a fresh Codex thread"),
    ("stop", "Interrupt the running turn"),
    ("status", "Thread, usage, model and working directory"),
    ("compact", "Compact this thread's context"),
    ("model", "Show or choose this chat's model"),
    ("effort", "Show or choose the model's reasoning effort"),
    ("cwd", "Show or move this chat's folder"),
    ("usage", "Rate limits and this chat's context use"),
    ("threads", "Recent Codex threads on this machine"),
    ("resume", "Continue a listed thread in this chat"),
    (
        "review",
        "Codex reviews the uncommitted changes in this chat's folder",
    ),
    ("get", "Send a file from this chat's folder"),
    (
        "steer",
        "Messages sent while Codex works join the running turn",
    ),
    (
        "queue",
        "Messages sent while Codex works wait for the next turn",
    ),
    ("login", "Log Codex in (admins, in a direct message)"),
    ("logout", "Log Codex out (admins, in a direct message)"),
    ("help", "What this bot does"),
];

/// Commands that take an optional argument: (command, argument name, what it is). Slash
/// commands offer it as an option.
pub const ARGUMENTS: &[(&str, &str, &str)] = &[
    ("model", "name", "The model to use from the next turn on"),
    (
        "effort",
        "level",
        "The reasoning effort to use from the next turn on",
    ),
    ("cwd", "folder", "A folder inside the project roots"),
    ("threads", "page", "Which page of threads (1 is the newest)"),
    (
        "resume",
        "id",
        "A thread id from /threads, or its first characters",
    ),
    ("get", "path", "A file in this chat's folder"),
];

pub const HELP: &str = "Talk to Codex: every message goes to this chat's Codex thread, \
which lasts until /new.\n\
/new - start a fresh Codex thread (the old one stays in the history)\n\
/stop - interrupt the running turn\n\
/status - thread, turns, token usage, model and working directory\n\
/compact - ask Codex to compact this thread's context\n\
/model [NAME] - this chat's model and the choices; with a name, use it from the next turn\n\
/effort [LEVEL] - the model's reasoning effort and the choices; with a level, use it\n\
/cwd [DIR] - this chat's folder; with a folder inside the project roots, move there\n\
/usage - the account's rate limits and this chat's context use\n\
/threads [PAGE] - recent Codex threads here, the terminal's and IDE's included\n\
/resume ID - continue that thread in this chat (the current one stays in the history)\n\
/get PATH - send a file from this chat's folder (20 MB at most)\n\
/steer, /queue - whether a message sent while Codex works joins the running turn or waits\n\
/review - Codex's code review of the uncommitted changes in this chat's folder\n\
/login, /logout - log Codex in with a device code, or out (admins, in a direct message)\n\
/help - this text\n\
Send files, photos and (with transcription set up) voice notes: they are saved in the \
chat's folder under attachments/ and Codex is told where.\n\
Your choices of model, effort, folder and /steer or /queue are kept across restarts and /new.";

/// Parses a message. A command is a lone `/word`, optionally `/word@botname` (as Telegram
/// sends it) and optionally followed by text; `/tmp/x` and the like stay plain text.
pub fn parse(text: &str) -> Input<'_> {
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return Input::Empty;
    }
    if trimmed.len() > MAX_INPUT_BYTES {
        return Input::TooLong {
            bytes: trimmed.len(),
        };
    }
    let first_word = trimmed.split_whitespace().next().unwrap_or_default();
    let Some(name) = first_word.strip_prefix('/') else {
        return Input::Text(body(text));
    };
    let name = name.split_once('@').map_or(name, |(name, _bot)| name);
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Input::Text(body(text));
    }
    let command = match name.to_ascii_lowercase().as_str() {
        "new" | "reset" => Command::New,
        "stop" => Command::Stop,
        "status" => Command::Status,
        "compact" => Command::Compact,
        "help" | "start" => Command::Help,
        "model" => Command::Model,
        "effort" => Command::Effort,
        "cwd" => Command::Cwd,
        "usage" => Command::Usage,
        "threads" => Command::Threads,
        "resume" => Command::Resume,
        "review" => Command::Review,
        "get" => Command::Get,
        "steer" => Command::Steer,
        "queue" => Command::Queue,
        "login" => Command::Login,
        "logout" => Command::Logout,
        _ => return Input::UnknownCommand(first_word),
    };
    Input::Command(command)
}

/// What follows a command's name (`/model gpt-5` gives `gpt-5`), trimmed.
pub fn argument(text: &str) -> &str {
    let text = text.trim();
    text.find(char::is_whitespace)
        .map_or("", |end| text[end..].trim())
}

/// The text as Codex gets it: blank lines around it dropped, the rest as typed (the first
/// line's indentation included, as in pasted code).
fn body(text: &str) -> &str {
    let text = text.trim_end();
    let blank_lines = text.len() - text.trim_start().len();
    let first_line = text[..blank_lines]
        .rfind('\n')
        .map_or(0, |newline| newline + 1);
    &text[first_line..]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_argument_is_what_follows_its_name() {
        assert_eq!(argument("/model  gpt-5.1 "), "gpt-5.1");
        assert_eq!(argument("/cwd@bot sub dir"), "sub dir");
        assert_eq!(argument("/model"), "");
    }

    #[test]
    fn parses_table() {
        let cases: &[(&str, Input)] = &[
            ("/new", Input::Command(Command::New)),
            ("  /NEW  ", Input::Command(Command::New)),
            ("/new@codex_bot", Input::Command(Command::New)),
            ("/reset", Input::Command(Command::New)),
            ("/stop", Input::Command(Command::Stop)),
            ("/status please", Input::Command(Command::Status)),
            ("/compact", Input::Command(Command::Compact)),
            ("/help", Input::Command(Command::Help)),
            ("/start", Input::Command(Command::Help)),
            ("/model gpt-5", Input::Command(Command::Model)),
            ("/effort", Input::Command(Command::Effort)),
            ("/cwd ../x", Input::Command(Command::Cwd)),
            ("/usage", Input::Command(Command::Usage)),
            ("/threads 2", Input::Command(Command::Threads)),
            ("/resume 019a", Input::Command(Command::Resume)),
            ("/review", Input::Command(Command::Review)),
            ("/get out.txt", Input::Command(Command::Get)),
            ("/steer", Input::Command(Command::Steer)),
            ("/queue", Input::Command(Command::Queue)),
            ("/login", Input::Command(Command::Login)),
            ("/logout", Input::Command(Command::Logout)),
            ("/frobnicate", Input::UnknownCommand("/frobnicate")),
            ("/frob@bot x", Input::UnknownCommand("/frob@bot")),
            (
                "/tmp/notes.txt is empty",
                Input::Text("/tmp/notes.txt is empty"),
            ),
            ("/", Input::Text("/")),
            ("hello /new", Input::Text("hello /new")),
            (
                "  read file notes.txt \n",
                Input::Text("  read file notes.txt"),
            ),
            (
                "\n\n    indented()\n\tnext  line\n\n",
                Input::Text("    indented()\n\tnext  line"),
            ),
            ("", Input::Empty),
            (" \t\n ", Input::Empty),
        ];
        for (text, expected) in cases {
            assert_eq!(&parse(text), expected, "input {text:?}");
        }
    }

    #[test]
    fn refuses_oversized_input() {
        let huge = "x".repeat(MAX_INPUT_BYTES + 1);
        assert_eq!(
            parse(&huge),
            Input::TooLong {
                bytes: MAX_INPUT_BYTES + 1
            }
        );
        assert!(matches!(
            parse(&"x".repeat(MAX_INPUT_BYTES)),
            Input::Text(_)
        ));
    }
}
