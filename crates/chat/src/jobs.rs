//! A chat's scheduled jobs (`/every`, `/at`): what runs, when next, and how the last run
//! went. The store keeps them; the router runs them.

use crate::ChatKey;

/// A job to store.
pub struct NewJob<'a> {
    pub chat: &'a ChatKey,
    pub creator: &'a str,
    pub private: bool,
    /// `every SECS`, `cron PATTERN` or `at UNIX`.
    pub schedule: &'a str,
    pub prompt: &'a str,
    pub next_run: i64,
}

/// A stored job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScheduledJob {
    pub id: i64,
    pub chat: ChatKey,
    pub creator: String,
    pub private: bool,
    pub schedule: String,
    pub prompt: String,
    pub next_run: i64,
    pub runs: i64,
    pub last_run: Option<i64>,
    pub last_result: Option<String>,
}
