//! Discord's side of the durable inbox: a person's message is stored (its snowflake the
//! key) before it is handed to the router, and those not done before a stop are handed
//! on again at the next start, once the gateway is ready.

use serenity::all::Message;
use tracing::warn;

use super::Intake;
use crate::inbox::{Acceptance, Arrived, Inbox};
use chat::Platform;

pub(super) async fn accept(inbox: &Inbox, message: &Message) -> Acceptance {
    let payload = match serde_json::to_string(message) {
        Ok(payload) => payload,
        Err(error) => {
            warn!(%error, "discord: cannot keep a message in the inbox");
            return Acceptance::Unstored;
        }
    };
    let channel = message.channel_id.get().to_string();
    let arrived = Arrived {
        key: message.id.get().to_string(),
        payload: &payload,
        place: Some(&channel),
    };
    let accepted = inbox.accept(Platform::Discord, &[arrived], None).await;
    accepted.into_iter().next().unwrap_or(Acceptance::Unstored)
}

/// Hands the messages accepted before the last stop and not yet done to the router,
/// oldest first; one that no longer reads or is no longer for the bot (its sender lost
/// access) is done.
pub(super) async fn replay(intake: &Intake) {
    intake
        .inbox
        .replay(Platform::Discord, |ticket, payload| async move {
            match serde_json::from_str::<Message>(&payload) {
                Ok(message) => intake.on_message(message, Some(ticket)).await,
                Err(error) => {
                    warn!(id = ticket.id, %error, "discord: a stored message no longer reads");
                    false
                }
            }
        })
        .await
}
