//! What a running turn has done so far: the facts its live status message and its
//! summary line are made of (`texts::live_status`, `texts::work_summary`).

use codex::{Item, PlanStep};

/// Longest line of the status (a command, a commentary line), in characters.
const LINE_CHARS: usize = 120;
/// How many log lines `/verbose` keeps in the status: the newest.
const LOG_LINES: usize = 12;

#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Work {
    /// Codex's latest commentary line.
    pub said: Option<String>,
    /// What Codex does now: the command running, or the text it is writing.
    pub now: Option<String>,
    pub commands: usize,
    /// Files changed (each once).
    pub files: Vec<String>,
    pub plan: Vec<PlanStep>,
    /// Every command with its exit code and every commentary line, newest last.
    pub log: Vec<String>,
    /// The turn's unified diff, as Codex last reported it.
    pub diff: Option<String>,
}

impl Work {
    pub(super) fn item_started(&mut self, item: &Item) {
        if let Item::CommandExecution { command, .. } = item {
            self.now = Some(format!("running: {}", one_line(command)));
        }
    }

    pub(super) fn item_completed(&mut self, item: &Item) {
        match item {
            Item::CommandExecution { command, exit_code } => {
                self.commands += 1;
                let code = exit_code.map_or("?".into(), |code| code.to_string());
                self.log(format!("$ {} (exit {code})", one_line(command)));
            }
            Item::FileChange { paths } => {
                for path in paths {
                    if !self.files.contains(path) {
                        self.files.push(path.clone());
                    }
                }
            }
            _ => {}
        }
    }

    /// Codex's words between its tools.
    pub(super) fn commentary(&mut self, text: &str) {
        let line = one_line(text);
        if !line.is_empty() {
            self.said = Some(line.clone());
            self.log(line);
        }
    }

    /// The text Codex is writing now: its newest line.
    pub(super) fn writing(&mut self, streamed: &str) {
        let last = streamed.lines().rev().find(|line| !line.trim().is_empty());
        self.now = last.map(|line| format!("writing: {}", one_line(line)));
    }

    fn log(&mut self, line: String) {
        self.log.push(line);
        let extra = self.log.len().saturating_sub(LOG_LINES);
        self.log.drain(..extra);
    }

    /// Lines added and removed, and files touched, by the diff.
    pub(super) fn diff_stat(&self) -> Option<DiffStat> {
        let diff = self.diff.as_deref()?;
        let mut stat = DiffStat::default();
        for line in diff.lines() {
            if line.starts_with("diff --git ") {
                stat.files += 1;
            } else if line.starts_with('+') && !line.starts_with("+++") {
                stat.added += 1;
            } else if line.starts_with('-') && !line.starts_with("---") {
                stat.removed += 1;
            }
        }
        (stat.files > 0).then_some(stat)
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct DiffStat {
    pub added: usize,
    pub removed: usize,
    pub files: usize,
}

/// The first line of `text`, shortened to `LINE_CHARS`.
fn one_line(text: &str) -> String {
    let first = text.trim().lines().next().unwrap_or("").trim();
    match first.char_indices().nth(LINE_CHARS) {
        Some((cut, _)) => format!("{}…", &first[..cut]),
        None if text.trim().lines().nth(1).is_some() => format!("{first} …"),
        None => first.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_counted_when_they_end_and_shown_while_they_run() {
        let mut work = Work::default();
        let command = Item::CommandExecution {
            command: "sleep 2; echo step-1\necho more".into(),
            exit_code: None,
        };
        work.item_started(&command);
        assert_eq!(work.now.as_deref(), Some("running: sleep 2; echo step-1 …"));
        assert_eq!(work.commands, 0);
        work.item_completed(&Item::CommandExecution {
            command: "false".into(),
            exit_code: Some(1),
        });
        assert_eq!(
            (work.commands, work.log.clone()),
            (1, vec!["$ false (exit 1)".into()])
        );
        work.writing("Done.\n\nAll tests pass\n");
        assert_eq!(work.now.as_deref(), Some("writing: All tests pass"));
    }

    #[test]
    fn the_log_keeps_the_newest_lines_and_long_lines_are_cut() {
        let mut work = Work::default();
        for n in 0..20 {
            work.commentary(&format!("line {n}"));
        }
        assert_eq!(work.log.len(), LOG_LINES);
        assert_eq!(work.log.last().map(String::as_str), Some("line 19"));
        work.commentary(&"é".repeat(300));
        assert_eq!(work.said.as_ref().unwrap().chars().count(), LINE_CHARS + 1);
    }

    #[test]
    fn a_diff_is_counted_by_lines_and_files() {
        let work = Work {
            diff: Some(
                "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1,2 +1,2 @@\n-old\n+new\n+more\n\
                 diff --git a/b.rs b/b.rs\nnew file mode 100644\n--- /dev/null\n+++ b/b.rs\n@@ -0,0 +1 @@\n+b\n"
                    .into(),
            ),
            ..Work::default()
        };
        let stat = DiffStat {
            added: 3,
            removed: 1,
            files: 2,
        };
        assert_eq!(work.diff_stat(), Some(stat));
        assert_eq!(Work::default().diff_stat(), None);
    }
}
