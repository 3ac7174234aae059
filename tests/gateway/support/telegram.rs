//! A fake Telegram Bot API on 127.0.0.1 that behaves like the real one at its defaults:
//! getUpdates long polls are held for the full requested timeout, more than 30 sends or
//! edits a second (or 20 a minute in one group) are answered with HTTP 429 and
//! `retry_after`, errors come with their
//! HTTP status (and, for server errors, Telegram's JSON or a proxy's HTML page), every
//! call is recorded, and sends and edits are answered with full Message objects.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::{get, post};
use serde_json::{Value, json};
use tokio::sync::Notify;

pub const BOT_ID: i64 = 4242;
pub const BOT_USERNAME: &str = "codex_test_bot";
/// The one token the fake takes; any other is answered as Telegram does, 401.
pub const TOKEN: &str = "123:TEST";
/// In a text the fake sends, stands for a lone UTF-16 surrogate (`\ud83d`, half an emoji).
pub const LONE_SURROGATE: &str = "<lone-surrogate>";

/// One Bot API call the gateway made.
#[derive(Debug, Clone)]
pub struct Call {
    /// Lower-case method name (`sendmessage`).
    pub method: String,
    pub body: Value,
    pub at: Instant,
    /// Refused with 429 for going over the per-second limit.
    pub rate_limited: bool,
}

/// One getUpdates long poll.
#[derive(Debug, Clone)]
pub struct Poll {
    pub started: Instant,
    /// When the fake answered; `None` while held, or if the client gave up first.
    pub answered: Option<Instant>,
    pub updates: usize,
}

/// Sends and edits Telegram takes from one bot in a second.
const SENDS_PER_SECOND: usize = 30;
/// Sends and edits Telegram takes from one bot in one group in a minute.
const GROUP_SENDS_PER_MINUTE: usize = 20;

#[derive(Default)]
struct Inner {
    /// The bot's Threaded Mode (@BotFather): topics in private chats. Off by default.
    threaded_mode: AtomicBool,
    /// Set to answer `sendMessageDraft` as a Bot API server older than 9.5 does.
    drafts_unknown: AtomicBool,
    /// The bot's messages sent without a notification (`disable_notification`).
    quiet: Mutex<std::collections::HashSet<i64>>,
    /// The token taken instead of [`TOKEN`], when a test sets one.
    token: Mutex<Option<String>>,
    /// Updates not yet acknowledged by a getUpdates offset.
    updates: Mutex<VecDeque<Value>>,
    calls: Mutex<Vec<Call>>,
    polls: Mutex<Vec<Poll>>,
    /// When recent sends and edits were accepted, for the per-second limit.
    recent_sends: Mutex<VecDeque<Instant>>,
    /// The same for each group (negative chat id), for the per-minute limit.
    recent_group_sends: Mutex<BTreeMap<i64, VecDeque<Instant>>>,
    /// Current text (or caption) of every message the bot sent, by message id, as sent.
    texts: Mutex<BTreeMap<i64, (i64, String)>>,
    /// Every message the bot sent as Telegram returns it (HTML parsed into entities).
    messages: Mutex<BTreeMap<i64, Value>>,
    /// Files the bot sent: (file name, content) by message id.
    documents: Mutex<BTreeMap<i64, (String, String)>>,
    /// Files people "sent", by file id, served by getFile and the file download.
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    /// Error answers to give, once each, to the next call of a method.
    faults: Mutex<Vec<(String, Fault)>>,
    /// Calls (method, text they carry) taken at once but answered this much later, once
    /// each: a response still on its way.
    holds: Mutex<Vec<(String, String, Duration)>>,
    next_update: AtomicI64,
    next_message: AtomicI64,
    news: Notify,
}

/// An error answer: its HTTP status and body, as Telegram or a proxy in front of it sends.
#[derive(Debug, Clone)]
pub struct Fault {
    status: StatusCode,
    body: FaultBody,
}

#[derive(Debug, Clone)]
pub enum FaultBody {
    /// The Bot API's own JSON error.
    Json(Value),
    /// A proxy's HTML error page.
    Html(String),
}

impl Fault {
    /// A Bot API error with its `error_code` as the HTTP status.
    fn api(answer: Value) -> Self {
        let code = answer["error_code"].as_u64().expect("an error code") as u16;
        Self {
            status: StatusCode::from_u16(code).unwrap(),
            body: FaultBody::Json(answer),
        }
    }

    /// A server error, as Telegram sends during an outage (JSON) or as the proxy in front
    /// of it does (an nginx HTML page).
    pub fn server(status: u16, body: &str) -> Self {
        let status = StatusCode::from_u16(status).unwrap();
        let reason = status.canonical_reason().unwrap_or("Server Error");
        let body = match body {
            "json" => FaultBody::Json(json!({"ok": false, "error_code": status.as_u16(),
                "description": reason})),
            _ => FaultBody::Html(format!(
                "<html>\r\n<head><title>{status}</title></head>\r\n<body>\r\n\
                 <center><h1>{status}</h1></center>\r\n<hr><center>nginx/1.18.0</center>\r\n\
                 </body>\r\n</html>\r\n"
            )),
        };
        Self { status, body }
    }

    /// A Bot API refusal (a 4xx) with `description`.
    pub fn refusal(status: u16, description: &str) -> Self {
        Self::api(json!({"ok": false, "error_code": status, "description": description}))
    }

    fn into_response(self) -> Response {
        match self.body {
            FaultBody::Json(answer) => (self.status, axum::Json(answer)).into_response(),
            FaultBody::Html(page) => (self.status, Html(page)).into_response(),
        }
    }
}

#[derive(Clone)]
pub struct FakeTelegram {
    pub url: String,
    inner: Arc<Inner>,
}

fn bot_user() -> Value {
    json!({"id": BOT_ID, "is_bot": true, "first_name": "Codex", "username": BOT_USERNAME})
}

fn chat(chat_id: i64) -> Value {
    if chat_id > 0 {
        json!({"id": chat_id, "type": "private", "first_name": "User"})
    } else {
        json!({"id": chat_id, "type": "supergroup", "title": "Team", "is_forum": true})
    }
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

impl FakeTelegram {
    pub async fn start() -> Self {
        Self::start_on("127.0.0.1:0".parse().unwrap()).await
    }

    /// On `address`: a test can start the Bot API where a gateway already looks for it.
    pub async fn start_on(address: std::net::SocketAddr) -> Self {
        let inner = Arc::new(Inner {
            next_update: AtomicI64::new(1),
            next_message: AtomicI64::new(500),
            ..Inner::default()
        });
        let app = Router::new()
            .route("/{bot}/{method}", post(handle))
            .route("/file/{bot}/{*path}", get(download))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind(address).await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { url, inner }
    }

    /// Whether the bot's message `id` was sent without a notification.
    pub fn is_quiet(&self, id: i64) -> bool {
        self.inner.quiet.lock().unwrap().contains(&id)
    }

    /// Takes `token` from now on instead of [`TOKEN`].
    pub fn take_token(&self, token: &str) {
        *self.inner.token.lock().unwrap() = Some(token.to_owned());
    }

    /// Waits until the running turn's status in `chat_id` says what `pick` wants: in a
    /// status message (groups, drafts off) or a draft (private chats).
    pub async fn wait_for_status(&self, chat_id: i64, pick: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        loop {
            let texts = self.texts(chat_id).into_iter().map(|(_, text)| text);
            let drafts = self.drafts(chat_id).into_iter().map(|(_, text, ..)| text);
            if texts.chain(drafts).any(|text| pick(&text)) {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "no such status in chat {chat_id}; messages: {:#?}",
                self.texts(chat_id)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The topics the bot greeted as a task's ("Task: …", what `/task` sends into the
    /// topic it opened), oldest first.
    pub fn task_topics(&self) -> Vec<i64> {
        let greetings = self.calls("sendMessage").into_iter().filter(|c| {
            let text = c.body["text"].as_str().unwrap_or_default();
            text.starts_with("Task:")
        });
        greetings
            .filter_map(|c| c.body["message_thread_id"].as_i64())
            .collect()
    }

    /// Turns the bot's Threaded Mode on, as its owner does in @BotFather: from then on
    /// topics can be opened in private chats.
    pub fn turn_on_threaded_mode(&self) {
        self.inner.threaded_mode.store(true, Ordering::SeqCst);
    }

    /// Answers `sendMessageDraft` from now on as a Bot API server older than 9.5: 404.
    pub fn know_no_drafts(&self) {
        self.inner.drafts_unknown.store(true, Ordering::SeqCst);
    }

    /// The drafts sent to `chat_id`: (draft id, text, whether it offers Telegram's stop),
    /// each with when it came.
    pub fn drafts(&self, chat_id: i64) -> Vec<(i64, String, bool, Instant)> {
        self.calls("sendMessageDraft")
            .into_iter()
            .filter(|c| c.body["chat_id"] == chat_id && !c.rate_limited)
            .map(|c| {
                let text = c.body["text"].as_str().unwrap_or_default().to_owned();
                let id = c.body["draft_id"].as_i64().unwrap_or_default();
                (id, text, c.body["can_stop"] == true, c.at)
            })
            .collect()
    }

    /// `user` presses Telegram's stop on draft `draft_id` of their private chat.
    pub fn stop_draft(&self, user: i64, draft_id: i64) -> i64 {
        let chat = json!({"id": user, "type": "private", "first_name": format!("User{user}")});
        self.push(
            "stopped_message_generation",
            json!({"chat": chat, "draft_id": draft_id}),
        )
    }

    /// Queues any update: `fields` gets the next `update_id`.
    pub fn push_raw(&self, mut fields: Value) -> i64 {
        let id = self.inner.next_update.fetch_add(1, Ordering::SeqCst);
        fields["update_id"] = json!(id);
        self.inner.updates.lock().unwrap().push_back(fields);
        self.inner.news.notify_waiters();
        id
    }

    fn push(&self, kind: &str, payload: Value) -> i64 {
        let id = self.inner.next_update.fetch_add(1, Ordering::SeqCst);
        self.inner
            .updates
            .lock()
            .unwrap()
            .push_back(json!({"update_id": id, kind: payload}));
        self.inner.news.notify_waiters();
        id
    }

    fn message(&self, chat_id: i64, user_id: i64, text: &str, topic: Option<i64>) -> Value {
        let id = self.inner.next_message.fetch_add(1, Ordering::SeqCst);
        let mut message = json!({
            "message_id": id, "date": now(), "chat": chat(chat_id),
            "from": {"id": user_id, "is_bot": false, "first_name": format!("User{user_id}")},
            "text": text,
        });
        if text.starts_with('/') {
            let length = text
                .split_whitespace()
                .next()
                .unwrap()
                .encode_utf16()
                .count();
            message["entities"] = json!([{"type": "bot_command", "offset": 0, "length": length}]);
        }
        if let Some(topic) = topic {
            message["message_thread_id"] = json!(topic);
            message["is_topic_message"] = json!(true);
        }
        message
    }

    /// A direct message from `user_id` (its private chat has the same id).
    pub fn dm(&self, user_id: i64, text: &str) {
        self.push("message", self.message(user_id, user_id, text, None));
    }

    pub fn group_message(&self, chat_id: i64, user_id: i64, text: &str, topic: Option<i64>) {
        self.push("message", self.message(chat_id, user_id, text, topic));
    }

    /// A location: a kind of message the bot cannot read.
    pub fn dm_location(&self, user_id: i64) {
        let mut message = self.message(user_id, user_id, "", None);
        message.as_object_mut().unwrap().remove("text");
        message["location"] = json!({"latitude": 52.5, "longitude": 13.4});
        self.push("message", message);
    }

    /// Makes a file downloadable under `file_id`, as Telegram keeps what people send.
    pub fn add_file(&self, file_id: &str, bytes: &[u8]) {
        let mut files = self.inner.files.lock().unwrap();
        files.insert(file_id.to_owned(), bytes.to_vec());
    }

    /// The file fields Telegram gives a message for `file_id` (its size as added).
    pub fn file_meta(&self, file_id: &str) -> Value {
        let files = self.inner.files.lock().unwrap();
        let size = files.get(file_id).map_or(0, Vec::len);
        json!({"file_id": file_id, "file_unique_id": format!("u-{file_id}"), "file_size": size})
    }

    /// A direct message with `fields` (`photo`, `document`, `voice`...) and a caption.
    pub fn dm_with(&self, user_id: i64, caption: &str, fields: Value) {
        let mut message = self.message(user_id, user_id, "", None);
        let object = message.as_object_mut().unwrap();
        object.remove("text");
        if !caption.is_empty() {
            object.insert("caption".into(), json!(caption));
        }
        for (key, value) in fields.as_object().unwrap() {
            object.insert(key.clone(), value.clone());
        }
        self.push("message", message);
    }

    /// `user_id` presses an inline button with `data` under bot message `message_id`.
    pub fn press(&self, user_id: i64, chat_id: i64, message_id: i64, data: &str) {
        let text = self.text_of(message_id).unwrap_or_default();
        let message = self
            .inner
            .messages
            .lock()
            .unwrap()
            .get(&message_id)
            .cloned();
        let message = message.unwrap_or_else(|| {
            json!({"message_id": message_id, "date": now(), "chat": chat(chat_id),
                   "from": bot_user(), "text": text})
        });
        self.push(
            "callback_query",
            json!({
                "id": format!("cb{}", self.inner.next_update.load(Ordering::SeqCst)),
                "from": {"id": user_id, "is_bot": false, "first_name": format!("User{user_id}")},
                "chat_instance": "ci",
                "data": data,
                "message": message,
            }),
        );
    }

    /// The next `method` call fails with Telegram's 429 and `retry_after` seconds.
    pub fn rate_limit_next(&self, method: &str, retry_after: u64) {
        self.fail_next(method, Fault::api(rate_limit(retry_after)));
    }

    /// The next `method` call that uses HTML parse mode is rejected like bad markup.
    pub fn reject_html_next(&self, method: &str) {
        let refusal = "Bad Request: can't parse entities: unsupported start tag";
        self.fail_next(&format!("{method}+html"), Fault::refusal(400, refusal));
    }

    /// The next `method` call not taken by an earlier fault is answered with `fault`.
    pub fn fail_next(&self, method: &str, fault: Fault) {
        self.inner
            .faults
            .lock()
            .unwrap()
            .push((method.to_ascii_lowercase(), fault));
    }

    /// The next `method` call whose text contains `text` is carried out at once (a
    /// message is sent) but answered only after `delay`, as a slow network does.
    pub fn hold_answer(&self, method: &str, text: &str, delay: Duration) {
        let hold = (method.to_ascii_lowercase(), text.to_owned(), delay);
        self.inner.holds.lock().unwrap().push(hold);
    }

    /// The outage is over: faults not yet given are dropped.
    pub fn clear_faults(&self) {
        self.inner.faults.lock().unwrap().clear();
    }

    pub fn polls(&self) -> Vec<Poll> {
        self.inner.polls.lock().unwrap().clone()
    }

    pub fn calls(&self, method: &str) -> Vec<Call> {
        let method = method.to_ascii_lowercase();
        self.inner
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|call| call.method == method)
            .cloned()
            .collect()
    }

    /// Updates the gateway has not acknowledged yet.
    pub fn pending_updates(&self) -> usize {
        self.inner.updates.lock().unwrap().len()
    }

    /// Current texts of the bot's messages in `chat_id`, oldest first.
    pub fn texts(&self, chat_id: i64) -> Vec<(i64, String)> {
        self.inner
            .texts
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, (chat, _))| *chat == chat_id)
            .map(|(id, (_, text))| (*id, text.clone()))
            .collect()
    }

    /// The file sent with message `message_id`: its name and content.
    pub fn document_of(&self, message_id: i64) -> Option<(String, String)> {
        self.inner
            .documents
            .lock()
            .unwrap()
            .get(&message_id)
            .cloned()
    }

    /// Message `message_id` as Telegram would return it: text or caption with entities.
    pub fn message_of(&self, message_id: i64) -> Option<Value> {
        self.inner
            .messages
            .lock()
            .unwrap()
            .get(&message_id)
            .cloned()
    }

    pub fn text_of(&self, message_id: i64) -> Option<String> {
        self.inner
            .texts
            .lock()
            .unwrap()
            .get(&message_id)
            .map(|(_, text)| text.clone())
    }

    /// Waits until some message in `chat_id` satisfies `pick`; returns its id and text.
    pub async fn wait_for_text(&self, chat_id: i64, pick: impl Fn(&str) -> bool) -> (i64, String) {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        loop {
            if let Some(found) = self.texts(chat_id).into_iter().find(|(_, t)| pick(t)) {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no matching message in chat {chat_id}; messages: {:#?}",
                self.texts(chat_id)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until `count` calls of `method` satisfy `pick`; returns them.
    pub async fn wait_for_calls(
        &self,
        method: &str,
        count: usize,
        pick: impl Fn(&Value) -> bool,
    ) -> Vec<Call> {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        loop {
            let calls: Vec<_> = self
                .calls(method)
                .into_iter()
                .filter(|c| pick(&c.body))
                .collect();
            if calls.len() >= count {
                return calls;
            }
            assert!(
                Instant::now() < deadline,
                "{} of {count} {method} calls",
                calls.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Waits until a call of `method` satisfies `pick`.
    pub async fn wait_for_call(&self, method: &str, pick: impl Fn(&Value) -> bool) -> Call {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        loop {
            if let Some(call) = self.calls(method).into_iter().find(|c| pick(&c.body)) {
                return call;
            }
            assert!(Instant::now() < deadline, "no matching {method} call");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// A form's fields as a JSON body: files as `{file_name, content}` (also where a field
/// names one as `attach://<part>`), values that are JSON
/// (numbers, keyboards) parsed, the rest as strings.
fn form_body(parts: Vec<super::multipart::Part>) -> Value {
    let mut body = json!({});
    for part in parts {
        let text = String::from_utf8_lossy(&part.data).into_owned();
        body[part.name.as_str()] = match part.file_name {
            Some(name) => json!({"file_name": name, "content": text}),
            None => serde_json::from_str(&text).unwrap_or(Value::String(text)),
        };
    }
    // A file may be sent in a part of its own and named as `attach://<part>`.
    let fields: Vec<String> = body.as_object().unwrap().keys().cloned().collect();
    for field in fields {
        if let Some(part) = body[&field]
            .as_str()
            .and_then(|v| v.strip_prefix("attach://"))
        {
            body[&field] = body[part].clone();
        }
    }
    body
}

/// Telegram's parse of HTML: the visible text and its entities (offsets in UTF-16 units).
pub fn html_entities(html: &str) -> (String, Value) {
    let mut shown = String::new();
    // Open tags: name, start offset, and the link of an `<a href>`.
    let mut open: Vec<(String, usize, Option<String>)> = Vec::new();
    let mut entities = Vec::new();
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        shown.push_str(&unescape(&rest[..at]));
        let end = rest[at..].find('>').map_or(rest.len(), |e| at + e);
        let tag = &rest[at + 1..end];
        rest = rest.get(end + 1..).unwrap_or("");
        let offset = shown.encode_utf16().count();
        if let Some(name) = tag.strip_prefix('/') {
            if let Some(index) = open.iter().rposition(|(n, _, _)| n == name) {
                let (name, start, url) = open.remove(index);
                let kind = match name.as_str() {
                    "b" | "strong" => "bold",
                    "i" | "em" => "italic",
                    "u" => "underline",
                    "s" | "del" => "strikethrough",
                    "code" if open.iter().any(|(n, _, _)| n == "pre") => continue,
                    "code" => "code",
                    "pre" => "pre",
                    "blockquote" => "blockquote",
                    "a" => "text_link",
                    _ => "spoiler",
                };
                let mut entity = json!({"type": kind, "offset": start, "length": offset - start});
                if let Some(url) = url {
                    entity["url"] = json!(url);
                }
                entities.push(entity);
            }
        } else {
            let name = tag.split_whitespace().next().unwrap_or_default().to_owned();
            let url = tag
                .split_once("href=\"")
                .and_then(|(_, rest)| rest.split_once('"'))
                .map(|(url, _)| unescape(url));
            open.push((name, offset, url));
        }
    }
    shown.push_str(&unescape(rest));
    (shown, Value::Array(entities))
}

fn unescape(text: &str) -> String {
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// Text as Telegram shows it after parsing HTML entities (what its length limit counts).
pub fn visible_text(html: &str) -> String {
    let mut out = String::new();
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&amp;", "&")
}

/// A file download (`/file/bot<token>/<file_path>`), as getFile named it.
async fn download(
    State(inner): State<Arc<Inner>>,
    Path((_bot, path)): Path<(String, String)>,
) -> Result<Vec<u8>, axum::http::StatusCode> {
    let id = path.strip_prefix("files/").unwrap_or_default();
    let files = inner.files.lock().unwrap();
    files
        .get(id)
        .cloned()
        .ok_or(axum::http::StatusCode::NOT_FOUND)
}

async fn handle(
    State(inner): State<Arc<Inner>>,
    Path((bot, method)): Path<(String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let token = inner.token.lock().unwrap().clone();
    if bot != format!("bot{}", token.as_deref().unwrap_or(TOKEN)) {
        return Fault::refusal(401, "Unauthorized").into_response();
    }
    let method = method.to_ascii_lowercase();
    let body: Value = match super::multipart::parts(&headers, &body) {
        Some(parts) => form_body(parts),
        None => serde_json::from_slice(&body).unwrap_or(json!({})),
    };
    let limited = matches!(
        method.as_str(),
        "sendmessage"
            | "editmessagetext"
            | "senddocument"
            | "editmessagecaption"
            | "sendmessagedraft"
    );
    let group_wait = match body["chat_id"].as_i64() {
        Some(chat) if limited && chat < 0 => inner.take_group_slot(chat),
        _ => None,
    };
    let rate_limited = limited && (group_wait.is_some() || !inner.take_send_slot());
    if method != "getupdates" {
        inner.calls.lock().unwrap().push(Call {
            method: method.clone(),
            body: body.clone(),
            at: Instant::now(),
            rate_limited,
        });
    }
    if rate_limited {
        return Fault::api(rate_limit(group_wait.unwrap_or(1))).into_response();
    }
    let keys = [method.clone(), format!("{method}+html")];
    let html = body["parse_mode"] == "HTML";
    {
        let mut faults = inner.faults.lock().unwrap();
        let hit = faults
            .iter()
            .position(|(m, _)| *m == keys[0] || (html && *m == keys[1]));
        if let Some(index) = hit {
            return faults.remove(index).1.into_response();
        }
    }
    if let Some(refusal) = refusal(&inner, &method, &body) {
        return refusal.into_response();
    }
    let result = match method.as_str() {
        "getme" => {
            let mut me = bot_user();
            for flag in [
                "can_join_groups",
                "supports_inline_queries",
                "has_main_web_app",
                "can_connect_to_business",
            ] {
                me[flag] = json!(flag == "can_join_groups");
            }
            me["can_read_all_group_messages"] = json!(false);
            me
        }
        "getupdates" => {
            let result = updates(&inner, &body).await;
            // Telegram sends a message's text as UTF-16 escapes when it must: a lone
            // surrogate (a cut emoji) comes through as one, which no Rust string holds.
            let body = json!({"ok": true, "result": result}).to_string();
            let body = body.replace(LONE_SURROGATE, "\\ud83d");
            let json = [(axum::http::header::CONTENT_TYPE, "application/json")];
            return (json, body).into_response();
        }
        "getwebhookinfo" => {
            json!({"url": "", "has_custom_certificate": false, "pending_update_count": 0})
        }
        "getfile" => {
            let id = body["file_id"].as_str().unwrap_or_default().to_owned();
            let size = inner.files.lock().unwrap().get(&id).map(Vec::len);
            let Some(size) = size else {
                return Fault::refusal(400, "Bad Request: invalid file_id").into_response();
            };
            json!({"file_id": id, "file_unique_id": format!("u-{id}"), "file_size": size,
                   "file_path": format!("files/{id}")})
        }
        "sendmessage" | "senddocument" => {
            let id = inner.next_message.fetch_add(1, Ordering::SeqCst);
            if body["disable_notification"] == true {
                inner.quiet.lock().unwrap().insert(id);
            }
            inner.store(id, &body)
        }
        "createforumtopic" => {
            // A topic's id is the id of the service message that opened it.
            let id = inner.next_message.fetch_add(1, Ordering::SeqCst);
            json!({"message_thread_id": id, "name": body["name"], "icon_color": 7322096})
        }
        "editmessagetext" | "editmessagecaption" => {
            let id = body["message_id"].as_i64().unwrap_or_default();
            let mut message = inner.store(id, &body);
            message["edit_date"] = json!(now());
            message
        }
        "editmessagereplymarkup" => {
            let id = body["message_id"].as_i64().unwrap_or_default();
            let mut messages = inner.messages.lock().unwrap();
            let message = messages.get_mut(&id).expect("checked by refusal");
            keep_markup(message, &body);
            message["edit_date"] = json!(now());
            message.clone()
        }
        _ => json!(true),
    };
    let held = {
        let mut holds = inner.holds.lock().unwrap();
        let text = body["text"].as_str().unwrap_or_default();
        let hit = holds
            .iter()
            .position(|(m, needle, _)| *m == method && text.contains(needle.as_str()));
        hit.map(|index| holds.remove(index).2)
    };
    if let Some(delay) = held {
        tokio::time::sleep(delay).await;
    }
    axum::Json(json!({"ok": true, "result": result})).into_response()
}

/// What `sendMessageDraft` refuses: every draft on a Bot API server older than 9.5 (an
/// unknown method), and, as the documents say, a chat that is not private, a zero
/// `draft_id`, and a text outside 1-4096 characters. (The wording is the fake's.)
fn draft_refusal(inner: &Inner, body: &Value) -> Option<Fault> {
    if inner.drafts_unknown.load(Ordering::SeqCst) {
        return Some(Fault::refusal(404, "Not Found"));
    }
    let bad = |description: &str| Some(Fault::refusal(400, description));
    let length = body["text"]
        .as_str()
        .unwrap_or_default()
        .encode_utf16()
        .count();
    match (body["chat_id"].as_i64(), body["draft_id"].as_i64()) {
        (Some(chat), _) if chat < 0 => bad("Bad Request: drafts can be sent only to private chats"),
        (_, None | Some(0)) => bad("Bad Request: draft_id must be non-zero"),
        _ if !(1..=4096).contains(&length) => bad("Bad Request: text must be 1-4096 characters"),
        _ => None,
    }
}

/// What the Bot API refuses that the gateway could send, with Telegram's own words: the
/// length limits (counted as Telegram counts, in UTF-16 units after the HTML is parsed),
/// bad HTML, callback data over 64 bytes, edits of unknown messages and edits that
/// change nothing.
fn refusal(inner: &Inner, method: &str, body: &Value) -> Option<Fault> {
    let bad = |description: String| Some(Fault::refusal(400, &description));
    if method == "sendmessagedraft" {
        return draft_refusal(inner, body);
    }
    if method == "createforumtopic" {
        let private = body["chat_id"].as_i64().is_some_and(|chat| chat > 0);
        let name = body["name"].as_str().unwrap_or_default().chars().count();
        if private && !inner.threaded_mode.load(Ordering::SeqCst) {
            return bad("Bad Request: the chat is not a forum".into());
        }
        if !(1..=128).contains(&name) {
            return bad("Bad Request: TOPIC_TITLE_EMPTY".into());
        }
    }
    let sends = matches!(
        method,
        "sendmessage" | "editmessagetext" | "senddocument" | "editmessagecaption"
    );
    if sends {
        let (key, limit) = match body.get("text") {
            Some(_) => ("text", 4096),
            None => ("caption", 1024),
        };
        let sent = body[key].as_str().unwrap_or_default();
        let shown = match body["parse_mode"] == "HTML" {
            true => {
                if let Some(problem) = html_problem(sent) {
                    return bad(format!("Bad Request: can't parse entities: {problem}"));
                }
                html_entities(sent).0
            }
            false => sent.to_owned(),
        };
        let length = shown.encode_utf16().count();
        match (key, length) {
            ("text", 0) if method == "sendmessage" || method == "editmessagetext" => {
                return bad("Bad Request: message text is empty".into());
            }
            ("text", length) if length > limit => {
                return bad("Bad Request: message is too long".into());
            }
            ("caption", length) if length > limit => {
                return bad("Bad Request: message caption is too long".into());
            }
            _ => {}
        }
    }
    let buttons = reply_markup(body)["inline_keyboard"].as_array().cloned();
    for button in buttons
        .into_iter()
        .flatten()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
    {
        let data = button["callback_data"].as_str().unwrap_or_default();
        if data.len() > 64 {
            return bad("Bad Request: BUTTON_DATA_INVALID".into());
        }
        // Bot API 9.4: a button's colour is one of three.
        let style = button
            .get("style")
            .map(|style| style.as_str().unwrap_or_default());
        if style.is_some_and(|style| !["danger", "success", "primary"].contains(&style)) {
            return bad("Bad Request: invalid button style".into());
        }
    }
    if method.starts_with("editmessage") {
        let id = body["message_id"].as_i64().unwrap_or_default();
        let Some(current) = inner.messages.lock().unwrap().get(&id).cloned() else {
            return bad("Bad Request: message to edit not found".into());
        };
        let same_text = match method {
            "editmessagetext" => {
                let sent = body["text"].as_str().unwrap_or_default();
                let shown = match body["parse_mode"] == "HTML" {
                    true => html_entities(sent).0,
                    false => sent.to_owned(),
                };
                current["text"].as_str() == Some(shown.as_str())
            }
            "editmessagecaption" => {
                let sent = body["caption"].as_str().unwrap_or_default();
                current["caption"].as_str() == Some(html_entities(sent).0.as_str())
            }
            _ => true,
        };
        let keyboard = |value: &Value| {
            let rows = reply_markup(value)["inline_keyboard"].clone();
            match rows.as_array().is_some_and(|rows| !rows.is_empty()) {
                true => rows,
                false => Value::Null,
            }
        };
        let same_markup = keyboard(&current) == keyboard(body);
        if same_text && same_markup {
            return bad(
                "Bad Request: message is not modified: specified new message content and reply \
                 markup are exactly the same as a current content and reply markup of the message"
                    .into(),
            );
        }
    }
    None
}

/// The message's inline keyboard after a send or edit: the one given, or none (an edit
/// without `reply_markup` removes the keyboard, as Telegram's does).
fn keep_markup(message: &mut Value, body: &Value) {
    let markup = reply_markup(body);
    let keyboard = markup["inline_keyboard"].as_array();
    match keyboard {
        Some(rows) if !rows.is_empty() => message["reply_markup"] = markup.clone(),
        _ => {
            if let Some(fields) = message.as_object_mut() {
                fields.remove("reply_markup");
            }
        }
    }
}

/// A call's `reply_markup`: JSON, or JSON in a string (a multipart form's field).
fn reply_markup(body: &Value) -> Value {
    match &body["reply_markup"] {
        Value::String(text) => serde_json::from_str(text).unwrap_or(Value::Null),
        markup => markup.clone(),
    }
}

/// Why Telegram would not parse `html`, if it would not: only its tags, each closed in
/// order, and every `&` an entity.
fn html_problem(html: &str) -> Option<String> {
    const TAGS: [&str; 14] = [
        "b",
        "strong",
        "i",
        "em",
        "u",
        "ins",
        "s",
        "strike",
        "del",
        "span",
        "tg-spoiler",
        "a",
        "code",
        "pre",
    ];
    let allowed = |name: &str| TAGS.contains(&name) || name == "blockquote" || name == "tg-emoji";
    let mut open: Vec<String> = Vec::new();
    let mut at = 0;
    while at < html.len() {
        let rest = &html[at..];
        if rest.starts_with('<') {
            let Some(end) = rest.find('>') else {
                return Some(format!("Can't find end of the tag at byte offset {at}"));
            };
            let tag = &rest[1..end];
            match tag.strip_prefix('/') {
                Some(name) => match open.pop() {
                    Some(opened) if opened == name.trim() => {}
                    _ => return Some(format!("Unexpected end tag at byte offset {at}")),
                },
                None => {
                    let name = tag.split_whitespace().next().unwrap_or_default();
                    if !allowed(name) {
                        return Some(format!(
                            "Unsupported start tag \"{name}\" at byte offset {at}"
                        ));
                    }
                    open.push(name.to_owned());
                }
            }
            at += end + 1;
        } else if let Some(after) = rest.strip_prefix('&') {
            let entity = after.split(';').next().unwrap_or_default();
            let known = matches!(entity, "lt" | "gt" | "amp" | "quot")
                || entity
                    .strip_prefix('#')
                    .is_some_and(|n| n.parse::<u32>().is_ok());
            if !known || !after.contains(';') {
                return Some(format!(
                    "Can't find end of the entity starting at byte offset {at}"
                ));
            }
            at += entity.len() + 2;
        } else {
            at += rest.chars().next().map_or(1, char::len_utf8);
        }
    }
    open.last()
        .map(|tag| format!("Can't find end tag corresponding to start tag \"{tag}\""))
}

/// Telegram's 429 body.
fn rate_limit(retry_after: u64) -> Value {
    json!({"ok": false, "error_code": 429,
        "description": format!("Too Many Requests: retry after {retry_after}"),
        "parameters": {"retry_after": retry_after}})
}

impl Inner {
    /// Records a sent or edited message (its text, or caption and file) and returns it
    /// as Telegram does: HTML parsed into plain text and entities.
    fn store(&self, id: i64, body: &Value) -> Value {
        let chat_id = body["chat_id"].as_i64().unwrap_or_default();
        let key = if body.get("text").is_some() {
            "text"
        } else {
            "caption"
        };
        let sent = body[key].as_str().unwrap_or_default().to_owned();
        let (shown, entities) = if body["parse_mode"] == "HTML" {
            html_entities(&sent)
        } else {
            let field = if key == "text" {
                "entities"
            } else {
                "caption_entities"
            };
            let entities = body.get(field);
            (sent.clone(), entities.cloned().unwrap_or(json!([])))
        };
        self.texts.lock().unwrap().insert(id, (chat_id, sent));
        let mut message = self.messages.lock().unwrap().get(&id).cloned().unwrap_or_else(
            || json!({"message_id": id, "date": now(), "chat": chat(chat_id), "from": bot_user()}),
        );
        message[key] = json!(shown);
        message[if key == "text" {
            "entities"
        } else {
            "caption_entities"
        }] = entities;
        if let Some(document) = body.get("document") {
            let name = document["file_name"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let content = document["content"].as_str().unwrap_or_default().to_owned();
            message["document"] = json!({"file_id": format!("doc{id}"), "file_unique_id": format!("u{id}"),
                "file_name": name, "mime_type": "text/plain", "file_size": content.len()});
            self.documents.lock().unwrap().insert(id, (name, content));
        }
        if let Some(topic) = body.get("message_thread_id") {
            message["message_thread_id"] = topic.clone();
            message["is_topic_message"] = json!(true);
        }
        keep_markup(&mut message, body);
        self.messages.lock().unwrap().insert(id, message.clone());
        message
    }

    /// Counts one more send or edit in `group` if it fits the minute's limit; else the
    /// seconds until it would, as Telegram's `retry_after`.
    fn take_group_slot(&self, group: i64) -> Option<u64> {
        let mut groups = self.recent_group_sends.lock().unwrap();
        let recent = groups.entry(group).or_default();
        let now = Instant::now();
        let minute = Duration::from_secs(60);
        while recent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= minute)
        {
            recent.pop_front();
        }
        if recent.len() < GROUP_SENDS_PER_MINUTE {
            recent.push_back(now);
            return None;
        }
        let frees_in = minute - now.duration_since(recent[0]);
        Some(frees_in.as_secs() + 1)
    }

    /// Whether one more send or edit fits this second's limit (and counts it if so).
    fn take_send_slot(&self) -> bool {
        let mut recent = self.recent_sends.lock().unwrap();
        let now = Instant::now();
        while recent
            .front()
            .is_some_and(|at| now.duration_since(*at) >= Duration::from_secs(1))
        {
            recent.pop_front();
        }
        let free = recent.len() < SENDS_PER_SECOND;
        if free {
            recent.push_back(now);
        }
        free
    }
}

/// Drops acknowledged updates, then returns the rest, holding the poll for up to its
/// full timeout as Telegram does.
async fn updates(inner: &Inner, body: &Value) -> Value {
    let offset = body["offset"].as_i64().unwrap_or(0);
    let timeout = Duration::from_secs(body["timeout"].as_u64().unwrap_or(0));
    let started = tokio::time::Instant::now();
    let deadline = started + timeout;
    let poll = {
        let mut polls = inner.polls.lock().unwrap();
        polls.push(Poll {
            started: started.into_std(),
            answered: None,
            updates: 0,
        });
        polls.len() - 1
    };
    // As Telegram: an update of a kind the bot did not ask for is never sent to it.
    let allowed: Option<Vec<String>> = body["allowed_updates"].as_array().map(|kinds| {
        kinds
            .iter()
            .filter_map(|kind| kind.as_str().map(str::to_owned))
            .collect()
    });
    let wanted = |update: &Value| {
        let kinds = update.as_object().into_iter().flat_map(|u| u.keys());
        let mut kinds = kinds.filter(|key| *key != "update_id");
        allowed
            .as_ref()
            .is_none_or(|allowed| kinds.all(|kind| allowed.contains(kind)))
    };
    loop {
        let news = inner.news.notified();
        {
            let mut queue = inner.updates.lock().unwrap();
            queue.retain(|u| u["update_id"].as_i64().unwrap_or(0) >= offset && wanted(u));
            if !queue.is_empty() || tokio::time::Instant::now() >= deadline {
                let mut polls = inner.polls.lock().unwrap();
                polls[poll].answered = Some(Instant::now());
                polls[poll].updates = queue.len();
                return Value::Array(queue.iter().cloned().collect());
            }
        }
        let _ = tokio::time::timeout_at(deadline, news).await;
    }
}

impl FakeTelegram {
    /// The first sendMessage call whose text satisfies `pick`.
    pub async fn sent_message(&self, pick: impl Fn(&str) -> bool) -> Call {
        self.wait_for_call("sendMessage", |b| b["text"].as_str().is_some_and(&pick))
            .await
    }

    /// The id of the message a send call created (the fake numbers them in order).
    pub async fn message_id_of(&self, call: &Call) -> i64 {
        let sent = call.body["text"].as_str().or(call.body["caption"].as_str());
        let sent = sent.unwrap_or_default().to_owned();
        self.wait_for_text(call.body["chat_id"].as_i64().unwrap(), |t| t == sent)
            .await
            .0
    }
}

/// The inline buttons of a send call, row by row.
pub fn buttons(body: &Value) -> Vec<Value> {
    let rows = body["reply_markup"]["inline_keyboard"].as_array().cloned();
    rows.unwrap_or_default()
        .iter()
        .flat_map(|row| row.as_array().cloned().unwrap_or_default())
        .collect()
}

pub fn button_labels(body: &Value) -> Vec<String> {
    buttons(body)
        .iter()
        .map(|b| b["text"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// The callback data of the button labelled `label`.
pub fn button_data(body: &Value, label: &str) -> String {
    let button = buttons(body).into_iter().find(|b| b["text"] == label);
    let button = button.unwrap_or_else(|| panic!("no {label} button in {body}"));
    button["callback_data"].as_str().unwrap().to_owned()
}
