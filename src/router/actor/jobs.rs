//! Scheduled work in the chat: what `/every` and `/at` share (reading a schedule, storing
//! the job), and a job's run, served like its creator's message with its answer headed by
//! the job.

use tracing::{info, warn};

use super::Actor;
use crate::clock::unix_now;
use crate::router::jobs::JobRun;
use crate::router::replies::Replies;
use crate::router::texts::jobs as said;
use crate::schedule::{Rules, Schedule, ScheduleError};
use chat::Inbound;
use chat::NewJob;
use codex::TurnStatus;

/// The job being run, and how its run went once known.
pub(super) struct RunningJob {
    run: JobRun,
    /// What `/jobs` shows as its last result, and whether that is a failure.
    outcome: Option<(String, bool)>,
}

impl Actor {
    /// How `/every` and `/at` read a schedule now, in the chat's zone.
    pub(crate) fn schedule_rules(&self) -> Rules {
        let settings = &self.ctx.settings.schedule;
        Rules {
            now: unix_now(),
            timezone: settings.timezone,
            min_interval: settings.min_interval,
        }
    }

    /// Stores a job `/every` or `/at` read (its schedule, or why it was refused: told
    /// with `example`), and tells the job runner.
    pub(crate) async fn add_job(
        &mut self,
        replies: &Replies<'_>,
        parsed: Result<(Schedule, &str), ScheduleError>,
        rules: &Rules,
        example: &str,
    ) {
        let parsed = parsed.and_then(|(schedule, prompt)| {
            let next_run = schedule.next_after(rules.now, rules.timezone);
            Ok((schedule, prompt, next_run.ok_or(ScheduleError::Never)?))
        });
        let (schedule, prompt, next_run) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                info!(chat = %self.chat, %error, "schedule refused");
                return replies.notice(said::bad_schedule(&error, example));
            }
        };
        let stored = schedule.stored();
        let job = NewJob {
            chat: &self.chat,
            creator: replies.user,
            private: replies.private,
            schedule: &stored,
            prompt,
            next_run,
        };
        let id = match self.ctx.add_job(&job).await {
            Ok(Some(id)) => id,
            Ok(None) => {
                let max = self.ctx.settings.schedule.max_jobs_per_chat;
                return replies.notice(said::too_many(max));
            }
            Err(error) => return self.report(replies, &error),
        };
        self.jobs_changed.notify_one();
        info!(chat = %self.chat, job = id, schedule = stored, next_run, "job scheduled");
        let timezone = rules.timezone;
        let next = said::next_run_shown(next_run, rules.now, timezone);
        replies.notice(said::scheduled(id, &schedule.describe(timezone), &next));
    }

    /// A job's run: its prompt served as its creator's message, the answer headed by the
    /// job; then how it went, for `/jobs`.
    pub(super) async fn run_job(&mut self, run: JobRun, inbound: Inbound) {
        let id = run.id;
        info!(chat = %self.chat, job = id, "scheduled job runs");
        self.job = Some(RunningJob { run, outcome: None });
        self.serve(inbound, None).await;
        let outcome = self.job.take().and_then(|job| job.outcome);
        let (result, failed) = outcome.unwrap_or_else(|| (said::RESULT_NOT_RUN.into(), true));
        if failed {
            self.ctx.metrics.job_failures.inc();
        }
        if let Err(error) = self.ctx.job_result(id, &result).await {
            warn!(chat = %self.chat, job = id, %error, "could not record the job's result");
        }
    }

    /// The job this turn runs for, if any: its notices are headed by it.
    pub(super) fn job_id(&self) -> Option<i64> {
        self.job.as_ref().map(|job| job.run.id)
    }

    /// A run's answer headed by its job; any other answer as it is.
    pub(super) fn headed_answer(&self, answer: String) -> String {
        match &self.job {
            Some(job) => said::answer(job.run.id, &job.run.label, &answer),
            None => answer,
        }
    }

    /// How the running job's turn ended (nothing when no job runs).
    pub(super) fn job_turn_ended(
        &mut self,
        status: TurnStatus,
        error: Option<&str>,
        answered: bool,
    ) {
        let outcome = match status {
            TurnStatus::Failed => {
                let why = error.unwrap_or("Codex gave no reason");
                (said::result_failed(why), true)
            }
            TurnStatus::Interrupted => (said::RESULT_STOPPED.into(), false),
            _ if answered => (said::RESULT_OK.into(), false),
            _ => (said::RESULT_NO_REPLY.into(), false),
        };
        self.job_outcome(outcome);
    }

    /// Records how the running job's run went (nothing when no job runs).
    pub(super) fn job_outcome(&mut self, outcome: (String, bool)) {
        if let Some(job) = &mut self.job {
            job.outcome = Some(outcome);
        }
    }

    /// A job's run waits in the queue already: one run of it at a time is enough.
    pub(super) fn job_queued(&self, id: i64) -> bool {
        self.queue
            .iter()
            .any(|message| matches!(message, super::ActorMsg::Job { job, .. } if job.id == id))
    }
}
