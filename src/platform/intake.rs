//! Keeping a platform's intake running: when it ends on its own (not stopped), it starts
//! again after a back-off, and health shows it down meanwhile.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tracing::{info, warn};

/// An intake that ran this long before ending starts its back-off from the beginning.
const STEADY: Duration = Duration::from_secs(60);
const MAX_BACKOFF: Duration = Duration::from_secs(60);

/// One platform's intake as `/healthz` sees it: up, or why not.
#[derive(Clone, Default)]
pub struct IntakeState(Arc<Mutex<Option<&'static str>>>);

impl IntakeState {
    /// The intake takes messages (again).
    pub fn up(&self) {
        *self.0.lock().expect("lock") = None;
    }

    /// The intake takes no messages now, for `why`.
    pub fn down(&self, why: &'static str) {
        *self.0.lock().expect("lock") = Some(why);
    }

    fn why_down(&self) -> Option<&'static str> {
        *self.0.lock().expect("lock")
    }
}

/// Whether each platform's intake is up; `/healthz` reads it.
#[derive(Clone, Default)]
pub struct IntakeHealth(Arc<Mutex<Vec<(&'static str, IntakeState)>>>);

impl IntakeHealth {
    /// `platform`'s intake, up until it says otherwise.
    pub fn register(&self, platform: &'static str) -> IntakeState {
        let state = IntakeState::default();
        self.0.lock().expect("lock").push((platform, state.clone()));
        state
    }

    /// The platforms whose intake is down now, each with why ("telegram intake stopped").
    pub fn down(&self) -> Vec<String> {
        let intakes = self.0.lock().expect("lock");
        let down = intakes.iter().filter_map(|(platform, state)| {
            let why = state.why_down()?;
            Some(format!("{platform} {why}"))
        });
        down.collect()
    }
}

/// Why a stopped intake is down until it starts again.
const RESTARTING: &str = "intake stopped; restarting it";

/// Runs `intake` (one attempt per call, given the stop signal) until `stopped` is raised;
/// an attempt that ends by itself is followed by another after a growing pause.
pub async fn keep_running<F, Fut>(
    platform: &'static str,
    state: IntakeState,
    stopped: watch::Receiver<bool>,
    mut intake: F,
) where
    F: FnMut(watch::Receiver<bool>, IntakeState) -> Fut,
    Fut: Future<Output = ()>,
{
    let mut failures = 0u32;
    loop {
        let started = Instant::now();
        intake(stopped.clone(), state.clone()).await;
        if *stopped.borrow() {
            return;
        }
        state.down(RESTARTING);
        failures = if started.elapsed() >= STEADY {
            1
        } else {
            failures + 1
        };
        let wait = backoff(failures);
        warn!(platform, ?wait, "the intake ended; starting it again");
        let mut stop = stopped.clone();
        tokio::select! {
            () = tokio::time::sleep(wait) => {}
            _ = stop.wait_for(|stop| *stop) => return,
        }
        info!(platform, "starting the intake again");
        state.up();
    }
}

/// 1 s after the first failure, doubling, at most a minute.
fn backoff(failures: u32) -> Duration {
    let wait =
        Duration::from_secs(1).saturating_mul(2u32.saturating_pow(failures.saturating_sub(1)));
    wait.min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::Ordering;

    use super::*;

    #[test]
    fn backoff_doubles_up_to_a_minute() {
        let waits: Vec<u64> = (1..=8).map(|f| backoff(f).as_secs()).collect();
        assert_eq!(waits, [1, 2, 4, 8, 16, 32, 60, 60]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_intake_that_ends_is_started_again_and_health_shows_it() {
        let health = IntakeHealth::default();
        let (stop, stopped) = watch::channel(false);
        let runs = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let counted = runs.clone();
        let task = tokio::spawn(keep_running(
            "test",
            health.register("test"),
            stopped,
            move |_, _| {
                counted.fetch_add(1, Ordering::SeqCst);
                std::future::ready(())
            },
        ));
        tokio::time::sleep(Duration::from_millis(500)).await;
        let down = ["test intake stopped; restarting it"];
        assert_eq!(health.down(), down, "down during the back-off");
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert_eq!(runs.load(Ordering::SeqCst), 3, "runs at 0, 1 s and 3 s");
        stop.send(true).unwrap();
        task.await.unwrap();
    }
}
