//! What Codex offers a chat to choose from and to know: its models with their reasoning
//! efforts (`model/list`), the effective config's model and provider (`config/read`), and
//! the account's rate-limit windows (`account/rateLimits/read`).

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::error::{CodexError, INVALID_REQUEST};
use super::process::AppServer;
use super::protocol::{ApprovalPolicy, SandboxMode};

/// One model Codex offers.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelInfo {
    pub id: String,
    #[serde(default)]
    pub display_name: String,
    #[serde(default)]
    pub hidden: bool,
    #[serde(default)]
    pub is_default: bool,
    #[serde(default)]
    pub default_reasoning_effort: Option<String>,
    #[serde(default)]
    pub supported_reasoning_efforts: Vec<EffortOption>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EffortOption {
    pub reasoning_effort: String,
    #[serde(default)]
    pub description: String,
}

impl ModelInfo {
    pub fn efforts(&self) -> impl Iterator<Item = &str> {
        self.supported_reasoning_efforts
            .iter()
            .map(|e| e.reasoning_effort.as_str())
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ModelPage {
    data: Vec<ModelInfo>,
    next_cursor: Option<String>,
}

/// What Codex's effective config says about the model (`config/read`): the model and
/// provider every turn uses unless a chat chose otherwise.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ModelConfig {
    pub model: Option<String>,
    pub model_provider: Option<String>,
    pub model_reasoning_effort: Option<String>,
}

/// The provider Codex uses when its config names none.
const OPENAI_PROVIDER: &str = "openai";

impl ModelConfig {
    /// Whether the models come from OpenAI, whose catalog `model/list` is: any other
    /// provider (Azure, OpenRouter, LiteLLM, Ollama) serves names Codex does not list.
    pub fn lists_every_model(&self) -> bool {
        self.model_provider.as_deref().unwrap_or(OPENAI_PROVIDER) == OPENAI_PROVIDER
    }
}

#[derive(Deserialize)]
struct ConfigReply {
    config: ModelConfig,
}

/// One rate-limit window of the account: how much of it is used and when it resets.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RateLimitWindow {
    pub used_percent: i64,
    /// Unix seconds.
    pub resets_at: Option<i64>,
    pub window_duration_mins: Option<i64>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RateLimits {
    pub primary: Option<RateLimitWindow>,
    pub secondary: Option<RateLimitWindow>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RateLimitsReply {
    rate_limits: Option<RateLimits>,
}

/// A turn's overrides of the thread's settings (`turn/start` keeps them for later turns).
/// The same shape says what a thread runs with, as far as it is known.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnOverrides {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effort: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub approval_policy: Option<ApprovalPolicy>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox_policy: Option<SandboxPolicy>,
}

impl TurnOverrides {
    /// What of these wanted settings differs from what the thread runs with. Codex
    /// spends milliseconds applying an override to a turn (measured with 0.171: about
    /// 4 ms for `cwd`, 3.5 ms for sandbox and approvals) and keeps it for the thread's
    /// later turns, so one is sent only to change something.
    pub fn changed_from(&self, running: &TurnOverrides) -> TurnOverrides {
        fn changed<T: Clone + PartialEq>(wanted: &Option<T>, running: &Option<T>) -> Option<T> {
            wanted
                .clone()
                .filter(|wanted| running.as_ref() != Some(wanted))
        }
        TurnOverrides {
            model: changed(&self.model, &running.model),
            effort: changed(&self.effort, &running.effort),
            cwd: changed(&self.cwd, &running.cwd),
            approval_policy: changed(&self.approval_policy, &running.approval_policy),
            sandbox_policy: changed(&self.sandbox_policy, &running.sandbox_policy),
        }
    }

    /// What the thread runs with once a turn has sent `sent`.
    pub fn apply(&mut self, sent: &TurnOverrides) {
        fn take<T: Clone>(running: &mut Option<T>, sent: &Option<T>) {
            if sent.is_some() {
                running.clone_from(sent);
            }
        }
        take(&mut self.model, &sent.model);
        take(&mut self.effort, &sent.effort);
        take(&mut self.cwd, &sent.cwd);
        take(&mut self.approval_policy, &sent.approval_policy);
        take(&mut self.sandbox_policy, &sent.sandbox_policy);
    }
}

/// A turn's sandbox (`sandboxPolicy`), as `turn/start` takes it and a thread's reply
/// reports it (with details, such as `networkAccess`, that the gateway does not set).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum SandboxPolicy {
    ReadOnly,
    WorkspaceWrite,
    DangerFullAccess,
}

impl SandboxPolicy {
    pub fn of(mode: SandboxMode) -> Self {
        match mode {
            SandboxMode::ReadOnly => SandboxPolicy::ReadOnly,
            SandboxMode::WorkspaceWrite => SandboxPolicy::WorkspaceWrite,
            SandboxMode::DangerFullAccess => SandboxPolicy::DangerFullAccess,
        }
    }
}

/// The sandbox and approval policy a thread runs with: what `/mode` changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Permissions {
    pub sandbox: SandboxPolicy,
    pub approval_policy: ApprovalPolicy,
}

/// More pages than any catalog has: a bound, not a limit anyone meets.
const MAX_MODEL_PAGES: usize = 10;

impl AppServer {
    /// Every model Codex offers, hidden ones included (a chat may ask for one by name).
    pub async fn models(&self) -> Result<Vec<ModelInfo>, CodexError> {
        let mut models = Vec::new();
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_MODEL_PAGES {
            let mut params = json!({"includeHidden": true});
            if let Some(cursor) = &cursor {
                params["cursor"] = json!(cursor);
            }
            let page: ModelPage = self.request_within("model/list", params, QUICK).await?;
            models.extend(page.data);
            cursor = page.next_cursor;
            if cursor.is_none() {
                break;
            }
        }
        Ok(models)
    }

    /// The model part of Codex's effective config, as seen from `cwd` (project layers count).
    pub async fn model_config(&self, cwd: Option<&str>) -> Result<ModelConfig, CodexError> {
        let params = json!({"cwd": cwd, "includeLayers": false});
        let reply: ConfigReply = self.request_within("config/read", params, QUICK).await?;
        Ok(reply.config)
    }

    /// The account's rate-limit windows; `Ok(None)` when the provider reports none.
    pub async fn rate_limits(&self) -> Result<Option<RateLimits>, CodexError> {
        let reply: Result<RateLimitsReply, _> = self
            .request_within("account/rateLimits/read", Value::Null, QUICK)
            .await;
        match reply {
            Ok(reply) => Ok(reply.rate_limits),
            // "authentication required": the login (an API key, a custom provider) has no
            // limits to read. Any other refusal is an error worth showing.
            Err(CodexError::Rpc { code, .. }) if code == INVALID_REQUEST => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// How long a question a person is waiting on may take.
pub(super) const QUICK: std::time::Duration = std::time::Duration::from_secs(10);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_turn_overrides_only_what_it_changes() {
        let workspace_write = Some(SandboxPolicy::WorkspaceWrite);
        let mut running = TurnOverrides {
            model: Some("gpt-a".into()),
            cwd: Some("/w".into()),
            approval_policy: Some(ApprovalPolicy::Never),
            sandbox_policy: workspace_write,
            ..TurnOverrides::default()
        };
        let wanted = TurnOverrides {
            model: Some("gpt-a".into()),
            effort: Some("high".into()),
            cwd: Some("/w/app".into()),
            approval_policy: Some(ApprovalPolicy::Never),
            sandbox_policy: Some(SandboxPolicy::ReadOnly),
        };
        let sent = wanted.changed_from(&running);
        assert_eq!(
            sent,
            TurnOverrides {
                effort: Some("high".into()),
                cwd: Some("/w/app".into()),
                sandbox_policy: Some(SandboxPolicy::ReadOnly),
                ..TurnOverrides::default()
            }
        );
        running.apply(&sent);
        assert_eq!(running, wanted);
        assert_eq!(wanted.changed_from(&running), TurnOverrides::default());
        // Nothing known of the thread: everything wanted is sent; nothing wanted, nothing.
        assert_eq!(wanted.changed_from(&TurnOverrides::default()), wanted);
        assert_eq!(
            TurnOverrides::default().changed_from(&running),
            TurnOverrides::default()
        );
    }

    #[test]
    fn parses_the_catalog_and_the_limits_as_codex_sends_them() {
        let page: ModelPage = serde_json::from_value(
            json!({"data": [{"id": "gpt-5.1-codex", "model": "gpt-5.1-codex",
            "displayName": "GPT-5.1 Codex", "description": "", "hidden": false, "isDefault": true,
            "defaultReasoningEffort": "medium", "supportedReasoningEfforts": [
                {"reasoningEffort": "low", "description": "fast"},
                {"reasoningEffort": "high", "description": "deep"}]}], "nextCursor": null}),
        )
        .unwrap();
        let efforts: Vec<_> = page.data[0].efforts().collect();
        assert_eq!(efforts, ["low", "high"]);
        let limits: RateLimitsReply = serde_json::from_value(json!({"rateLimits": {
            "primary": {"usedPercent": 42, "resetsAt": 1_800_000_000, "windowDurationMins": 300},
            "secondary": null}}))
        .unwrap();
        let primary = limits.rate_limits.unwrap().primary.unwrap();
        assert_eq!(
            (primary.used_percent, primary.window_duration_mins),
            (42, Some(300))
        );
    }

    #[test]
    fn a_custom_provider_is_told_apart_from_openai() {
        let reply: ConfigReply = serde_json::from_value(json!({"config": {
            "model": "mock-model", "model_provider": "mock", "model_reasoning_effort": null,
            "sandbox_mode": "danger-full-access", "features": {}}}))
        .unwrap();
        assert_eq!(reply.config.model.as_deref(), Some("mock-model"));
        assert!(!reply.config.lists_every_model());
        assert!(ModelConfig::default().lists_every_model());
        let openai = ModelConfig {
            model_provider: Some("openai".into()),
            ..ModelConfig::default()
        };
        assert!(openai.lists_every_model());
    }

    #[test]
    fn only_chosen_overrides_are_sent() {
        let overrides = TurnOverrides {
            model: Some("m".into()),
            ..TurnOverrides::default()
        };
        assert_eq!(
            serde_json::to_value(&overrides).unwrap(),
            json!({"model": "m"})
        );
        let read_only = TurnOverrides {
            approval_policy: Some(ApprovalPolicy::OnRequest),
            sandbox_policy: Some(SandboxPolicy::of(SandboxMode::ReadOnly)),
            ..TurnOverrides::default()
        };
        assert_eq!(
            serde_json::to_value(&read_only).unwrap(),
            json!({"approvalPolicy": "on-request", "sandboxPolicy": {"type": "readOnly"}})
        );
    }
}
