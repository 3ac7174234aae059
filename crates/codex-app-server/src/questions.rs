//! Codex's questions to a person: the model's (`item/tool/requestUserInput`, its
//! `request_user_input` tool), each with its options and whether a typed answer is
//! taken too; and an MCP server's (`mcpServer/elicitation/request`), its form's fields
//! asked as such questions, or Codex's own "allow this MCP tool?" as Accept / Decline.

use serde::Deserialize;
use serde_json::{Map, Value, json};

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

/// What an MCP elicitation's answers become: `{action, content}`.
#[derive(Debug, Clone, PartialEq)]
pub enum Elicitation {
    /// A yes-or-no request (no fields: Codex asking to run an MCP tool, or a URL to open).
    Consent,
    Form(Vec<FormField>),
}

/// One field of an elicitation's form.
#[derive(Debug, Clone, PartialEq)]
pub struct FormField {
    name: String,
    kind: FieldKind,
    /// A choice's labels and the values they stand for.
    choices: Vec<(String, Value)>,
    required: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FieldKind {
    Text,
    Number,
    Integer,
    Boolean,
    Choice,
    /// Several values (a multi-select): typed, comma-separated.
    List,
}

pub(crate) const ACCEPT: &str = "Accept";
pub(crate) const DECLINE: &str = "Decline";
const YES: &str = "Yes";
const NO: &str = "No";
/// The option that leaves an optional field out.
const SKIP: &str = "Skip";

/// The questions of an `mcpServer/elicitation/request` and how their answers make its
/// result; `None` for any other request.
pub(crate) fn parse_elicitation(
    method: &str,
    params: &Value,
) -> Option<(Vec<UserQuestion>, Elicitation)> {
    if method != "mcpServer/elicitation/request" {
        return None;
    }
    let server = params
        .get("serverName")
        .and_then(Value::as_str)
        .unwrap_or("?");
    let message = params
        .get("message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let header = format!("MCP server {server}");
    let properties = params
        .pointer("/requestedSchema/properties")
        .and_then(Value::as_object);
    let consent = |question: String| {
        let options = [ACCEPT, DECLINE].map(|label| QuestionOption {
            label: label.into(),
            description: String::new(),
        });
        let question = UserQuestion {
            id: "consent".into(),
            header: header.clone(),
            question,
            is_other: false,
            is_secret: false,
            options: options.to_vec(),
        };
        Some((vec![question], Elicitation::Consent))
    };
    if let Some(url) = params.get("url").and_then(Value::as_str) {
        return consent(format!("{message}\nOpen: {url}"));
    }
    let Some(properties) = properties.filter(|p| !p.is_empty()) else {
        return consent(message.to_owned());
    };
    let required: Vec<&str> = params
        .pointer("/requestedSchema/required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut questions = Vec::new();
    let mut fields = Vec::new();
    for (name, schema) in properties {
        let field = form_field(name, schema, required.contains(&name.as_str()));
        questions.push(field_question(&field, schema, message, &header));
        fields.push(field);
    }
    Some((questions, Elicitation::Form(fields)))
}

fn form_field(name: &str, schema: &Value, required: bool) -> FormField {
    let text = |key: &str| schema.get(key).and_then(Value::as_str);
    let listed = |values: &Value| -> Vec<(String, Value)> {
        let Some(values) = values.as_array() else {
            return Vec::new();
        };
        values
            .iter()
            .filter_map(|value| match value {
                Value::String(label) => Some((label.clone(), value.clone())),
                titled => {
                    let constant = titled.get("const")?.clone();
                    let title = titled.get("title").and_then(Value::as_str);
                    let label = title
                        .map(str::to_owned)
                        .unwrap_or_else(|| constant.to_string());
                    Some((label, constant))
                }
            })
            .collect()
    };
    let choices = match (schema.get("enum"), schema.get("oneOf")) {
        (Some(values), _) | (None, Some(values)) => listed(values),
        (None, None) => Vec::new(),
    };
    let kind = match text("type") {
        _ if !choices.is_empty() => FieldKind::Choice,
        Some("boolean") => FieldKind::Boolean,
        Some("number") => FieldKind::Number,
        Some("integer") => FieldKind::Integer,
        Some("array") => FieldKind::List,
        _ => FieldKind::Text,
    };
    FormField {
        name: name.to_owned(),
        kind,
        choices,
        required,
    }
}

fn field_question(field: &FormField, schema: &Value, message: &str, header: &str) -> UserQuestion {
    let title = schema
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(&field.name);
    let mut question = format!("{message}\n{title}");
    if let Some(about) = schema.get("description").and_then(Value::as_str) {
        question.push_str(&format!(" ({about})"));
    }
    let mut labels: Vec<String> = match field.kind {
        FieldKind::Choice => field
            .choices
            .iter()
            .map(|(label, _)| label.clone())
            .collect(),
        FieldKind::Boolean => vec![YES.into(), NO.into()],
        FieldKind::List => {
            question.push_str(": several, separated by commas");
            Vec::new()
        }
        _ => Vec::new(),
    };
    if !field.required {
        labels.push(SKIP.into());
    }
    let typed = matches!(
        field.kind,
        FieldKind::Text | FieldKind::Number | FieldKind::Integer | FieldKind::List
    );
    UserQuestion {
        id: field.name.clone(),
        header: header.to_owned(),
        question,
        is_other: typed,
        is_secret: false,
        options: labels
            .into_iter()
            .map(|label| QuestionOption {
                label,
                description: String::new(),
            })
            .collect(),
    }
}

impl Elicitation {
    /// The elicitation's result from the answers given; one not wholly answered (its
    /// time ran out, its turn ended) is declined.
    pub(crate) fn result(&self, answers: &Answers) -> Value {
        let declined = json!({"action": "decline", "content": null});
        let fields = match self {
            Elicitation::Consent => {
                let accepted = answers.first().is_some_and(|(_, a)| a == ACCEPT);
                return match accepted {
                    true => json!({"action": "accept", "content": {}}),
                    false => declined,
                };
            }
            Elicitation::Form(fields) => fields,
        };
        if answers.len() < fields.len() {
            return declined;
        }
        let mut content = Map::new();
        for (field, (_, answer)) in fields.iter().zip(answers) {
            if !field.required && answer == SKIP {
                continue;
            }
            content.insert(field.name.clone(), field.value_of(answer));
        }
        json!({"action": "accept", "content": content})
    }
}

impl FormField {
    /// An answer as the field's type; one that does not parse is sent as typed, for the
    /// MCP server to refuse with its own words.
    fn value_of(&self, answer: &str) -> Value {
        match self.kind {
            FieldKind::Choice => {
                let chosen = self.choices.iter().find(|(label, _)| label == answer);
                chosen.map_or_else(|| json!(answer), |(_, value)| value.clone())
            }
            FieldKind::Boolean => json!(answer == YES),
            FieldKind::Number => answer
                .parse::<f64>()
                .map_or_else(|_| json!(answer), |n| json!(n)),
            FieldKind::Integer => answer
                .parse::<i64>()
                .map_or_else(|_| json!(answer), |n| json!(n)),
            FieldKind::List => json!(
                answer
                    .split(',')
                    .map(str::trim)
                    .filter(|v| !v.is_empty())
                    .collect::<Vec<_>>()
            ),
            FieldKind::Text => json!(answer),
        }
    }
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

        // As 0.171.0 relays an MCP server's form, and asks itself to run an MCP tool.
        let form = json!({"threadId": "t", "serverName": "deploy", "mode": "form",
            "message": "Where should I deploy?", "requestedSchema": {"type": "object",
            "properties": {"note": {"type": "string", "title": "Note"},
                "region": {"type": "string", "title": "Region", "enum": ["eu-west", "us-east"]},
                "replicas": {"type": "integer"}, "dry_run": {"type": "boolean"}},
            "required": ["region", "replicas"]}});
        let (questions, elicitation) =
            parse_elicitation("mcpServer/elicitation/request", &form).unwrap();
        let labels = |q: &UserQuestion| {
            q.options
                .iter()
                .map(|o| o.label.clone())
                .collect::<Vec<_>>()
        };
        let by_id = |id: &str| questions.iter().find(|q| q.id == id).unwrap();
        assert_eq!(labels(by_id("region")), ["eu-west", "us-east"]);
        assert_eq!(labels(by_id("note")), ["Skip"]);
        assert_eq!(labels(by_id("dry_run")), ["Yes", "No", "Skip"]);
        assert!(by_id("replicas").options.is_empty() && by_id("replicas").is_other);
        let answers: Answers = questions
            .iter()
            .map(|q| {
                let answer = match q.id.as_str() {
                    "region" => "us-east",
                    "replicas" => "3",
                    "dry_run" => "Yes",
                    _ => "Skip",
                };
                (q.id.clone(), answer.to_owned())
            })
            .collect();
        assert_eq!(
            elicitation.result(&answers),
            json!({"action": "accept", "content": {"region": "us-east", "replicas": 3, "dry_run": true}})
        );
        assert_eq!(
            elicitation.result(&answers[..1].to_vec())["action"],
            "decline"
        );
        let consent = json!({"threadId": "t", "serverName": "deploy", "mode": "form",
            "message": "Allow the deploy MCP server to run tool \"ask\"?",
            "requestedSchema": {"type": "object", "properties": {}}});
        let (questions, elicitation) =
            parse_elicitation("mcpServer/elicitation/request", &consent).unwrap();
        assert_eq!(labels(&questions[0]), ["Accept", "Decline"]);
        let accept = vec![("consent".to_owned(), "Accept".to_owned())];
        assert_eq!(
            elicitation.result(&accept),
            json!({"action": "accept", "content": {}})
        );
        assert_eq!(elicitation.result(&Vec::new())["action"], "decline");
        assert_eq!(
            parse("item/tool/requestUserInput", &json!({"questions": []})),
            None
        );
    }
}
