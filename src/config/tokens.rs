//! Credentials: kept out of every print, read from their files, and the mistakes a bot
//! token shows before any API is asked (pasted with a prefix, quotes or a line break, or
//! not a token of that platform at all).

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Deserialize;

use super::{Config, ConfigError};

/// A credential: deserialized like a string, never printed.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct Secret(String);

/// Shown as set, never as its value (the tidy test lists the settings this way).
impl serde::Serialize for Secret {
    fn serialize<S: serde::Serializer>(&self, to: S) -> Result<S::Ok, S::Error> {
        to.serialize_str("***")
    }
}

impl Secret {
    pub(super) fn new(value: String) -> Self {
        Self(value)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// The token as given, or read from `token_file` (trimmed: secrets files often end in a
/// newline). Both at once is a mistake worth saying.
pub(super) fn token_from_file(
    platform: &str,
    token: &Option<Secret>,
    file: &Option<PathBuf>,
) -> Result<Option<Secret>, ConfigError> {
    let Some(path) = file else {
        return Ok(token.clone());
    };
    if token.is_some() {
        return Err(ConfigError::Rule(format!(
            "{platform}.token and {platform}.token_file are both set; keep one"
        )));
    }
    read_token(platform, path).map(Some)
}

/// The token in `path`, trimmed; `owner` names whose `token_file` it is in errors.
pub(super) fn read_token(owner: &str, path: &Path) -> Result<Secret, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|error| {
        ConfigError::Rule(format!(
            "{owner}.token_file {} cannot be read: {error}",
            path.display()
        ))
    })?;
    match text.trim() {
        "" => Err(ConfigError::Rule(format!(
            "{owner}.token_file {} is empty",
            path.display()
        ))),
        token => Ok(Secret::new(token.to_owned())),
    }
}

/// Which platform's token.
#[derive(Debug, Clone, Copy)]
pub enum TokenOf {
    Telegram,
    Discord,
}

/// What is wrong with the look of `token`, if anything; said as a warning (only the API
/// knows whether it works).
pub fn shape_problem(of: TokenOf, token: &str) -> Option<&'static str> {
    if matches!(of, TokenOf::Discord) && (token.starts_with("Bot ") || token.starts_with("Bearer "))
    {
        return Some("starts with \"Bot \" or \"Bearer \": give the token alone");
    }
    if token.chars().any(char::is_whitespace) {
        return Some("has a space or line break in it");
    }
    if token.starts_with(['"', '\'']) {
        return Some("starts with a quote, which is not part of the token");
    }
    let url_safe = |part: &str| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    };
    let fits = match of {
        TokenOf::Telegram => token.split_once(':').is_some_and(|(bot, key)| {
            !bot.is_empty()
                && bot.chars().all(|c| c.is_ascii_digit())
                && key.len() >= 30
                && url_safe(key)
        }),
        TokenOf::Discord => {
            let parts: Vec<&str> = token.split('.').collect();
            parts.len() == 3 && parts.into_iter().all(url_safe)
        }
    };
    match (fits, of) {
        (true, _) => None,
        (false, TokenOf::Telegram) => Some(TELEGRAM_SHAPE),
        (false, TokenOf::Discord) => Some(DISCORD_SHAPE),
    }
}

/// `[codex.env]` must not hand Codex one of the gateway's own secrets: everything Codex
/// runs could read it.
pub(super) fn refuse_secrets_in_codex_env(config: &Config) -> Result<(), ConfigError> {
    let secrets = config.secrets();
    for (name, value) in &config.codex.env {
        if secrets.iter().any(|secret| secret.expose() == value.trim()) {
            return Err(ConfigError::Rule(format!(
                "codex.env.{name} holds one of the gateway's tokens; Codex and every command \
                 it runs could read it. Remove it"
            )));
        }
    }
    Ok(())
}

/// What in the config may hand Codex a secret, said at start and by `check-config`: a
/// bot token in `[codex.env]`, or root without `run_as` (Codex then reads the config,
/// the token files and the database).
pub fn secret_warnings(config: &Config, running_as_root: bool) -> Vec<String> {
    let mut warnings: Vec<String> = config
        .codex
        .env
        .iter()
        .filter(|(_, value)| {
            [TokenOf::Telegram, TokenOf::Discord]
                .into_iter()
                .any(|of| shape_problem(of, value).is_none())
        })
        .map(|(name, _)| {
            format!(
                "codex.env.{name} looks like a bot token; Codex and every command it runs can \
                 read it"
            )
        })
        .collect();
    if running_as_root && config.codex.run_as.is_none() {
        warnings.push(
            "the gateway runs as root without codex.run_as: Codex and every command it runs \
             can read the config, the token files and the database; set codex.run_as to a \
             user of its own (see the README)"
                .into(),
        );
    }
    warnings
}

const TELEGRAM_SHAPE: &str = "does not look like a Telegram bot token (digits, a colon, then \
     about 35 letters, digits, - and _, as @BotFather gives it)";
const DISCORD_SHAPE: &str = "does not look like a Discord bot token (three parts joined by \
     dots, from the Developer Portal's Bot page; not the application id or the public key)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_for_codex_are_refused_or_named() {
        let mut config = Config::default();
        config.telegram.token = Some(Secret::new(
            "123456789:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU".into(),
        ));
        config.codex.env.insert(
            "LEAK".into(),
            "123456789:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU".into(),
        );
        let refused = refuse_secrets_in_codex_env(&config)
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("codex.env.LEAK holds one of the gateway's tokens"),
            "{refused}"
        );

        config.telegram.token = None;
        config
            .codex
            .env
            .insert("OPENAI_API_KEY".into(), "sk-proj-abc".into());
        assert!(refuse_secrets_in_codex_env(&config).is_ok());
        let warned = secret_warnings(&config, false);
        assert_eq!(warned.len(), 1, "{warned:?}");
        assert!(warned[0].starts_with("codex.env.LEAK looks like a bot token"));
        assert_eq!(secret_warnings(&config, true).len(), 2);
        config.codex.run_as = Some("codex".into());
        assert_eq!(secret_warnings(&config, true).len(), 1);
    }

    #[test]
    fn real_looking_tokens_pass() {
        let telegram = "123456789:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU";
        assert_eq!(shape_problem(TokenOf::Telegram, telegram), None);
        let discord = "MTIzNDU2Nzg5MDEyMzQ1Njc4.GaBcDe.abcdefghijklmnopqrstuvwxyz_0123456789-A";
        assert_eq!(shape_problem(TokenOf::Discord, discord), None);
    }

    #[test]
    fn common_mistakes_are_named() {
        let cases = [
            (TokenOf::Telegram, "123456789", TELEGRAM_SHAPE),
            (TokenOf::Telegram, "123:short", TELEGRAM_SHAPE),
            (
                TokenOf::Telegram,
                "bot:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU",
                TELEGRAM_SHAPE,
            ),
            (
                TokenOf::Telegram,
                "123:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU\n",
                "has a space or line break in it",
            ),
            (
                TokenOf::Telegram,
                "\"123:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU\"",
                "starts with a quote, which is not part of the token",
            ),
            (
                TokenOf::Discord,
                "Bot MTIz.GaBc.abcd",
                "starts with \"Bot \" or \"Bearer \": give the token alone",
            ),
            (TokenOf::Discord, "1234567890123456789", DISCORD_SHAPE),
            (TokenOf::Discord, "a.b", DISCORD_SHAPE),
        ];
        for (of, token, expected) in cases {
            assert_eq!(shape_problem(of, token), Some(expected), "{token:?}");
        }
    }
}
