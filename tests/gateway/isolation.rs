//! What a command run through Codex can read of the gateway: with `codex.run_as`, neither
//! the token (environment, token file), nor the database with other chats' transcripts;
//! and even as the gateway's own user, not its environment (it is non-dumpable).
//! Switching users needs root: these tests are `#[ignore]`d, so a run without root
//! reports them as not run; `scripts/test` includes them when it runs as root, as CI does
//! (`.ci/run` refuses to run otherwise).

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::TestEnv;
use crate::support::binary::{
    ALICE, gateway_command, gateway_command_of, terminate, wait_exit, wait_healthy,
};
use crate::support::telegram::FakeTelegram;

const BOB: i64 = 1002;
const TOKEN: &str = "4242:isolation-secret-token-AAHdqTcvCH1vGWJx";
const BOBS_SECRET: &str = "zebra-orchid-91";

/// Why a test of this module is ignored where it cannot run.
const NEEDS_ROOT: &str = "switches users: needs root (scripts/test runs it as root, as CI does)";

/// A test marked `#[ignore = NEEDS_ROOT]` was asked for without root: it fails, never
/// passes untried.
fn require_root() {
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    assert!(root, "this test {NEEDS_ROOT}");
}

/// `binary` copied into the test's folder, where the users these tests switch to can run
/// it: the original may sit in a folder only root may enter (the Codex install under
/// /root, or `target/` of a checkout in a 0700 folder).
fn shared_copy(env: &TestEnv, binary: &Path, name: &str) -> PathBuf {
    let copy = env.dir.path().join(name);
    if !copy.exists() {
        std::fs::copy(binary, &copy).unwrap();
        std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    copy
}

/// The pinned codex binary where any user may run it.
fn shared_codex(env: &TestEnv) -> PathBuf {
    shared_copy(env, &crate::support::codex_binary(), "codex")
}

/// `codex-gateway ARGS` from a copy of the binary that any user may run.
fn shared_gateway_command(env: &TestEnv, args: &[&str], envs: &[(&str, String)]) -> Command {
    let binary = Path::new(env!("CARGO_BIN_EXE_codex-gateway"));
    let program = shared_copy(env, binary, "codex-gateway");
    gateway_command_of(program, env, args, envs)
}

fn chown_tree(path: &Path, uid: u32) {
    std::os::unix::fs::lchown(path, Some(uid), Some(uid)).unwrap();
    if path.is_dir() && !path.is_symlink() {
        for entry in std::fs::read_dir(path).unwrap().flatten() {
            chown_tree(&entry.path(), uid);
        }
    }
}

/// Codex's home and the workspace become `uid`'s, reachable through the test's folder.
fn hand_codex_folders_to(env: &TestEnv, uid: u32) {
    std::fs::set_permissions(env.dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    chown_tree(&env.codex_home(), uid);
    chown_tree(&env.workspace(), uid);
}

/// The setting that runs Codex as `uid`.
fn run_as(uid: u32) -> [(&'static str, String); 1] {
    [("CODEX_GATEWAY__CODEX__RUN_AS", format!("{uid}:{uid}"))]
}

/// The gateway with Telegram for Alice and Bob, the token in a 0600 file and in the
/// environment, and `extra` settings.
fn telegram_envs(
    env: &TestEnv,
    telegram: &FakeTelegram,
    port: u16,
    extra: &[(&'static str, String)],
) -> Vec<(&'static str, String)> {
    let token_file = env.dir.path().join("telegram-token");
    std::fs::write(&token_file, format!("{TOKEN}\n")).unwrap();
    std::fs::set_permissions(&token_file, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut envs = vec![
        ("CODEX_GATEWAY__SERVER__LISTEN", format!("127.0.0.1:{port}")),
        ("CODEX_GATEWAY__SERVER__SHUTDOWN_GRACE_SECS", "1".into()),
        (
            "CODEX_GATEWAY__CODEX__BINARY",
            shared_codex(env).display().to_string(),
        ),
        ("CODEX_GATEWAY__CODEX__WORKSPACE_MODE", "per_chat".into()),
        ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true".into()),
        (
            "CODEX_GATEWAY__TELEGRAM__TOKEN_FILE",
            token_file.display().to_string(),
        ),
        ("CODEX_GATEWAY__TELEGRAM__API_URL", telegram.url.clone()),
        (
            "CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS",
            format!("{ALICE},{BOB}"),
        ),
        // The variable compose would set, as a second place the token could leak from.
        ("TELEGRAM_BOT_TOKEN", TOKEN.into()),
    ];
    envs.extend(extra.iter().cloned());
    envs
}

/// Bob tells his chat a secret; Alice's Codex then runs `probe` and says what it read.
async fn probe_from_alices_chat(telegram: &FakeTelegram, probe: &str) -> String {
    telegram.dm(BOB, &format!("remember {BOBS_SECRET}"));
    telegram
        .wait_for_text(BOB, |t| t == format!("Echo: remember {BOBS_SECRET}"))
        .await;
    telegram.dm(ALICE, &format!("run: {probe}"));
    let (_, said) = telegram
        .wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "switches users: needs root (scripts/test runs it as root, as CI does)"]
async fn codex_as_its_own_user_reads_neither_the_token_nor_other_chats() {
    require_root();
    const CODEX_UID: u32 = 64123;
    let env = TestEnv::new().await;
    hand_codex_folders_to(&env, CODEX_UID);
    let telegram = FakeTelegram::start().await;
    telegram.take_token(TOKEN);
    let port = crate::support::free_port();
    let envs = telegram_envs(&env, &telegram, port, &run_as(CODEX_UID));
    let child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    wait_healthy(port).await;

    let database = env.database();
    let probe = format!(
        "id -u; for f in /proc/{gateway}/environ {db} {db}-wal {db}.lock {token} {attach}; do echo \"== $f\"; cat \"$f\" 2>&1 | tr '\\0' ' ' | head -c 300; echo; done",
        gateway = child.id(),
        db = database.display(),
        token = env.dir.path().join("telegram-token").display(),
        // The token that attaches a client to Codex, whose answer to an approval wins.
        attach = database.with_file_name("codex-attach-token").display(),
    );
    let said = probe_from_alices_chat(&telegram, &probe).await;
    println!("what Codex read as uid {CODEX_UID}:\n{said}");
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    assert!(status.success(), "exit {status}: {stderr}");

    assert!(
        said.contains(&CODEX_UID.to_string()),
        "Codex did not run as {CODEX_UID}: {said}"
    );
    assert_eq!(said.matches("Permission denied").count(), 6, "{said}");
    assert!(
        !said.contains("isolation-secret-token"),
        "the token was read: {said}"
    );
    assert!(
        !said.contains(BOBS_SECRET),
        "another chat's transcript was read: {said}"
    );
    // The chat's folder was made by the app-server, so it is Codex's user's.
    let folders: Vec<_> = std::fs::read_dir(env.workspace())
        .unwrap()
        .flatten()
        .collect();
    assert!(!folders.is_empty());
    for folder in folders {
        assert_eq!(
            folder.metadata().unwrap().uid(),
            CODEX_UID,
            "{:?}",
            folder.path()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "switches users: needs root (scripts/test runs it as root, as CI does)"]
async fn codex_as_the_gateways_user_cannot_read_its_environment() {
    require_root();
    const GATEWAY_UID: u32 = 64124;
    let env = TestEnv::new().await;
    chown_tree(env.dir.path(), GATEWAY_UID);
    let telegram = FakeTelegram::start().await;
    telegram.take_token(TOKEN);
    let port = crate::support::free_port();
    let envs = telegram_envs(&env, &telegram, port, &[]);
    let mut command = shared_gateway_command(&env, &["run"], &envs);
    chown_tree(env.dir.path(), GATEWAY_UID);
    command.uid(GATEWAY_UID).gid(GATEWAY_UID);
    let child = command.spawn().unwrap();
    wait_healthy(port).await;

    let probe = format!(
        "id -u; cat /proc/{}/environ 2>&1 | tr '\\0' ' ' | head -c 300",
        child.id()
    );
    let said = probe_from_alices_chat(&telegram, &probe).await;
    println!("what Codex read as the gateway's uid {GATEWAY_UID}:\n{said}");
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(said.contains(&GATEWAY_UID.to_string()), "{said}");
    assert!(said.contains("Permission denied"), "{said}");
    assert!(
        !said.contains("isolation-secret-token"),
        "the token was read: {said}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "switches users: needs root (scripts/test runs it as root, as CI does)"]
async fn run_as_without_the_means_or_with_foreign_folders_fails_clearly() {
    require_root();
    let env = TestEnv::new().await;
    let codex_as = run_as(64123);
    // CODEX_HOME still belongs to root.
    let (status, stderr) =
        wait_exit(gateway_command(&env, &["run"], &codex_as).spawn().unwrap()).await;
    assert!(!status.success());
    assert!(stderr.contains("chown -R 64123:64123"), "{stderr}");

    // A plain user cannot switch to another one.
    let mut command = shared_gateway_command(&env, &["run"], &codex_as);
    chown_tree(env.dir.path(), 64125);
    command.uid(64125).gid(64125);
    let (status, stderr) = wait_exit(command.spawn().unwrap()).await;
    assert!(!status.success());
    assert!(
        stderr.contains("needs root or the CAP_SETUID, CAP_SETGID and CAP_KILL"),
        "{stderr}"
    );
}

/// As in the container: the gateway a plain user with exactly SETUID, SETGID and KILL,
/// Codex another user. A stop is prompt, and ends the app-server and what its commands
/// left running, though both belong to another user.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "switches users: needs root (scripts/test runs it as root, as CI does)"]
async fn a_gateway_with_only_its_three_capabilities_stops_codex_and_its_leftovers() {
    require_root();
    const GATEWAY_UID: u32 = 64126;
    const CODEX_UID: u32 = 64123;
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    telegram.take_token(TOKEN);
    let port = crate::support::free_port();
    let envs = telegram_envs(&env, &telegram, port, &run_as(CODEX_UID));
    let gateway = shared_gateway_command(&env, &["run"], &envs);
    chown_tree(env.dir.path(), GATEWAY_UID);
    hand_codex_folders_to(&env, CODEX_UID);
    let mut command = std::process::Command::new("setpriv");
    let ids = GATEWAY_UID.to_string();
    let caps = "-all,+setuid,+setgid,+kill";
    command
        .args(["--reuid", &ids, "--regid", &ids, "--clear-groups"])
        .args([
            "--inh-caps",
            caps,
            "--ambient-caps",
            caps,
            "--bounding-set",
            caps,
            "--",
        ])
        .arg(gateway.get_program())
        .args(gateway.get_args())
        .envs(gateway.get_envs().filter_map(|(k, v)| Some((k, v?))))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = command.spawn().unwrap();
    wait_healthy(port).await;

    let marker = format!("left-by-codex-{}", std::process::id());
    let detached =
        format!("setsid bash -c 'exec -a {marker} sleep 600' </dev/null >/dev/null 2>&1 &");
    telegram.dm(ALICE, &format!("run: {detached}"));
    telegram
        .wait_for_text(ALICE, |t| t.starts_with("Tool said"))
        .await;
    let owners = || -> Vec<u32> {
        let running = crate::support::processes_named(&marker);
        running.into_iter().map(crate::support::owner_of).collect()
    };
    assert_eq!(
        owners(),
        [CODEX_UID],
        "the detached command is not Codex's user's"
    );

    let stopping = std::time::Instant::now();
    terminate(&child);
    let (status, stderr) = wait_exit(child).await;
    let took = stopping.elapsed();
    assert!(status.success(), "exit {status}: {stderr}");
    assert!(
        took < std::time::Duration::from_secs(8),
        "stopping took {took:?}"
    );
    assert_eq!(
        owners(),
        Vec::<u32>::new(),
        "the detached command outlived the gateway"
    );
    assert_eq!(
        env.codex_processes(),
        Vec::<u32>::new(),
        "app-server left running"
    );
}
