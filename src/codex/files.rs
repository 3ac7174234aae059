//! Files on the app-server's machine, read as its user (`fs/readFile`): what `/get` sends.

use base64::Engine;
use serde::Deserialize;
use serde_json::json;

use super::catalog::QUICK;
use super::error::CodexError;
use super::process::AppServer;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileData {
    data_base64: String,
}

impl AppServer {
    /// The bytes of the file at `path` (absolute).
    pub async fn read_file(&self, path: &std::path::Path) -> Result<Vec<u8>, CodexError> {
        let method = "fs/readFile";
        let data: FileData = self
            .request_within(method, json!({"path": path}), QUICK)
            .await?;
        base64::engine::general_purpose::STANDARD
            .decode(data.data_base64)
            .map_err(|error| CodexError::Protocol {
                method: method.to_owned(),
                message: error.to_string(),
            })
    }
}
