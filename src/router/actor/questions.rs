//! Codex's questions in the chat: each shown with its options as buttons; a press,
//! `/answer`, or (where Codex takes one) any typed message answers it.

use tracing::{debug, info};

use super::Actor;
use crate::commands::ChatCommand;
use crate::commands::answer::Answer;
use crate::router::replies::Replies;
use crate::router::texts;
use codex::{QuestionResponder, UserQuestion};

impl Actor {
    /// Shows the request's first question now, or after those already waiting.
    pub(super) fn ask_questions(
        &mut self,
        replies: &Replies<'_>,
        questions: Vec<UserQuestion>,
        responder: QuestionResponder,
    ) {
        self.ctx.metrics.approval_requests.inc();
        info!(chat = %self.chat, count = questions.len(), "Codex asks the chat");
        if self.questions.add(questions, responder) {
            self.show_question(replies);
        }
    }

    /// Takes `reply` as the answer to the question shown, then shows the next one.
    pub(crate) fn answer_question(&mut self, replies: &Replies<'_>, reply: &str) {
        let secret = self
            .questions
            .current()
            .is_some_and(|q| q.question.is_secret);
        match self.questions.answer(reply) {
            Ok(()) => {
                // An answer may be a secret, and is the person's own words: DEBUG only.
                match secret {
                    true => info!(chat = %self.chat, "question answered (secret)"),
                    false => debug!(chat = %self.chat, reply, "question answered"),
                }
                match self.questions.current() {
                    Some(_) => self.show_question(replies),
                    None => replies.notice(texts::ANSWER_SENT),
                }
            }
            Err(refusal) => replies.notice(refusal.to_string()),
        }
    }

    /// Tells the chat a request's time ran out, then shows the next one waiting.
    pub(super) fn expire_questions(&mut self, replies: &Replies<'_>) {
        if self.questions.expire(tokio::time::Instant::now()) {
            info!(chat = %self.chat, "question timed out; Codex told what was answered");
            replies.notice(texts::QUESTION_EXPIRED);
            if self.questions.current().is_some() {
                self.show_question(replies);
            }
        }
    }

    /// Another client of the thread answered the request `request_id` first: the chat is
    /// told, and the next question waiting is shown.
    pub(super) fn question_answered_elsewhere(
        &mut self,
        replies: &Replies<'_>,
        request_id: &serde_json::Value,
    ) {
        let Some(was_shown) = self.questions.resolved_elsewhere(request_id) else {
            return;
        };
        info!(chat = %self.chat, "question answered by another client");
        replies.notice(texts::QUESTION_ANSWERED_ELSEWHERE);
        if was_shown {
            self.show_question(replies);
        }
    }

    fn show_question(&self, replies: &Replies<'_>) {
        let Some(shown) = self.questions.current() else {
            return;
        };
        let text = texts::question(shown.question, shown.number, shown.of);
        let options = shown.question.options.iter().map(|o| o.label.clone());
        replies.choices(text, &Answer::SPEC, options.collect());
    }
}
