//! Button presses: a choice button is its presser sending the command it stands for; an
//! approval button decides Codex's request, and the prompt then shows who decided.

use std::sync::Arc;

use teloxide::payloads::{
    AnswerCallbackQuerySetters, EditMessageCaptionSetters, EditMessageTextSetters,
};
use teloxide::prelude::{Bot, Requester};
use teloxide::types::{CallbackQuery, Message};
use teloxide::{ApiError, RequestError};
use tracing::warn;

use super::{Sent, Shared, Target, dispatch, is_allowed, refusal};
use crate::clock;
use crate::platform::approvals::{self, Pressed, Presser};
use crate::platform::choices::{self, Choice};
use crate::platform::texts;
use crate::router::Router;
use chat::{ChatKey, Outbox, Platform};

/// A choice button (its presser sends the command it stands for, in the button's chat),
/// or an approval button: only allowed users decide; the prompt then shows who decided.
pub(super) async fn on_button(
    shared: Arc<Shared>,
    router: Router,
    outbox: Outbox,
    query: CallbackQuery,
) {
    if let Some(choice) = query.data.as_deref().and_then(choices::pressed) {
        return on_choice(&shared, &router, &outbox, &query, choice).await;
    }
    let name = query.from.full_name();
    let presser = Presser {
        id: query.from.id.0,
        name: &name,
        allowed: shared
            .config
            .allowed_users
            .contains(&(query.from.id.0 as i64)),
    };
    let data = query.data.as_deref().unwrap_or_default();
    let message = query.message.as_ref().and_then(|m| m.regular_message());
    // A press is decided only in the chat its prompt was asked in.
    let place = ChatKey::new(
        Platform::Telegram,
        message.map_or_else(String::new, |m| m.chat.id.0.to_string()),
    );
    let (toast, alert, verdict) = match approvals::press(&router, &place, data, presser).await {
        Pressed::Unknown(text) => (text, false, None),
        Pressed::Refused(text) => (text, true, None),
        Pressed::Settled(verdict) => (verdict.clone(), false, Some(verdict)),
    };
    let answer = shared
        .bot
        .answer_callback_query(query.id.clone())
        .text(toast)
        .show_alert(alert);
    if let Err(error) = answer.await {
        warn!(%error, "telegram: could not answer a button press");
    }
    let Some(verdict) = verdict else { return };
    if let Some(message) = message {
        settle_prompt(&shared.bot, message, &verdict).await;
    }
}

async fn on_choice(
    shared: &Shared,
    router: &Router,
    outbox: &Outbox,
    query: &CallbackQuery,
    choice: Choice,
) {
    let message = query.message.as_ref().and_then(|m| m.regular_message());
    let from = &query.from;
    let allowed = message.is_some_and(|m| is_allowed(&shared.config, from.id.0, m.chat.id));
    // The answer ends the button's spinner; what the command says comes as a message. A
    // stranger is told why nothing happens, as an alert only they see.
    let mut answer = shared.bot.answer_callback_query(query.id.clone());
    if !allowed {
        warn!(
            user_id = from.id.0,
            "telegram: refused a button press from a user who is not allowed"
        );
        answer = answer.text(refusal(from.id.0)).show_alert(true);
    }
    if let Err(error) = answer.await {
        warn!(%error, "telegram: could not answer a button press");
    }
    let Some(message) = message.filter(|_| allowed) else {
        return;
    };
    let target = Target {
        chat_id: message.chat.id,
        topic: message.thread_id.filter(|_| message.is_topic_message),
    };
    dispatch(
        shared,
        router,
        outbox,
        from,
        target,
        message.chat.is_private(),
        Sent {
            text: &choice.command,
            files: Vec::new(),
            ticket: None,
        },
    );
    if let Some(option) = choice.answers_card {
        let line = texts::chosen(&option, &from.full_name(), clock::unix_now());
        settle_prompt(&shared.bot, message, &line).await;
    }
}

/// Adds who decided (or chose) under the prompt or card, its formatting kept (the
/// verdict is appended, so the entities stay valid), and removes the buttons (an edit
/// without a keyboard does).
/// A prompt that already ends with the verdict (a second press) is left as it is.
async fn settle_prompt(bot: &Bot, message: &Message, verdict: &str) {
    let (chat, id) = (message.chat.id, message.id);
    let edited = match (message.text(), message.caption()) {
        (Some(text), _) => {
            let Some(text) = approvals::with_verdict(text, verdict) else {
                return;
            };
            let entities = message.entities().unwrap_or_default().to_vec();
            bot.edit_message_text(chat, id, text)
                .entities(entities)
                .await
                .map(drop)
        }
        (None, Some(caption)) => {
            let Some(caption) = approvals::with_verdict(caption, verdict) else {
                return;
            };
            let entities = message.caption_entities().unwrap_or_default().to_vec();
            bot.edit_message_caption(chat, id)
                .caption(caption)
                .caption_entities(entities)
                .await
                .map(drop)
        }
        (None, None) => return,
    };
    match edited {
        Ok(()) | Err(RequestError::Api(ApiError::MessageNotModified)) => {}
        Err(error) => warn!(%error, "telegram: could not update the approval prompt"),
    }
}
