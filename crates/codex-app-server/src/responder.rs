//! Answers to Codex's requests of a person (approvals, permissions, questions): each
//! is answered once, and one dropped unanswered gets the "nobody said yes" answer, so
//! Codex never waits forever.

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::approvals::ApprovalDecision;
use super::questions::{Answers, Elicitation};

/// Writes the one result of one server request.
#[derive(Debug)]
struct Reply {
    request_id: Value,
    outgoing: mpsc::UnboundedSender<String>,
    /// What is sent if the reply is dropped unsent; `None` once sent (or left).
    unanswered: Option<Value>,
}

impl Reply {
    fn new(request_id: Value, outgoing: mpsc::UnboundedSender<String>, unanswered: Value) -> Self {
        Self {
            request_id,
            outgoing,
            unanswered: Some(unanswered),
        }
    }

    fn send(&mut self, result: Value) {
        self.unanswered = None;
        let line = json!({"id": self.request_id, "result": result});
        let _ = self.outgoing.send(line.to_string());
    }

    fn leave(&mut self) {
        self.unanswered = None;
    }
}

impl Drop for Reply {
    fn drop(&mut self) {
        if let Some(result) = self.unanswered.take() {
            self.send(result);
        }
    }
}

/// Answers one approval request: of a command, a file change, or more permissions.
/// Dropping it unanswered declines.
#[derive(Debug)]
pub struct ApprovalResponder {
    reply: Reply,
    /// For a permissions request: the permissions asked, granted whole on accept.
    asked: Option<Value>,
}

#[cfg(feature = "test-util")]
impl ApprovalResponder {
    /// A command's approval request `request_id`, answered on `outgoing` (for the
    /// gateway's unit tests, which have no app-server).
    pub fn for_tests(request_id: u64, outgoing: mpsc::UnboundedSender<String>) -> Self {
        Self::new(json!(request_id), outgoing, None)
    }
}

impl ApprovalResponder {
    pub(super) fn new(
        request_id: Value,
        outgoing: mpsc::UnboundedSender<String>,
        asked: Option<Value>,
    ) -> Self {
        let declined = approval_result(ApprovalDecision::Decline, asked.as_ref());
        Self {
            reply: Reply::new(request_id, outgoing, declined),
            asked,
        }
    }

    /// Leaves the request unanswered: the gateway stops, and Codex asks it again of the
    /// client that resumes the thread (measured with app-server 0.171.0).
    pub fn leave(mut self) {
        self.reply.leave();
    }

    /// Whether this answers the request `request_id` (as `serverRequest/resolved` names it).
    pub fn is_for(&self, request_id: &Value) -> bool {
        self.reply.request_id == *request_id
    }

    pub fn answer(mut self, decision: ApprovalDecision) {
        let result = approval_result(decision, self.asked.as_ref());
        self.reply.send(result);
    }
}

/// An approval's result: `{decision}`, or for permissions the grant (what was asked, for
/// the turn or the session; nothing when declined).
fn approval_result(decision: ApprovalDecision, asked: Option<&Value>) -> Value {
    let Some(asked) = asked else {
        return json!({"decision": decision});
    };
    match decision {
        ApprovalDecision::Accept => json!({"permissions": asked, "scope": "turn"}),
        ApprovalDecision::AcceptForSession => json!({"permissions": asked, "scope": "session"}),
        ApprovalDecision::Decline | ApprovalDecision::Cancel => {
            json!({"permissions": {}, "scope": "turn"})
        }
    }
}

/// Answers one `item/tool/requestUserInput` (dropping it answers nothing, which the
/// model reads as no answer given) or one MCP elicitation (dropping it declines).
#[derive(Debug)]
pub struct QuestionResponder {
    reply: Reply,
    elicitation: Option<Elicitation>,
}

impl QuestionResponder {
    pub(super) fn new(
        request_id: Value,
        outgoing: mpsc::UnboundedSender<String>,
        elicitation: Option<Elicitation>,
    ) -> Self {
        let nothing = match &elicitation {
            Some(elicitation) => elicitation.result(&Vec::new()),
            None => json!({"answers": {}}),
        };
        Self {
            reply: Reply::new(request_id, outgoing, nothing),
            elicitation,
        }
    }

    /// See [`ApprovalResponder::leave`].
    pub fn leave(mut self) {
        self.reply.leave();
    }

    /// See [`ApprovalResponder::is_for`].
    pub fn is_for(&self, request_id: &Value) -> bool {
        self.reply.request_id == *request_id
    }

    pub fn answer(mut self, answers: &Answers) {
        if let Some(elicitation) = &self.elicitation {
            let result = elicitation.result(answers);
            return self.reply.send(result);
        }
        let answers: serde_json::Map<String, Value> = answers
            .iter()
            .map(|(id, answer)| (id.clone(), json!({"answers": [answer]})))
            .collect();
        self.reply.send(json!({"answers": answers}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(written: &mut mpsc::UnboundedReceiver<String>) -> Value {
        serde_json::from_str(&written.try_recv().unwrap()).unwrap()
    }

    #[test]
    fn each_request_is_answered_in_its_own_shape_and_once() {
        let (outgoing, mut written) = mpsc::unbounded_channel();
        let asked = json!({"network": {"enabled": true}});
        let grant = ApprovalResponder::new(json!(1), outgoing.clone(), Some(asked.clone()));
        grant.answer(ApprovalDecision::AcceptForSession);
        let reply = sent(&mut written);
        assert_eq!(reply["id"], 1);
        assert_eq!(
            reply["result"],
            json!({"permissions": asked, "scope": "session"})
        );

        drop(ApprovalResponder::new(
            json!(2),
            outgoing.clone(),
            Some(asked),
        ));
        assert_eq!(sent(&mut written)["result"]["permissions"], json!({}));
        drop(ApprovalResponder::new(json!(3), outgoing.clone(), None));
        assert_eq!(sent(&mut written)["result"], json!({"decision": "decline"}));

        let question = QuestionResponder::new(json!(4), outgoing.clone(), None);
        question.answer(&vec![("db".to_owned(), "Postgres".to_owned())]);
        let reply = sent(&mut written);
        assert_eq!(
            reply["result"],
            json!({"answers": {"db": {"answers": ["Postgres"]}}})
        );
        drop(QuestionResponder::new(json!(5), outgoing.clone(), None));
        assert_eq!(sent(&mut written)["result"], json!({"answers": {}}));

        ApprovalResponder::new(json!(6), outgoing.clone(), None).leave();
        QuestionResponder::new(json!(7), outgoing, None).leave();
        assert!(
            written.try_recv().is_err(),
            "a left request is not answered"
        );
    }
}
