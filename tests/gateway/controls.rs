//! Chat controls against the real app-server and the fake model: a chat's own model,
//! reasoning effort and folder (`/model`, `/effort`, `/cwd`, fixed folders), which reach
//! the next model request, survive a restart and `/new`, and change nothing when bad;
//! a custom provider's models shown and chosen by name; `/fork`, `/undo` and `/name` of
//! the chat's thread; `/usage`, `/threads` and `/resume`; `/login` offline and against a stand-in Codex.

use std::sync::Arc;

use crate::support::{Brain, Chat, Reply, TestEnv, default_brain};

/// The choices a listing notice offers ("Choices: a (default), b (configured), c").
fn listed(notice: &str, prefix: &str) -> Vec<String> {
    let line = notice.lines().find_map(|l| l.strip_prefix(prefix)).unwrap();
    let line = line.split_once(": ").map_or(line, |(_, list)| list);
    line.split(", ")
        .map(|item| item.split(" (").next().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn model_and_effort_reach_the_model_and_outlive_a_restart_and_new() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("chooser");

    chat.send(&app, "/model");
    let listing = chat.notice("Choices:").await;
    let models = listed(&listing, "Choices: ");
    assert!(models.len() > 1, "{listing}");
    let model = models.last().unwrap().clone();
    chat.send(&app, &format!("/model {model}"));
    chat.notice("from the next turn on").await;
    chat.ask(&app, "first with a chosen model").await;
    let request = env.model.request_for("first with a chosen model");
    assert_eq!(request.body["model"], model.as_str());

    chat.send(&app, "/effort");
    let listing = chat.notice("Choices for").await;
    let levels = listed(&listing, "Choices for ");
    let level = levels.first().unwrap().clone();
    chat.send(&app, &format!("/effort {level}"));
    chat.notice("effort from the next turn on").await;
    chat.send(&app, "/effort extreme-thinking");
    chat.notice("has no extreme-thinking effort; nothing changed")
        .await;
    chat.ask(&app, "second with an effort").await;
    let request = env.model.request_for("second with an effort");
    assert_eq!(request.body["model"], model.as_str());
    assert_eq!(request.body["reasoning"]["effort"], level.as_str());

    env.shut_down(app).await;
    let app = env.start().await;
    let mut chat = Chat::new("chooser");
    chat.ask(&app, "after a restart").await;
    let request = env.model.request_for("after a restart");
    assert_eq!(request.body["model"], model.as_str(), "lost over a restart");
    assert_eq!(request.body["reasoning"]["effort"], level.as_str());

    chat.send(&app, "/new");
    chat.notice("new conversation").await;
    chat.ask(&app, "on a fresh thread").await;
    let request = env.model.request_for("on a fresh thread");
    assert_eq!(request.body["model"], model.as_str(), "lost by /new");
    chat.send(&app, "/status");
    let status = chat.notice("Model:").await;
    assert!(status.contains(&format!("Model: {model}")), "{status}");
    assert!(
        status.contains(&format!("Reasoning effort: {level}")),
        "{status}"
    );

    // Another chat keeps the default.
    let mut other = Chat::new("other");
    other.ask(&app, "someone else").await;
    assert_ne!(
        env.model.request_for("someone else").body["model"],
        model.as_str()
    );
    env.shut_down(app).await;
}

/// The tests' Codex uses a custom provider (`model_provider = "mock"`, model `mock-model`),
/// as people run Azure, OpenRouter, LiteLLM or Ollama: `model/list` carries OpenAI's
/// catalog, not the provider's models.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_providers_model_is_shown_and_any_of_its_models_chosen() {
    let served = default_brain();
    let brain: Brain = Arc::new(move |request| match request.body["model"].as_str() {
        Some("not-served") => Reply::NoSuchModel,
        _ => served(request),
    });
    let env = TestEnv::with_brain(brain).await;
    let app = env.start().await;
    let mut chat = Chat::new("provider");

    chat.send(&app, "/model");
    let listing = chat.notice("Choices:").await;
    assert!(listing.starts_with("Model: mock-model\n"), "{listing}");
    assert!(
        listing.contains("Choices: mock-model (configured), "),
        "{listing}"
    );
    chat.send(&app, "/model mock-alt");
    let chosen = chat.notice("from the next turn on").await;
    assert!(
        chosen.contains("not in Codex's list; using it as given"),
        "{chosen}"
    );
    chat.send(&app, "/effort");
    let efforts = chat.notice("Choices for mock-alt").await;
    assert!(efforts.contains("high"), "{efforts}");
    chat.send(&app, "/effort high");
    chat.notice("high effort from the next turn on").await;
    chat.ask(&app, "on the provider's other model").await;
    let request = env.model.request_for("on the provider's other model");
    assert_eq!(request.body["model"], "mock-alt");
    assert_eq!(request.body["reasoning"]["effort"], "high");

    env.shut_down(app).await;
    let app = env.start().await;
    let mut chat = Chat::new("provider");
    chat.send(&app, "/status");
    let status = chat.notice("Model:").await;
    assert!(status.contains("Model: mock-alt"), "{status}");
    chat.ask(&app, "after a restart").await;
    assert_eq!(
        env.model.request_for("after a restart").body["model"],
        "mock-alt"
    );

    // A name the provider does not serve is taken, and its refusal shown on the turn.
    chat.send(&app, "/model not-served");
    chat.notice("using it as given").await;
    chat.send(&app, "on a model nobody serves");
    let refused = chat.notice("Codex failed").await;
    assert!(refused.contains("`not-served` does not exist"), "{refused}");
    chat.send(&app, "/model mock-model");
    let back = chat.notice("from the next turn on").await;
    assert!(!back.contains("not in Codex's list"), "{back}");
    let answer = chat.ask(&app, "back on the configured model").await;
    assert!(answer.contains("back on the configured model"), "{answer}");
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fork_undo_and_name_work_on_the_chats_thread_as_codex_keeps_it() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("editor");
    chat.send(&app, "/undo");
    chat.notice("no Codex thread yet").await;

    chat.ask(&app, "remember the puffin").await;
    chat.ask(&app, "remember the walrus").await;
    let original = crate::support::stored_thread(&app, &chat).await.unwrap();
    chat.send(&app, "/undo");
    let undone = chat.notice("out of Codex's context").await;
    assert!(undone.contains("remember the walrus"), "{undone}");
    assert!(undone.contains("NOT restored"), "{undone}");
    chat.ask(&app, "after the undo").await;
    let seen = env.model.request_for("after the undo").human_texts();
    assert!(seen.contains(&"remember the puffin".to_owned()), "{seen:?}");
    assert!(
        !seen.contains(&"remember the walrus".to_owned()),
        "undone turn still sent: {seen:?}"
    );

    chat.send(&app, "/name Puffin   research");
    chat.notice("is named \"Puffin research\"").await;
    chat.send(&app, "/status");
    let status = chat.notice("Thread name:").await;
    assert!(status.contains("Thread name: Puffin research"), "{status}");

    chat.send(&app, "/fork");
    let forked = chat.notice("Forked:").await;
    let fork = crate::support::stored_thread(&app, &chat).await.unwrap();
    assert_ne!(fork, original);
    assert!(
        forked.contains(&fork) && forked.contains(&original),
        "{forked}"
    );
    chat.ask(&app, "on the fork").await;
    let request = env.model.request_for("on the fork");
    assert_eq!(request.thread_id().as_deref(), Some(fork.as_str()));
    let seen = request.human_texts();
    for kept in ["remember the puffin", "after the undo"] {
        assert!(
            seen.contains(&kept.to_owned()),
            "fork lost {kept:?}: {seen:?}"
        );
    }
    chat.send(&app, "/threads");
    let listing = chat.notice("Puffin research").await;
    assert!(
        listing.contains(&original[..8]) && listing.contains(&fork[..8]),
        "{listing}"
    );

    // The fork is the chat's thread across a restart.
    env.shut_down(app).await;
    let app = env.start().await;
    let mut chat = Chat::new("editor");
    chat.ask(&app, "after a restart").await;
    let request = env.model.request_for("after a restart");
    assert_eq!(request.thread_id().as_deref(), Some(fork.as_str()));
    assert!(request.human_texts().contains(&"on the fork".to_owned()));
    env.shut_down(app).await;
}

/// The tests' gateway runs Codex with no sandbox and no approvals; `/mode` changes that
/// per chat, from the next turn on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mode_read_only_keeps_codex_from_writing_and_full_is_for_admins() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("careful");

    chat.send(&app, "/mode read-only");
    chat.notice("mode read-only: sandbox read-only, approvals on-request")
        .await;
    // The sandbox refused it (measured: "touch: cannot touch 'kept-out.txt': Read-only
    // file system"), rather than the command not running at all.
    let said = chat.ask(&app, "run: touch kept-out.txt").await;
    assert!(said.contains("Read-only file system"), "{said}");
    assert!(
        !env.workspace().join("kept-out.txt").exists(),
        "a read-only chat wrote a file"
    );
    chat.send(&app, "/status");
    let status = chat.notice("Mode:").await;
    assert!(status.contains("Mode: read-only"), "{status}");

    // Kept across a restart; `default` goes back to the config's (no sandbox here).
    env.shut_down(app).await;
    let app = env.start().await;
    let mut chat = Chat::new("careful");
    chat.ask(&app, "run: touch still-read-only.txt").await;
    assert!(!env.workspace().join("still-read-only.txt").exists());
    chat.send(&app, "/mode default");
    chat.notice("mode default (the config's): sandbox danger-full-access")
        .await;
    chat.ask(&app, "run: touch written.txt").await;
    assert!(env.workspace().join("written.txt").exists());

    let mut guest = Chat::new("guest");
    guest.admin = false;
    guest.send(&app, "/mode full");
    guest.notice("for admins only; nothing changed").await;
    guest.send(&app, "/mode sideways");
    guest.notice("There is no mode sideways").await;
    guest.send(&app, "/mode auto");
    guest.notice("mode auto: sandbox workspace-write").await;
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwd_moves_the_chat_inside_the_project_roots_only() {
    let env = TestEnv::new().await;
    let root = env.dir.path().join("projects");
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(root.join("app/marker.txt"), "cwd-heron-31").unwrap();
    let mut config = env.config();
    config.codex.project_roots = vec![root.clone()];
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("mover");

    chat.send(&app, "/cwd");
    let shown = chat.notice("Folder:").await;
    assert!(shown.contains(&root.display().to_string()), "{shown}");
    chat.send(&app, "/cwd /etc");
    chat.notice("not allowed: /etc is outside the project roots; nothing changed")
        .await;
    chat.send(&app, "/cwd ../..");
    chat.notice("not allowed: ../.. is outside the project roots")
        .await;
    chat.send(&app, "/cwd app");
    chat.notice("works in").await;

    let said = chat.ask(&app, "run: pwd && cat marker.txt").await;
    let app_folder = std::fs::canonicalize(root.join("app")).unwrap();
    assert!(said.contains(&app_folder.display().to_string()), "{said}");
    assert!(said.contains("cwd-heron-31"), "{said}");
    let request = env.model.request_for("run: pwd");
    assert!(
        request
            .text()
            .contains(&format!("<cwd>{}</cwd>", app_folder.display())),
        "the model was not told the folder"
    );
    // The folder is sent to Codex once; its later turns keep it.
    let said = chat.ask(&app, "run: pwd # a later turn").await;
    assert!(said.contains(&app_folder.display().to_string()), "{said}");
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_answers_at_once_when_the_provider_reports_no_limits() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("usage");
    chat.ask(&app, "use a little context").await;
    let asked = std::time::Instant::now();
    chat.send(&app, "/usage");
    let usage = chat.notice("Context:").await;
    assert!(usage.contains("no rate limits"), "{usage}");
    assert!(usage.contains("Context: 110 / "), "{usage}");
    println!("/usage answered in {:?}", asked.elapsed());
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resume_continues_another_chats_thread_with_its_context() {
    let env = TestEnv::new().await;
    std::fs::write(env.workspace().join("notes.txt"), "resume-ibis-77").unwrap();
    let app = env.start().await;
    let mut reader = Chat::new("reader");
    reader.ask(&app, "read file notes.txt").await;
    let thread = crate::support::stored_thread(&app, &reader).await.unwrap();

    let mut other = Chat::new("other");
    other.send(&app, "/threads");
    let listing = other.notice("Threads, newest first").await;
    let short = &thread[..8];
    assert!(
        listing.contains(&format!("{short}  read file notes.txt")),
        "{listing}"
    );

    other.send(&app, "/resume no-such-thread");
    other
        .notice("No thread no-such-thread found; nothing changed.")
        .await;
    other.send(&app, &format!("/resume {short}"));
    other.notice(&format!("continues thread {thread}")).await;
    let said = other.ask(&app, "what did you just read?").await;
    assert!(said.contains("resume-ibis-77"), "{said}");
    assert_eq!(
        crate::support::stored_thread(&app, &other).await,
        Some(thread)
    );
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chat_with_a_fixed_folder_works_there_and_cannot_move() {
    let env = TestEnv::new().await;
    let repository = env.dir.path().join("repository");
    std::fs::create_dir_all(&repository).unwrap();
    std::fs::write(repository.join("README"), "fixed-egret-12").unwrap();
    let mut config = env.config();
    config.codex.project_roots = vec![env.dir.path().to_owned()];
    config
        .codex
        .chat_folders
        .insert("console:repo-room".into(), repository.clone());
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("repo-room");
    let said = chat.ask(&app, "run: pwd && cat README").await;
    assert!(said.contains(&repository.display().to_string()), "{said}");
    assert!(said.contains("fixed-egret-12"), "{said}");
    chat.send(&app, "/cwd workspace");
    chat.notice("fixed to").await;
    chat.send(&app, "/status");
    let status = chat.notice("Working directory:").await;
    assert!(
        status.contains(&format!("Working directory: {}", repository.display())),
        "{status}"
    );
    // Other chats keep the workspace.
    let mut other = Chat::new("elsewhere");
    let said = other.ask(&app, "run: pwd").await;
    assert!(!said.contains("repository"), "{said}");
    env.shut_down(app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_offline_says_why_at_once() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("admin");
    let asked = std::time::Instant::now();
    chat.send(&app, "/login");
    let said = chat.notice("login could not start").await;
    println!("/login offline answered in {:?}: {said}", asked.elapsed());
    env.shut_down(app).await;
}

/// A stand-in for Codex whose device-code login completes at once: it answers the
/// requests the gateway makes and then reports the login done.
const LOGGING_IN_APP_SERVER: &str = r#"#!/usr/bin/env bash
while IFS= read -r line; do
  id=${line#*\"id\":}; id=${id%%,*}
  case $line in
    *'"method":"initialize"'*) printf '{"id":%s,"result":{"userAgent":"stand-in"}}\n' "$id" ;;
    *'"method":"account/read"'*) printf '{"id":%s,"result":{"account":null,"requiresOpenaiAuth":false}}\n' "$id" ;;
    *'"method":"account/login/start"'*)
      printf '{"id":%s,"result":{"type":"chatgptDeviceCode","loginId":"L1","verificationUrl":"https://auth.example/device","userCode":"ABCD-1234"}}\n' "$id"
      printf '{"method":"account/login/completed","params":{"loginId":"L1","success":true,"error":null}}\n' ;;
    *'"id":'*) printf '{"id":%s,"result":{}}\n' "$id" ;;
  esac
done
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn login_gives_the_code_and_says_when_it_is_done() {
    let env = TestEnv::new().await;
    let script = crate::support::binary::fake_app_server(&env, "logging-in", LOGGING_IN_APP_SERVER);
    let mut config = env.config();
    config.codex.binary = script;
    config.codex.attach = false; // the fake speaks stdio only
    let app = codex_gateway::App::start(&config).await.unwrap();
    let mut chat = Chat::new("admin");
    chat.send(&app, "/login");
    let code = chat.notice("enter the code").await;
    assert!(
        code.contains("https://auth.example/device") && code.contains("ABCD-1234"),
        "{code}"
    );
    chat.notice("Codex is logged in.").await;
    app.shutdown(None).await;
}

/// The fake model as a reviewer: a review request (Codex's own review prompt) gets
/// findings in Codex's review format; anything else the default script.
pub(crate) fn reviewing_brain() -> crate::support::Brain {
    let default = crate::support::default_brain();
    std::sync::Arc::new(move |request: &crate::support::ModelRequest| {
        if !request
            .last_human_text()
            .starts_with("Review the current code changes")
        {
            return default(request);
        }
        let findings = serde_json::json!({
            "findings": [{"title": "[P1] eval on untrusted input",
                "body": "parse() hands its argument to eval.", "confidence_score": 0.9,
                "priority": 1, "code_location": {"absolute_file_path": "parser.py",
                "line_range": {"start": 2, "end": 2}}}],
            "overall_correctness": "patch is incorrect",
            "overall_explanation": "eval makes parse unsafe.",
            "overall_confidence_score": 0.9});
        crate::support::Reply::Text(findings.to_string())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_posts_codex_findings_like_a_reply() {
    let env = TestEnv::with_brain(reviewing_brain()).await;
    env.uncommitted_change("parser.py", "def parse(x):\n    return eval(x)\n");
    let app = env.start().await;
    let mut chat = Chat::new("reviewer");
    chat.send(&app, "/review");
    let findings = chat.reply().await;
    assert!(findings.contains("eval on untrusted input"), "{findings}");
    let request = env.model.requests().pop().unwrap();
    assert!(
        request
            .last_human_text()
            .starts_with("Review the current code changes")
    );
    // The review ran on the chat's own thread: the next message continues it.
    chat.ask(&app, "thanks").await;
    let thread = crate::support::stored_thread(&app, &chat).await.unwrap();
    assert_eq!(env.model.request_for("thanks").thread_id(), Some(thread));
    env.shut_down(app).await;
}

/// `/model default` and `/effort default` go back to the configured ones (Codex keeps a
/// thread on the last model and effort a turn named, so the turn names them again), and
/// names are bounded: a 10 KB name is refused at once, stored nowhere and echoed nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn default_goes_back_to_the_configured_model_and_long_names_are_refused() {
    let env = TestEnv::new().await;
    let app = env.start().await;
    let mut chat = Chat::new("chooser");
    chat.send(&app, "/model");
    let listing = chat.notice("Choices:").await;
    let listed = listing
        .split("(configured), ")
        .nth(1)
        .and_then(|rest| rest.split([',', '\n']).next())
        .expect("a model Codex lists")
        .trim()
        .to_owned();
    chat.send(&app, &format!("/model {listed}"));
    chat.notice("from the next turn on").await;
    chat.send(&app, "/effort");
    let efforts = chat.notice("Reasoning effort:").await;
    let listed_default = efforts
        .strip_prefix("Reasoning effort: ")
        .and_then(|rest| rest.lines().next())
        .unwrap()
        .to_owned();
    let other = ["low", "high"]
        .into_iter()
        .find(|level| *level != listed_default)
        .unwrap();
    chat.send(&app, &format!("/effort {other}"));
    chat.notice("effort from the next turn on").await;
    chat.ask(&app, "on a listed model").await;
    let request = env.model.request_for("on a listed model");
    assert_eq!(request.body["model"], listed.as_str());
    assert_eq!(request.body["reasoning"]["effort"], other);

    chat.send(&app, "/effort default");
    let back = chat.notice("configured effort").await;
    assert!(back.contains(&listed_default), "{back}");
    chat.ask(&app, "on the default effort").await;
    let request = env.model.request_for("on the default effort");
    assert_eq!(request.body["reasoning"]["effort"], listed_default.as_str());

    chat.send(&app, "/model default");
    let back = chat.notice("configured model").await;
    assert_eq!(
        back,
        "This chat uses the configured model, mock-model, from the next turn on."
    );
    chat.ask(&app, "on the configured model").await;
    let request = env.model.request_for("on the configured model");
    assert_eq!(request.body["model"], "mock-model");

    // The provider's own model has no default effort: Codex cannot be told to drop one.
    chat.send(&app, "/effort high");
    chat.notice("high effort from the next turn on").await;
    chat.send(&app, "/effort default");
    let kept = chat.notice("keeps high effort").await;
    assert!(kept.contains("/new starts a thread without it"), "{kept}");

    let long = "x".repeat(10 * 1024);
    chat.send(&app, &format!("/model {long}"));
    let refused = chat.notice("characters long").await;
    assert!(refused.contains("/model takes at most 128"), "{refused}");
    chat.send(&app, &format!("/name {long}"));
    let refused = chat.notice("characters long").await;
    assert!(refused.contains("/name takes at most 100"), "{refused}");
    chat.send(&app, "/status");
    let status = chat.notice("Model:").await;
    assert!(status.contains("Model: mock-model"), "{status}");
    assert!(
        !status.contains("xxxxxxxx"),
        "a refused name was kept: {status}"
    );
    env.shut_down(app).await;
}
