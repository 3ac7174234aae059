//! One face for both fake platforms, so a scenario users live on either is written once
//! (`both_platforms!`) and runs on Telegram and on Discord: one conversation between the
//! bot and its allowed person (Alice: a Telegram DM, a Discord channel where she mentions
//! the bot), and a stranger writing to the bot directly.

use codex_gateway::config::Config;
use serde_json::Value;

use super::discord::{APP_ID, BOT_ID, FakeDiscord};
use super::telegram::FakeTelegram;
use super::{Gateway, TestEnv, secret};

/// Alice, the one allowed person; the same id on both platforms.
pub const ALICE: u64 = 1001;
/// Somebody the bot does not serve.
pub const STRANGER: u64 = 3003;
/// Discord: the channel of the conversation, and the stranger's DM channel.
const CHANNEL: u64 = 600;
const STRANGER_DM: u64 = 803;

/// A button under a bot message: what it says, and the data its press sends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Button {
    pub label: String,
    pub data: String,
}

pub trait FakePlatform: Sized {
    const NAME: &'static str;

    /// Starts the fake, and a config of `env` that serves it, Alice its allowed person.
    async fn start(env: &TestEnv) -> (Self, Config);

    /// Starts the gateway and waits until it is connected to the platform.
    async fn gateway(&self, config: &Config) -> Gateway;

    /// Alice writes `text` to the bot.
    fn send(&self, text: &str);

    /// The stranger writes `text` to the bot directly.
    fn stranger_writes(&self, text: &str);

    /// Waits for the bot's message to Alice that `pick` accepts: its id and text as shown.
    async fn said(&self, pick: impl Fn(&str) -> bool) -> (u64, String);

    /// Waits for what the bot tells the stranger.
    async fn told_stranger(&self, pick: impl Fn(&str) -> bool) -> String;

    /// The buttons under the bot's message `id` now.
    fn buttons(&self, id: u64) -> Vec<Button>;

    /// Whether the bot's message `id` came without a notification.
    fn is_quiet(&self, id: u64) -> bool;

    /// Alice (or, with `stranger`, the stranger) presses `button` under message `id`.
    fn press(&self, stranger: bool, id: u64, button: &Button);

    /// Waits for the answer to a press that refused its presser (told them only).
    async fn press_refused(&self);

    /// Waits until the bot has answered `count` presses in all.
    async fn presses_answered(&self, count: usize);

    /// The text of the bot's message `id` as it is shown now.
    fn shown(&self, id: u64) -> String;

    /// The files the bot sent Alice: name and content.
    fn files(&self) -> Vec<(String, String)>;

    /// The names of the command menu the gateway registered.
    fn menu(&self) -> Vec<String>;

    /// The bot's messages to Alice so far, as shown now: id and text.
    fn messages(&self) -> Vec<(u64, String)>;
}

/// Waits until `times` of the bot's messages to Alice are ones `pick` accepts.
pub async fn said_times<P: FakePlatform>(platform: &P, times: usize, pick: impl Fn(&str) -> bool) {
    let deadline = tokio::time::Instant::now() + super::ANSWER_TIMEOUT;
    loop {
        let messages = platform.messages();
        let seen = messages.iter().filter(|(_, text)| pick(text)).count();
        if seen >= times {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{seen} of {times} such messages on {}: {messages:#?}",
            P::NAME
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Runs each scenario (an `async fn name<P: FakePlatform>()`) on both platforms, as the
/// tests `name::telegram` and `name::discord`.
#[macro_export]
macro_rules! both_platforms {
    ($($scenario:ident),* $(,)?) => {
        $(
            mod $scenario {
                use $crate::support::discord::FakeDiscord;
                use $crate::support::telegram::FakeTelegram;

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn telegram() {
                    super::$scenario::<FakeTelegram>().await
                }

                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn discord() {
                    super::$scenario::<FakeDiscord>().await
                }
            }
        )*
    };
}

impl FakePlatform for FakeTelegram {
    const NAME: &'static str = "telegram";

    async fn start(env: &TestEnv) -> (Self, Config) {
        let telegram = FakeTelegram::start().await;
        let config = env.telegram_config(&telegram, ALICE as i64);
        (telegram, config)
    }

    async fn gateway(&self, config: &Config) -> Gateway {
        Gateway::start(config)
    }

    fn send(&self, text: &str) {
        self.dm(ALICE as i64, text);
    }

    fn stranger_writes(&self, text: &str) {
        self.dm(STRANGER as i64, text);
    }

    async fn said(&self, pick: impl Fn(&str) -> bool) -> (u64, String) {
        let (id, text) = self.wait_for_text(ALICE as i64, pick).await;
        (id as u64, text)
    }

    async fn told_stranger(&self, pick: impl Fn(&str) -> bool) -> String {
        self.wait_for_text(STRANGER as i64, pick).await.1
    }

    fn buttons(&self, id: u64) -> Vec<Button> {
        let message = self.message_of(id as i64).unwrap_or_default();
        let rows = message["reply_markup"]["inline_keyboard"]
            .as_array()
            .cloned();
        let buttons = rows
            .into_iter()
            .flatten()
            .flat_map(|row| row.as_array().cloned());
        buttons
            .flatten()
            .map(|b| Button {
                label: text(&b["text"]),
                data: text(&b["callback_data"]),
            })
            .collect()
    }

    fn is_quiet(&self, id: u64) -> bool {
        FakeTelegram::is_quiet(self, id as i64)
    }

    fn press(&self, stranger: bool, id: u64, button: &Button) {
        let user = if stranger { STRANGER } else { ALICE } as i64;
        FakeTelegram::press(self, user, ALICE as i64, id as i64, &button.data);
    }

    async fn press_refused(&self) {
        let alert = |b: &Value| b["show_alert"] == true;
        self.wait_for_call("answerCallbackQuery", alert).await;
    }

    async fn presses_answered(&self, count: usize) {
        self.wait_for_calls("answerCallbackQuery", count, |_| true)
            .await;
    }

    fn shown(&self, id: u64) -> String {
        self.text_of(id as i64).unwrap_or_default()
    }

    fn files(&self) -> Vec<(String, String)> {
        let documents = self.calls("sendDocument");
        let to_alice = documents.iter().filter(|c| c.body["chat_id"] == ALICE);
        to_alice
            .map(|c| {
                let document = &c.body["document"];
                (text(&document["file_name"]), text(&document["content"]))
            })
            .collect()
    }

    fn messages(&self) -> Vec<(u64, String)> {
        let texts = self.texts(ALICE as i64).into_iter();
        texts.map(|(id, text)| (id as u64, text)).collect()
    }

    fn menu(&self) -> Vec<String> {
        let calls = self.calls("setMyCommands");
        let commands = calls.first().and_then(|c| c.body["commands"].as_array());
        commands
            .into_iter()
            .flatten()
            .map(|c| text(&c["command"]))
            .collect()
    }
}

impl FakePlatform for FakeDiscord {
    const NAME: &'static str = "discord";

    async fn start(env: &TestEnv) -> (Self, Config) {
        let discord = FakeDiscord::start().await;
        let mut config = env.config();
        config.discord.enabled = true;
        config.discord.token = Some(secret(crate::support::discord::TOKEN));
        config.discord.application_id = Some(APP_ID);
        discord.configure(&mut config.discord);
        config.discord.allowed_users = vec![ALICE];
        (discord, config)
    }

    async fn gateway(&self, config: &Config) -> Gateway {
        let connections = self.identifies() + self.resumes();
        let gateway = Gateway::start(config);
        self.wait_connected(connections + 1).await;
        gateway
    }

    fn send(&self, text: &str) {
        self.channel_message(CHANNEL, ALICE, &[], &format!("<@{BOT_ID}> {text}"));
    }

    fn stranger_writes(&self, text: &str) {
        self.dm(STRANGER_DM, STRANGER, text);
    }

    async fn said(&self, pick: impl Fn(&str) -> bool) -> (u64, String) {
        self.wait_for_content(CHANNEL, pick).await
    }

    async fn told_stranger(&self, pick: impl Fn(&str) -> bool) -> String {
        self.wait_for_content(STRANGER_DM, pick).await.1
    }

    fn buttons(&self, id: u64) -> Vec<Button> {
        self.buttons_of(id)
            .into_iter()
            .map(|(label, data)| Button { label, data })
            .collect()
    }

    fn is_quiet(&self, id: u64) -> bool {
        FakeDiscord::is_quiet(self, id)
    }

    fn press(&self, stranger: bool, id: u64, button: &Button) {
        let user = if stranger { STRANGER } else { ALICE };
        self.click(CHANNEL, user, id, &button.data);
    }

    async fn press_refused(&self) {
        let ephemeral = |b: &Value| b["type"] == 4 && b["data"]["flags"] == 64;
        self.wait_for_call("POST", "/callback", ephemeral).await;
    }

    async fn presses_answered(&self, count: usize) {
        let deadline = tokio::time::Instant::now() + super::ANSWER_TIMEOUT;
        while self.calls("POST", "/callback").len() < count {
            assert!(tokio::time::Instant::now() < deadline, "presses unanswered");
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }

    fn shown(&self, id: u64) -> String {
        self.content(id).unwrap_or_default()
    }

    fn files(&self) -> Vec<(String, String)> {
        let sent = self.calls("POST", &format!("/channels/{CHANNEL}/messages"));
        let files = sent
            .iter()
            .flat_map(|c| c.body["files"].as_array().cloned());
        files
            .flatten()
            .map(|file| (text(&file["file_name"]), text(&file["content"])))
            .collect()
    }

    fn messages(&self) -> Vec<(u64, String)> {
        self.contents(CHANNEL)
    }

    fn menu(&self) -> Vec<String> {
        let calls = self.calls("PUT", &format!("/applications/{APP_ID}/commands"));
        let commands = calls.first().and_then(|c| c.body.as_array());
        commands
            .into_iter()
            .flatten()
            .map(|c| text(&c["name"]))
            .collect()
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}
