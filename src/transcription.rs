//! Voice to text through an OpenAI-compatible `audio/transcriptions` endpoint.

use std::time::Duration;

use serde::Deserialize;

use crate::config::{Secret, TranscriptionConfig};

/// A transcription that takes longer has failed; the chat is told and goes on.
const TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Debug, thiserror::Error)]
pub enum TranscriptionError {
    #[error("cannot set up the HTTP client: {0}")]
    Client(String),
    #[error("the transcription service could not be reached: {0}")]
    Unreachable(String),
    #[error("the transcription service answered {status}: {body}")]
    Refused { status: u16, body: String },
    #[error("the transcription service's answer had no text")]
    NoText,
}

pub struct Transcriber {
    client: reqwest::Client,
    url: String,
    model: String,
    key: Option<Secret>,
}

#[derive(Deserialize)]
struct Transcript {
    text: String,
}

impl Transcriber {
    /// The configured service; `None` when `[transcription] url` is unset.
    pub fn from_config(config: &TranscriptionConfig) -> Result<Option<Self>, TranscriptionError> {
        let Some(url) = config.url.clone() else {
            return Ok(None);
        };
        let client = reqwest::Client::builder()
            .timeout(TIMEOUT)
            .build()
            .map_err(|error| TranscriptionError::Client(error.to_string()))?;
        Ok(Some(Self {
            client,
            url,
            model: config.model.clone(),
            key: config.api_key.clone(),
        }))
    }

    /// The text spoken in the audio file `name`.
    pub async fn transcribe(
        &self,
        name: &str,
        audio: Vec<u8>,
    ) -> Result<String, TranscriptionError> {
        let file = reqwest::multipart::Part::bytes(audio).file_name(name.to_owned());
        let form = reqwest::multipart::Form::new()
            .text("model", self.model.clone())
            .part("file", file);
        let mut request = self.client.post(&self.url).multipart(form);
        if let Some(key) = &self.key {
            request = request.bearer_auth(key.expose());
        }
        // The error's text holds the URL at most, never the key.
        let unreachable =
            |error: reqwest::Error| TranscriptionError::Unreachable(error.to_string());
        let response = request.send().await.map_err(unreachable)?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            let body = body.chars().take(300).collect();
            return Err(TranscriptionError::Refused {
                status: status.as_u16(),
                body,
            });
        }
        let transcript: Transcript = response.json().await.map_err(unreachable)?;
        match transcript.text.trim() {
            "" => Err(TranscriptionError::NoText),
            text => Ok(text.to_owned()),
        }
    }
}
