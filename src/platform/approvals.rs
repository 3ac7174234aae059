//! Approval buttons, the same on every platform: their data, and what a press does.

use tracing::{info, warn};

use crate::chat::{ActionKind, ApprovalPrompt, Decision};
use crate::router::Router;

/// The prompt's text: what Codex asks to do, where, and why.
pub fn prompt_text(prompt: &ApprovalPrompt) -> String {
    let mut text = match prompt.action {
        ActionKind::Command => "Codex asks to run a command",
        ActionKind::FileChange => "Codex asks to change files",
    }
    .to_owned();
    if let Some(command) = &prompt.command {
        text.push_str(&format!(":\n{command}"));
    }
    if let Some(cwd) = &prompt.cwd {
        text.push_str(&format!("\nin {cwd}"));
    }
    if let Some(reason) = &prompt.reason {
        text.push_str(&format!("\nReason: {reason}"));
    }
    text
}

/// Button data of an approval decision: `ap:<id>:<decision>` (fits Telegram's 64 bytes
/// and Discord's 100-character custom ids).
pub fn button_data(id: u64, decision: Decision) -> String {
    let code = match decision {
        Decision::Accept => 'a',
        Decision::AcceptForSession => 's',
        Decision::Decline => 'd',
        Decision::Cancel => 'c',
    };
    format!("ap:{id}:{code}")
}

fn parse_button_data(data: &str) -> Option<(u64, Decision)> {
    let rest = data.strip_prefix("ap:")?;
    let (id, code) = rest.split_once(':')?;
    let decision = match code {
        "a" => Decision::Accept,
        "s" => Decision::AcceptForSession,
        "d" => Decision::Decline,
        "c" => Decision::Cancel,
        _ => return None,
    };
    Some((id.parse().ok()?, decision))
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

/// Handles a press of an approval button (`data` as the platform delivered it).
pub async fn press(router: &Router, data: &str, presser: Presser<'_>) -> Pressed {
    let Some((id, decision)) = parse_button_data(data) else {
        return Pressed::Unknown("This button is not known to the bot.".into());
    };
    if !presser.allowed {
        warn!(
            user_id = presser.id,
            id, "refused an approval from a user who is not allowed"
        );
        return Pressed::Refused(format!(
            "You (user id {}) are not allowed to decide this.",
            presser.id
        ));
    }
    if router.decide_approval(id, decision).await {
        info!(user_id = presser.id, id, ?decision, "approval decided");
        Pressed::Settled(format!("{} by {}", decision.label(), presser.name))
    } else {
        Pressed::Settled("No longer pending (answered, timed out, or the turn ended).".into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn button_data_round_trips() {
        for decision in Decision::ALL {
            let data = button_data(u64::MAX, decision);
            assert!(data.len() <= 64);
            assert_eq!(parse_button_data(&data), Some((u64::MAX, decision)));
        }
        assert_eq!(parse_button_data("ap:1:x"), None);
        assert_eq!(parse_button_data("other"), None);
    }
}
