//! A stand-in for `codex app-server` that answers every request at once: each turn is
//! `turn/started`, one agent message echoing the input, `turn/completed`. With it the
//! bench measures the gateway alone. The bench binary runs it when called as
//! `<bench> app-server ...`, which is how the gateway starts its configured Codex binary.

use std::io::{BufRead, BufWriter, Write};

use serde_json::{Value, json};

/// Serves JSON-RPC on stdin/stdout until stdin closes.
pub fn serve() {
    let stdin = std::io::stdin().lock();
    let mut out = BufWriter::new(std::io::stdout().lock());
    let mut next = 0u64;
    for line in stdin.lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let (Some(id), Some(method)) = (message.get("id"), message["method"].as_str()) else {
            continue; // a notification or a response: nothing to answer
        };
        let params = &message["params"];
        next += 1;
        let result = match method {
            "account/read" => json!({"account": {"type": "apiKey"}, "requiresOpenaiAuth": true}),
            "thread/start" => json!({"thread": {"id": format!("thread-{next}")}}),
            "thread/resume" => json!({"thread": {"id": params["threadId"]}}),
            "turn/start" => json!({"turn": {"id": format!("turn-{next}")}}),
            _ => json!({}),
        };
        send(&mut out, json!({"id": id, "result": result}));
        if method == "turn/start" {
            turn(&mut out, params, &format!("turn-{next}"));
        }
        let _ = out.flush();
    }
}

/// The notifications of a turn that answers at once.
fn turn(out: &mut impl Write, params: &Value, turn_id: &str) {
    let thread_id = &params["threadId"];
    let text = params["input"][0]["text"].as_str().unwrap_or_default();
    let turn = json!({"id": turn_id, "items": [], "status": "inProgress"});
    send(
        out,
        notification("turn/started", json!({"threadId": thread_id, "turn": turn})),
    );
    let item = json!({"type": "agentMessage", "id": "m", "text": format!("Echo: {text}")});
    let completed = json!({"threadId": thread_id, "turnId": turn_id, "item": item});
    send(out, notification("item/completed", completed));
    let turn = json!({"id": turn_id, "items": [], "status": "completed"});
    send(
        out,
        notification(
            "turn/completed",
            json!({"threadId": thread_id, "turn": turn}),
        ),
    );
}

fn notification(method: &str, params: Value) -> Value {
    json!({"method": method, "params": params})
}

fn send(out: &mut impl Write, message: Value) {
    let _ = serde_json::to_writer(&mut *out, &message);
    let _ = out.write_all(b"\n");
}
