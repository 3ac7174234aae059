//! A message for Codex: one turn on the chat's thread, its reply delivered and recorded.

use tracing::{error, info, warn};

use super::Actor;
use crate::commands::{self, Input};
use crate::router::replies::Replies;
use crate::router::texts;
use crate::router::turn::{TurnEnd, TurnOutcome};
use crate::session::{ChatRow, Prompt, SessionError, TurnRequest};
use chat::{Inbound, OutboundKind, Step};
use codex::{CodexError, TurnStatus};

impl Actor {
    /// What a message gives Codex: its text, or its files with their caption. `None` when
    /// it has nothing for Codex, or its files were refused (the chat is told why).
    pub(super) async fn prompt_of(
        &mut self,
        replies: &Replies<'_>,
        inbound: &Inbound,
    ) -> Option<Prompt> {
        if inbound.attachments.is_empty() {
            return match commands::parse(&inbound.text) {
                Input::Text(text) => Some(Prompt::text(text)),
                _ => None,
            };
        }
        let files = inbound.attachments.len() as u64;
        self.ctx.metrics.attachments.inc_by(files);
        match self
            .session
            .prompt(&inbound.text, &inbound.attachments)
            .await
        {
            Ok(prompt) => {
                for transcript in &prompt.transcripts {
                    replies.notice(texts::heard(transcript));
                }
                Some(prompt)
            }
            Err(refusal) => {
                warn!(chat = %self.chat, %refusal, "files refused");
                replies.notice(refusal.to_string());
                None
            }
        }
    }

    /// A task's first message: its thread is named after it, and it may get a worktree
    /// of its own (`codex.task_worktrees`), which the chat is told of.
    pub(super) async fn begin_task(&mut self, replies: &Replies<'_>) {
        match self.session.begin_task().await {
            None => {}
            Some(Ok(worktree)) => {
                replies.notice(texts::task_worktree(&worktree.branch, &worktree.path))
            }
            Some(Err(refusal)) => {
                // Not the refusal's words: git's may hold the branch, made of the title.
                warn!(chat = %self.chat, "no worktree for a task");
                replies.notice(texts::task_without_worktree(&refusal));
            }
        }
    }

    /// A message for Codex, or (`/review`) a review: one turn either way.
    pub(crate) async fn turn(&mut self, replies: &Replies<'_>, request: TurnRequest<'_>) {
        if let Some(missing) = self.session.login_missing().await {
            info!(chat = %self.chat, "message not sent: Codex is not logged in");
            return replies.notice(missing);
        }
        if !self.reach_codex(replies).await {
            return;
        }
        let started = match self.session.start_turn(request).await {
            // The app-server went away as the message came: the message waits for its
            // restart and runs, rather than being refused.
            Err(SessionError::Codex(CodexError::ProcessExited)) => {
                warn!(chat = %self.chat, "Codex went away as the message came; running it on the restarted one");
                self.session.start_turn(request).await
            }
            started => started,
        };
        let started = match started {
            Ok(started) => started,
            Err(error) => return self.report(replies, &error),
        };
        if started.replaced {
            replies.notice(texts::THREAD_REPLACED);
        }
        let turn_id = started.turn_id;
        let outcome = self
            .wait_for_turn(replies, Some(turn_id.clone()), true)
            .await;
        if outcome.end == TurnEnd::HandedOver {
            return self.hand_over(replies, turn_id).await;
        }
        self.end_turn(replies, outcome).await;
    }

    /// What a followed turn's end shows and records: its answer (saying how a turn cut
    /// short ended), the summary line, files it wrote; then hygiene.
    pub(super) async fn end_turn(&mut self, replies: &Replies<'_>, outcome: TurnOutcome) {
        let TurnEnd::Completed { status, error } = &outcome.end else {
            return self.lost_turn(replies, &outcome.end).await;
        };
        info!(chat = %self.chat, thread_id = ?self.session.thread_id(), ?status, "turn finished");
        self.ctx.metrics.turns.inc();
        if outcome.usage_limited {
            self.job_outcome((texts::jobs::RESULT_LIMITED.into(), false));
            return self.limit_reached(replies, &outcome).await;
        }
        self.job_turn_ended(*status, error.as_deref(), !outcome.answer.is_empty());
        match status {
            TurnStatus::Failed => replies.offer_continue(&texts::turn_failed(error.as_deref())),
            TurnStatus::Interrupted if !outcome.timed_out => replies.notice(texts::STOPPED),
            _ => {}
        }
        let marker = texts::turn_marker(*status, outcome.timed_out, error.as_deref());
        // The answer goes out first, saying how a turn cut short ended; the turn's one
        // write follows it (the thread id was written when the thread started).
        let reply = outcome.answer.clone();
        let shown = match (reply.is_empty(), &marker) {
            (true, _) if *status == TurnStatus::Completed => {
                replies.notice(texts::NO_REPLY);
                None
            }
            (true, _) => None,
            (false, Some(marker)) => Some(format!("{reply}\n\n({marker})")),
            (false, None) => Some(reply.clone()),
        };
        if let Some(shown) = shown {
            self.deliver_answer(replies, shown).await;
        }
        let completed = *status == TurnStatus::Completed;
        let summary = texts::work_summary(&outcome.work, outcome.elapsed, completed);
        replies.send(OutboundKind::TurnEnded { summary });
        self.offer_files(replies, &outcome.work.files, &reply);
        let record = self.record_turn(&outcome, &reply).await;
        if let Some(record) = record {
            self.hygiene(replies, &record).await;
        }
    }

    /// The gateway stops while the turn runs on a remote worker: it goes on there, and
    /// the next start follows it (its inbox row keeps the turn id, see `serve`).
    async fn hand_over(&mut self, replies: &Replies<'_>, turn_id: String) {
        let worker = self.session.server_name().await.unwrap_or_default();
        info!(chat = %self.chat, turn_id, worker, "turn left running on its worker");
        if let Err(error) = self.session.record_unanswered().await {
            error!(chat = %self.chat, %error, "could not record the handed-over turn's message");
        }
        replies.notice(texts::handed_over(&worker));
        let summary = texts::still_running(&worker);
        replies.send(OutboundKind::TurnEnded { summary });
        self.advance_served(Step::HandOver { turn_id }).await;
    }

    /// A turn handed over at the last stop: followed to its end on its worker, or, when
    /// it ended while the gateway was away, read back from the thread; its answer is
    /// delivered once either way.
    pub(super) async fn take_over(&mut self, replies: &Replies<'_>, turn_id: String) {
        if !self.reach_codex(replies).await {
            return;
        }
        match self.session.rejoin(&turn_id).await {
            Ok(Some(state)) if state.status == TurnStatus::InProgress => {
                info!(chat = %self.chat, turn_id, "following a turn handed over at the last stop");
                replies.notice(texts::TAKEN_OVER);
                let outcome = self.rejoin_turn(replies, turn_id).await;
                self.end_turn(replies, outcome).await;
            }
            Ok(Some(state)) => {
                info!(chat = %self.chat, turn_id, status = ?state.status, "a handed-over turn ended while the gateway was away");
                let outcome = TurnOutcome::read_back(state.status, state.error, state.answer);
                self.end_turn(replies, outcome).await;
            }
            Ok(None) => {
                warn!(chat = %self.chat, turn_id, "a handed-over turn is not in its thread");
                replies.offer_continue(texts::CUT_SHORT);
            }
            Err(error) => self.report(replies, &error),
        }
    }

    /// Sends a turn's answer. A message from the durable inbox keeps it there until the
    /// platform has taken it (its ledger, told piece by piece, marks the message done),
    /// so a crash before that sends it at the next start instead of losing it.
    pub(super) async fn deliver_answer(&mut self, replies: &Replies<'_>, answer: String) {
        let answer = self.headed_answer(answer);
        if self.serving.is_none() {
            return replies.send(OutboundKind::Reply(answer));
        }
        self.advance_served(Step::Answer(answer.clone())).await;
        self.send_kept(replies, answer);
    }

    /// Sends the served message's kept answer from the first piece the platform has not
    /// taken; its delivery's last step makes the message done.
    pub(super) fn send_kept(&mut self, replies: &Replies<'_>, text: String) {
        match &self.serving {
            Some(ticket) => {
                let ledger = self.ctx.inbox.ledger(ticket);
                replies.send(OutboundKind::KeptReply { text, ledger });
            }
            None => replies.send(OutboundKind::Reply(text)),
        }
    }

    /// Stores the turn's reply and usage; the chat's row as it now is, for hygiene.
    async fn record_turn(&mut self, outcome: &TurnOutcome, reply: &str) -> Option<ChatRow> {
        let reply = (!reply.is_empty()).then_some(reply);
        match self
            .session
            .finish_turn(reply, outcome.usage.as_ref(), outcome.work.diff.as_deref())
            .await
        {
            Ok(record) => record,
            Err(error) => {
                error!(chat = %self.chat, %error, "could not record the turn");
                None
            }
        }
    }

    /// The turn ended without Codex closing it: its process died, or it ignored the
    /// interrupt. The thread id stays stored; the next message resumes it.
    async fn lost_turn(&mut self, replies: &Replies<'_>, end: &TurnEnd) {
        self.job_outcome((texts::jobs::RESULT_LOST.into(), true));
        if let Err(error) = self.session.record_unanswered().await {
            error!(chat = %self.chat, %error, "could not record the unanswered turn");
        }
        let thread_id = self.session.thread_id().unwrap_or_default().to_owned();
        if *end == TurnEnd::ProcessLost {
            warn!(chat = %self.chat, thread_id, "codex process died during the turn");
            self.ctx.metrics.error("codex_process_exited");
            self.session.lose_live_thread();
            // Cut short as by a gateway crash: not run again by itself (its commands may
            // have had effects), with a Continue button.
            match self.session.server_name().await {
                Some(worker) if worker != codex::LOCAL => {
                    replies.offer_continue(&texts::worker_lost(&worker))
                }
                _ => replies.offer_continue(texts::CODEX_RESTARTED),
            }
        } else {
            warn!(chat = %self.chat, thread_id, "turn not closed after interrupt; detaching");
            self.session.unload().await;
            replies.notice(texts::TURN_ABANDONED);
        }
        let summary = texts::lost_turn_marker(*end == TurnEnd::ProcessLost);
        replies.send(OutboundKind::TurnEnded {
            summary: summary.into(),
        });
    }
}
