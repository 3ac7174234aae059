//! A local app-server a terminal can attach to: it listens on a loopback WebSocket (the
//! address it announces on its stderr) and the gateway is its client, as it is a
//! worker's.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};
use tracing::warn;

use super::remote;
use super::spawn::Attach;
use super::wire::Shared;

/// The line the app-server writes once it listens (measured with 0.171.0:
/// `  listening on: ws://127.0.0.1:33993`).
const ANNOUNCEMENT: &str = "listening on: ";

/// The address in the app-server's announcement, if `line` is it.
pub(super) fn announced_url(line: &str) -> Option<&str> {
    let url = line.trim().strip_prefix(ANNOUNCEMENT)?;
    url.starts_with("ws://").then_some(url)
}

/// Waits (`within`) for the process to say where it listens, then connects to it and
/// carries `outgoing` over the connection. The connection ends with the process.
pub(super) async fn connect(
    shared: &Arc<Shared>,
    attach: &Attach,
    announced: oneshot::Receiver<String>,
    outgoing: mpsc::UnboundedReceiver<String>,
    within: Duration,
) -> Result<(), String> {
    let url = match tokio::time::timeout(within, announced).await {
        Ok(Ok(url)) => url,
        _ => return Err(format!("it did not say where it listens within {within:?}")),
    };
    let socket = remote::open("local", &url, &attach.token)
        .await
        .map_err(|error| error.to_string())?;
    let _ = shared.attach_url.set(url);
    let shared = shared.clone();
    tokio::spawn(async move {
        // The process is killed, not the connection: its end closes the connection.
        let killed = std::future::pending();
        remote::pump(socket, outgoing, killed, shared.clone(), "local".into()).await;
        // A lost connection is a lost process: ended, so it is started again whole. The
        // server is gone once the process is reaped (`wait_for_exit`), not before: what
        // its commands left behind is ended then, below the gateway.
        if let Some(kill) = shared.kill.lock().expect("lock").take() {
            let _ = kill.send(());
        }
    });
    Ok(())
}

/// In the child before `exec`: SIGINT when the gateway `parent` dies. Over stdio an
/// app-server ends when its stdin closes; listening on a WebSocket it would live on,
/// holding its threads, and the next gateway could not resume them ("already has an
/// active writer"). Measured with 0.171.0 after a SIGKILLed gateway: on SIGINT it ends
/// its running turn and exits, and the next gateway resumed the thread 0.21-0.26 s after
/// the kill; on SIGTERM it exits too, but every resume of the thread was refused as
/// having an active writer, for as long as tried (20 s).
pub(super) fn end_with_gateway(parent: u32) -> std::io::Result<()> {
    // SAFETY: prctl and getppid are async-signal-safe syscalls on this process only.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGINT) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        // The gateway died before the signal was set up: do not start at all.
        if libc::getppid() as u32 != parent {
            return Err(std::io::Error::other("the gateway is gone"));
        }
    }
    Ok(())
}

/// How long an app-server a killed gateway left may take to end by itself (it got SIGINT
/// when its gateway died) before it is killed.
const LEFTOVER_GRACE: Duration = Duration::from_secs(5);

/// Ends the app-servers an earlier run of this gateway left behind (it was killed), found
/// by the token's digest on their command line: until one has exited, the threads it
/// held cannot be resumed, and a resume tried meanwhile is refused for good ("already
/// has an active writer"). Each is waited for, then killed.
pub async fn end_leftovers(attach: &Attach) {
    let leftovers = leftovers_of(&attach.token_sha256());
    if leftovers.is_empty() {
        return;
    }
    warn!(pids = ?leftovers, "app-servers of an earlier run are still running; waiting for them to end");
    let deadline = tokio::time::Instant::now() + LEFTOVER_GRACE;
    let running = |pids: &[u32]| -> Vec<u32> {
        pids.iter()
            .copied()
            .filter(|pid| is_running(*pid))
            .collect()
    };
    let mut left = running(&leftovers);
    while !left.is_empty() && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
        left = running(&left);
    }
    for pid in &left {
        // SAFETY: kill(2) on a process found above; a pid reused meanwhile would have to
        // carry the same digest on its command line.
        unsafe { libc::kill(*pid as i32, libc::SIGKILL) };
    }
    while !running(&left).is_empty() && tokio::time::Instant::now() < deadline + LEFTOVER_GRACE {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Processes that are not this one's children and were started with `digest` as their
/// `--ws-token-sha256`.
fn leftovers_of(digest: &str) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let ours = std::process::id();
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            let Ok(command_line) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
                return false;
            };
            let mut words = command_line.split(|byte| *byte == 0);
            let digest_follows = words.by_ref().any(|word| word == b"--ws-token-sha256")
                && words.next() == Some(digest.as_bytes());
            digest_follows && parent_of(*pid) != Some(ours)
        })
        .collect()
}

/// The parent of `pid`, from `/proc/PID/stat` (the field after the state).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after_name = &stat[stat.rfind(')')? + 1..];
    after_name.split_whitespace().nth(1)?.parse().ok()
}

/// Whether `pid` exists and is not a zombie.
fn is_running(pid: u32) -> bool {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return false;
    };
    let state = stat
        .rfind(')')
        .and_then(|end| stat[end + 1..].split_whitespace().next());
    state.is_some_and(|state| state != "Z")
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_announcement_names_the_address() {
        let line = "  listening on: ws://127.0.0.1:33993";
        assert_eq!(super::announced_url(line), Some("ws://127.0.0.1:33993"));
        assert_eq!(
            super::announced_url("  readyz: http://127.0.0.1:1/readyz"),
            None
        );
    }
}
