//! `/jobs`: the chat's scheduled jobs, each with its number, schedule, next run, prompt
//! and last result.

use super::{ChatCommand, Spec};
use crate::clock::unix_now;
use crate::router::texts::jobs::next_run_shown;
use crate::router::{Actor, Replies};
use crate::schedule::{self, Schedule};

/// Characters of a job's prompt shown.
const PROMPT_SHOWN: usize = 80;

pub(super) const NONE: &str = "This chat has no scheduled jobs. /every 2h PROMPT runs one every \
     two hours, /at 14:30 PROMPT once.";

fn listing(timezone: &str, lines: &[String]) -> String {
    format!(
        "Jobs of this chat (times in {timezone}):\n{}",
        lines.join("\n")
    )
}

/// A line of `/jobs`.
fn listed(id: i64, schedule: &str, next: &str, prompt: &str, last: Option<&str>) -> String {
    let last = last
        .map(|last| format!("; last run: {last}"))
        .unwrap_or_default();
    format!("{id}. {schedule}, next {next}{last}\n   {prompt}")
}

fn shortened(prompt: &str) -> String {
    let line = prompt.lines().next().unwrap_or_default();
    match line.char_indices().nth(PROMPT_SHOWN) {
        Some((end, _)) => format!("{}…", &line[..end]),
        None if line.len() < prompt.len() => format!("{line}…"),
        None => line.to_owned(),
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Jobs;

impl ChatCommand for Jobs {
    const SPEC: Spec = Spec {
        during_turn: true,
        ..Spec::plain(
            "jobs",
            "This chat's scheduled jobs",
            "this chat's scheduled jobs: number, schedule, next run and last result",
        )
    };

    fn parse(_argument: &str) -> Result<Self, String> {
        Ok(Jobs)
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let jobs = match chat.ctx.jobs(&chat.chat).await {
            Ok(jobs) => jobs,
            Err(error) => return chat.report(replies, &error),
        };
        if jobs.is_empty() {
            return replies.notice(NONE);
        }
        let timezone = chat.ctx.settings.schedule.timezone;
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
                listed(job.id, &schedule, &next, &prompt, last.as_deref())
            })
            .collect();
        replies.notice(listing(timezone.name(), &lines));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_is_shown_by_its_first_line_cut_at_80_characters() {
        assert_eq!(shortened("check CI"), "check CI");
        assert_eq!(shortened("check CI\nand more"), "check CI…");
        let long = "x".repeat(100);
        assert_eq!(shortened(&long), format!("{}…", "x".repeat(80)));
    }
}
