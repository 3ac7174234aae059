//! Telegram's side of the durable inbox: a batch's messages for the router are stored
//! with the offset past them, and those not done before a stop run at the next start.

use std::sync::Arc;

use teloxide::types::{Update, UpdateKind};
use tracing::warn;

use super::{Intake, Shared, handle_update, intake_of};
use crate::inbox::{Acceptance, Arrived, Inbox};
use crate::router::Router;
use chat::{Outbox, Platform, Ticket};

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
    inbox: &Inbox,
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
    let arrived: Vec<Arrived<'_>> = updates
        .iter()
        .zip(&payloads)
        .filter_map(|(update, payload)| {
            let payload = payload.as_deref()?;
            let key = update.id.0.to_string();
            Some(Arrived {
                key,
                payload,
                place: None,
            })
        })
        .collect();
    let mut accepted = inbox
        .accept(Platform::Telegram, &arrived, Some(next_offset))
        .await
        .into_iter();
    payloads
        .iter()
        .map(|payload| match payload {
            None => Handling::Handle(None),
            Some(_) => match accepted.next() {
                Some(Acceptance::New(ticket)) => Handling::Handle(Some(ticket)),
                Some(Acceptance::Duplicate) => Handling::Skip,
                Some(Acceptance::Unstored) | None => Handling::Handle(None),
            },
        })
        .collect()
}

/// Hands the messages accepted before the last stop and not yet done to the router,
/// oldest first, each at the stage it reached; one no longer for the bot (its sender
/// lost access) or no longer readable is done.
pub(super) async fn replay(shared: &Arc<Shared>, router: &Router, inbox: &Inbox, outbox: &Outbox) {
    inbox
        .replay(Platform::Telegram, |ticket, payload| async move {
            let update = match serde_json::from_str::<Update>(&payload) {
                Ok(update) => update,
                Err(error) => {
                    warn!(id = ticket.id, %error, "telegram: a stored message no longer reads");
                    return false;
                }
            };
            if !taken(shared, &update) {
                return false;
            }
            handle_update(shared, router, outbox, update, Some(ticket)).await;
            true
        })
        .await
}

/// Whether an update is a message the router takes.
fn taken(shared: &Shared, update: &Update) -> bool {
    match &update.kind {
        UpdateKind::Message(message) => matches!(intake_of(shared, message), Intake::Take),
        _ => false,
    }
}
