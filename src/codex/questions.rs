//! Codex's questions to a person (`item/tool/requestUserInput`, the model's
//! `request_user_input` tool): each with its options, and whether a typed answer is
//! taken too.

use serde::Deserialize;
use serde_json::Value;

/// One question of a request, as app-server 0.171.0 sends it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UserQuestion {
    pub id: String,
    #[serde(default)]
    pub header: String,
    pub question: String,
    /// Codex sets it: the client offers "Other", a typed answer, besides the options.
    #[serde(default)]
    pub is_other: bool,
    /// The answer is a secret: it is not echoed back into the chat.
    #[serde(default)]
    pub is_secret: bool,
    #[serde(default, deserialize_with = "null_as_empty")]
    pub options: Vec<QuestionOption>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default)]
    pub description: String,
}

/// The answers given so far, by question id.
pub type Answers = Vec<(String, String)>;

fn null_as_empty<'de, D>(deserializer: D) -> Result<Vec<QuestionOption>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Ok(Option::<Vec<QuestionOption>>::deserialize(deserializer)?.unwrap_or_default())
}

/// The questions of an `item/tool/requestUserInput` request; `None` for any other
/// request, or one without a question.
pub(crate) fn parse(method: &str, params: &Value) -> Option<Vec<UserQuestion>> {
    if method != "item/tool/requestUserInput" {
        return None;
    }
    let questions = params.get("questions")?.clone();
    let questions: Vec<UserQuestion> = serde_json::from_value(questions).ok()?;
    (!questions.is_empty()).then_some(questions)
}

impl UserQuestion {
    /// What a reply to this question answers: an option by its number or its label, else
    /// (when Codex takes one) the text typed; `None` when it must be one of the options.
    pub fn answer_of(&self, reply: &str) -> Option<String> {
        let reply = reply.trim();
        let by_number = reply
            .parse::<usize>()
            .ok()
            .and_then(|n| n.checked_sub(1))
            .and_then(|i| self.options.get(i));
        let by_label = || {
            let options = self.options.iter();
            options.clone().find(|o| o.label == reply).or_else(|| {
                let mut options = options;
                options.find(|o| o.label.eq_ignore_ascii_case(reply))
            })
        };
        if let Some(option) = by_number.or_else(by_label) {
            return Some(option.label.clone());
        }
        let typed = self.is_other || self.options.is_empty();
        (typed && !reply.is_empty()).then(|| reply.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn questions_parse_as_codex_sends_them_and_replies_pick_options() {
        let params = json!({"threadId": "t", "turnId": "u", "itemId": "call1", "isBlocking": false,
            "questions": [{"id": "db", "header": "Database", "question": "Which database?",
                "isOther": true, "isSecret": false, "options": [
                    {"label": "SQLite (Recommended)", "description": "one file"},
                    {"label": "Postgres", "description": "a server"}]},
                {"id": "name", "header": "Name", "question": "Its name?", "options": null}]});
        let questions = parse("item/tool/requestUserInput", &params).unwrap();
        assert_eq!(questions.len(), 2);
        let db = &questions[0];
        assert_eq!(db.answer_of("2").as_deref(), Some("Postgres"));
        assert_eq!(db.answer_of(" postgres ").as_deref(), Some("Postgres"));
        assert_eq!(
            db.answer_of("MySQL, please").as_deref(),
            Some("MySQL, please")
        );
        assert_eq!(
            db.answer_of("9").as_deref(),
            Some("9"),
            "no option 9: typed"
        );
        let only_options = UserQuestion {
            is_other: false,
            ..db.clone()
        };
        assert_eq!(only_options.answer_of("MySQL"), None);
        assert_eq!(questions[1].answer_of("box").as_deref(), Some("box"));
        assert_eq!(questions[1].answer_of("  "), None);
        assert_eq!(parse("item/tool/call", &params), None);
        assert_eq!(
            parse("item/tool/requestUserInput", &json!({"questions": []})),
            None
        );
    }
}
