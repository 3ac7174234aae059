//! Following one turn, as a state machine without I/O: Codex's notifications and the
//! chat's requests go in, what to do comes out. The actor feeds it and carries out the
//! effects; the table tests below drive it directly.

use std::time::Duration;

use super::live::Work;
use super::texts;
use chat::OutboundKind;
use codex::{Item, Notification, Phase, TokenUsage, TurnAnswer, TurnStatus};

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
    /// The gateway stops while the turn runs on a remote worker: it goes on there, and
    /// the next start follows it again.
    HandOver,
    /// The turn's deadline passed (see `Effect::Deadline`).
    Deadline,
    /// The turn ran past `[codex] max_turn_secs`, busy or not.
    Cap(Duration),
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
    /// What another client (a terminal on the thread) asked in this turn.
    AskedElsewhere(String),
    /// What the turn has done changed: its live status is due again.
    Status,
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
    /// Left running on its remote worker for the next start to follow.
    HandedOver,
}

#[derive(Debug, Clone, PartialEq)]
pub(super) struct TurnOutcome {
    pub end: TurnEnd,
    /// The turn's answer: its `final_answer` messages, else its last message; for a
    /// turn that did not complete, what it had streamed when nothing was finished.
    pub answer: String,
    /// What the turn did: commands, files, plan, diff.
    pub work: Work,
    pub usage: Option<TokenUsage>,
    /// Codex compacted the thread's context during the turn.
    pub compacted: bool,
    pub timed_out: bool,
    /// The account's usage limit stopped it.
    pub usage_limited: bool,
    /// When the limit lifts, as Codex's message named it (its windows may say too).
    pub limit_resets_at: Option<i64>,
    /// How long the turn ran (the actor's clock).
    pub elapsed: Duration,
}

impl TurnOutcome {
    /// A turn that ended while nobody followed it, as its thread's history has it.
    pub(super) fn read_back(status: TurnStatus, error: Option<String>, answer: String) -> Self {
        Self {
            end: TurnEnd::Completed { status, error },
            answer,
            work: Work::default(),
            usage: None,
            compacted: false,
            timed_out: false,
            usage_limited: false,
            limit_resets_at: None,
            elapsed: Duration::ZERO,
        }
    }
}

/// One turn being followed. With its id unknown (a compaction), the first turn that
/// starts on the thread is the one followed.
pub(super) struct TurnTracker {
    turn_id: Option<String>,
    /// Codex rejects an interrupt until the turn has really started.
    started: bool,
    /// A stop asked for before `turn/started`.
    stop_pending: bool,
    /// The agent message being streamed.
    streaming: String,
    /// The turn's answer, from its finished messages.
    answer: TurnAnswer,
    /// The deadline counts Codex's silence, not the turn's length, until a timeout, a
    /// cap or a shutdown fixes it.
    deadline_fixed: bool,
    last_error: Option<String>,
    /// The trouble line last shown, so a repeat is not shown again.
    trouble: Option<String>,
    turn_timeout: Duration,
    outcome: TurnOutcome,
    finished: bool,
    /// Started by another client: its prompt is still to be shown.
    prompt_from_elsewhere: bool,
}

impl TurnTracker {
    /// Starts following; the caller arms the first deadline `turn_timeout` from now.
    /// A turn that started before the gateway did (handed over at its last stop).
    pub(super) fn rejoining(turn_id: String, turn_timeout: Duration) -> Self {
        let mut tracker = Self::new(Some(turn_id), turn_timeout);
        tracker.started = true;
        tracker
    }

    /// A turn another client started on the chat's thread, seen from its start.
    pub(super) fn elsewhere(turn_id: String, turn_timeout: Duration) -> Self {
        let mut tracker = Self::rejoining(turn_id, turn_timeout);
        tracker.prompt_from_elsewhere = true;
        tracker
    }

    pub(super) fn new(turn_id: Option<String>, turn_timeout: Duration) -> Self {
        Self {
            turn_id,
            started: false,
            stop_pending: false,
            streaming: String::new(),
            answer: TurnAnswer::default(),
            deadline_fixed: false,
            last_error: None,
            trouble: None,
            turn_timeout,
            outcome: TurnOutcome {
                end: TurnEnd::ProcessLost,
                answer: String::new(),
                work: Work::default(),
                usage: None,
                compacted: false,
                timed_out: false,
                usage_limited: false,
                limit_resets_at: None,
                elapsed: Duration::ZERO,
            },
            finished: false,
            prompt_from_elsewhere: false,
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

    /// What the turn has done so far.
    pub(super) fn work(&self) -> &Work {
        &self.outcome.work
    }

    /// Whether news from Codex pushes the deadline out again.
    pub(super) fn deadline_counts_silence(&self) -> bool {
        !self.deadline_fixed
    }

    pub(super) fn step(&mut self, input: Input) -> Vec<Effect> {
        match input {
            Input::Codex(notification) => self.on_notification(notification),
            Input::Stop => self.interrupt().into_iter().collect(),
            Input::Abort => {
                self.deadline_fixed = true;
                let mut effects = vec![Effect::Show(continue_offer(texts::RESTART_INTERRUPTED))];
                effects.extend(self.interrupt());
                effects.push(Effect::Deadline(ABORT_GRACE));
                effects
            }
            Input::Deadline if self.outcome.timed_out => self.finish(TurnEnd::Abandoned),
            Input::Deadline => self.time_out(texts::turn_timed_out(self.turn_timeout)),
            Input::Cap(_) if self.outcome.timed_out => Vec::new(),
            Input::Cap(limit) => self.time_out(texts::turn_capped(limit)),
            Input::ProcessLost => self.finish(TurnEnd::ProcessLost),
            Input::HandOver => self.finish(TurnEnd::HandedOver),
        }
    }

    /// Tells the chat why, interrupts, and gives Codex `INTERRUPT_GRACE` to close the turn.
    fn time_out(&mut self, notice: String) -> Vec<Effect> {
        self.outcome.timed_out = true;
        self.deadline_fixed = true;
        let mut effects = vec![Effect::Show(OutboundKind::Notice(notice))];
        effects.extend(self.interrupt());
        effects.push(Effect::Deadline(INTERRUPT_GRACE));
        effects
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
        let completed = matches!(
            end,
            TurnEnd::Completed {
                status: TurnStatus::Completed,
                ..
            }
        );
        self.outcome.answer = self.answer(completed);
        self.outcome.end = end;
        self.finished = true;
        Vec::new()
    }

    /// The turn's answer (`codex::TurnAnswer`'s rule); a turn cut short before it wrote
    /// a message answers with what it was writing.
    fn answer(&self, completed: bool) -> String {
        match self.answer.text() {
            Some(text) => text,
            None if !completed => self.streaming.trim().to_owned(),
            None => String::new(),
        }
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
            Notification::ItemStarted { turn_id, item } if self.is_ours(&turn_id) => {
                self.outcome.work.item_started(&item);
                if let Item::CommandExecution { command, .. } = item {
                    let line = OutboundKind::Progress(format!("running: {command}"));
                    return vec![Effect::Show(line), Effect::Status];
                }
            }
            Notification::ItemCompleted { turn_id, item } if self.is_ours(&turn_id) => {
                return self.on_item(item);
            }
            Notification::PlanUpdated { turn_id, plan } if self.is_ours(&turn_id) => {
                let line = texts::plan_line(&plan);
                self.outcome.work.plan = plan;
                return vec![Effect::Show(OutboundKind::Progress(line)), Effect::Status];
            }
            Notification::DiffUpdated { turn_id, diff } if self.is_ours(&turn_id) => {
                self.outcome.work.diff = Some(diff).filter(|diff| !diff.trim().is_empty());
            }
            Notification::AgentMessageDelta { turn_id, delta } if self.is_ours(&turn_id) => {
                self.streaming.push_str(&delta);
                self.outcome.work.writing(&self.streaming);
                return vec![Effect::Status];
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
            Notification::UsageLimitReached { turn_id, resets_at } if self.is_ours(&turn_id) => {
                self.outcome.usage_limited = true;
                self.outcome.limit_resets_at = resets_at;
            }
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
        self.outcome.work.item_completed(&item);
        self.answer.take(&item);
        match item {
            Item::AgentMessage { text, phase } => {
                self.streaming.clear();
                // A phase-less message may be the answer: it is shown once, as that.
                if text.is_empty() || phase != Phase::Commentary {
                    return Vec::new();
                }
                self.outcome.work.commentary(&text);
                vec![Effect::Show(OutboundKind::Progress(text)), Effect::Status]
            }
            Item::Review { .. } => Vec::new(),
            Item::CommandExecution { .. } | Item::FileChange { .. } => vec![Effect::Status],
            Item::ContextCompaction => {
                self.outcome.compacted = true;
                Vec::new()
            }
            Item::UserMessage { text } if self.prompt_from_elsewhere => {
                self.prompt_from_elsewhere = false;
                vec![Effect::AskedElsewhere(text)]
            }
            Item::UserMessage { .. } | Item::Other { .. } => Vec::new(),
        }
    }
}

fn continue_offer(text: &str) -> OutboundKind {
    super::replies::continue_offer(None, text)
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
        said(id, text, Phase::Unknown)
    }

    fn said(id: &str, text: &str, phase: Phase) -> Input {
        let text = text.into();
        item(id, Item::AgentMessage { text, phase })
    }

    fn command_started(id: &str, command: &str) -> Input {
        Input::Codex(Notification::ItemStarted {
            turn_id: id.into(),
            item: Item::CommandExecution {
                command: command.into(),
                exit_code: None,
            },
        })
    }

    fn progress(line: &str) -> Effect {
        Effect::Show(OutboundKind::Progress(line.into()))
    }

    fn completed(id: &str, status: TurnStatus) -> Input {
        Input::Codex(Notification::TurnCompleted {
            turn_id: id.into(),
            status,
            error: None,
        })
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
        answer: &'static str,
    }

    #[test]
    fn follows_turns() {
        let timeout_notice = Effect::Show(OutboundKind::Notice(texts::turn_timed_out(LIMIT)));
        let restart_notice = Effect::Show(continue_offer(texts::RESTART_INTERRUPTED));
        let grace = Effect::Deadline(INTERRUPT_GRACE);
        let cases = vec![
            Case {
                name: "a phase-less model's last message is the answer",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (delta("t1", "Hel"), vec![Effect::Status]),
                    (delta("t1", "lo"), vec![Effect::Status]),
                    (message("t1", "Hello"), vec![]),
                    (delta("t1", "Mo"), vec![Effect::Status]),
                    (message("t1", "More"), vec![]),
                    (completed("t1", TurnStatus::Completed), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Completed, None)),
                answer: "More",
            },
            Case {
                name: "commentary goes to the status, the final answer is the answer",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (
                        said("t1", "Step 1: looking.", Phase::Commentary),
                        vec![progress("Step 1: looking."), Effect::Status],
                    ),
                    (
                        command_started("t1", "sleep 2; echo step-1"),
                        vec![progress("running: sleep 2; echo step-1"), Effect::Status],
                    ),
                    (said("t1", "Done: all good.", Phase::FinalAnswer), vec![]),
                    (
                        said("t1", "An afterthought.", Phase::Commentary),
                        vec![progress("An afterthought."), Effect::Status],
                    ),
                    (completed("t1", TurnStatus::Completed), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Completed, None)),
                answer: "Done: all good.",
            },
            Case {
                name: "a stopped turn answers with what it was writing",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (delta("t1", "half an ans"), vec![Effect::Status]),
                    (completed("t1", TurnStatus::Interrupted), vec![]),
                ],
                end: Some(completed_end(TurnStatus::Interrupted, None)),
                answer: "half an ans",
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
                answer: "",
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
                answer: "",
            },
            Case {
                name: "a stop after turn/started interrupts at once",
                turn_id: Some("t1"),
                steps: vec![
                    (started("t1"), vec![]),
                    (Input::Stop, vec![interrupt("t1")]),
                ],
                end: None,
                answer: "",
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
                answer: "[P1] eval on input",
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
                answer: "",
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
                answer: "",
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
                answer: "",
            },
            Case {
                name: "commands show when they start and count when they end",
                turn_id: Some("t1"),
                steps: vec![
                    (
                        command_started("t1", "ls -la"),
                        vec![progress("running: ls -la"), Effect::Status],
                    ),
                    (
                        item(
                            "t1",
                            Item::CommandExecution {
                                command: "ls -la".into(),
                                exit_code: Some(0),
                            },
                        ),
                        vec![Effect::Status],
                    ),
                ],
                end: None,
                answer: "",
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
                answer: "",
            },
            Case {
                name: "a timeout before turn/started interrupts once it starts",
                turn_id: Some("t1"),
                steps: vec![
                    (Input::Deadline, vec![timeout_notice, grace.clone()]),
                    (started("t1"), vec![interrupt("t1")]),
                ],
                end: None,
                answer: "",
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
                answer: "",
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
                answer: "partial work",
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
            assert_eq!(outcome.answer, case.answer, "{}", case.name);
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
