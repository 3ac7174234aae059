//! The terminal as a chat: each input line is a message, answers are printed.

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tracing::warn;

use super::texts;
use crate::router::Router;
use chat::{AnswerStep, ChatKey, Inbound, Outbound, OutboundKind, Platform};

/// Feeds `input` line by line into the chat `name` and prints what comes back. At end of
/// input it waits for the queued turns to finish (the router is shut down) and returns.
pub async fn run(
    router: &Router,
    name: &str,
    input: impl AsyncBufRead + Unpin,
    output: impl AsyncWrite + Unpin + Send + 'static,
) -> std::io::Result<()> {
    let chat = ChatKey::new(Platform::Console, name);
    let (outbox, answers) = mpsc::unbounded_channel();
    let printer = tokio::spawn(print_answers(answers, output));
    router.attach_jobs(Platform::Console, outbox.clone(), false);
    let result = read_messages(router, &chat, input, &outbox).await;
    router.shutdown(None).await;
    drop(outbox);
    printer.await.expect("printer task")?;
    result
}

async fn read_messages(
    router: &Router,
    chat: &ChatKey,
    mut input: impl AsyncBufRead + Unpin,
    outbox: &mpsc::UnboundedSender<Outbound>,
) -> std::io::Result<()> {
    let user = std::env::var("USER").unwrap_or_else(|_| "console".into());
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        if input.read_until(b'\n', &mut line).await? == 0 {
            return Ok(());
        }
        let text = match String::from_utf8(std::mem::take(&mut line)) {
            Ok(text) => text,
            Err(error) => {
                warn!(line = number, "console input is not valid UTF-8; skipped");
                line = error.into_bytes();
                let _ = outbox.send(Outbound {
                    chat: chat.clone(),
                    kind: OutboundKind::Notice(texts::console_not_utf8(number)),
                });
                continue;
            }
        };
        router.dispatch(Inbound {
            chat: chat.clone(),
            user: user.clone(),
            text,
            reply_to: outbox.clone(),
            answer_slot: None,
            can_approve: false,
            // The terminal is its owner's.
            private: true,
            admin: true,
            attachments: Vec::new(),
            ticket: None,
        });
    }
    Ok(())
}

async fn print_answers(
    mut answers: mpsc::UnboundedReceiver<Outbound>,
    mut output: impl AsyncWrite + Unpin,
) -> std::io::Result<()> {
    while let Some(answer) = answers.recv().await {
        let text = match answer.kind {
            OutboundKind::Reply(text) => format!("{text}\n"),
            OutboundKind::Progress(text) => format!("  ... {text}\n"),
            OutboundKind::Notice(text)
            | OutboundKind::Trouble(text)
            | OutboundKind::Answer { text, .. }
            | OutboundKind::Choices { text, .. } => format!("[gateway] {text}\n"),
            // The file is in the chat's folder already, on this very machine.
            OutboundKind::OpenTask { .. } => format!("[gateway] {}\n", texts::NO_TASK_PLACES),
            OutboundKind::File { name, bytes } => {
                format!(
                    "[gateway] {name}: {} bytes, in this chat's folder\n",
                    bytes.len()
                )
            }
            OutboundKind::KeptReply { text, ledger } => {
                output.write_all(format!("{text}\n").as_bytes()).await?;
                output.flush().await?;
                ledger.note(AnswerStep::Delivered).await;
                continue;
            }
            // The console prints whole replies and its progress as lines, not a status
            // message; it cannot approve (can_approve is false).
            OutboundKind::Status(_)
            | OutboundKind::Named(_)
            | OutboundKind::Working(_)
            | OutboundKind::Notify(_)
            | OutboundKind::TurnEnded { .. }
            | OutboundKind::Approval(_)
            | OutboundKind::ApprovalClosed { .. } => {
                continue;
            }
        };
        output.write_all(text.as_bytes()).await?;
        output.flush().await?;
    }
    Ok(())
}
