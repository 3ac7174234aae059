//! An app-server on another machine: the same JSON-RPC, one message per WebSocket text
//! frame, authenticated with a bearer token (`codex app-server --listen ws://… --ws-auth
//! capability-token`).

use std::sync::Arc;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};

use super::unread::UnreadLog;
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderValue, StatusCode, header};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::protocol::frame::Frame;
use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
use tokio_tungstenite::tungstenite::{Error as WsError, Message};
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use tracing::{info, warn};

use super::error::CodexError;
use super::process::AppServer;
use super::spawn::HealthCheck;
use super::wire::Shared;

/// How long opening the connection (TCP, TLS, upgrade) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Largest message either way: a 20 MB file travels base64-encoded in one `fs/*` message.
const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;
/// Longer messages go out in frames of this size. The app-server takes frames of at most
/// 16 MiB (its WebSocket library's default) and resets the connection on a larger one.
const FRAME_BYTES: usize = 4 * 1024 * 1024;

/// Where a remote app-server listens and how to get in.
#[derive(Clone)]
pub struct RemoteSpec {
    /// What chats and operators call it (`/status`, logs, metrics).
    pub name: String,
    /// `ws://host:port` or `wss://host:port/path`.
    pub url: String,
    /// Sent as `Authorization: Bearer <token>`.
    pub token: String,
    pub request_timeout: Duration,
    pub health_check: HealthCheck,
    /// Shared with every other app-server of the gateway.
    pub unread: UnreadLog,
}

impl std::fmt::Debug for RemoteSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteSpec")
            .field("name", &self.name)
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

pub(super) type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

impl AppServer {
    /// Connects to a remote app-server and completes the `initialize` handshake.
    pub async fn connect(spec: &RemoteSpec) -> Result<Self, CodexError> {
        let socket = open(&spec.name, &spec.url, &spec.token).await?;
        let (outgoing, outgoing_rx) = mpsc::unbounded_channel();
        let (kill_tx, kill_rx) = oneshot::channel();
        let unread = spec.unread.clone();
        let shared = Arc::new(Shared::new(
            None,
            outgoing,
            kill_tx,
            spec.request_timeout,
            unread,
        ));
        let _ = shared.attach_url.set(spec.url.clone());
        let killed = async move {
            let _ = kill_rx.await;
        };
        let (pumped, name) = (shared.clone(), spec.name.clone());
        tokio::spawn(async move {
            pump(socket, outgoing_rx, killed, pumped.clone(), name).await;
            // A worker is its connection: when that ends, so does the server.
            pumped.mark_exited();
        });
        let server = AppServer::from_shared(shared);
        server
            .initialize()
            .await
            .map_err(|error| unreachable(&spec.name, format!("initialize failed: {error}")))?;
        info!(
            server = spec.name,
            url = spec.url,
            "connected to codex worker"
        );
        Ok(server)
    }
}

fn unreachable(server: &str, message: String) -> CodexError {
    CodexError::Unreachable {
        server: server.to_owned(),
        message,
    }
}

/// Opens the WebSocket to the app-server `server` at `url`, showing `token`.
pub(super) async fn open(server: &str, url: &str, token: &str) -> Result<Socket, CodexError> {
    let mut request = url
        .into_client_request()
        .map_err(|error| unreachable(server, error.to_string()))?;
    let bearer = HeaderValue::from_str(&format!("Bearer {token}"))
        .map_err(|_| unreachable(server, "the token is not a valid header value".into()))?;
    request.headers_mut().insert(header::AUTHORIZATION, bearer);
    let config = WebSocketConfig {
        max_message_size: Some(MAX_MESSAGE_BYTES),
        max_frame_size: Some(MAX_MESSAGE_BYTES),
        ..WebSocketConfig::default()
    };
    let connecting = tokio_tungstenite::connect_async_with_config(request, Some(config), true);
    match tokio::time::timeout(CONNECT_TIMEOUT, connecting).await {
        Err(_) => Err(unreachable(
            server,
            format!("no connection within {CONNECT_TIMEOUT:?}"),
        )),
        Ok(Ok((socket, _))) => Ok(socket),
        Ok(Err(WsError::Http(response)))
            if matches!(
                response.status(),
                StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN
            ) =>
        {
            Err(CodexError::Refused {
                server: server.to_owned(),
                url: url.to_owned(),
                status: response.status().as_u16(),
            })
        }
        Ok(Err(WsError::Http(response))) => Err(unreachable(
            server,
            format!("the upgrade was answered with HTTP {}", response.status()),
        )),
        Ok(Err(error)) => Err(unreachable(server, error.to_string())),
    }
}

/// Sends one message, in several frames when it is long.
async fn send_text(
    sink: &mut futures_util::stream::SplitSink<Socket, Message>,
    text: String,
) -> Result<(), WsError> {
    if text.len() <= FRAME_BYTES {
        return sink.send(Message::Text(text)).await;
    }
    let bytes = text.into_bytes();
    let last = bytes.len().div_ceil(FRAME_BYTES) - 1;
    for (index, chunk) in bytes.chunks(FRAME_BYTES).enumerate() {
        let opcode = match index {
            0 => OpCode::Data(Data::Text),
            _ => OpCode::Data(Data::Continue),
        };
        let frame = Frame::message(chunk.to_vec(), opcode, index == last);
        sink.feed(Message::Frame(frame)).await?;
    }
    sink.flush().await
}

/// Carries lines both ways until the connection ends or `kill` closes it from our side.
/// The caller says what its end means for the server.
pub(super) async fn pump(
    socket: Socket,
    mut outgoing: mpsc::UnboundedReceiver<String>,
    kill: impl Future<Output = ()>,
    shared: Arc<Shared>,
    name: String,
) {
    tokio::pin!(kill);
    let (mut sink, mut frames) = socket.split();
    loop {
        tokio::select! {
            frame = frames.next() => match frame {
                Some(Ok(Message::Text(text))) => shared.dispatch(&text),
                Some(Ok(Message::Close(_))) | None => break,
                // Pings are answered by the library; nothing else is part of the protocol.
                Some(Ok(_)) => {}
                Some(Err(error)) => {
                    warn!(server = name, %error, "connection to codex worker failed");
                    break;
                }
            },
            line = outgoing.recv() => match line {
                Some(line) => {
                    if let Err(error) = send_text(&mut sink, line).await {
                        warn!(server = name, %error, "cannot write to codex worker");
                        break;
                    }
                }
                None => break,
            },
            _ = &mut kill => {
                let _ = sink.close().await;
                break;
            }
        }
    }
    info!(server = name, "connection to codex app-server closed");
}
