//! A stand-in MCP server for the tests (Codex starts it over stdio): one tool, `deploy`,
//! which asks the user through an elicitation (a form: a region to choose, a number of
//! replicas to type, an optional note) and answers with what the user sent back.

use std::io::{BufRead, Write};

use serde_json::{Value, json};

const ELICITATION_ID: &str = "elicit-1";

fn main() {
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    let mut stdout = std::io::stdout();
    let mut send = |message: Value| {
        writeln!(stdout, "{message}").expect("stdout");
        stdout.flush().expect("stdout");
    };
    let mut waiting_call: Option<Value> = None;
    while let Some(Ok(line)) = lines.next() {
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let id = message.get("id").cloned();
        match (message["method"].as_str(), id) {
            (Some("initialize"), Some(id)) => send(json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "fake-deploy", "version": "1"}}})),
            (Some("tools/list"), Some(id)) => send(json!({"jsonrpc": "2.0", "id": id, "result": {
                "tools": [{"name": "deploy", "description": "Deploy the app where the user says",
                    "inputSchema": {"type": "object", "properties": {}}}]}})),
            (Some("tools/call"), Some(id)) => {
                waiting_call = Some(id);
                send(
                    json!({"jsonrpc": "2.0", "id": ELICITATION_ID, "method": "elicitation/create",
                    "params": {"message": "Where should I deploy?", "requestedSchema": {
                        "type": "object",
                        "properties": {
                            "region": {"type": "string", "title": "Region", "enum": ["eu-west", "us-east"]},
                            "replicas": {"type": "integer", "title": "Replicas"},
                            "note": {"type": "string", "title": "Note"}},
                        "required": ["region", "replicas"]}}}),
                );
            }
            (Some(_), Some(id)) => send(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            (None, Some(id)) if id == ELICITATION_ID => {
                let Some(call) = waiting_call.take() else {
                    continue;
                };
                let said = format!("deploy answer: {}", message["result"]);
                send(json!({"jsonrpc": "2.0", "id": call, "result": {
                    "content": [{"type": "text", "text": said}]}}));
            }
            _ => {}
        }
    }
}
