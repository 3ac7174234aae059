//! One retry policy for the platforms' REST calls: a rate limit waits as long as the
//! platform asks, a passing failure (network, server error) backs off, anything else is
//! final. Every call gets at most `ATTEMPTS` tries; a caller holding a final answer can
//! tell a refusal from an outage that outlasted them and try again later.

use std::fmt::Display;
use std::future::IntoFuture;
use std::time::Duration;

use tracing::warn;

/// Tries of one call.
pub const ATTEMPTS: u32 = 4;

/// How a failed call is to be treated; each platform classifies its own errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Rate limited: try again after this long.
    RetryAfter(Duration),
    /// Likely to pass: try again after a growing pause.
    Transient,
    /// Nothing to do and nothing to report (an edit that changed nothing).
    Harmless,
    /// Will not pass by trying again.
    Final,
}

/// Why a call did not go through (already logged).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unsent {
    /// Refused, or nothing to do: trying again will not help.
    Refused,
    /// A passing failure outlasted every try: the same call may pass later.
    Unreachable,
}

/// The HTTP status rule both platforms share: rate limits and server errors (5xx, from
/// the platform or a proxy in front of it) pass, any other refusal is final.
pub fn by_status(status: u16) -> Failure {
    match status {
        429 | 500..=599 => Failure::Transient,
        _ => Failure::Final,
    }
}

/// The pause before try `attempt + 1` after a passing failure: 1 s, 2 s, 4 s.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500 << attempt)
}

/// Runs `request` until it succeeds or the policy gives up (logged).
pub async fn call<R, E, F>(
    platform: &'static str,
    request: impl Fn() -> F,
    classify: impl Fn(&E) -> Failure,
) -> Result<R, Unsent>
where
    E: Display,
    F: IntoFuture<Output = Result<R, E>>,
{
    for attempt in 1..=ATTEMPTS {
        let error = match request().await {
            Ok(result) => return Ok(result),
            Err(error) => error,
        };
        let wait = match classify(&error) {
            Failure::RetryAfter(wait) => wait,
            Failure::Transient => backoff(attempt),
            Failure::Harmless => return Err(Unsent::Refused),
            Failure::Final => {
                warn!(platform, %error, "request failed");
                return Err(Unsent::Refused);
            }
        };
        if attempt == ATTEMPTS {
            warn!(platform, %error, attempt, "request failed; giving up for now");
            return Err(Unsent::Unreachable);
        }
        warn!(platform, %error, attempt, ?wait, "request failed; retrying");
        tokio::time::sleep(wait).await;
    }
    Err(Unsent::Unreachable)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use tokio::time::Instant;

    use super::*;

    /// A call that fails with `failures` in order, then succeeds; returns the outcome,
    /// the number of tries and the time it took.
    async fn run(failures: &[Failure]) -> (Result<u32, Unsent>, u32, Duration) {
        let tries = AtomicU32::new(0);
        let started = Instant::now();
        let result = call(
            "test",
            || {
                let attempt = tries.fetch_add(1, Ordering::SeqCst) as usize;
                let outcome = match failures.get(attempt) {
                    Some(failure) => Err(*failure),
                    None => Ok(attempt as u32),
                };
                std::future::ready(outcome)
            },
            |failure: &Failure| *failure,
        )
        .await;
        (result, tries.into_inner(), started.elapsed())
    }

    impl Display for Failure {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{self:?}")
        }
    }

    #[tokio::test(start_paused = true)]
    async fn follows_the_policy() {
        let after = |secs| Failure::RetryAfter(Duration::from_secs(secs));
        // Failures, then the outcome, the tries and the milliseconds they took.
        type Case<'a> = (&'a [Failure], Result<u32, Unsent>, u32, u64);
        let cases: &[Case] = &[
            (&[], Ok(0), 1, 0),
            (&[after(3)], Ok(1), 2, 3_000),
            (&[Failure::Transient, after(2)], Ok(2), 3, 3_000),
            (&[Failure::Transient; 3], Ok(3), 4, 7_000),
            (&[Failure::Transient; 4], Err(Unsent::Unreachable), 4, 7_000),
            (&[after(1), Failure::Final], Err(Unsent::Refused), 2, 1_000),
            (&[Failure::Harmless], Err(Unsent::Refused), 1, 0),
        ];
        for (failures, result, tries, millis) in cases {
            let outcome = run(failures).await;
            assert_eq!(
                outcome,
                (*result, *tries, Duration::from_millis(*millis)),
                "{failures:?}"
            );
        }
    }

    #[test]
    fn server_errors_and_rate_limits_pass_other_refusals_are_final() {
        for (status, failure) in [
            (400, Failure::Final),
            (403, Failure::Final),
            (404, Failure::Final),
            (429, Failure::Transient),
            (500, Failure::Transient),
            (502, Failure::Transient),
            (504, Failure::Transient),
            (599, Failure::Transient),
            (600, Failure::Final),
        ] {
            assert_eq!(by_status(status), failure, "HTTP {status}");
        }
    }
}
