//! A local app-server a terminal can attach to: it listens on a loopback WebSocket (the
//! address it announces on its stderr) and the gateway is its client, as it is a
//! worker's.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

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
        // A lost connection is a lost process: ended, so it is started again whole.
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
