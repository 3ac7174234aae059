//! A task's Discord thread: opened by `/task` in a channel (a post in a forum channel),
//! or from the message that asked, with `discord.auto_thread`. The bot owns the threads
//! it opens, which is how their messages are known as tasks after a restart too.

use serenity::all::{
    AutoArchiveDuration, Channel, ChannelId, ChannelType, CreateForumPost, CreateMessage,
    CreateThread, GuildChannel, Http, MessageId,
};

use super::delivery::{call, no_pings};
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
    let greeting = || CreateMessage::new()
        .content(texts::task_greeting(title))
        .allowed_mentions(no_pings());
    let thread = match place.kind {
        ChannelType::PublicThread | ChannelType::PrivateThread | ChannelType::NewsThread => {
            return Err(NotOpened(texts::DISCORD_THREAD_ALREADY.into()));
        }
        ChannelType::Forum => {
            let post = || CreateForumPost::new(title, greeting()).auto_archive_duration(ARCHIVE_AFTER);
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
