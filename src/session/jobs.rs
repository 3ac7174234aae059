//! Scheduled jobs, as the router reads and writes them: the store's rows behind the
//! session, with the configured limit applied.

use super::{Context, SessionError};
use chat::{ChatKey, NewJob, ScheduledJob};

impl Context {
    /// Stores a job; `None` when the chat has `max_jobs_per_chat` already.
    pub async fn add_job(&self, job: &NewJob<'_>) -> Result<Option<i64>, SessionError> {
        let max = self.settings.schedule.max_jobs_per_chat;
        Ok(self.store.add_job(job, max).await?)
    }

    pub async fn jobs(&self, chat: &ChatKey) -> Result<Vec<ScheduledJob>, SessionError> {
        Ok(self.store.jobs(chat).await?)
    }

    /// The jobs due at `at` (unix seconds).
    pub async fn due_jobs(&self, at: i64) -> Result<Vec<ScheduledJob>, SessionError> {
        Ok(self.store.due_jobs(at).await?)
    }

    /// When the first job due after `at` is due.
    pub async fn next_job_after(&self, at: i64) -> Result<Option<i64>, SessionError> {
        Ok(self.store.next_job_after(at).await?)
    }

    /// A run begins: counted, and the job moves to `next_run` (`None`: it is gone).
    pub async fn job_started(
        &self,
        id: i64,
        at: i64,
        next_run: Option<i64>,
    ) -> Result<(), SessionError> {
        Ok(self.store.job_started(id, at, next_run).await?)
    }

    pub async fn job_result(&self, id: i64, result: &str) -> Result<(), SessionError> {
        Ok(self.store.job_result(id, result).await?)
    }

    pub async fn remove_job(&self, id: i64) -> Result<bool, SessionError> {
        Ok(self.store.remove_job(id).await?)
    }

    pub async fn job_count(&self) -> Result<i64, SessionError> {
        Ok(self.store.job_count().await?)
    }
}
