//! How settings written as text are read, with errors a person can act on: the `config`
//! crate alone says "enum SandboxMode does not have variant constructor yolo" and "data
//! did not match any variant of untagged enum Ids".

use std::fmt;

use serde::de::{self, DeserializeOwned, Error as _};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// An enum setting by its name: a wrong name is answered with serde's list of the valid
/// ones ("unknown variant `yolo`, expected one of `read-only`, ...").
pub(super) fn by_name<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: DeserializeOwned,
{
    let name = String::deserialize(deserializer)?;
    T::deserialize(de::value::StringDeserializer::<D::Error>::new(name))
}

/// What a person who wrote a name or `@handle` where an id belongs needs to know.
const IDS_ARE_NUMBERS: &str = "users, channels, roles and servers are given by their \
     numeric id (123456789), not by name. Your Telegram id: message @userinfobot. A Discord \
     id: turn on Developer Mode (Settings > Advanced), then right-click the user, channel, \
     role or server and Copy ID";

/// A list of ids: a TOML array (of numbers, or numbers in quotes), or from the
/// environment one id or "id,id,...".
pub(super) fn id_list<'de, D, T>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: std::str::FromStr,
    T::Err: fmt::Display,
{
    let texts: Vec<String> = match Value::deserialize(deserializer)? {
        Value::Array(items) => items.iter().map(id_text).collect::<Result<_, _>>()?,
        Value::String(text) => text
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
            .map(str::to_owned)
            .collect(),
        other => vec![id_text(&other)?],
    };
    texts
        .iter()
        .map(|text| {
            text.parse()
                .map_err(|_| D::Error::custom(format!("{text:?} is not an id: {IDS_ARE_NUMBERS}")))
        })
        .collect()
}

fn id_text<E: de::Error>(value: &Value) -> Result<String, E> {
    match value {
        Value::Number(number) => Ok(number.to_string()),
        Value::String(text) => Ok(text.trim().to_owned()),
        other => Err(E::custom(format!(
            "{other} is not an id: {IDS_ARE_NUMBERS}"
        ))),
    }
}
