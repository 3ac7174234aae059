//! One chat's delivery: typing, the status message of the running turn, and everything
//! else in the order the router sent it.

use std::collections::HashMap;
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tracing::{debug, error, warn};

use super::{Delivery, Latest, Pace, Sink};
use crate::platform::approvals::ApprovalCard;
use crate::platform::retry::Unsent;
use crate::platform::{choices, texts};
use crate::{deadline, render};
use chat::{AnswerStep, ApprovalId, Ledger, OutboundKind};

/// How long a final answer is tried again after the retry policy gave up on it.
const LATER_WINDOW: Duration = Duration::from_secs(15 * 60);
/// The first pause before such a try; it doubles up to `LATER_MAX_PAUSE`.
const LATER_FIRST_PAUSE: Duration = Duration::from_secs(5);
const LATER_MAX_PAUSE: Duration = Duration::from_secs(60);

/// The running turn's trouble line, edited in place as it changes.
struct TroubleLine<Id> {
    message_id: Id,
    last_edit: Instant,
}

/// The running turn's status on its way to the chat.
enum Stream<Id> {
    /// Not shown yet: the turn may end before `show_at`, and then only its answer is sent.
    Held { text: String, show_at: Instant },
    /// Shown as a draft (Telegram's private chats), sent again at most once per
    /// interval when it changes and at the refresh when it does not.
    Drafted {
        draft_id: i64,
        shown: String,
        last_sent: Instant,
        pending: Option<String>,
    },
    /// Shown in one message, edited at most once per interval.
    Shown {
        message_id: Id,
        shown: String,
        last_edit: Instant,
        /// Newer text, waiting for the edit interval.
        pending: Option<String>,
    },
}

pub(super) struct Worker<S: Sink> {
    sink: S,
    pace: Pace,
    stream: Option<Stream<S::MessageId>>,
    trouble: Option<TroubleLine<S::MessageId>>,
    typing: bool,
    latest: Latest,
    /// The running turn's approval prompts, to close those nobody answered.
    prompts: HashMap<ApprovalId, (S::MessageId, ApprovalCard)>,
}

impl<S: Sink> Worker<S> {
    pub(super) fn new(sink: S, mut pace: Pace, latest: Latest) -> Self {
        pace.edit_interval = pace.edit_interval.max(sink.least_edit_interval());
        Self {
            sink,
            pace,
            stream: None,
            trouble: None,
            typing: false,
            latest,
            prompts: HashMap::new(),
        }
    }

    pub(super) async fn run(mut self, mut tasks: mpsc::UnboundedReceiver<Delivery>) {
        let mut next_typing = Instant::now();
        loop {
            tokio::select! {
                task = tasks.recv() => match task {
                    Some(Delivery::Streamed) => {
                        let text = self.latest.lock().expect("lock").take();
                        if let Some(text) = text {
                            self.handle(OutboundKind::Status(text)).await;
                        }
                    }
                    Some(Delivery::Event(event)) => {
                        if event == OutboundKind::Working(true) {
                            next_typing = Instant::now();
                        }
                        self.handle(event).await;
                    }
                    None => return,
                },
                () = deadline::sleep_until(self.next_flush()) => self.flush().await,
                () = tokio::time::sleep_until(next_typing), if self.typing => {
                    self.sink.typing().await;
                    next_typing = Instant::now() + S::TYPING_RENEWAL;
                }
            }
        }
    }

    /// When the streamed text next needs showing.
    fn next_flush(&self) -> Option<Instant> {
        match self.stream.as_ref()? {
            Stream::Held { show_at, .. } => Some(*show_at),
            Stream::Shown {
                last_edit,
                pending: Some(_),
                ..
            } => Some(*last_edit + self.pace.edit_interval),
            Stream::Shown { .. } => None,
            Stream::Drafted {
                last_sent,
                pending: Some(_),
                ..
            } => Some(*last_sent + self.pace.edit_interval),
            Stream::Drafted { last_sent, .. } => Some(*last_sent + self.sink.draft_refresh()?),
        }
    }

    async fn handle(&mut self, event: OutboundKind) {
        match event {
            OutboundKind::Working(working) => self.typing = working,
            OutboundKind::Notify(notify) => self.sink.set_notify(notify),
            OutboundKind::Status(text) => self.stream_text(text),
            OutboundKind::Reply(text) => self.send_answer(&text, None).await,
            OutboundKind::KeptReply { text, ledger } => {
                self.send_answer(&text, Some(&ledger)).await
            }
            OutboundKind::TurnEnded { summary } => {
                self.trouble = None; // the next turn's trouble is news again
                // The turn closed the prompts nobody answered; a press settled the rest.
                self.prompts.clear();
                self.end_stream(&summary).await
            }
            OutboundKind::Trouble(line) => self.show_trouble(&line).await,
            OutboundKind::Notice(text) => self.sink.notice(&text).await,
            OutboundKind::Answer { slot, text } => self.sink.answer(slot, &text).await,
            OutboundKind::File { name, bytes } => self.sink.send_file(&name, &bytes).await,
            OutboundKind::Choices {
                slot,
                text,
                command,
                options,
            } => {
                let buttons = choices::buttons(command, &options);
                self.sink.offer(slot, &text, &buttons).await
            }
            OutboundKind::Approval(prompt) => {
                let card = ApprovalCard::of(&prompt);
                if let Some(message_id) = self.sink.ask(&card, &prompt).await {
                    self.prompts.insert(prompt.id, (message_id, card));
                }
            }
            OutboundKind::ApprovalClosed { id, end } => {
                if let Some((message_id, card)) = self.prompts.remove(&id) {
                    let line = texts::prompt_closed(end);
                    self.sink.close_prompt(message_id, &card, line).await
                }
            }
            OutboundKind::OpenTask { slot, title } => self.sink.open_task(slot, &title).await,
            OutboundKind::Named(name) => self.sink.rename_task(&name).await,
            OutboundKind::Progress(line) => debug!(line, "progress not shown on chat platforms"),
        }
    }

    /// One message per turn for what keeps it back, edited (at the edit interval) as the
    /// trouble changes: never a stream of messages.
    async fn show_trouble(&mut self, line: &str) {
        match &mut self.trouble {
            None => {
                if let Ok(message_id) = self.sink.send_status(line, false).await {
                    let last_edit = Instant::now();
                    self.trouble = Some(TroubleLine {
                        message_id,
                        last_edit,
                    });
                }
            }
            Some(trouble) => {
                tokio::time::sleep_until(trouble.last_edit + self.pace.edit_interval).await;
                let _ = self.sink.edit_status(trouble.message_id, line, false).await;
                trouble.last_edit = Instant::now();
            }
        }
    }

    fn stream_text(&mut self, text: String) {
        match &mut self.stream {
            None => {
                let show_at = Instant::now() + self.pace.first_flush;
                self.stream = Some(Stream::Held { text, show_at });
            }
            Some(Stream::Held { text: held, .. }) => *held = text,
            Some(Stream::Shown { shown, .. } | Stream::Drafted { shown, .. }) if *shown == text => {
            }
            Some(Stream::Shown { pending, .. } | Stream::Drafted { pending, .. }) => {
                *pending = Some(text)
            }
        }
    }

    /// Shows the streamed text: as a draft where the platform streams drafts, else the
    /// first time as a new message, then as edits.
    async fn flush(&mut self) {
        match self.stream.take() {
            Some(Stream::Held { text, .. }) if self.sink.draft_refresh().is_some() => {
                let draft_id = self.sink.new_draft();
                self.show_draft(draft_id, text).await
            }
            Some(Stream::Drafted {
                draft_id,
                shown,
                pending,
                ..
            }) => self.show_draft(draft_id, pending.unwrap_or(shown)).await,
            Some(Stream::Held { text, .. }) => self.show_status(text).await,
            Some(Stream::Shown {
                message_id,
                pending: Some(text),
                ..
            }) => {
                let text_shown = preview::<S>(&text, "");
                let _ = self.sink.edit_status(message_id, &text_shown, true).await;
                // Counted from the answer, so no two edits ever reach the platform closer
                // together than the interval, however long one request takes.
                self.stream = Some(Stream::Shown {
                    message_id,
                    shown: text,
                    last_edit: Instant::now(),
                    pending: None,
                });
            }
            other => self.stream = other,
        }
    }

    /// Sends the turn's status as a new message with its Stop button.
    async fn show_status(&mut self, text: String) {
        let sent = self.sink.send_status(&preview::<S>(&text, ""), true).await;
        self.stream = sent.ok().map(|message_id| Stream::Shown {
            message_id,
            shown: text,
            last_edit: Instant::now(),
            pending: None,
        });
    }

    /// Sends the turn's status as draft `draft_id`; once the platform refuses drafts, as
    /// a message. A draft that could not be sent now is tried again at the next interval.
    async fn show_draft(&mut self, draft_id: i64, text: String) {
        match self.sink.draft(draft_id, &preview::<S>(&text, "")).await {
            Err(Unsent::Refused) => self.show_status(text).await,
            sent => {
                let (shown, pending) = match sent {
                    Ok(()) => (text, None),
                    Err(_) => (String::new(), Some(text)),
                };
                self.stream = Some(Stream::Drafted {
                    draft_id,
                    shown,
                    last_sent: Instant::now(),
                    pending,
                });
            }
        }
    }

    /// The answer: always new messages, so the phone notifies; a held status or a draft
    /// is dropped (a quick turn is its answer alone; the answer takes the draft's place),
    /// a shown status message stays for its summary. A kept answer starts where its
    /// ledger says and tells it how each piece fares.
    async fn send_answer(&mut self, text: &str, ledger: Option<&Ledger>) {
        if matches!(
            self.stream,
            Some(Stream::Held { .. } | Stream::Drafted { .. })
        ) {
            self.stream = None;
        }
        let note = |step| async move {
            if let Some(ledger) = ledger {
                ledger.note(step).await;
            }
        };
        let pieces = render::split(text, S::LIMIT, S::units, S::FENCES);
        let from = ledger.map_or(0, |ledger| ledger.from_piece);
        for (index, piece) in pieces.iter().enumerate().skip(from) {
            let _ = patiently(|| async {
                note(AnswerStep::Sending(index)).await;
                let sent = self.sink.send_reply(piece).await;
                if sent == Err(Unsent::Unreachable) {
                    note(AnswerStep::NotSent(index)).await;
                }
                sent
            })
            .await;
            if index + 1 < pieces.len() {
                note(AnswerStep::Taken(index + 1)).await;
            }
        }
        note(AnswerStep::Delivered).await;
    }

    /// The turn is over: a shown status becomes its summary line, a held one is dropped,
    /// and the next turn starts a new status message.
    async fn end_stream(&mut self, summary: &str) {
        if let Some(Stream::Shown {
            message_id,
            last_edit,
            ..
        }) = self.stream.take()
        {
            tokio::time::sleep_until(last_edit + self.pace.edit_interval).await;
            let summary = preview::<S>(summary, "");
            let _ = patiently(|| self.sink.edit_status(message_id, &summary, false)).await;
        }
    }
}

/// Runs a final answer's send or edit until it goes through or is refused. An outage that
/// outlasts the retry policy is waited out (for up to `LATER_WINDOW`), so the answer
/// arrives once when the platform is back; the chat's later tasks wait behind it, in order.
async fn patiently<T, F>(attempt: impl Fn() -> F) -> Result<T, Unsent>
where
    F: Future<Output = Result<T, Unsent>>,
{
    let give_up = Instant::now() + LATER_WINDOW;
    let mut pause = LATER_FIRST_PAUSE;
    loop {
        match attempt().await {
            Err(Unsent::Unreachable) if Instant::now() + pause < give_up => {
                warn!(
                    ?pause,
                    "a final answer could not be delivered yet; trying again"
                );
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(LATER_MAX_PAUSE);
            }
            Err(Unsent::Unreachable) => {
                error!(
                    ?LATER_WINDOW,
                    "a final answer could not be delivered in time; dropped"
                );
                return Err(Unsent::Unreachable);
            }
            outcome => return outcome,
        }
    }
}

/// A streamed text as it fits one message, with `suffix` after it.
fn preview<S: Sink>(text: &str, suffix: &str) -> String {
    let room = S::LIMIT - 2 - S::units(suffix);
    let first = render::split(text, room, S::units, S::FENCES)
        .into_iter()
        .next()
        .unwrap_or_default();
    let cut = if first.len() < text.trim_end().len() {
        " …"
    } else {
        ""
    };
    format!("{first}{cut}{suffix}")
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;

    /// `patiently` over a call that fails with `failures` in order, then succeeds: the
    /// outcome, the tries and the time they took.
    async fn run(failures: &[Unsent]) -> (Result<usize, Unsent>, usize, Duration) {
        let tries = Mutex::new(0);
        let started = Instant::now();
        let outcome = patiently(|| {
            let mut tries = tries.lock().unwrap();
            *tries += 1;
            let outcome = failures.get(*tries - 1).map_or(Ok(*tries), |f| Err(*f));
            std::future::ready(outcome)
        })
        .await;
        (outcome, tries.into_inner().unwrap(), started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn an_outage_is_waited_out_and_a_refusal_is_not() {
        let secs = Duration::from_secs;
        assert_eq!(run(&[]).await, (Ok(1), 1, secs(0)));
        assert_eq!(
            run(&[Unsent::Unreachable; 3]).await,
            (Ok(4), 4, secs(5 + 10 + 20))
        );
        assert_eq!(
            run(&[Unsent::Unreachable, Unsent::Refused]).await,
            (Err(Unsent::Refused), 2, secs(5))
        );
        // Pauses of 5, 10, 20, 40 s, then a minute each, until 15 minutes are used up.
        let (outcome, tries, took) = run(&[Unsent::Unreachable; 100]).await;
        assert_eq!(outcome, Err(Unsent::Unreachable));
        assert_eq!((tries, took), (18, secs(75 + 13 * 60)));
    }

    /// A chat that takes messages of at most 10 bytes and answers each reply as `outcomes`
    /// says, in order (then takes them). With `drafting` the running turn streams as a
    /// draft, unless `refuse_drafts` refuses them as an older Bot API server does. What
    /// it took and showed is kept.
    #[derive(Default)]
    struct ScriptedChat {
        outcomes: Mutex<Vec<Unsent>>,
        taken: Arc<Mutex<Vec<String>>>,
        drafting: bool,
        refuse_drafts: bool,
        refused: std::sync::atomic::AtomicBool,
        drafts: Mutex<Vec<(i64, String)>>,
        statuses: Mutex<Vec<String>>,
    }

    impl Sink for ScriptedChat {
        type MessageId = ();
        const LIMIT: usize = 10;
        const TYPING_RENEWAL: Duration = Duration::from_secs(5);

        fn units(text: &str) -> usize {
            text.len()
        }

        fn draft_refresh(&self) -> Option<Duration> {
            let refused = self.refused.load(std::sync::atomic::Ordering::SeqCst);
            (self.drafting && !refused).then_some(Duration::from_secs(20))
        }

        fn new_draft(&self) -> i64 {
            7
        }

        async fn draft(&self, id: i64, text: &str) -> Result<(), Unsent> {
            if self.refuse_drafts {
                let refused = &self.refused;
                refused.store(true, std::sync::atomic::Ordering::SeqCst);
                return Err(Unsent::Refused);
            }
            self.drafts.lock().unwrap().push((id, text.to_owned()));
            Ok(())
        }

        async fn send(&self, _text: &str) -> Result<(), Unsent> {
            Ok(())
        }

        async fn send_reply(&self, markdown: &str) -> Result<(), Unsent> {
            let mut outcomes = self.outcomes.lock().unwrap();
            if !outcomes.is_empty() {
                return Err(outcomes.remove(0));
            }
            self.taken.lock().unwrap().push(markdown.to_owned());
            Ok(())
        }

        async fn send_status(&self, text: &str, _stop: bool) -> Result<(), Unsent> {
            self.statuses.lock().unwrap().push(text.to_owned());
            Ok(())
        }

        async fn edit_status(&self, _id: (), text: &str, _stop: bool) -> Result<(), Unsent> {
            self.statuses.lock().unwrap().push(text.to_owned());
            Ok(())
        }

        async fn edit(&self, _id: (), _text: &str) -> Result<(), Unsent> {
            Ok(())
        }

        async fn edit_reply(&self, _id: (), _markdown: &str) -> Result<(), Unsent> {
            Ok(())
        }

        async fn typing(&self) {}

        async fn ask(&self, _card: &ApprovalCard, _prompt: &chat::ApprovalPrompt) -> Option<()> {
            None
        }

        async fn close_prompt(&self, _id: (), _card: &ApprovalCard, _line: &str) {}
    }

    /// A kept answer's pieces as the chat took them, and the steps its ledger was told.
    async fn deliver_kept(
        text: &str,
        from_piece: usize,
        outcomes: Vec<Unsent>,
    ) -> (Vec<String>, Vec<AnswerStep>) {
        let taken = Arc::new(Mutex::new(Vec::new()));
        let chat = ScriptedChat {
            outcomes: Mutex::new(outcomes),
            taken: taken.clone(),
            ..ScriptedChat::default()
        };
        let steps = Arc::new(Mutex::new(Vec::new()));
        let noted = steps.clone();
        let ledger = Ledger::new(from_piece, move |step| {
            noted.lock().unwrap().push(step);
            std::future::ready(())
        });
        let mut worker = Worker::new(chat, Pace::from_millis(1000, 1000), Latest::default());
        worker.send_answer(text, Some(&ledger)).await;
        let taken = taken.lock().unwrap().clone();
        let steps = steps.lock().unwrap().clone();
        (taken, steps)
    }

    #[tokio::test(start_paused = true)]
    async fn a_kept_answer_tells_its_ledger_each_piece_and_resumes_where_it_stood() {
        use AnswerStep::*;
        let text = "aaaa bbbb\ncccc dddd\neeee";
        let (taken, steps) = deliver_kept(text, 0, vec![]).await;
        assert_eq!(taken, ["aaaa bbbb", "cccc dddd", "eeee"]);
        let whole = [
            Sending(0),
            Taken(1),
            Sending(1),
            Taken(2),
            Sending(2),
            Delivered,
        ];
        assert_eq!(steps, whole);

        // After a restart that found two pieces taken: only the third goes out.
        let (taken, steps) = deliver_kept(text, 2, vec![]).await;
        assert_eq!(taken, ["eeee"]);
        assert_eq!(steps, [Sending(2), Delivered]);

        // An outage: the piece is noted as not sent (a restart sends it), then tried again;
        // a refusal settles it (nothing to send again).
        let outcomes = vec![Unsent::Unreachable, Unsent::Refused];
        let (taken, steps) = deliver_kept(text, 1, outcomes).await;
        assert_eq!(taken, ["eeee"]);
        let expected = [
            Sending(1),
            NotSent(1),
            Sending(1),
            Taken(2),
            Sending(2),
            Delivered,
        ];
        assert_eq!(steps, expected);
    }

    #[tokio::test(start_paused = true)]
    async fn a_draft_is_refreshed_before_it_lapses_and_ends_with_the_answer() {
        let pace = Pace::from_millis(1000, 1000);
        let chat = ScriptedChat {
            drafting: true,
            ..ScriptedChat::default()
        };
        let mut worker = Worker::new(chat, pace, Latest::default());
        let shown = |worker: &Worker<ScriptedChat>| worker.sink.drafts.lock().unwrap().clone();
        worker.stream_text("w 1 s".into());
        tokio::time::advance(Duration::from_secs(1)).await;
        worker.flush().await;
        assert_eq!(shown(&worker), [(7, "w 1 s".to_owned())]);
        // Nothing new: sent again at the refresh, not before.
        let sent = Instant::now();
        assert_eq!(worker.next_flush(), Some(sent + Duration::from_secs(20)));
        tokio::time::advance(Duration::from_secs(20)).await;
        worker.flush().await;
        assert_eq!(shown(&worker).len(), 2);
        assert_eq!(shown(&worker)[1], (7, "w 1 s".to_owned()));
        // New text: at the edit interval.
        worker.stream_text("w 21 s".into());
        assert_eq!(
            worker.next_flush(),
            Some(Instant::now() + Duration::from_secs(1))
        );
        tokio::time::advance(Duration::from_secs(1)).await;
        worker.flush().await;
        assert_eq!(shown(&worker)[2], (7, "w 21 s".to_owned()));
        // The answer takes the draft's place: nothing is drafted after it.
        worker.send_answer("done", None).await;
        assert_eq!(worker.next_flush(), None);
        assert!(worker.sink.statuses.lock().unwrap().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_refused_draft_becomes_a_status_message() {
        let chat = ScriptedChat {
            drafting: true,
            refuse_drafts: true,
            ..ScriptedChat::default()
        };
        let mut worker = Worker::new(chat, Pace::from_millis(1000, 1000), Latest::default());
        worker.stream_text("w 1 s".into());
        tokio::time::advance(Duration::from_secs(1)).await;
        worker.flush().await;
        worker.stream_text("w 2 s".into());
        tokio::time::advance(Duration::from_secs(1)).await;
        worker.flush().await;
        let statuses = worker.sink.statuses.lock().unwrap().clone();
        assert_eq!(statuses, ["w 1 s", "w 2 s"], "sent, then edited");
        assert!(worker.sink.drafts.lock().unwrap().is_empty());
    }
}
