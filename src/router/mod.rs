//! Routes messages to one actor per chat, so a chat's turns run in order and chats
//! never wait on each other.

mod actor;
pub mod command;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{mpsc, watch};

use crate::chat::{ChatKey, Inbound, Outbound, OutboundKind};
use crate::session::Context;
use actor::{Actor, ActorMsg};

#[derive(Clone)]
pub struct Router {
    inner: Arc<Inner>,
}

struct Inner {
    ctx: Arc<Context>,
    actors: Mutex<Actors>,
}

#[derive(Default)]
struct Actors {
    active: HashMap<ChatKey, ActorHandle>,
    /// Actors being unloaded; a new actor of the same chat waits for its predecessor.
    retiring: HashMap<ChatKey, watch::Receiver<()>>,
    /// Set by shutdown: no new work is taken.
    closed: bool,
}

struct ActorHandle {
    mailbox: mpsc::UnboundedSender<ActorMsg>,
    /// Closes when the actor has ended.
    done: watch::Receiver<()>,
}

impl Router {
    pub fn new(ctx: Arc<Context>) -> Self {
        Self {
            inner: Arc::new(Inner {
                ctx,
                actors: Mutex::new(Actors::default()),
            }),
        }
    }

    /// Hands a message to its chat's actor, starting one if needed.
    pub fn dispatch(&self, inbound: Inbound) {
        let chat = inbound.chat.clone();
        let mut actors = self.inner.actors.lock().expect("lock");
        if actors.closed {
            let _ = inbound.reply_to.send(Outbound {
                chat,
                kind: OutboundKind::Notice(
                    "The gateway is shutting down; please send that again in a minute.".into(),
                ),
            });
            return;
        }
        let mut message = ActorMsg::Inbound(inbound);
        if let Some(handle) = actors.active.get(&chat) {
            match handle.mailbox.send(message) {
                Ok(()) => return,
                // The actor ended (it was unloaded): start a new one below.
                Err(mpsc::error::SendError(returned)) => message = returned,
            }
        }
        let predecessor = actors.retiring.remove(&chat);
        let (mailbox, receiver) = mpsc::unbounded_channel();
        let (alive, done) = watch::channel(());
        let actor = Actor::new(chat.clone(), self.inner.ctx.clone(), receiver, alive);
        tokio::spawn(actor.run(predecessor));
        let _ = mailbox.send(message);
        actors.active.insert(chat, ActorHandle { mailbox, done });
    }

    /// Drops the chat's in-memory state after its queued work; its thread id stays in
    /// SQLite, so the next message resumes the same thread.
    pub async fn unload(&self, chat: &ChatKey) {
        let mut done = {
            let mut actors = self.inner.actors.lock().expect("lock");
            let Some(handle) = actors.active.remove(chat) else {
                return;
            };
            let _ = handle.mailbox.send(ActorMsg::Unload);
            actors.retiring.retain(|_, done| done.has_changed().is_ok());
            actors.retiring.insert(chat.clone(), handle.done.clone());
            handle.done
        };
        let _ = done.changed().await;
    }

    /// Chats with an actor in memory.
    pub fn active_chats(&self) -> usize {
        self.inner.actors.lock().expect("lock").active.len()
    }

    /// Stops taking messages and waits until every actor has finished its queued work.
    pub async fn shutdown(&self) {
        let handles: Vec<_> = {
            let mut actors = self.inner.actors.lock().expect("lock");
            actors.closed = true;
            actors.retiring.clear();
            actors.active.drain().map(|(_, handle)| handle).collect()
        };
        for ActorHandle { mailbox, mut done } in handles {
            drop(mailbox);
            let _ = done.changed().await;
        }
    }
}
