//! Commands that Codex leaves running (`setsid server &`) would outlive their app-server
//! and the gateway. Each app-server is a child subreaper, so what its commands leave
//! behind stays below it; when it exits, all of that is re-parented to the gateway (a
//! subreaper too, once `adopt_orphans` ran) and ended here: SIGTERM, then SIGKILL.
//!
//! Only the gateway's own children are touched, and never a live app-server: spawning
//! and sweeping share one lock, so a process being started is never taken for an orphan.

use std::collections::BTreeSet;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tracing::{info, warn};

/// Whether this process adopts orphans (the `run` and `console` commands); library users
/// such as tests never sweep their own children.
static ADOPTING: AtomicBool = AtomicBool::new(false);

/// The app-servers spawned and not yet reaped: children that are not orphans.
static APP_SERVERS: Mutex<BTreeSet<u32>> = Mutex::new(BTreeSet::new());

/// How long an orphan may take to exit after SIGTERM before it gets SIGKILL.
pub const TERM_GRACE: Duration = Duration::from_secs(2);
/// How long a sweep waits for killed orphans to be reaped before it gives up.
const KILL_WAIT: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(50);

/// Makes this process the reaper of everything its app-servers leave behind.
pub fn adopt_orphans() -> io::Result<()> {
    set_child_subreaper()?;
    ADOPTING.store(true, Ordering::SeqCst);
    Ok(())
}

/// Runs `spawn` so that no sweep can see the new child before it is known.
pub(super) fn spawn_app_server<T>(
    spawn: impl FnOnce() -> io::Result<T>,
    pid: impl Fn(&T) -> Option<u32>,
) -> io::Result<T> {
    let mut known = APP_SERVERS.lock().expect("lock");
    let child = spawn()?;
    known.extend(pid(&child));
    Ok(child)
}

/// The app-server `pid` was reaped: its leftovers are orphans now, and so is it.
pub(super) fn app_server_reaped(pid: Option<u32>) {
    if let Some(pid) = pid {
        APP_SERVERS.lock().expect("lock").remove(&pid);
    }
    if ADOPTING.load(Ordering::SeqCst) {
        tokio::spawn(end_orphans(TERM_GRACE));
    }
}

/// Ends every orphan this process adopted (and what they in turn leave behind): SIGTERM,
/// SIGKILL after `grace`, each one reaped. Returns how many there were.
pub async fn end_orphans(grace: Duration) -> usize {
    if !ADOPTING.load(Ordering::SeqCst) {
        return 0;
    }
    let started = Instant::now();
    let mut signalled = BTreeSet::new();
    loop {
        let force = started.elapsed() >= grace;
        let live = sweep(&mut signalled, force);
        if live == 0 {
            break;
        }
        if started.elapsed() >= grace + KILL_WAIT {
            warn!(
                left = live,
                "processes left by Codex did not exit after SIGKILL"
            );
            break;
        }
        tokio::time::sleep(POLL).await;
    }
    if !signalled.is_empty() {
        info!(
            ended = signalled.len(),
            "ended processes that Codex's commands left running"
        );
    }
    signalled.len()
}

/// One pass over the orphans: reaps the dead, signals the living. Returns how many live.
fn sweep(signalled: &mut BTreeSet<u32>, force: bool) -> usize {
    let known = APP_SERVERS.lock().expect("lock");
    let mut live = 0;
    for child in children_of(std::process::id()) {
        if known.contains(&child.pid) {
            continue;
        }
        if child.zombie {
            reap(child.pid);
            continue;
        }
        live += 1;
        if force {
            signal(&child, libc::SIGKILL);
        } else if signalled.insert(child.pid) {
            signal(&child, libc::SIGTERM);
        }
    }
    live
}

struct ChildProcess {
    pid: u32,
    zombie: bool,
    /// Leads its own process group (as `setsid` makes it): the group is signalled too.
    group_leader: bool,
}

/// The processes whose parent is `parent`, from `/proc`.
fn children_of(parent: u32) -> Vec<ChildProcess> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let (state, ppid, pgrp) = parse_stat(&stat)?;
            (ppid == parent).then_some(ChildProcess {
                pid,
                zombie: state == 'Z',
                group_leader: pgrp == pid,
            })
        })
        .collect()
}

/// State, parent and process group from a `/proc/PID/stat` line. The command name in
/// parentheses may itself contain spaces and parentheses, so fields are read after the last `)`.
fn parse_stat(stat: &str) -> Option<(char, u32, u32)> {
    let mut fields = stat.get(stat.rfind(')')? + 1..)?.split_whitespace();
    let state = fields.next()?.chars().next()?;
    let ppid = fields.next()?.parse().ok()?;
    let pgrp = fields.next()?.parse().ok()?;
    Some((state, ppid, pgrp))
}

fn signal(child: &ChildProcess, signal: libc::c_int) {
    let Ok(pid) = libc::pid_t::try_from(child.pid) else {
        return;
    };
    // SAFETY: kill(2) has no memory effects; the pid is our own child, not yet reaped,
    // so it cannot have been reused.
    unsafe {
        if child.group_leader {
            libc::kill(-pid, signal);
        }
        libc::kill(pid, signal);
    }
}

fn reap(pid: u32) {
    if let Ok(pid) = libc::pid_t::try_from(pid) {
        // SAFETY: waits for one specific child that is not an app-server (those are
        // reaped by their tokio handle); a null status pointer is allowed.
        unsafe { libc::waitpid(pid, std::ptr::null_mut(), libc::WNOHANG) };
    }
}

/// Orphans of this process's descendants become its children instead of init's.
/// Preserved across `execve`, so an app-server's pre-exec hook can use it as well.
pub(super) fn set_child_subreaper() -> io::Result<()> {
    // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes integer arguments only.
    let result = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    if result == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_are_read_after_the_last_parenthesis() {
        let stat = "4242 (sleep (x) y) S 17 4242 4242 0 -1 4194560 95 0 0 0";
        assert_eq!(parse_stat(stat), Some(('S', 17, 4242)));
        assert_eq!(parse_stat("12 (z) Z 1 5"), Some(('Z', 1, 5)));
        assert_eq!(parse_stat("garbage"), None);
    }

    #[test]
    fn a_child_of_this_process_is_found() {
        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let found = children_of(std::process::id())
            .iter()
            .any(|c| c.pid == child.id() && !c.zombie);
        let mut child = child;
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(found, "the sleep child was not listed under this process");
    }
}
