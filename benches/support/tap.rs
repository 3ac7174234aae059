//! A tap between a Codex client and the real app-server: stdin and stdout pass through,
//! and the moment each `turn/start` reaches the tap is noted with its text. The clock is
//! CLOCK_MONOTONIC, which every process on the machine shares, so the bench times a
//! client up to the app-server's door without Codex's own time in it (that varies by
//! several milliseconds from one turn to the next, more than the gateway's whole share).
//! The bench binary runs it as `<bench> app-server ...` when [`LOG`] is set.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::Duration;

use serde_json::Value;

/// The file the tap notes `turn/start`s in, one line each: nanoseconds, then the text.
pub const LOG: &str = "BENCH_TAP_LOG";
/// The real app-server's binary.
pub const CODEX: &str = "BENCH_TAP_CODEX";

/// CLOCK_MONOTONIC now, in nanoseconds.
pub fn now_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the timespec it is given and nothing else.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// Runs the real app-server with this process's arguments and passes its client's
/// messages to it, noting each `turn/start`: line by line over stdin, or over a
/// WebSocket when it is to listen on one (`--listen ws://…`).
pub fn serve() -> ExitCode {
    let log = std::env::var_os(LOG).expect("BENCH_TAP_LOG");
    let codex = std::env::var_os(CODEX).expect("BENCH_TAP_CODEX");
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    match std::env::args().any(|arg| arg.starts_with("ws://")) {
        true => websocket::serve(log, codex),
        false => serve_stdio(log, codex),
    }
}

/// Writes when a `turn/start` (a JSON-RPC message) reached the tap, with its text.
fn note_turn_start(log: &mut impl Write, message: &str) {
    if !message.contains("\"turn/start\"") {
        return;
    }
    let reached = now_ns();
    let message: Value = serde_json::from_str(message).unwrap_or_default();
    let text = message["params"]["input"][0]["text"].as_str().unwrap_or("");
    writeln!(log, "{reached} {}", text.replace('\n', " ")).unwrap();
}

/// Over stdio: stdin passed on line by line; the app-server's stdout and stderr are the
/// tap's.
fn serve_stdio(mut log: std::fs::File, codex: std::ffi::OsString) -> ExitCode {
    let mut codex = Command::new(codex)
        .args(std::env::args_os().skip(1))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_codex = codex.stdin.take().unwrap();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        note_turn_start(&mut log, &line);
        let passed = to_codex
            .write_all(line.as_bytes())
            .and_then(|()| to_codex.write_all(b"\n"))
            .and_then(|()| to_codex.flush());
        if passed.is_err() {
            break;
        }
    }
    drop(to_codex);
    let status = codex.wait().unwrap();
    ExitCode::from(status.code().unwrap_or(1) as u8)
}

/// When the `turn/start` with `text` reached the tap (CLOCK_MONOTONIC nanoseconds).
pub async fn reached(log: &Path, text: &str) -> u64 {
    for _ in 0..1000 {
        let noted = std::fs::read_to_string(log).unwrap_or_default();
        let found = noted.lines().find_map(|line| {
            let (reached, noted_text) = line.split_once(' ')?;
            (noted_text == text).then(|| reached.parse().unwrap())
        });
        if let Some(reached) = found {
            return reached;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    panic!("no turn/start with {text:?} reached the tap");
}

/// The tap in front of an app-server that listens on a WebSocket.
mod websocket {
    use std::ffi::OsString;
    use std::fs::File;
    use std::process::{ExitCode, Stdio};
    use std::sync::{Arc, Mutex};

    use futures_util::{SinkExt, StreamExt};
    use tokio::io::{AsyncBufReadExt, BufReader};
    use tokio::net::{TcpListener, TcpStream};
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::client::IntoClientRequest;
    use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
    use tokio_tungstenite::tungstenite::http::HeaderValue;

    const ANNOUNCEMENT: &str = "listening on: ";

    /// The app-server listens where it likes; the tap listens on a port of its own,
    /// announces it as the app-server would, and passes each connection through to
    /// the app-server, noting each `turn/start` as it arrives.
    pub fn serve(log: File, codex: OsString) -> ExitCode {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async move {
            let mut command = tokio::process::Command::new(codex);
            command
                .args(std::env::args_os().skip(1))
                .stdin(Stdio::null())
                .stderr(Stdio::piped())
                .kill_on_drop(true);
            // SAFETY: one async-signal-safe syscall. The app-server ends with the tap, as
            // it would with the gateway.
            unsafe {
                command.pre_exec(|| {
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT);
                    Ok(())
                });
            }
            let mut app_server = command.spawn().unwrap();
            let mut said = BufReader::new(app_server.stderr.take().unwrap()).lines();
            let upstream = loop {
                let line = said.next_line().await.unwrap().expect("no announcement");
                if let Some(url) = line.trim().strip_prefix(ANNOUNCEMENT) {
                    break url.to_owned();
                }
            };
            tokio::spawn(async move { while let Ok(Some(_)) = said.next_line().await {} });
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            eprintln!("  {ANNOUNCEMENT}ws://{}", listener.local_addr().unwrap());
            let log = Arc::new(Mutex::new(log));
            loop {
                tokio::select! {
                    accepted = listener.accept() => {
                        let Ok((stream, _)) = accepted else { continue };
                        tokio::spawn(pass_through(stream, upstream.clone(), log.clone()));
                    }
                    status = app_server.wait() => {
                        let code = status.ok().and_then(|status| status.code()).unwrap_or(1);
                        return ExitCode::from(code as u8);
                    }
                }
            }
        })
    }

    /// One client's connection, through to the app-server with the client's token.
    // The handshake callback's error type is tungstenite's own, large as it is.
    #[allow(clippy::result_large_err)]
    async fn pass_through(stream: TcpStream, upstream: String, log: Arc<Mutex<File>>) {
        let mut token: Option<HeaderValue> = None;
        let keep_token = |request: &Request, response: Response| {
            token = request.headers().get("authorization").cloned();
            Ok(response)
        };
        let Ok(client) = tokio_tungstenite::accept_hdr_async(stream, keep_token).await else {
            return;
        };
        let mut request = upstream.into_client_request().unwrap();
        if let Some(token) = token {
            request.headers_mut().insert("authorization", token);
        }
        let Ok((server, _)) = tokio_tungstenite::connect_async(request).await else {
            return;
        };
        let (mut to_client, mut from_client) = client.split();
        let (mut to_server, mut from_server) = server.split();
        let upward = async {
            while let Some(Ok(message)) = from_client.next().await {
                if let Message::Text(text) = &message {
                    super::note_turn_start(&mut *log.lock().unwrap(), text);
                }
                if to_server.send(message).await.is_err() {
                    break;
                }
            }
        };
        let downward = async {
            while let Some(Ok(message)) = from_server.next().await {
                if to_client.send(message).await.is_err() {
                    break;
                }
            }
        };
        tokio::select! {
            () = upward => {}
            () = downward => {}
        }
    }
}
