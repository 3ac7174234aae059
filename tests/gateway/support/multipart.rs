//! Reads `multipart/form-data` bodies, as the Bot API and Discord take file uploads.

use axum::http::HeaderMap;

/// One part of a form: its field name, its file name if it is a file, and its bytes.
#[derive(Debug, Clone)]
pub struct Part {
    pub name: String,
    pub file_name: Option<String>,
    pub data: Vec<u8>,
}

/// The parts of a multipart body, or `None` if the request is not multipart.
pub fn parts(headers: &HeaderMap, body: &[u8]) -> Option<Vec<Part>> {
    let content_type = headers.get("content-type")?.to_str().ok()?;
    let boundary = content_type
        .strip_prefix("multipart/form-data")?
        .split(';')
        .find_map(|param| param.trim().strip_prefix("boundary="))?
        .trim_matches('"');
    let delimiter = format!("--{boundary}").into_bytes();
    let mut parts = Vec::new();
    for chunk in split(body, &delimiter).into_iter().skip(1) {
        if chunk.starts_with(b"--") {
            break; // the closing delimiter
        }
        let chunk = chunk.strip_prefix(b"\r\n").unwrap_or(chunk);
        let chunk = chunk.strip_suffix(b"\r\n").unwrap_or(chunk);
        let head_end = find(chunk, b"\r\n\r\n")?;
        let head = String::from_utf8_lossy(&chunk[..head_end]);
        let disposition = head
            .lines()
            .find(|line| line.to_ascii_lowercase().starts_with("content-disposition"))?;
        parts.push(Part {
            name: quoted(disposition, "name=")?,
            file_name: quoted(disposition, "filename="),
            data: chunk[head_end + 4..].to_vec(),
        });
    }
    Some(parts)
}

/// The quoted value after `key` in a header line (`name="x"`), not matching a longer key.
fn quoted(line: &str, key: &str) -> Option<String> {
    line.split(';').find_map(|param| {
        let value = param.trim().strip_prefix(key)?;
        Some(value.trim_matches('"').to_owned())
    })
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn split<'a>(mut body: &'a [u8], delimiter: &[u8]) -> Vec<&'a [u8]> {
    let mut pieces = Vec::new();
    while let Some(at) = find(body, delimiter) {
        pieces.push(&body[..at]);
        body = &body[at + delimiter.len()..];
    }
    pieces.push(body);
    pieces
}
