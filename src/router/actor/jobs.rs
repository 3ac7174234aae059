//! Scheduled work in the chat: `/every`, `/at`, `/jobs` and `/unschedule`, and a job's
//! run, served like its creator's message with its answer headed by the job.

use tracing::{info, warn};

use super::Actor;
use crate::clock::unix_now;
use crate::router::command::JobTarget;
use crate::router::jobs::JobRun;
use crate::router::replies::Replies;
use crate::router::texts::jobs as said;
use crate::schedule::{self, Rules, Schedule, ScheduleError};
use crate::session::NewJob;
use chat::Inbound;
use codex::TurnStatus;

/// Characters of a job's prompt shown by `/jobs`.
const PROMPT_SHOWN: usize = 80;

/// The job being run, and how its run went once known.
pub(super) struct RunningJob {
    run: JobRun,
    /// What `/jobs` shows as its last result, and whether that is a failure.
    outcome: Option<(String, bool)>,
}

impl Actor {
    pub(super) async fn every(&mut self, replies: &Replies<'_>, argument: &str) {
        if argument.is_empty() {
            return replies.notice(said::usage("every"));
        }
        let rules = self.schedule_rules();
        let parsed = schedule::parse_every(argument, &rules);
        self.add_job(replies, "every", parsed, &rules).await;
    }

    pub(super) async fn at(&mut self, replies: &Replies<'_>, argument: &str) {
        if argument.is_empty() {
            return replies.notice(said::usage("at"));
        }
        let rules = self.schedule_rules();
        let parsed = schedule::parse_at(argument, &rules);
        self.add_job(replies, "at", parsed, &rules).await;
    }

    fn schedule_rules(&self) -> Rules {
        let settings = &self.ctx.settings.schedule;
        Rules {
            now: unix_now(),
            timezone: settings.timezone,
            min_interval: settings.min_interval,
        }
    }

    async fn add_job(
        &mut self,
        replies: &Replies<'_>,
        command: &str,
        parsed: Result<(Schedule, &str), ScheduleError>,
        rules: &Rules,
    ) {
        let parsed = parsed.and_then(|(schedule, prompt)| {
            let next_run = schedule.next_after(rules.now, rules.timezone);
            Ok((schedule, prompt, next_run.ok_or(ScheduleError::Never)?))
        });
        let (schedule, prompt, next_run) = match parsed {
            Ok(parsed) => parsed,
            Err(error) => {
                info!(chat = %self.chat, %error, "schedule refused");
                return replies.notice(said::bad_schedule(command, &error));
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
        let next = next_run_shown(next_run, rules.now, timezone);
        replies.notice(said::scheduled(id, &schedule.describe(timezone), &next));
    }

    pub(super) async fn list_jobs(&mut self, replies: &Replies<'_>) {
        let jobs = match self.ctx.jobs(&self.chat).await {
            Ok(jobs) => jobs,
            Err(error) => return self.report(replies, &error),
        };
        if jobs.is_empty() {
            return replies.notice(said::NONE);
        }
        let timezone = self.ctx.settings.schedule.timezone;
        let now = unix_now();
        let lines: Vec<String> = jobs
            .iter()
            .map(|job| {
                let schedule = Schedule::from_stored(&job.schedule)
                    .map_or_else(|| job.schedule.clone(), |s| s.describe(timezone));
                let last = job.last_run.map(|at| {
                    let result = job.last_result.as_deref().unwrap_or("running");
                    format!("{result} ({})", schedule::local_time(at, timezone))
                });
                let next = next_run_shown(job.next_run, now, timezone);
                let prompt = shortened(&job.prompt);
                said::listed(job.id, &schedule, &next, &prompt, last.as_deref())
            })
            .collect();
        replies.notice(said::listing(timezone.name(), &lines));
    }

    /// Removes one job or all of the chat's: each by its creator or an admin.
    pub(super) async fn unschedule(&mut self, replies: &Replies<'_>, target: JobTarget) {
        let jobs = match self.ctx.jobs(&self.chat).await {
            Ok(jobs) => jobs,
            Err(error) => return self.report(replies, &error),
        };
        let may_remove = |creator: &str| replies.admin || creator == replies.user;
        let chosen: Vec<_> = match target {
            JobTarget::One(id) => match jobs.iter().find(|job| job.id == id) {
                None => return replies.notice(said::no_such_job(id)),
                Some(job) if !may_remove(&job.creator) => return replies.notice(said::NOT_YOURS),
                Some(job) => vec![job],
            },
            JobTarget::All => jobs.iter().filter(|job| may_remove(&job.creator)).collect(),
        };
        let mut removed = 0;
        for job in &chosen {
            match self.ctx.remove_job(job.id).await {
                Ok(true) => removed += 1,
                Ok(false) => {}
                Err(error) => return self.report(replies, &error),
            }
        }
        self.jobs_changed.notify_one();
        info!(chat = %self.chat, removed, "jobs removed");
        let kept = jobs.len() - chosen.len();
        match target {
            JobTarget::One(id) => replies.notice(said::removed(id)),
            JobTarget::All => replies.notice(said::removed_all(removed, kept)),
        }
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

/// `Fri 4 Dec 09:00 (in 2 h)`.
fn next_run_shown(at: i64, now: i64, timezone: chrono_tz::Tz) -> String {
    let wait = schedule::span((at - now).max(0) as u64);
    format!("{} (in {wait})", schedule::local_time(at, timezone))
}

fn shortened(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default();
    match line.char_indices().nth(PROMPT_SHOWN) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None if line.len() < prompt.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}
