//! The bot's REST client. Every call goes through serenity's rate limiter, which follows
//! Discord's `X-RateLimit-*` headers and waits out a 429's `Retry-After`, unless
//! `api_url` names a proxy: the limiter does not go through one, so the proxy limits.

use std::path::{Path, PathBuf};

use serenity::all::HttpBuilder;
use serenity::http::Http;

use crate::config::DiscordConfig;

/// Discord's REST host, which `connect_to` redirects.
const DISCORD_HOST: &str = "discord.com";

/// Why the REST client could not be made.
#[derive(Debug, thiserror::Error)]
pub enum RestSetupError {
    #[error("discord.ca_file {path:?} cannot be read: {why}")]
    CaFile { path: PathBuf, why: String },
    #[error("the HTTP client cannot start: {0}")]
    Client(String),
}

/// The HTTP client under every REST client of the bot: Discord reached where
/// `connect_to` says, trusting `ca_file`'s authorities besides the built-in ones.
pub fn web_client(config: &DiscordConfig) -> Result<reqwest::Client, RestSetupError> {
    let mut builder = reqwest::Client::builder().use_rustls_tls();
    if let Some(address) = config.connect_to {
        builder = builder.resolve(DISCORD_HOST, address);
    }
    if let Some(path) = &config.ca_file {
        for authority in authorities(path)? {
            builder = builder.add_root_certificate(authority);
        }
    }
    builder
        .build()
        .map_err(|error| RestSetupError::Client(error.to_string()))
}

fn authorities(path: &Path) -> Result<Vec<reqwest::Certificate>, RestSetupError> {
    let unreadable = |why: String| RestSetupError::CaFile {
        path: path.to_owned(),
        why,
    };
    let pem = std::fs::read(path).map_err(|error| unreadable(error.to_string()))?;
    let authorities = reqwest::Certificate::from_pem_bundle(&pem)
        .map_err(|error| unreadable(error.to_string()))?;
    if authorities.is_empty() {
        return Err(unreadable("no PEM certificate in it".into()));
    }
    Ok(authorities)
}

/// A REST client with its own rate limiter, over `web`.
pub fn rest_client(config: &DiscordConfig, token: &str, web: &reqwest::Client) -> Http {
    let mut http = HttpBuilder::new(token).client(web.clone());
    if let Some(application_id) = config.application_id {
        http = http.application_id(application_id.into());
    }
    if let Some(url) = &config.api_url {
        // Serenity's own rate limiter ignores the proxy, so it must be off with one.
        http = http.proxy(url.as_str()).ratelimiter_disabled(true);
    }
    http.build()
}
