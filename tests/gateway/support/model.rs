//! A fake model server: the Responses API over SSE on 127.0.0.1, scripted per test,
//! recording every request codex makes.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};

/// One request codex sent to the model.
#[derive(Debug, Clone)]
pub struct ModelRequest {
    pub body: Value,
    pub headers: HashMap<String, String>,
    /// When the fake had read the whole request.
    pub received: Instant,
    /// When the fake had sent its whole answer.
    answered: Arc<Mutex<Option<Instant>>>,
}

impl ModelRequest {
    /// When the fake finished answering this request (its last event sent).
    pub fn answered_at(&self) -> Option<Instant> {
        *self.answered.lock().unwrap()
    }

    fn input(&self) -> &[Value] {
        self.body["input"].as_array().map_or(&[], Vec::as_slice)
    }

    /// Texts of the `role: user` messages written by the human (not Codex's own context).
    pub fn human_texts(&self) -> Vec<String> {
        self.input()
            .iter()
            .filter(|item| item["role"] == "user")
            .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
            .filter_map(|part| part["text"].as_str().map(str::to_owned))
            .filter(|text| !text.trim_start().starts_with('<'))
            .collect()
    }

    pub fn last_human_text(&self) -> String {
        self.human_texts().pop().unwrap_or_default()
    }

    /// Outputs of earlier tool calls that this request carries.
    pub fn tool_outputs(&self) -> Vec<String> {
        self.input()
            .iter()
            .filter(|item| item["type"] == "function_call_output")
            .map(|item| match &item["output"] {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            })
            .collect()
    }

    /// Whether it asks for a turn's first round (not a round after a tool call).
    pub fn starts_turn(&self) -> bool {
        !self.ends_with_tool_output()
    }

    pub fn ends_with_tool_output(&self) -> bool {
        self.input()
            .last()
            .is_some_and(|item| item["type"] == "function_call_output")
    }

    /// A compaction request (codex asks for a summary of the thread).
    pub fn is_compaction(&self) -> bool {
        self.headers
            .get("x-codex-turn-metadata")
            .is_some_and(|meta| meta.contains("compaction"))
    }

    /// The Codex thread the request belongs to (codex reports it in `client_metadata`).
    pub fn thread_id(&self) -> Option<String> {
        self.body["client_metadata"]["thread_id"]
            .as_str()
            .map(str::to_owned)
    }

    /// The whole request as text, for "does the model see X" checks.
    pub fn text(&self) -> String {
        self.body.to_string()
    }
}

/// How the fake answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    Text(String),
    /// An `exec_command` tool call running this shell command.
    Exec(String),
    /// The text in `chunks` pieces, `delay` apart.
    Slow {
        text: String,
        chunks: usize,
        delay: Duration,
    },
    /// A call of another of Codex's tools (`request_user_input`, `request_permissions`)
    /// with these arguments.
    Call {
        name: &'static str,
        arguments: Value,
    },
    /// An HTTP error status.
    Fail(u16),
    /// A model the provider does not serve, as OpenAI-compatible servers refuse it: 404
    /// `model_not_found`.
    NoSuchModel,
    /// The account's usage limit, as ChatGPT's backend answers: 429 with
    /// `usage_limit_reached` resetting in `resets_in`, and (with `headers`) the rate-limit
    /// headers saying the 5-hour window is at 100 %. Without them the reset is only in
    /// the body (`resets_at`), as Codex's own tests send it.
    UsageLimit {
        resets_in: Duration,
        headers: bool,
    },
    /// Several output items in one response, as a real model's round: commentary,
    /// then the tool calls that follow it.
    Round(Vec<Output>),
}

/// One output item of a `Reply::Round`.
#[derive(Debug, Clone)]
pub enum Output {
    /// An assistant message; `phase` is `commentary` or `final_answer` (none: an older model).
    Message {
        text: String,
        phase: Option<&'static str>,
    },
    /// An `exec_command` call (a file change is `apply_patch` through it, as Codex
    /// 0.171 runs it for models without the freeform tool).
    Exec(String),
}

pub type Brain = Arc<dyn Fn(&ModelRequest) -> Reply + Send + Sync>;

#[derive(Clone)]
struct Shared {
    brain: Brain,
    log: Arc<Mutex<Vec<ModelRequest>>>,
    input_tokens: Arc<AtomicI64>,
}

pub struct FakeModel {
    /// `base_url` for codex's model provider.
    pub base_url: String,
    log: Arc<Mutex<Vec<ModelRequest>>>,
    input_tokens: Arc<AtomicI64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FakeModel {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FakeModel {
    pub async fn start(brain: Brain) -> Self {
        let log = Arc::new(Mutex::new(Vec::new()));
        let input_tokens = Arc::new(AtomicI64::new(100));
        let shared = Shared {
            brain,
            log: log.clone(),
            input_tokens: input_tokens.clone(),
        };
        let app = Router::new()
            .route("/v1/responses", post(respond))
            .with_state(shared);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        let task = tokio::spawn(async move {
            axum::serve(listener, app).await.unwrap();
        });
        Self {
            base_url,
            log,
            input_tokens,
            task,
        }
    }

    /// The `input_tokens` every following response reports (100 at first).
    pub fn set_input_tokens(&self, tokens: i64) {
        self.input_tokens.store(tokens, Ordering::SeqCst);
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<ModelRequest> {
        self.log.lock().unwrap().clone()
    }

    /// How many compaction requests codex made.
    pub fn compactions(&self) -> usize {
        self.requests().iter().filter(|r| r.is_compaction()).count()
    }

    /// Requests that carry a human message (not compactions).
    pub fn turn_requests(&self) -> Vec<ModelRequest> {
        self.requests()
            .into_iter()
            .filter(|r| !r.is_compaction())
            .collect()
    }

    /// The newest human text of every turn's request, in order: what each message brought.
    pub fn turn_texts(&self) -> Vec<String> {
        let requests = self.turn_requests();
        requests.iter().map(ModelRequest::last_human_text).collect()
    }

    /// The latest request whose newest human text is `text`.
    pub fn request_for(&self, text: &str) -> ModelRequest {
        self.requests()
            .into_iter()
            .rev()
            .find(|r| r.last_human_text().contains(text))
            .unwrap_or_else(|| panic!("the model never saw {text:?}"))
    }
}

/// The default script: "read file X" runs `cat X` then quotes it; "what did you just
/// read?" quotes every earlier tool output the request carries; "run: CMD" runs CMD;
/// "slow: TEXT" streams TEXT slowly; anything else is echoed.
pub fn default_brain() -> Brain {
    Arc::new(|request: &ModelRequest| {
        if request.is_compaction() {
            return Reply::Text("SUMMARY: the conversation so far, compacted.".into());
        }
        if request.ends_with_tool_output() {
            let output = request.tool_outputs().pop().unwrap_or_default();
            return Reply::Text(format!("Tool said: {}", command_stdout(&output)));
        }
        let text = request.last_human_text();
        if let Some(file) = text.strip_prefix("read file ") {
            return Reply::Exec(format!("cat {}", file.trim()));
        }
        if let Some(command) = text.strip_prefix("run: ") {
            return Reply::Exec(command.trim().to_owned());
        }
        if let Some(size) = text.strip_prefix("long: ") {
            return Reply::Text(long_reply(size.trim().parse().unwrap_or(10_000)));
        }
        if let Some(slow) = text.strip_prefix("slow: ") {
            return Reply::Slow {
                text: slow.to_owned(),
                chunks: 10,
                delay: Duration::from_millis(500),
            };
        }
        if text.starts_with("what did you just read?") {
            let outputs: Vec<String> = request
                .tool_outputs()
                .iter()
                .map(|o| command_stdout(o))
                .collect();
            return Reply::Text(if outputs.is_empty() {
                "I have not read anything.".into()
            } else {
                format!("Earlier I read: {}", outputs.join(" | "))
            });
        }
        Reply::Text(format!("Echo: {text}"))
    })
}

/// About `size` characters of Markdown: a sentence, a long fenced code block, a sentence.
pub fn long_reply(size: usize) -> String {
    let mut text = String::from("Here is the code:\n```rust\n");
    let mut line = 0;
    while text.len() < size {
        text.push_str(&format!("let value_{line} = {line}; // filler line\n"));
        line += 1;
    }
    text.push_str("```\nThat is all.");
    text
}

/// The command's own output from codex's tool output ("...Output:\n<stdout>").
fn command_stdout(output: &str) -> String {
    output
        .rsplit_once("Output:\n")
        .map_or(output, |(_, stdout)| stdout)
        .trim()
        .to_owned()
}

async fn respond(State(shared): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    let request = ModelRequest {
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
        headers: headers
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or_default().to_owned()))
            .collect(),
        received: Instant::now(),
        answered: Arc::default(),
    };
    let answered = request.answered.clone();
    let reply = (shared.brain)(&request);
    let tokens = shared.input_tokens.load(Ordering::SeqCst);
    let model = request.body["model"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    shared.log.lock().unwrap().push(request);
    let events = match reply {
        Reply::Fail(status) => {
            let status = StatusCode::from_u16(status).unwrap();
            let body = json!({"error": {"message": format!("fake model failure {status}"), "type": "server_error"}});
            return (status, axum::Json(body)).into_response();
        }
        Reply::UsageLimit { resets_in, headers } => return usage_limit(resets_in, headers),
        Reply::NoSuchModel => {
            let message =
                format!("The model `{model}` does not exist or you do not have access to it.");
            let body = json!({"error": {"message": message, "type": "invalid_request_error",
                "param": null, "code": "model_not_found"}});
            return (StatusCode::NOT_FOUND, axum::Json(body)).into_response();
        }
        Reply::Text(text) => message_events(&[text.as_str()], tokens),
        Reply::Exec(command) => {
            let arguments = json!({"cmd": command, "yield_time_ms": 10000});
            function_call_events("exec_command", &arguments, tokens)
        }
        Reply::Call { name, arguments } => function_call_events(name, &arguments, tokens),
        Reply::Round(outputs) => round_events(&outputs, tokens),
        Reply::Slow {
            text,
            chunks,
            delay,
        } => {
            let pieces = split_evenly(&text, chunks);
            let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
            let events = message_events(&refs, tokens);
            let stream = async_stream(events, delay, answered);
            return sse(Body::from_stream(stream));
        }
    };
    *answered.lock().unwrap() = Some(Instant::now());
    sse(Body::from(events.concat()))
}

fn sse(body: Body) -> Response {
    ([(header::CONTENT_TYPE, "text/event-stream")], body).into_response()
}

fn event(kind: &str, data: Value) -> String {
    let mut data = data;
    data["type"] = json!(kind);
    format!("event: {kind}\ndata: {data}\n\n")
}

fn created() -> String {
    event(
        "response.created",
        json!({"response": {"id": "resp_1", "status": "in_progress"}}),
    )
}

fn completed(input_tokens: i64) -> String {
    event(
        "response.completed",
        json!({"response": {"id": "resp_1", "status": "completed", "usage": {
            "input_tokens": input_tokens, "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 10, "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": input_tokens + 10}}}),
    )
}

/// Events of one assistant message streamed as `pieces`.
fn message_events(pieces: &[&str], input_tokens: i64) -> Vec<String> {
    let full: String = pieces.concat();
    let mut events = vec![
        created(),
        event(
            "response.output_item.added",
            json!({"output_index": 0, "item": {"type": "message", "role": "assistant", "id": "msg_1", "status": "in_progress", "content": []}}),
        ),
    ];
    events.extend(pieces.iter().map(|piece| {
        event(
            "response.output_text.delta",
            json!({"item_id": "msg_1", "output_index": 0, "content_index": 0, "delta": piece}),
        )
    }));
    events.push(event(
        "response.output_item.done",
        json!({"output_index": 0, "item": {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed",
            "content": [{"type": "output_text", "text": full, "annotations": []}]}}),
    ));
    events.push(completed(input_tokens));
    events
}

fn function_call_events(name: &str, arguments: &Value, input_tokens: i64) -> Vec<String> {
    let arguments = arguments.to_string();
    let mut item = json!({"type": "function_call", "id": "fc_1", "call_id": format!("call_{}", rand_id()),
        "name": name, "arguments": arguments, "status": "completed"});
    if let Some((namespace, tool)) = name.split_once('.') {
        item["namespace"] = json!(namespace);
        item["name"] = json!(tool);
    }
    vec![
        created(),
        event(
            "response.output_item.done",
            json!({"output_index": 0, "item": item}),
        ),
        completed(input_tokens),
    ]
}

/// Events of one response made of several output items, in order.
fn round_events(outputs: &[Output], input_tokens: i64) -> Vec<String> {
    let mut events = vec![created()];
    for (index, output) in outputs.iter().enumerate() {
        let id = rand_id();
        let item = match output {
            Output::Message { text, phase } => {
                let mut item = json!({"type": "message", "role": "assistant", "id": format!("msg_{id}"),
                    "status": "completed", "content": [{"type": "output_text", "text": text, "annotations": []}]});
                if let Some(phase) = phase {
                    item["phase"] = json!(phase);
                }
                let mut added = item.clone();
                added["status"] = json!("in_progress");
                added["content"] = json!([]);
                events.push(event(
                    "response.output_item.added",
                    json!({"output_index": index, "item": added}),
                ));
                events.push(event(
                    "response.output_text.delta",
                    json!({"item_id": format!("msg_{id}"), "output_index": index, "content_index": 0, "delta": text}),
                ));
                item
            }
            Output::Exec(command) => {
                let arguments = json!({"cmd": command, "yield_time_ms": 10000}).to_string();
                json!({"type": "function_call", "id": format!("fc_{id}"), "call_id": format!("call_{id}"),
                    "name": "exec_command", "arguments": arguments, "status": "completed"})
            }
        };
        events.push(event(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        ));
    }
    events.push(completed(input_tokens));
    events
}

fn rand_id() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

fn split_evenly(text: &str, chunks: usize) -> Vec<String> {
    let chars: Vec<char> = text.chars().collect();
    let size = chars.len().div_ceil(chunks.max(1)).max(1);
    chars.chunks(size).map(|c| c.iter().collect()).collect()
}

/// Yields each event after `delay` (the first at once).
fn async_stream(
    events: Vec<String>,
    delay: Duration,
    answered: Arc<Mutex<Option<Instant>>>,
) -> impl tokio_stream::Stream<Item = Result<String, std::io::Error>> {
    let (tx, rx) = tokio::sync::mpsc::channel(4);
    tokio::spawn(async move {
        for (i, event) in events.into_iter().enumerate() {
            if i > 1 {
                tokio::time::sleep(delay).await;
            }
            if tx.send(Ok(event)).await.is_err() {
                return;
            }
        }
        *answered.lock().unwrap() = Some(Instant::now());
    });
    tokio_stream::wrappers::ReceiverStream::new(rx)
}

/// A 429 `usage_limit_reached`; with `headers`, the rate-limit headers Codex reads its
/// windows from.
fn usage_limit(resets_in: Duration, with_headers: bool) -> Response {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap();
    let resets_at = (now + resets_in).as_secs();
    let body = json!({"error": {"type": "usage_limit_reached",
        "message": "The usage limit has been reached", "plan_type": "plus",
        "resets_at": resets_at, "resets_in_seconds": resets_in.as_secs()}});
    let headers = [
        ("x-codex-primary-used-percent", "100.0".to_owned()),
        ("x-codex-primary-window-minutes", "300".to_owned()),
        ("x-codex-primary-reset-at", resets_at.to_string()),
    ];
    let mut response = (StatusCode::TOO_MANY_REQUESTS, axum::Json(body)).into_response();
    for (name, value) in headers.into_iter().filter(|_| with_headers) {
        response.headers_mut().insert(name, value.parse().unwrap());
    }
    response
}
