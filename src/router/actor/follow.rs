//! Following a running turn: feeds the turn's state machine from Codex, the mailbox, the
//! clocks and shutdown, and carries out what it asks for.

use std::time::Duration;

use tokio::time::Instant;
use tracing::{debug, info, warn};

use super::Actor;
use super::turn_clock::{Alarm, TurnClock};
use crate::deadline;
use crate::router::approvals::codex_decision;
use crate::router::replies::Replies;
use crate::router::texts;
use crate::router::turn::{Effect, Input, TurnEnd, TurnOutcome, TurnTracker};
use chat::Progress;
use chat::{ActionKind, ApprovalId, ApprovalPrompt, Decision, OutboundKind, PromptEnd};
use codex::{
    ApprovalDecision, ApprovalKind, ApprovalRequest, ApprovalResponder, Notification, ThreadEvent,
};

/// How often a running turn's status is drawn again for its clock, when nothing else
/// changed it.
const STATUS_TICK: Duration = Duration::from_secs(5);

impl Actor {
    /// Follows the thread's events until the turn ends; with `live`, the chat sees the
    /// turn's status as it goes. With `turn_id` unknown (compaction), the first turn that
    /// starts is the one followed.
    pub(super) async fn wait_for_turn(
        &mut self,
        replies: &Replies<'_>,
        turn_id: Option<String>,
        live: bool,
    ) -> TurnOutcome {
        let tracker = TurnTracker::new(turn_id, self.ctx.settings.turn_timeout);
        self.follow(replies, tracker, live).await
    }

    /// Follows a turn that started before this gateway did, to its end.
    pub(super) async fn rejoin_turn(
        &mut self,
        replies: &Replies<'_>,
        turn_id: String,
    ) -> TurnOutcome {
        let tracker = TurnTracker::rejoining(turn_id, self.ctx.settings.turn_timeout);
        self.follow(replies, tracker, true).await
    }

    /// Follows the turn `tracker` tracks to its end; with `live`, the chat sees its
    /// status as it goes.
    pub(super) async fn follow(
        &mut self,
        replies: &Replies<'_>,
        tracker: TurnTracker,
        live: bool,
    ) -> TurnOutcome {
        replies.send(OutboundKind::Working(true));
        let progress = match live {
            true => self.session.progress(),
            false => Progress::Quiet,
        };
        let outcome = self.follow_turn(replies, tracker, progress).await;
        match outcome.end {
            // Left on its worker: Codex asks its requests again at the next start.
            TurnEnd::HandedOver => {
                self.approvals.leave(replies);
                self.questions.leave();
            }
            // Requests of a finished turn can no longer be answered; dropping declines them.
            _ => {
                let end = match *self.abort.borrow() {
                    true => PromptEnd::Stopped,
                    false => PromptEnd::TurnEnded,
                };
                self.approvals.clear(end, replies);
                self.questions.clear();
            }
        }
        replies.send(OutboundKind::Working(false));
        outcome
    }

    async fn follow_turn(
        &mut self,
        replies: &Replies<'_>,
        mut tracker: TurnTracker,
        progress: Progress,
    ) -> TurnOutcome {
        let turn_timeout = self.ctx.settings.turn_timeout;
        let max_turn = self.ctx.settings.max_turn;
        let started = Instant::now();
        // A turn on a remote worker goes on there when the gateway stops.
        let on_worker = self.session.on_remote_worker().await;
        let show_status = |tracker: &TurnTracker| {
            if progress != Progress::Quiet {
                let verbose = progress == Progress::Verbose;
                let text = texts::live_status(tracker.work(), started.elapsed(), verbose);
                replies.send(OutboundKind::Status(text));
            }
        };
        let mut clock = tokio::time::interval_at(started + STATUS_TICK, STATUS_TICK);
        let mut abort = self.abort.clone();
        // Shutdown may have run out of time while the turn was being started.
        let mut aborted = *abort.borrow();
        let stop_input = if on_worker {
            Input::HandOver
        } else {
            Input::Abort
        };
        let mut pending = aborted.then_some(stop_input.clone());
        let mut limits = TurnClock::start(started, turn_timeout, max_turn);
        while !tracker.is_finished() {
            let input = if let Some(input) = pending.take() {
                input
            } else {
                tokio::select! {
                event = self.session.next_event() => match event {
                    Some(ThreadEvent::Notification(Notification::RequestResolved { request_id })) => {
                        if let Some(id) = self.approvals.resolved_elsewhere(&request_id, replies) {
                            info!(chat = %self.chat, id = id.seq, "approval answered by another client");
                        }
                        self.question_answered_elsewhere(replies, &request_id);
                        continue;
                    }
                    Some(ThreadEvent::Notification(notification)) => Input::Codex(notification),
                    Some(ThreadEvent::Approval(request, responder)) => {
                        self.ask_approval(replies, request, responder);
                        continue;
                    }
                    Some(ThreadEvent::Question(questions, responder)) => {
                        self.ask_questions(replies, questions, responder);
                        continue;
                    }
                    Some(ThreadEvent::ProcessExited) | None => Input::ProcessLost,
                },
                message = self.mailbox.recv(), if self.mailbox_open => match message {
                    Some(message) => match self.while_busy(message, tracker.turn_id()).await {
                        true => Input::Stop,
                        false => continue,
                    },
                    None => {
                        self.mailbox_open = false;
                        continue;
                    }
                },
                () = deadline::sleep_until(self.approvals.next_deadline()) => {
                    for id in self.approvals.expire(Instant::now(), replies) {
                        info!(chat = %self.chat, id = id.seq, "approval request timed out; declined");
                        replies.notice(texts::APPROVAL_EXPIRED);
                    }
                    continue;
                }
                () = deadline::sleep_until(self.questions.next_deadline()) => {
                    self.expire_questions(replies);
                    continue;
                }
                changed = abort.changed(), if !aborted => {
                    // An error means the router is gone: nothing will raise it any more.
                    let raised = changed.is_ok() && *abort.borrow();
                    aborted = changed.is_err() || raised;
                    if !raised {
                        continue;
                    }
                    match on_worker {
                        true => info!(chat = %self.chat, "shutting down: the turn goes on on its worker"),
                        false => warn!(chat = %self.chat, "shutting down: interrupting the running turn"),
                    }
                    stop_input.clone()
                }
                alarm = limits.alarm() => match alarm {
                    Alarm::Silence => {
                        warn!(chat = %self.chat, ?turn_timeout, "turn deadline passed");
                        Input::Deadline
                    }
                    Alarm::Cap(limit) => {
                        warn!(chat = %self.chat, ?limit, "turn ran past max_turn_secs");
                        Input::Cap(limit)
                    }
                },
                _ = clock.tick() => {
                    show_status(&tracker);
                    continue;
                }
                }
            };
            // Any news of the turn means Codex is at work: the deadline counts silence.
            if matches!(input, Input::Codex(_)) && tracker.deadline_counts_silence() {
                limits.heard();
            }
            for effect in tracker.step(input) {
                match effect {
                    Effect::Show(kind) => replies.send(kind),
                    Effect::Status => show_status(&tracker),
                    Effect::Interrupt { turn_id } => self.interrupt(&turn_id).await,
                    Effect::Deadline(after) => limits.silence_after(after),
                    Effect::AskedElsewhere(text) => {
                        replies.notice(texts::asked_elsewhere(&text));
                        self.session.asked_elsewhere(text);
                    }
                }
            }
        }
        let mut outcome = tracker.into_outcome();
        outcome.elapsed = started.elapsed();
        outcome
    }

    async fn interrupt(&self, turn_id: &str) {
        if let Err(error) = self.session.interrupt(turn_id).await {
            warn!(chat = %self.chat, %error, "turn/interrupt failed");
        }
    }

    /// Asks the chat to approve, when its platform can show the prompt; otherwise the
    /// request is declined and the chat is told what was declined.
    fn ask_approval(
        &mut self,
        replies: &Replies<'_>,
        request: ApprovalRequest,
        responder: ApprovalResponder,
    ) {
        self.ctx.metrics.approval_requests.inc();
        if replies.can_approve {
            let timeout = self.ctx.settings.approval_timeout;
            let id = self.approvals.add(responder, timeout);
            // What Codex wants to run may hold anything: only DEBUG logs it.
            info!(chat = %self.chat, id = id.seq, "approval requested");
            debug!(chat = %self.chat, id = id.seq, command = ?request.command, "approval requested");
            replies.send(OutboundKind::Approval(prompt(id, request)));
            return;
        }
        let what = match request.kind {
            ApprovalKind::Permissions => "more access",
            _ => request.command.as_deref().unwrap_or("a file change"),
        };
        info!(chat = %self.chat, "approval request declined: no approver on this platform");
        debug!(chat = %self.chat, what, "declined approval request");
        replies.notice(texts::approval_declined(what));
        responder.answer(ApprovalDecision::Decline);
    }
}

/// Codex's request as the chat shows it.
fn prompt(id: ApprovalId, request: ApprovalRequest) -> ApprovalPrompt {
    ApprovalPrompt {
        id,
        action: match request.kind {
            ApprovalKind::Command => ActionKind::Command,
            ApprovalKind::FileChange => ActionKind::FileChange,
            ApprovalKind::Permissions => ActionKind::Permissions,
        },
        decisions: Decision::ALL
            .into_iter()
            .filter(|d| request.decisions.contains(&codex_decision(*d)))
            .collect(),
        command: request.command,
        cwd: request.cwd,
        reason: request.reason,
        files: request
            .files
            .into_iter()
            .map(|file| (file.kind, file.path))
            .collect(),
        grant_root: request.grant_root,
        permissions: request.permissions,
    }
}
