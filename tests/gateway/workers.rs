//! Remote Codex workers: two real app-servers on WebSockets with token authentication,
//! the fake model behind both, and a gateway with no app-server of its own.

use std::time::Duration;

use crate::support::workers::{Worker, workers_only};
use crate::support::{Chat, TestEnv};
use chat::OutboundKind;
use codex_gateway::{App, server};

/// Which server the store says holds the chat's thread.
async fn placed_on(app: &App, chat: &Chat) -> Option<String> {
    app.store()
        .chat(&chat.key)
        .await
        .unwrap()
        .and_then(|row| row.codex_server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chats_spread_over_workers_and_a_restarted_worker_brings_its_chats_back() {
    let env = TestEnv::new().await;
    let mut a = Worker::start(&env, "a", "token-a").await;
    let b = Worker::start(&env, "b", "token-b").await;
    let app = App::start(&workers_only(&env, &[&a, &b]))
        .await
        .expect("app starts");

    // Four chats, each reading its own file: the threads go to the emptier worker.
    let mut chats = Vec::new();
    for i in 0..4 {
        std::fs::write(
            env.workspace().join(format!("note-{i}.txt")),
            format!("secret-{i}"),
        )
        .unwrap();
        let mut chat = Chat::new(&format!("chat-{i}"));
        let reply = chat.ask(&app, &format!("read file note-{i}.txt")).await;
        assert!(reply.contains(&format!("secret-{i}")), "{reply}");
        chats.push(chat);
    }
    let mut placements = Vec::new();
    for chat in &chats {
        placements.push(placed_on(&app, chat).await.expect("placement stored"));
    }
    assert_eq!(placements, ["a", "b", "a", "b"]);
    assert_eq!((a.rollouts(), b.rollouts()), (2, 2));
    assert!(
        env.rollouts().is_empty(),
        "the gateway's own Codex home has rollouts"
    );

    chats[0].send(&app, "/status");
    let status = chats[0].notice("Codex server:").await;
    assert!(
        status.contains(&format!("Codex server: a ({})", a.url())),
        "{status}"
    );

    // A file of the chat's folder travels from the worker (fs/readFile over the socket).
    chats[1].send(&app, "/get note-1.txt");
    let file = chats[1]
        .wait_for(|kind| match kind {
            OutboundKind::File { name, bytes } => Some((name.clone(), bytes.clone())),
            _ => None,
        })
        .await;
    assert_eq!(file, ("note-1.txt".to_owned(), b"secret-1".to_vec()));

    // A file sent to the chat is saved by its worker (fs/writeFile over the socket): 19 MB
    // of it, near the default 20 MB limit, travels as one message.
    let big: Vec<u8> = (0..19 * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    chats[3].send_file(&app, "dump.bin", big.clone(), "keep this");
    let reply = chats[3].reply().await;
    assert!(
        reply.contains("[file saved: attachments/dump.bin]"),
        "{reply}"
    );
    let saved = std::fs::read(env.workspace().join("attachments/dump.bin")).unwrap();
    assert!(saved == big, "the saved file differs from the sent one");
    // And back in one message from the worker.
    chats[3].send(&app, "/get attachments/dump.bin");
    let fetched = chats[3]
        .wait_for(|kind| match kind {
            OutboundKind::File { bytes, .. } => Some(bytes.clone()),
            _ => None,
        })
        .await;
    assert!(fetched == big, "the fetched file differs from the sent one");

    // Worker a dies: its chat is told and waits; worker b's chats go on answering.
    a.kill();
    chats[0].send(&app, "what did you just read?");
    let told = chats[0].notice("unreachable").await;
    assert!(
        told.contains("worker a") && told.contains("will run when it is back"),
        "{told}"
    );
    let other = chats[1].ask(&app, "what did you just read?").await;
    assert_eq!(other, "Earlier I read: secret-1");
    let health = codex_gateway::server::Observed::details(&app).await;
    assert!(
        health.contains("codex a (") && health.contains("down:"),
        "{health}"
    );
    assert!(
        health.contains("codex b (") && health.contains("up, "),
        "{health}"
    );

    // Back on the same port: the waiting message runs on the resumed thread, with its context.
    a.restart().await;
    let reply = chats[0].reply().await;
    assert_eq!(reply, "Earlier I read: secret-0");
    let told = chats[0]
        .notices()
        .iter()
        .filter(|n| n.contains("unreachable"))
        .count();
    assert_eq!(told, 1, "told once: {:?}", chats[0].notices());
    assert_eq!(placed_on(&app, &chats[0]).await.as_deref(), Some("a"));
    assert_eq!(a.rollouts(), 2, "the thread was resumed, not replaced");

    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chats_arriving_together_are_spread_too() {
    let env = TestEnv::new().await;
    let a = Worker::start(&env, "a", "token-a").await;
    let b = Worker::start(&env, "b", "token-b").await;
    let app = App::start(&workers_only(&env, &[&a, &b]))
        .await
        .expect("app starts");
    // Eight first messages at once: none of their threads is live when the others are placed.
    let mut chats: Vec<Chat> = (0..8).map(|i| Chat::new(&format!("burst-{i}"))).collect();
    for (i, chat) in chats.iter().enumerate() {
        chat.send(&app, &format!("hello {i}"));
    }
    for (i, chat) in chats.iter_mut().enumerate() {
        assert_eq!(chat.reply().await, format!("Echo: hello {i}"));
    }
    let mut on_a = 0;
    for chat in &chats {
        if placed_on(&app, chat).await.as_deref() == Some("a") {
            on_a += 1;
        }
    }
    assert!((3..=5).contains(&on_a), "spread: {on_a} of 8 on a");
    assert_eq!(a.rollouts() + b.rollouts(), 8);
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_for_a_worker_that_stays_down_fails_clearly_after_the_wait() {
    let env = TestEnv::new().await;
    let mut a = Worker::start(&env, "a", "token-a").await;
    let b = Worker::start(&env, "b", "token-b").await;
    let mut config = workers_only(&env, &[&a, &b]);
    // Shortened so the test ends; the test above waits at the default.
    config.codex.worker_wait_secs = 2;
    let app = App::start(&config).await.expect("app starts");
    let mut chat = Chat::new("lonely");
    assert_eq!(chat.ask(&app, "hello").await, "Echo: hello");
    assert_eq!(placed_on(&app, &chat).await.as_deref(), Some("a"));

    // A turn running when its worker dies is cut off, and the chat is told why.
    chat.send(&app, "slow: a long answer");
    let streaming = |kind: &OutboundKind| matches!(kind, OutboundKind::Status(_)).then_some(());
    chat.wait_for(streaming).await;
    a.kill();
    let lost = chat.notice("was lost").await;
    assert!(lost.contains("Codex worker a"), "{lost}");

    chat.send(&app, "anyone there?");
    chat.notice("will run when it is back").await;
    let failed = chat.notice("nothing was sent").await;
    assert!(failed.contains("worker a is unreachable"), "{failed}");
    // The chat stays on its worker (its thread lives there) and works once it is back.
    a.restart().await;
    // A message before the gateway is connected again would wait the shortened 2 s and
    // fail: wait until the gateway sees the worker up.
    let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    while !server::Observed::details(&app)
        .await
        .contains("codex a (ws://")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "worker a never came back"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(chat.ask(&app, "back?").await, "Echo: back?");
    assert_eq!(placed_on(&app, &chat).await.as_deref(), Some("a"));
    app.shutdown(None).await;
}

/// Each worker has its own Codex home, so its own login: a worker without one refuses its
/// chats' messages with the worker's fix, and the other worker's chats go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_without_a_login_is_named_and_the_others_go_on() {
    let env = TestEnv::new().await;
    let a = Worker::start(&env, "a", "token-a").await;
    // A fresh install's config: the OpenAI provider and no login (and no key: its
    // environment is cleared).
    let fresh = "check_for_update_on_startup = false\n[analytics]\nenabled = false\n";
    let b = Worker::start_with(&env, "b", "token-b", fresh).await;
    let app = App::start(&workers_only(&env, &[&a, &b]))
        .await
        .expect("app starts");
    let mut first = Chat::new("first");
    assert_eq!(first.ask(&app, "hello").await, "Echo: hello");
    let mut second = Chat::new("second");
    second.send(&app, "hello from b");
    let refused = second.notice("not logged in").await;
    assert!(refused.contains("Codex on this worker"), "{refused}");
    assert_eq!(
        placed_on(&app, &second).await,
        None,
        "no thread was started"
    );
    assert_eq!(first.ask(&app, "still here?").await, "Echo: still here?");
    let asked: Vec<String> = env.model.turn_texts();
    assert!(
        !asked.iter().any(|text| text.contains("hello from b")),
        "{asked:?}"
    );
    app.shutdown(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_token_fails_clearly_at_start_and_in_check_config() {
    let env = TestEnv::new().await;
    let a = Worker::start(&env, "a", "token-a").await;
    let b = Worker::start(&env, "b", "token-b").await;
    let mut config = workers_only(&env, &[&a, &b]);
    config.codex.remote[1] = b.remote(&env, "not-the-token");
    let error = match App::start(&config).await {
        Ok(_) => panic!("the gateway started with a refused token"),
        Err(error) => error.to_string(),
    };
    assert!(
        error.contains("worker b") && error.contains("refused the token (HTTP 401)"),
        "{error}"
    );
    assert!(
        !error.contains("not-the-token"),
        "the token was shown: {error}"
    );

    // check-config names every worker on its own line.
    let workers = format!(
        "processes = 0\n[[codex.remote]]\nname = \"a\"\nurl = \"{}\"\ntoken_file = {:?}\n\
         [[codex.remote]]\nname = \"b\"\nurl = \"{}\"\ntoken_file = {:?}\n\
         [[codex.remote]]\nname = \"gone\"\nurl = \"ws://127.0.0.1:{}\"\ntoken_file = {:?}\n",
        a.url(),
        a.remote(&env, "token-a").token_file,
        b.url(),
        config.codex.remote[1].token_file,
        crate::support::free_port(),
        a.remote(&env, "token-a").token_file,
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_codex-gateway"))
        .arg("check-config")
        .arg("--config")
        .arg(env.config_file(&workers))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stdout}");
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|line| line.starts_with(prefix))
            .unwrap_or_else(|| panic!("no line for {prefix} in:\n{stdout}"))
            .to_owned()
    };
    assert!(
        line(&format!("codex worker a ({})", a.url())).contains("connected"),
        "{stdout}"
    );
    assert!(
        line("codex worker b").contains("refused the token (HTTP 401)"),
        "{stdout}"
    );
    assert!(
        line("codex worker gone").contains("unreachable"),
        "{stdout}"
    );
    assert!(stderr.contains("2 of the Codex workers failed"), "{stderr}");
}

/// A worker on its own machine: its folders exist only there (here, a tmpfs in the
/// worker's own mount namespace; on the gateway's side the same path is an empty folder).
/// `/get`, `/cwd` and attachments ask the worker, so they find its files, follow its
/// symlinks and refuse what leads outside, as with a local app-server.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a mount namespace for the worker: needs root (scripts/test runs it as root, as CI does)"]
async fn files_and_folders_are_those_of_the_workers_machine() {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    assert!(root, "a mount namespace for the worker needs root");
    let env = TestEnv::new().await;
    let disk = env.dir.path().join("worker-disk");
    let setup = "mkdir -p ws projects/app && printf worker-only-77 > ws/notes.txt \
                 && printf in-app-5 > projects/app/here.txt \
                 && ln -s /etc/hostname ws/link && ln -s /etc projects/escape";
    let worker = Worker::start_with_own_disk(&env, "far", "token-far", &disk, setup).await;
    let mut config = workers_only(&env, &[&worker]);
    config.codex.workspace = disk.join("ws");
    config.codex.project_roots = vec![disk.join("projects")];
    let app = App::start(&config).await.expect("app starts");
    let mut chat = Chat::new("far-away");
    let file = |kind: &OutboundKind| match kind {
        OutboundKind::File { name, bytes } => Some((name.clone(), bytes.clone())),
        _ => None,
    };

    chat.send(&app, "/get notes.txt");
    let got = chat.wait_for(file).await;
    assert_eq!(got, ("notes.txt".to_owned(), b"worker-only-77".to_vec()));
    chat.send(&app, "/get link");
    chat.notice("not allowed: link is outside this chat's folder")
        .await;
    chat.send(&app, "/get nothing.txt");
    chat.notice("nothing.txt does not exist").await;

    chat.send(&app, "/cwd escape");
    chat.notice("not allowed: escape is outside the project roots")
        .await;
    chat.send(&app, "/cwd nope");
    chat.notice("nope does not exist").await;
    chat.send(&app, "/cwd app");
    let app_folder = disk.join("projects/app");
    let moved = format!(
        "This chat works in {} from the next turn on.",
        app_folder.display()
    );
    chat.notice(&moved).await;
    let reply = chat.ask(&app, "read file here.txt").await;
    assert!(reply.contains("in-app-5"), "{reply}");

    // A file sent to the chat lands in its folder on the worker, and comes back from there.
    chat.send_file(&app, "report.txt", b"from-the-chat".to_vec(), "keep it");
    let reply = chat.reply().await;
    assert!(
        reply.contains("[file saved: attachments/report.txt]"),
        "{reply}"
    );
    chat.send(&app, "/get attachments/report.txt");
    let got = chat.wait_for(file).await;
    assert_eq!(got, ("report.txt".to_owned(), b"from-the-chat".to_vec()));

    let seen_here: Vec<_> = std::fs::read_dir(&disk).unwrap().flatten().collect();
    assert!(seen_here.is_empty(), "the gateway's side has {seen_here:?}");
    app.shutdown(None).await;
}

/// A worktree on a worker's own disk: made, merged and removed there (the gateway's git
/// work goes through the worker's app-server), nothing of it on the gateway's side.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a mount namespace for the worker: needs root (scripts/test runs it as root, as CI does)"]
async fn a_worktree_is_made_and_merged_on_the_workers_disk() {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    assert!(root, "a mount namespace for the worker needs root");
    let env = TestEnv::new().await;
    let disk = env.dir.path().join("worker-disk");
    let setup = "mkdir ws && cd ws && git init -q -b main && printf one > app.txt \
                 && git add app.txt \
                 && git -c user.name=t -c user.email=t@localhost commit -q -m first";
    let worker = Worker::start_with_own_disk(&env, "far", "token-far", &disk, setup).await;
    let mut config = workers_only(&env, &[&worker]);
    config.codex.workspace = disk.join("ws");
    let app = App::start(&config).await.expect("app starts");
    let mut chat = Chat::new("far-task");

    chat.send(&app, "/worktree fix-w");
    let folder = disk.join(".codex-worktrees/ws/fix-w");
    let made = chat.notice("worktree on branch fix-w").await;
    assert!(
        made.contains(&format!("(from main), at {}", folder.display())),
        "{made}"
    );
    let reply = chat.ask(&app, "run: printf two > app.txt && pwd").await;
    assert!(reply.contains(&folder.display().to_string()), "{reply}");
    chat.send(&app, "/merge");
    let merged = chat.notice("Merged fix-w").await;
    let main = disk.join("ws");
    assert!(
        merged.ends_with(&format!("into main in {}.", main.display())),
        "{merged}"
    );
    chat.send(&app, "/discard Discard");
    chat.notice("Removed the worktree and the branch fix-w")
        .await;
    let reply = chat.ask(&app, "read file app.txt").await;
    assert!(
        reply.contains("Tool said: two"),
        "the merge is not in main: {reply}"
    );

    let seen_here: Vec<_> = std::fs::read_dir(&disk).unwrap().flatten().collect();
    assert!(seen_here.is_empty(), "the gateway's side has {seen_here:?}");
    app.shutdown(None).await;
}
