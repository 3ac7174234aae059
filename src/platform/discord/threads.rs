//! A task's Discord thread: opened by `/task` in a channel (a post in a forum channel),
//! or from the message that asked, with `discord.auto_thread`. The bot owns the threads
//! it opens, which is how their messages are known as tasks after a restart too.

use serenity::all::{
    AutoArchiveDuration, Channel, ChannelId, ChannelType, CreateForumPost, CreateMessage,
    CreateThread, EditThread, GuildChannel, Http, Message, MessageId,
};

use tracing::warn;

use super::Intake;
use super::delivery::{self, call, no_pings};
use super::state::Place;
use crate::platform::retry::Unsent;
use crate::platform::texts;

/// A task's thread is archived after a day without messages (a message there later
/// opens it again, and its Codex thread is resumed).
const ARCHIVE_AFTER: AutoArchiveDuration = AutoArchiveDuration::OneDay;

/// Why a task's thread was not opened: the text for the chat.
pub(super) struct NotOpened(pub(super) String);

/// Opens a thread named `title` for a task asked for in `channel`, greeted with what it
/// is for; its id.
pub(super) async fn open_for_task(
    http: &Http,
    channel: ChannelId,
    title: &str,
) -> Result<ChannelId, NotOpened> {
    let place = call(|| channel.to_channel(http)).await;
    let place = match place {
        Ok(Channel::Guild(place)) => place,
        Ok(_) => return Err(NotOpened(texts::DISCORD_NO_THREADS_IN_DMS.into())),
        Err(unsent) => return Err(refused(unsent)),
    };
    let greeting = || {
        CreateMessage::new()
            .content(texts::task_greeting(title))
            .allowed_mentions(no_pings())
    };
    let thread = match place.kind {
        ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread => {
            return Err(NotOpened(texts::DISCORD_THREAD_ALREADY.into()));
        }
        ChannelType::Forum => {
            let post =
                || CreateForumPost::new(title, greeting()).auto_archive_duration(ARCHIVE_AFTER);
            call(|| channel.create_forum_post(http, post())).await
        }
        _ => {
            let thread = || {
                CreateThread::new(title)
                    .kind(ChannelType::PublicThread)
                    .auto_archive_duration(ARCHIVE_AFTER)
            };
            let thread = call(|| channel.create_thread(http, thread())).await;
            if let Ok(thread) = &thread {
                let _ = call(|| thread.id.send_message(http, greeting())).await;
            }
            thread
        }
    };
    thread.map(|thread| thread.id).map_err(refused)
}

/// Opens a thread named `title` from `message`, which asked for the task.
pub(super) async fn open_from_message(
    http: &Http,
    channel: ChannelId,
    message: MessageId,
    title: &str,
) -> Result<GuildChannel, Unsent> {
    let thread = || CreateThread::new(title).auto_archive_duration(ARCHIVE_AFTER);
    call(|| channel.create_thread_from_message(http, message, thread())).await
}

/// Names a task's thread `name` (only a task's place is told its thread's name: a
/// thread the bot opened).
pub(super) async fn rename_task(http: &Http, thread: ChannelId, name: &str) {
    let rename = || EditThread::new().name(name);
    let _ = call(|| thread.edit_thread(http, rename())).await;
}

/// A thread's name from the first words of the message that opened it.
pub(super) fn title_of(text: &str) -> String {
    const MAX_TITLE: usize = 60;
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let title = match words.char_indices().nth(MAX_TITLE) {
        Some((cut, _)) => format!("{}…", words[..cut].trim_end()),
        None => words,
    };
    match title.is_empty() {
        true => "Task".into(),
        false => title,
    }
}

fn refused(unsent: Unsent) -> NotOpened {
    NotOpened(match unsent {
        Unsent::Refused => texts::DISCORD_THREAD_REFUSED.into(),
        Unsent::Unreachable => texts::task_unreachable("Discord"),
    })
}

impl Intake {
    /// Whether the bot answers every message in a guild channel: a listed channel, a
    /// thread of one, or a task's thread the bot opened. `None` if it could not be told.
    pub(super) async fn serves(&self, channel: ChannelId) -> Option<bool> {
        let listed = |c: ChannelId| self.config.channels.contains(&c.get());
        if listed(channel) {
            return Some(true);
        }
        Some(match self.place(channel).await? {
            Place::Channel => false,
            Place::Thread { by_bot: true, .. } => true,
            Place::Thread { parent, .. } => parent.is_some_and(listed),
        })
    }

    /// What a guild channel is, looked up once; `None` if the lookup failed.
    async fn place(&self, channel: ChannelId) -> Option<Place> {
        if let Some(place) = self.places.get(channel) {
            return Some(place);
        }
        // A lookup that fails for a moment must not drop the message it is for.
        let lookup = delivery::call(|| self.rest.get_channel(channel)).await;
        let place = match lookup {
            Ok(serenity::all::Channel::Guild(c))
                if matches!(
                    c.kind,
                    ChannelType::PublicThread | ChannelType::PrivateThread
                ) =>
            {
                let by_bot = c.owner_id.is_some_and(|owner| owner.get() == self.bot_id());
                Place::Thread {
                    parent: c.parent_id,
                    by_bot,
                }
            }
            Ok(_) => Place::Channel,
            Err(_) => {
                warn!(
                    channel = channel.get(),
                    "discord: could not look up a channel"
                );
                return None;
            }
        };
        self.places.learn(channel, place);
        Some(place)
    }

    /// The conversation a guild message goes to: with `auto_thread`, a message to the bot
    /// in a channel (not a thread) opens a task's thread from it, named from its first
    /// words. Where no thread could be opened, the channel's conversation.
    pub(super) async fn conversation_of(&self, message: &Message, text: &str) -> ChannelId {
        let channel = message.channel_id;
        if !self.config.auto_thread || message.guild_id.is_none() {
            return channel;
        }
        if self.place(channel).await != Some(Place::Channel) {
            return channel;
        }
        let title = title_of(text);
        match open_from_message(&self.rest, channel, message.id, &title).await {
            Ok(thread) => {
                let place = Place::Thread {
                    parent: Some(channel),
                    by_bot: true,
                };
                self.places.learn(thread.id, place);
                self.router
                    .task_opened(&super::chat_key(thread.id), &title)
                    .await;
                thread.id
            }
            Err(_) => {
                // A message handed on again after a restart has its thread already: a
                // thread opened from a message has the message's id.
                let opened = ChannelId::new(message.id.get());
                match self.place(opened).await {
                    Some(Place::Thread { .. }) => opened,
                    _ => {
                        warn!(
                            channel = channel.get(),
                            "discord: could not open a thread for a task; answering in the channel"
                        );
                        channel
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_named_from_the_first_words() {
        assert_eq!(title_of("fix the\n login   page"), "fix the login page");
        assert_eq!(title_of(""), "Task");
        let long = title_of(&"abc ".repeat(30));
        assert!(long.ends_with('…') && long.chars().count() <= 61, "{long}");
    }
}
