//! Telegram's side of the durable inbox: a batch's messages for the router are stored
//! with the offset past them, and those not handled before a stop run at the next start.

use std::sync::Arc;

use teloxide::types::{Update, UpdateKind};
use tracing::{error, info, warn};

use super::{Intake, Shared, handle_update, intake_of};
use crate::router::Router;
use chat::{Outbox, Platform, Ticket};
use store::{Accepted, Store};

/// What to do with one update of a batch.
pub(super) enum Handling {
    /// Hand it on, with its inbox row when it has one.
    Handle(Option<Ticket>),
    /// Already in the inbox: a duplicate, handled once already.
    Skip,
}

/// Stores the batch's messages for the router and `next_offset` in one write. Should
/// the write fail, the batch is handled without the inbox (a crash could then lose it,
/// but nothing is held back).
pub(super) async fn accept(
    shared: &Shared,
    store: &Store,
    updates: &[Update],
    next_offset: i64,
) -> Vec<Handling> {
    let payloads: Vec<Option<String>> = updates
        .iter()
        .map(|update| {
            let taken = taken(shared, update);
            taken.then(|| serde_json::to_string(update).ok()).flatten()
        })
        .collect();
    let accepted: Vec<Accepted<'_>> = updates
        .iter()
        .zip(&payloads)
        .filter_map(|(update, payload)| {
            let payload = payload.as_deref()?;
            let key = update.id.0.to_string();
            Some(Accepted { key, payload })
        })
        .collect();
    let ids = match store
        .accept(Platform::Telegram, &accepted, Some(next_offset))
        .await
    {
        Ok(ids) => ids,
        Err(error) => {
            error!(%error, "telegram: cannot store the accepted messages and the offset");
            return payloads.iter().map(|_| Handling::Handle(None)).collect();
        }
    };
    let mut ids = ids.into_iter();
    payloads
        .iter()
        .map(|payload| match payload {
            None => Handling::Handle(None),
            Some(_) => match ids.next().flatten() {
                Some(id) => Handling::Handle(Some(Ticket::accepted(id))),
                None => Handling::Skip,
            },
        })
        .collect()
}

/// Hands the messages accepted before the last stop and not yet handled to the router,
/// oldest first; one whose handling a crash cut is marked so (its chat is told, it is
/// not run again), and one no longer for the bot (its sender lost access) is dropped.
pub(super) async fn replay(shared: &Arc<Shared>, router: &Router, store: &Store, outbox: &Outbox) {
    let unfinished = match store.unfinished(Platform::Telegram).await {
        Ok(unfinished) => unfinished,
        Err(error) => {
            error!(%error, "telegram: cannot read the inbox; its messages wait for the next start");
            return;
        }
    };
    if !unfinished.is_empty() {
        info!(
            messages = unfinished.len(),
            "telegram: handling the messages accepted before the restart"
        );
    }
    for message in unfinished {
        let ticket = Ticket {
            id: message.id,
            interrupted: message.interrupted,
            not_before: message.not_before,
            handed_over: message.handed_over,
        };
        let update = match serde_json::from_str::<Update>(&message.payload) {
            Ok(update) => Some(update),
            Err(error) => {
                warn!(id = message.id, %error, "telegram: a stored message no longer reads; dropped");
                None
            }
        };
        match update {
            Some(update) if taken(shared, &update) => {
                handle_update(shared, router, outbox, update, Some(ticket)).await
            }
            _ => {
                if let Err(error) = store.inbox_done(message.id).await {
                    warn!(id = message.id, %error, "telegram: could not mark a dropped message done");
                }
            }
        }
    }
}

/// Whether an update is a message the router takes.
fn taken(shared: &Shared, update: &Update) -> bool {
    match &update.kind {
        UpdateKind::Message(message) => matches!(intake_of(shared, message), Intake::Take),
        _ => false,
    }
}
