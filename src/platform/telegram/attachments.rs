//! Files people send the bot: what each one is, and fetching it (`getFile`, then the
//! download) when the chat's turn for it comes.

use std::sync::Arc;

use teloxide::net::Download;
use teloxide::prelude::{Bot, Requester};
use teloxide::types::{FileMeta, Message};
use tracing::warn;

use chat::{Attachment, AttachmentKind, FetchError, FetchFile, Fetched};

/// The files of `message`: the largest size of a photo, a document (an image one counts
/// as an image), a voice note, an audio file or a video.
pub fn of(bot: &Bot, message: &Message) -> Vec<Attachment> {
    let mut found = Vec::new();
    if let Some(photo) = message.photo().and_then(|sizes| {
        sizes
            .iter()
            .max_by_key(|size| u64::from(size.width) * u64::from(size.height))
    }) {
        let name = format!("photo-{}.jpg", photo.file.unique_id.0);
        found.push((name, AttachmentKind::Image, &photo.file));
    }
    if let Some(document) = message.document() {
        let image = document
            .mime_type
            .as_ref()
            .is_some_and(|mime| mime.essence_str().starts_with("image/"));
        let kind = match image {
            true => AttachmentKind::Image,
            false => AttachmentKind::Document,
        };
        let name = named(&document.file_name, "document", &document.file, "");
        found.push((name, kind, &document.file));
    }
    if let Some(voice) = message.voice() {
        let name = format!("voice-{}.ogg", voice.file.unique_id.0);
        found.push((name, AttachmentKind::Voice, &voice.file));
    }
    if let Some(audio) = message.audio() {
        let name = named(&audio.file_name, "audio", &audio.file, ".mp3");
        found.push((name, AttachmentKind::Voice, &audio.file));
    }
    if let Some(video) = message.video() {
        let name = named(&video.file_name, "video", &video.file, ".mp4");
        found.push((name, AttachmentKind::Document, &video.file));
    }
    found
        .into_iter()
        .map(|(name, kind, file)| Attachment {
            name,
            kind,
            // Telegram reports u32::MAX when it does not know.
            size: (file.size != u32::MAX).then_some(u64::from(file.size)),
            source: Arc::new(TelegramFile {
                bot: bot.clone(),
                file: file.clone(),
            }),
        })
        .collect()
}

/// The file's own name, else `{what}-{unique id}{extension}`.
fn named(name: &Option<String>, what: &str, file: &FileMeta, extension: &str) -> String {
    name.clone()
        .filter(|name| !name.trim().is_empty())
        .unwrap_or_else(|| format!("{what}-{}{extension}", file.unique_id.0))
}

struct TelegramFile {
    bot: Bot,
    file: FileMeta,
}

impl FetchFile for TelegramFile {
    fn fetch(&self, limit: u64) -> Fetched<'_> {
        Box::pin(async move {
            // The errors' texts may hold the download URL, which holds the token: the
            // chat gets a plain reason, the (redacted) log the details.
            let failed = |error: String| {
                warn!(error, "telegram: could not fetch a file");
                FetchError::Failed("Telegram did not hand it over".into())
            };
            let file = self
                .bot
                .get_file(self.file.id.clone())
                .await
                .map_err(|error| failed(error.to_string()))?;
            if u64::from(file.size) > limit && file.size != u32::MAX {
                return Err(FetchError::TooLarge {
                    bytes: file.size.into(),
                });
            }
            let mut bytes = Vec::new();
            self.bot
                .download_file(&file.path, &mut bytes)
                .await
                .map_err(|error| failed(error.to_string()))?;
            Ok(bytes)
        })
    }
}
