//! Files attached to Discord messages: what each one is, and downloading it (at most the
//! limit) when the chat's turn for it comes.

use std::sync::{Arc, LazyLock};
use std::time::Duration;

use tracing::warn;

use chat::{Attachment, AttachmentKind, FetchError, FetchFile, Fetched};

/// A download that takes longer has failed: the chat's turn waits for it.
const DOWNLOAD_TIMEOUT: Duration = Duration::from_secs(120);

/// One client for every download: it keeps connections to the CDN open.
static CLIENT: LazyLock<reqwest::Client> = LazyLock::new(|| {
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(DOWNLOAD_TIMEOUT)
        .build()
        .unwrap_or_default()
});

/// The attachments of a message, by their content type: images, audio (voice messages
/// included) for transcription, anything else as a document.
pub fn of(attachments: &[serenity::all::Attachment]) -> Vec<Attachment> {
    attachments
        .iter()
        .map(|attachment| {
            let content_type = attachment.content_type.as_deref().unwrap_or_default();
            let kind = match content_type.split('/').next() {
                Some("image") => AttachmentKind::Image,
                Some("audio") => AttachmentKind::Voice,
                _ => AttachmentKind::Document,
            };
            Attachment {
                name: attachment.filename.clone(),
                kind,
                size: Some(attachment.size.into()),
                source: Arc::new(DiscordFile {
                    url: attachment.url.clone(),
                }),
            }
        })
        .collect()
}

struct DiscordFile {
    url: String,
}

impl FetchFile for DiscordFile {
    fn fetch(&self, limit: u64) -> Fetched<'_> {
        Box::pin(download(&self.url, limit))
    }
}

/// The file at `url`, refused as soon as it proves larger than `limit`.
async fn download(url: &str, limit: u64) -> Result<Vec<u8>, FetchError> {
    let failed = |error: reqwest::Error| {
        // Attachment URLs are signed: the log gets the error without it.
        warn!(error = %error.without_url(), "discord: could not download an attachment");
        FetchError::Failed("Discord did not hand it over".into())
    };
    let response = CLIENT.get(url).send().await.map_err(failed)?;
    let mut response = response.error_for_status().map_err(failed)?;
    if let Some(bytes) = response.content_length().filter(|bytes| *bytes > limit) {
        return Err(FetchError::TooLarge { bytes });
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await.map_err(failed)? {
        bytes.extend_from_slice(&chunk);
        if bytes.len() as u64 > limit {
            let bytes = bytes.len() as u64;
            return Err(FetchError::TooLarge { bytes });
        }
    }
    Ok(bytes)
}
