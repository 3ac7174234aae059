//! Runs scheduled jobs. One task sleeps until the next job of an attached platform is
//! due (computed, never polled), then hands each due job's prompt to its chat's actor
//! as if its creator had sent it. A job moves to its next run, computed from now,
//! before its run is handed over: a run missed while the gateway was down runs once,
//! and a crash during a run never repeats it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tracing::{error, info, warn};

use super::{Inner, Router};
use crate::clock::unix_now;
use crate::schedule::Schedule;
use crate::session::SessionError;
use chat::ScheduledJob;
use chat::{Inbound, Outbox, Platform};

/// After the store failed to say what is due, it is asked again this soon.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(60);

/// The platforms jobs can run on, and the runner's wake-up.
#[derive(Default)]
pub(super) struct JobRunner {
    platforms: Mutex<HashMap<Platform, Attached>>,
    /// Told when jobs or platforms change, so the next due time is read again.
    wake: Arc<Notify>,
}

/// Where a platform's chats get their answers.
#[derive(Clone)]
struct Attached {
    outbox: Outbox,
    can_approve: bool,
}

/// A job's run, as its chat's actor serves it.
#[derive(Debug, Clone)]
pub(super) struct JobRun {
    pub(super) id: i64,
    /// Its schedule as `/jobs` shows it.
    pub(super) label: String,
}

impl JobRunner {
    fn attached(&self) -> Vec<Platform> {
        self.platforms
            .lock()
            .expect("lock")
            .keys()
            .copied()
            .collect()
    }

    fn outbox_of(&self, platform: Platform) -> Option<Attached> {
        self.platforms.lock().expect("lock").get(&platform).cloned()
    }

    /// The next due time may have changed.
    fn changed(&self) {
        self.wake.notify_one();
    }

    /// Shutting down: no platform takes runs any more; the runner wakes to end.
    pub(super) fn detach_all(&self) {
        self.platforms.lock().expect("lock").clear();
        self.changed();
    }

    /// What an actor tells when its chat's jobs change.
    pub(super) fn waker(&self) -> Arc<Notify> {
        self.wake.clone()
    }
}

impl Router {
    /// The platform's chats get answers through `outbox`: their jobs run from now on.
    /// `can_approve`: whether it shows approval prompts (as its messages say).
    pub fn attach_jobs(&self, platform: Platform, outbox: Outbox, can_approve: bool) {
        let attached = Attached {
            outbox,
            can_approve,
        };
        let jobs = &self.inner.jobs;
        jobs.platforms
            .lock()
            .expect("lock")
            .insert(platform, attached);
        jobs.changed();
    }

    /// Starts the jobs due now; how long until the next one (after those moved on).
    async fn run_due_jobs(&self) -> Result<Option<Duration>, SessionError> {
        let ctx = &self.inner.ctx;
        let now = unix_now();
        let platforms = self.inner.jobs.attached();
        // A job of a platform not (yet) running waits for it to attach.
        let due = ctx.due_jobs(now).await?;
        for job in due
            .into_iter()
            .filter(|j| platforms.contains(&j.chat.platform))
        {
            self.start_job(job, now).await;
        }
        let next = ctx.next_job_after(now).await?;
        Ok(next.map(|at| Duration::from_secs((at - now).max(0) as u64)))
    }

    /// Moves the job to its next run and hands this one to its chat.
    async fn start_job(&self, job: ScheduledJob, now: i64) {
        let ctx = &self.inner.ctx;
        let Some(schedule) = Schedule::from_stored(&job.schedule) else {
            warn!(
                job = job.id,
                schedule = job.schedule,
                "a stored schedule no longer reads; removing the job"
            );
            if let Err(error) = ctx.remove_job(job.id).await {
                error!(job = job.id, %error, "could not remove the job");
            }
            return;
        };
        let timezone = ctx.settings.schedule.timezone;
        let next_run = schedule.next_after(now, timezone);
        if let Err(error) = ctx.job_started(job.id, now, next_run).await {
            // Run only what moved on: a job that cannot be moved would run again and again.
            error!(job = job.id, %error, "could not move the job to its next run; not running it");
            return;
        }
        ctx.metrics.job_runs.inc();
        let Some(attached) = self.inner.jobs.outbox_of(job.chat.platform) else {
            return;
        };
        info!(chat = %job.chat, job = job.id, ?next_run, "scheduled job due");
        let run = JobRun {
            id: job.id,
            label: schedule.describe(timezone),
        };
        let inbound = Inbound {
            chat: job.chat,
            user: job.creator,
            text: job.prompt,
            reply_to: attached.outbox,
            answer_slot: None,
            can_approve: attached.can_approve,
            private: job.private,
            admin: false,
            attachments: Vec::new(),
            ticket: None,
        };
        if !self.dispatch_job(run, inbound) {
            info!(job = job.id, "shutting down: the job runs at its next time");
        }
    }
}

/// Sleeps until the next job is due, runs what is due, and again, until the router is
/// gone or shut down.
pub(super) async fn run_jobs(inner: Weak<Inner>) {
    loop {
        let Some(router) = inner.upgrade().map(|inner| Router { inner }) else {
            return;
        };
        if router.inner.actors.lock().expect("lock").closed {
            return;
        }
        let wait = match router.run_due_jobs().await {
            Ok(wait) => wait,
            Err(error) => {
                error!(%error, "cannot read the scheduled jobs; trying again in a minute");
                Some(RETRY_AFTER_ERROR)
            }
        };
        let wake = router.inner.jobs.wake.clone();
        // Not held while asleep: the router may go meanwhile.
        drop(router);
        match wait {
            Some(wait) => {
                tokio::select! {
                    () = tokio::time::sleep(wait) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}
