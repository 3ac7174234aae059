//! One task per active chat: runs its turns one at a time and answers commands.
//!
//! While a turn runs, `/stop`, `/status` and `/help` are answered at once; a message for
//! Codex joins the running turn when the chat steers (`steer`); anything else is queued
//! and handled, in order, after the turn ends (never dropped).
//! Each command has its own handler module; following a turn is `follow`.

mod choices;
mod compact;
mod files;
mod follow;
mod jobs;
mod limit;
mod login;
mod message;
mod new;
mod questions;
mod status;
mod steer;
mod threads;
mod unreachable;

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::{Notify, mpsc, oneshot, watch};
use tracing::{error, info, warn};

use super::activity::Activity;
use super::approvals::{Answer, ApprovalBook, PendingApprovals};
use super::command::{self, Command, CommandSpec, Input};
use super::jobs::JobRun;
use super::questions::PendingQuestions;
use super::replies::Replies;
use super::texts;
use crate::session::{Context, Prompt, Session, SessionError, TurnRequest};
use chat::{ApprovalId, ChatKey, Inbound, Ticket};
use chat::{FollowUp, Progress};

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

pub(super) struct Actor {
    chat: ChatKey,
    ctx: Arc<Context>,
    session: Session,
    mailbox: mpsc::UnboundedReceiver<ActorMsg>,
    mailbox_open: bool,
    queue: VecDeque<ActorMsg>,
    approvals: PendingApprovals,
    /// Codex's questions waiting for the chat's answers.
    questions: PendingQuestions,
    /// Messages waiting for the account's usage limit to lift.
    held: limit::Held,
    /// The turn the last message left running on its worker at shutdown.
    handed_over: Option<String>,
    /// The inbox row of the message being served.
    serving: Option<Ticket>,
    /// The served message's answer went out with its ledger: the delivery marks it done.
    delivery_marks_done: bool,
    /// The scheduled job whose run is being served.
    job: Option<jobs::RunningJob>,
    jobs_changed: Arc<Notify>,
    _alive: watch::Sender<()>,
    activity: Arc<Activity>,
    /// Set when the gateway's shutdown grace period is over: stop the turn, drop the queue.
    abort: watch::Receiver<bool>,
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
            handed_over: None,
            serving: None,
            delivery_marks_done: false,
            job: None,
            jobs_changed: parts.jobs_changed,
            _alive: parts.alive,
            activity: parts.activity,
            abort: parts.abort,
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
    /// Codex as it is. Its durable inbox row is marked running, then done; or kept, for
    /// an answer the platform has yet to take, a usage limit's reset, or a turn left on
    /// its worker.
    async fn serve(&mut self, inbound: Inbound, prepared: Option<Prompt>) {
        let ticket = inbound.ticket;
        self.serving = ticket;
        if let Some(ticket) = ticket.filter(|t| t.interrupted) {
            self.resume_interrupted(&inbound, ticket).await;
            if !std::mem::take(&mut self.delivery_marks_done) {
                self.session.inbox_done(ticket).await;
            }
            self.serving = None;
            return;
        }
        let Some(inbound) = self.hold_if_limited(inbound).await else {
            self.serving = None;
            return;
        };
        if let Some(ticket) = ticket {
            self.session.inbox_running(ticket).await;
        }
        self.activity.touch();
        self.activity.set_busy(true);
        match prepared {
            None => self.handle(inbound.clone()).await,
            Some(prompt) => {
                let replies = Replies::to(&inbound);
                self.turn(&replies, TurnRequest::Message(&prompt)).await;
            }
        }
        // A turn the usage limit stopped leaves its message waiting for the reset; one
        // left running on its worker, for the next start to follow.
        let held = self.hold_if_limited(inbound).await.is_none();
        let delivery_marks_done = std::mem::take(&mut self.delivery_marks_done);
        match (ticket, self.handed_over.take()) {
            (Some(ticket), Some(turn_id)) => self.session.inbox_hand_over(ticket, &turn_id).await,
            (Some(ticket), None) if !held && !delivery_marks_done => {
                self.session.inbox_done(ticket).await
            }
            _ => {}
        }
        self.serving = None;
        self.activity.touch();
        self.activity
            .set_busy(!self.queue.is_empty() || !self.held.is_empty());
    }

    /// A message whose handling the last stop cut off: an answer that had not reached
    /// the platform is sent; a turn left running on a worker is followed again; else it
    /// is not run again.
    async fn resume_interrupted(&mut self, inbound: &Inbound, ticket: Ticket) {
        match self.session.undelivered_answer(ticket).await {
            // A piece was on its way: sending it again could show it twice.
            Ok(Some(kept)) if kept.sending => {
                info!(chat = %self.chat, "an answer a crash cut off may have arrived; offering /last");
                self.session.keep_last_answer(&kept.text).await;
                return Replies::to(inbound).offer_last(texts::ANSWER_MAY_HAVE_ARRIVED);
            }
            Ok(Some(kept)) => {
                info!(chat = %self.chat, pieces_taken = kept.pieces_taken, "sending an answer a crash kept from the chat");
                let from_piece = usize::try_from(kept.pieces_taken).unwrap_or(0);
                return self.send_kept(&Replies::to(inbound), ticket, kept.text, from_piece);
            }
            Ok(None) => {}
            Err(error) => warn!(chat = %self.chat, %error, "could not read an undelivered answer"),
        }
        let turn_id = match ticket.handed_over {
            true => self.session.handed_over_turn(ticket).await,
            false => Ok(None),
        };
        match turn_id {
            Ok(Some(turn_id)) => {
                self.activity.set_busy(true);
                self.take_over(&Replies::to(inbound), turn_id).await;
                self.activity
                    .set_busy(!self.queue.is_empty() || !self.held.is_empty());
            }
            Ok(None) => self.tell_cut_short(inbound),
            Err(error) => {
                warn!(chat = %self.chat, %error, "could not read a handed-over turn");
                self.tell_cut_short(inbound);
            }
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
                let kept = inbound.ticket.is_some_and(|t| !t.interrupted);
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
    /// come joins the queue meanwhile.
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
            let Some(wait) = self.next_release() else {
                return self.mailbox.recv().await;
            };
            tokio::select! {
                message = self.mailbox.recv() => return message,
                () = tokio::time::sleep(wait) => {}
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
            // The text is the files' caption, for Codex even when it looks like a command.
            if let Some(prompt) = self.prompt_of(&replies, &inbound).await {
                self.turn(&replies, TurnRequest::Message(&prompt)).await;
            }
            return;
        }
        match command::parse(&inbound.text) {
            Input::Empty => replies.notice(texts::EMPTY_MESSAGE),
            Input::TooLong { bytes } => {
                warn!(chat = %self.chat, bytes, "message too long");
                replies.notice(texts::too_long(bytes));
            }
            Input::UnknownCommand(name) => replies.notice(texts::unknown_command(name)),
            Input::BadArgument(why) => replies.notice(why),
            Input::Command(spec, command) => self.command(&replies, spec, command).await,
            Input::Text(text) => {
                let prompt = Prompt::text(text);
                self.turn(&replies, TurnRequest::Message(&prompt)).await
            }
        }
    }

    /// Runs one command, no turn running. Each arm is a call to its handler.
    async fn command(&mut self, replies: &Replies<'_>, spec: &CommandSpec, command: Command) {
        if spec.admin_only
            && let Some(refusal) = texts::admin_refusal(replies.private, replies.admin)
        {
            return replies.notice(refusal);
        }
        match command {
            Command::Help => replies.notice(command::help()),
            Command::Status => replies.notice(self.status().await),
            Command::Stop => {
                if !self.cancel_held(replies).await {
                    replies.notice(texts::NOTHING_RUNNING)
                }
            }
            Command::New => self.start_over(replies).await,
            Command::Compact => self.compact(replies).await,
            Command::Model(name) => self.model(replies, &name).await,
            Command::Effort(level) => self.effort(replies, &level).await,
            Command::Cwd(dir) => self.cwd(replies, &dir).await,
            Command::Usage => self.usage(replies).await,
            Command::Threads(page) => self.threads(replies, page).await,
            Command::Resume(id) => self.resume(replies, &id).await,
            Command::Login => self.login(replies).await,
            Command::Logout => self.logout(replies).await,
            Command::Review => self.turn(replies, TurnRequest::Review).await,
            Command::Get(path) => self.get(replies, &path).await,
            Command::Steer => self.choose_follow_up(replies, FollowUp::Steer).await,
            Command::Queue => self.choose_follow_up(replies, FollowUp::Queue).await,
            Command::Verbose => self.toggle_progress(replies, Progress::Verbose).await,
            Command::Quiet => self.toggle_progress(replies, Progress::Quiet).await,
            Command::Diff => self.send_diff(replies).await,
            Command::Last => self.send_last_answer(replies).await,
            Command::Answer(reply) => self.answer_question(replies, &reply),
            Command::Mode(mode) => self.mode(replies, &mode).await,
            Command::Fork => self.fork(replies).await,
            Command::Undo => self.undo(replies).await,
            Command::Name(title) => self.name_thread(replies, &title).await,
            Command::Every(schedule) => self.every(replies, &schedule).await,
            Command::At(when) => self.at(replies, &when).await,
            Command::Jobs => self.list_jobs(replies).await,
            Command::Unschedule(Some(target)) => self.unschedule(replies, target).await,
            Command::Unschedule(None) => replies.notice(texts::jobs::UNSCHEDULE_WHICH),
            Command::Continue(text) => {
                let text = if text.is_empty() {
                    texts::CONTINUE
                } else {
                    &text
                };
                let prompt = Prompt::text(text);
                self.turn(replies, TurnRequest::Message(&prompt)).await
            }
        }
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
            true => command::parse(&inbound.text),
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
            Input::Command(_, Command::Stop) => {
                info!(chat = %self.chat, "stop requested");
                replies.notice(texts::STOPPING);
                self.ticket_done(&inbound).await;
                return true;
            }
            Input::Command(spec, command) if spec.during_turn => {
                // Boxed: a command may follow a turn, and this runs inside one (such
                // commands start none, so it goes one level deep).
                Box::pin(self.command(&replies, spec, command)).await;
                true
            }
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
        if let Some(ticket) = inbound.ticket {
            self.session.inbox_done(ticket).await;
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

    fn report(&mut self, replies: &Replies<'_>, error: &SessionError) {
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
        || matches!(
            command::parse(&inbound.text),
            Input::Text(_) | Input::Command(_, Command::Continue(_) | Command::Review)
        )
}
