//! Reading Telegram messages: who may talk, when the bot is addressed and which chat key
//! a message belongs to (and back: where a chat key's answers go). Pure functions.

use crate::commands::{self, Input};
use crate::config::GroupThreads;
use crate::platform::mention;
use chat::{ChatKey, Platform};

/// Where a message came from, as far as routing cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Origin {
    pub chat_id: i64,
    pub private: bool,
    /// Forum topic (`message_thread_id` of a topic message).
    pub topic: Option<i32>,
    pub user_id: u64,
}

/// The conversation a message belongs to: a DM, a topic of a DM (Bot API 9.3), a group,
/// a forum topic, or (per-user groups) one member within a group or topic.
pub fn chat_key(origin: Origin, mode: GroupThreads) -> ChatKey {
    let mut key = ChatKey::new(Platform::Telegram, origin.chat_id.to_string());
    if origin.private {
        key.topic = origin.topic.map(|topic| topic.to_string());
        return key;
    }
    let user = (mode == GroupThreads::PerUser).then(|| format!("u{}", origin.user_id));
    key.topic = match (origin.topic, user) {
        (Some(topic), Some(user)) => Some(format!("{topic}/{user}")),
        (Some(topic), None) => Some(topic.to_string()),
        (None, user) => user,
    };
    key
}

/// Where a chat's answers go, read back from its key: the Telegram chat id and the forum
/// topic, if any. `None` for a key that is not Telegram's.
pub fn address(chat: &ChatKey) -> Option<(i64, Option<i32>)> {
    if chat.platform != Platform::Telegram {
        return None;
    }
    let chat_id = chat.chat.parse().ok()?;
    let topic = chat
        .topic
        .as_deref()
        .and_then(|topic| topic.split('/').next())
        .and_then(|first| first.parse().ok());
    Some((chat_id, topic))
}

/// The key of topic `topic` of `chat`'s Telegram chat, for the same person where the
/// chat is a person's own within a group (`per_user`): where a topic `/task` opened from
/// `chat` is answered.
pub fn in_topic(chat: &ChatKey, topic: i32) -> ChatKey {
    let mut key = chat.clone();
    let person = chat
        .topic
        .as_deref()
        .and_then(|t| t.rsplit('/').next())
        .filter(|last| last.starts_with('u'));
    key.topic = Some(match person {
        Some(person) => format!("{topic}/{person}"),
        None => topic.to_string(),
    });
    key
}

/// In a group the bot answers when mentioned, replied to, or given one of its commands
/// (`/cmd` or `/cmd@thisbot`, not `/cmd@otherbot`).
pub fn addressed(text: &str, replies_to_bot: bool, bot_username: &str) -> bool {
    if replies_to_bot || mentions(text, bot_username) {
        return true;
    }
    let first = text.split_whitespace().next().unwrap_or_default();
    let for_us = first
        .split_once('@')
        .is_none_or(|(_, bot)| bot.eq_ignore_ascii_case(bot_username));
    for_us
        && matches!(
            commands::parse(first),
            Input::Command(..) | Input::UnknownCommand(_) | Input::BadArgument(_)
        )
}

fn mentions(text: &str, bot_username: &str) -> bool {
    text.split_whitespace().any(|word| {
        word.trim_end_matches([',', ':', '.', '!', '?'])
            .eq_ignore_ascii_case(&format!("@{bot_username}"))
    })
}

/// The text without the bot's @mention; all else as it was typed.
pub fn strip_mention(text: &str, bot_username: &str) -> String {
    mention::strip_mention(text, &format!("@{bot_username}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin(chat_id: i64, topic: Option<i32>) -> Origin {
        Origin {
            chat_id,
            private: chat_id > 0,
            topic,
            user_id: 77,
        }
    }

    #[test]
    fn chat_keys() {
        let per_chat = GroupThreads::PerChat;
        let per_user = GroupThreads::PerUser;
        assert_eq!(
            chat_key(origin(1001, None), per_user).to_string(),
            "telegram:1001"
        );
        assert_eq!(
            chat_key(origin(1001, Some(3)), per_user).to_string(),
            "telegram:1001/3",
            "each topic of a DM is a conversation of its own"
        );
        assert_eq!(
            chat_key(origin(-100, None), per_chat).to_string(),
            "telegram:-100"
        );
        assert_eq!(
            chat_key(origin(-100, Some(7)), per_chat).to_string(),
            "telegram:-100/7"
        );
        assert_eq!(
            chat_key(origin(-100, None), per_user).to_string(),
            "telegram:-100/u77"
        );
        assert_eq!(
            chat_key(origin(-100, Some(7)), per_user).to_string(),
            "telegram:-100/7/u77"
        );
    }

    #[test]
    fn answers_go_back_where_the_key_came_from() {
        for mode in [GroupThreads::PerChat, GroupThreads::PerUser] {
            for (chat_id, topic) in [(1001, None), (1001, Some(3)), (-100, None), (-100, Some(7))] {
                let key = chat_key(origin(chat_id, topic), mode);
                assert_eq!(address(&key), Some((chat_id, topic)), "{key}");
            }
        }
        assert_eq!(address(&ChatKey::new(Platform::Discord, "5")), None);
    }

    #[test]
    fn a_topic_opened_from_a_chat_is_keyed_as_its_messages_will_be() {
        for mode in [GroupThreads::PerChat, GroupThreads::PerUser] {
            for (chat_id, topic) in [(1001, None), (1001, Some(3)), (-100, None), (-100, Some(7))] {
                let asking = chat_key(origin(chat_id, topic), mode);
                let opened = chat_key(origin(chat_id, Some(42)), mode);
                assert_eq!(in_topic(&asking, 42), opened, "{asking}");
            }
        }
    }

    #[test]
    fn addressing_in_groups() {
        let bot = "codex_bot";
        assert!(addressed("@codex_bot read x", false, bot));
        assert!(addressed("hey @Codex_Bot, read x", false, bot));
        assert!(addressed("anything", true, bot));
        assert!(addressed("/new", false, bot));
        assert!(addressed("/status@codex_bot", false, bot));
        assert!(addressed("/frob", false, bot));
        assert!(!addressed("/new@other_bot", false, bot));
        assert!(!addressed("/tmp/x is big", false, bot));
        assert!(!addressed("talking about codex_bot", false, bot));
        assert_eq!(strip_mention("@codex_bot read\n  x", bot), "read\n  x");
    }
}
