//! What the Discord adapter remembers between events: slash commands waiting for their
//! answer, and which channels are threads of which (and whose).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serenity::all::{ChannelId, CommandInteraction};
use tokio::sync::watch;

use chat::AnswerSlot;

/// Discord lets a bot answer an interaction for 15 minutes.
const INTERACTION_LIFETIME: Duration = Duration::from_secs(15 * 60);

/// A slash command waiting for its answer.
pub(super) struct PendingCommand {
    command: CommandInteraction,
    since: Instant,
    /// True once Discord has taken the deferral: only then can the answer edit it.
    deferred: watch::Receiver<bool>,
}

/// Slash commands waiting for their answer, by interaction id.
#[derive(Default)]
pub(super) struct PendingCommands(Mutex<HashMap<u64, PendingCommand>>);

impl PendingCommands {
    /// Keeps the command until its answer comes (forgetting commands that expired); the
    /// sender says when its deferral has been sent.
    pub(super) fn hold(&self, command: CommandInteraction) -> (AnswerSlot, watch::Sender<bool>) {
        let id = command.id.get();
        let (deferred, deferral) = watch::channel(false);
        let mut pending = self.0.lock().expect("lock");
        pending.retain(|_, held| held.since.elapsed() < INTERACTION_LIFETIME);
        let since = Instant::now();
        let held = PendingCommand {
            command,
            since,
            deferred: deferral,
        };
        pending.insert(id, held);
        (AnswerSlot(id), deferred)
    }

    /// The command of `slot`, once its deferral is through; `None` if it expired.
    pub(super) async fn take(&self, slot: AnswerSlot) -> Option<CommandInteraction> {
        let mut held = self.0.lock().expect("lock").remove(&slot.0)?;
        // A failed deferral (sender gone) still lets the answer try, then fall back.
        let _ = held.deferred.wait_for(|deferred| *deferred).await;
        (held.since.elapsed() < INTERACTION_LIFETIME).then_some(held.command)
    }
}

/// What a guild channel is, as far as serving it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Place {
    Channel,
    Thread {
        parent: Option<ChannelId>,
        /// Opened by the bot: a task's thread (`/task`, `auto_thread`).
        by_bot: bool,
    },
}

/// Each channel's place, learned once per channel.
#[derive(Default)]
pub(super) struct Places(Mutex<HashMap<ChannelId, Place>>);

/// Channels remembered in `Places`; past that it starts again (lookups are cheap).
const REMEMBERED_CHANNELS: usize = 10_000;

impl Places {
    pub(super) fn get(&self, channel: ChannelId) -> Option<Place> {
        self.0.lock().expect("lock").get(&channel).copied()
    }

    pub(super) fn learn(&self, channel: ChannelId, place: Place) {
        let mut places = self.0.lock().expect("lock");
        if places.len() >= REMEMBERED_CHANNELS {
            places.clear();
        }
        places.insert(channel, place);
    }
}
