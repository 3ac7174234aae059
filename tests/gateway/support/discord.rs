//! A fake Discord on 127.0.0.1: the REST API the bot uses (recording every call) and a
//! WebSocket gateway (HELLO, IDENTIFY/READY, RESUME/RESUMED, heartbeats, dispatches).

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::Bytes;
use axum::extract::ws::{CloseFrame, Message as WsMessage, WebSocket, WebSocketUpgrade};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, get};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::rate_limits::{Verdict, route_of};

pub const BOT_ID: u64 = 4242;
/// How long the fake takes to accept an interaction callback (Discord: about as long).
const INTERACTION_LATENCY: Duration = Duration::from_millis(150);
pub const APP_ID: u64 = 777;
pub const GUILD: u64 = 9000;
/// The role Discord made for the bot when it joined the guild.
pub const BOT_ROLE: u64 = 9100;
/// A role of people.
pub const DEVS_ROLE: u64 = 9200;
/// The one bot token the fake takes; any other is answered as Discord does, 401.
pub const TOKEN: &str = "discord-test-token";

#[derive(Debug, Clone)]
pub struct RestCall {
    pub method: String,
    /// Path after `/api/v10`.
    pub path: String,
    pub body: Value,
    pub at: Instant,
}

enum Outgoing {
    Text(String),
    Close(u16),
}

#[derive(Default)]
struct Inner {
    ws_url: Mutex<String>,
    calls: Mutex<Vec<RestCall>>,
    /// Current content of the bot's messages: id -> (channel, content).
    messages: Mutex<BTreeMap<u64, (u64, String)>>,
    /// Files sent with the bot's messages: id -> [(file name, content)].
    attachments: Mutex<BTreeMap<u64, Vec<(String, String)>>>,
    /// Threads: id -> (parent channel, owner, name).
    threads: Mutex<HashMap<u64, (u64, u64, String)>>,
    /// Forum channels (type 15): a thread there is a post.
    forums: Mutex<std::collections::HashSet<u64>>,
    /// Every message people sent, by id, as Discord keeps a channel's history (read back
    /// with `GET /channels/{id}/messages`).
    history: Mutex<BTreeMap<u64, Value>>,
    /// Files people attached, served under `/attachments/<id>/<name>` like Discord's CDN.
    cdn: Mutex<HashMap<String, Vec<u8>>>,
    /// (method, path part, status): answered once each to the next matching REST call.
    faults: Mutex<Vec<(String, String, u16)>>,
    connection: Mutex<Option<mpsc::UnboundedSender<Outgoing>>>,
    next_id: AtomicU64,
    seq: AtomicU64,
    identifies: AtomicU64,
    resumes: AtomicU64,
    /// The message each button press (by its interaction token) was made under: an
    /// UPDATE_MESSAGE answer edits that message, as Discord does.
    clicked: Mutex<HashMap<String, (u64, u64)>>,
    /// The buttons under each bot message now (Discord's `components`).
    components: Mutex<HashMap<u64, Value>>,
    /// The bot's messages sent without a notification (`SUPPRESS_NOTIFICATIONS`).
    quiet: Mutex<std::collections::HashSet<u64>>,
    /// Each interaction by its token: when it was created, and whether it was answered.
    interactions: Mutex<HashMap<String, (Instant, bool)>>,
    limits: super::rate_limits::RouteLimits,
}

/// Discord takes an interaction's first answer within 3 s of its creation, and edits of
/// that answer for 15 minutes.
const INTERACTION_ANSWER_WINDOW: Duration = Duration::from_secs(3);
const INTERACTION_TOKEN_LIFETIME: Duration = Duration::from_secs(15 * 60);
/// How long an injected 429 asks the bot to wait: longer than any back-off of its own,
/// so a retry that comes sooner did not honour it.
pub const FAULT_RETRY_AFTER: Duration = Duration::from_millis(2500);
/// Longest message content Discord takes.
const MAX_CONTENT: usize = 2000;

#[derive(Clone)]
pub struct FakeDiscord {
    /// Plain HTTP base: the gateway, the CDN, and the REST API for a test of `api_url`.
    pub url: String,
    /// Where the REST API answers as discord.com, over TLS.
    pub rest_address: SocketAddr,
    /// The authority that signed the fake's discord.com certificate (PEM).
    pub ca_file: PathBuf,
    inner: Arc<Inner>,
    _dir: Arc<tempfile::TempDir>,
}

pub fn user(id: u64) -> Value {
    json!({"id": id.to_string(), "username": format!("user{id}"), "discriminator": "0",
           "global_name": null, "avatar": null, "bot": id == BOT_ID})
}

fn timestamp() -> &'static str {
    "2026-12-02T12:00:00.000000+00:00"
}

pub fn member(user_id: u64, roles: &[u64]) -> Value {
    json!({"user": user(user_id), "roles": roles.iter().map(u64::to_string).collect::<Vec<_>>(),
           "joined_at": timestamp(), "deaf": false, "mute": false, "flags": 0, "permissions": "0"})
}

/// A guild role as Discord lists it; a bot's own role is managed and tagged with it.
fn role(id: u64, name: &str, bot: Option<u64>) -> Value {
    let tags = bot.map_or(json!({}), |bot| json!({"bot_id": bot.to_string()}));
    json!({"id": id.to_string(), "name": name, "color": 0, "colors": {"primary_color": 0,
        "secondary_color": null, "tertiary_color": null}, "hoist": false, "icon": null,
        "unicode_emoji": null, "position": 1, "permissions": "0", "managed": bot.is_some(),
        "mentionable": true, "tags": tags, "flags": 0})
}

/// Sends a gateway event to the bot's session.
fn send_event(inner: &Inner, event: &str, data: Value) {
    let seq = inner.seq.fetch_add(1, Ordering::SeqCst) + 1;
    let frame = json!({"op": 0, "t": event, "s": seq, "d": data}).to_string();
    let connection = inner.connection.lock().unwrap();
    // With no session (the bot is away), Discord delivers an event to no one.
    if let Some(connection) = connection.as_ref() {
        let _ = connection.send(Outgoing::Text(frame));
    }
}

/// A thread as Discord describes it (type 11, a public thread).
fn thread_channel(id: u64, parent: u64, owner: u64, name: &str) -> Value {
    json!({"id": id.to_string(), "type": 11, "guild_id": GUILD.to_string(), "name": name,
        "parent_id": parent.to_string(), "owner_id": owner.to_string(),
        "permission_overwrites": [], "nsfw": false, "last_message_id": null,
        "rate_limit_per_user": 0, "message_count": 0, "member_count": 1,
        "thread_metadata": {"archived": false, "auto_archive_duration": 1440,
            "archive_timestamp": timestamp(), "locked": false}})
}

/// Opens a thread of the bot's in `parent` (from message `id`, which is then its id, or
/// a new id), as Discord answers it with 201 and tells the gateway (THREAD_CREATE).
fn open_thread(inner: &Inner, parent: &str, from: Option<&str>, body: &Value) -> Response {
    let parent: u64 = parent.parse().unwrap_or(0);
    let id = match from {
        Some(message) => message.parse().unwrap_or(0),
        None => inner.next_id.fetch_add(1, Ordering::SeqCst),
    };
    let name = body["name"].as_str().unwrap_or_default().to_owned();
    let mut threads = inner.threads.lock().unwrap();
    if threads.contains_key(&id) {
        let body = json!({"message": "A thread has already been created for this message", "code": 160004});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    threads.insert(id, (parent, BOT_ID, name.clone()));
    drop(threads);
    if let Some(content) = body["message"]["content"].as_str() {
        // A forum post starts with its message.
        let first = inner.next_id.fetch_add(1, Ordering::SeqCst);
        let kept = (id, content.to_owned());
        inner.messages.lock().unwrap().insert(first, kept);
    }
    let thread = thread_channel(id, parent, BOT_ID, &name);
    let mut created = thread.clone();
    created["newly_created"] = json!(true);
    send_event(inner, "THREAD_CREATE", created);
    (StatusCode::CREATED, axum::Json(thread)).into_response()
}

pub fn message(id: u64, channel: u64, author: u64, content: &str, guild: bool) -> Value {
    let mut message = json!({
        "id": id.to_string(), "channel_id": channel.to_string(), "author": user(author),
        "content": content, "timestamp": timestamp(), "edited_timestamp": null, "tts": false,
        "mention_everyone": false, "mentions": [], "mention_roles": [], "attachments": [],
        "embeds": [], "pinned": false, "type": 0, "components": [],
    });
    if guild {
        message["guild_id"] = json!(GUILD.to_string());
    }
    message
}

impl FakeDiscord {
    /// The files sent with the bot's message `id`: (file name, content) each.
    pub fn attachments_of(&self, id: u64) -> Vec<(String, String)> {
        let attachments = self.inner.attachments.lock().unwrap();
        attachments.get(&id).cloned().unwrap_or_default()
    }

    pub async fn start() -> Self {
        let inner = Arc::new(Inner {
            next_id: AtomicU64::new(900_000_000_000_000_000),
            ..Inner::default()
        });
        let app = Router::new()
            .route("/gateway", get(gateway))
            .route("/api/v10/{*path}", any(rest))
            .route("/attachments/{*path}", get(cdn))
            .with_state(inner.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        *inner.ws_url.lock().unwrap() = format!("ws://{addr}/gateway");
        let dir = tempfile::tempdir().unwrap();
        let (tls, ca_file) = super::tls::listen("discord.com", dir.path()).await;
        let rest_address = axum::serve::Listener::local_addr(&tls).unwrap();
        let secure = app.clone();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        tokio::spawn(async move { axum::serve(tls, secure).await.unwrap() });
        Self {
            url: format!("http://{addr}"),
            rest_address,
            ca_file,
            _dir: Arc::new(dir),
            inner,
        }
    }

    /// Points the bot at this fake as at discord.com: over TLS, through serenity's
    /// rate limiter, as in production.
    pub fn configure(&self, discord: &mut codex_gateway::config::DiscordConfig) {
        discord.connect_to = Some(self.rest_address);
        discord.ca_file = Some(self.ca_file.clone());
    }

    /// Calls answered 429 because the bot did not wait for a route's limit.
    pub fn rate_limited(&self) -> u64 {
        self.inner.limits.refused()
    }

    pub fn next_id(&self) -> u64 {
        self.inner.next_id.fetch_add(1, Ordering::SeqCst)
    }

    /// Waits until the bot has identified (or resumed) `count` times in total.
    pub async fn wait_connected(&self, count: u64) {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        while self.identifies() + self.resumes() < count {
            assert!(
                Instant::now() < deadline,
                "the bot never connected to the gateway"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    pub fn identifies(&self) -> u64 {
        self.inner.identifies.load(Ordering::SeqCst)
    }

    pub fn resumes(&self) -> u64 {
        self.inner.resumes.load(Ordering::SeqCst)
    }

    /// Sends any gateway event, as Discord would dispatch it.
    pub fn dispatch(&self, event: &str, data: Value) {
        if event == "MESSAGE_CREATE" {
            self.keep(&data);
        }
        if let (true, Some(token)) = (event == "INTERACTION_CREATE", data["token"].as_str()) {
            let created = (Instant::now(), false);
            self.inner
                .interactions
                .lock()
                .unwrap()
                .insert(token.to_owned(), created);
        }
        send_event(&self.inner, event, data);
    }

    /// The buttons under the bot's message `id` now: (label, custom id) each.
    pub fn buttons_of(&self, id: u64) -> Vec<(String, String)> {
        let components = self.inner.components.lock().unwrap().get(&id).cloned();
        let rows = components.unwrap_or(Value::Null);
        let rows = rows.as_array().cloned().unwrap_or_default();
        rows.iter()
            .flat_map(|row| row["components"].as_array().cloned().unwrap_or_default())
            .map(|b| {
                let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
                (text(&b["label"]), text(&b["custom_id"]))
            })
            .collect()
    }

    /// Whether the bot's message `id` was sent without a notification.
    pub fn is_quiet(&self, id: u64) -> bool {
        self.inner.quiet.lock().unwrap().contains(&id)
    }

    /// Whether the bot has a gateway session now.
    pub fn is_connected(&self) -> bool {
        let connection = self.inner.connection.lock().unwrap();
        connection.as_ref().is_some_and(|tx| !tx.is_closed())
    }

    fn keep(&self, message: &Value) {
        let id = message["id"]
            .as_str()
            .and_then(|id| id.parse().ok())
            .unwrap_or(0);
        self.inner
            .history
            .lock()
            .unwrap()
            .insert(id, message.clone());
    }

    /// A guild message sent while the bot has no gateway session: kept in the channel's
    /// history, dispatched to nobody (Discord replays nothing to a new session).
    pub fn channel_message_while_away(&self, channel: u64, author: u64, content: &str) {
        let mut data = message(self.next_id(), channel, author, content, true);
        data["member"] = member(author, &[]);
        data["member"].as_object_mut().unwrap().remove("user");
        self.keep(&data);
    }

    /// A guild message in `channel` from `author` with `roles`.
    pub fn channel_message(&self, channel: u64, author: u64, roles: &[u64], content: &str) {
        let mut data = message(self.next_id(), channel, author, content, true);
        data["member"] = member(author, roles);
        data["member"].as_object_mut().unwrap().remove("user");
        self.dispatch("MESSAGE_CREATE", data);
    }

    /// A guild message in `channel` from `author` replying to `replied` (a message as
    /// `message` makes it), as Discord sends a reply: type 19 with the message it answers.
    pub fn channel_reply(&self, channel: u64, author: u64, replied: Value, content: &str) {
        let mut data = message(self.next_id(), channel, author, content, true);
        data["member"] = member(author, &[]);
        data["member"].as_object_mut().unwrap().remove("user");
        data["type"] = json!(19);
        data["message_reference"] = json!({"type": 0, "message_id": replied["id"],
            "channel_id": channel.to_string(), "guild_id": GUILD.to_string()});
        data["referenced_message"] = replied;
        self.dispatch("MESSAGE_CREATE", data);
    }

    /// A guild message that mentions `role` (`<@&role>` in `content`).
    pub fn channel_message_to_role(&self, channel: u64, author: u64, role: u64, content: &str) {
        let mut data = message(self.next_id(), channel, author, content, true);
        data["member"] = member(author, &[]);
        data["member"].as_object_mut().unwrap().remove("user");
        data["mention_roles"] = json!([role.to_string()]);
        self.dispatch("MESSAGE_CREATE", data);
    }

    /// A guild message with files, each (file name, content type, bytes), on the fake's
    /// CDN as Discord keeps them.
    pub fn channel_message_with_files(
        &self,
        channel: u64,
        author: u64,
        content: &str,
        files: &[(&str, &str, &[u8])],
    ) {
        let id = self.next_id();
        let attachments: Vec<Value> = files
            .iter()
            .enumerate()
            .map(|(n, (name, content_type, bytes))| {
                let path = format!("{id}/{n}/{name}");
                let url = format!("{}/attachments/{path}", self.url);
                self.inner.cdn.lock().unwrap().insert(path, bytes.to_vec());
                json!({"id": (id + n as u64 + 1).to_string(), "filename": name,
                       "size": bytes.len(), "url": url, "proxy_url": url,
                       "content_type": content_type})
            })
            .collect();
        let mut data = message(id, channel, author, content, true);
        data["attachments"] = json!(attachments);
        data["member"] = member(author, &[]);
        data["member"].as_object_mut().unwrap().remove("user");
        self.dispatch("MESSAGE_CREATE", data);
    }

    /// A system message (`kind`: 18 thread created, 6 pin, 7 member join, 8 boost).
    pub fn system_message(&self, channel: u64, author: u64, kind: u64, content: &str) {
        let mut data = message(self.next_id(), channel, author, content, true);
        data["type"] = json!(kind);
        data["member"] = member(author, &[]);
        data["member"].as_object_mut().unwrap().remove("user");
        self.dispatch("MESSAGE_CREATE", data);
    }

    pub fn dm(&self, channel: u64, author: u64, content: &str) {
        self.dispatch(
            "MESSAGE_CREATE",
            message(self.next_id(), channel, author, content, false),
        );
    }

    /// The next `method` call whose path contains `path_part` gets `status`.
    pub fn fail_next(&self, method: &str, path_part: &str, status: u16) {
        let fault = (method.to_owned(), path_part.to_owned(), status);
        self.inner.faults.lock().unwrap().push(fault);
    }

    /// Makes `thread` a thread of `parent`.
    /// A thread a person opened in `parent`.
    pub fn add_thread(&self, thread: u64, parent: u64) {
        let opened = (parent, 1, "a thread".to_owned());
        self.inner.threads.lock().unwrap().insert(thread, opened);
    }

    /// Makes `channel` a forum channel (type 15).
    pub fn add_forum(&self, channel: u64) {
        self.inner.forums.lock().unwrap().insert(channel);
    }

    /// The threads the bot opened: (thread, parent, name) each, oldest first.
    pub fn threads_opened(&self) -> Vec<(u64, u64, String)> {
        let threads = self.inner.threads.lock().unwrap();
        let mut opened: Vec<_> = threads
            .iter()
            .filter(|(_, (_, owner, _))| *owner == BOT_ID)
            .map(|(id, (parent, _, name))| (*id, *parent, name.clone()))
            .collect();
        opened.sort();
        opened
    }

    /// Archives `thread`, as Discord does after its inactivity period (THREAD_UPDATE).
    pub fn archive(&self, thread: u64) {
        let known = self.inner.threads.lock().unwrap().get(&thread).cloned();
        let (parent, owner, name) = known.expect("a thread the fake knows");
        let mut data = thread_channel(thread, parent, owner, &name);
        data["thread_metadata"]["archived"] = json!(true);
        self.dispatch("THREAD_UPDATE", data);
    }

    /// A slash command from `author` in `channel`.
    pub fn slash(&self, channel: u64, author: u64, name: &str) {
        self.slash_with(channel, author, name, &[]);
    }

    /// A slash command with string options, given as (name, value).
    pub fn slash_with(&self, channel: u64, author: u64, name: &str, options: &[(&str, &str)]) {
        let id = self.next_id();
        let options: Vec<Value> = options
            .iter()
            .map(|(name, value)| json!({"name": name, "type": 3, "value": value}))
            .collect();
        self.dispatch(
            "INTERACTION_CREATE",
            json!({
                "id": id.to_string(), "application_id": APP_ID.to_string(), "type": 2,
                "data": {"id": "1", "name": name, "type": 1, "options": options},
                "guild_id": GUILD.to_string(), "channel_id": channel.to_string(),
                "member": member(author, &[]), "token": format!("cmd-token-{id}"), "version": 1,
                "app_permissions": "0", "locale": "en-US", "entitlements": [],
                "authorizing_integration_owners": {}, "context": 0, "attachment_size_limit": 8388608,
            }),
        );
    }

    /// `author` clicks the button `custom_id` under bot message `message_id`.
    pub fn click(&self, channel: u64, author: u64, message_id: u64, custom_id: &str) -> String {
        let id = self.next_id();
        let token = format!("click-token-{id}");
        let clicked = (channel, message_id);
        self.inner
            .clicked
            .lock()
            .unwrap()
            .insert(token.clone(), clicked);
        let content = self.content(message_id).unwrap_or_default();
        self.dispatch(
            "INTERACTION_CREATE",
            json!({
                "id": id.to_string(), "application_id": APP_ID.to_string(), "type": 3,
                "data": {"custom_id": custom_id, "component_type": 2},
                "guild_id": GUILD.to_string(), "channel_id": channel.to_string(),
                "member": member(author, &[]), "token": token, "version": 1,
                "message": message(message_id, channel, BOT_ID, &content, true),
                "app_permissions": "0", "locale": "en-US", "entitlements": [],
                "authorizing_integration_owners": {}, "context": 0, "attachment_size_limit": 8388608,
            }),
        );
        token
    }

    /// Asks the bot to reconnect (op 7 RECONNECT), as Discord does before it moves a
    /// session: the bot RESUMEs.
    pub fn request_reconnect(&self) {
        self.send_op(json!({"op": 7, "d": null}));
    }

    /// Ends the session for good (op 9 INVALID_SESSION, not resumable): the bot must
    /// IDENTIFY anew, and Discord replays nothing to the new session.
    pub fn invalidate_session(&self) {
        self.send_op(json!({"op": 9, "d": false}));
    }

    fn send_op(&self, op: Value) {
        let connection = self.inner.connection.lock().unwrap();
        let connection = connection.as_ref().expect("connected");
        connection.send(Outgoing::Text(op.to_string())).unwrap();
    }

    /// Closes the gateway socket with `code` (4000 makes the bot RESUME).
    pub fn close_gateway(&self, code: u16) {
        let connection = self.inner.connection.lock().unwrap().take();
        connection
            .expect("connected")
            .send(Outgoing::Close(code))
            .unwrap();
    }

    pub fn calls(&self, method: &str, path_part: &str) -> Vec<RestCall> {
        self.inner
            .calls
            .lock()
            .unwrap()
            .iter()
            .filter(|c| c.method == method && c.path.contains(path_part))
            .cloned()
            .collect()
    }

    /// Current contents of the bot's messages in `channel`, oldest first.
    pub fn contents(&self, channel: u64) -> Vec<(u64, String)> {
        self.inner
            .messages
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, (c, _))| *c == channel)
            .map(|(id, (_, text))| (*id, text.clone()))
            .collect()
    }

    pub fn content(&self, message_id: u64) -> Option<String> {
        self.inner
            .messages
            .lock()
            .unwrap()
            .get(&message_id)
            .map(|(_, t)| t.clone())
    }

    pub async fn wait_for_content(
        &self,
        channel: u64,
        pick: impl Fn(&str) -> bool,
    ) -> (u64, String) {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        loop {
            if let Some(found) = self.contents(channel).into_iter().find(|(_, t)| pick(t)) {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "no matching message in {channel}: {:#?}",
                self.contents(channel)
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn wait_for_call(
        &self,
        method: &str,
        path_part: &str,
        pick: impl Fn(&Value) -> bool,
    ) -> RestCall {
        let deadline = Instant::now() + super::ANSWER_TIMEOUT;
        loop {
            if let Some(call) = self
                .calls(method, path_part)
                .into_iter()
                .find(|c| pick(&c.body))
            {
                return call;
            }
            assert!(
                Instant::now() < deadline,
                "no matching {method} {path_part} call"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

async fn cdn(State(inner): State<Arc<Inner>>, Path(path): Path<String>) -> Response {
    match inner.cdn.lock().unwrap().get(&path) {
        Some(bytes) => bytes.clone().into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

async fn rest(
    State(inner): State<Arc<Inner>>,
    method: Method,
    Path(path): Path<String>,
    axum::extract::RawQuery(query): axum::extract::RawQuery,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = format!("/{path}");
    // Interaction answers and their follow-ups are authorized by the interaction's token.
    let by_interaction = path.starts_with("/interactions/") || path.starts_with("/webhooks/");
    let authorized =
        headers.get("authorization").and_then(|v| v.to_str().ok()) == Some(&format!("Bot {TOKEN}"));
    if !by_interaction && !authorized {
        let body = json!({"message": "401: Unauthorized", "code": 0});
        return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
    }
    let body: Value = match super::multipart::parts(&headers, &body) {
        Some(parts) => form_body(parts),
        None => serde_json::from_slice(&body).unwrap_or(Value::Null),
    };
    inner.calls.lock().unwrap().push(RestCall {
        method: method.to_string(),
        path: path.clone(),
        body: body.clone(),
        at: Instant::now(),
    });
    // Interaction answers are not limited per route.
    let limit = if by_interaction {
        HeaderMap::new()
    } else {
        match inner.limits.check(&path) {
            Verdict::Allowed(headers) => headers,
            Verdict::Refused(answer) => return answer,
        }
    };
    let mut answer = handle(inner, method, path, query, body).await;
    answer.headers_mut().extend(limit);
    answer
}

async fn handle(
    inner: Arc<Inner>,
    method: Method,
    path: String,
    query: Option<String>,
    body: Value,
) -> Response {
    let fault = {
        let mut faults = inner.faults.lock().unwrap();
        let hit = faults
            .iter()
            .position(|(m, part, _)| *m == method.as_str() && path.contains(part.as_str()));
        hit.map(|index| faults.remove(index).2)
    };
    if let Some(status) = fault {
        if status == 429 {
            return super::rate_limits::too_many(&route_of(&path), 0, FAULT_RETRY_AFTER);
        }
        let body = json!({"message": "fake failure", "code": 0});
        return (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    }
    if path.starts_with("/interactions/") {
        // Discord takes a moment to accept an interaction's answer; a gateway that waits
        // for it before handling the command lets later messages overtake the command.
        tokio::time::sleep(INTERACTION_LATENCY).await;
    }
    let too_long = |content: &Value| {
        content
            .as_str()
            .is_some_and(|c| c.chars().count() > MAX_CONTENT)
    };
    if too_long(&body["content"]) || too_long(&body["data"]["content"]) {
        let body = json!({"message": "Invalid Form Body", "code": 50035, "errors": {"content":
            {"_errors": [{"code": "BASE_TYPE_MAX_LENGTH", "message": "Must be 2000 or fewer in length."}]}}});
        return (StatusCode::BAD_REQUEST, axum::Json(body)).into_response();
    }
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let json = |value: Value| axum::Json(value).into_response();
    match (method.as_str(), parts.as_slice()) {
        ("GET", ["gateway"]) => json(json!({"url": inner.ws_url.lock().unwrap().clone()})),
        ("GET", ["users", "@me"]) => json(user(BOT_ID)),
        ("PUT", ["applications", ..]) => json(Value::Array(
            body.as_array()
                .cloned()
                .unwrap_or_default()
                .into_iter()
                .enumerate()
                .map(|(i, mut command)| {
                    command["id"] = json!((100 + i).to_string());
                    command["application_id"] = json!(APP_ID.to_string());
                    command["version"] = json!("1");
                    command["type"] = json!(1);
                    command["default_member_permissions"] = Value::Null;
                    command
                })
                .collect(),
        )),
        ("GET", ["guilds", _, "roles"]) => json(json!([
            role(GUILD, "@everyone", None),
            role(BOT_ROLE, "Codex", Some(BOT_ID)),
            role(DEVS_ROLE, "devs", None)
        ])),
        ("GET", ["channels", channel, "messages"]) => {
            json(Value::Array(history(&inner, channel, query.as_deref())))
        }
        ("GET", ["channels", channel]) => {
            let id: u64 = channel.parse().unwrap_or(0);
            let thread = inner.threads.lock().unwrap().get(&id).cloned();
            if let Some((parent, owner, name)) = thread {
                return json(thread_channel(id, parent, owner, &name));
            }
            let kind = if inner.forums.lock().unwrap().contains(&id) {
                15
            } else {
                0
            };
            json(
                json!({"id": channel, "type": kind, "guild_id": GUILD.to_string(),
                "name": "chan", "position": 0, "permission_overwrites": [], "nsfw": false}),
            )
        }
        ("POST", ["channels", channel, "messages", message, "threads"]) => {
            open_thread(&inner, channel, Some(message), &body)
        }
        ("POST", ["channels", channel, "threads"]) => open_thread(&inner, channel, None, &body),
        ("PATCH", ["channels", channel]) => {
            let id: u64 = channel.parse().unwrap_or(0);
            let mut threads = inner.threads.lock().unwrap();
            let Some((parent, owner, name)) = threads.get_mut(&id) else {
                let body = json!({"message": "Missing Permissions", "code": 50013});
                return (StatusCode::FORBIDDEN, axum::Json(body)).into_response();
            };
            if let Some(new) = body["name"].as_str() {
                *name = new.to_owned();
            }
            json(thread_channel(id, *parent, *owner, name))
        }
        ("POST", ["channels", channel, "messages"]) => {
            let id = inner.next_id.fetch_add(1, Ordering::SeqCst);
            let channel: u64 = channel.parse().unwrap_or(0);
            let content = body["content"].as_str().unwrap_or_default().to_owned();
            inner
                .messages
                .lock()
                .unwrap()
                .insert(id, (channel, content.clone()));
            let files: Vec<(String, String)> = body["files"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|f| {
                    (
                        f["file_name"].as_str().unwrap_or_default().to_owned(),
                        f["content"].as_str().unwrap_or_default().to_owned(),
                    )
                })
                .collect();
            let components = body["components"].clone();
            inner.components.lock().unwrap().insert(id, components);
            if body["flags"]
                .as_u64()
                .is_some_and(|flags| flags & 4096 != 0)
            {
                inner.quiet.lock().unwrap().insert(id);
            }
            let mut sent = message(id, channel, BOT_ID, &content, true);
            sent["attachments"] = files
                .iter()
                .enumerate()
                .map(|(i, (name, content))| json!({"id": (id * 10 + i as u64).to_string(),
                    "filename": name, "size": content.len(), "url": "http://127.0.0.1/f", "proxy_url": "http://127.0.0.1/f"}))
                .collect();
            inner.attachments.lock().unwrap().insert(id, files);
            json(sent)
        }
        ("PATCH", ["channels", channel, "messages", id]) => {
            let id: u64 = id.parse().unwrap_or(0);
            let channel: u64 = channel.parse().unwrap_or(0);
            let content = body["content"].as_str().unwrap_or_default().to_owned();
            inner
                .messages
                .lock()
                .unwrap()
                .insert(id, (channel, content.clone()));
            if let Some(components) = body.get("components") {
                inner
                    .components
                    .lock()
                    .unwrap()
                    .insert(id, components.clone());
            }
            json(message(id, channel, BOT_ID, &content, true))
        }
        ("POST", ["interactions", _, token, "callback"]) => {
            if let Some(refusal) = answer_interaction(&inner, token) {
                return refusal;
            }
            // UPDATE_MESSAGE (7) edits the message the pressed button is under.
            let under = inner.clicked.lock().unwrap().get(*token).copied();
            if let (7, Some((channel, id))) = (body["type"].as_u64().unwrap_or(0), under) {
                let content = body["data"]["content"].as_str().unwrap_or_default();
                let mut messages = inner.messages.lock().unwrap();
                messages.insert(id, (channel, content.to_owned()));
                let components = body["data"]["components"].clone();
                inner.components.lock().unwrap().insert(id, components);
            }
            StatusCode::NO_CONTENT.into_response()
        }
        ("PATCH", ["webhooks", _, token, "messages", "@original"]) => {
            let created = inner.interactions.lock().unwrap().get(*token).copied();
            if created.is_none_or(|(at, _)| at.elapsed() >= INTERACTION_TOKEN_LIFETIME) {
                let body = json!({"message": "Invalid Webhook Token", "code": 50027});
                return (StatusCode::UNAUTHORIZED, axum::Json(body)).into_response();
            }
            let content = body["content"].as_str().unwrap_or_default();
            json(message(1, 0, BOT_ID, content, true))
        }
        _ => StatusCode::NO_CONTENT.into_response(),
    }
}

/// Discord's refusal of an interaction's answer, if it refuses: unknown or past its 3 s
/// (10062), or answered already (40060).
fn answer_interaction(inner: &Inner, token: &str) -> Option<Response> {
    let mut interactions = inner.interactions.lock().unwrap();
    match interactions.get_mut(token) {
        Some((created, answered)) if created.elapsed() < INTERACTION_ANSWER_WINDOW => {
            if *answered {
                let body =
                    json!({"message": "Interaction has already been acknowledged.", "code": 40060});
                return Some((StatusCode::BAD_REQUEST, axum::Json(body)).into_response());
            }
            *answered = true;
            None
        }
        _ => {
            let body = json!({"message": "Unknown interaction", "code": 10062});
            Some((StatusCode::NOT_FOUND, axum::Json(body)).into_response())
        }
    }
}

/// A multipart message as its JSON body (`payload_json`), with its files under `files`
/// as `{file_name, content}`.
fn form_body(parts: Vec<super::multipart::Part>) -> Value {
    let mut body = json!({});
    let mut files = Vec::new();
    for part in parts {
        let text = String::from_utf8_lossy(&part.data).into_owned();
        match part.file_name {
            Some(name) => files.push(json!({"file_name": name, "content": text})),
            None if part.name == "payload_json" => {
                body = serde_json::from_str(&text).unwrap_or(json!({}));
            }
            None => {}
        }
    }
    body["files"] = Value::Array(files);
    body
}

/// A channel's messages after `?after=` (at most `limit`, 50 by default), newest first,
/// the bot's own among them, as Discord answers.
fn history(inner: &Inner, channel_id: &str, query: Option<&str>) -> Vec<Value> {
    let channel: u64 = channel_id.parse().unwrap_or(0);
    let param = |name: &str| {
        url::form_urlencoded::parse(query.unwrap_or_default().as_bytes())
            .find(|(key, _)| key == name)
            .and_then(|(_, value)| value.parse::<u64>().ok())
    };
    let after = param("after").unwrap_or(0);
    let limit = param("limit").unwrap_or(50) as usize;
    let people = inner.history.lock().unwrap().clone();
    let bots = inner.messages.lock().unwrap().clone();
    let mut found: Vec<(u64, Value)> = people
        .into_iter()
        .filter(|(id, m)| *id > after && m["channel_id"].as_str() == Some(channel_id))
        .chain(
            bots.into_iter()
                .filter(|(id, (c, _))| *id > after && *c == channel)
                .map(|(id, (c, content))| (id, message(id, c, BOT_ID, &content, true))),
        )
        .collect();
    found.sort_by_key(|(id, _)| *id);
    found.truncate(limit);
    found.into_iter().rev().map(|(_, m)| m).collect()
}

async fn gateway(State(inner): State<Arc<Inner>>, upgrade: WebSocketUpgrade) -> Response {
    upgrade.on_upgrade(move |socket| serve_gateway(inner, socket))
}

async fn serve_gateway(inner: Arc<Inner>, mut socket: WebSocket) {
    let hello = json!({"op": 10, "d": {"heartbeat_interval": 45000}}).to_string();
    if socket.send(WsMessage::Text(hello.into())).await.is_err() {
        return;
    }
    let (tx, mut rx) = mpsc::unbounded_channel();
    serve_session(&inner, &mut socket, &tx, &mut rx).await;
    // The session is over: Discord dispatches to it no more.
    let mut connection = inner.connection.lock().unwrap();
    if connection
        .as_ref()
        .is_some_and(|current| current.same_channel(&tx))
    {
        *connection = None;
    }
}

async fn serve_session(
    inner: &Arc<Inner>,
    socket: &mut WebSocket,
    tx: &mpsc::UnboundedSender<Outgoing>,
    rx: &mut mpsc::UnboundedReceiver<Outgoing>,
) {
    loop {
        tokio::select! {
            frame = socket.recv() => {
                let Some(Ok(frame)) = frame else { return };
                let text = match frame {
                    WsMessage::Text(text) => text.to_string(),
                    WsMessage::Binary(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                    WsMessage::Close(_) => return,
                    _ => continue,
                };
                let Ok(payload) = serde_json::from_str::<Value>(&text) else { continue };
                let reply = match payload["op"].as_u64() {
                    Some(1) => json!({"op": 11}),
                    Some(2) => {
                        inner.identifies.fetch_add(1, Ordering::SeqCst);
                        *inner.connection.lock().unwrap() = Some(tx.clone());
                        let seq = inner.seq.fetch_add(1, Ordering::SeqCst) + 1;
                        json!({"op": 0, "t": "READY", "s": seq, "d": {
                            "v": 10, "user": user(BOT_ID), "guilds": [], "session_id": "session-1",
                            "resume_gateway_url": inner.ws_url.lock().unwrap().clone(),
                            "shard": [0, 1], "application": {"id": APP_ID.to_string(), "flags": 0},
                            "private_channels": [], "relationships": [], "presences": []}})
                    }
                    Some(6) => {
                        inner.resumes.fetch_add(1, Ordering::SeqCst);
                        *inner.connection.lock().unwrap() = Some(tx.clone());
                        let seq = inner.seq.load(Ordering::SeqCst);
                        json!({"op": 0, "t": "RESUMED", "s": seq, "d": {}})
                    }
                    _ => continue,
                };
                if socket.send(WsMessage::Text(reply.to_string().into())).await.is_err() {
                    return;
                }
            }
            out = rx.recv() => match out {
                Some(Outgoing::Text(text)) => {
                    if socket.send(WsMessage::Text(text.into())).await.is_err() {
                        return;
                    }
                }
                Some(Outgoing::Close(code)) => {
                    let frame = CloseFrame { code, reason: "test".into() };
                    let _ = socket.send(WsMessage::Close(Some(frame))).await;
                    return;
                }
                None => return,
            }
        }
    }
}
