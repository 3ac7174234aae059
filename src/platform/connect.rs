//! Asking a platform's API who the bot is, until it answers. At boot the network may not
//! be up yet (a server that starts before its link) or the API may be down: that is
//! retried with a growing pause, health saying why, while the other platform serves. A
//! refused token is the config's fault and says so.

use std::time::Duration;

use tokio::sync::watch;
use tracing::{error, info, warn};

use super::intake::IntakeState;

/// Who the platform says the bot is.
#[derive(Debug, Clone)]
pub struct BotIdentity {
    pub name: String,
    pub id: u64,
}

/// Why the platform did not say who the bot is.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unknown {
    /// The API answered that the token is not a bot's (401, or Telegram's 404).
    #[error("the token was refused ({0})")]
    TokenRefused(String),
    /// No answer, or one that says nothing about the token (5xx, 429, a proxy's page).
    #[error("the API cannot be reached ({0})")]
    Unreachable(String),
}

const FIRST_WAIT: Duration = Duration::from_secs(1);
const LONGEST_WAIT: Duration = Duration::from_secs(60);

/// Asks `who_am_i` until it answers, pausing 1 s, then twice as long each time, at most a
/// minute. `None` once `stopped` is raised first.
pub async fn identify<F, Fut>(
    platform: &'static str,
    state: &IntakeState,
    mut stopped: watch::Receiver<bool>,
    mut who_am_i: F,
) -> Option<BotIdentity>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<BotIdentity, Unknown>>,
{
    let mut wait = FIRST_WAIT;
    loop {
        match who_am_i().await {
            Ok(identity) => {
                info!(platform, "the API answers again");
                state.up();
                return Some(identity);
            }
            Err(Unknown::TokenRefused(why)) => {
                error!(platform, %why, ?wait, "the token was refused; asking again later");
                state.down("token refused by its API");
            }
            Err(Unknown::Unreachable(why)) => {
                warn!(platform, %why, ?wait, "the API cannot be reached; trying again");
                state.down("API unreachable");
            }
        }
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stopped.wait_for(|stop| *stop) => return None,
        }
        wait = (wait * 2).min(LONGEST_WAIT);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::platform::intake::IntakeHealth;

    #[tokio::test(start_paused = true)]
    async fn an_unreachable_api_is_asked_again_with_growing_pauses() {
        let health = IntakeHealth::default();
        let state = health.register("test");
        let (_stop, stopped) = watch::channel(false);
        let asked = Arc::new(AtomicU32::new(0));
        let counted = asked.clone();
        let started = tokio::time::Instant::now();
        let task = tokio::spawn(async move {
            identify("test", &state, stopped, || {
                let attempt = counted.fetch_add(1, Ordering::SeqCst);
                async move {
                    match attempt {
                        0..3 => Err(Unknown::Unreachable("connection refused".into())),
                        _ => Ok(BotIdentity {
                            name: "bot".into(),
                            id: 7,
                        }),
                    }
                }
            })
            .await
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(health.down(), ["test API unreachable"]);
        let identity = task.await.unwrap().expect("identified");
        assert_eq!((identity.id, asked.load(Ordering::SeqCst)), (7, 4));
        assert_eq!(
            started.elapsed().as_secs(),
            1 + 2 + 4,
            "paused 1, 2 and 4 s"
        );
        assert!(health.down().is_empty(), "up once it answers");
    }

    #[tokio::test(start_paused = true)]
    async fn a_stop_ends_the_asking() {
        let health = IntakeHealth::default();
        let state = health.register("test");
        let (stop, stopped) = watch::channel(false);
        let task = tokio::spawn(async move {
            identify("test", &state, stopped, || async {
                Err(Unknown::TokenRefused("401 Unauthorized".into()))
            })
            .await
        });
        tokio::time::sleep(Duration::from_secs(10)).await;
        assert_eq!(health.down(), ["test token refused by its API"]);
        stop.send(true).unwrap();
        assert!(task.await.unwrap().is_none());
    }
}
