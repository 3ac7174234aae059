//! Opening a task's topic (`createForumTopic`): in a private chat with the bot's Threaded
//! Mode on (Bot API 9.4) or in a forum group where the bot may manage topics.

use serde::{Deserialize, Serialize};
use teloxide::types::{MessageId, ThreadId};

use super::Target;
use super::api::{self, BotApi};
use crate::platform::retry::{self, Unsent};

#[derive(Serialize)]
struct CreateForumTopic<'a> {
    chat_id: i64,
    name: &'a str,
}

#[derive(Serialize)]
struct EditForumTopic<'a> {
    chat_id: i64,
    message_thread_id: i32,
    name: &'a str,
}

/// The part of the `ForumTopic` answer that is needed.
#[derive(Deserialize)]
struct ForumTopic {
    message_thread_id: i32,
}

/// Opens a topic named `title` in the target's chat; its place, for sending there.
pub(super) async fn open(api: &BotApi, chat: Target, title: &str) -> Result<Target, Unsent> {
    let request = CreateForumTopic {
        chat_id: chat.chat_id.0,
        name: title,
    };
    let call = || api.method::<ForumTopic>("createForumTopic", &request);
    let topic = retry::call("telegram", call, api::classify).await?;
    Ok(Target {
        chat_id: chat.chat_id,
        topic: Some(ThreadId(MessageId(topic.message_thread_id))),
    })
}

/// Names a task's topic `name`.
pub(super) async fn rename(api: &BotApi, topic: Target, name: &str) -> Result<(), Unsent> {
    let Some(id) = topic.topic else {
        return Ok(());
    };
    let request = EditForumTopic {
        chat_id: topic.chat_id.0,
        message_thread_id: id.0.0,
        name,
    };
    let call = || api.method::<serde::de::IgnoredAny>("editForumTopic", &request);
    retry::call("telegram", call, api::classify).await.map(drop)
}
