//! The chat's commands. Each is one file: its spec (name, aliases, menu and help lines,
//! its argument, whether it answers during a turn, admin-only, whether it offers buttons),
//! its typed argument and parse, its handler and its texts. They are registered once, in
//! the list at the foot of this file: the parser, `/help`, Telegram's command menu,
//! Discord's slash commands and the buttons that stand for a command all come from it.

use crate::router::{Actor, Replies};

/// Longest message passed to Codex; longer input is refused with a clear answer.
pub const MAX_INPUT_BYTES: usize = 256 * 1024;

/// What the menus, `/help` and the actor know of a command.
#[derive(Debug)]
pub struct Spec {
    pub name: &'static str,
    /// Other names it answers to.
    pub aliases: &'static [&'static str],
    pub argument: Option<Argument>,
    /// Its line in the platforms' command menus.
    pub menu: &'static str,
    /// Its line in `/help`, after `/name ARGUMENT - `.
    pub help: &'static str,
    /// Answered at once while a turn runs (anything else waits for the turn).
    pub during_turn: bool,
    /// Only for admins, in a direct message.
    pub admin_only: bool,
    /// It asks Codex for a turn, like a message (it waits out a usage limit).
    pub starts_turn: bool,
    /// Its listings offer their options as buttons that send it.
    pub buttons: bool,
    /// One press answers the card its buttons are under: they go, and who chose shows.
    pub answers_card: bool,
}

/// A command's argument, as slash commands offer it.
#[derive(Debug, PartialEq, Eq)]
pub struct Argument {
    pub name: &'static str,
    pub about: &'static str,
    /// How `/help` shows it (`[NAME]`, or `PATH` where it is needed).
    pub shown: &'static str,
}

impl Spec {
    /// A command without an argument that only runs between turns.
    pub const fn plain(name: &'static str, menu: &'static str, help: &'static str) -> Self {
        Spec {
            name,
            aliases: &[],
            argument: None,
            menu,
            help,
            during_turn: false,
            admin_only: false,
            starts_turn: false,
            buttons: false,
            answers_card: false,
        }
    }

    fn is_called(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// Entries are told apart by name (each is listed once).
impl PartialEq for Spec {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Spec {}

/// One chat command: its spec, what it takes, and what it does.
pub(crate) trait ChatCommand: Sized {
    const SPEC: Spec;

    /// The command of its argument (what follows its name, trimmed), or why not.
    fn parse(argument: &str) -> Result<Self, String>;

    /// Runs it in the chat, no turn running (or, for `during_turn` ones, during one).
    async fn run(self, chat: &mut Actor, replies: &Replies<'_>);
}

/// A choice named by one word (a model, an effort): none lists the choices, `default`
/// goes back to the configured one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    List,
    Default,
    Named(String),
}

impl Pick {
    /// `argument` of `command` as a pick: one word of at most `max` characters.
    fn parse(argument: &str, command: &str, max: usize) -> Result<Self, String> {
        let length = argument.chars().count();
        match argument {
            "" => Ok(Pick::List),
            default if default.eq_ignore_ascii_case("default") => Ok(Pick::Default),
            _ if length > max => Err(format!(
                "That name is {length} characters long; {command} takes at most {max}. \
                 Nothing changed."
            )),
            _ if argument.chars().any(char::is_whitespace) => Err(format!(
                "{command} takes one word; nothing changed. Say {command} alone to see the \
                 choices."
            )),
            name => Ok(Pick::Named(name.to_owned())),
        }
    }
}

/// An argument that may be left out.
fn optional(argument: &str) -> Option<String> {
    (!argument.is_empty()).then(|| argument.to_owned())
}

/// What a person typed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Input<'a> {
    Command(Command),
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
    match Command::named(&name.to_ascii_lowercase(), argument(trimmed)) {
        None => Input::UnknownCommand(first_word),
        Some(Ok(command)) => Input::Command(command),
        Some(Err(why)) => Input::BadArgument(why),
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

/// `/help`: what the bot does, a line per command, and what else it takes.
pub fn help() -> String {
    let mut text = String::from(
        "Talk to Codex: every message goes to this chat's Codex thread, which lasts until /new.",
    );
    for spec in SPECS {
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

/// The spec of the command called `name` whose listings offer buttons.
pub fn with_buttons(name: &str) -> Option<&'static Spec> {
    SPECS.iter().copied().find(|s| s.buttons && s.name == name)
}

/// Registers the commands, in menu order: each `module::Type` implements
/// [`ChatCommand`].
macro_rules! commands {
    ($($module:ident :: $command:ident),* $(,)?) => {
        $(pub(crate) mod $module;)*

        /// A command with its argument, as parsed.
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub enum Command {
            $($command($module::$command),)*
        }

        /// Every command's spec, in menu order.
        pub const SPECS: &[&Spec] = &[$(&<$module::$command as ChatCommand>::SPEC),*];

        impl Command {
            pub fn spec(&self) -> &'static Spec {
                match self {
                    $(Command::$command(_) => &<$module::$command as ChatCommand>::SPEC,)*
                }
            }

            /// The command called `name` of `argument`; `None` when none is called so.
            fn named(name: &str, argument: &str) -> Option<Result<Command, String>> {
                $(
                    if <$module::$command as ChatCommand>::SPEC.is_called(name) {
                        let parsed = <$module::$command as ChatCommand>::parse(argument);
                        return Some(parsed.map(Command::$command));
                    }
                )*
                None
            }

            pub(crate) async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
                match self {
                    $(Command::$command(command) => command.run(chat, replies).await,)*
                }
            }
        }
    };
}

commands! {
    new::New,
    stop::Stop,
    status::Status,
    compact::Compact,
    model::Model,
    effort::Effort,
    cwd::Cwd,
    usage::Usage,
    threads::Threads,
    resume::Resume,
    review::Review,
    get::Get,
    steer::Steer,
    queue::Queue,
    verbose::Verbose,
    quiet::Quiet,
    notify::SetNotify,
    diff::Diff,
    last::Last,
    r#continue::Continue,
    mode::SetMode,
    fork::Fork,
    undo::Undo,
    name::Name,
    attach::Attach,
    task::Task,
    worktree::Worktree,
    worktrees::Worktrees,
    merge::Merge,
    discard::Discard,
    answer::Answer,
    every::Every,
    at::At,
    jobs::Jobs,
    unschedule::Unschedule,
    login::Login,
    logout::Logout,
    help::Help,
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
            Input::Command(command) => command,
            other => panic!("{text:?} is no command: {other:?}"),
        }
    }

    /// How a message reads is the parser's; each command's argument is tested in its file.
    #[test]
    fn names_aliases_and_bots_are_read_and_the_rest_is_text() {
        for text in ["/new", "  /NEW  ", "/new@codex_bot", "/reset", "/new now"] {
            assert_eq!(command(text), Command::New(new::New), "{text:?}");
        }
        assert_eq!(command("/start"), Command::Help(help::Help));
        assert_eq!(
            command("/get@bot sub dir/a b.txt "),
            Command::Get(get::Get("sub dir/a b.txt".into()))
        );
        let inputs: &[(&str, Input)] = &[
            ("/frobnicate", Input::UnknownCommand("/frobnicate")),
            ("/frob@bot x", Input::UnknownCommand("/frob@bot")),
            (
                "/threads x",
                Input::BadArgument("/threads takes a page number, not \"x\".".into()),
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

    /// The list is the only one: each entry parses to itself, and `/help` and the menus
    /// show every one.
    #[test]
    fn every_command_comes_from_its_entry() {
        let help = help();
        let mut names = std::collections::HashSet::new();
        for spec in SPECS {
            for name in std::iter::once(&spec.name).chain(spec.aliases) {
                assert!(names.insert(*name), "/{name} is listed twice");
                // A required argument refuses its absence; the name is still the command's.
                match parse(&format!("/{name}")) {
                    Input::Command(parsed) => assert_eq!(parsed.spec(), *spec),
                    Input::BadArgument(why) => assert!(spec.argument.is_some(), "{why}"),
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
        let names = |pick: fn(&Spec) -> bool| -> Vec<&str> {
            SPECS.iter().filter(|s| pick(s)).map(|s| s.name).collect()
        };
        let during_turn = [
            "stop",
            "status",
            "last",
            "attach",
            "task",
            "answer",
            "every",
            "at",
            "jobs",
            "unschedule",
            "help",
        ];
        assert_eq!(names(|s| s.during_turn), during_turn);
        assert_eq!(names(|s| s.starts_turn), ["review", "continue"]);
        let buttons = [
            "stop", "model", "effort", "get", "notify", "last", "continue", "mode", "discard",
            "answer",
        ];
        assert_eq!(names(|s| s.buttons), buttons);
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
