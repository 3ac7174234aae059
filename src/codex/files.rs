//! Files on the app-server's machine, as its user: what `/get` sends (`fs/readFile`), and
//! what people send Codex (`fs/writeFile`), so both work wherever Codex runs.

use base64::Engine;
use serde::Deserialize;
use serde_json::{Value, json};

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

    /// Writes `bytes` to the file at `path` (absolute), replacing it if it exists.
    pub async fn write_file(&self, path: &std::path::Path, bytes: &[u8]) -> Result<(), CodexError> {
        let data = base64::engine::general_purpose::STANDARD.encode(bytes);
        let params = json!({"path": path, "dataBase64": data});
        self.request::<Value>("fs/writeFile", params)
            .await
            .map(drop)
    }

    /// Whether anything exists at `path` (absolute). Codex answers a missing path with an
    /// error; only a failure to ask at all is an error here.
    pub async fn exists(&self, path: &std::path::Path) -> Result<bool, CodexError> {
        let asked = self
            .request_within::<Value>("fs/getMetadata", json!({"path": path}), QUICK)
            .await;
        match asked {
            Ok(_) => Ok(true),
            Err(CodexError::Rpc { .. }) => Ok(false),
            Err(error) => Err(error),
        }
    }
}
