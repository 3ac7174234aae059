//! The one rule for a turn's answer, used live (as items complete) and when a turn is read
//! back from the thread's history: its `final_answer` messages; else its last message
//! without a phase (older models send none); else its last commentary. A review's
//! findings are a final answer (they come as the review's result and again as a message).

use super::protocol::{Item, Phase};

/// A turn's answer, gathered from its completed items in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnAnswer {
    messages: Vec<(String, Phase)>,
}

impl TurnAnswer {
    /// Notes a completed item; anything but an agent message or a review is passed over.
    pub fn take(&mut self, item: &Item) {
        match item {
            Item::AgentMessage { text, phase } if !text.is_empty() => {
                self.messages.push((text.clone(), *phase))
            }
            Item::Review { text } if !text.is_empty() => {
                let repeated = self.messages.last().is_some_and(|(last, _)| last == text);
                if !repeated {
                    self.messages.push((text.clone(), Phase::FinalAnswer));
                }
            }
            _ => {}
        }
    }

    /// The answer, or `None` when the turn wrote no message.
    pub fn text(&self) -> Option<String> {
        let of = |phase: Phase| self.messages.iter().filter(move |(_, p)| *p == phase);
        let finals: Vec<&str> = of(Phase::FinalAnswer).map(|(t, _)| t.as_str()).collect();
        if !finals.is_empty() {
            return Some(finals.join("\n\n"));
        }
        let last = of(Phase::Unknown)
            .next_back()
            .or(of(Phase::Commentary).next_back());
        last.map(|(text, _)| text.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(items: &[Item]) -> Option<String> {
        let mut answer = TurnAnswer::default();
        items.iter().for_each(|item| answer.take(item));
        answer.text()
    }

    fn message(text: &str, phase: Phase) -> Item {
        Item::AgentMessage {
            text: text.into(),
            phase,
        }
    }

    #[test]
    fn the_answer_is_the_final_messages_else_the_last_plain_one_else_commentary() {
        use Phase::*;
        let command = Item::CommandExecution {
            command: "ls".into(),
            exit_code: Some(0),
        };
        let cases: &[(&[Item], Option<&str>)] = &[
            (&[], None),
            (
                &[
                    message("Looking.", Commentary),
                    command.clone(),
                    message("Done.", FinalAnswer),
                ],
                Some("Done."),
            ),
            (
                &[message("One.", FinalAnswer), message("Two.", FinalAnswer)],
                Some("One.\n\nTwo."),
            ),
            (
                &[message("First.", Unknown), message("Last.", Unknown)],
                Some("Last."),
            ),
            // A plain message is preferred to later commentary.
            (
                &[message("Plain.", Unknown), message("Aside.", Commentary)],
                Some("Plain."),
            ),
            (
                &[message("Only narration.", Commentary), command],
                Some("Only narration."),
            ),
            (&[message("", FinalAnswer)], None),
        ];
        for (items, expected) in cases {
            assert_eq!(answer(items).as_deref(), *expected, "{items:?}");
        }
    }

    #[test]
    fn a_reviews_findings_are_its_answer_once() {
        let findings = "No issues found.";
        let items = [
            Item::Review {
                text: findings.into(),
            },
            message(findings, Phase::Unknown),
        ];
        assert_eq!(answer(&items[..1]).as_deref(), Some(findings));
        let mut answer = TurnAnswer::default();
        answer.take(&items[0]);
        answer.take(&Item::Review {
            text: findings.into(),
        });
        assert_eq!(answer.text().as_deref(), Some(findings), "not repeated");
    }
}
