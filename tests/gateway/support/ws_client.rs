//! A bare JSON-RPC client on an app-server's WebSocket (a worker's, or the gateway's own
//! when attachable), as another client of a thread would be: a terminal, an IDE.

use std::time::{Duration, Instant};

use futures_util::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

pub type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A bare JSON-RPC client on the worker's WebSocket.
pub struct Client {
    pub socket: Socket,
    next_id: i64,
    /// Every notification seen, by method, in order.
    pub seen: Vec<(Instant, String, Value)>,
}

impl Client {
    /// Connects to the app-server at `url` with `token` and says hello.
    pub async fn connect(url: &str, token: &str) -> Self {
        let mut request = url.into_client_request().unwrap();
        let bearer = format!("Bearer {token}").parse().unwrap();
        request.headers_mut().insert("authorization", bearer);
        let (socket, _) = tokio_tungstenite::connect_async(request).await.unwrap();
        let mut client = Self {
            socket,
            next_id: 1,
            seen: Vec::new(),
        };
        let info = json!({"clientInfo": {"name": "handover", "version": "0"}});
        client.call("initialize", info).await;
        client.notify("initialized").await;
        client
    }

    pub async fn notify(&mut self, method: &str) {
        let text = json!({"method": method}).to_string();
        self.socket.send(Message::Text(text)).await.unwrap();
    }

    /// Answers the server's request `id` with `result`.
    pub async fn respond(&mut self, id: &Value, result: Value) {
        let text = json!({"id": id, "result": result}).to_string();
        self.socket.send(Message::Text(text)).await.unwrap();
    }

    /// Sends a request and reads until its answer, keeping the notifications.
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let text = json!({"id": id, "method": method, "params": params}).to_string();
        self.socket.send(Message::Text(text)).await.unwrap();
        loop {
            let message = self.read(Duration::from_secs(30)).await.expect("an answer");
            if message["id"] == id && message.get("method").is_none() {
                return message;
            }
        }
    }

    /// The next message, notifications recorded; `None` after `wait` of silence.
    pub async fn read(&mut self, wait: Duration) -> Option<Value> {
        loop {
            let frame = tokio::time::timeout(wait, self.socket.next())
                .await
                .ok()??;
            let Message::Text(text) = frame.unwrap() else {
                continue;
            };
            let message: Value = serde_json::from_str(&text).unwrap();
            if let Some(method) = message["method"].as_str() {
                self.seen
                    .push((Instant::now(), method.to_owned(), message["params"].clone()));
            }
            return Some(message);
        }
    }

    /// A new thread in `cwd` and a turn on it saying `text`, with `overrides` (more
    /// `turn/start` params); the thread's id.
    pub async fn start_turn(&mut self, cwd: &str, text: &str, overrides: Value) -> String {
        let started = self.call("thread/start", json!({"cwd": cwd})).await;
        let thread_id = started["result"]["thread"]["id"]
            .as_str()
            .unwrap()
            .to_owned();
        let mut params = json!({"threadId": thread_id, "input": [{"type": "text", "text": text}]});
        for (key, value) in overrides.as_object().unwrap() {
            params[key] = value.clone();
        }
        self.call("turn/start", params).await;
        thread_id
    }

    /// Joins the existing thread `thread_id` (`thread/resume`, which must succeed) and
    /// starts a turn on it saying `text`, as a terminal attached to it would.
    pub async fn turn_on(&mut self, thread_id: &str, text: &str) {
        let resumed = self
            .call("thread/resume", json!({"threadId": thread_id}))
            .await;
        assert!(resumed.get("error").is_none(), "{resumed}");
        let input = json!([{"type": "text", "text": text}]);
        let turn = json!({"threadId": thread_id, "input": input});
        self.call("turn/start", turn).await;
    }

    /// Reads until `method` arrives (or `wait` passes).
    pub async fn until(&mut self, method: &str, wait: Duration) -> Option<Value> {
        let deadline = Instant::now() + wait;
        while Instant::now() < deadline {
            let message = self.read(deadline - Instant::now()).await?;
            if message["method"] == method {
                return Some(message["params"].clone());
            }
        }
        None
    }

    /// The next request the server sends (an approval), within 20 s.
    pub async fn server_request(&mut self) -> Option<Value> {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            let message = self.read(deadline - Instant::now()).await?;
            if message.get("id").is_some() && message.get("method").is_some() {
                return Some(message);
            }
        }
        None
    }
}
