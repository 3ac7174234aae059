//! A newcomer's first hour: `check-config` says what works and what does not in words a
//! person can act on, and a gateway that boots before its network waits for it.

use std::process::Output;
use std::time::{Duration, Instant};

use crate::support::binary::{ALICE, gateway_command, telegram_env};
use crate::support::discord::FakeDiscord;
use crate::support::platform::FakePlatform;
use crate::support::telegram::{self, BOT_USERNAME, FakeTelegram};
use crate::support::{TestEnv, free_port, http_get_when_up, secret};

/// `codex-gateway check-config` with `envs`, off the runtime that serves the fakes.
async fn check_config(env: &TestEnv, envs: Vec<(&'static str, String)>) -> Output {
    let mut command = gateway_command(env, &["check-config"], &envs);
    tokio::task::spawn_blocking(move || command.output().unwrap())
        .await
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn discord_env(discord: &FakeDiscord, token: &str) -> Vec<(&'static str, String)> {
    vec![
        ("CODEX_GATEWAY__DISCORD__ENABLED", "true".into()),
        ("CODEX_GATEWAY__DISCORD__TOKEN", token.into()),
        ("CODEX_GATEWAY__DISCORD__APPLICATION_ID", "777".into()),
        ("CODEX_GATEWAY__DISCORD__API_URL", discord.url.clone()),
    ]
}

/// Each enabled platform is asked who the bot is with the configured token, and says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_config_asks_each_platform_whether_the_token_works() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let mut envs = telegram_env(&tg, free_port());
    envs.extend(discord_env(&discord, crate::support::discord::TOKEN));
    let output = check_config(&env, envs).await;
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{stdout}{}", text(&output.stderr));
    let told = [
        format!(
            "telegram: {} accepts the token: the bot is @{BOT_USERNAME} (id 4242)",
            tg.url
        ),
        format!(
            "discord: {} accepts the token: the bot is user4242 (id 4242)",
            discord.url
        ),
        // The fakes' tokens are not shaped like real ones, and the check says so.
        "warning: telegram.token does not look like a Telegram bot token".into(),
        "warning: discord.token does not look like a Discord bot token".into(),
    ];
    for line in told {
        assert!(stdout.contains(&line), "missing {line:?} in:\n{stdout}");
    }
}

/// A wrong token, an empty one and an API that cannot be reached are each named, with
/// what to check; every check still runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_config_names_a_refused_an_empty_and_an_unreachable_token() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let wrong = "123456789:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU";
    let mut envs = telegram_env(&tg, free_port());
    envs.push(("CODEX_GATEWAY__TELEGRAM__TOKEN", wrong.into()));
    envs.extend(discord_env(&discord, "MTIz.GaBc.wrong-token"));
    let output = check_config(&env, envs).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    for line in [
        "the token was refused (HTTP 401: Unauthorized; check telegram.token and telegram.api_url)",
        "the token was refused (HTTP 401: 401: Unauthorized; check discord.token)",
    ] {
        assert!(stderr.contains(line), "missing {line:?} in:\n{stderr}");
    }
    assert!(!stderr.contains(wrong), "the token was printed: {stderr}");
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("workspace: "),
        "a check was left out: {stdout}"
    );

    let mut envs = telegram_env(&tg, free_port());
    envs.push(("CODEX_GATEWAY__TELEGRAM__TOKEN", " ".into()));
    let output = check_config(&env, envs).await;
    let stderr = text(&output.stderr);
    assert!(stderr.contains("telegram.token is empty"), "{stderr}");

    let closed = format!("http://127.0.0.1:{}", free_port());
    let mut envs = telegram_env(&tg, free_port());
    envs.push(("CODEX_GATEWAY__TELEGRAM__API_URL", closed.clone()));
    let output = check_config(&env, envs).await;
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    let said = format!("telegram: {closed}: the API cannot be reached (network error");
    assert!(stderr.contains(&said), "{stderr}");
}

/// A gateway that starts while the Bot API cannot be reached serves Discord meanwhile,
/// says in `/healthz` why Telegram is down, and takes Telegram's messages once the API
/// answers; it neither exits nor blames the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_api_unreachable_at_boot_is_waited_for_while_the_other_platform_serves() {
    let env = TestEnv::new().await;
    let (discord, mut config) = <FakeDiscord as FakePlatform>::start(&env).await;
    let bot_api = std::net::SocketAddr::from(([127, 0, 0, 1], free_port()));
    config.telegram.enabled = true;
    config.telegram.token = Some(secret(telegram::TOKEN));
    config.telegram.api_url = format!("http://{bot_api}");
    config.telegram.allowed_users = vec![ALICE];
    let port = free_port();
    config.server.listen = format!("127.0.0.1:{port}");
    let gateway = discord.gateway(&config).await;
    discord.send("while telegram is away");
    discord.said(|t| t == "Echo: while telegram is away").await;
    let (status, health) = http_get_when_up(port, "/healthz").await;
    assert_eq!(status, 503, "{health}");
    assert!(health.contains("telegram API unreachable"), "{health}");

    let tg = FakeTelegram::start_on(bot_api).await;
    tg.dm(ALICE, "the network is up");
    tg.wait_for_text(ALICE, |t| t == "Echo: the network is up")
        .await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while http_get_when_up(port, "/healthz").await.0 != 200 {
        assert!(Instant::now() < deadline, "health stayed down");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    gateway.stop().await;
}

/// A token the Bot API refuses at boot is the config's fault: the start fails, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_refused_at_boot_fails_the_start_and_says_why() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    config.telegram.token = Some(secret("123456789:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU"));
    let run = codex_gateway::run(&config, std::future::pending());
    let error = tokio::time::timeout(Duration::from_secs(30), run)
        .await
        .expect("the start did not end")
        .expect_err("a refused token started");
    assert_eq!(
        error.to_string(),
        "Telegram refused the bot: HTTP 401: Unauthorized; check telegram.token and telegram.api_url"
    );
}

/// Relative paths in the config file are read from its folder, wherever the gateway is
/// started (systemd starts it in `/`): the same database every time, its path printed
/// absolute, and the folders it had to create said.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_paths_follow_the_config_file_not_the_current_folder() {
    let env = TestEnv::new().await;
    let folder = env.dir.path().join("etc");
    std::fs::create_dir_all(&folder).unwrap();
    let config = folder.join("gateway.toml");
    std::fs::write(
        &config,
        format!(
            "[storage]\ndatabase = \"state/gateway.db\"\n[codex]\nbinary = {:?}\n\
             home = \"codex-home\"\nworkspace = \"work\"\nworkspace_mode = \"shared\"\n\
             approval_policy = \"never\"\nsandbox = \"danger-full-access\"\n",
            crate::support::codex_binary(),
        ),
    )
    .unwrap();
    let run_from = |cwd: &'static str| {
        let config = config.clone();
        tokio::task::spawn_blocking(move || {
            std::process::Command::new(env!("CARGO_BIN_EXE_codex-gateway"))
                .args(["check-config", "--config"])
                .arg(&config)
                .env("RUST_LOG", "info")
                // A new Codex home has no login; nothing leaves this host to find out.
                .env("OPENAI_API_KEY", "")
                .env("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
                .current_dir(cwd)
                .output()
                .unwrap()
        })
    };
    let first = run_from("/").await.unwrap();
    let (stdout, stderr) = (text(&first.stdout), text(&first.stderr));
    let database = folder.join("state/gateway.db");
    assert!(
        stdout.contains(&format!("database: {} opened", database.display())),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.contains(&format!(
            "workspace: {} is usable",
            folder.join("work").display()
        )),
        "{stdout}"
    );
    for created in [
        "created the database's folder",
        "created a new, empty database",
        "created codex.home",
    ] {
        assert!(
            stderr.contains(created),
            "not said: {created:?} in {stderr}"
        );
    }
    assert!(folder.join("codex-home").is_dir());

    let again = run_from("/tmp").await.unwrap();
    let stderr = text(&again.stderr);
    assert!(
        !stderr.contains("created"),
        "a second database or home: {stderr}"
    );
    assert!(database.exists());
}

/// A bot token handed to Codex through `[codex.env]` is refused; a value shaped like one
/// is named; run as root without `run_as`, the gateway says Codex can read its secrets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn secrets_handed_to_codex_are_refused_or_named() {
    let env = TestEnv::new().await;
    let token = "123456789:AAHk2-ZDTuQ_qsE1r3FhZ9xYkLmN0pQrStU";
    let base = std::fs::read_to_string(env.config_file("")).unwrap();
    let config = env.dir.path().join("with-env.toml");
    let check_with_env = |extra: String, envs: Vec<(&'static str, String)>| {
        let changed = base.replace(
            "env = { MOCK_API_KEY = \"test-key\" }",
            &format!("env = {{ MOCK_API_KEY = \"test-key\", {extra} }}"),
        );
        assert_ne!(changed, base, "the test config changed shape");
        std::fs::write(&config, changed).unwrap();
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_codex-gateway"));
        command
            .args(["check-config", "--config"])
            .arg(&config)
            .envs(envs);
        tokio::task::spawn_blocking(move || command.output().unwrap())
    };
    let envs = vec![("CODEX_GATEWAY__TELEGRAM__TOKEN", token.to_owned())];
    let output = check_with_env(format!("LEAK = \"{token}\""), envs)
        .await
        .unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("codex.env.LEAK holds one of the gateway's tokens"),
        "{stderr}"
    );
    assert!(!stderr.contains(token), "the token was printed: {stderr}");

    let output = check_with_env(format!("OTHER_BOT = \"{token}\""), Vec::new())
        .await
        .unwrap();
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("warning: codex.env.OTHER_BOT looks like a bot token"),
        "{stdout}"
    );
    let root = stdout.contains("warning: the gateway runs as root without codex.run_as");
    assert_eq!(root, codex_gateway::running_as_root(), "{stdout}");
}
