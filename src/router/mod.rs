//! Routes messages to one actor per chat, so a chat's turns run in order and chats
//! never wait on each other. Bounds memory: at most `max_live` chats are held, the least
//! recently used is unloaded first, and idle chats are unloaded (both lossless).

mod activity;
mod actor;
mod approvals;
mod jobs;
mod live;
mod questions;
mod replies;
pub(crate) mod texts;
mod turn;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{info, warn};

use crate::session::Context;
use activity::Activity;
pub(crate) use actor::Actor;
use actor::{ActorMsg, ActorParts};
pub use approvals::{Answer, ApprovalOutcome};
use approvals::{ApprovalBook, Lookup};
use chat::{ApprovalId, ChatKey, Inbound, Outbound, OutboundKind};
use jobs::{JobRun, JobRunner};
pub(crate) use replies::Replies;

/// After the grace period, how long interrupted chats get to finish (see `ABORT_GRACE`).
const ABORT_WAIT: Duration = Duration::from_secs(2);

#[derive(Clone)]
pub struct Router {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Arc<Context>,
    max_live: usize,
    actors: Mutex<Actors>,
    /// Raised when shutdown's grace period is over.
    abort: watch::Sender<bool>,
    /// The chat of every pending approval request, and who answered the recent ones.
    approvals: ApprovalBook,
    /// Told when a chat turns idle.
    idle: Arc<Notify>,
    /// The platforms scheduled jobs run on, and the runner's wake-up.
    jobs: JobRunner,
}

#[derive(Default)]
struct Actors {
    active: HashMap<ChatKey, ActorHandle>,
    /// Actors being unloaded; a new actor of the same chat waits for its predecessor.
    retiring: HashMap<ChatKey, watch::Receiver<()>>,
    /// Set by shutdown: no new work is taken.
    closed: bool,
    /// Every live chat is busy, so the limit is exceeded for now (logged once).
    over_limit: bool,
}

struct ActorHandle {
    mailbox: mpsc::UnboundedSender<ActorMsg>,
    /// Closes when the actor has ended.
    done: watch::Receiver<()>,
    activity: Arc<Activity>,
}

impl Actors {
    /// Unloads the least recently used chats that are not busy (and not `keep`) until at
    /// most `max_live` are held. Busy chats are never unloaded: with all of them busy the
    /// limit is exceeded until turns end.
    fn trim(&mut self, max_live: usize, keep: Option<&ChatKey>) {
        while self.active.len() > max_live {
            let least_recent = self
                .active
                .iter()
                .filter(|(key, handle)| Some(*key) != keep && !handle.activity.is_busy())
                .max_by_key(|(_, handle)| handle.activity.idle_for())
                .map(|(key, _)| key.clone());
            let Some(key) = least_recent else {
                if !self.over_limit {
                    warn!(
                        live = self.active.len(),
                        max_live,
                        "every live chat is busy; keeping them all over the limit until turns end"
                    );
                    self.over_limit = true;
                }
                return;
            };
            info!(chat = %key, max_live, "unloading the least recently used chat");
            self.begin_unload(&key);
        }
        self.over_limit = false;
    }

    /// Takes the chat out of the active set and asks its actor to unload after its
    /// queued work. Returns a receiver that closes when the actor has ended.
    fn begin_unload(&mut self, chat: &ChatKey) -> Option<watch::Receiver<()>> {
        let handle = self.active.remove(chat)?;
        let _ = handle.mailbox.send(ActorMsg::Unload);
        self.retiring.retain(|_, done| done.has_changed().is_ok());
        self.retiring.insert(chat.clone(), handle.done.clone());
        Some(handle.done)
    }
}

impl Router {
    pub fn new(ctx: Arc<Context>, max_live: usize) -> Self {
        let idle_limit = ctx.hygiene.idle_unload;
        let router = Self {
            inner: Arc::new(Inner {
                ctx,
                max_live: max_live.max(1),
                actors: Mutex::new(Actors::default()),
                abort: watch::Sender::new(false),
                approvals: ApprovalBook::new(),
                idle: Arc::new(Notify::new()),
                jobs: JobRunner::default(),
            }),
        };
        tokio::spawn(trim_when_idle(Arc::downgrade(&router.inner)));
        tokio::spawn(jobs::run_jobs(Arc::downgrade(&router.inner)));
        if let Some(limit) = idle_limit {
            let every = activity::sweep_every(limit);
            tokio::spawn(sweep_idle(Arc::downgrade(&router.inner), every));
        }
        router
    }

    /// Keeps `chat` as the place a platform opened for the task `title` (a Discord
    /// thread, a Telegram topic): its messages belong to the task.
    pub async fn task_opened(&self, chat: &ChatKey, title: &str) {
        if let Err(error) = crate::session::keep_task(&self.inner.ctx, chat, title).await {
            warn!(chat = %chat, %error, "could not keep a task's place");
        }
    }

    /// Hands a message to its chat's actor, starting one if needed.
    pub fn dispatch(&self, inbound: Inbound) {
        let chat = inbound.chat.clone();
        let reply_to = inbound.reply_to.clone();
        if self
            .deliver(chat.clone(), ActorMsg::Inbound(inbound))
            .is_err()
        {
            let _ = reply_to.send(Outbound {
                chat,
                kind: OutboundKind::Notice(texts::SHUTTING_DOWN.into()),
            });
        }
    }

    /// Hands a scheduled job's run to its chat's actor; false when shutting down.
    fn dispatch_job(&self, job: JobRun, inbound: Inbound) -> bool {
        let chat = inbound.chat.clone();
        self.deliver(chat, ActorMsg::Job { job, inbound }).is_ok()
    }

    /// Gives `message` to the chat's actor, starting one if needed; `Err` once the
    /// router has shut down.
    fn deliver(&self, chat: ChatKey, mut message: ActorMsg) -> Result<(), ()> {
        let mut actors = self.inner.actors.lock().expect("lock");
        if actors.closed {
            return Err(());
        }
        if let Some(handle) = actors.active.get(&chat) {
            handle.activity.touch();
            match handle.mailbox.send(message) {
                Ok(()) => return Ok(()),
                // The actor ended (it was unloaded): start a new one below.
                Err(mpsc::error::SendError(returned)) => message = returned,
            }
        }
        let predecessor = actors.retiring.remove(&chat);
        let (mailbox, receiver) = mpsc::unbounded_channel();
        let (alive, done) = watch::channel(());
        let activity = Arc::new(Activity::new(self.inner.idle.clone()));
        let parts = ActorParts {
            mailbox: receiver,
            alive,
            activity: activity.clone(),
            abort: self.inner.abort.subscribe(),
            approvals: self.inner.approvals.clone(),
            jobs_changed: self.inner.jobs.waker(),
        };
        let actor = Actor::new(chat.clone(), self.inner.ctx.clone(), parts);
        tokio::spawn(actor.run(predecessor));
        let _ = mailbox.send(message);
        actors.active.insert(
            chat.clone(),
            ActorHandle {
                mailbox,
                done,
                activity,
            },
        );
        actors.trim(self.inner.max_live, Some(&chat));
        Ok(())
    }

    /// Drops the chat's in-memory state after its queued work; its thread id stays in
    /// SQLite, so the next message resumes the same thread.
    pub async fn unload(&self, chat: &ChatKey) {
        let done = self.inner.actors.lock().expect("lock").begin_unload(chat);
        if let Some(mut done) = done {
            let _ = done.changed().await;
        }
    }

    /// A person's answer to approval prompt `id`, pressed in `place`: decided only when
    /// the request is pending, of this run, in that chat.
    pub async fn decide_approval(
        &self,
        place: &ChatKey,
        id: ApprovalId,
        answer: Answer,
    ) -> ApprovalOutcome {
        let chat = match self.inner.approvals.lookup(id, place) {
            Lookup::Pending(chat) => chat,
            Lookup::Answered(first) => return ApprovalOutcome::AnsweredBefore(first),
            Lookup::EarlierRun => return ApprovalOutcome::FromEarlierRun,
            Lookup::OtherChat => return ApprovalOutcome::NotThisChat,
            Lookup::Gone => return ApprovalOutcome::NoLongerPending,
        };
        let (done, answered) = oneshot::channel();
        {
            let actors = self.inner.actors.lock().expect("lock");
            let Some(handle) = actors.active.get(&chat) else {
                return ApprovalOutcome::NoLongerPending;
            };
            let decide = ActorMsg::Decide { id, answer, done };
            if handle.mailbox.send(decide).is_err() {
                return ApprovalOutcome::NoLongerPending;
            }
        }
        if answered.await.unwrap_or(false) {
            return ApprovalOutcome::Decided;
        }
        // Another press may have been just ahead of this one.
        match self.inner.approvals.lookup(id, place) {
            Lookup::Answered(first) => ApprovalOutcome::AnsweredBefore(first),
            _ => ApprovalOutcome::NoLongerPending,
        }
    }

    /// Chats with an actor in memory.
    pub fn active_chats(&self) -> usize {
        self.inner.actors.lock().expect("lock").active.len()
    }

    /// Stops taking messages and lets every actor finish its queued work, for at most
    /// `grace` (`None`: as long as it takes). Past the grace period running turns are
    /// interrupted and queued messages dropped, each chat being told.
    pub async fn shutdown(&self, grace: Option<Duration>) {
        let dones: Vec<_> = {
            let mut actors = self.inner.actors.lock().expect("lock");
            actors.closed = true;
            actors.retiring.clear();
            // Jobs start no more runs, and their outboxes no longer hold delivery open.
            self.inner.jobs.detach_all();
            // Dropping the mailbox senders lets each actor end after its queue.
            actors
                .active
                .drain()
                .map(|(_, handle)| handle.done)
                .collect()
        };
        let all_done = |dones: Vec<watch::Receiver<()>>| async move {
            for mut done in dones {
                let _ = done.changed().await;
            }
        };
        let Some(grace) = grace else {
            return all_done(dones).await;
        };
        if tokio::time::timeout(grace, all_done(dones.clone()))
            .await
            .is_ok()
        {
            return;
        }
        info!(
            ?grace,
            "shutdown grace period over; interrupting running turns"
        );
        self.inner.abort.send_replace(true);
        // A Codex that does not answer must not hold the stop beyond the bound.
        if tokio::time::timeout(ABORT_WAIT, all_done(dones))
            .await
            .is_err()
        {
            warn!(
                ?ABORT_WAIT,
                "chats still busy after the interrupt; stopping without them"
            );
        }
    }
}

/// Brings the live chats back under the limit as busy ones turn idle.
async fn trim_when_idle(router: Weak<Inner>) {
    loop {
        let Some(idle) = router.upgrade().map(|inner| inner.idle.clone()) else {
            return;
        };
        idle.notified().await;
        let Some(inner) = router.upgrade() else {
            return;
        };
        let mut actors = inner.actors.lock().expect("lock");
        if actors.closed {
            return;
        }
        actors.trim(inner.max_live, None);
    }
}

/// Unloads chats that hygiene finds idle, until the router is gone or shut down.
async fn sweep_idle(router: Weak<Inner>, every: Duration) {
    let mut tick = tokio::time::interval(every);
    loop {
        tick.tick().await;
        let Some(inner) = router.upgrade() else {
            return;
        };
        let mut actors = inner.actors.lock().expect("lock");
        if actors.closed {
            return;
        }
        let idle: Vec<ChatKey> = actors
            .active
            .iter()
            .filter(|(_, handle)| handle.activity.is_due_for_unload(&inner.ctx.hygiene))
            .map(|(key, _)| key.clone())
            .collect();
        for key in idle {
            info!(chat = %key, "unloading idle chat");
            actors.begin_unload(&key);
        }
    }
}
