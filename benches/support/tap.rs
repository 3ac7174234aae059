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

/// Runs the real app-server with this process's arguments and passes stdin to it line by
/// line, noting each `turn/start`; its stdout and stderr are the tap's.
pub fn serve() -> ExitCode {
    let log = std::env::var_os(LOG).expect("BENCH_TAP_LOG");
    let codex = std::env::var_os(CODEX).expect("BENCH_TAP_CODEX");
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .unwrap();
    let mut codex = Command::new(codex)
        .args(std::env::args_os().skip(1))
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let mut to_codex = codex.stdin.take().unwrap();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        if line.contains("\"turn/start\"") {
            let reached = now_ns();
            let message: Value = serde_json::from_str(&line).unwrap_or_default();
            let text = message["params"]["input"][0]["text"].as_str().unwrap_or("");
            writeln!(log, "{reached} {}", text.replace('\n', " ")).unwrap();
        }
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
