//! When a guild message addresses the bot besides its mention: a reply to one of its
//! messages, or a mention of its own role (the one Discord made for it when it joined,
//! which the mention list offers beside the bot itself).

use std::collections::HashMap;
use std::sync::Mutex;

use serenity::all::{GuildId, Http, Message, RoleId};
use tracing::warn;

use super::delivery;

/// Whether `message` replies to one of the bot's messages.
pub(super) fn replies_to_bot(message: &Message, bot_id: u64) -> bool {
    message
        .referenced_message
        .as_ref()
        .is_some_and(|replied| replied.author.id.get() == bot_id)
}

/// The bot's own role in each guild, looked up once when a message mentions a role.
#[derive(Default)]
pub(super) struct BotRoles(Mutex<HashMap<GuildId, Option<RoleId>>>);

impl BotRoles {
    /// The bot's own role, if `message` mentions it.
    pub(super) async fn mentioned(
        &self,
        rest: &Http,
        message: &Message,
        bot_id: u64,
    ) -> Option<RoleId> {
        let guild = message.guild_id?;
        if message.mention_roles.is_empty() {
            return None;
        }
        let known = self.0.lock().expect("lock").get(&guild).copied();
        let role = match known {
            Some(role) => role,
            None => {
                let roles = delivery::call(|| rest.get_guild_roles(guild)).await;
                let Ok(roles) = roles else {
                    warn!(
                        guild = guild.get(),
                        "discord: could not read the guild's roles"
                    );
                    return None;
                };
                let own = roles
                    .iter()
                    .find(|role| role.tags.bot_id.is_some_and(|id| id.get() == bot_id))
                    .map(|role| role.id);
                self.0.lock().expect("lock").insert(guild, own);
                own
            }
        };
        role.filter(|role| message.mention_roles.contains(role))
    }
}
