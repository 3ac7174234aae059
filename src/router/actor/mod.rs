//! One task per active chat: runs its turns one at a time and answers commands.
//!
//! While a turn runs, `/stop`, `/status` and `/help` are answered at once; a message for
//! Codex joins the running turn when the chat steers (`steer`); anything else is queued
//! and handled, in order, after the turn ends (never dropped).
//! Each command has its own handler module; following a turn is `follow`.

mod choices;
mod compact;
mod elsewhere;
mod files;
mod follow;
mod jobs;
mod limit;
mod message;
mod questions;
mod steer;
mod turn_clock;
mod unreachable;

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::time::Instant;
use tracing::{error, info, warn};

use super::activity::Activity;
use super::approvals::{Answer, ApprovalBook, PendingApprovals};
use super::jobs::JobRun;
use super::questions::PendingQuestions;
use super::replies::Replies;
use super::texts;
use crate::commands::{self, Command, Input};
use crate::deadline;
use crate::session::{Context, Prompt, Session, SessionError, TurnRequest};
use chat::{ApprovalId, ChatKey, Inbound, OutboundKind, Stage, Step, Ticket};

pub(super) enum ActorMsg {
    Inbound(Inbound),
    /// A message whose files are already fetched and saved (a steer Codex refused).
    Prepared {
        inbound: Inbound,
        prompt: Prompt,
    },
    /// A person's answer to an approval prompt; `done` learns whether it was still pending.
    Decide {
        id: ApprovalId,
        answer: Answer,
        done: oneshot::Sender<bool>,
    },
    /// A scheduled job's run: its prompt, as if its creator had sent it.
    Job {
        job: JobRun,
        inbound: Inbound,
    },
    Unload,
}

/// What the router hands a new actor.
pub(super) struct ActorParts {
    pub(super) mailbox: mpsc::UnboundedReceiver<ActorMsg>,
    /// Dropped when the actor ends; the router waits on it.
    pub(super) alive: watch::Sender<()>,
    /// Read by the router for LRU and idle unloading.
    pub(super) activity: Arc<Activity>,
    /// Raised when the gateway's shutdown grace period is over.
    pub(super) abort: watch::Receiver<bool>,
    pub(super) approvals: ApprovalBook,
    /// Told when the chat's jobs change, so the job runner reads the next due time.
    pub(super) jobs_changed: Arc<Notify>,
}

/// One chat's actor: its session, and what its turns and commands need.
pub(crate) struct Actor {
    pub(crate) chat: ChatKey,
    pub(crate) ctx: Arc<Context>,
    pub(crate) session: Session,
    mailbox: mpsc::UnboundedReceiver<ActorMsg>,
    mailbox_open: bool,
    queue: VecDeque<ActorMsg>,
    approvals: PendingApprovals,
    /// Codex's questions waiting for the chat's answers.
    questions: PendingQuestions,
    /// Messages waiting for the account's usage limit to lift.
    held: limit::Held,
    /// The inbox row of the message being served, at its stage.
    serving: Option<Ticket>,
    /// The scheduled job whose run is being served.
    job: Option<jobs::RunningJob>,
    pub(crate) jobs_changed: Arc<Notify>,
    _alive: watch::Sender<()>,
    activity: Arc<Activity>,
    /// Set when the gateway's shutdown grace period is over: stop the turn, drop the queue.
    abort: watch::Receiver<bool>,
    /// Whether the chat's platform was told its `/notify` choice since this actor began.
    notify_told: bool,
    /// Where the chat's messages come from, once one came: turns from elsewhere go there.
    place: Option<Inbound>,
}

impl Actor {
    pub(super) fn new(chat: ChatKey, ctx: Arc<Context>, parts: ActorParts) -> Self {
        Self {
            session: Session::new(chat.clone(), ctx.clone()),
            approvals: PendingApprovals::new(chat.clone(), parts.approvals),
            questions: PendingQuestions::new(ctx.settings.approval_timeout),
            chat,
            ctx,
            mailbox: parts.mailbox,
            mailbox_open: true,
            queue: VecDeque::new(),
            held: limit::Held::default(),
            serving: None,
            job: None,
            jobs_changed: parts.jobs_changed,
            _alive: parts.alive,
            activity: parts.activity,
            abort: parts.abort,
            notify_told: false,
            place: None,
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
                ActorMsg::Inbound(inbound) => self.serve(inbound, None).await,
                ActorMsg::Prepared { inbound, prompt } => self.serve(inbound, Some(prompt)).await,
                ActorMsg::Job { job, inbound } => self.run_job(job, inbound).await,
            }
        }
    }

    /// Handles one message, the chat marked busy meanwhile; a prepared prompt goes to
    /// Codex as it is. A message from the durable inbox is taken through its stages: it
    /// runs, and is done once handled, unless it waits on something (its answer's
    /// delivery, a usage limit's reset, or a turn left on its worker at shutdown).
    async fn serve(&mut self, inbound: Inbound, prepared: Option<Prompt>) {
        self.remember_place(&inbound);
        self.tell_notify(&Replies::to(&inbound)).await;
        if inbound.ticket.as_ref().is_some_and(|t| t.stage.was_cut()) {
            self.serving = inbound.ticket.clone();
            self.resume_interrupted(&inbound).await;
            self.settle_served().await;
            return;
        }
        let Some(mut inbound) = self.hold_if_limited(inbound).await else {
            return;
        };
        if let Some(ticket) = inbound.ticket.as_mut() {
            self.ctx.inbox.advance(ticket, Step::Take).await;
        }
        self.serving = inbound.ticket.take();
        self.activity.touch();
        self.activity.set_busy(true);
        match prepared {
            None => self.handle(inbound.clone()).await,
            Some(prompt) => {
                let replies = Replies::to(&inbound);
                self.turn(&replies, TurnRequest::Message(&prompt)).await;
            }
        }
        // A turn the usage limit stopped leaves its message waiting for the reset.
        inbound.ticket = self.serving.take();
        if let Some(inbound) = self.hold_if_limited(inbound).await {
            self.serving = inbound.ticket;
            self.settle_served().await;
        }
        self.activity.touch();
        self.activity
            .set_busy(!self.queue.is_empty() || !self.held.is_empty());
    }

    /// The served message is done, unless its stage waits on something: its answer's
    /// delivery (which finishes it), a usage limit's reset, or, at shutdown, its turn
    /// left on a worker for the next start to follow.
    async fn settle_served(&mut self) {
        let Some(mut ticket) = self.serving.take() else {
            return;
        };
        let stopping = *self.abort.borrow();
        match ticket.stage {
            Stage::Running | Stage::Waiting => {}
            Stage::HandedOver { .. } if !stopping => {}
            _ => return,
        }
        self.ctx.inbox.advance(&mut ticket, Step::Finish).await;
    }

    /// The served message at its next step.
    async fn advance_served(&mut self, step: Step) {
        if let Some(ticket) = self.serving.as_mut() {
            self.ctx.inbox.advance(ticket, step).await;
        }
    }

    /// A message whose handling the last stop cut off: an answer that had not reached
    /// the platform is sent; a turn left running on a worker is followed again; else it
    /// is not run again.
    async fn resume_interrupted(&mut self, inbound: &Inbound) {
        let stage = self.serving.as_ref().map(|t| t.stage.clone());
        let replies = Replies::to(inbound);
        match stage {
            // A piece was on its way: sending it again could show it twice.
            Some(Stage::Answering {
                text,
                sending: true,
                ..
            }) => {
                info!(chat = %self.chat, "an answer a crash cut off may have arrived; offering /last");
                self.session.keep_last_answer(&text).await;
                replies.offer_last(texts::ANSWER_MAY_HAVE_ARRIVED);
                self.advance_served(Step::Finish).await;
            }
            Some(Stage::Answering {
                text, pieces_taken, ..
            }) => {
                info!(chat = %self.chat, pieces_taken, "sending an answer a crash kept from the chat");
                self.send_kept(&replies, text);
            }
            Some(Stage::HandedOver { turn_id }) => {
                self.activity.set_busy(true);
                self.take_over(&replies, turn_id).await;
                self.activity
                    .set_busy(!self.queue.is_empty() || !self.held.is_empty());
            }
            _ => self.tell_cut_short(inbound),
        }
    }

    /// A message whose handling a crash cut off: not run again (its commands may have
    /// had effects); a message for Codex is answered with a Continue button.
    fn tell_cut_short(&self, inbound: &Inbound) {
        let for_codex = for_codex(inbound);
        warn!(chat = %self.chat, for_codex, "a message cut off by a crash is not run again");
        if for_codex {
            Replies::to(inbound).offer_continue(texts::CUT_SHORT);
        }
    }

    /// Shutdown ran out of time: a queued message from the durable inbox waits there for
    /// the next start; any other is told it was not handled.
    fn drop_queue(&mut self) {
        self.mailbox.close();
        while let Ok(message) = self.mailbox.try_recv() {
            self.queue.push_back(message);
        }
        // Held messages in the inbox wait there for their time (they were told when).
        for (_, inbound) in self.held.take_unstored() {
            Replies::to(&inbound).notice(texts::RESTART_DROPPED);
        }
        for message in self.queue.drain(..) {
            if let ActorMsg::Job { job, inbound } = &message {
                Replies::to(inbound).notice(texts::jobs::not_run_at_restart(job.id));
            }
            if let ActorMsg::Inbound(inbound) | ActorMsg::Prepared { inbound, .. } = message {
                let kept = inbound.ticket.as_ref().is_some_and(|t| !t.stage.was_cut());
                let notice = if kept {
                    texts::RESTART_QUEUED
                } else {
                    texts::RESTART_DROPPED
                };
                Replies::to(&inbound).notice(notice);
            }
        }
    }

    /// The next message: queued first, then the mailbox; a held message whose time has
    /// come joins the queue meanwhile, and a turn another client starts on the chat's
    /// thread is followed as it comes.
    async fn next_message(&mut self) -> Option<ActorMsg> {
        loop {
            if *self.abort.borrow() {
                self.drop_queue();
                return None;
            }
            self.release_due();
            if let Some(message) = self.queue.pop_front() {
                return Some(message);
            }
            if !self.mailbox_open {
                return None;
            }
            let release = self.next_release().map(|wait| Instant::now() + wait);
            let watching = self.watches_thread();
            tokio::select! {
                message = self.mailbox.recv() => return message,
                () = deadline::sleep_until(release) => {}
                event = self.session.next_event(), if watching => {
                    if let Some(turn_id) = self.started_elsewhere(event) {
                        self.serve_elsewhere(turn_id).await;
                    }
                }
            }
        }
    }

    async fn handle(&mut self, inbound: Inbound) {
        let replies = Replies::to(&inbound).for_job(self.job_id());
        info!(chat = %self.chat, user = inbound.user, bytes = inbound.text.len(), files = inbound.attachments.len(), "message");
        if !inbound.attachments.is_empty() {
            // The files are saved on the chat's Codex server, which must be up for that.
            if !self.reach_codex(&replies).await {
                return;
            }
            self.begin_task(&replies).await;
            // The text is the files' caption, for Codex even when it looks like a command.
            if let Some(prompt) = self.prompt_of(&replies, &inbound).await {
                self.turn(&replies, TurnRequest::Message(&prompt)).await;
            }
            return;
        }
        match commands::parse(&inbound.text) {
            Input::Command(command) => self.command(&replies, command).await,
            Input::Text(text) => {
                self.begin_task(&replies).await;
                let prompt = Prompt::text(text);
                self.turn(&replies, TurnRequest::Message(&prompt)).await
            }
            refused => {
                self.refuse(&replies, &refused);
            }
        }
    }

    /// Tells the platform the chat's `/notify` choice before the first answer it sends
    /// for this actor (a chat without one stays at the default: nothing to tell).
    async fn tell_notify(&mut self, replies: &Replies<'_>) {
        if self.notify_told || self.session.choices().await.is_err() {
            return;
        }
        self.notify_told = true;
        let notify = self.session.notify();
        if notify != chat::Notify::default() {
            replies.send(OutboundKind::Notify(notify));
        }
    }

    /// Input that can be nothing but refused (empty, too long, an unknown command, a
    /// command's bad argument) is answered at once, during a turn too. Returns whether
    /// it was such input.
    fn refuse(&self, replies: &Replies<'_>, input: &Input<'_>) -> bool {
        match input {
            Input::Empty => replies.notice(texts::EMPTY_MESSAGE),
            Input::TooLong { bytes } => {
                warn!(chat = %self.chat, bytes, "message too long");
                replies.notice(texts::too_long(*bytes));
            }
            Input::UnknownCommand(name) => replies.notice(texts::unknown_command(name)),
            Input::BadArgument(why) => replies.notice(why.clone()),
            Input::Command(_) | Input::Text(_) => return false,
        }
        true
    }

    /// Runs one command (no turn running, or one answered during a turn): an admins'
    /// command is refused to others, and anywhere but a direct message.
    async fn command(&mut self, replies: &Replies<'_>, command: Command) {
        if command.spec().admin_only
            && let Some(refusal) = texts::admin_refusal(replies.private, replies.admin)
        {
            return replies.notice(refusal);
        }
        command.run(self, replies).await
    }

    /// A message that arrives while the turn `turn_id` runs (the id unknown until a
    /// compaction starts). Returns whether it asks to stop the turn.
    async fn while_busy(&mut self, message: ActorMsg, turn_id: Option<&str>) -> bool {
        let inbound = match message {
            ActorMsg::Inbound(inbound) => inbound,
            ActorMsg::Decide { id, answer, done } => {
                let decision = answer.decision;
                let answered = self.approvals.answer(id, answer);
                info!(chat = %self.chat, id = id.seq, ?decision, answered, "approval decided");
                let _ = done.send(answered);
                return false;
            }
            ActorMsg::Job { ref job, .. } if self.job_queued(job.id) => {
                info!(chat = %self.chat, job = job.id, "the job's last run still waits; skipping this one");
                return false;
            }
            ActorMsg::Unload | ActorMsg::Prepared { .. } | ActorMsg::Job { .. } => {
                self.queue.push_back(message);
                return false;
            }
        };
        // With files, the text is their caption, for Codex (as when no turn runs).
        let parsed = match inbound.attachments.is_empty() {
            true => commands::parse(&inbound.text),
            false => Input::Text(&inbound.text),
        };
        // While Codex waits on a question, a plain message is its answer.
        if let Input::Text(text) = parsed
            && inbound.attachments.is_empty()
            && self.questions.current().is_some()
        {
            self.answer_question(&Replies::to(&inbound), text);
            self.ticket_done(&inbound).await;
            return false;
        }
        let for_codex = matches!(parsed, Input::Text(_));
        let replies = Replies::to(&inbound);
        let answered = match parsed {
            Input::Command(Command::Stop(_)) => {
                info!(chat = %self.chat, "stop requested");
                replies.notice(texts::STOPPING);
                self.ticket_done(&inbound).await;
                return true;
            }
            Input::Command(command) if command.spec().during_turn => {
                // Boxed: a command may follow a turn, and this runs inside one (such
                // commands start none, so it goes one level deep).
                Box::pin(self.command(&replies, command)).await;
                true
            }
            ref refused if self.refuse(&replies, refused) => true,
            _ if self.queued_messages() >= self.ctx.settings.max_queued => {
                let limit = self.ctx.settings.max_queued;
                warn!(chat = %self.chat, limit, "queue full; message refused");
                replies.notice(texts::queue_full(limit));
                true
            }
            _ => false,
        };
        match (answered, for_codex) {
            (true, _) => self.ticket_done(&inbound).await,
            (false, true) => self.steer_or_queue(inbound, turn_id).await,
            (false, false) => self.queue_message(inbound, texts::QUEUED),
        }
        false
    }

    /// A message handled without a turn of its own (answered at once, or steered into
    /// the running one) leaves the durable inbox.
    async fn ticket_done(&self, inbound: &Inbound) {
        if let Some(mut ticket) = inbound.ticket.clone() {
            self.ctx.inbox.advance(&mut ticket, Step::Finish).await;
        }
    }

    /// Messages waiting behind the running turn.
    fn queued_messages(&self) -> usize {
        let is_message = |m: &&ActorMsg| {
            matches!(
                m,
                ActorMsg::Inbound(_) | ActorMsg::Prepared { .. } | ActorMsg::Job { .. }
            )
        };
        self.queue.iter().filter(is_message).count()
    }

    pub(crate) fn report(&mut self, replies: &Replies<'_>, error: &SessionError) {
        error!(chat = %self.chat, %error, "request failed");
        self.ctx.metrics.error(error.kind());
        let said = texts::session_error(error);
        self.job_outcome((texts::jobs::result_failed(&said), true));
        replies.notice(said);
    }
}

/// Whether a message asks Codex for a turn (text, files, `/continue`, `/review`).
fn for_codex(inbound: &Inbound) -> bool {
    !inbound.attachments.is_empty()
        || match commands::parse(&inbound.text) {
            Input::Text(_) => true,
            Input::Command(command) => command.spec().starts_turn,
            _ => false,
        }
}
