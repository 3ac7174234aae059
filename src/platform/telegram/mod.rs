//! Telegram by long polling: DMs, groups and forum topics, each a conversation with its
//! own Codex thread. The update offset lives in SQLite with the durable inbox: a batch's
//! messages for the router are stored with the offset past them before any is handled,
//! so a restart or a crash neither skips nor repeats one, and the messages not yet
//! handled run at the next start.

mod api;
mod attachments;
mod buttons;
mod delivery;
mod drafts;
mod inbound;
mod inbox;
mod topics;
mod updates;

use std::sync::Arc;
use std::time::Duration;

use teloxide::payloads::GetMe;
use teloxide::prelude::{Bot, Requester};
use teloxide::types::{BotCommand, ChatId, Me, Message, Update, UpdateKind, User};
use tokio::sync::{mpsc, oneshot, watch};
use tracing::{debug, error, info, warn};

use super::PlatformHandle;
use crate::commands;
use crate::config::{self, TelegramConfig};
use crate::inbox::Inbox;
use crate::platform;
use crate::platform::connect::{self, BotIdentity, Unknown};
use crate::platform::delivery::Pace;
use crate::platform::intake::{IntakeHealth, IntakeState, keep_running};
use crate::platform::refusals::Refusals;
use crate::platform::texts;
use crate::router::Router;
use chat::{Attachment, Inbound, Outbox, Platform, Ticket};
use inbound::Origin;

#[derive(Debug, thiserror::Error)]
pub enum TelegramError {
    #[error("telegram.api_url {url:?} is not a valid URL: {message}")]
    ApiUrl { url: String, message: String },
    #[error("Telegram refused the bot: {0}")]
    Token(String),
    #[error("cannot set up the HTTP client for Telegram: {0}")]
    Client(String),
}

/// How much longer than a long poll's own timeout its HTTP request may take, for the
/// network; a client that gives up earlier turns every idle poll into an error.
const POLL_MARGIN: Duration = Duration::from_secs(15);
/// How long a file download may take (teloxide's default, 17 s, is too short for 20 MB
/// on a slow link).
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);
/// Longest pause between getUpdates calls after repeated network errors.
const MAX_POLL_BACKOFF: Duration = Duration::from_secs(32);

/// Where a chat's answers are sent.
#[derive(Debug, Clone, Copy)]
struct Target {
    chat_id: ChatId,
    topic: Option<teloxide::types::ThreadId>,
}

/// What the update loop and the delivery share.
struct Shared {
    bot: Bot,
    /// The same bot for delivery's calls, whose failures keep their HTTP status.
    api: api::BotApi,
    /// For getUpdates only: its client waits longer than the poll timeout.
    poll_api: api::BotApi,
    /// For file downloads: its client waits as long as a 20 MB download may take.
    file_bot: Bot,
    config: TelegramConfig,
    username: String,
    bot_user_id: u64,
    /// Refusals to strangers, paced off the update loop.
    refusals: Refusals<(Target, u64)>,
    /// Whether private chats' running turns stream as drafts.
    drafts: drafts::Drafts,
}

/// Asks the Bot API who the bot is, registers the command menu and starts polling. A
/// refused token fails the start; an API that cannot be reached is asked again in the
/// background while the rest of the gateway serves.
pub async fn start(
    config: &TelegramConfig,
    token: &str,
    router: Router,
    inbox: Inbox,
    health: IntakeHealth,
) -> Result<PlatformHandle, TelegramError> {
    let bots = bots(config, token)?;
    let api = api::BotApi::of(&bots.bot);
    let first = who_am_i(&api).await;
    if let Err(Unknown::TokenRefused(why)) = first {
        return Err(TelegramError::Token(why));
    }
    let state = health.register("telegram");
    let (stop, stopped) = watch::channel(false);
    let (outbox, answers) = mpsc::unbounded_channel();
    let (connected, shared_once_connected) = oneshot::channel::<Arc<Shared>>();
    let pace = Pace::from_millis(config.edit_interval_ms, config.first_flush_ms);
    let tasks = router.clone();
    let delivery = tokio::spawn(async move {
        let Ok(sinks) = shared_once_connected.await else {
            return;
        };
        platform::delivery::run(answers, pace, move |chat| {
            let (chat_id, topic) = inbound::address(chat)?;
            let target = Target {
                chat_id: ChatId(chat_id),
                topic: topic.map(|t| teloxide::types::ThreadId(teloxide::types::MessageId(t))),
            };
            Some(delivery::TelegramChat {
                shared: sinks.clone(),
                target,
                chat: chat.clone(),
                router: tasks.clone(),
                notify: chat::Notify::default(),
            })
        })
        .await
    });
    let config = config.clone();
    let intake = tokio::spawn(async move {
        let me = match first {
            Ok(me) => me,
            Err(why) => {
                warn!(%why, "telegram: not connected at start; asking again in the background");
                let ask = || who_am_i(&api);
                match connect::identify("telegram", &state, stopped.clone(), ask).await {
                    Some(me) => me,
                    None => return,
                }
            }
        };
        let shared = connected_bot(bots, api, config, me).await;
        let _ = connected.send(shared.clone());
        // Messages accepted before the last stop and not yet handled go first, in order.
        inbox::replay(&shared, &router, &inbox, &outbox).await;
        router.attach_jobs(Platform::Telegram, outbox.clone(), true);
        keep_running("telegram", state, stopped, move |stopped, state| {
            poll(
                shared.clone(),
                router.clone(),
                inbox.clone(),
                outbox.clone(),
                stopped,
                state,
            )
        })
        .await
    });
    Ok(PlatformHandle::new("telegram", stop, intake, delivery))
}

/// Who the Bot API says the bot is: 401 and 404 (a token of no bot, or a wrong
/// `api_url`) are the token's fault, the rest passes.
async fn who_am_i(api: &api::BotApi) -> Result<BotIdentity, Unknown> {
    match api.json::<_, Me>(&GetMe::new()).await {
        Ok(me) => Ok(BotIdentity {
            name: me.username().to_owned(),
            id: me.id.0,
        }),
        Err(
            error @ api::CallError::Refused {
                status: 401 | 404, ..
            },
        ) => Err(Unknown::TokenRefused(format!(
            "{error}; check telegram.token and telegram.api_url"
        ))),
        Err(error) => Err(Unknown::Unreachable(error.to_string())),
    }
}

/// `check-config`'s question: who the Bot API at `config.api_url` says the bot is.
pub async fn check_token(config: &TelegramConfig, token: &str) -> Result<BotIdentity, String> {
    let bots = bots(config, token).map_err(|error| error.to_string())?;
    who_am_i(&api::BotApi::of(&bots.bot))
        .await
        .map_err(|unknown| unknown.to_string())
}

/// The connected bot's parts, shared by polling and delivery; its command menu set.
async fn connected_bot(
    bots: Bots,
    api: api::BotApi,
    config: TelegramConfig,
    me: BotIdentity,
) -> Arc<Shared> {
    info!(bot = me.name, "telegram connected");
    prepare(&bots.bot).await;
    let refusal_api = api.clone();
    let drafts = drafts::Drafts::new(config.drafts);
    Arc::new(Shared {
        bot: bots.bot,
        api,
        poll_api: api::BotApi::of(&bots.poll_bot),
        file_bot: bots.file_bot,
        config,
        username: me.name,
        bot_user_id: me.id,
        drafts,
        refusals: Refusals::start(move |(target, user_id)| {
            delivery::send_plain(refusal_api.clone(), target, refusal(user_id))
        }),
    })
}

/// The Telegram clients: each kind of call waits as long as it may take.
fn bots(config: &TelegramConfig, token: &str) -> Result<Bots, TelegramError> {
    let url: url::Url =
        config
            .api_url
            .parse()
            .map_err(|e: url::ParseError| TelegramError::ApiUrl {
                url: config.api_url.clone(),
                message: e.to_string(),
            })?;
    let poll_timeout = Duration::from_secs(config.poll_timeout_secs.into());
    let poll_client = teloxide::net::default_reqwest_settings()
        .timeout(poll_timeout + POLL_MARGIN)
        .build()
        .map_err(|error| TelegramError::Client(error.to_string()))?;
    let poll_bot = Bot::with_client(token, poll_client).set_api_url(url.clone());
    let file_client = teloxide::net::default_reqwest_settings()
        .timeout(DOWNLOAD_TIMEOUT)
        .build()
        .map_err(|error| TelegramError::Client(error.to_string()))?;
    let file_bot = Bot::with_client(token, file_client).set_api_url(url.clone());
    Ok(Bots {
        bot: Bot::new(token).set_api_url(url),
        poll_bot,
        file_bot,
    })
}

/// The bot for everything, one for getUpdates and one for downloads.
struct Bots {
    bot: Bot,
    poll_bot: Bot,
    file_bot: Bot,
}

/// Registers the command menu and removes a webhook, which would block long polling.
async fn prepare(bot: &Bot) {
    let commands = commands::SPECS
        .iter()
        .map(|spec| BotCommand::new(spec.name, spec.menu));
    if let Err(error) = bot.set_my_commands(commands).await {
        warn!(%error, "telegram: could not register the command menu");
    }
    match bot.get_webhook_info().await {
        Ok(info) if info.url.is_some() => {
            info!("telegram: removing the webhook so long polling can work");
            if let Err(error) = bot.delete_webhook().await {
                warn!(%error, "telegram: could not remove the webhook");
            }
        }
        Ok(_) => {}
        Err(error) => warn!(%error, "telegram: could not read the webhook state"),
    }
}

async fn poll(
    shared: Arc<Shared>,
    router: Router,
    inbox: Inbox,
    outbox: Outbox,
    mut stopped: watch::Receiver<bool>,
    state: IntakeState,
) {
    let mut offset = match inbox.next_offset(Platform::Telegram).await {
        Ok(offset) => offset.unwrap_or(0),
        Err(error) => {
            error!(%error, "telegram: cannot read the stored update offset; not polling now");
            return;
        }
    };
    let mut failures = 0u32;
    loop {
        let request = api::Poll {
            offset,
            timeout: shared.config.poll_timeout_secs,
            allowed_updates: &[
                "message",
                "edited_message",
                "callback_query",
                drafts::STOPPED_UPDATE,
            ],
        };
        let result = tokio::select! {
            result = shared.poll_api.get_updates(&request) => result,
            _ = stopped.changed() => return,
        };
        let wait = match result {
            Ok(values) => {
                failures = 0;
                state.up();
                let batch = updates::read_batch(values);
                let Some(next_offset) = batch.next_offset else {
                    continue;
                };
                offset = next_offset;
                // The batch's messages and the offset past them, in one write, before
                // handling: none is lost to a crash and none is handled twice.
                let handling = inbox::accept(&shared, &inbox, &batch.updates, offset).await;
                for (update, handling) in batch.updates.into_iter().zip(handling) {
                    if let inbox::Handling::Handle(ticket) = handling {
                        handle_update(&shared, &router, &outbox, update, ticket).await;
                    }
                }
                for stopped in batch.stopped {
                    on_draft_stopped(&shared, &router, &outbox, stopped);
                }
                continue;
            }
            Err(api::CallError::Refused {
                retry_after: Some(seconds),
                ..
            }) => Duration::from_secs(seconds.into()),
            Err(error) => {
                failures += 1;
                if failures >= FAILING_POLLS {
                    state.down(POLLING_FAILS);
                }
                let wait = poll_backoff(failures);
                warn!(%error, failures, ?wait, "telegram: getUpdates failed; retrying");
                wait
            }
        };
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stopped.changed() => return,
        }
    }
}

/// Failed polls in a row after which `/healthz` says the intake is failing (a passing
/// network error should not page anyone; a token revoked or another poller should).
const FAILING_POLLS: u32 = 3;
const POLLING_FAILS: &str = "getUpdates keeps failing (see the log)";

/// The pause after `failures` failed polls in a row: 1 s, doubling, at most 32 s. A
/// successful poll starts the count again.
fn poll_backoff(failures: u32) -> Duration {
    let wait = Duration::from_millis(500).saturating_mul(2u32.saturating_pow(failures));
    wait.min(MAX_POLL_BACKOFF)
}

async fn handle_update(
    shared: &Arc<Shared>,
    router: &Router,
    outbox: &Outbox,
    update: Update,
    ticket: Option<Ticket>,
) {
    match update.kind {
        UpdateKind::Message(message) => on_message(shared, router, outbox, message, ticket).await,
        UpdateKind::EditedMessage(_) => debug!("telegram: ignoring an edited message"),
        UpdateKind::CallbackQuery(query) => {
            // Answering waits for the chat's actor; the update loop must not.
            tokio::spawn(buttons::on_button(
                shared.clone(),
                router.clone(),
                outbox.clone(),
                query,
            ));
        }
        _ => debug!("telegram: ignoring an update of another kind"),
    }
}

/// What becomes of a message update.
enum Intake {
    /// A bot's, or a group message not addressed to the bot.
    Ignore,
    Refuse {
        target: Target,
        user_id: u64,
    },
    /// A kind of message the bot cannot read (a location, a sticker).
    Unreadable(Target),
    /// For the router: stored in the durable inbox first.
    Take,
}

fn intake_of(shared: &Shared, message: &Message) -> Intake {
    let Some(from) = message.from.as_ref().filter(|user| !user.is_bot) else {
        return Intake::Ignore;
    };
    let text = message.text().or(message.caption());
    let replies_to_bot = message
        .reply_to_message()
        .and_then(|m| m.from.as_ref())
        .is_some_and(|u| u.id.0 == shared.bot_user_id);
    let addressed = inbound::addressed(text.unwrap_or_default(), replies_to_bot, &shared.username);
    if !message.chat.is_private() && !addressed {
        return Intake::Ignore;
    }
    let target = target_of(message);
    let user_id = from.id.0;
    if !is_allowed(&shared.config, user_id, message.chat.id) {
        return Intake::Refuse { target, user_id };
    }
    if text.is_none() && attachments::of(&shared.file_bot, message).is_empty() {
        return Intake::Unreadable(target);
    }
    Intake::Take
}

fn target_of(message: &Message) -> Target {
    Target {
        chat_id: message.chat.id,
        topic: message.thread_id.filter(|_| message.is_topic_message),
    }
}

async fn on_message(
    shared: &Shared,
    router: &Router,
    outbox: &Outbox,
    message: Message,
    ticket: Option<Ticket>,
) {
    match intake_of(shared, &message) {
        Intake::Ignore => return,
        Intake::Refuse { target, user_id } => return refuse(shared, target, user_id),
        Intake::Unreadable(target) => {
            let hint = texts::UNREADABLE_KIND.into();
            tokio::spawn(delivery::send_plain(shared.api.clone(), target, hint));
            return;
        }
        Intake::Take => {}
    }
    let from = message
        .from
        .as_ref()
        .expect("intake_of took a person's message");
    let sent = Sent {
        text: message.text().or(message.caption()).unwrap_or_default(),
        files: attachments::of(&shared.file_bot, &message),
        ticket,
    };
    let private = message.chat.is_private();
    dispatch(
        shared,
        router,
        outbox,
        from,
        target_of(&message),
        private,
        sent,
    );
}

/// What a person sent: text (or a caption) and files, and its durable inbox row.
struct Sent<'a> {
    text: &'a str,
    files: Vec<Attachment>,
    ticket: Option<Ticket>,
}

/// Hands what `from` wrote (or a button of theirs stood for) to the router.
fn dispatch(
    shared: &Shared,
    router: &Router,
    outbox: &Outbox,
    from: &User,
    target: Target,
    private: bool,
    sent: Sent<'_>,
) {
    let user_id = from.id.0;
    let origin = Origin {
        chat_id: target.chat_id.0,
        private,
        topic: target.topic.map(|t| t.0.0),
        user_id,
    };
    let chat = inbound::chat_key(origin, shared.config.group_threads);
    let user = from
        .username
        .clone()
        .unwrap_or_else(|| format!("{} ({user_id})", from.full_name()));
    router.dispatch(Inbound {
        chat,
        user,
        text: inbound::strip_mention(sent.text, &shared.username),
        attachments: sent.files,
        ticket: sent.ticket,
        reply_to: outbox.clone(),
        answer_slot: None,
        can_approve: true,
        private,
        admin: config::is_admin(
            &shared.config.admins,
            &shared.config.allowed_users,
            &(user_id as i64),
        ),
    });
}

/// Telegram's stop pressed on a running turn's draft: the person sending `/stop` (a
/// stranger's press stops nothing; their private chat has no turn of theirs anyway).
fn on_draft_stopped(shared: &Shared, router: &Router, outbox: &Outbox, stopped: drafts::Stopped) {
    let person = stopped.chat;
    let chat_id = ChatId(person.id);
    if !is_allowed(&shared.config, person.id as u64, chat_id) {
        return warn!(
            user_id = person.id,
            "telegram: refused a draft's stop from a user who is not allowed"
        );
    }
    info!(
        draft_id = stopped.draft_id,
        "telegram: a running turn's draft was stopped"
    );
    let from = User {
        id: teloxide::types::UserId(person.id as u64),
        is_bot: false,
        first_name: person.first_name,
        last_name: None,
        username: person.username,
        language_code: None,
        is_premium: false,
        added_to_attachment_menu: false,
    };
    let topic = stopped
        .message_thread_id
        .map(|t| teloxide::types::ThreadId(teloxide::types::MessageId(t)));
    let target = Target { chat_id, topic };
    let sent = Sent {
        text: "/stop",
        files: Vec::new(),
        ticket: None,
    };
    dispatch(shared, router, outbox, &from, target, true, sent);
}

/// Whether `user_id` may talk to the bot in `chat`: an allowed user, or a member of an
/// allowed group.
fn is_allowed(config: &TelegramConfig, user_id: u64, chat: ChatId) -> bool {
    config.allowed_users.contains(&(user_id as i64)) || config.allowed_chats.contains(&chat.0)
}

/// Tells a stranger why nothing happens, and their id for the owner's allowlist; at
/// most once an hour, and never holding up the update loop.
fn refuse(shared: &Shared, target: Target, user_id: u64) {
    let chat = target.chat_id.0;
    match shared.refusals.offer(user_id, (target, user_id)) {
        true => warn!(user_id, chat, "telegram: refused a user who is not allowed"),
        false => debug!(user_id, chat, "telegram: ignored a user who is not allowed"),
    }
}

fn refusal(user_id: u64) -> String {
    texts::stranger_refusal("Telegram", "telegram.allowed_users", user_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn poll_backoff_doubles_up_to_a_cap() {
        let waits: Vec<u64> = (1..=8).map(|f| poll_backoff(f).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 32, 32]);
        assert_eq!(poll_backoff(u32::MAX), MAX_POLL_BACKOFF);
    }
}
