//! A message's life in the durable inbox, from accepted to done: one stage type and the
//! steps between stages. Pure and table-tested; the gateway's `inbox` module takes
//! messages through these steps and keeps each stage in SQLite.

use crate::AnswerStep;

/// A message's row in the durable inbox, and the stage it is at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ticket {
    pub id: i64,
    pub stage: Stage,
}

impl Ticket {
    /// A message just stored.
    pub fn accepted(id: i64) -> Self {
        Self {
            id,
            stage: Stage::Waiting,
        }
    }
}

/// Where a message stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stage {
    /// Accepted; its chat has not taken it yet.
    Waiting,
    /// Held back by the account's usage limit: it runs no earlier than `until` (unix
    /// seconds), after a restart too.
    Held { until: i64 },
    /// Its chat handles it: from now on a crash cuts it (its commands may have had
    /// effects, so it is never run again by itself).
    Running,
    /// Its turn goes on on a remote worker while the gateway is away.
    HandedOver { turn_id: String },
    /// Its answer is kept until the platform has taken every piece: the pieces taken so
    /// far, and whether the next one was on its way (it may have arrived).
    Answering {
        text: String,
        pieces_taken: usize,
        sending: bool,
    },
    /// Handled, or told why not: never again.
    Done,
}

/// What happens to a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Its chat begins to handle it.
    Take,
    /// The usage limit holds it until then.
    Hold { until: i64 },
    /// The gateway stops while its turn runs on a worker.
    HandOver { turn_id: String },
    /// Its turn ended with this answer, to be delivered.
    Answer(String),
    /// How the answer's delivery fares.
    Deliver(AnswerStep),
    /// Handled without an answer to keep (answered at once, steered, told it was cut
    /// short, cancelled, or no longer for the bot).
    Finish,
}

impl Stage {
    /// The stage `step` leads to, or `None` when it does not apply at this stage.
    pub fn after(&self, step: Step) -> Option<Stage> {
        use Stage::*;
        let next = match (self, step) {
            (Done, _) => return None,
            (_, Step::Finish) => Done,
            (Waiting | Held { .. }, Step::Take) => Running,
            (Waiting | Held { .. } | Running | HandedOver { .. }, Step::Hold { until }) => {
                Held { until }
            }
            (Running | HandedOver { .. }, Step::HandOver { turn_id }) => HandedOver { turn_id },
            (Running | HandedOver { .. }, Step::Answer(text)) => Answering {
                text,
                pieces_taken: 0,
                sending: false,
            },
            (Answering { text, .. }, Step::Deliver(step)) => match step {
                AnswerStep::Delivered => Done,
                AnswerStep::Sending(piece) => Answering {
                    text: text.clone(),
                    pieces_taken: piece,
                    sending: true,
                },
                AnswerStep::NotSent(piece) | AnswerStep::Taken(piece) => Answering {
                    text: text.clone(),
                    pieces_taken: piece,
                    sending: false,
                },
            },
            _ => return None,
        };
        Some(next)
    }

    /// Its handling had begun when the gateway last went away.
    pub fn was_cut(&self) -> bool {
        matches!(
            self,
            Stage::Running | Stage::HandedOver { .. } | Stage::Answering { .. }
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answering(pieces_taken: usize, sending: bool) -> Stage {
        Stage::Answering {
            text: "a".into(),
            pieces_taken,
            sending,
        }
    }

    #[test]
    fn every_step_from_every_stage() {
        use Stage::*;
        let held = Held { until: 9 };
        let handed = HandedOver {
            turn_id: "t".into(),
        };
        let hold = Step::Hold { until: 9 };
        let hand_over = Step::HandOver {
            turn_id: "t".into(),
        };
        let answer = Step::Answer("a".into());
        let deliver = |step| Step::Deliver(step);
        let cases: Vec<(Stage, Step, Option<Stage>)> = vec![
            (Waiting, Step::Take, Some(Running)),
            (Waiting, hold.clone(), Some(held.clone())),
            (Waiting, Step::Finish, Some(Done)),
            (Waiting, answer.clone(), None),
            (Waiting, hand_over.clone(), None),
            (held.clone(), Step::Take, Some(Running)),
            (
                held.clone(),
                Step::Hold { until: 20 },
                Some(Held { until: 20 }),
            ),
            (held.clone(), Step::Finish, Some(Done)),
            (held.clone(), answer.clone(), None),
            (Running, hold.clone(), Some(held.clone())),
            (Running, hand_over.clone(), Some(handed.clone())),
            (Running, answer.clone(), Some(answering(0, false))),
            (Running, Step::Finish, Some(Done)),
            (Running, Step::Take, None),
            (handed.clone(), answer.clone(), Some(answering(0, false))),
            (handed.clone(), hand_over.clone(), Some(handed.clone())),
            (handed.clone(), hold, Some(held)),
            (handed.clone(), Step::Finish, Some(Done)),
            (handed, Step::Take, None),
            (
                answering(0, false),
                deliver(AnswerStep::Sending(0)),
                Some(answering(0, true)),
            ),
            (
                answering(0, true),
                deliver(AnswerStep::NotSent(0)),
                Some(answering(0, false)),
            ),
            (
                answering(0, true),
                deliver(AnswerStep::Taken(1)),
                Some(answering(1, false)),
            ),
            (
                answering(2, true),
                deliver(AnswerStep::Delivered),
                Some(Done),
            ),
            (answering(1, true), Step::Finish, Some(Done)),
            (answering(0, false), answer, None),
            (answering(0, false), Step::Take, None),
            (Done, Step::Finish, None),
            (Done, Step::Take, None),
            (Done, deliver(AnswerStep::Delivered), None),
        ];
        for (stage, step, expected) in cases {
            let shown = format!("{stage:?} + {step:?}");
            assert_eq!(stage.after(step), expected, "{shown}");
        }
    }

    #[test]
    fn a_message_was_cut_once_its_handling_began() {
        assert!(!Stage::Waiting.was_cut());
        assert!(!Stage::Held { until: 1 }.was_cut());
        assert!(Stage::Running.was_cut());
        assert!(answering(0, false).was_cut());
        assert!(!Stage::Done.was_cut());
    }
}
