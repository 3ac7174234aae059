//! Odd input from strangers, seeded and repeatable: 10,000 generated Telegram updates and
//! Discord events (missing fields, huge and odd texts, unknown kinds, garbage button
//! data, entities pointing outside the text). The gateway must not panic or stall, must
//! start no Codex turn for anyone not allowed, and its memory must stay flat.

use crate::support::binary::{gateway_command, terminate};
use crate::support::discord::{self as fake_discord, APP_ID, BOT_ID, FakeDiscord};
use crate::support::telegram::FakeTelegram;
use crate::support::{TestEnv, free_port};
use serde_json::{Value, json};

const SEED: u64 = 0x5EED_2026_1203;
const EVENTS_PER_PLATFORM: usize = 5_000;
/// The events go in this many parts; the first one warms the gateway up.
const PARTS: usize = 4;
const ALICE: i64 = 1001;
const DISCORD_CHANNEL: u64 = 600;
const DISCORD_ALICE_DM: u64 = 800;

/// xorshift64*: small, seeded, and the same on every machine.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    fn pick<'a>(&mut self, choices: &[&'a str]) -> &'a str {
        choices[self.below(choices.len() as u64) as usize]
    }

    /// Text people and attackers send: empty, huge, control and bidi characters,
    /// commands, mentions, Markdown and HTML.
    fn text(&mut self) -> String {
        let pieces = [
            "",
            "hi",
            "/new",
            "/stop",
            "/status@other_bot",
            "/help extra",
            "@codex_test_bot",
            "<b>",
            "</pre>",
            "```",
            "||x||",
            "@everyone",
            "\u{202E}",
            "\u{200B}",
            "\0",
            "\r\n",
            "\u{FEFF}",
            "🦀",
            "ü",
            "\u{10FFFF}",
            "ap:1:a",
            "%s%n",
            "'; DROP TABLE chats;--",
        ];
        let mut text = String::new();
        for _ in 0..self.below(12) {
            text.push_str(self.pick(&pieces));
        }
        if self.chance(2) {
            text.push_str(&"x".repeat(self.below(64_000) as usize));
        }
        text
    }

    /// Entities that may point far outside the text, or name unknown types.
    fn entities(&mut self) -> Value {
        let kinds = [
            "bot_command",
            "mention",
            "text_mention",
            "pre",
            "bogus",
            "url",
        ];
        let entities: Vec<Value> = (0..self.below(4))
            .map(|_| {
                json!({"type": self.pick(&kinds), "offset": self.below(1 << 20),
                       "length": self.below(1 << 20)})
            })
            .collect();
        Value::Array(entities)
    }

    fn id(&mut self) -> i64 {
        match self.below(4) {
            0 => -(self.below(1 << 40) as i64),
            1 => i64::MAX,
            _ => 2000 + self.below(100_000) as i64,
        }
    }
}

/// One Telegram update from someone not allowed, or garbage from anyone.
fn telegram_update(dice: &mut Dice) -> Value {
    let stranger = dice.id();
    let chat_id = if dice.chance(50) { stranger } else { dice.id() };
    let chat_type = dice.pick(&["private", "group", "supergroup", "channel", "weird"]);
    let mut message = json!({
        "message_id": dice.below(1 << 31), "date": 1_700_000_000,
        "chat": {"id": chat_id, "type": chat_type, "title": dice.text(), "first_name": "X"},
        "from": {"id": stranger, "is_bot": dice.chance(10), "first_name": dice.text()},
        "text": dice.text(),
    });
    if dice.chance(40) {
        message["entities"] = dice.entities();
    }
    for field in ["from", "chat", "text", "date", "message_id"] {
        if dice.chance(5) {
            message.as_object_mut().unwrap().remove(field);
        }
    }
    if dice.chance(10) {
        message.as_object_mut().unwrap().remove("text");
        let kind = dice.pick(&["photo", "document", "sticker", "voice", "poll", "dice"]);
        message[kind] = json!({"file_id": dice.text()});
    }
    if dice.chance(10) {
        message["message_thread_id"] = json!(dice.id());
        message["is_topic_message"] = json!(true);
    }
    match dice.below(10) {
        0..=4 => json!({"message": message}),
        5 => json!({"edited_message": message}),
        6 => json!({"channel_post": message}),
        7 | 8 => {
            // Garbage button data, from strangers and from the allowed user alike.
            let presser = if dice.chance(30) { ALICE } else { stranger };
            let data = dice.pick(&["ap:1:a", "ap:99999999:a", "ap:x:y", "ap:", "", "zz"]);
            let mut query = json!({"id": dice.text(), "chat_instance": "ci", "data": data,
                "from": {"id": presser, "is_bot": false, "first_name": "P"}});
            if dice.chance(70) {
                query["message"] = message;
            }
            json!({"callback_query": query})
        }
        _ => {
            json!({dice.pick(&["weird_kind", "my_chat_member", "poll_answer"]): {"x": dice.text()}})
        }
    }
}

/// One Discord gateway event from someone not allowed, or garbage.
fn discord_event(dice: &mut Dice, discord: &FakeDiscord) -> (&'static str, Value) {
    let stranger = 2000 + dice.below(100_000);
    let channel = if dice.chance(60) {
        DISCORD_CHANNEL
    } else {
        dice.below(u64::MAX)
    };
    let content = if dice.chance(50) {
        format!("<@{BOT_ID}> {}", dice.text())
    } else {
        dice.text()
    };
    let mut message = fake_discord::message(discord.next_id(), channel, stranger, &content, true);
    message["mentions"] = json!([fake_discord::user(BOT_ID)]);
    if dice.chance(10) {
        message["type"] = json!(dice.below(64));
    }
    for field in [
        "author",
        "content",
        "channel_id",
        "guild_id",
        "timestamp",
        "id",
    ] {
        if dice.chance(4) {
            message.as_object_mut().unwrap().remove(field);
        }
    }
    match dice.below(8) {
        0..=3 => ("MESSAGE_CREATE", message),
        4 | 5 => {
            // A button or a slash command: garbage ids, strangers, the allowed user.
            let presser = if dice.chance(30) { 1001 } else { stranger };
            let custom_id = dice.pick(&["ap:1:a", "ap:99999999:c", "ap:x", "", "other"]);
            let command = dice.pick(&["new", "stop", "status", "nonsense"]);
            let data = if dice.chance(50) {
                json!({"custom_id": custom_id, "component_type": 2})
            } else {
                json!({"id": "1", "name": command, "type": 1})
            };
            let interaction = json!({
                "id": discord.next_id().to_string(), "application_id": APP_ID.to_string(),
                "type": if data.get("custom_id").is_some() { 3 } else { 2 },
                "data": data, "guild_id": fake_discord::GUILD.to_string(),
                "channel_id": channel.to_string(), "member": fake_discord::member(presser, &[]),
                "token": format!("fuzz-{}", dice.below(1 << 30)), "version": 1,
                "message": message, "app_permissions": "0", "locale": "en-US",
                "entitlements": [], "authorizing_integration_owners": {}, "context": 0,
                "attachment_size_limit": 8388608,
            });
            ("INTERACTION_CREATE", interaction)
        }
        6 => ("MESSAGE_UPDATE", message),
        _ => ("WEIRD_EVENT", json!({"x": dice.text()})),
    }
}

/// Resident memory of process `pid`.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_odd_events_from_strangers_start_no_turn() {
    let env = TestEnv::new().await;
    let telegram = FakeTelegram::start().await;
    let discord = FakeDiscord::start().await;
    let envs = [
        (
            "CODEX_GATEWAY__SERVER__LISTEN",
            format!("127.0.0.1:{}", free_port()),
        ),
        ("CODEX_GATEWAY__TELEGRAM__ENABLED", "true".into()),
        (
            "CODEX_GATEWAY__TELEGRAM__TOKEN",
            crate::support::telegram::TOKEN.into(),
        ),
        ("CODEX_GATEWAY__TELEGRAM__API_URL", telegram.url.clone()),
        ("CODEX_GATEWAY__TELEGRAM__ALLOWED_USERS", ALICE.to_string()),
        ("CODEX_GATEWAY__DISCORD__ENABLED", "true".into()),
        (
            "CODEX_GATEWAY__DISCORD__TOKEN",
            crate::support::discord::TOKEN.into(),
        ),
        ("CODEX_GATEWAY__DISCORD__APPLICATION_ID", APP_ID.to_string()),
        ("CODEX_GATEWAY__DISCORD__API_URL", discord.url.clone()),
        ("CODEX_GATEWAY__DISCORD__ALLOWED_USERS", "1001".into()),
        ("CODEX_GATEWAY__SERVER__SHUTDOWN_GRACE_SECS", "1".into()),
    ];
    // The binary, so that its memory is the gateway's alone (the fakes keep every call).
    let mut child = gateway_command(&env, &["run"], &envs).spawn().unwrap();
    // Read the log as it comes: thousands of refusals would fill the pipe and stall it.
    let mut log = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut log, &mut text).unwrap();
        text
    });
    discord.wait_connected(1).await;

    let mut dice = Dice(SEED);
    let mut rss = Vec::new();
    for part in 0..PARTS {
        for _ in 0..EVENTS_PER_PLATFORM / PARTS {
            telegram.push_raw(telegram_update(&mut dice));
            let (event, data) = discord_event(&mut dice, &discord);
            discord.dispatch(event, data);
        }
        // Everything was read (Telegram acknowledges by offset) and the gateway still
        // answers the allowed user on both platforms.
        let sentinel = format!("still here after part {part}");
        telegram.dm(ALICE, &sentinel);
        telegram
            .wait_for_text(ALICE, |t| t == format!("Echo: {sentinel}"))
            .await;
        discord.dm(DISCORD_ALICE_DM, 1001, &sentinel);
        discord
            .wait_for_content(DISCORD_ALICE_DM, |t| t == format!("Echo: {sentinel}"))
            .await;
        rss.push(rss_kib(child.id()));
    }
    terminate(&child);
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap());
    let status = status.await.unwrap();
    let stderr = log.join().unwrap();
    assert!(status.success(), "exit {status}");
    assert!(
        !stderr.contains("panicked"),
        "the gateway panicked: {stderr}"
    );
    assert_eq!(telegram.pending_updates(), 0);

    let texts = env.model.turn_texts();
    assert!(
        texts.iter().all(|t| t.starts_with("still here after part")),
        "a stranger's text reached Codex: {:?}",
        texts
            .iter()
            .find(|t| !t.starts_with("still here"))
            .map(|t| &t[..t.len().min(200)])
    );
    assert_eq!(texts.len(), 2 * PARTS, "{texts:?}");
    // Flat: after the warm-up part, the parts that follow add (next to) nothing.
    println!("fuzz: gateway RSS after each part, KiB: {rss:?}");
    let growth = rss[PARTS - 1].saturating_sub(rss[1]);
    assert!(
        growth < 16 * 1024,
        "memory grew {growth} KiB after the warm-up: {rss:?}"
    );
}
