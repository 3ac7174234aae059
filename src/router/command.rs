//! Reads what a person typed: a gateway command or a message for Codex. No I/O.
//!
//! [`COMMANDS`] is the one table of commands: the parser, `/help`, Telegram's command menu
//! and Discord's slash commands are derived from it. Adding a command is an entry there and
//! its handler in `actor/`.

/// Longest message passed to Codex; longer input is refused with a clear answer.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

/// A gateway command with its argument parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Command {
    New,
    Stop,
    Status,
    Compact,
    Help,
    /// A model name; empty lists the choices.
    Model(String),
    /// A reasoning effort; empty lists the choices.
    Effort(String),
    /// A folder; empty shows the chat's folder and the roots.
    Cwd(String),
    Usage,
    /// The page of threads, from 1 (the newest).
    Threads(usize),
    /// A thread id or its first characters.
    Resume(String),
    Login,
    Logout,
    Review,
    /// A path in the chat's folder.
    Get(String),
    Steer,
    Queue,
    Verbose,
    Quiet,
    Diff,
    Last,
    /// What to tell Codex in the chat's thread; empty says "continue".
    Continue(String),
    /// `read-only`, `auto`, `full` or `default`; empty shows the chat's mode.
    Mode(String),
    Fork,
    Undo,
    /// The thread's new name; empty asks for one.
    Name(String),
    /// The answer to the question Codex asks: an option's number or label, or text.
    Answer(String),
    /// `INTERVAL PROMPT` or `"CRON" PROMPT`, read against the clock by the handler.
    Every(String),
    /// `TIME PROMPT`, read against the clock by the handler.
    At(String),
    Jobs,
    /// `None`: which was not said.
    Unschedule(Option<JobTarget>),
}

/// Which of the chat's jobs `/unschedule` removes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JobTarget {
    One(i64),
    All,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    Command(&'static CommandSpec, Command),
    /// Looks like a command (`/word`) but is none of ours.
    UnknownCommand(&'a str),
    /// One of ours with an argument it cannot take; the text says why.
    BadArgument(String),
    Text(&'a str),
    Empty,
    TooLong {
        bytes: usize,
    },
}

/// One command: its names, its argument, how the menus and `/help` show it, and when it
/// may run. Everything that lists commands is derived from [`COMMANDS`].
#[derive(Debug)]
pub struct CommandSpec {
    pub name: &'static str,
    /// Other names it answers to.
    aliases: &'static [&'static str],
    pub argument: Option<Argument>,
    /// Its line in the platforms' command menus.
    pub menu: &'static str,
    /// Its line in `/help`, after `/name ARGUMENT - `.
    help: &'static str,
    /// Answered at once while a turn runs (anything else waits for the turn).
    pub during_turn: bool,
    /// Only for admins, in a direct message.
    pub admin_only: bool,
    /// Makes the command of its argument (what follows the name, trimmed).
    build: fn(&str) -> Result<Command, String>,
}

/// Entries are told apart by name (each is listed once).
impl PartialEq for CommandSpec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for CommandSpec {}

/// A command's optional argument, as slash commands offer it.
#[derive(Debug, PartialEq, Eq)]
pub struct Argument {
    pub name: &'static str,
    pub about: &'static str,
    /// How `/help` shows it (`[NAME]`, or `PATH` where it is needed).
    shown: &'static str,
}

const fn plain(
    name: &'static str,
    menu: &'static str,
    help: &'static str,
    build: fn(&str) -> Result<Command, String>,
) -> CommandSpec {
    CommandSpec {
        name,
        aliases: &[],
        argument: None,
        menu,
        help,
        during_turn: false,
        admin_only: false,
        build,
    }
}

/// Every command, in menu order.
pub const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        aliases: &["reset"],
        ..plain(
            "new",
            "Start a fresh Codex thread",
            "start a fresh Codex thread (the old one stays in the history)",
            |_| Ok(Command::New),
        )
    },
    CommandSpec {
        during_turn: true,
        ..plain(
            "stop",
            "Interrupt the running turn",
            "interrupt the running turn",
            |_| Ok(Command::Stop),
        )
    },
    CommandSpec {
        during_turn: true,
        ..plain(
            "status",
            "Thread, usage, model and working directory",
            "thread, turns, token usage, model and working directory",
            |_| Ok(Command::Status),
        )
    },
    plain(
        "compact",
        "Compact this thread's context",
        "ask Codex to compact this thread's context",
        |_| Ok(Command::Compact),
    ),
    CommandSpec {
        argument: Some(Argument {
            name: "name",
            about: "The model to use from the next turn on",
            shown: "[NAME]",
        }),
        ..plain(
            "model",
            "Show or choose this chat's model",
            "this chat's model and the choices; with a name, use it from the next turn",
            |name| Ok(Command::Model(name.to_owned())),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "level",
            about: "The reasoning effort to use from the next turn on",
            shown: "[LEVEL]",
        }),
        ..plain(
            "effort",
            "Show or choose the model's reasoning effort",
            "the model's reasoning effort and the choices; with a level, use it",
            |level| Ok(Command::Effort(level.to_owned())),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "folder",
            about: "A folder inside the project roots",
            shown: "[DIR]",
        }),
        ..plain(
            "cwd",
            "Show or move this chat's folder",
            "this chat's folder; with a folder inside the project roots, move there",
            |dir| Ok(Command::Cwd(dir.to_owned())),
        )
    },
    plain(
        "usage",
        "Rate limits and this chat's context use",
        "the account's rate limits and this chat's context use",
        |_| Ok(Command::Usage),
    ),
    CommandSpec {
        argument: Some(Argument {
            name: "page",
            about: "Which page of threads (1 is the newest)",
            shown: "[PAGE]",
        }),
        ..plain(
            "threads",
            "Recent Codex threads on this machine",
            "recent Codex threads here, the terminal's and IDE's included",
            threads_page,
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "id",
            about: "A thread id from /threads, or its first characters",
            shown: "ID",
        }),
        ..plain(
            "resume",
            "Continue a listed thread in this chat",
            "continue that thread in this chat (the current one stays in the history)",
            |id| Ok(Command::Resume(id.to_owned())),
        )
    },
    plain(
        "review",
        "Codex reviews the uncommitted changes in this chat's folder",
        "Codex's code review of the uncommitted changes in this chat's folder",
        |_| Ok(Command::Review),
    ),
    CommandSpec {
        argument: Some(Argument {
            name: "path",
            about: "A file in this chat's folder",
            shown: "PATH",
        }),
        ..plain(
            "get",
            "Send a file from this chat's folder",
            "send a file from this chat's folder (20 MB at most)",
            |path| Ok(Command::Get(path.to_owned())),
        )
    },
    plain(
        "steer",
        "Messages sent while Codex works join the running turn",
        "a message sent while Codex works joins the running turn (the default)",
        |_| Ok(Command::Steer),
    ),
    plain(
        "queue",
        "Messages sent while Codex works wait for the next turn",
        "a message sent while Codex works waits and runs as the next turn",
        |_| Ok(Command::Queue),
    ),
    plain(
        "verbose",
        "Show every command and commentary line of a running turn",
        "the status of a running turn lists every command and commentary line (again: back to the short status)",
        |_| Ok(Command::Verbose),
    ),
    plain(
        "quiet",
        "Show only typing and the answer while Codex works",
        "only the typing indicator and the answer while Codex works (again: the status is back)",
        |_| Ok(Command::Quiet),
    ),
    plain(
        "diff",
        "Send the last turn's changes as a .diff file",
        "send the unified diff of the files Codex changed in the last turn",
        |_| Ok(Command::Diff),
    ),
    CommandSpec {
        during_turn: true,
        ..plain(
            "last",
            "Send Codex's last answer again",
            "send Codex's last answer in this chat again",
            |_| Ok(Command::Last),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "text",
            about: "What to tell Codex (default: continue)",
            shown: "[TEXT]",
        }),
        ..plain(
            "continue",
            "Have Codex go on with an interrupted turn",
            "have Codex go on where its turn was cut off (a restart, /stop): sends TEXT, or \"continue\", into the thread",
            |text| Ok(Command::Continue(text.to_owned())),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "mode",
            about: "read-only, auto, full (admins) or default",
            shown: "[MODE]",
        }),
        ..plain(
            "mode",
            "Sandbox and approvals: read-only, auto or full",
            "the chat's sandbox and approvals: read-only (Codex reads; more asks first), auto (writes in the workspace, asks beyond it), full (no sandbox, no questions; admins only) or default (the config's)",
            |mode| Ok(Command::Mode(mode.to_lowercase())),
        )
    },
    plain(
        "fork",
        "Go on in a copy of this thread",
        "go on in a copy of this chat's thread, context and all; the original stays in /threads",
        |_| Ok(Command::Fork),
    ),
    plain(
        "undo",
        "Take the last turn out of Codex's context",
        "take the last turn out of Codex's context (files it changed are not restored)",
        |_| Ok(Command::Undo),
    ),
    CommandSpec {
        argument: Some(Argument {
            name: "title",
            about: "The thread's name",
            shown: "TITLE",
        }),
        ..plain(
            "name",
            "Name this chat's thread",
            "name this chat's thread (shown by /status and /threads)",
            |title| Ok(Command::Name(title.to_owned())),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "reply",
            about: "An option's number or label, or your own answer",
            shown: "REPLY",
        }),
        during_turn: true,
        ..plain(
            "answer",
            "Answer the question Codex asks",
            "answer the question Codex asks: an option's number or label, or your own words (a plain message does the same while Codex waits)",
            |reply| Ok(Command::Answer(reply.to_owned())),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "schedule",
            about: "15m PROMPT, or \"0 9 * * 1-5\" PROMPT (cron)",
            shown: "INTERVAL PROMPT",
        }),
        during_turn: true,
        ..plain(
            "every",
            "Run a prompt on a schedule in this thread",
            "run PROMPT in this chat's thread every INTERVAL (15m, 2h, 1d) or on a cron pattern in quotes (\"0 9 * * 1-5\": weekdays at 9)",
            |schedule| Ok(Command::Every(schedule.to_owned())),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "when",
            about: "14:30 PROMPT, 2026-12-24 09:00 PROMPT, or in 2h PROMPT",
            shown: "TIME PROMPT",
        }),
        during_turn: true,
        ..plain(
            "at",
            "Run a prompt once, later, in this thread",
            "run PROMPT once in this chat's thread at TIME (14:30, 2026-12-24 09:00, in 2h)",
            |when| Ok(Command::At(when.to_owned())),
        )
    },
    CommandSpec {
        during_turn: true,
        ..plain(
            "jobs",
            "This chat's scheduled jobs",
            "this chat's scheduled jobs: number, schedule, next run and last result",
            |_| Ok(Command::Jobs),
        )
    },
    CommandSpec {
        argument: Some(Argument {
            name: "job",
            about: "A job's number from /jobs, or all",
            shown: "ID|all",
        }),
        during_turn: true,
        ..plain(
            "unschedule",
            "Remove a scheduled job",
            "remove a job of /jobs, or all of this chat's (its creator or an admin)",
            unschedule_target,
        )
    },
    CommandSpec {
        admin_only: true,
        ..plain(
            "login",
            "Log Codex in (admins, in a direct message)",
            "log Codex in with a device code (admins, in a direct message)",
            |_| Ok(Command::Login),
        )
    },
    CommandSpec {
        admin_only: true,
        ..plain(
            "logout",
            "Log Codex out (admins, in a direct message)",
            "log Codex out (admins, in a direct message)",
            |_| Ok(Command::Logout),
        )
    },
    CommandSpec {
        aliases: &["start"],
        during_turn: true,
        ..plain("help", "What this bot does", "this text", |_| {
            Ok(Command::Help)
        })
    },
];

fn threads_page(page: &str) -> Result<Command, String> {
    match page {
        "" => Ok(Command::Threads(1)),
        page => match page.parse::<usize>() {
            Ok(page) if page >= 1 => Ok(Command::Threads(page)),
            _ => Err(format!("/threads takes a page number, not {page:?}.")),
        },
    }
}

fn unschedule_target(target: &str) -> Result<Command, String> {
    match target {
        "" => Ok(Command::Unschedule(None)),
        "all" => Ok(Command::Unschedule(Some(JobTarget::All))),
        id => match id.trim_start_matches('#').parse::<i64>() {
            Ok(id) => Ok(Command::Unschedule(Some(JobTarget::One(id)))),
            Err(_) => Err(format!(
                "/unschedule takes a job's number from /jobs, or all (not {id:?})."
            )),
        },
    }
}

/// `/help`: what the bot does, a line per command, and what else it takes.
pub fn help() -> String {
    let mut text = String::from(
        "Talk to Codex: every message goes to this chat's Codex thread, which lasts until /new.",
    );
    for spec in COMMANDS {
        let shown = spec
            .argument
            .as_ref()
            .map_or(String::new(), |a| format!(" {}", a.shown));
        text.push_str(&format!("\n/{}{shown} - {}", spec.name, spec.help));
    }
    text.push_str(
        "\nSend files, photos and (with transcription set up) voice notes: they are saved in \
         the chat's folder under attachments/ and Codex is told where.\n\
         Your choices of model, effort, folder and /steer or /queue are kept across restarts \
         and /new.",
    );
    text
}

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
    let name = name.to_ascii_lowercase();
    let named = |spec: &&CommandSpec| spec.name == name || spec.aliases.contains(&name.as_str());
    let Some(spec) = COMMANDS.iter().find(named) else {
        return Input::UnknownCommand(first_word);
    };
    match (spec.build)(argument(trimmed)) {
        Ok(command) => Input::Command(spec, command),
        Err(why) => Input::BadArgument(why),
    }
}

/// What follows a command's name (`/model gpt-5` gives `gpt-5`), trimmed.
fn argument(text: &str) -> &str {
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

    fn command(text: &str) -> Command {
        match parse(text) {
            Input::Command(_, command) => command,
            other => panic!("{text:?} is no command: {other:?}"),
        }
    }

    #[test]
    fn parses_table() {
        let cases: &[(&str, Command)] = &[
            ("/new", Command::New),
            ("  /NEW  ", Command::New),
            ("/new@codex_bot", Command::New),
            ("/reset", Command::New),
            ("/stop", Command::Stop),
            ("/status please", Command::Status),
            ("/compact", Command::Compact),
            ("/help", Command::Help),
            ("/start", Command::Help),
            ("/model gpt-5", Command::Model("gpt-5".into())),
            ("/model", Command::Model(String::new())),
            ("/effort", Command::Effort(String::new())),
            ("/cwd ../x", Command::Cwd("../x".into())),
            ("/usage", Command::Usage),
            ("/threads", Command::Threads(1)),
            ("/threads 2", Command::Threads(2)),
            ("/resume 019a", Command::Resume("019a".into())),
            ("/review", Command::Review),
            ("/get out.txt", Command::Get("out.txt".into())),
            (
                "/get@bot sub dir/a b.txt ",
                Command::Get("sub dir/a b.txt".into()),
            ),
            ("/steer", Command::Steer),
            ("/queue", Command::Queue),
            ("/verbose", Command::Verbose),
            ("/quiet", Command::Quiet),
            ("/diff", Command::Diff),
            ("/last", Command::Last),
            ("/last send again", Command::Last),
            ("/continue", Command::Continue(String::new())),
            ("/continue go on", Command::Continue("go on".into())),
            ("/login", Command::Login),
            ("/logout", Command::Logout),
            ("/every 10m check CI", Command::Every("10m check CI".into())),
            ("/at in 2h look", Command::At("in 2h look".into())),
            ("/jobs", Command::Jobs),
            (
                "/unschedule 3",
                Command::Unschedule(Some(JobTarget::One(3))),
            ),
            (
                "/unschedule #3",
                Command::Unschedule(Some(JobTarget::One(3))),
            ),
            ("/unschedule all", Command::Unschedule(Some(JobTarget::All))),
            ("/unschedule", Command::Unschedule(None)),
            ("/every", Command::Every(String::new())),
        ];
        for (text, expected) in cases {
            assert_eq!(&command(text), expected, "input {text:?}");
        }
        let inputs: &[(&str, Input)] = &[
            ("/frobnicate", Input::UnknownCommand("/frobnicate")),
            ("/frob@bot x", Input::UnknownCommand("/frob@bot")),
            (
                "/threads x",
                Input::BadArgument("/threads takes a page number, not \"x\".".into()),
            ),
            (
                "/threads 0",
                Input::BadArgument("/threads takes a page number, not \"0\".".into()),
            ),
            (
                "/unschedule soon",
                Input::BadArgument(
                    "/unschedule takes a job's number from /jobs, or all (not \"soon\").".into(),
                ),
            ),
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
        for (text, expected) in inputs {
            assert_eq!(&parse(text), expected, "input {text:?}");
        }
    }

    /// The table is the only list: each entry parses to itself, and `/help` and the menus
    /// show every one.
    #[test]
    fn every_command_comes_from_its_entry() {
        let help = help();
        let mut names = std::collections::HashSet::new();
        for spec in COMMANDS {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                assert!(names.insert(*name), "/{name} is listed twice");
                match parse(&format!("/{name}")) {
                    Input::Command(parsed, _) => assert_eq!(parsed.name, spec.name),
                    other => panic!("/{name}: {other:?}"),
                }
            }
            assert!(
                help.contains(&format!("\n/{} ", spec.name)),
                "/{} not in help",
                spec.name
            );
            assert!(
                !spec.menu.is_empty() && spec.menu.len() <= 256,
                "/{}",
                spec.name
            );
        }
        let answered_during_a_turn: Vec<_> = COMMANDS
            .iter()
            .filter(|s| s.during_turn)
            .map(|s| s.name)
            .collect();
        let expected = [
            "stop",
            "status",
            "last",
            "answer",
            "every",
            "at",
            "jobs",
            "unschedule",
            "help",
        ];
        assert_eq!(answered_during_a_turn, expected);
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
