//! Codex's questions waiting for the chat's answers (`request_user_input`): one
//! question shown at a time, a request answered whole when its last question is, or
//! with the answers given so far when `approval_timeout_secs` passes.

use std::collections::VecDeque;

use tokio::time::{Duration, Instant};

use codex::{Answers, QuestionResponder, UserQuestion};

/// One request: its questions, the answers so far, and when it gives up.
struct Asked {
    questions: Vec<UserQuestion>,
    answers: Answers,
    responder: QuestionResponder,
    /// Set when the request's first question is shown.
    deadline: Option<Instant>,
}

/// The question now shown: which of how many in its request.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Shown<'a> {
    pub question: &'a UserQuestion,
    pub number: usize,
    pub of: usize,
}

/// Why a reply answered nothing.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(super) enum AnswerRefusal {
    #[error("Codex is not waiting for an answer.")]
    NothingAsked,
    #[error("Codex asks for one of its options here: reply with its number or press it.")]
    NotAnOption,
}

/// One chat's requests, answered in the order they came (a sub-agent may ask while
/// another request waits).
#[derive(Default)]
pub(super) struct PendingQuestions {
    waiting: VecDeque<Asked>,
    timeout: Duration,
}

impl PendingQuestions {
    pub(super) fn new(timeout: Duration) -> Self {
        Self {
            waiting: VecDeque::new(),
            timeout,
        }
    }

    /// Holds the request; true when its first question is now the one to show.
    pub(super) fn add(
        &mut self,
        questions: Vec<UserQuestion>,
        responder: QuestionResponder,
    ) -> bool {
        self.waiting.push_back(Asked {
            questions,
            answers: Vec::new(),
            responder,
            deadline: None,
        });
        let first = self.waiting.len() == 1;
        if first {
            self.arm();
        }
        first
    }

    /// The question waiting for the next reply.
    pub(super) fn current(&self) -> Option<Shown<'_>> {
        let asked = self.waiting.front()?;
        let number = asked.answers.len();
        Some(Shown {
            question: asked.questions.get(number)?,
            number: number + 1,
            of: asked.questions.len(),
        })
    }

    /// Takes `reply` as the answer to the current question; a request whose last
    /// question it answers goes to Codex.
    pub(super) fn answer(&mut self, reply: &str) -> Result<(), AnswerRefusal> {
        let current = self.current().ok_or(AnswerRefusal::NothingAsked)?;
        let answer = current
            .question
            .answer_of(reply)
            .ok_or(AnswerRefusal::NotAnOption)?;
        let id = current.question.id.clone();
        let asked = self.waiting.front_mut().expect("a current question");
        asked.answers.push((id, answer));
        if asked.answers.len() == asked.questions.len() {
            self.finish_front();
        }
        Ok(())
    }

    pub(super) fn next_deadline(&self) -> Option<Instant> {
        self.waiting.front()?.deadline
    }

    /// Sends the front request with what it has if its time is up; true if it was.
    pub(super) fn expire(&mut self, now: Instant) -> bool {
        let due = self.next_deadline().is_some_and(|deadline| deadline <= now);
        if due {
            self.finish_front();
        }
        due
    }

    /// Leaves every request unanswered: the turn is handed over at shutdown, and the
    /// next start is asked again.
    pub(super) fn leave(&mut self) {
        for asked in self.waiting.drain(..) {
            asked.responder.leave();
        }
    }

    /// Another client answered the request `request_id` first: it is dropped without a
    /// word to Codex. Whether it was the one shown.
    pub(super) fn resolved_elsewhere(&mut self, request_id: &serde_json::Value) -> Option<bool> {
        let index = self
            .waiting
            .iter()
            .position(|asked| asked.responder.is_for(request_id))?;
        let asked = self.waiting.remove(index)?;
        asked.responder.leave();
        if index == 0 {
            self.arm();
        }
        Some(index == 0)
    }

    /// Drops every request: the turn they belonged to is over (each says nothing came).
    pub(super) fn clear(&mut self) {
        self.waiting.clear();
    }

    fn finish_front(&mut self) {
        if let Some(asked) = self.waiting.pop_front() {
            asked.responder.answer(&asked.answers);
        }
        self.arm();
    }

    /// The front request's clock starts when its first question is shown.
    fn arm(&mut self) {
        let timeout = self.timeout;
        if let Some(asked) = self.waiting.front_mut() {
            asked
                .deadline
                .get_or_insert_with(|| Instant::now() + timeout);
        }
    }
}
