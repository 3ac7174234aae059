//! Scheduled jobs: what runs in which chat, when next, and how the last run went.

use super::{Store, StoreError, now};
use chat::Named;

use super::stored;
use chat::{ChatKey, NewJob, Platform, ScheduledJob};

#[derive(sqlx::FromRow)]
struct JobRow {
    id: i64,
    platform: String,
    chat: String,
    topic: Option<String>,
    creator: String,
    private: bool,
    schedule: String,
    prompt: String,
    next_run: i64,
    runs: i64,
    last_run: Option<i64>,
    last_result: Option<String>,
}

/// `SELECT` of a job's columns, then `$rest`.
macro_rules! select_jobs {
    ($rest:literal) => {
        concat!(
            "SELECT id, platform, chat, topic, creator, private, schedule, prompt, next_run,
                    runs, last_run, last_result FROM jobs ",
            $rest
        )
    };
}

impl JobRow {
    fn job(self) -> Result<ScheduledJob, StoreError> {
        let platform = stored::read::<Platform>(&self.platform)?;
        let mut chat = ChatKey::new(platform, self.chat);
        chat.topic = self.topic;
        Ok(ScheduledJob {
            id: self.id,
            chat,
            creator: self.creator,
            private: self.private,
            schedule: self.schedule,
            prompt: self.prompt,
            next_run: self.next_run,
            runs: self.runs,
            last_run: self.last_run,
            last_result: self.last_result,
        })
    }
}

fn jobs_of(rows: Vec<JobRow>) -> Result<Vec<ScheduledJob>, StoreError> {
    rows.into_iter().map(JobRow::job).collect()
}

impl Store {
    /// Stores a job unless its chat already has `max_per_chat`; its id, or `None`.
    pub async fn add_job(
        &self,
        job: &NewJob<'_>,
        max_per_chat: usize,
    ) -> Result<Option<i64>, StoreError> {
        let mut tx = self.pool.begin().await?;
        let count: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM jobs WHERE platform = ? AND chat = ? AND topic IS ?",
        )
        .bind(job.chat.platform.name())
        .bind(&job.chat.chat)
        .bind(&job.chat.topic)
        .fetch_one(&mut *tx)
        .await?;
        if count as usize >= max_per_chat {
            return Ok(None);
        }
        let id = sqlx::query_scalar(
            "INSERT INTO jobs (platform, chat, topic, creator, private, schedule, prompt,
                               next_run, created_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(job.chat.platform.name())
        .bind(&job.chat.chat)
        .bind(&job.chat.topic)
        .bind(job.creator)
        .bind(job.private)
        .bind(job.schedule)
        .bind(job.prompt)
        .bind(job.next_run)
        .bind(now())
        .fetch_one(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(id))
    }

    /// The chat's jobs, oldest first.
    pub async fn jobs(&self, chat: &ChatKey) -> Result<Vec<ScheduledJob>, StoreError> {
        let rows = sqlx::query_as(select_jobs!(
            "WHERE platform = ? AND chat = ? AND topic IS ? ORDER BY id"
        ))
        .bind(chat.platform.name())
        .bind(&chat.chat)
        .bind(&chat.topic)
        .fetch_all(&self.pool)
        .await?;
        jobs_of(rows)
    }

    /// The jobs due at `at` (unix seconds), the earliest first.
    pub async fn due_jobs(&self, at: i64) -> Result<Vec<ScheduledJob>, StoreError> {
        let rows = sqlx::query_as(select_jobs!("WHERE next_run <= ? ORDER BY next_run, id"))
            .bind(at)
            .fetch_all(&self.pool)
            .await?;
        jobs_of(rows)
    }

    /// When the first job due after `at` is due; `None` with none.
    pub async fn next_job_after(&self, at: i64) -> Result<Option<i64>, StoreError> {
        Ok(
            sqlx::query_scalar("SELECT MIN(next_run) FROM jobs WHERE next_run > ?")
                .bind(at)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    pub async fn job_count(&self) -> Result<i64, StoreError> {
        Ok(sqlx::query_scalar("SELECT COUNT(*) FROM jobs")
            .fetch_one(&self.pool)
            .await?)
    }

    /// A run of the job begins at `at`: counted, and the job moves to its next run, or
    /// (`None`: it ran once) leaves the table.
    pub async fn job_started(
        &self,
        id: i64,
        at: i64,
        next_run: Option<i64>,
    ) -> Result<(), StoreError> {
        let query = match next_run {
            Some(next_run) => sqlx::query(
                "UPDATE jobs SET runs = runs + 1, last_run = ?, last_result = NULL, next_run = ?
                 WHERE id = ?",
            )
            .bind(at)
            .bind(next_run),
            None => sqlx::query("DELETE FROM jobs WHERE id = ?"),
        };
        query.bind(id).execute(&self.pool).await?;
        Ok(())
    }

    /// How the job's last run went (a job run once is gone by then: nothing is written).
    pub async fn job_result(&self, id: i64, result: &str) -> Result<(), StoreError> {
        sqlx::query("UPDATE jobs SET last_result = ? WHERE id = ?")
            .bind(result)
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Removes one job; whether it was there.
    pub async fn remove_job(&self, id: i64) -> Result<bool, StoreError> {
        let removed = sqlx::query("DELETE FROM jobs WHERE id = ?")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(removed.rows_affected() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn jobs_are_kept_per_chat_and_move_on_when_they_run() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("jobs.db")).await.unwrap();
        let mut topic = ChatKey::new(Platform::Telegram, "-100");
        topic.topic = Some("7".into());
        let dm = ChatKey::new(Platform::Telegram, "42");
        let job = |chat, next_run| NewJob {
            chat,
            creator: "42",
            private: true,
            schedule: "every 60",
            prompt: "check the CI",
            next_run,
        };
        let first = store.add_job(&job(&dm, 100), 2).await.unwrap().unwrap();
        store.add_job(&job(&dm, 50), 2).await.unwrap().unwrap();
        assert_eq!(store.add_job(&job(&dm, 70), 2).await.unwrap(), None);
        store.add_job(&job(&topic, 80), 2).await.unwrap().unwrap();
        assert_eq!(store.jobs(&dm).await.unwrap().len(), 2);
        assert_eq!(store.jobs(&topic).await.unwrap()[0].chat, topic);
        assert_eq!(store.next_job_after(0).await.unwrap(), Some(50));
        assert_eq!(store.next_job_after(80).await.unwrap(), Some(100));
        assert_eq!(store.next_job_after(100).await.unwrap(), None);
        let due = store.due_jobs(90).await.unwrap();
        let due: Vec<i64> = due.iter().map(|j| j.next_run).collect();
        assert_eq!(due, [50, 80]);
        assert!(store.due_jobs(49).await.unwrap().is_empty());

        store.job_started(first, 100, Some(160)).await.unwrap();
        store.job_result(first, "ok").await.unwrap();
        let ran = store.jobs(&dm).await.unwrap().remove(0);
        assert_eq!((ran.runs, ran.last_run, ran.next_run), (1, Some(100), 160));
        assert_eq!(ran.last_result.as_deref(), Some("ok"));
        let once = store.jobs(&topic).await.unwrap()[0].id;
        store.job_started(once, 80, None).await.unwrap();
        assert!(store.jobs(&topic).await.unwrap().is_empty());

        assert!(store.remove_job(first).await.unwrap());
        assert!(!store.remove_job(first).await.unwrap());
        assert_eq!(store.job_count().await.unwrap(), 1);
    }
}
