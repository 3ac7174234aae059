//! A getUpdates batch, read one update at a time. An update the gateway cannot read (a
//! kind or field teloxide does not know, a lone UTF-16 surrogate in a text) is skipped
//! with its id logged, never its text, and the offset moves past it: read as one batch,
//! it failed every poll on the same offset, and the bot was dead for everyone.

use std::borrow::Cow;

use teloxide::types::Update;
use tracing::warn;

use super::drafts::{STOPPED_UPDATE, Stopped};

/// The updates of one batch that could be read, and where the next poll starts.
pub(super) struct Batch {
    pub(super) updates: Vec<Update>,
    /// Telegram's stop pressed on drafts (a kind teloxide does not know).
    pub(super) stopped: Vec<Stopped>,
    /// Past the batch's last update, read or not; `None` for an empty batch.
    pub(super) next_offset: Option<i64>,
}

/// Reads each update of a batch (as the JSON text Telegram sent: teloxide's `Update`
/// reads from text only) on its own.
pub(super) fn read_batch(raw: Vec<String>) -> Batch {
    #[derive(serde::Deserialize)]
    struct Id {
        update_id: i64,
    }
    #[derive(serde::Deserialize)]
    struct StopUpdate {
        stopped_message_generation: Stopped,
    }
    let id = |text: &str| serde_json::from_str::<Id>(text).ok().map(|id| id.update_id);
    let stop = |text: &str| serde_json::from_str::<StopUpdate>(text).ok();
    let (stops, raw): (Vec<String>, Vec<String>) = raw
        .into_iter()
        .partition(|text| text.contains(STOPPED_UPDATE) && stop(text).is_some());
    let stopped = stops
        .iter()
        .filter_map(|text| stop(text))
        .map(|update| update.stopped_message_generation)
        .collect();
    let next_offset = raw
        .iter()
        .chain(&stops)
        .filter_map(|text| id(text))
        .max()
        .map(|last| last + 1);
    let updates = raw
        .iter()
        .filter_map(|text| match serde_json::from_str::<Update>(text) {
            Ok(update) => Some(update),
            Err(error) => {
                // The error may quote the update's text: only its kind is logged.
                let kind = format!("{:?}", error.classify());
                let update_id = id(text);
                warn!(
                    update_id,
                    kind, "telegram: an update this gateway cannot read was skipped"
                );
                None
            }
        })
        .collect();
    Batch {
        updates,
        stopped,
        next_offset,
    }
}

/// The body with every `\uD800`..`\uDFFF` escape that is not half of a pair replaced by
/// `\uFFFD`: serde_json refuses a lone surrogate in a string, and a Telegram message can
/// carry any UTF-16 (a cut emoji, say). The message then arrives with a replacement
/// character, instead of failing its whole batch.
pub(super) fn repair_lone_surrogates(body: &str) -> Cow<'_, str> {
    let bytes = body.as_bytes();
    let unit = |at: usize| -> Option<u16> {
        let escape = bytes.get(at..at + 6)?;
        let hex = std::str::from_utf8(escape.strip_prefix(b"\\u")?).ok()?;
        u16::from_str_radix(hex, 16).ok()
    };
    let is_high = |u: u16| (0xD800..0xDC00).contains(&u);
    let is_low = |u: u16| (0xDC00..0xE000).contains(&u);
    let mut repaired: Option<String> = None;
    let mut copied = 0;
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'\\' {
            at += 1;
            continue;
        }
        let Some(first) = unit(at) else {
            // Another escape (`\\`, `\"`...): skip it whole, so `\\u` is not read as one.
            at += 2;
            continue;
        };
        let paired = is_high(first) && unit(at + 6).is_some_and(is_low);
        if paired {
            at += 12;
            continue;
        }
        if is_high(first) || is_low(first) {
            let text = repaired.get_or_insert_with(String::new);
            text.push_str(&body[copied..at]);
            text.push_str("\\uFFFD");
            copied = at + 6;
        }
        at += 6;
    }
    match repaired {
        Some(mut text) => {
            text.push_str(&body[copied..]);
            Cow::Owned(text)
        }
        None => Cow::Borrowed(body),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lone_surrogates_become_replacement_characters_and_pairs_stay() {
        let cases = [
            (r#""a\ud800b""#, r#""a\uFFFDb""#),
            (r#""\udc00""#, r#""\uFFFD""#),
            (r#""\ud83d\ude00""#, r#""\ud83d\ude00""#),
            (r#""\ud83d\ud83d\ude00""#, r#""\uFFFD\ud83d\ude00""#),
            (r#""\\ud800 is text""#, r#""\\ud800 is text""#),
            (r#""\u00e9 \n""#, r#""\u00e9 \n""#),
            ("plain", "plain"),
        ];
        for (body, expected) in cases {
            assert_eq!(repair_lone_surrogates(body), expected, "{body}");
            let repaired = repair_lone_surrogates(body);
            if body.starts_with('"') {
                serde_json::from_str::<String>(&repaired).expect("reads as a string");
            }
        }
    }

    fn message(id: i64, text: &str) -> String {
        serde_json::json!({"update_id": id, "message": {"message_id": id, "date": 1,
            "chat": {"id": 1001, "type": "private", "first_name": "Alice"},
            "from": {"id": 1001, "is_bot": false, "first_name": "Alice"}, "text": text}})
        .to_string()
    }

    #[test]
    fn an_unreadable_update_is_skipped_and_the_offset_moves_past_it() {
        // teloxide reads a message it cannot parse as `UpdateKind::Error`; what fails is
        // an update that is not one at all.
        let broken = r#"{"update_id": 8, "message": {"text": "secret"}, "update_id": "x"}"#;
        let batch = read_batch(vec![
            message(7, "hello"),
            broken.into(),
            message(9, "after"),
        ]);
        let ids: Vec<i32> = batch.updates.iter().map(|u| u.id.0 as i32).collect();
        assert_eq!(ids, [7, 9]);
        let read = |u: &Update| matches!(u.kind, teloxide::types::UpdateKind::Message(_));
        assert!(
            batch.updates.iter().all(read),
            "the messages read as messages"
        );
        assert_eq!(batch.next_offset, Some(10));
        let stop = r#"{"update_id": 11, "stopped_message_generation": {"chat": {"id": 1001,
            "type": "private", "first_name": "Alice"}, "draft_id": 77}}"#;
        let stopped = read_batch(vec![message(10, "x"), stop.into()]);
        assert_eq!(stopped.updates.len(), 1);
        assert_eq!(stopped.stopped.len(), 1);
        assert_eq!(stopped.stopped[0].draft_id, 77);
        assert_eq!(stopped.stopped[0].chat.id, 1001);
        assert_eq!(stopped.next_offset, Some(12));
        let unread = read_batch(vec![r#"{"update_id": 12, "edited": []}"#.into()]);
        assert_eq!(unread.next_offset, Some(13));
        assert_eq!(read_batch(Vec::new()).next_offset, None);
    }
}
