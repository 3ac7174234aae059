//! What a new gateway session missed. Serenity RESUMEs a dropped connection when Discord
//! lets it, and Discord then replays what was sent meanwhile; when it must IDENTIFY again
//! (the session timed out, 4009, or was invalidated, or the gateway restarted) nothing is
//! replayed. So each channel the bot saw a message in (this run, or kept in the inbox
//! from the last) is read back from the last one it saw, and what a person sent for the
//! bot since is taken as if it had just come; the durable inbox (a message's snowflake is
//! its key) keeps one that did come from being taken twice.

use std::collections::HashMap;
use std::sync::Mutex;

use serenity::all::{ChannelId, GetMessages, Message, MessageId};
use tracing::{info, warn};

use super::{Intake, delivery};
use chat::Platform;

/// Channels remembered; past that the oldest are forgotten (a channel quiet that long has
/// nothing to read back).
const REMEMBERED_CHANNELS: usize = 10_000;
/// Discord's largest page.
const PAGE: u8 = 100;
/// Pages read back per channel: past that, the rest of a long outage is left unread
/// (and said).
const MAX_PAGES: usize = 10;

/// The last message seen in each channel, by the gateway session.
#[derive(Default)]
pub(super) struct LastSeen(Mutex<HashMap<ChannelId, MessageId>>);

impl LastSeen {
    pub(super) fn saw(&self, message: &Message) {
        let mut seen = self.0.lock().expect("lock");
        if seen.len() >= REMEMBERED_CHANNELS && !seen.contains_key(&message.channel_id) {
            let oldest = seen.iter().min_by_key(|(_, id)| **id).map(|(c, _)| *c);
            if let Some(oldest) = oldest {
                seen.remove(&oldest);
            }
        }
        let last = seen.entry(message.channel_id).or_insert(message.id);
        *last = (*last).max(message.id);
    }

    /// A mark from before this run: an older one wins, so a message that came live first
    /// does not hide the gap before it.
    fn seed(&self, channel: ChannelId, id: MessageId) {
        let mut seen = self.0.lock().expect("lock");
        let mark = seen.entry(channel).or_insert(id);
        *mark = (*mark).min(id);
    }

    fn channels(&self) -> Vec<(ChannelId, MessageId)> {
        let seen = self.0.lock().expect("lock");
        seen.iter().map(|(channel, id)| (*channel, *id)).collect()
    }
}

/// Marks each channel with the newest message the inbox kept from it (the last run's).
pub(super) async fn seed_from_inbox(intake: &Intake) {
    let newest = match intake.inbox.newest_by_place(Platform::Discord).await {
        Ok(newest) => newest,
        Err(error) => return warn!(%error, "discord: cannot read where the last run stopped"),
    };
    for (channel, key) in newest {
        let (Ok(channel), Ok(key)) = (channel.parse::<u64>(), key.parse::<u64>()) else {
            continue;
        };
        if channel != 0 && key != 0 {
            intake
                .last_seen
                .seed(ChannelId::new(channel), MessageId::new(key));
        }
    }
}

/// Reads back every channel seen since the last message seen there, and takes what a
/// person sent for the bot, oldest first.
pub(super) async fn read_back(intake: &Intake) {
    let channels = intake.last_seen.channels();
    let mut taken = 0usize;
    for (channel, last) in channels {
        for message in missed(intake, channel, last).await {
            intake.last_seen.saw(&message);
            if super::inbound::is_persons_message(&message)
                && intake.on_message(message, None).await
            {
                taken += 1;
            }
        }
    }
    info!(taken, "discord: read back what the new session missed");
}

/// The messages in `channel` after `last`, oldest first.
async fn missed(intake: &Intake, channel: ChannelId, last: MessageId) -> Vec<Message> {
    let mut missed: Vec<Message> = Vec::new();
    let mut after = last;
    for _ in 0..MAX_PAGES {
        let page = GetMessages::new().after(after).limit(PAGE);
        let Ok(mut messages) = delivery::call(|| channel.messages(&intake.rest, page)).await else {
            warn!(
                channel = channel.get(),
                "discord: could not read back a channel"
            );
            break;
        };
        messages.sort_by_key(|message| message.id);
        let full = messages.len() == usize::from(PAGE);
        let Some(newest) = messages.last().map(|message| message.id) else {
            break;
        };
        after = newest;
        missed.extend(messages);
        if !full {
            return missed;
        }
    }
    if missed.len() >= usize::from(PAGE) * MAX_PAGES {
        warn!(
            channel = channel.get(),
            "discord: more was missed than is read back; the oldest of it is taken"
        );
    }
    missed
}
