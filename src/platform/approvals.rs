//! Approval buttons, the same on every platform: their data, and what a press does.

use tracing::{info, warn};

use super::texts;
use crate::router::{Answer, ApprovalOutcome, Router};
use chat::{ActionKind, ApprovalId, ApprovalPrompt, ChatKey, Decision};

/// An approval prompt as every platform shows it: what is approved exactly, never cut,
/// with every character visible.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalCard {
    /// What Codex asks for ("Codex asks to run a command:").
    pub title: String,
    /// Where and why, one line each, made visible (Codex writes them too).
    pub details: Vec<String>,
    /// What is approved, made visible: the command, or the files one per line.
    pub body: String,
}

/// The name of the file the whole prompt is attached as when it does not fit a message.
pub const ATTACHMENT_NAME: &str = "approval.txt";

/// Room kept in a prompt message for the line that says who decided.
pub const VERDICT_ROOM: usize = 100;

impl ApprovalCard {
    pub fn of(prompt: &ApprovalPrompt) -> Self {
        let (title, body) = match prompt.action {
            ActionKind::Command => (
                texts::ASKS_TO_RUN,
                prompt
                    .command
                    .clone()
                    .unwrap_or_else(|| texts::NO_COMMAND_GIVEN.into()),
            ),
            ActionKind::FileChange if prompt.files.is_empty() => {
                (texts::ASKS_TO_CHANGE, texts::NO_FILES_GIVEN.into())
            }
            ActionKind::FileChange => (
                texts::ASKS_TO_CHANGE,
                prompt
                    .files
                    .iter()
                    .map(|(kind, path)| format!("{kind} {path}"))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            ActionKind::Permissions if prompt.permissions.is_empty() => {
                (texts::ASKS_FOR_ACCESS, texts::NO_ACCESS_GIVEN.into())
            }
            ActionKind::Permissions => (texts::ASKS_FOR_ACCESS, prompt.permissions.join("\n")),
        };
        let mut details = Vec::new();
        if let Some(cwd) = &prompt.cwd {
            details.push(texts::approval_folder(&visible(cwd)));
        }
        if let Some(root) = &prompt.grant_root {
            details.push(texts::approval_grant_root(&visible(root)));
        }
        if let Some(reason) = &prompt.reason {
            details.push(texts::approval_reason(&visible(reason)));
        }
        if prompt.decisions.is_empty() {
            details.push(texts::NO_DECISION_OFFERED.into());
        }
        ApprovalCard {
            title: title.into(),
            details,
            body: visible(&body),
        }
    }

    /// The whole prompt as plain text, for the attached file.
    pub fn full_text(&self) -> String {
        let mut text = self.title.clone();
        for line in &self.details {
            text.push('\n');
            text.push_str(line);
        }
        text.push_str("\n\n");
        text.push_str(&self.body);
        text.push('\n');
        text
    }

    /// The line under the title when the prompt is attached instead of shown.
    pub fn attached_note(&self) -> String {
        texts::approval_attached(self.body.chars().count(), ATTACHMENT_NAME)
    }
}

/// `text` with every character that could hide or disguise part of it shown as
/// `<U+XXXX>`: controls (but newline and tab), bidi overrides, zero-width and other
/// invisible characters, and spaces that are not the ASCII space.
pub fn visible(text: &str) -> String {
    let mut shown = String::with_capacity(text.len());
    for c in text.chars() {
        if is_hidden(c) {
            shown.push_str(&format!("<U+{:04X}>", u32::from(c)));
        } else {
            shown.push(c);
        }
    }
    shown
}

fn is_hidden(c: char) -> bool {
    if c == '\n' || c == '\t' {
        return false;
    }
    c.is_control()
        || (c.is_whitespace() && c != ' ')
        || matches!(c,
            '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}'
            | '\u{17B5}' | '\u{180B}'..='\u{180F}' | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF0}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E0FFF}')
}

/// Button data of an approval decision: `ap:<run>:<seq>:<decision>`, the run in hex (at
/// most 45 bytes: fits Telegram's 64 bytes and Discord's 100-character custom ids).
pub fn button_data(id: ApprovalId, decision: Decision) -> String {
    let code = match decision {
        Decision::Accept => 'a',
        Decision::AcceptForSession => 's',
        Decision::Decline => 'd',
        Decision::Cancel => 'c',
    };
    format!("ap:{:x}:{}:{code}", id.run, id.seq)
}

fn parse_button_data(data: &str) -> Option<(ApprovalId, Decision)> {
    let mut parts = data.strip_prefix("ap:")?.split(':');
    let run = u64::from_str_radix(parts.next()?, 16).ok()?;
    let seq = parts.next()?.parse().ok()?;
    let decision = match parts.next()? {
        "a" => Decision::Accept,
        "s" => Decision::AcceptForSession,
        "d" => Decision::Decline,
        "c" => Decision::Cancel,
        _ => return None,
    };
    match parts.next() {
        Some(_) => None,
        None => Some((ApprovalId { run, seq }, decision)),
    }
}

/// `text` with `verdict` under it, or `None` when it already ends with it (a second press
/// of a prompt that shows the first answer).
pub fn with_verdict(text: &str, verdict: &str) -> Option<String> {
    (!text.trim_end().ends_with(verdict)).then(|| format!("{text}\n\n{verdict}"))
}

/// Who pressed a button.
pub struct Presser<'a> {
    pub id: u64,
    pub name: &'a str,
    /// Whether the platform's allowlist lets this person decide.
    pub allowed: bool,
}

/// What a button press came to; the platform shows it.
#[derive(Debug, PartialEq, Eq)]
pub enum Pressed {
    /// Not one of our buttons: tell the presser only.
    Unknown(String),
    /// The presser may not decide: tell them only, the prompt stays.
    Refused(String),
    /// Decided, or no longer pending: this line goes under the prompt, whose buttons go.
    Settled(String),
}

/// Handles a press of an approval button (`data` as the platform delivered it) under a
/// message in `place`.
pub async fn press(router: &Router, place: &ChatKey, data: &str, presser: Presser<'_>) -> Pressed {
    let Some((id, decision)) = parse_button_data(data) else {
        // Older gateways wrote `ap:<seq>:<decision>`, without their run.
        return match data.starts_with("ap:") {
            true => Pressed::Settled(texts::FROM_EARLIER_RUN.into()),
            false => Pressed::Unknown(texts::UNKNOWN_BUTTON.into()),
        };
    };
    if !presser.allowed {
        warn!(
            user_id = presser.id,
            id = id.seq,
            "refused an approval from a user who is not allowed"
        );
        return Pressed::Refused(texts::may_not_decide(presser.id));
    }
    let answer = Answer {
        decision,
        by: presser.name.to_owned(),
        at: crate::clock::unix_now(),
    };
    match router.decide_approval(place, id, answer.clone()).await {
        ApprovalOutcome::Decided => {
            info!(
                user_id = presser.id,
                id = id.seq,
                ?decision,
                "approval decided"
            );
            Pressed::Settled(texts::decided(&answer))
        }
        ApprovalOutcome::AnsweredBefore(first) => Pressed::Settled(texts::decided(&first)),
        ApprovalOutcome::FromEarlierRun => {
            info!(
                user_id = presser.id,
                "a button from an earlier run was pressed"
            );
            Pressed::Settled(texts::FROM_EARLIER_RUN.into())
        }
        ApprovalOutcome::NoLongerPending => Pressed::Settled(texts::NO_LONGER_PENDING.into()),
        ApprovalOutcome::NotThisChat => {
            warn!(
                user_id = presser.id,
                id = id.seq,
                chat = %place,
                "an approval button was pressed outside the request's chat; ignored"
            );
            Pressed::Unknown(texts::UNKNOWN_BUTTON.into())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_data_round_trips() {
        let id = ApprovalId {
            run: u64::MAX,
            seq: u64::MAX,
        };
        for decision in Decision::ALL {
            let data = button_data(id, decision);
            assert!(data.len() <= 64);
            assert_eq!(parse_button_data(&data), Some((id, decision)));
        }
        // Buttons of the runs before the id named its run decide nothing.
        assert_eq!(parse_button_data("ap:1:a"), None);
        assert_eq!(parse_button_data("ap:f:1:x"), None);
        assert_eq!(parse_button_data("ap:f:1:a:1"), None);
        assert_eq!(parse_button_data("other"), None);
    }

    #[test]
    fn a_verdict_is_added_once() {
        let shown = with_verdict("Codex asks", "Accept by Ann").unwrap();
        assert_eq!(shown, "Codex asks\n\nAccept by Ann");
        assert_eq!(with_verdict(&shown, "Accept by Ann"), None);
        assert!(with_verdict(&shown, "Decline by Bob").is_some());
    }

    fn command_prompt(command: &str) -> ApprovalPrompt {
        ApprovalPrompt {
            id: ApprovalId { run: 1, seq: 1 },
            action: ActionKind::Command,
            command: Some(command.into()),
            cwd: Some("/work".into()),
            reason: None,
            files: vec![],
            grant_root: None,
            permissions: Vec::new(),
            decisions: Decision::ALL.to_vec(),
        }
    }

    #[test]
    fn hidden_characters_are_made_visible() {
        let text = "rm -rf ./safe\u{202E}txt.sh\u{200B}\r\u{00A0}x\u{E0041}\n\tok ü ✓";
        assert_eq!(
            visible(text),
            "rm -rf ./safe<U+202E>txt.sh<U+200B><U+000D><U+00A0>x<U+E0041>\n\tok ü ✓"
        );
    }

    #[test]
    fn a_card_keeps_the_whole_command_and_shows_the_folder() {
        let command = format!("echo {}\u{202E}", "x".repeat(10_000));
        let card = ApprovalCard::of(&command_prompt(&command));
        assert_eq!(card.title, "Codex asks to run a command:");
        assert_eq!(card.details, ["in /work"]);
        assert_eq!(card.body, format!("echo {}<U+202E>", "x".repeat(10_000)));
        assert!(card.full_text().contains(&card.body));
    }

    #[test]
    fn a_file_change_card_lists_the_files_and_the_root_it_asks_for() {
        let prompt = ApprovalPrompt {
            action: ActionKind::FileChange,
            command: None,
            files: vec![
                ("add".into(), "src/new.rs".into()),
                ("update".into(), "README.md".into()),
            ],
            grant_root: Some("/etc".into()),
            permissions: Vec::new(),
            reason: Some("needs **root**".into()),
            ..command_prompt("")
        };
        let card = ApprovalCard::of(&prompt);
        assert_eq!(card.title, "Codex asks to change files:");
        assert_eq!(card.body, "add src/new.rs\nupdate README.md");
        assert!(card.details[1].contains("under /etc (outside the workspace)"));
        assert_eq!(card.details[2], "Reason: needs **root**");
    }
}
