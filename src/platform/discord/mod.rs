//! Discord through serenity: guild channels (when addressed: mentioned, its role mentioned
//! or one of its messages replied to; or every message in listed channels), threads and
//! DMs, each channel its own conversation. Slash commands answer through their
//! interaction; approvals are buttons. Serenity reconnects and RESUMEs the
//! gateway by itself; conversations live in the router, so they survive that.

mod addressing;
mod attachments;
mod delivery;
mod inbound;
mod inbox;
mod order;
mod read_back;
mod rest;
mod state;
mod threads;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serenity::all::{
    ChannelId, ClientBuilder, CommandInteraction, CommandOptionType, ComponentInteraction, Context,
    CreateCommand, CreateCommandOption, CreateInteractionResponse,
    CreateInteractionResponseMessage, EventHandler, GatewayIntents, GuildChannel, GuildId,
    Interaction, Message, Ready,
};
use serenity::async_trait;
use serenity::http::Http;
use tokio::sync::{mpsc, watch};
use tracing::{debug, error, info, warn};

use super::PlatformHandle;
use super::approvals::{self, Pressed, Presser};
use super::choices;
use super::connect::{self, BotIdentity, Unknown};
use super::intake::{IntakeHealth, keep_running};
use super::refusals::Refusals;
use super::texts;
use crate::clock;
use crate::commands;
use crate::config::{DiscordConfig, is_admin};
use crate::inbox::{Acceptance, Inbox};
use crate::platform;
use crate::platform::delivery::Pace;
use crate::router::Router;
use addressing::BotRoles;
use chat::{AnswerSlot, Attachment, ChatKey, Inbound, Outbox, Platform, Ticket};
use order::InOrder;
use state::{PendingCommands, Places};

#[derive(Debug, thiserror::Error)]
pub enum DiscordError {
    #[error("Discord refused the bot: {0}")]
    Token(String),
    #[error(transparent)]
    Rest(#[from] rest::RestSetupError),
}

/// What the event handler needs: who may talk, where messages go, what it learned.
struct Intake {
    config: DiscordConfig,
    /// The REST client every answer goes through (one rate limiter for the bot).
    rest: Arc<Http>,
    /// The HTTP client under it, for the gateway session's own REST client.
    web: reqwest::Client,
    router: Router,
    /// Taken when the intake stops, so delivery ends once the router has drained.
    outbox: Mutex<Option<Outbox>>,
    bot_id: AtomicU64,
    /// Set when the intake stops: later events are ignored.
    stopped: AtomicBool,
    commands: Arc<PendingCommands>,
    places: Places,
    bot_roles: BotRoles,
    /// The durable inbox, where accepted messages wait until their chat handled them.
    inbox: Inbox,
    /// Raised once the messages left from before the last stop were handed on.
    replayed: AtomicBool,
    /// The last message seen in each channel, for what a new session missed.
    last_seen: read_back::LastSeen,
    /// Refusals to strangers writing DMs, paced off the event handlers.
    refusals: Refusals<(ChannelId, u64)>,
    in_order: InOrder,
}

/// Checks the token, then connects to the gateway and starts serving. A refused token
/// fails the start; an API that cannot be reached is asked again in the background while
/// the rest of the gateway serves.
pub async fn start(
    config: &DiscordConfig,
    token: &str,
    router: Router,
    inbox: Inbox,
    health: IntakeHealth,
) -> Result<PlatformHandle, DiscordError> {
    let web = rest::web_client(config)?;
    let rest = Arc::new(rest::rest_client(config, token, &web));
    let first = who_am_i(&rest).await;
    if let Err(Unknown::TokenRefused(why)) = first {
        return Err(DiscordError::Token(why));
    }
    let state = health.register("discord");

    let (outbox, answers) = mpsc::unbounded_channel();
    let commands = Arc::new(PendingCommands::default());
    let refusal_http = rest.clone();
    let delivery_http = rest.clone();
    let tasks = router.clone();
    let refusals = Refusals::start(move |(channel, user_id): (ChannelId, u64)| {
        let http = refusal_http.clone();
        async move {
            let _ = delivery::send_plain(&http, channel, &refusal(user_id)).await;
        }
    });
    let intake = Arc::new(Intake {
        config: config.clone(),
        rest,
        web,
        in_order: InOrder::start(router.clone()),
        router,
        outbox: Mutex::new(Some(outbox)),
        bot_id: AtomicU64::new(first.as_ref().map_or(0, |me| me.id)),
        stopped: AtomicBool::new(false),
        commands: commands.clone(),
        places: Places::default(),
        bot_roles: BotRoles::default(),
        inbox,
        replayed: AtomicBool::new(false),
        last_seen: read_back::LastSeen::default(),
        refusals,
    });
    let pace = Pace::from_millis(config.edit_interval_ms, config.first_flush_ms);
    let delivery = tokio::spawn(platform::delivery::run(answers, pace, move |chat| {
        Some(delivery::DiscordChat {
            http: delivery_http.clone(),
            router: tasks.clone(),
            commands: commands.clone(),
            channel: ChannelId::new(chat.chat.parse().ok()?),
            notify: chat::Notify::default(),
        })
    }));

    let (stop, stopped) = watch::channel(false);
    let (config, token) = (config.clone(), token.to_owned());
    let intake_task = tokio::spawn(async move {
        let me = match first {
            Ok(me) => Some(me),
            Err(why) => {
                warn!(%why, "discord: not connected at start; asking again in the background");
                let ask = || who_am_i(&intake.rest);
                connect::identify("discord", &state, stopped.clone(), ask).await
            }
        };
        if let Some(me) = me {
            info!(bot = me.name, "discord connected");
            intake.bot_id.store(me.id, Ordering::SeqCst);
            keep_running("discord", state, stopped, |stopped, _| {
                serve_gateway(&config, &token, intake.clone(), stopped)
            })
            .await;
        }
        intake.outbox.lock().expect("lock").take();
    });
    Ok(PlatformHandle::new("discord", stop, intake_task, delivery))
}

/// One gateway session: connects and serves events until the connection ends for good
/// (serenity itself reconnects and RESUMEs what it can) or the intake is stopped.
async fn serve_gateway(
    config: &DiscordConfig,
    token: &str,
    intake: Arc<Intake>,
    mut stopped: watch::Receiver<bool>,
) {
    // GUILDS brings THREAD_UPDATE: an archived task's thread is unloaded.
    let intents = GatewayIntents::GUILDS
        | GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT;
    let client =
        ClientBuilder::new_with_http(rest::rest_client(config, token, &intake.web), intents)
            .event_handler_arc(Arc::new(Handler(intake.clone())))
            .await;
    let mut client = match client {
        Ok(client) => client,
        Err(error) => return error!(%error, "discord: cannot set up the gateway client"),
    };
    let shards = client.shard_manager.clone();
    tokio::select! {
        result = client.start() => match result {
            Ok(()) => warn!("discord: the gateway connection ended"),
            Err(error) => error!(%error, "discord: the gateway connection ended"),
        },
        // The guard `wait_for` returns must not live across the shutdown below.
        _ = async { stopped.wait_for(|stop| *stop).await.map(drop) } => {
            intake.stopped.store(true, Ordering::SeqCst);
            shards.shutdown_all().await;
        }
    }
}

/// Who Discord says the bot is: a 401 is the token's fault, the rest passes.
async fn who_am_i(rest: &Http) -> Result<BotIdentity, Unknown> {
    use serenity::http::HttpError;
    match rest.get_current_user().await {
        Ok(me) => Ok(BotIdentity {
            name: me.name.clone(),
            id: me.id.get(),
        }),
        Err(serenity::Error::Http(HttpError::UnsuccessfulRequest(answer)))
            if answer.status_code.as_u16() == 401 =>
        {
            Err(Unknown::TokenRefused(format!(
                "HTTP 401: {}; check discord.token",
                answer.error.message
            )))
        }
        Err(error) => Err(Unknown::Unreachable(error.to_string())),
    }
}

/// `check-config`'s question: who Discord says the bot is.
pub async fn check_token(config: &DiscordConfig, token: &str) -> Result<BotIdentity, String> {
    let web = rest::web_client(config).map_err(|error| error.to_string())?;
    who_am_i(&rest::rest_client(config, token, &web))
        .await
        .map_err(|unknown| unknown.to_string())
}

struct Handler(Arc<Intake>);

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, _ctx: Context, ready: Ready) {
        self.0.bot_id.store(ready.user.id.get(), Ordering::SeqCst);
        // Once per process: a reconnect's `ready` must not hand them on again.
        if !self.0.replayed.swap(true, Ordering::SeqCst) {
            inbox::replay(&self.0).await;
            // What was sent while the gateway was away: Discord replays none of it.
            read_back::seed_from_inbox(&self.0).await;
            read_back::read_back(&self.0).await;
            // Scheduled answers wait until Discord can take them.
            let outbox = self.0.outbox.lock().expect("lock").clone();
            if let Some(outbox) = outbox {
                self.0.router.attach_jobs(Platform::Discord, outbox, true);
            }
        } else {
            // A new session after a lost one: Discord replays nothing to it.
            read_back::read_back(&self.0).await;
        }
        register_commands(&self.0.rest, &self.0.config.guild_ids).await;
    }

    async fn message(&self, _ctx: Context, message: Message) {
        self.0.last_seen.saw(&message);
        if !inbound::is_persons_message(&message) || self.0.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.0.on_message(message, None).await;
    }

    /// An archived thread's conversation is unloaded (its Codex thread id stays kept: a
    /// message there later resumes it).
    async fn thread_update(&self, _ctx: Context, _old: Option<GuildChannel>, new: GuildChannel) {
        let archived = new.thread_metadata.is_some_and(|meta| meta.archived);
        if archived && !self.0.stopped.load(Ordering::SeqCst) {
            let router = self.0.router.clone();
            tokio::spawn(async move { router.unload(&chat_key(new.id)).await });
        }
    }

    async fn interaction_create(&self, _ctx: Context, interaction: Interaction) {
        if self.0.stopped.load(Ordering::SeqCst) {
            return;
        }
        match interaction {
            Interaction::Command(command) => self.0.on_command(command).await,
            Interaction::Component(component) => self.0.on_button(component).await,
            _ => debug!("discord: ignoring an interaction of another kind"),
        }
    }
}

/// The command menu as slash commands: per guild (shown at once) or global.
async fn register_commands(http: &Http, guild_ids: &[u64]) {
    let commands: Vec<CreateCommand> = commands::SPECS
        .iter()
        .map(|spec| {
            let command = CreateCommand::new(spec.name).description(spec.menu);
            match &spec.argument {
                Some(argument) => command.add_option(
                    CreateCommandOption::new(
                        CommandOptionType::String,
                        argument.name,
                        argument.about,
                    )
                    .required(false),
                ),
                None => command,
            }
        })
        .collect();
    let registered = if guild_ids.is_empty() {
        serenity::all::Command::set_global_commands(http, commands)
            .await
            .map(drop)
    } else {
        let mut result = Ok(());
        for guild in guild_ids {
            result = result.and(
                GuildId::new(*guild)
                    .set_commands(http, commands.clone())
                    .await
                    .map(drop),
            );
        }
        result
    };
    match registered {
        Ok(()) => info!("discord: slash commands registered"),
        Err(error) => warn!(%error, "discord: could not register slash commands"),
    }
}

impl Intake {
    fn bot_id(&self) -> u64 {
        self.bot_id.load(Ordering::SeqCst)
    }

    /// Hands a person's message to the router, stored in the durable inbox first (a
    /// message from before the last stop comes with its `ticket`). Returns whether it was
    /// handed on.
    async fn on_message(&self, message: Message, ticket: Option<Ticket>) -> bool {
        let http = &self.rest;
        let dm = message.guild_id.is_none();
        let bot = self.bot_id();
        let role = self.bot_roles.mentioned(http, &message, bot).await;
        let addressed = inbound::mentions(&message.content, bot)
            || role.is_some()
            || addressing::replies_to_bot(&message, bot);
        if !dm && !addressed {
            match self.serves(message.channel_id).await {
                Some(true) => {}
                Some(false) => return false,
                None => {
                    let channel = message.channel_id.get();
                    error!(
                        channel,
                        "discord: a message in a channel that could not be looked up is not taken"
                    );
                    return false;
                }
            }
        }
        let user_id = message.author.id.get();
        let roles = inbound::role_ids(message.member.as_ref().map(|m| m.roles.as_slice()));
        if !inbound::is_allowed(&self.config, user_id, &roles) {
            let channel = message.channel_id;
            // Only a DM is told why; in channels strangers are ignored.
            let told = dm && self.refusals.offer(user_id, (channel, user_id));
            match told {
                true => warn!(user_id, "discord: refused a user who is not allowed"),
                false => debug!(user_id, "discord: ignored a user who is not allowed"),
            }
            return false;
        }
        let role = role.map(|role| role.get());
        let text = inbound::strip_mention(&message.content, bot, role);
        let files = attachments::of(&message.attachments);
        if text.is_empty() && files.is_empty() {
            let hint = "I received an empty message. If you wrote text, the bot needs the Message Content intent (see the README).";
            let _ = delivery::send_plain(http, message.channel_id, hint).await;
            return false;
        }
        let ticket = match ticket {
            Some(ticket) => Some(ticket),
            None => match inbox::accept(&self.inbox, &message).await {
                Acceptance::New(ticket) => Some(ticket),
                Acceptance::Unstored => None,
                Acceptance::Duplicate => return false,
            },
        };
        let chat = chat_key(self.conversation_of(&message, &text).await);
        let author = self.author(&message.author, dm);
        let sent = Sent {
            text,
            attachments: files,
            ticket,
        };
        self.dispatch(message.id.get(), chat, author, sent, None);
        true
    }

    /// Who sent a message, and where: in a DM (`private`) or a guild channel.
    fn author(&self, user: &serenity::all::User, private: bool) -> Author {
        let config = &self.config;
        Author {
            name: user.name.clone(),
            private,
            admin: is_admin(&config.admins, &config.allowed_users, &user.id.get()),
        }
    }

    /// Hands a message to the router, in Discord's order (`snowflake` is its id).
    fn dispatch(
        &self,
        snowflake: u64,
        chat: ChatKey,
        author: Author,
        sent: Sent,
        slot: Option<AnswerSlot>,
    ) {
        let Some(reply_to) = self.outbox.lock().expect("lock").clone() else {
            return; // stopping: the message is not taken
        };
        let inbound = Inbound {
            chat,
            user: author.name,
            text: sent.text,
            reply_to,
            answer_slot: slot,
            can_approve: true,
            private: author.private,
            admin: author.admin,
            attachments: sent.attachments,
            ticket: sent.ticket,
        };
        self.in_order.dispatch(snowflake, inbound);
    }

    async fn on_command(&self, command: CommandInteraction) {
        let http = &self.rest;
        let roles = inbound::role_ids(command.member.as_deref().map(|m| m.roles.as_slice()));
        if !inbound::is_allowed(&self.config, command.user.id.get(), &roles) {
            let refusal = texts::command_refusal(command.user.id.get());
            return respond(command.create_response(http, ephemeral(&refusal))).await;
        }
        // Dispatched first, so the command keeps its place before later messages; its
        // answer edits the deferred response once the deferral is through (see delivery).
        let chat = chat_key(command.channel_id);
        // The option's value follows the name, as a person would type it.
        let argument = command.data.options.iter().find_map(|o| o.value.as_str());
        let text = match argument {
            Some(argument) => format!("/{} {argument}", command.data.name),
            None => format!("/{}", command.data.name),
        };
        let author = self.author(&command.user, command.guild_id.is_none());
        let (slot, deferred) = self.commands.hold(command.clone());
        self.dispatch(command.id.get(), chat, author, Sent::text(text), Some(slot));
        if let Err(error) = command.defer(http).await {
            warn!(%error, "discord: could not defer a slash command");
        }
        let _ = deferred.send(true);
    }

    /// A choice button (its presser sends the command it stands for, in the button's
    /// channel), or an approval button: only allowed users decide; the prompt then shows
    /// who decided.
    async fn on_button(&self, button: ComponentInteraction) {
        let http = &self.rest;
        let roles = inbound::role_ids(button.member.as_ref().map(|m| m.roles.as_slice()));
        if let Some(choice) = choices::pressed(&button.data.custom_id) {
            if !inbound::is_allowed(&self.config, button.user.id.get(), &roles) {
                let refusal = refusal(button.user.id.get());
                return respond(button.create_response(http, ephemeral(&refusal))).await;
            }
            let chat = chat_key(button.channel_id);
            let author = self.author(&button.user, button.guild_id.is_none());
            let sent = Sent::text(choice.command);
            self.dispatch(button.id.get(), chat, author, sent, None);
            // What the command says comes as a message; a question's card shows who chose.
            let response = match choice.answers_card {
                Some(option) => {
                    let line = texts::chosen(&option, &button.user.name, clock::unix_now());
                    settled(&button.message.content, &line)
                }
                None => CreateInteractionResponse::Acknowledge,
            };
            return respond(button.create_response(http, response)).await;
        }
        let presser = Presser {
            id: button.user.id.get(),
            name: &button.user.name,
            allowed: inbound::is_allowed(&self.config, button.user.id.get(), &roles),
        };
        // A press is decided only in the channel its prompt was asked in.
        let place = chat_key(button.channel_id);
        let data = &button.data.custom_id;
        let content = &button.message.content;
        let response = match approvals::press(&self.router, &place, data, presser).await {
            Pressed::Unknown(text) | Pressed::Refused(text) => ephemeral(&text),
            // The prompt keeps one verdict, the first answer's, whoever presses later.
            Pressed::Settled(verdict) => settled(content, &verdict),
        };
        respond(button.create_response(http, response)).await;
    }
}

/// What a person sent: text, files, and the message's durable inbox row.
struct Sent {
    text: String,
    attachments: Vec<Attachment>,
    ticket: Option<Ticket>,
}

impl Sent {
    /// A slash command or a button's command: answered through its interaction, which
    /// expires, so it is not kept in the inbox.
    fn text(text: String) -> Self {
        Self {
            text,
            attachments: Vec::new(),
            ticket: None,
        }
    }
}

/// The sender of a message, as the router needs to know them.
struct Author {
    name: String,
    private: bool,
    admin: bool,
}

fn refusal(user_id: u64) -> String {
    texts::stranger_refusal("Discord", "discord.allowed_users", user_id)
}

fn chat_key(channel: ChannelId) -> ChatKey {
    ChatKey::new(Platform::Discord, channel.get().to_string())
}

/// The card a press settled: `line` under its `content` (once), and no buttons.
fn settled(content: &str, line: &str) -> CreateInteractionResponse {
    let shown = approvals::with_verdict(content, line).unwrap_or_else(|| content.to_owned());
    CreateInteractionResponse::UpdateMessage(
        CreateInteractionResponseMessage::new()
            .allowed_mentions(delivery::no_pings())
            .content(shown)
            .components(Vec::new()),
    )
}

fn ephemeral(text: &str) -> CreateInteractionResponse {
    CreateInteractionResponse::Message(
        CreateInteractionResponseMessage::new()
            .allowed_mentions(delivery::no_pings())
            .content(text)
            .ephemeral(true),
    )
}

async fn respond(response: impl Future<Output = serenity::Result<()>>) {
    if let Err(error) = response.await {
        warn!(%error, "discord: could not answer an interaction");
    }
}
