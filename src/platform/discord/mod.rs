//! Discord through serenity: guild channels (when mentioned, or every message in listed
//! channels), threads and DMs, each channel its own conversation. Slash commands answer
//! through their interaction; approvals are buttons. Serenity reconnects and RESUMEs the
//! gateway by itself; conversations live in the router, so they survive that.

mod delivery;
mod inbound;

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serenity::all::{
    ChannelId, ChannelType, ClientBuilder, CommandInteraction, ComponentInteraction, Context,
    CreateCommand, CreateInteractionResponse, CreateInteractionResponseMessage, EventHandler,
    GatewayIntents, GuildId, HttpBuilder, Interaction, Message, Ready,
};
use serenity::async_trait;
use serenity::http::Http;
use tokio::sync::{mpsc, watch};
use tracing::{debug, error, info, warn};

use super::PlatformHandle;
use crate::chat::{ChatKey, Inbound, Outbox, Platform};
use crate::config::DiscordConfig;
use crate::platform;
use crate::platform::delivery::PromptOwners;
use crate::router::{Router, command};

#[derive(Debug, thiserror::Error)]
pub enum DiscordError {
    #[error("Discord did not accept the bot (check discord.token): {0}")]
    Start(serenity::Error),
}

/// What the event handler and the delivery share.
struct Shared {
    /// Set once the client is built, before any event arrives.
    http: OnceLock<Arc<Http>>,
    config: DiscordConfig,
    router: Router,
    /// Taken when the intake stops, so delivery ends once the router has drained.
    outbox: Mutex<Option<Outbox>>,
    bot_id: AtomicU64,
    /// Set when the intake stops: later events are ignored.
    stopped: AtomicBool,
    /// Approval prompt id -> its chat, for the buttons.
    approvals: PromptOwners,
    /// Deferred slash commands per chat, answered by the chat's next notice.
    commands: Mutex<HashMap<ChatKey, VecDeque<CommandInteraction>>>,
    /// Thread -> parent channel, learned once per thread.
    parents: Mutex<HashMap<ChannelId, Option<ChannelId>>>,
}

/// Checks the token, then connects to the gateway and starts serving.
pub async fn start(
    config: &DiscordConfig,
    token: &str,
    router: Router,
) -> Result<PlatformHandle, DiscordError> {
    let mut http = HttpBuilder::new(token);
    if let Some(application_id) = config.application_id {
        http = http.application_id(application_id.into());
    }
    if let Some(url) = &config.api_url {
        // Serenity's own rate limiter ignores the proxy, so it must be off with one.
        http = http.proxy(url.as_str()).ratelimiter_disabled(true);
    }
    let http = http.build();
    let me = http.get_current_user().await.map_err(DiscordError::Start)?;
    info!(bot = me.name, "discord connected");

    let (outbox, answers) = mpsc::unbounded_channel();
    let intents = GatewayIntents::GUILD_MESSAGES
        | GatewayIntents::DIRECT_MESSAGES
        | GatewayIntents::MESSAGE_CONTENT;
    let shared = Arc::new(Shared {
        http: OnceLock::new(),
        config: config.clone(),
        router,
        outbox: Mutex::new(Some(outbox)),
        bot_id: AtomicU64::new(me.id.get()),
        stopped: AtomicBool::new(false),
        approvals: PromptOwners::default(),
        commands: Mutex::new(HashMap::new()),
        parents: Mutex::new(HashMap::new()),
    });
    let mut client = ClientBuilder::new_with_http(http, intents)
        .event_handler_arc(Arc::new(Handler(shared.clone())))
        .await
        .map_err(DiscordError::Start)?;
    let _ = shared.http.set(client.http.clone());

    let interval = Duration::from_millis(config.edit_interval_ms);
    let sinks = shared.clone();
    let owners = shared.approvals.clone();
    let delivery = tokio::spawn(platform::delivery::run(
        answers,
        interval,
        owners,
        move |chat| {
            let channel = ChannelId::new(chat.chat.parse().ok()?);
            Some(delivery::DiscordChat {
                shared: sinks.clone(),
                chat: chat.clone(),
                channel,
            })
        },
    ));

    let (stop, mut stopped) = watch::channel(false);
    let intake_shared = shared.clone();
    let intake = tokio::spawn(async move {
        let shards = client.shard_manager.clone();
        tokio::select! {
            result = client.start() => {
                if let Err(error) = result {
                    error!(%error, "discord: the gateway connection ended");
                }
            }
            _ = stopped.changed() => {
                intake_shared.stopped.store(true, Ordering::SeqCst);
                shards.shutdown_all().await;
            }
        }
        intake_shared.outbox.lock().expect("lock").take();
    });
    Ok(PlatformHandle::new("discord", stop, intake, delivery))
}

struct Handler(Arc<Shared>);

#[async_trait]
impl EventHandler for Handler {
    async fn ready(&self, ctx: Context, ready: Ready) {
        self.0.bot_id.store(ready.user.id.get(), Ordering::SeqCst);
        let commands: Vec<CreateCommand> = command::MENU
            .iter()
            .map(|(name, description)| CreateCommand::new(*name).description(*description))
            .collect();
        let registered = if self.0.config.guild_ids.is_empty() {
            serenity::all::Command::set_global_commands(&ctx.http, commands)
                .await
                .map(drop)
        } else {
            let mut result = Ok(());
            for guild in &self.0.config.guild_ids {
                result = result.and(
                    GuildId::new(*guild)
                        .set_commands(&ctx.http, commands.clone())
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

    async fn message(&self, _ctx: Context, message: Message) {
        if message.author.bot || self.0.stopped.load(Ordering::SeqCst) {
            return;
        }
        self.0.on_message(message).await;
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

impl Shared {
    fn http(&self) -> &Http {
        self.http.get().expect("http is set before events arrive")
    }

    fn bot_id(&self) -> u64 {
        self.bot_id.load(Ordering::SeqCst)
    }

    async fn on_message(&self, message: Message) {
        let dm = message.guild_id.is_none();
        let mentioned = inbound::mentions(&message.content, self.bot_id());
        if !dm && !mentioned && !self.is_listed(message.channel_id).await {
            return;
        }
        let user_id = message.author.id.get();
        let roles: Vec<u64> = message
            .member
            .as_ref()
            .map(|m| m.roles.iter().map(|r| r.get()).collect())
            .unwrap_or_default();
        if !inbound::is_allowed(&self.config, user_id, &roles) {
            warn!(
                user_id,
                channel = message.channel_id.get(),
                "discord: ignored a user who is not allowed"
            );
            if dm {
                let refusal = format!(
                    "Sorry, you are not allowed to use this bot. Your Discord user id is {user_id}; \
                     the bot's owner can add it to discord.allowed_users."
                );
                delivery::send_plain(self.http(), message.channel_id, &refusal).await;
            }
            return;
        }
        let text = inbound::strip_mention(&message.content, self.bot_id());
        if text.is_empty() {
            let hint = if message.attachments.is_empty() {
                "I received an empty message. If you wrote text, the bot needs the Message Content intent (see the README)."
            } else {
                "I can only read text: please describe the attachment in words."
            };
            delivery::send_plain(self.http(), message.channel_id, hint).await;
            return;
        }
        self.dispatch(
            chat_key(message.channel_id),
            message.author.name.clone(),
            text,
        );
    }

    fn dispatch(&self, chat: ChatKey, user: String, text: String) {
        let Some(reply_to) = self.outbox.lock().expect("lock").clone() else {
            return; // stopping: the message is not taken
        };
        self.router.dispatch(Inbound {
            chat,
            user,
            text,
            reply_to,
            can_approve: true,
        });
    }

    /// A listed channel, or a thread whose parent is listed.
    async fn is_listed(&self, channel: ChannelId) -> bool {
        let listed = |c: ChannelId| self.config.channels.contains(&c.get());
        if listed(channel) {
            return true;
        }
        let known = self.parents.lock().expect("lock").get(&channel).copied();
        let parent = match known {
            Some(parent) => parent,
            None => {
                let parent = match self.http().get_channel(channel).await {
                    Ok(serenity::all::Channel::Guild(c))
                        if matches!(
                            c.kind,
                            ChannelType::PublicThread | ChannelType::PrivateThread
                        ) =>
                    {
                        c.parent_id
                    }
                    Ok(_) => None,
                    Err(error) => {
                        warn!(%error, "discord: could not look up a channel");
                        return false;
                    }
                };
                self.parents.lock().expect("lock").insert(channel, parent);
                parent
            }
        };
        parent.is_some_and(listed)
    }

    async fn on_command(&self, command: CommandInteraction) {
        let roles = member_roles(command.member.as_deref());
        if !inbound::is_allowed(&self.config, command.user.id.get(), &roles) {
            let refusal = format!(
                "You (user id {}) are not allowed to use this bot.",
                command.user.id
            );
            return respond(command.create_response(self.http(), ephemeral(&refusal))).await;
        }
        // Deferred: the chat's next notice becomes the answer (see delivery).
        if let Err(error) = command.defer(self.http()).await {
            warn!(%error, "discord: could not defer a slash command");
        }
        let chat = chat_key(command.channel_id);
        let text = format!("/{}", command.data.name);
        let user = command.user.name.clone();
        self.commands
            .lock()
            .expect("lock")
            .entry(chat.clone())
            .or_default()
            .push_back(command);
        self.dispatch(chat, user, text);
    }

    /// An approval button: only allowed users decide; the prompt then shows who decided.
    async fn on_button(&self, button: ComponentInteraction) {
        let Some((id, decision)) = platform::delivery::parse_approval_data(&button.data.custom_id)
        else {
            let unknown = ephemeral("This button is not known to the bot.");
            return respond(button.create_response(self.http(), unknown)).await;
        };
        let roles = member_roles(button.member.as_ref());
        let user_id = button.user.id.get();
        if !inbound::is_allowed(&self.config, user_id, &roles) {
            warn!(
                user_id,
                id, "discord: refused an approval from a user who is not allowed"
            );
            let refusal = format!("You (user id {user_id}) are not allowed to decide this.");
            return respond(button.create_response(self.http(), ephemeral(&refusal))).await;
        }
        let chat = self.approvals.take(id);
        let decided = match &chat {
            Some(chat) => self.router.decide_approval(chat, id, decision).await,
            None => false,
        };
        let verdict = if decided {
            format!(
                "{} by {}",
                platform::delivery::decision_label(decision),
                button.user.name
            )
        } else {
            "No longer pending (answered, timed out, or the turn ended).".to_owned()
        };
        let update = CreateInteractionResponseMessage::new()
            .content(format!("{}\n\n{verdict}", button.message.content))
            .components(Vec::new());
        if let Err(error) = button
            .create_response(
                self.http(),
                CreateInteractionResponse::UpdateMessage(update),
            )
            .await
        {
            warn!(%error, "discord: could not update the approval prompt");
        }
    }
}

fn chat_key(channel: ChannelId) -> ChatKey {
    ChatKey::new(Platform::Discord, channel.get().to_string())
}

fn member_roles(member: Option<&serenity::all::Member>) -> Vec<u64> {
    member
        .map(|m| m.roles.iter().map(|r| r.get()).collect())
        .unwrap_or_default()
}

fn ephemeral(text: &str) -> CreateInteractionResponse {
    CreateInteractionResponse::Message(
        CreateInteractionResponseMessage::new()
            .content(text)
            .ephemeral(true),
    )
}

async fn respond(response: impl Future<Output = serenity::Result<()>>) {
    if let Err(error) = response.await {
        warn!(%error, "discord: could not answer an interaction");
    }
}
