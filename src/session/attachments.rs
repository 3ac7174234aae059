//! What people send Codex besides text: files fetched from the platform and saved in the
//! chat's folder by the app-server itself (so they land where Codex runs, as its user),
//! images shown to the model, voice turned into text.

use std::path::{Path, PathBuf};

use tracing::info;

use super::{Session, SessionError};
use crate::transcription::TranscriptionError;
use chat::{Attachment, AttachmentKind, FetchError};
use codex::{CodexError, UserInput};

/// The subfolder of the chat's folder that received files go to.
pub const ATTACHMENTS_FOLDER: &str = "attachments";
/// Longest file name kept (in characters, extension included).
const MAX_NAME_CHARS: usize = 100;
/// Suffixes tried before giving up on a free name.
const MAX_SUFFIX: u32 = 1000;

/// What a message gives its turn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Prompt {
    /// The text, with a line per saved file before it.
    pub text: String,
    /// Images for the model, on the app-server's machine.
    pub images: Vec<PathBuf>,
    /// What each voice message said, for the chat to see.
    pub transcripts: Vec<String>,
}

impl Prompt {
    pub fn text(text: &str) -> Self {
        Self {
            text: text.to_owned(),
            ..Self::default()
        }
    }

    /// The turn's input items: the text, then each image.
    pub(super) fn inputs(&self) -> Vec<UserInput<'_>> {
        let text = (!self.text.is_empty()).then_some(UserInput::Text { text: &self.text });
        let images = self
            .images
            .iter()
            .map(|path| UserInput::LocalImage { path });
        text.into_iter().chain(images).collect()
    }
}

/// Why a message with files is not given to Codex; the chat is told, nothing is sent.
#[derive(Debug, thiserror::Error)]
pub enum AttachmentRefusal {
    #[error("{name} is {} MB; files up to {limit_mb} MB can be sent. Nothing was sent to Codex.", bytes.div_ceil(1024 * 1024))]
    TooLarge {
        name: String,
        bytes: u64,
        limit_mb: u64,
    },
    #[error(
        "{name} could not be downloaded ({reason}). Nothing was sent to Codex; please send it again."
    )]
    Download { name: String, reason: String },
    #[error(
        "{name} could not be saved in this chat's folder ({error}). Nothing was sent to Codex."
    )]
    Save { name: String, error: SessionError },
    #[error(
        "{name} could not be saved: this chat's folder is not usable ({reason}). \
         Nothing was sent to Codex."
    )]
    Folder { name: String, reason: String },
    #[error(
        "{name} could not be saved: attachments/ already holds {MAX_SUFFIX} files of that \
         name. Nothing was sent to Codex."
    )]
    NoFreeName { name: String },
    #[error(
        "Voice messages need transcription, which this gateway does not have \
         ([transcription] url in its config). Please type your message."
    )]
    NoTranscription,
    #[error("The voice message could not be transcribed ({0}). Please try again, or type it.")]
    Transcription(TranscriptionError),
}

impl Session {
    /// The prompt for a message's `caption` and `attachments`: files saved under the
    /// chat's `attachments/` folder (Codex told where), images also given as images,
    /// voice transcribed. Any refusal leaves nothing half-sent.
    pub async fn prompt(
        &mut self,
        caption: &str,
        attachments: &[Attachment],
    ) -> Result<Prompt, AttachmentRefusal> {
        let _ = self.choices().await; // a chosen folder counts; unreadable choices do not
        let mut notes = Vec::new();
        let mut prompt = Prompt::default();
        for attachment in attachments {
            if attachment.kind == AttachmentKind::Voice && self.ctx.transcriber.is_none() {
                return Err(AttachmentRefusal::NoTranscription);
            }
            let bytes = self.fetch(attachment).await?;
            match attachment.kind {
                AttachmentKind::Voice => {
                    let transcriber = self.ctx.transcriber.as_ref();
                    let transcriber = transcriber.ok_or(AttachmentRefusal::NoTranscription)?;
                    let text = transcriber
                        .transcribe(&attachment.name, bytes)
                        .await
                        .map_err(AttachmentRefusal::Transcription)?;
                    prompt.transcripts.push(text);
                }
                AttachmentKind::Image => {
                    let (path, shown) = self.save(&attachment.name, &bytes).await?;
                    notes.push(format!("[image saved: {shown}]"));
                    prompt.images.push(path);
                }
                AttachmentKind::Document => {
                    let (_, shown) = self.save(&attachment.name, &bytes).await?;
                    notes.push(format!("[file saved: {shown}]"));
                }
            }
        }
        let caption = caption.trim();
        let parts = notes.iter().map(String::as_str);
        let parts = parts.chain(prompt.transcripts.iter().map(String::as_str));
        let parts: Vec<&str> = parts
            .chain((!caption.is_empty()).then_some(caption))
            .collect();
        prompt.text = parts.join("\n");
        Ok(prompt)
    }

    /// An attachment's bytes, refused unfetched when the platform says it is too large.
    async fn fetch(&self, attachment: &Attachment) -> Result<Vec<u8>, AttachmentRefusal> {
        let limit = self.ctx.settings.max_attachment_bytes;
        let too_large = |bytes| AttachmentRefusal::TooLarge {
            name: attachment.name.clone(),
            bytes,
            limit_mb: limit / 1024 / 1024,
        };
        if let Some(size) = attachment.size.filter(|size| *size > limit) {
            return Err(too_large(size));
        }
        match attachment.source.fetch(limit).await {
            Ok(bytes) if bytes.len() as u64 > limit => Err(too_large(bytes.len() as u64)),
            Ok(bytes) => Ok(bytes),
            Err(FetchError::TooLarge { bytes }) => Err(too_large(bytes)),
            Err(FetchError::Failed(reason)) => Err(AttachmentRefusal::Download {
                name: attachment.name.clone(),
                reason,
            }),
        }
    }

    /// Saves `bytes` as `attachments/<name>` in the chat's folder, under a free name
    /// (`report-1.txt` when `report.txt` is taken). Returns the path and how the chat's
    /// folder sees it.
    async fn save(&self, name: &str, bytes: &[u8]) -> Result<(PathBuf, String), AttachmentRefusal> {
        let failed = |error: CodexError| AttachmentRefusal::Save {
            name: name.to_owned(),
            error: error.into(),
        };
        let folder = self.folder().map_err(|error| AttachmentRefusal::Folder {
            name: name.to_owned(),
            reason: error.to_string(),
        })?;
        let server = self
            .server()
            .await
            .map_err(|error| AttachmentRefusal::Save {
                name: name.to_owned(),
                error,
            })?;
        let dir = folder.join(ATTACHMENTS_FOLDER);
        server.create_directory(&dir).await.map_err(failed)?;
        let safe = safe_name(name);
        for suffix in 0..MAX_SUFFIX {
            let candidate = numbered(&safe, suffix);
            let path = dir.join(&candidate);
            if server.exists(&path).await.map_err(failed)? {
                continue;
            }
            server.write_file(&path, bytes).await.map_err(failed)?;
            info!(chat = %self.chat, file = candidate, bytes = bytes.len(), "attachment saved");
            return Ok((path, format!("{ATTACHMENTS_FOLDER}/{candidate}")));
        }
        Err(AttachmentRefusal::NoFreeName { name: safe })
    }
}

/// A file name that stays inside its folder: the last path component, without control
/// characters or a leading dot, at most `MAX_NAME_CHARS` long (the extension kept).
pub fn safe_name(name: &str) -> String {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last
        .chars()
        .map(|c| if c.is_control() { '_' } else { c })
        .collect();
    let cleaned = cleaned.trim().trim_start_matches('.');
    if cleaned.is_empty() {
        return "file".into();
    }
    let (stem, extension) = split_extension(cleaned);
    let room = MAX_NAME_CHARS.saturating_sub(extension.chars().count());
    let stem: String = stem.chars().take(room.max(1)).collect();
    format!("{stem}{extension}")
}

/// `name` with `-N` before its extension; `name` itself for 0.
fn numbered(name: &str, suffix: u32) -> String {
    if suffix == 0 {
        return name.to_owned();
    }
    let (stem, extension) = split_extension(name);
    format!("{stem}-{suffix}{extension}")
}

/// The name before its extension, and the extension with its dot ("" without one).
fn split_extension(name: &str) -> (&str, &str) {
    match Path::new(name).extension() {
        Some(extension) if extension.len() < name.len() => {
            name.split_at(name.len() - extension.len() - 1)
        }
        _ => (name, ""),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_stay_inside_the_folder() {
        assert_eq!(safe_name("report.txt"), "report.txt");
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("..\\..\\boot.ini"), "boot.ini");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("a\nb\u{0}.txt"), "a_b_.txt");
        assert_eq!(safe_name("   "), "file");
        let long = format!("{}.tar.gz", "x".repeat(300));
        let kept = safe_name(&long);
        assert_eq!(kept.chars().count(), MAX_NAME_CHARS);
        assert!(kept.ends_with("x.gz"), "{kept}");
    }

    #[test]
    fn taken_names_get_a_number_before_the_extension() {
        assert_eq!(numbered("report.txt", 0), "report.txt");
        assert_eq!(numbered("report.txt", 2), "report-2.txt");
        assert_eq!(numbered("Makefile", 1), "Makefile-1");
    }
}
