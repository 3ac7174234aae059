//! Log output with the gateway's secrets replaced by `<redacted>`, whatever carries them:
//! a URL in an HTTP error (the Bot API puts the token in every URL, under any `api_url`),
//! or a dependency's debug line. Every formatted log line passes through here.

use std::borrow::Cow;
use std::io::Write;
use std::sync::{Arc, RwLock};

use tracing_subscriber::fmt::MakeWriter;

/// Shorter values are not treated as secrets: replacing them would garble the log.
const MIN_SECRET_LEN: usize = 6;
const REDACTED: &str = "<redacted>";

/// The secrets to hide, shared by every writer it makes; clones share them.
#[derive(Clone, Default)]
pub struct Redactor {
    secrets: Arc<RwLock<Vec<String>>>,
}

impl Redactor {
    /// Hides `secret` from now on, as written and as percent-encoded in a URL.
    pub fn add(&self, secret: &str) {
        if secret.len() < MIN_SECRET_LEN {
            return;
        }
        let encoded = url::form_urlencoded::byte_serialize(secret.as_bytes()).collect::<String>();
        let mut secrets = self.secrets.write().expect("lock");
        for form in [secret.to_owned(), encoded, secret.replace(':', "%3A")] {
            if !secrets.contains(&form) {
                secrets.push(form);
            }
        }
        // Longest first, so no shorter form leaves part of a longer one behind.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    }

    pub fn redact<'a>(&self, text: &'a str) -> Cow<'a, str> {
        let secrets = self.secrets.read().expect("lock");
        let mut text = Cow::Borrowed(text);
        for secret in secrets.iter() {
            if text.contains(secret.as_str()) {
                text = Cow::Owned(text.replace(secret.as_str(), REDACTED));
            }
        }
        text
    }
}

/// One log event's bytes, written to stderr redacted when the event is complete.
pub struct RedactingWriter {
    redactor: Redactor,
    line: Vec<u8>,
}

impl<'a> MakeWriter<'a> for Redactor {
    type Writer = RedactingWriter;

    fn make_writer(&'a self) -> RedactingWriter {
        RedactingWriter {
            redactor: self.clone(),
            line: Vec::new(),
        }
    }
}

impl Write for RedactingWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.line.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for RedactingWriter {
    fn drop(&mut self) {
        let line = String::from_utf8_lossy(&self.line);
        let _ = std::io::stderr().write_all(self.redactor.redact(&line).as_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_a_secret_is_hidden() {
        let redactor = Redactor::default();
        redactor.add("123456:AAH-secret_x");
        redactor.add("abc"); // too short to be a secret
        let line = "GET http://h/p/bot123456:AAH-secret_x/getMe and 123456%3AAAH-secret_x, abc";
        assert_eq!(
            redactor.redact(line),
            "GET http://h/p/bot<redacted>/getMe and <redacted>, abc"
        );
        assert!(matches!(redactor.redact("clean"), Cow::Borrowed(_)));
    }
}
