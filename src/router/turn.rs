//! Following one turn, as a state machine without I/O: Codex's notifications and the
//! chat's requests go in, what to do comes out. The actor feeds it and carries out the
//! effects; the table tests below drive it directly.

use std::time::Duration;

use super::texts;
use crate::chat::OutboundKind;
use crate::codex::{Item, Notification, TokenUsage, TurnStatus};

/// After an interrupt, how long to wait for Codex to close the turn before giving up on it.
pub(super) const INTERRUPT_GRACE: Duration = Duration::from_secs(30);
/// The same when the gateway is stopping: its whole stop must fit in the grace period
/// plus a few seconds (compose's `stop_grace_period`).
pub(super) const ABORT_GRACE: Duration = Duration::from_millis(1500);

/// What happens to a turn being followed.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Input {
    Codex(Notification),
    /// A person asked to stop the turn.
    Stop,
    /// The gateway's shutdown grace period is over.
    Abort,
    /// The turn's deadline passed (see `Effect::Deadline`).
    Deadline,
    /// The app-server process died.
    ProcessLost,
}

/// What the actor must do.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Effect {
    Show(OutboundKind),
    Interrupt {
        turn_id: String,
    },
    /// The next `Input::Deadline` comes this long from now.
    Deadline(Duration),
}

/// How a turn ended, as far as the chat is concerned.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum TurnEnd {
    Completed {
        status: TurnStatus,
        error: Option<String>,
    },
    /// The app-server process died under the turn.
    ProcessLost,
    /// Codex did not close the turn even after an interrupt.
    Abandoned,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct TurnOutcome {
    pub end: TurnEnd,
    /// The agent's finished messages, in order.
    pub replies: Vec<String>,
    pub usage: Option<TokenUsage>,
    /// Codex compacted the thread's context during the turn.
    pub compacted: bool,
    /// Files Codex wrote during the turn (absolute paths, each once, in order).
    pub changed_files: Vec<String>,
    pub timed_out: bool,
}

/// One turn being followed. With its id unknown (a compaction), the first turn that
/// starts on the thread is the one followed.
pub(super) struct TurnTracker {
    turn_id: Option<String>,
    /// Codex rejects an interrupt until the turn has really started.
    started: bool,
    /// A stop asked for before `turn/started`.
    stop_pending: bool,
    /// The agent message being streamed, shown after the finished ones.
    streaming: String,
    last_error: Option<String>,
    /// The trouble line last shown, so a repeat is not shown again.
    trouble: Option<String>,
    turn_timeout: Duration,
    outcome: TurnOutcome,
    finished: bool,
}

impl TurnTracker {
    /// Starts following; the caller arms the first deadline `turn_timeout` from now.
    pub(super) fn new(turn_id: Option<String>, turn_timeout: Duration) -> Self {
        Self {
            turn_id,
            started: false,
            stop_pending: false,
            streaming: String::new(),
            last_error: None,
            trouble: None,
            turn_timeout,
            outcome: TurnOutcome {
                end: TurnEnd::ProcessLost,
                replies: Vec::new(),
                usage: None,
                compacted: false,
                changed_files: Vec::new(),
                timed_out: false,
            },
            finished: false,
        }
    }

    /// The turn's id, once known.
    pub(super) fn turn_id(&self) -> Option<&str> {
        self.turn_id.as_deref()
    }

    pub(super) fn is_finished(&self) -> bool {
        self.finished
    }

    pub(super) fn into_outcome(self) -> TurnOutcome {
        self.outcome
    }

    pub(super) fn step(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::Codex(notification) => self.on_notification(notification),
            Input::Stop => self.interrupt().into_iter().collect(),
            Input::Abort => {
                let mut effects = vec![Effect::Show(notice(texts::RESTART_INTERRUPTED))];
                effects.extend(self.interrupt());
                effects.push(Effect::Deadline(ABORT_GRACE));
                effects
            }
            Input::Deadline if self.outcome.timed_out => self.finish(TurnEnd::Abandoned),
            Input::Deadline => {
                self.outcome.timed_out = true;
                let text = texts::turn_timed_out(self.turn_timeout);
                let mut effects = vec![Effect::Show(OutboundKind::Notice(text))];
                effects.extend(self.interrupt());
                effects.push(Effect::Deadline(INTERRUPT_GRACE));
                effects
            }
            Input::ProcessLost => self.finish(TurnEnd::ProcessLost),
        }
    }

    /// Interrupts the turn once it has started; before that, remembers the request.
    fn interrupt(&mut self) -> Option<Effect> {
        match (&self.turn_id, self.started) {
            (Some(turn_id), true) => Some(Effect::Interrupt {
                turn_id: turn_id.clone(),
            }),
            _ => {
                self.stop_pending = true;
                None
            }
        }
    }

    fn finish(&mut self, end: TurnEnd) -> Vec<Effect> {
        self.outcome.end = end;
        self.finished = true;
        Vec::new()
    }

    fn is_ours(&self, turn_id: &str) -> bool {
        self.turn_id.as_deref() == Some(turn_id)
    }

    fn on_notification(&mut self, notification: Notification) -> Vec<Effect> {
        match notification {
            Notification::TurnStarted { turn_id }
                if self.turn_id.is_none() || self.is_ours(&turn_id) =>
            {
                self.started = true;
                self.turn_id = Some(turn_id);
                if std::mem::take(&mut self.stop_pending) {
                    return self.interrupt().into_iter().collect();
                }
            }
            Notification::ItemCompleted { turn_id, item } if self.is_ours(&turn_id) => {
                return self.on_item(item);
            }
            Notification::AgentMessageDelta { turn_id, delta } if self.is_ours(&turn_id) => {
                self.streaming.push_str(&delta);
                let shown = self.outcome.replies.iter().map(String::as_str);
                let shown: Vec<&str> = shown.chain([self.streaming.as_str()]).collect();
                return vec![Effect::Show(OutboundKind::Partial(shown.join("\n\n")))];
            }
            Notification::TokenUsage(usage) => self.outcome.usage = Some(usage),
            Notification::Error {
                message,
                will_retry: false,
            } => self.last_error = Some(message),
            Notification::Error {
                message,
                will_retry: true,
            } => return self.show_trouble(texts::trouble(&message)),
            Notification::ModelRerouted { turn_id, to_model } if self.is_ours(&turn_id) => {
                return self.show_trouble(texts::rerouted(&to_model));
            }
            Notification::TurnCompleted {
                turn_id,
                status,
                error,
            } if self.is_ours(&turn_id) => {
                let error = error.or(self.last_error.take());
                return self.finish(TurnEnd::Completed { status, error });
            }
            _ => {}
        }
        Vec::new()
    }

    /// The turn's trouble line, unless it says what is shown already.
    fn show_trouble(&mut self, line: String) -> Vec<Effect> {
        if self.trouble.as_ref() == Some(&line) {
            return Vec::new();
        }
        self.trouble = Some(line.clone());
        vec![Effect::Show(OutboundKind::Trouble(line))]
    }

    fn on_item(&mut self, item: Item) -> Vec<Effect> {
        match item {
            Item::AgentMessage { text } | Item::Review { text } => {
                self.streaming.clear();
                // A review's findings come as its result and again as a message.
                let repeated = self.outcome.replies.last() == Some(&text);
                if !text.is_empty() && !repeated {
                    self.outcome.replies.push(text);
                }
            }
            Item::CommandExecution { command, .. } => {
                return vec![Effect::Show(OutboundKind::Progress(format!(
                    "running: {command}"
                )))];
            }
            Item::ContextCompaction => self.outcome.compacted = true,
            Item::FileChange { paths } => {
                for path in paths {
                    if !self.outcome.changed_files.contains(&path) {
                        self.outcome.changed_files.push(path);
                    }
                }
            }
            Item::Other { .. } => {}
        }
        Vec::new()
    }
}

fn notice(text: &str) -> OutboundKind {
    OutboundKind::Notice(text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMIT: Duration = Duration::from_secs(1800);

    fn started(id: &str) -> Input {
        Input::Codex(Notification::TurnStarted { turn_id: id.into() })
    }

    fn delta(id: &str, text: &str) -> Input {
        Input::Codex(Notification::AgentMessageDelta {
            turn_id: id.into(),
            delta: text.into(),
        })
    }

    fn item(id: &str, item: Item) -> Input {
        Input::Codex(Notification::ItemCompleted {
            turn_id: id.into(),
            item,
        })
    }

    fn message(id: &str, text: &str) -> Input {
        item(id, Item::AgentMessage { text: text.into() })
    }

    fn completed(id: &str, status: TurnStatus) -> Input {
        Input::Codex(Notification::TurnCompleted {
            turn_id: id.into(),
            status,
            error: None,
        })
    }

    fn partial(text: &str) -> Effect {
        Effect::Show(OutboundKind::Partial(text.into()))
    }

    fn interrupt(id: &str) -> Effect {
        Effect::Interrupt { turn_id: id.into() }
    }

    fn completed_end(status: TurnStatus, error: Option<&str>) -> TurnEnd {
        TurnEnd::Completed {
            status,
            error: error.map(str::to_owned),
        }
    }

    struct Case {
        name: &'static str,
        turn_id: Option<&'static str>,
        steps: Vec<(Input, Vec<Effect>)>,
        end: Option<TurnEnd>,
        replies: &'static [&'static str],
    }

    #[test]
    fn follows_turns() {
        let timeout_notice = Effect::Show(OutboundKind::Notice(texts::turn_timed_out(LIMIT)));
        let restart_notice = Effect::Show(OutboundKind::Notice(texts::RESTART_INTERRUPTED.into()));
        let grace = Effect::Deadline(INTERRUPT_GRACE);
        let cases = vec![
            Case {
                name: "streams, then keeps the finished messages",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (delta("t1", "Hel"), vec![partial("Hel")]),
                    (delta("t1", "lo"), vec![partial("Hello")]),
                    (message("t1", "Hello"), vec![]),
                    (delta("t1", "Mo"), vec![partial("Hello\n\nMo")]),
                    (message("t1", "More"), vec![]),
                    (completed("t1", TurnStatus::Completed), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Completed, None)),
                replies: &["Hello", "More"],
            },
            Case {
                name: "another turn's events are not ours",
                turn_id: Some("t1"),
                steps: vec![
                    (delta("t0", "old"), vec![]),
                    (message("t0", "old"), vec![]),
                    (completed("t0", TurnStatus::Completed), vec![]),
                ],
                end: None,
                replies: &[],
            },
            Case {
                name: "a stop before turn/started waits for it",
                turn_id: Some("t1"),
                steps: vec![
                    (Input::Stop, vec![]),
                    (started("t1"), vec![interrupt("t1")]),
                    (completed("t1", TurnStatus::Interrupted), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Interrupted, None)),
                replies: &[],
            },
            Case {
                name: "a stop after turn/started interrupts at once",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (Input::Stop, vec![interrupt("t1")]),
                ],
                end: None,
                replies: &[],
            },
            Case {
                name: "a review's findings are its turn's reply",
                turn_id: Some("r1"),
                steps: vec![
                    (started("r1"), vec![]),
                    (
                        item(
                            "r1",
                            Item::Review {
                                text: "[P1] eval on input".into(),
                            },
                        ),
                        vec![],
                    ),
                    (completed("r1", TurnStatus::Completed), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Completed, None)),
                replies: &["[P1] eval on input"],
            },
            Case {
                name: "a compaction follows the first turn that starts",
                turn_id: None,
                steps: vec![
                    (started("c1"), vec![]),
                    (item("c1", Item::ContextCompaction), vec![]),
                    (completed("c1", TurnStatus::Completed), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Completed, None)),
                replies: &[],
            },
            Case {
                name: "the last fatal error explains a failed turn",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (
                        Input::Codex(Notification::Error {
                            message: "Reconnecting... 1/5".into(),
                            will_retry: true,
                        }),
                        vec![Effect::Show(OutboundKind::Trouble(
                            "Codex is reconnecting to the model, attempt 1 of 5.".into(),
                        ))],
                    ),
                    (
                        Input::Codex(Notification::Error {
                            message: "Reconnecting... 1/5".into(),
                            will_retry: true,
                        }),
                        vec![],
                    ),
                    (
                        Input::Codex(Notification::Error {
                            message: "quota exceeded".into(),
                            will_retry: false,
                        }),
                        vec![],
                    ),
                    (completed("t1", TurnStatus::Failed), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Failed, Some("quota exceeded"))),
                replies: &[],
            },
            Case {
                name: "a rerouted model is said once",
                turn_id: Some("t1"),
                steps: vec![
                    (
                        Input::Codex(Notification::ModelRerouted {
                            turn_id: "t1".into(),
                            to_model: "gpt-safe".into(),
                        }),
                        vec![Effect::Show(OutboundKind::Trouble(texts::rerouted(
                            "gpt-safe",
                        )))],
                    ),
                    (
                        Input::Codex(Notification::ModelRerouted {
                            turn_id: "t1".into(),
                            to_model: "gpt-safe".into(),
                        }),
                        vec![],
                    ),
                ],
                end: None,
                replies: &[],
            },
            Case {
                name: "commands show as progress",
                turn_id: Some("t1"),
                steps: vec![(
                    item(
                        "t1",
                        Item::CommandExecution {
                            command: "ls -la".into(),
                            exit_code: Some(0),
                        },
                    ),
                    vec![Effect::Show(OutboundKind::Progress(
                        "running: ls -la".into(),
                    ))],
                )],
                end: None,
                replies: &[],
            },
            Case {
                name: "a timeout interrupts, then gives up after the grace",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (
                        Input::Deadline,
                        vec![timeout_notice.clone(), interrupt("t1"), grace.clone()],
                    ),
                    (Input::Deadline, vec![]),
                ],
                end: Some(TurnEnd::Abandoned),
                replies: &[],
            },
            Case {
                name: "a timeout before turn/started interrupts once it starts",
                turn_id: Some("t1"),
                steps: vec![
                    (Input::Deadline, vec![timeout_notice, grace.clone()]),
                    (started("t1"), vec![interrupt("t1")]),
                ],
                end: None,
                replies: &[],
            },
            Case {
                name: "shutdown tells the chat and interrupts",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (
                        Input::Abort,
                        vec![
                            restart_notice,
                            interrupt("t1"),
                            Effect::Deadline(ABORT_GRACE),
                        ],
                    ),
                ],
                end: None,
                replies: &[],
            },
            Case {
                name: "a dead process ends the turn with what it had",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (message("t1", "partial work"), vec![]),
                    (Input::ProcessLost, vec![]),
                ],
                end: Some(TurnEnd::ProcessLost),
                replies: &["partial work"],
            },
        ];
        for case in cases {
            let mut tracker = TurnTracker::new(case.turn_id.map(str::to_owned), LIMIT);
            for (index, (input, expected)) in case.steps.into_iter().enumerate() {
                assert!(!tracker.is_finished(), "{}: finished early", case.name);
                let effects = tracker.step(input);
                assert_eq!(effects, expected, "{}: step {index}", case.name);
            }
            assert_eq!(tracker.is_finished(), case.end.is_some(), "{}", case.name);
            let outcome = tracker.into_outcome();
            if let Some(end) = case.end {
                assert_eq!(outcome.end, end, "{}", case.name);
            }
            assert_eq!(outcome.replies, case.replies, "{}", case.name);
        }
    }

    #[test]
    fn keeps_the_latest_usage_and_notes_a_timeout() {
        let usage = TokenUsage {
            model_context_window: Some(1000),
            ..TokenUsage::default()
        };
        let mut tracker = TurnTracker::new(Some("t1".into()), LIMIT);
        tracker.step(Input::Codex(
            Notification::TokenUsage(TokenUsage::default()),
        ));
        tracker.step(Input::Codex(Notification::TokenUsage(usage)));
        tracker.step(Input::Deadline);
        tracker.step(completed("t1", TurnStatus::Interrupted));
        let outcome = tracker.into_outcome();
        assert_eq!(outcome.usage, Some(usage));
        assert!(outcome.timed_out);
    }
}
