//! One task per active chat: runs its turns one at a time and answers commands.
//!
//! While a turn runs, `/stop`, `/status` and `/help` are answered at once; any other
//! message is queued and handled, in order, after the turn ends (never dropped).

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{mpsc, oneshot, watch};
use tokio::time::{Duration, Instant};
use tracing::{error, info, warn};

use super::approvals::PendingApprovals;
use super::command::{self, Command, HELP, Input, MAX_INPUT_BYTES};
use crate::chat::{ApprovalPrompt, ChatKey, Inbound, Outbound, OutboundKind, Outbox};
use crate::codex::{
    ApprovalDecision, ApprovalRequest, ApprovalResponder, Item, Notification, ThreadEvent,
    TokenUsage, TurnStatus,
};
use crate::deadline;
use crate::hygiene::{self, Action, CompactionOutcome, Observation};
use crate::metrics::Metrics;
use crate::session::{Context, Session, SessionError};

/// After an interrupt, how long to wait for Codex to close the turn before giving up on it.
const INTERRUPT_GRACE: Duration = Duration::from_secs(30);

pub(super) enum ActorMsg {
    Inbound(Inbound),
    /// A person's answer to an approval prompt; `done` learns whether it was still pending.
    Decide {
        id: u64,
        decision: ApprovalDecision,
        done: oneshot::Sender<bool>,
    },
    Unload,
}

pub(super) struct Actor {
    chat: ChatKey,
    ctx: Arc<Context>,
    session: Session,
    mailbox: mpsc::UnboundedReceiver<ActorMsg>,
    mailbox_open: bool,
    queue: VecDeque<ActorMsg>,
    approvals: PendingApprovals,
    /// Dropped when the actor ends; the router waits on it.
    _alive: watch::Sender<()>,
    /// Read by the router for LRU and idle unloading.
    last_active: Arc<std::sync::Mutex<std::time::Instant>>,
    /// Set when the gateway's shutdown grace period is over: stop the turn, drop the queue.
    abort: watch::Receiver<bool>,
}

/// Where one message's answers go.
struct Replies<'a> {
    chat: &'a ChatKey,
    outbox: &'a Outbox,
    can_approve: bool,
}

impl<'a> Replies<'a> {
    fn to(inbound: &'a Inbound) -> Self {
        Self {
            chat: &inbound.chat,
            outbox: &inbound.reply_to,
            can_approve: inbound.can_approve,
        }
    }
}

impl Replies<'_> {
    fn send(&self, kind: OutboundKind) {
        // A closed outbox means the platform is shutting down; nothing is left to tell.
        let _ = self.outbox.send(Outbound {
            chat: self.chat.clone(),
            kind,
        });
    }

    fn notice(&self, text: impl Into<String>) {
        self.send(OutboundKind::Notice(text.into()));
    }
}

/// How a turn ended, as far as the chat is concerned.
enum TurnEnd {
    Completed {
        status: TurnStatus,
        error: Option<String>,
    },
    /// The app-server process died under the turn.
    ProcessLost,
    /// Codex did not close the turn even after an interrupt.
    Abandoned,
}

struct TurnOutcome {
    end: TurnEnd,
    replies: Vec<String>,
    usage: Option<TokenUsage>,
    compacted: bool,
    timed_out: bool,
}

impl Actor {
    pub(super) fn new(
        chat: ChatKey,
        ctx: Arc<Context>,
        mailbox: mpsc::UnboundedReceiver<ActorMsg>,
        alive: watch::Sender<()>,
        last_active: Arc<std::sync::Mutex<std::time::Instant>>,
        abort: watch::Receiver<bool>,
    ) -> Self {
        Self {
            session: Session::new(chat.clone(), ctx.clone()),
            chat,
            ctx,
            mailbox,
            mailbox_open: true,
            queue: VecDeque::new(),
            approvals: PendingApprovals::default(),
            _alive: alive,
            last_active,
            abort,
        }
    }

    /// Handles messages until unloaded or the mailbox closes. A predecessor actor of the
    /// same chat (being unloaded) finishes first, so one chat never runs two turns at once.
    pub(super) async fn run(mut self, predecessor: Option<watch::Receiver<()>>) {
        if let Some(mut predecessor) = predecessor {
            let _ = predecessor.changed().await;
        }
        while let Some(message) = self.next_message().await {
            match message {
                ActorMsg::Unload => {
                    self.session.unload().await;
                    info!(chat = %self.chat, "chat unloaded");
                    return;
                }
                // No turn runs, so no approval is pending.
                ActorMsg::Decide { done, .. } => {
                    let _ = done.send(false);
                }
                ActorMsg::Inbound(inbound) => {
                    self.touch();
                    self.handle(inbound).await;
                    self.touch();
                }
            }
        }
    }

    /// Shutdown ran out of time: tell every queued message's chat it was not handled.
    fn drop_queue(&mut self) {
        self.mailbox.close();
        while let Ok(message) = self.mailbox.try_recv() {
            self.queue.push_back(message);
        }
        for message in self.queue.drain(..) {
            if let ActorMsg::Inbound(inbound) = message {
                Replies::to(&inbound).notice(
                    "The gateway is restarting, so this message was not handled. \
                     Send it again in a minute; the conversation continues where it was.",
                );
            }
        }
    }

    fn touch(&self) {
        *self.last_active.lock().expect("lock") = std::time::Instant::now();
    }

    async fn next_message(&mut self) -> Option<ActorMsg> {
        if *self.abort.borrow() {
            self.drop_queue();
            return None;
        }
        if let Some(message) = self.queue.pop_front() {
            return Some(message);
        }
        if !self.mailbox_open {
            return None;
        }
        self.mailbox.recv().await
    }

    async fn handle(&mut self, inbound: Inbound) {
        let replies = Replies::to(&inbound);
        info!(chat = %self.chat, user = inbound.user, bytes = inbound.text.len(), "message");
        match command::parse(&inbound.text) {
            Input::Empty => replies.notice("(empty message ignored)"),
            Input::TooLong { bytes } => {
                warn!(chat = %self.chat, bytes, "message too long");
                replies.notice(format!(
                    "That message is {bytes} bytes; the limit is {MAX_INPUT_BYTES}. \
                     Please send a shorter one (or put the text in a file in the workspace)."
                ));
            }
            Input::UnknownCommand(name) => {
                replies.notice(format!("Unknown command {name}. /help lists the commands."))
            }
            Input::Command(Command::Help) => replies.notice(HELP),
            Input::Command(Command::Status) => replies.notice(self.status().await),
            Input::Command(Command::Stop) => replies.notice("Nothing is running."),
            Input::Command(Command::New) => match self.session.start_over().await {
                Ok(_) => replies.notice(
                    "Started a new conversation: the next message goes to a fresh Codex thread.",
                ),
                Err(error) => self.report(&replies, &error),
            },
            Input::Command(Command::Compact) => self.compact(&replies).await,
            Input::Text(text) => self.turn(&replies, text).await,
        }
    }

    async fn turn(&mut self, replies: &Replies<'_>, text: &str) {
        let started = match self.session.start_turn(text).await {
            Ok(started) => started,
            Err(error) => return self.report(replies, &error),
        };
        if started.replaced {
            replies.notice(
                "This chat's earlier Codex session could not be restored (its history is gone \
                 from disk), so a new one was started and given the recent conversation.",
            );
        }
        let outcome = self.wait_for_turn(replies, Some(started.turn_id)).await;
        if self.finish(replies, &outcome).await {
            let text = outcome.replies.join("\n\n");
            match outcome.end {
                TurnEnd::Completed {
                    status: TurnStatus::Completed,
                    ..
                } if text.is_empty() => replies.notice("(Codex finished without a reply)"),
                _ if text.is_empty() => {}
                _ => {
                    if let Some(thread_id) = self.session.thread_id()
                        && let Err(error) = self
                            .ctx
                            .store
                            .append_transcript(
                                &self.chat,
                                thread_id,
                                crate::store::Role::Assistant,
                                &text,
                            )
                            .await
                    {
                        error!(chat = %self.chat, %error, "could not store the reply in the transcript");
                    }
                    replies.send(OutboundKind::Reply(text));
                }
            }
            if matches!(outcome.end, TurnEnd::Completed { .. }) {
                self.hygiene(replies).await;
            }
        }
    }

    /// After a turn: hygiene's decision for this thread. It may compact the live thread
    /// (gateway mode); it never replaces or evicts it.
    async fn hygiene(&mut self, replies: &Replies<'_>) {
        let record = match self.session.record().await {
            Ok(Some(record)) => record,
            Ok(None) => return,
            Err(error) => {
                return error!(chat = %self.chat, %error, "hygiene could not read the chat");
            }
        };
        let seen = Observation {
            context_tokens: record.last_tokens,
            context_window: record.context_window,
            last_compaction: record.last_compaction(),
            idle: Duration::ZERO,
        };
        let verdict = hygiene::decide(&self.ctx.hygiene, &seen);
        let thread_id = record.thread_id.as_deref().unwrap_or_default();
        if let Some(reason) = verdict.skipped {
            info!(chat = %self.chat, thread_id, percent = ?seen.percent_used(), reason, "hygiene skipped");
        }
        if verdict.action != Action::Compact {
            return;
        }
        info!(chat = %self.chat, thread_id, percent = ?seen.percent_used(), "hygiene: compacting the thread");
        match self.run_compaction(replies).await {
            Ok(_) => {}
            Err(error) => {
                warn!(chat = %self.chat, thread_id, %error, "hygiene compaction failed; the thread is unchanged");
                if let Err(error) = self
                    .ctx
                    .store
                    .record_compaction(&self.chat, CompactionOutcome::Failed)
                    .await
                {
                    error!(chat = %self.chat, %error, "could not record the compaction");
                }
            }
        }
    }

    /// Runs Codex's native compaction on the chat's thread, which stays the same thread,
    /// and records the outcome. `None` when the chat has no thread yet.
    async fn run_compaction(
        &mut self,
        replies: &Replies<'_>,
    ) -> Result<Option<CompactionOutcome>, SessionError> {
        let before = self.session.record().await?.and_then(|r| r.last_tokens);
        if !self.session.start_compaction().await? {
            return Ok(None);
        }
        let outcome = self.wait_for_turn(replies, None).await;
        let result = match &outcome.end {
            TurnEnd::ProcessLost => {
                self.session.lose_live_thread();
                CompactionOutcome::Failed
            }
            TurnEnd::Abandoned => {
                self.session.unload().await;
                CompactionOutcome::Failed
            }
            TurnEnd::Completed { status, error } => {
                self.ctx
                    .store
                    .record_turn(&self.chat, outcome.usage.as_ref(), false)
                    .await?;
                let after = outcome.usage.map(|u| u.last.total_tokens);
                let reduced =
                    outcome.compacted || matches!((before, after), (Some(b), Some(a)) if a < b);
                match status {
                    TurnStatus::Completed if reduced => CompactionOutcome::Reduced,
                    TurnStatus::Failed => {
                        warn!(chat = %self.chat, error = ?error, "compaction turn failed");
                        CompactionOutcome::Failed
                    }
                    _ => CompactionOutcome::NoOp,
                }
            }
        };
        Metrics::count(&self.ctx.metrics.compactions);
        info!(chat = %self.chat, thread_id = ?self.session.thread_id(), outcome = ?result, "compaction finished");
        self.ctx.store.record_compaction(&self.chat, result).await?;
        Ok(Some(result))
    }

    async fn compact(&mut self, replies: &Replies<'_>) {
        match self.run_compaction(replies).await {
            Ok(None) => replies.notice("Nothing to compact yet: this chat has no Codex thread."),
            Ok(Some(CompactionOutcome::Reduced)) => {
                replies.notice("Compacted: Codex replaced the thread's history with a summary.")
            }
            Ok(Some(CompactionOutcome::NoOp)) => {
                replies.notice("Codex compacted nothing; the thread is unchanged.")
            }
            Ok(Some(CompactionOutcome::Failed)) => {
                replies.notice("The compaction failed; the thread is unchanged.")
            }
            Err(error) => self.report(replies, &error),
        }
    }

    /// Records a finished turn and tells the chat how it ended. Returns whether the turn
    /// produced a result worth delivering.
    async fn finish(&mut self, replies: &Replies<'_>, outcome: &TurnOutcome) -> bool {
        let thread_id = self.session.thread_id().unwrap_or_default().to_owned();
        match &outcome.end {
            TurnEnd::ProcessLost => {
                warn!(chat = %self.chat, thread_id, "codex process died during the turn");
                self.ctx.metrics.error("codex_process_exited");
                self.session.lose_live_thread();
                replies.notice(
                    SessionError::from(crate::codex::CodexError::ProcessExited).user_message(),
                );
                return false;
            }
            TurnEnd::Abandoned => {
                warn!(chat = %self.chat, thread_id, "turn not closed after interrupt; detaching");
                self.session.unload().await;
                replies.notice("Codex did not stop the turn in time; the chat is detached from it. Your next message resumes the thread.");
                return false;
            }
            TurnEnd::Completed { status, error } => {
                info!(chat = %self.chat, thread_id, ?status, "turn finished");
                Metrics::count(&self.ctx.metrics.turns);
                if let Err(error) = self
                    .ctx
                    .store
                    .record_turn(&self.chat, outcome.usage.as_ref(), true)
                    .await
                {
                    error!(chat = %self.chat, %error, "could not record the turn");
                }
                match status {
                    TurnStatus::Failed => replies.notice(format!(
                        "Codex failed: {}",
                        error.as_deref().unwrap_or("no reason given")
                    )),
                    TurnStatus::Interrupted if !outcome.timed_out => replies.notice("Stopped."),
                    _ => {}
                }
            }
        }
        true
    }

    /// Follows the thread's events until the turn ends. With `turn_id` unknown (compaction),
    /// the first turn that starts is the one followed.
    async fn wait_for_turn(
        &mut self,
        replies: &Replies<'_>,
        turn_id: Option<String>,
    ) -> TurnOutcome {
        replies.send(OutboundKind::Working(true));
        let outcome = self.follow_turn(replies, turn_id).await;
        // Requests of a finished turn can no longer be answered; dropping declines them.
        self.approvals.clear();
        replies.send(OutboundKind::Working(false));
        outcome
    }

    async fn follow_turn(
        &mut self,
        replies: &Replies<'_>,
        mut turn_id: Option<String>,
    ) -> TurnOutcome {
        let mut outcome = TurnOutcome {
            end: TurnEnd::ProcessLost,
            replies: Vec::new(),
            usage: None,
            compacted: false,
            timed_out: false,
        };
        let mut last_error = None;
        // The agent message being streamed, shown after the finished ones.
        let mut streaming = String::new();
        // Codex rejects an interrupt until the turn has really started; a stop asked for
        // earlier waits for turn/started.
        let mut started = false;
        let mut stop_pending = false;
        let mut abort = self.abort.clone();
        let mut aborted = *abort.borrow();
        let turn_timeout = self.ctx.settings.turn_timeout;
        let deadline = tokio::time::sleep_until(Instant::now() + turn_timeout);
        tokio::pin!(deadline);
        loop {
            tokio::select! {
                event = self.session.next_event() => {
                    let Some(ThreadEvent::Notification(notification)) = event else {
                        match event {
                            Some(ThreadEvent::Approval(request, responder)) => self.decide(replies, request, responder),
                            _ => return outcome, // process gone
                        }
                        continue;
                    };
                    match notification {
                        Notification::TurnStarted { turn_id: id } if turn_id.is_none() || turn_id.as_ref() == Some(&id) => {
                            started = true;
                            if std::mem::take(&mut stop_pending) {
                                self.interrupt(Some(&id)).await;
                            }
                            turn_id = Some(id);
                        }
                        Notification::ItemCompleted { turn_id: of, item } if turn_id.as_ref() == Some(&of) => match item {
                            Item::AgentMessage { text } => {
                                streaming.clear();
                                if !text.is_empty() {
                                    outcome.replies.push(text);
                                }
                            }
                            Item::CommandExecution { command, .. } => replies.send(OutboundKind::Progress(format!("running: {command}"))),
                            Item::ContextCompaction => outcome.compacted = true,
                            _ => {}
                        },
                        Notification::AgentMessageDelta { turn_id: of, delta } if turn_id.as_ref() == Some(&of) => {
                            streaming.push_str(&delta);
                            let shown = outcome.replies.iter().map(String::as_str).chain([streaming.as_str()]);
                            replies.send(OutboundKind::Partial(shown.collect::<Vec<_>>().join("\n\n")));
                        }
                        Notification::TokenUsage(usage) => outcome.usage = Some(usage),
                        Notification::Error { message, will_retry: false } => last_error = Some(message),
                        Notification::TurnCompleted { turn_id: of, status, error } if turn_id.as_ref() == Some(&of) => {
                            outcome.end = TurnEnd::Completed { status, error: error.or(last_error) };
                            return outcome;
                        }
                        _ => {}
                    }
                }
                message = self.mailbox.recv(), if self.mailbox_open => match message {
                    Some(message) => if self.while_busy(message).await {
                        if started { self.interrupt(turn_id.as_deref()).await } else { stop_pending = true }
                    },
                    None => self.mailbox_open = false,
                },
                () = deadline::sleep_until(self.approvals.next_deadline()) => {
                    for id in self.approvals.expire(Instant::now()) {
                        info!(chat = %self.chat, id, "approval request timed out; declined");
                        replies.notice("Nobody answered the approval request in time, so it was declined.");
                    }
                }
                changed = abort.changed(), if !aborted => {
                    // An error means the router is gone: nothing will raise it any more.
                    let raised = changed.is_ok() && *abort.borrow();
                    aborted = changed.is_err() || raised;
                    if !raised {
                        continue;
                    }
                    warn!(chat = %self.chat, "shutting down: interrupting the running turn");
                    replies.notice(
                        "The gateway is restarting: this request was interrupted. Send it again \
                         in a minute; the conversation continues where it was.",
                    );
                    if started { self.interrupt(turn_id.as_deref()).await } else { stop_pending = true }
                    deadline.as_mut().reset(Instant::now() + INTERRUPT_GRACE);
                }
                () = &mut deadline => {
                    if outcome.timed_out {
                        outcome.end = TurnEnd::Abandoned;
                        return outcome;
                    }
                    outcome.timed_out = true;
                    warn!(chat = %self.chat, ?turn_timeout, "turn timed out; interrupting");
                    replies.notice(format!(
                        "Codex has worked on this for {} (the turn time limit); interrupting it.",
                        human_duration(turn_timeout)
                    ));
                    if started { self.interrupt(turn_id.as_deref()).await } else { stop_pending = true }
                    deadline.as_mut().reset(Instant::now() + INTERRUPT_GRACE);
                }
            }
        }
    }

    /// A message that arrives while a turn runs. Returns whether it asks to stop the turn.
    async fn while_busy(&mut self, message: ActorMsg) -> bool {
        let inbound = match message {
            ActorMsg::Inbound(inbound) => inbound,
            ActorMsg::Decide { id, decision, done } => {
                let answered = self.approvals.answer(id, decision);
                info!(chat = %self.chat, id, ?decision, answered, "approval decided");
                let _ = done.send(answered);
                return false;
            }
            ActorMsg::Unload => {
                self.queue.push_back(message);
                return false;
            }
        };
        let replies = Replies::to(&inbound);
        match command::parse(&inbound.text) {
            Input::Command(Command::Stop) => {
                info!(chat = %self.chat, "stop requested");
                replies.notice("Stopping...");
                return true;
            }
            Input::Command(Command::Status) => replies.notice(self.status().await),
            Input::Command(Command::Help) => replies.notice(HELP),
            _ => {
                replies.notice("Queued: Codex is still working on the previous message. (/stop interrupts it.)");
                self.queue.push_back(ActorMsg::Inbound(inbound));
            }
        }
        false
    }

    async fn interrupt(&self, turn_id: Option<&str>) {
        let Some(turn_id) = turn_id else { return };
        if let Err(error) = self.session.interrupt(turn_id).await {
            warn!(chat = %self.chat, %error, "turn/interrupt failed");
        }
    }

    /// Asks the chat to approve, when its platform can show the prompt; otherwise the
    /// request is declined and the chat is told what was declined.
    fn decide(
        &mut self,
        replies: &Replies<'_>,
        request: ApprovalRequest,
        responder: ApprovalResponder,
    ) {
        Metrics::count(&self.ctx.metrics.approval_requests);
        if replies.can_approve {
            let id = self
                .approvals
                .add(responder, self.ctx.settings.approval_timeout);
            info!(chat = %self.chat, id, command = ?request.command, "approval requested");
            replies.send(OutboundKind::Approval(ApprovalPrompt { id, request }));
            return;
        }
        let what = request.command.as_deref().unwrap_or("a file change");
        info!(chat = %self.chat, what, "approval request declined: no approver on this platform");
        replies.notice(format!(
            "Codex asked for approval to run `{what}`; this chat cannot approve requests, so it was declined."
        ));
        responder.answer(ApprovalDecision::Decline);
    }

    async fn status(&self) -> String {
        let record = match self.session.record().await {
            Ok(record) => record,
            Err(error) => return format!("Status unavailable: {error}"),
        };
        let thread = match (
            self.session.thread_id(),
            record.as_ref().and_then(|r| r.thread_id.as_deref()),
        ) {
            (Some(live), _) if self.session.is_live() => format!("{live} (live)"),
            (_, Some(stored)) => format!("{stored} (stored; resumed on the next message)"),
            _ => "none yet (the next message starts one)".to_owned(),
        };
        let settings = &self.ctx.settings;
        let mut lines = vec![format!("Thread: {thread}")];
        if let Some(record) = &record {
            lines.push(format!("Turns: {}", record.turns));
            lines.push(match (record.last_tokens, record.context_window) {
                (Some(used), Some(limit)) if limit > 0 => {
                    format!("Context: {used} / {limit} tokens ({}%)", used * 100 / limit)
                }
                (Some(used), _) => format!("Context: {used} tokens"),
                _ => "Context: no usage reported yet".to_owned(),
            });
            if let Some(total) = record.total_tokens {
                lines.push(format!("Tokens used by this thread: {total}"));
            }
            lines.push(format!("Working directory: {}", record.cwd));
        }
        lines.push(format!(
            "Model: {}",
            settings
                .model
                .as_deref()
                .unwrap_or("Codex's configured default")
        ));
        lines.join("\n")
    }

    fn report(&self, replies: &Replies<'_>, error: &SessionError) {
        error!(chat = %self.chat, %error, "request failed");
        self.ctx.metrics.error(error.kind());
        replies.notice(error.user_message());
    }
}

/// "90 seconds", "30 minutes": how long, in the unit a person would say.
fn human_duration(duration: Duration) -> String {
    match duration.as_secs() {
        1 => "1 second".into(),
        secs if secs < 120 => format!("{secs} seconds"),
        secs => format!("{} minutes", secs / 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_naturally() {
        assert_eq!(human_duration(Duration::from_secs(1)), "1 second");
        assert_eq!(human_duration(Duration::from_secs(90)), "90 seconds");
        assert_eq!(human_duration(Duration::from_secs(1800)), "30 minutes");
    }
}
