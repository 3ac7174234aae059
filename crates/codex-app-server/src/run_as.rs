//! Codex under a user of its own (`codex.run_as`): whatever its commands run then cannot
//! read the gateway's environment (the tokens), database or config, which belong to the
//! gateway's user.

use std::ffi::{CStr, CString};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// The user the app-servers run as.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunAs {
    pub uid: u32,
    pub gid: u32,
    /// The user name, or the uid when it has no entry in the user database.
    pub name: String,
    /// The user's home folder, when the user database names one.
    pub home: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum RunAsError {
    #[error("codex.run_as: there is no user {0:?} here (give a user name, or uid:gid)")]
    UnknownUser(String),
    #[error(
        "codex.run_as = {user:?} needs root or the CAP_SETUID, CAP_SETGID and CAP_KILL \
         capabilities, and this gateway (uid {uid}) lacks some"
    )]
    NoPrivilege { user: String, uid: u32 },
    #[error(
        "{what} {path} must exist and belong to the codex.run_as user {user} ({problem}); \
         for example: chown -R {uid}:{gid} {path}"
    )]
    NotOwned {
        what: &'static str,
        path: String,
        user: String,
        uid: u32,
        gid: u32,
        problem: String,
    },
}

/// Capability numbers (linux/capability.h). Switching a child to another user takes the
/// first two; stopping it, and what its commands leave behind, takes the third (a signal
/// to another user's process needs it).
const CAP_KILL: u32 = 5;
const CAP_SETGID: u32 = 6;
const CAP_SETUID: u32 = 7;

impl RunAs {
    /// `name` or `uid:gid`, looked up in the user database.
    pub fn resolve(spec: &str) -> Result<Self, RunAsError> {
        let unknown = || RunAsError::UnknownUser(spec.to_owned());
        if let Some((uid, gid)) = spec.split_once(':') {
            let uid: u32 = uid.trim().parse().map_err(|_| unknown())?;
            let gid: u32 = gid.trim().parse().map_err(|_| unknown())?;
            let entry = passwd_by_uid(uid);
            return Ok(RunAs {
                uid,
                gid,
                name: entry.as_ref().map_or(uid.to_string(), |e| e.name.clone()),
                home: entry.map(|e| e.home),
            });
        }
        let entry = passwd_by_name(spec).ok_or_else(unknown)?;
        Ok(RunAs {
            uid: entry.uid,
            gid: entry.gid,
            name: entry.name,
            home: Some(entry.home),
        })
    }

    /// Whether this process may switch a child to this user, and stop it.
    pub fn check_privilege(&self) -> Result<(), RunAsError> {
        let effective = effective_capabilities().unwrap_or(0);
        let has = |cap: u32| effective & (1 << cap) != 0;
        if has(CAP_SETUID) && has(CAP_SETGID) && has(CAP_KILL) {
            return Ok(());
        }
        Err(RunAsError::NoPrivilege {
            user: self.name.clone(),
            // SAFETY: geteuid cannot fail and touches no memory.
            uid: unsafe { libc::geteuid() },
        })
    }

    /// Codex writes into `path` (its home, the workspaces): it must be this user's.
    pub fn check_owns(&self, what: &'static str, path: &Path) -> Result<(), RunAsError> {
        let problem = match std::fs::metadata(path) {
            Err(error) => error.to_string(),
            Ok(meta) if meta.uid() != self.uid => format!("it belongs to uid {}", meta.uid()),
            Ok(_) => return Ok(()),
        };
        Err(RunAsError::NotOwned {
            what,
            path: path.display().to_string(),
            user: self.name.clone(),
            uid: self.uid,
            gid: self.gid,
            problem,
        })
    }
}

/// The effective capability set, from `/proc/self/status`.
fn effective_capabilities() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find_map(|l| l.strip_prefix("CapEff:"))?;
    u64::from_str_radix(line.trim(), 16).ok()
}

struct PasswdEntry {
    name: String,
    uid: u32,
    gid: u32,
    home: PathBuf,
}

fn passwd_by_name(name: &str) -> Option<PasswdEntry> {
    let name = CString::new(name).ok()?;
    // SAFETY: getpwnam_r writes into the given entry and buffer only; both outlive the call.
    lookup(|entry, buffer, size, found| unsafe {
        libc::getpwnam_r(name.as_ptr(), entry, buffer, size, found)
    })
}

fn passwd_by_uid(uid: u32) -> Option<PasswdEntry> {
    // SAFETY: as for getpwnam_r.
    lookup(|entry, buffer, size, found| unsafe {
        libc::getpwuid_r(uid, entry, buffer, size, found)
    })
}

fn lookup(
    call: impl Fn(
        *mut libc::passwd,
        *mut libc::c_char,
        libc::size_t,
        *mut *mut libc::passwd,
    ) -> libc::c_int,
) -> Option<PasswdEntry> {
    let mut buffer = vec![0 as libc::c_char; 16 * 1024];
    // SAFETY: an all-zero passwd is a valid value (null pointers, zero ids) to be filled in.
    let mut entry: libc::passwd = unsafe { std::mem::zeroed() };
    let mut found: *mut libc::passwd = std::ptr::null_mut();
    let status = call(&mut entry, buffer.as_mut_ptr(), buffer.len(), &mut found);
    if status != 0 || found.is_null() {
        return None;
    }
    // SAFETY: on success the entry's strings point into `buffer`, alive and NUL-terminated.
    let text = |ptr: *const libc::c_char| unsafe { CStr::from_ptr(ptr) }.to_string_lossy();
    Some(PasswdEntry {
        name: text(entry.pw_name).into_owned(),
        uid: entry.pw_uid,
        gid: entry.pw_gid,
        home: PathBuf::from(text(entry.pw_dir).into_owned()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn users_resolve_by_name_and_by_ids() {
        let root = RunAs::resolve("root").unwrap();
        assert_eq!((root.uid, root.gid), (0, 0));
        assert_eq!(root.home.as_deref(), Some(Path::new("/root")));
        let numeric = RunAs::resolve("0:0").unwrap();
        assert_eq!(numeric.name, "root");
        let unlisted = RunAs::resolve("64123:64123").unwrap();
        assert_eq!((unlisted.name.as_str(), unlisted.home), ("64123", None));
        assert!(matches!(
            RunAs::resolve("no-such-user-here"),
            Err(RunAsError::UnknownUser(_))
        ));
        assert!(RunAs::resolve("1:x").is_err());
    }

    #[test]
    fn a_folder_of_another_user_is_refused_with_the_fix() {
        let dir = tempfile::tempdir().unwrap();
        let owner = std::fs::metadata(dir.path()).unwrap().uid();
        let other = RunAs::resolve(&format!("{}:{}", owner + 1, owner + 1)).unwrap();
        let error = other.check_owns("codex.home", dir.path()).unwrap_err();
        assert!(
            error
                .to_string()
                .contains(&format!("chown -R {0}:{0}", owner + 1)),
            "{error}"
        );
        let same = RunAs::resolve(&format!("{owner}:{owner}")).unwrap();
        assert!(same.check_owns("codex.home", dir.path()).is_ok());
        assert!(
            same.check_owns("codex.home", &dir.path().join("missing"))
                .is_err()
        );
    }
}
