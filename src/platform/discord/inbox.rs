//! Discord's side of the durable inbox: a person's message is stored (its snowflake the
//! key) before it is handed to the router, and those not handled before a stop are handed
//! on again at the next start, once the gateway is ready.

use serenity::all::Message;
use tracing::{error, info, warn};

use super::Intake;
use chat::{Platform, Ticket};
use store::{self, Store};

pub(super) enum Accepted {
    New(Ticket),
    /// Known already (Discord sent it again after a resume): handled once.
    Duplicate,
    /// The database failed: handed on without the inbox, rather than held back.
    Unstored,
}

pub(super) async fn accept(store: &Store, message: &Message) -> Accepted {
    let payload = match serde_json::to_string(message) {
        Ok(payload) => payload,
        Err(error) => {
            warn!(%error, "discord: cannot keep a message in the inbox");
            return Accepted::Unstored;
        }
    };
    let accepted = store::Accepted {
        key: message.id.get().to_string(),
        payload: &payload,
    };
    match store.accept(Platform::Discord, &[accepted], None).await {
        Ok(ids) => match ids.first().copied().flatten() {
            Some(id) => Accepted::New(Ticket::accepted(id)),
            None => Accepted::Duplicate,
        },
        Err(error) => {
            error!(%error, "discord: cannot store an accepted message");
            Accepted::Unstored
        }
    }
}

/// Hands the messages accepted before the last stop and not yet handled to the router,
/// oldest first; one that is no longer for the bot (its sender lost access) is dropped.
pub(super) async fn replay(intake: &Intake) {
    let unfinished = match intake.store.unfinished(Platform::Discord).await {
        Ok(unfinished) => unfinished,
        Err(error) => {
            return error!(%error, "discord: cannot read the inbox; its messages wait for the next start");
        }
    };
    if !unfinished.is_empty() {
        info!(
            messages = unfinished.len(),
            "discord: handling the messages accepted before the restart"
        );
    }
    for row in unfinished {
        let ticket = Ticket {
            id: row.id,
            interrupted: row.interrupted,
            not_before: row.not_before,
            handed_over: row.handed_over,
        };
        let handed_on = match serde_json::from_str::<Message>(&row.payload) {
            Ok(message) => intake.on_message(message, Some(ticket)).await,
            Err(error) => {
                warn!(id = row.id, %error, "discord: a stored message no longer reads; dropped");
                false
            }
        };
        if !handed_on && let Err(error) = intake.store.inbox_done(row.id).await {
            warn!(id = row.id, %error, "discord: could not mark a dropped message done");
        }
    }
}
