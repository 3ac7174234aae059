//! Reading Discord messages: who may talk, when the bot is addressed, what the text is
//! without the bot's mention. Pure functions.

use serenity::all::{Message, MessageType, RoleId};

use crate::config::DiscordConfig;
use crate::platform::mention;

/// Allowed by user id, or by one of the member's roles.
pub fn is_allowed(config: &DiscordConfig, user_id: u64, roles: &[u64]) -> bool {
    config.allowed_users.contains(&user_id)
        || roles.iter().any(|r| config.allowed_roles.contains(r))
}

/// Only what a person wrote: not bots, not system messages (pins, joins, threads).
pub fn is_persons_message(message: &Message) -> bool {
    let written = matches!(
        message.kind,
        MessageType::Regular | MessageType::InlineReply
    );
    written && !message.author.bot
}

/// A member's role ids (from a message's partial member or an interaction's member).
pub fn role_ids(roles: Option<&[RoleId]>) -> Vec<u64> {
    roles.map_or_else(Vec::new, |roles| roles.iter().map(|r| r.get()).collect())
}

/// Whether `content` mentions the bot (`<@id>` or the older `<@!id>`).
pub fn mentions(content: &str, bot_id: u64) -> bool {
    content.contains(&format!("<@{bot_id}>")) || content.contains(&format!("<@!{bot_id}>"))
}

/// The text without the bot's mentions (`<@id>` and `<@!id>`, and `<@&role>` of its own
/// `role`); all else as typed.
pub fn strip_mention(content: &str, bot_id: u64, role: Option<u64>) -> String {
    let text = mention::strip_mention(content, &format!("<@!{bot_id}>"));
    let text = mention::strip_mention(&text, &format!("<@{bot_id}>"));
    match role {
        Some(role) => mention::strip_mention(&text, &format!("<@&{role}>")),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_by_user_or_role() {
        let config = DiscordConfig {
            allowed_users: vec![1],
            allowed_roles: vec![50],
            ..DiscordConfig::default()
        };
        assert!(is_allowed(&config, 1, &[]));
        assert!(is_allowed(&config, 2, &[49, 50]));
        assert!(!is_allowed(&config, 2, &[49]));
        assert!(
            !is_allowed(&DiscordConfig::default(), 1, &[50]),
            "deny by default"
        );
    }

    #[test]
    fn mentions_are_found_and_removed() {
        assert!(mentions("<@42> read x", 42));
        assert!(mentions("hey <@!42>", 42));
        assert!(!mentions("<@421> read", 42));
        assert_eq!(
            strip_mention("<@42> read  file\n\tx", 42, None),
            "read  file\n\tx"
        );
        assert_eq!(strip_mention("hey <@!42>, go", 42, None), "hey go");
        assert_eq!(strip_mention("<@&7> go <@&8>", 42, Some(7)), "go <@&8>");
    }
}
