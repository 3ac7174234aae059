//! Git worktrees per task (#48): two tasks (two topics of a Telegram DM) on one real
//! repository, each in a worktree of its own, made and merged through the real app-server.

use std::path::Path;
use std::process::Command;

use crate::support::telegram::{FakeTelegram, button_data};
use crate::support::{Gateway, TestEnv};

const ALICE: i64 = 1001;

fn git(folder: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@localhost"])
        .args(args)
        .current_dir(folder)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn text_of(file: &Path) -> String {
    std::fs::read_to_string(file).unwrap()
}

/// A repository on `main` with one commit of `app.txt`.
fn repository(folder: &Path) {
    git(folder, &["init", "-q", "-b", "main"]);
    std::fs::write(folder.join("app.txt"), "line one\n").unwrap();
    git(folder, &["add", "app.txt"]);
    git(folder, &["commit", "-q", "-m", "first"]);
}

/// Sends `text` in topic `topic` of Alice's DM and waits for an answer that `pick` takes.
async fn ask(
    tg: &FakeTelegram,
    topic: i64,
    text: &str,
    pick: impl Fn(&str) -> bool,
) -> (i64, String) {
    let before = tg.texts(ALICE).len();
    tg.group_message(ALICE, ALICE, text, Some(topic));
    let deadline = std::time::Instant::now() + crate::support::ANSWER_TIMEOUT;
    loop {
        let texts = tg.texts(ALICE);
        if let Some(found) = texts.iter().skip(before).find(|(_, t)| pick(t)) {
            return found.clone();
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no answer to {text:?}: {texts:#?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// Two tasks change one file on two branches: the first `/merge` goes through, the second
/// names the conflict and changes nothing in the main checkout; `/worktrees` lists both;
/// `/discard` (after its button) removes the second and its branch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_tasks_on_one_repository_merge_once_and_report_the_conflict() {
    let env = TestEnv::new().await;
    let repo = env.workspace();
    let tg = FakeTelegram::start().await;
    let config = env.telegram_config(&tg, ALICE);
    let gateway = Gateway::start(&config);
    let (_, refused) = ask(&tg, 5, "/worktree early", |t| t.starts_with("No worktree")).await;
    let expected = format!(
        "No worktree: the chat's folder {} is in no git repository (/cwd moves the chat to one).",
        repo.display()
    );
    assert_eq!(refused, expected);
    repository(&repo);

    let (_, made) = ask(&tg, 3, "/worktree fix-a", |t| {
        t.contains("worktree on branch fix-a")
    })
    .await;
    assert!(made.contains("(from main)"), "{made}");
    ask(
        &tg,
        3,
        "run: printf 'from a\\n' > app.txt && echo written",
        |t| t == "Tool said: written",
    )
    .await;
    ask(&tg, 4, "/worktree fix-b", |t| {
        t.contains("worktree on branch fix-b")
    })
    .await;
    ask(
        &tg,
        4,
        "run: printf 'from b\\n' > app.txt && echo written",
        |t| t == "Tool said: written",
    )
    .await;
    let worktrees = repo.parent().unwrap().join(".codex-worktrees");
    let workspace_name = repo.file_name().unwrap();
    let (a, b) = (
        worktrees.join(workspace_name).join("fix-a"),
        worktrees.join(workspace_name).join("fix-b"),
    );
    assert_eq!(text_of(&a.join("app.txt")), "from a\n");
    assert_eq!(text_of(&b.join("app.txt")), "from b\n");
    assert_eq!(text_of(&repo.join("app.txt")), "line one\n");

    let (_, listed) = ask(&tg, 3, "/worktrees", |t| t.starts_with("Worktrees:")).await;
    assert!(
        listed
            .contains("- fix-a (from main): 0 ahead, 0 behind, 1 uncommitted changes · this chat"),
        "{listed}"
    );
    assert!(
        listed.contains("- fix-b (from main): 0 ahead, 0 behind, 1 uncommitted changes\n"),
        "{listed}"
    );

    let (_, merged) = ask(&tg, 3, "/merge", |t| {
        t.starts_with("Merged") || t.starts_with("Not merged")
    })
    .await;
    assert!(
        merged.starts_with("Merged fix-a (its uncommitted work was committed first) into main"),
        "{merged}"
    );
    assert_eq!(text_of(&repo.join("app.txt")), "from a\n");
    let main_head = git(&repo, &["rev-parse", "HEAD"]);

    let (_, refused) = ask(&tg, 4, "/merge", |t| {
        t.starts_with("Merged") || t.starts_with("Not merged")
    })
    .await;
    assert!(
        refused.starts_with("Not merged: fix-b and main both change these files:\n- app.txt\n"),
        "{refused}"
    );
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), main_head, "main moved");
    assert_eq!(
        git(&repo, &["status", "--porcelain"]),
        "",
        "the main checkout was touched"
    );
    assert_eq!(text_of(&repo.join("app.txt")), "from a\n");
    assert_eq!(text_of(&b.join("app.txt")), "from b\n");

    let (card, asked) = ask(&tg, 4, "/discard", |t| {
        t.starts_with("Discard the worktree")
    })
    .await;
    assert!(asked.contains("fix-b"), "{asked}");
    let body = tg.message_of(card).expect("the card");
    let data = button_data(&body, "Discard");
    tg.press(ALICE, ALICE, card, &data);
    tg.wait_for_text(ALICE, |t| {
        t.starts_with("Removed the worktree and the branch fix-b")
    })
    .await;
    assert!(!b.exists(), "the worktree's folder stays");
    assert_eq!(git(&repo, &["branch", "--list", "fix-b"]), "");
    // The chat is back in the main checkout.
    ask(&tg, 4, "run: cat app.txt", |t| t == "Tool said: from a").await;
    gateway.stop().await;
}

/// With `codex.task_worktrees`, a task `/task` opened works in a worktree of its own from
/// its first message (after a restart too), on a branch named after it, and its Codex
/// thread has its title.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_task_gets_a_worktree_and_a_thread_named_after_it() {
    let env = TestEnv::new().await;
    let repo = env.workspace();
    repository(&repo);
    let tg = FakeTelegram::start().await;
    tg.turn_on_threaded_mode();
    let mut config = env.telegram_config(&tg, ALICE);
    config.codex.task_worktrees = true;
    let gateway = Gateway::start(&config);
    tg.dm(ALICE, "/task Fix the login page");
    tg.wait_for_text(ALICE, |t| t.starts_with("Opened a topic"))
        .await;
    let topic = *tg
        .task_topics()
        .first()
        .expect("a greeting in the new topic");
    // The topic stays the task's over a restart before its first message.
    gateway.stop().await;
    let gateway = Gateway::start(&config);
    let branch = format!("task/fix-the-login-page-{topic}");
    let folder = repo
        .parent()
        .unwrap()
        .join(".codex-worktrees")
        .join(repo.file_name().unwrap())
        .join(branch.replace('/', "-"));
    let (_, told) = ask(&tg, topic, "run: pwd", |t| t.starts_with("This task works")).await;
    assert!(
        told.contains(&format!("on branch {branch} at {}", folder.display())),
        "{told}"
    );
    let expected = format!("Tool said: {}", folder.display());
    tg.wait_for_text(ALICE, |t| t == expected).await;
    let (_, status) = ask(&tg, topic, "/status", |t| t.starts_with("Chat:")).await;
    assert!(
        status.contains("Thread name: Fix the login page"),
        "{status}"
    );
    assert!(
        status.contains(&format!("Worktree: branch {branch} (from main")),
        "{status}"
    );
    let (_, threads) = ask(&tg, topic, "/threads", |t| t.contains("Fix the login page")).await;
    assert!(
        !threads.contains("run: pwd"),
        "listed by its first words: {threads}"
    );
    // The chat's main conversation stays in the main checkout.
    tg.dm(ALICE, "run: pwd");
    let main = format!("Tool said: {}", repo.display());
    tg.wait_for_text(ALICE, |t| t == main).await;
    gateway.stop().await;
    // The branch is checked out in its worktree ("+").
    assert_eq!(
        git(&repo, &["branch", "--list", &branch]),
        format!("+ {branch}")
    );
}
