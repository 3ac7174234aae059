//! `/unschedule ID|all`: removes one of the chat's jobs, or all of them; each by its
//! creator or an admin.

use tracing::info;

use super::{Argument, ChatCommand, Spec};
use crate::router::{Actor, Replies};

const UNSCHEDULE_WHICH: &str = "/unschedule takes a job's number from /jobs, or all: /unschedule 3.";
const NOT_YOURS: &str = "Only the job's creator or an admin can remove it (/jobs shows the jobs).";

fn removed(id: i64) -> String {
    format!("Job {id} removed.")
}

fn no_such_job(id: i64) -> String {
    format!("This chat has no job {id} (/jobs lists them).")
}

/// `/unschedule all`: `kept` jobs were others', which only an admin removes.
fn removed_all(removed: usize, kept: usize) -> String {
    const OTHERS: &str = "only an admin or their creator removes them.";
    match (removed, kept) {
        (0, 0) => super::jobs::NONE.into(),
        (0, kept) => format!("None of this chat's {kept} jobs is yours; {OTHERS}"),
        (1, 0) => "Removed this chat's one job.".into(),
        (removed, 0) => format!("Removed this chat's {removed} jobs."),
        (removed, kept) => format!("Removed your {removed} jobs; {kept} others' stay: {OTHERS}"),
    }
}

/// Which of the chat's jobs go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Unschedule {
    One(i64),
    All,
}

impl ChatCommand for Unschedule {
    const SPEC: Spec = Spec {
        argument: Some(Argument {
            name: "job",
            about: "A job's number from /jobs, or all",
            shown: "ID|all",
        }),
        during_turn: true,
        ..Spec::plain(
            "unschedule",
            "Remove a scheduled job",
            "remove a job of /jobs, or all of this chat's (its creator or an admin)",
        )
    };

    fn parse(target: &str) -> Result<Self, String> {
        match target {
            "" => Err(UNSCHEDULE_WHICH.into()),
            "all" => Ok(Unschedule::All),
            id => id
                .trim_start_matches('#')
                .parse::<i64>()
                .map(Unschedule::One)
                .map_err(|_| {
                    format!("/unschedule takes a job's number from /jobs, or all (not {id:?}).")
                }),
        }
    }

    async fn run(self, chat: &mut Actor, replies: &Replies<'_>) {
        let jobs = match chat.ctx.jobs(&chat.chat).await {
            Ok(jobs) => jobs,
            Err(error) => return chat.report(replies, &error),
        };
        let may_remove = |creator: &str| replies.admin || creator == replies.user;
        let chosen: Vec<_> = match self {
            Unschedule::One(id) => match jobs.iter().find(|job| job.id == id) {
                None => return replies.notice(no_such_job(id)),
                Some(job) if !may_remove(&job.creator) => return replies.notice(NOT_YOURS),
                Some(job) => vec![job],
            },
            Unschedule::All => jobs.iter().filter(|job| may_remove(&job.creator)).collect(),
        };
        let mut count = 0;
        for job in &chosen {
            match chat.ctx.remove_job(job.id).await {
                Ok(true) => count += 1,
                Ok(false) => {}
                Err(error) => return chat.report(replies, &error),
            }
        }
        chat.jobs_changed.notify_one();
        info!(chat = %chat.chat, removed = count, "jobs removed");
        let kept = jobs.len() - chosen.len();
        match self {
            Unschedule::One(id) => replies.notice(removed(id)),
            Unschedule::All => replies.notice(removed_all(count, kept)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_by_its_number_or_all() {
        assert_eq!(Unschedule::parse("3"), Ok(Unschedule::One(3)));
        assert_eq!(Unschedule::parse("#3"), Ok(Unschedule::One(3)));
        assert_eq!(Unschedule::parse("all"), Ok(Unschedule::All));
        assert_eq!(Unschedule::parse(""), Err(UNSCHEDULE_WHICH.into()));
        let refused = "/unschedule takes a job's number from /jobs, or all (not \"soon\").";
        assert_eq!(Unschedule::parse("soon"), Err(refused.into()));
    }
}
