//! Discord's per-route rate limits as the fake enforces them: each route (a channel's or
//! guild's own) takes `LIMIT` calls per `WINDOW`; every answer carries the
//! `X-RateLimit-*` headers, and a call over the limit is answered 429 with `Retry-After`
//! and the body Discord sends.

use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

/// Calls a route takes per window (Discord's for sending to a channel).
pub const LIMIT: u32 = 5;
pub const WINDOW: Duration = Duration::from_secs(5);

#[derive(Default)]
pub struct RouteLimits {
    /// Route -> (its window's start, calls in it).
    windows: Mutex<HashMap<String, (Instant, u32)>>,
    /// Calls answered 429 because the caller did not wait.
    refused: AtomicU64,
}

/// What a call may do: go on (with the headers its answer carries) or be refused.
pub enum Verdict {
    Allowed(HeaderMap),
    Refused(Response),
}

impl RouteLimits {
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::SeqCst)
    }

    pub fn check(&self, path: &str) -> Verdict {
        let route = route_of(path);
        let now = Instant::now();
        let mut windows = self.windows.lock().unwrap();
        let (start, used) = windows.entry(route.clone()).or_insert((now, 0));
        if now.duration_since(*start) >= WINDOW {
            (*start, *used) = (now, 0);
        }
        let reset_after = WINDOW.saturating_sub(now.duration_since(*start));
        if *used >= LIMIT {
            self.refused.fetch_add(1, Ordering::SeqCst);
            return Verdict::Refused(too_many(&route, 0, reset_after));
        }
        *used += 1;
        Verdict::Allowed(headers(&route, LIMIT - *used, reset_after))
    }
}

/// A 429 as Discord sends it: `Retry-After` in whole seconds (rounded up), the exact
/// wait in the body.
pub fn too_many(route: &str, remaining: u32, retry_after: Duration) -> Response {
    let mut headers = headers(route, remaining, retry_after);
    let seconds = retry_after.as_secs_f64();
    headers.insert("retry-after", HeaderValue::from(seconds.ceil() as u64));
    headers.insert("x-ratelimit-scope", HeaderValue::from_static("user"));
    let body = json!({"message": "You are being rate limited.", "retry_after": seconds,
        "global": false});
    (StatusCode::TOO_MANY_REQUESTS, headers, axum::Json(body)).into_response()
}

fn headers(route: &str, remaining: u32, reset_after: Duration) -> HeaderMap {
    let reset = SystemTime::now().duration_since(UNIX_EPOCH).unwrap() + reset_after;
    let mut headers = HeaderMap::new();
    // Counts are whole numbers, times are seconds with a fraction, as Discord sends them.
    headers.insert("x-ratelimit-limit", HeaderValue::from(LIMIT));
    headers.insert("x-ratelimit-remaining", HeaderValue::from(remaining));
    headers.insert("x-ratelimit-reset", number(reset.as_secs_f64()));
    headers.insert("x-ratelimit-reset-after", number(reset_after.as_secs_f64()));
    let bucket = format!("{:x}", route.bytes().map(u64::from).sum::<u64>());
    headers.insert(
        "x-ratelimit-bucket",
        HeaderValue::from_str(&bucket).unwrap(),
    );
    headers
}

fn number(value: f64) -> HeaderValue {
    HeaderValue::from_str(&format!("{value:.3}")).unwrap()
}

/// The route a path counts against: a channel's, guild's or webhook's id is part of it
/// (Discord's "major parameter"), any other id is not.
pub fn route_of(path: &str) -> String {
    let mut parts = Vec::new();
    let mut previous = "";
    for part in path.trim_start_matches('/').split('/') {
        let major = matches!(previous, "channels" | "guilds" | "webhooks");
        let id = part.bytes().all(|b| b.is_ascii_digit()) && !part.is_empty();
        parts.push(if id && !major { "{id}" } else { part });
        previous = part;
    }
    parts.join("/")
}
