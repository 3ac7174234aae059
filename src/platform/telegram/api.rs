//! The Bot API calls that deliver answers: teloxide's payload types, sent and read here so
//! that a failure keeps its HTTP status. teloxide reports a 502 with Telegram's JSON body
//! as an unknown API error and one with a proxy's HTML page as bad JSON, and only the
//! status tells a passing outage from a refusal.

use reqwest::multipart::Form;
use serde::Serialize;
use serde::de::DeserializeOwned;
use teloxide::prelude::Bot;
use teloxide::requests::Payload;

use crate::platform::retry::{self, Failure};

/// Delivery's Bot API calls, over the bot's own HTTP client and URL.
#[derive(Clone)]
pub(super) struct BotApi {
    client: reqwest::Client,
    /// `<api_url>/bot<token>`: holds the token, so it is never logged.
    base: reqwest::Url,
}

/// One getUpdates long poll. Written here, not with teloxide's payload, whose list of
/// update kinds lacks the newer ones the gateway asks for.
#[derive(Serialize)]
pub(super) struct Poll {
    pub(super) offset: i64,
    pub(super) timeout: u32,
    pub(super) allowed_updates: &'static [&'static str],
}

/// A failed call, as delivery classifies it.
#[derive(Debug, thiserror::Error)]
pub(super) enum CallError {
    /// No answer came (the error leaves out the URL, which holds the token).
    #[error("network error: {0}")]
    Network(reqwest::Error),
    /// Telegram, or a proxy in front of it, answered with an error.
    #[error("HTTP {status}: {description}")]
    Refused {
        status: u16,
        description: String,
        retry_after: Option<u32>,
    },
    /// A success whose body could not be read: the call went through, so it is not repeated.
    #[error("unreadable answer (HTTP {status}): {detail}")]
    Unreadable { status: u16, detail: String },
}

/// The Bot API's envelope; the result is read separately, so a result that does not fit
/// still counts as a success.
#[derive(serde::Deserialize)]
struct Envelope {
    ok: bool,
    result: Option<serde_json::Value>,
    description: Option<String>,
    parameters: Option<Parameters>,
}

#[derive(serde::Deserialize)]
struct Parameters {
    retry_after: Option<u32>,
}

/// Longest piece of an unexpected body kept for the log.
const BODY_SNIPPET: usize = 200;

impl BotApi {
    pub(super) fn of(bot: &Bot) -> Self {
        let mut base = bot.api_url();
        base.path_segments_mut()
            .expect("the API URL was parsed as http(s)")
            .pop_if_empty()
            .push(&format!("bot{}", bot.token()));
        Self {
            client: bot.client().clone(),
            base,
        }
    }

    /// Calls `P`'s method with `payload` as JSON.
    pub(super) async fn json<P, R>(&self, payload: &P) -> Result<R, CallError>
    where
        P: Payload + Serialize,
        R: DeserializeOwned,
    {
        self.method(P::NAME, payload).await
    }

    /// Calls `method` with `body` as JSON (for methods teloxide does not have).
    pub(super) async fn method<R: DeserializeOwned>(
        &self,
        method: &str,
        body: &impl Serialize,
    ) -> Result<R, CallError> {
        answer(self.client.post(self.url(method)).json(body)).await
    }

    /// One getUpdates long poll: each update of the batch as the JSON text Telegram sent,
    /// read one by one by the caller. A lone UTF-16 surrogate, which serde_json refuses in
    /// a string, is replaced first, so it cannot fail the whole batch.
    pub(super) async fn get_updates(&self, poll: &Poll) -> Result<Vec<String>, CallError> {
        #[derive(serde::Deserialize)]
        struct RawBatch<'a> {
            ok: bool,
            #[serde(borrow)]
            result: Option<Vec<&'a serde_json::value::RawValue>>,
        }
        let request = self.client.post(self.url("getUpdates")).json(poll);
        let network = |error: reqwest::Error| CallError::Network(error.without_url());
        let response = request.send().await.map_err(network)?;
        let status = response.status().as_u16();
        let body = response.bytes().await.map_err(network)?;
        let text = String::from_utf8_lossy(&body);
        let text = super::updates::repair_lone_surrogates(&text);
        match serde_json::from_str::<RawBatch>(&text) {
            Ok(RawBatch {
                ok: true,
                result: Some(updates),
            }) if (200..300).contains(&status) => Ok(updates
                .iter()
                .map(|update| update.get().to_owned())
                .collect()),
            _ => Err(read::<serde::de::IgnoredAny>(status, text.as_bytes())
                .err()
                .unwrap_or_else(|| CallError::Unreadable {
                    status,
                    detail: snippet(text.as_bytes()),
                })),
        }
    }

    /// Calls `method` with a multipart form (a file upload).
    pub(super) async fn multipart<R: DeserializeOwned>(
        &self,
        method: &str,
        form: Form,
    ) -> Result<R, CallError> {
        answer(self.client.post(self.url(method)).multipart(form)).await
    }

    fn url(&self, method: &str) -> reqwest::Url {
        let mut url = self.base.clone();
        url.path_segments_mut()
            .expect("the API URL was parsed as http(s)")
            .push(method);
        url
    }
}

async fn answer<R: DeserializeOwned>(request: reqwest::RequestBuilder) -> Result<R, CallError> {
    let network = |error: reqwest::Error| CallError::Network(error.without_url());
    let response = request.send().await.map_err(network)?;
    let status = response.status().as_u16();
    let body = response.bytes().await.map_err(network)?;
    read(status, &body)
}

/// A Bot API answer: its result, or the error with the status it came with.
fn read<R: DeserializeOwned>(status: u16, body: &[u8]) -> Result<R, CallError> {
    let success = (200..300).contains(&status);
    match serde_json::from_slice::<Envelope>(body) {
        Ok(Envelope {
            ok: true,
            result: Some(result),
            ..
        }) if success => serde_json::from_value(result).map_err(|error| CallError::Unreadable {
            status,
            detail: error.to_string(),
        }),
        Ok(Envelope {
            ok: false,
            description,
            parameters,
            ..
        }) => Err(CallError::Refused {
            status,
            description: description.unwrap_or_default(),
            retry_after: parameters.and_then(|p| p.retry_after),
        }),
        _ if success => Err(CallError::Unreadable {
            status,
            detail: snippet(body),
        }),
        _ => Err(CallError::Refused {
            status,
            description: snippet(body),
            retry_after: None,
        }),
    }
}

/// The start of a body that is not the Bot API's, on one line.
fn snippet(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(BODY_SNIPPET) {
        Some((cut, _)) => format!("{} …", &line[..cut]),
        None => line,
    }
}

/// Telegram's failures under the shared retry policy: a 429 waits as told, network and
/// server errors pass, an edit that changed nothing is no failure, the rest is final.
pub(super) fn classify(error: &CallError) -> Failure {
    match error {
        CallError::Network(_) => Failure::Transient,
        CallError::Refused {
            retry_after: Some(seconds),
            ..
        } => Failure::RetryAfter(std::time::Duration::from_secs((*seconds).into())),
        CallError::Refused { description, .. }
            if description.contains("message is not modified") =>
        {
            Failure::Harmless
        }
        CallError::Refused { status, .. } => retry::by_status(*status),
        CallError::Unreadable { .. } => Failure::Final,
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde::de::IgnoredAny;

    use super::*;

    fn failure(status: u16, body: &str) -> Failure {
        let error = read::<IgnoredAny>(status, body.as_bytes()).expect_err(body);
        classify(&error)
    }

    #[test]
    fn server_errors_pass_whatever_their_body() {
        let json =
            |code| format!(r#"{{"ok":false,"error_code":{code},"description":"Bad Gateway"}}"#);
        let html =
            "<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>nginx</body></html>";
        for status in [500, 502, 504] {
            assert_eq!(failure(status, &json(status)), Failure::Transient);
            assert_eq!(failure(status, html), Failure::Transient);
            assert_eq!(failure(status, ""), Failure::Transient);
        }
    }

    #[test]
    fn refusals_are_final_and_rate_limits_wait_as_told() {
        let bad = r#"{"ok":false,"error_code":400,"description":"Bad Request: chat not found"}"#;
        assert_eq!(failure(400, bad), Failure::Final);
        let blocked = r#"{"ok":false,"error_code":403,"description":"Forbidden: bot was blocked by the user"}"#;
        assert_eq!(failure(403, blocked), Failure::Final);
        let limited = r#"{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 7","parameters":{"retry_after":7}}"#;
        assert_eq!(
            failure(429, limited),
            Failure::RetryAfter(Duration::from_secs(7))
        );
        let same = r#"{"ok":false,"error_code":400,"description":"Bad Request: message is not modified: specified new message content and reply markup are exactly the same"}"#;
        assert_eq!(failure(400, same), Failure::Harmless);
    }

    #[test]
    fn a_success_is_read_and_an_unreadable_one_is_not_repeated() {
        #[derive(Debug, serde::Deserialize)]
        struct Sent {
            message_id: i32,
        }
        let sent: Sent = read(200, br#"{"ok":true,"result":{"message_id":77,"date":1}}"#).unwrap();
        assert_eq!(sent.message_id, 77);
        let odd = read::<Sent>(200, br#"{"ok":true,"result":true}"#).expect_err("not a message");
        assert!(matches!(odd, CallError::Unreadable { status: 200, .. }));
        assert_eq!(classify(&odd), Failure::Final);
    }

    #[test]
    fn a_long_page_is_cut_to_one_line() {
        let page = format!("<html>\n{}\n</html>", "x".repeat(1000));
        let CallError::Refused { description, .. } =
            read::<IgnoredAny>(502, page.as_bytes()).unwrap_err()
        else {
            panic!("a refusal");
        };
        assert!(!description.contains('\n'));
        assert!(
            description.chars().count() <= BODY_SNIPPET + 2,
            "{description}"
        );
    }
}
