//! Files into Codex and out again, end to end: photos, documents and voice notes sent on
//! a fake Telegram (getFile and downloads) and a fake Discord (its CDN), saved in the
//! chat's folder by the real app-server, images given to the fake model as images, voice
//! through a fake transcription service; files a turn wrote offered with /get.

use std::sync::{Arc, Mutex};

use crate::support::discord::{BOT_ID, FakeDiscord};
use crate::support::telegram::FakeTelegram;
use crate::support::{Gateway, ModelRequest, Reply, TestEnv, secret};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use serde_json::{Value, json};

const ALICE: i64 = 1001;
const CHANNEL: u64 = 600;

/// A 1x1 PNG.
const PNG: &[u8] = &[
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0A, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x00, 0x01, 0x00, 0x00,
    0x05, 0x00, 0x01, 0x0D, 0x0A, 0x2D, 0xB4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44, 0xAE,
    0x42, 0x60, 0x82,
];

/// The images a model request carries, as the data URLs Codex made of them.
fn images(request: &ModelRequest) -> Vec<String> {
    let input = request.body["input"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    input
        .iter()
        .flat_map(|item| item["content"].as_array().cloned().unwrap_or_default())
        .filter(|part| part["type"] == "input_image")
        .filter_map(|part| part["image_url"].as_str().map(str::to_owned))
        .collect()
}

fn png_data_url() -> String {
    use base64::Engine;
    let encoded = base64::engine::general_purpose::STANDARD.encode(PNG);
    format!("data:image/png;base64,{encoded}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_telegram_photo_reaches_the_model_as_an_image() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let gateway = Gateway::start(&env.telegram_config(&tg, ALICE));
    tg.add_file("small", b"not the one to fetch");
    tg.add_file("large", PNG);
    let (mut small, mut large) = (tg.file_meta("small"), tg.file_meta("large"));
    small["width"] = json!(1);
    small["height"] = json!(1);
    large["width"] = json!(90);
    large["height"] = json!(90);
    tg.dm_with(
        ALICE,
        "what is in\nthis picture?",
        json!({"photo": [small, large]}),
    );
    let (_, reply) = tg
        .wait_for_text(ALICE, |t| t.contains("this picture?"))
        .await;
    gateway.stop().await;

    let saved = env.workspace().join("attachments/photo-u-large.jpg");
    assert_eq!(
        std::fs::read(&saved).unwrap(),
        PNG,
        "the largest size, saved"
    );
    assert_eq!(
        reply,
        "Echo: [image saved: attachments/photo-u-large.jpg]\nwhat is in\nthis picture?"
    );
    let request = env.model.request_for("this picture?");
    assert_eq!(images(&request), [png_data_url()]);
    let fetched: Vec<Value> = tg.calls("getFile").into_iter().map(|c| c.body).collect();
    assert_eq!(fetched.len(), 1);
    assert_eq!(fetched[0]["file_id"], "large");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_document_lands_in_the_chats_folder_without_clobbering() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let gateway = Gateway::start(&env.telegram_config(&tg, ALICE));
    let report = b"quarterly numbers: 42\nsecond line\n";
    tg.add_file("r1", report);
    let mut document = tg.file_meta("r1");
    document["file_name"] = json!("../../report.txt");
    document["mime_type"] = json!("text/plain");
    tg.dm_with(ALICE, "what does it say?", json!({"document": document}));
    tg.wait_for_text(ALICE, |t| {
        t == "Echo: [file saved: attachments/report.txt]\nwhat does it say?"
    })
    .await;

    // The same name again: kept beside the first, which stays as it was.
    tg.add_file("r2", b"a newer report");
    let mut document = tg.file_meta("r2");
    document["file_name"] = json!("report.txt");
    tg.dm_with(ALICE, "", json!({"document": document}));
    tg.wait_for_text(ALICE, |t| t.contains("attachments/report-1.txt"))
        .await;
    gateway.stop().await;
    let folder = env.workspace().join("attachments");
    assert_eq!(std::fs::read(folder.join("report.txt")).unwrap(), report);
    assert_eq!(
        std::fs::read(folder.join("report-1.txt")).unwrap(),
        b"a newer report"
    );
    assert!(
        !env.workspace()
            .parent()
            .unwrap()
            .join("report.txt")
            .exists()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_over_the_limit_is_refused_unfetched() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let gateway = Gateway::start(&env.telegram_config(&tg, ALICE));
    let document = json!({"file_id": "huge", "file_unique_id": "u-huge",
        "file_size": 25 * 1024 * 1024, "file_name": "dump.bin"});
    tg.dm_with(ALICE, "look at this", json!({"document": document}));
    let (_, answer) = tg.wait_for_text(ALICE, |t| t.contains("dump.bin")).await;
    assert_eq!(
        answer,
        "dump.bin is 25 MB; files up to 20 MB can be sent. Nothing was sent to Codex."
    );
    // The chat goes on.
    tg.dm(ALICE, "still there?");
    tg.wait_for_text(ALICE, |t| t == "Echo: still there?").await;
    gateway.stop().await;
    assert!(tg.calls("getFile").is_empty());
    assert!(!env.workspace().join("attachments").exists());
    assert_eq!(env.model.turn_texts(), ["still there?"]);
}

/// What the fake transcription service was sent: authorization, model, file name, bytes.
type Heard = Arc<Mutex<Vec<(String, String, String, Vec<u8>)>>>;

/// A fake OpenAI-compatible `audio/transcriptions` endpoint on 127.0.0.1: answers every
/// request with `transcript`.
async fn transcription_service(transcript: &'static str) -> (String, Heard) {
    let heard: Heard = Arc::default();
    let app = axum::Router::new()
        .route(
            "/v1/audio/transcriptions",
            axum::routing::post(
                move |State(heard): State<Heard>, headers: HeaderMap, body: Bytes| async move {
                    let parts = crate::support::multipart::parts(&headers, &body).unwrap();
                    let field = |name: &str| parts.iter().find(|p| p.name == name).unwrap();
                    let auth = headers["authorization"].to_str().unwrap().to_owned();
                    let model = String::from_utf8(field("model").data.clone()).unwrap();
                    let file = field("file");
                    let name = file.file_name.clone().unwrap_or_default();
                    heard
                        .lock()
                        .unwrap()
                        .push((auth, model, name, file.data.clone()));
                    axum::Json(json!({"text": transcript}))
                },
            ),
        )
        .with_state(heard.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!(
        "http://{}/v1/audio/transcriptions",
        listener.local_addr().unwrap()
    );
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (url, heard)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_voice_note_is_transcribed_shown_and_sent_as_text() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let (url, heard) = transcription_service("please list the files").await;
    let mut config = env.telegram_config(&tg, ALICE);
    // Without transcription, a voice note gets a clear answer and nothing else happens.
    let gateway = Gateway::start(&config);
    tg.add_file("v1", b"OggS fake opus");
    let voice = || {
        let mut voice = tg.file_meta("v1");
        voice["duration"] = json!(2);
        voice["mime_type"] = json!("audio/ogg");
        json!({ "voice": voice })
    };
    tg.dm_with(ALICE, "", voice());
    tg.wait_for_text(ALICE, |t| t.contains("Voice messages need transcription"))
        .await;
    gateway.stop().await;
    assert!(env.model.requests().is_empty());

    config.transcription.url = Some(url);
    config.transcription.model = "whisper-test".into();
    config.transcription.api_key = Some(secret("sk-transcribe-7"));
    let gateway = Gateway::start(&config);
    tg.dm_with(ALICE, "", voice());
    tg.wait_for_text(ALICE, |t| t == "Heard: please list the files")
        .await;
    tg.wait_for_text(ALICE, |t| t == "Echo: please list the files")
        .await;
    gateway.stop().await;
    let heard = heard.lock().unwrap().clone();
    assert_eq!(heard.len(), 1);
    let (auth, model, name, bytes) = &heard[0];
    assert_eq!(auth, "Bearer sk-transcribe-7");
    assert_eq!(model, "whisper-test");
    assert_eq!(name, "voice-u-v1.ogg");
    assert_eq!(bytes, b"OggS fake opus");
    assert_eq!(env.model.turn_texts(), ["please list the files"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transcription_failure_is_told_and_the_chat_goes_on() {
    let env = TestEnv::new().await;
    let tg = FakeTelegram::start().await;
    let mut config = env.telegram_config(&tg, ALICE);
    // Nothing listens there.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!(
        "http://{}/v1/audio/transcriptions",
        closed.local_addr().unwrap()
    );
    drop(closed);
    config.transcription.url = Some(url);
    let gateway = Gateway::start(&config);
    tg.add_file("v1", b"OggS");
    let mut voice = tg.file_meta("v1");
    voice["duration"] = json!(1);
    voice["mime_type"] = json!("audio/ogg");
    tg.dm_with(ALICE, "", json!({ "voice": voice }));
    tg.wait_for_text(ALICE, |t| t.contains("could not be transcribed"))
        .await;
    tg.dm(ALICE, "typed instead");
    tg.wait_for_text(ALICE, |t| t == "Echo: typed instead")
        .await;
    gateway.stop().await;
}

/// The default script, plus "write NAME": Codex adds the file NAME with `apply_patch`,
/// then says it wrote it.
fn writing_brain() -> crate::support::Brain {
    let default = crate::support::default_brain();
    Arc::new(move |request: &ModelRequest| {
        let text = request.last_human_text();
        let outputs = request.tool_outputs();
        if let Some(name) = text.strip_prefix("write ") {
            return match outputs.is_empty() {
                true => Reply::Exec(format!(
                    "apply_patch <<'EOF'\n*** Begin Patch\n*** Add File: {name}\n+written by codex\n*** End Patch\nEOF"
                )),
                false => Reply::Text(format!("I wrote {name} for you.")),
            };
        }
        default(request)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_a_turn_wrote_are_offered_with_get_buttons() {
    let env = TestEnv::with_brain(writing_brain()).await;
    let tg = FakeTelegram::start().await;
    let gateway = Gateway::start(&env.telegram_config(&tg, ALICE));
    tg.dm(ALICE, "write made.txt");
    tg.wait_for_text(ALICE, |t| t.contains("I wrote made.txt"))
        .await;
    let (offer, text) = tg
        .wait_for_text(ALICE, |t| t.starts_with("Files from this turn"))
        .await;
    assert_eq!(text, "Files from this turn:\n/get made.txt");
    let sent = tg
        .calls("sendMessage")
        .into_iter()
        .find(|c| {
            c.body["text"]
                .as_str()
                .is_some_and(|t| t.starts_with("Files from"))
        })
        .unwrap();
    let button = &sent.body["reply_markup"]["inline_keyboard"][0][0];
    assert_eq!(button["callback_data"], "cmd:get made.txt");
    tg.press(ALICE, ALICE, offer, "cmd:get made.txt");
    let sent = tg
        .wait_for_call("sendDocument", |b| b["document"]["file_name"] == "made.txt")
        .await;
    gateway.stop().await;
    assert_eq!(sent.body["document"]["content"], "written by codex\n");
    assert_eq!(
        std::fs::read_to_string(env.workspace().join("made.txt")).unwrap(),
        "written by codex\n"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discord_attachments_reach_codex() {
    let env = TestEnv::new().await;
    let dc = FakeDiscord::start().await;
    let mut config = env.config();
    config.discord.enabled = true;
    config.discord.token = Some(secret(crate::support::discord::TOKEN));
    config.discord.application_id = Some(crate::support::discord::APP_ID);
    dc.configure(&mut config.discord);
    config.discord.allowed_users = vec![ALICE as u64];
    let gateway = Gateway::start(&config);
    dc.wait_connected(1).await;
    dc.channel_message_with_files(
        CHANNEL,
        ALICE as u64,
        &format!("<@{BOT_ID}> compare these"),
        &[
            ("screen.png", "image/png", PNG),
            ("log.txt", "text/plain; charset=utf-8", b"error at line 7\n"),
        ],
    );
    let (_, reply) = dc
        .wait_for_content(CHANNEL, |t| t.contains("compare these"))
        .await;
    gateway.stop().await;
    assert_eq!(
        reply,
        "Echo: [image saved: attachments/screen.png]\n[file saved: attachments/log.txt]\ncompare these"
    );
    let folder = env.workspace().join("attachments");
    assert_eq!(std::fs::read(folder.join("screen.png")).unwrap(), PNG);
    assert_eq!(
        std::fs::read(folder.join("log.txt")).unwrap(),
        b"error at line 7\n"
    );
    assert_eq!(
        images(&env.model.request_for("compare these")),
        [png_data_url()]
    );
}
