//! Refusals to people who may not use the bot, sent off the intake path: at most one per
//! person an hour and a few a second in all, so a flood of strangers never delays the
//! people who are allowed, and never grows memory without bound.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tracing::debug;

/// A person is refused at most once in this long.
const ONCE_PER: Duration = Duration::from_secs(3600);
/// Refusals sent per second, over all strangers.
const PER_SECOND: u32 = 3;
/// Refusals waiting to be sent; more are dropped (the stranger is told another time).
const QUEUED: usize = 64;
/// Strangers remembered; past that the oldest is forgotten.
const REMEMBERED: usize = 10_000;

/// Hands refusals to a paced sender task; ends that task when dropped.
pub struct Refusals<T> {
    queue: mpsc::Sender<T>,
    seen: Mutex<Seen>,
    sender: JoinHandle<()>,
}

impl<T: Send + 'static> Refusals<T> {
    /// Starts the task that sends each queued refusal with `send`.
    pub fn start<F, Fut>(send: F) -> Self
    where
        F: Fn(T) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send,
    {
        let (queue, mut queued) = mpsc::channel(QUEUED);
        let sender = tokio::spawn(async move {
            let pause = Duration::from_secs(1) / PER_SECOND;
            while let Some(refusal) = queued.recv().await {
                let next = Instant::now() + pause;
                send(refusal).await;
                tokio::time::sleep_until(next).await;
            }
        });
        Self {
            queue,
            seen: Mutex::new(Seen::default()),
            sender,
        }
    }

    /// Queues a refusal for `person`, unless they had one within the hour or the queue is
    /// full. Never waits.
    pub fn offer(&self, person: u64, refusal: T) -> bool {
        let now = Instant::now();
        let mut seen = self.seen.lock().expect("lock");
        if seen.refused_recently(person, now) {
            debug!(person, "already refused within the hour");
            return false;
        }
        let queued = self.queue.try_send(refusal).is_ok();
        if queued {
            seen.remember(person, now);
        }
        queued
    }
}

impl<T> Drop for Refusals<T> {
    fn drop(&mut self) {
        self.sender.abort();
    }
}

/// When each stranger was last refused, oldest first; bounded.
#[derive(Default)]
struct Seen {
    last: HashMap<u64, Instant>,
    order: VecDeque<(u64, Instant)>,
}

impl Seen {
    fn refused_recently(&mut self, person: u64, now: Instant) -> bool {
        while let Some(&(oldest, at)) = self.order.front() {
            if now.duration_since(at) < ONCE_PER && self.order.len() < REMEMBERED {
                break;
            }
            self.order.pop_front();
            if self.last.get(&oldest) == Some(&at) {
                self.last.remove(&oldest);
            }
        }
        self.last.contains_key(&person)
    }

    fn remember(&mut self, person: u64, now: Instant) {
        self.last.insert(person, now);
        self.order.push_back((person, now));
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn once_an_hour_each_and_a_few_a_second_in_all() {
        let sent = Arc::new(Mutex::new(Vec::new()));
        let log = sent.clone();
        let refusals = Refusals::start(move |person: u64| {
            log.lock().unwrap().push((person, Instant::now()));
            std::future::ready(())
        });
        let started = Instant::now();
        let offered: Vec<bool> = (0..10).map(|p| refusals.offer(p, p)).collect();
        assert!(offered.iter().all(|queued| *queued));
        assert!(!refusals.offer(3, 3), "a second refusal within the hour");
        tokio::time::sleep(Duration::from_secs(5)).await;
        let sent_times: Vec<Duration> = sent
            .lock()
            .unwrap()
            .iter()
            .map(|(_, at)| *at - started)
            .collect();
        assert_eq!(sent_times.len(), 10);
        let per_second = sent_times
            .iter()
            .filter(|t| **t < Duration::from_secs(1))
            .count();
        assert_eq!(per_second, PER_SECOND as usize);
        tokio::time::sleep(ONCE_PER).await;
        assert!(refusals.offer(3, 3), "refused again after an hour");
    }

    #[tokio::test(start_paused = true)]
    async fn memory_and_queue_stay_bounded() {
        let refusals = Refusals::start(|_: u64| std::future::pending::<()>());
        let queued = (0..1000).filter(|p| refusals.offer(*p, *p)).count();
        // One is being sent (pending for ever), the queue holds the next ones.
        assert!(queued <= QUEUED + 1, "{queued} queued");
        let mut seen = Seen::default();
        let now = Instant::now();
        for person in 0..(REMEMBERED as u64 * 2) {
            seen.refused_recently(person, now);
            seen.remember(person, now);
        }
        assert!(seen.last.len() <= REMEMBERED && seen.order.len() <= REMEMBERED + 1);
    }
}
