//! A running turn's two clocks: its silence (`turn_timeout` after Codex's last news)
//! and the optional cap on its whole run (`max_turn_secs`).

use std::pin::Pin;
use std::time::Duration;

use tokio::time::{Instant, Sleep, sleep_until};

use crate::deadline;

/// Which clock ran out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Alarm {
    Silence,
    Cap(Duration),
}

pub(super) struct TurnClock {
    silence_limit: Duration,
    silence: Pin<Box<Sleep>>,
    /// The cap and when it runs out; gone once it has.
    cap: Option<(Duration, Instant)>,
}

impl TurnClock {
    /// Clocks for a turn that started at `started`; its silence counts from now.
    pub(super) fn start(started: Instant, silence_limit: Duration, cap: Option<Duration>) -> Self {
        Self {
            silence_limit,
            silence: Box::pin(sleep_until(Instant::now() + silence_limit)),
            cap: cap.map(|limit| (limit, started + limit)),
        }
    }

    /// Codex was heard from: the silence starts again.
    pub(super) fn heard(&mut self) {
        self.silence_after(self.silence_limit);
    }

    /// The silence now runs out `after` from now (the turn chose another deadline).
    pub(super) fn silence_after(&mut self, after: Duration) {
        self.silence.as_mut().reset(Instant::now() + after);
    }

    /// Waits for a clock to run out; the cap rings once. Cancel-safe: the clocks stay.
    pub(super) async fn alarm(&mut self) -> Alarm {
        let cap = self.cap.map(|(_, at)| at);
        tokio::select! {
            () = &mut self.silence => Alarm::Silence,
            () = deadline::sleep_until(cap) => {
                let (limit, _) = self.cap.take().expect("a cap rang");
                Alarm::Cap(limit)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session;

    /// At the default (30 minutes of silence, no cap): news keeps a turn going for hours;
    /// 30 minutes of silence ends it, not a second sooner.
    #[tokio::test(start_paused = true)]
    async fn at_the_default_only_thirty_minutes_of_silence_end_a_turn() {
        let (settings, _) = session::defaults();
        let limit = settings.turn_timeout;
        assert_eq!(
            (limit, settings.max_turn),
            (Duration::from_secs(1800), None)
        );
        let mut clock = TurnClock::start(Instant::now(), limit, settings.max_turn);
        for _ in 0..10 {
            let quiet = tokio::time::timeout(limit - Duration::from_secs(1), clock.alarm());
            assert!(quiet.await.is_err(), "rang before 30 minutes of silence");
            clock.heard();
        }
        let silent_since = Instant::now();
        assert_eq!(clock.alarm().await, Alarm::Silence);
        assert_eq!(silent_since.elapsed(), limit);
    }

    /// A cap rings once, however busy the turn, then only silence is left.
    #[tokio::test(start_paused = true)]
    async fn a_cap_rings_once_however_busy_the_turn() {
        let (limit, cap) = (Duration::from_secs(1800), Duration::from_secs(3600));
        let started = Instant::now();
        let mut clock = TurnClock::start(started, limit, Some(cap));
        loop {
            let news = tokio::time::timeout(Duration::from_secs(60), clock.alarm());
            match news.await {
                Err(_) => clock.heard(),
                Ok(alarm) => {
                    assert_eq!(alarm, Alarm::Cap(cap));
                    break;
                }
            }
        }
        assert_eq!(started.elapsed(), cap);
        assert_eq!(clock.alarm().await, Alarm::Silence);
    }
}
