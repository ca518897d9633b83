//! Calling out to webhooks: admission webhooks and CRD conversion webhooks
//! are reached the same way, over HTTPS to a URL or a Service, trusting a
//! `caBundle`, within a timeout ([`Caller`]). What is sent and what the
//! answer means is the caller's business.

mod call;
mod trust;

use std::time::Duration;

use serde_json::Value;

pub use call::{CallError, Caller, ExchangeError, ServiceError, SetupError, TlsError};

/// Where a webhook is reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
        /// The path (empty: `/`).
        path: String,
        /// The Service's port (443 unless given).
        port: u16,
    },
}

/// How a webhook is called: `clientConfig` and the timeout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientConfig {
    /// Where.
    pub target: Target,
    /// `clientConfig.caBundle`, PEM (none: the system's roots).
    pub ca_bundle: Option<Vec<u8>>,
    /// The whole call's bound.
    pub timeout: Duration,
}

impl ClientConfig {
    /// Reads a `clientConfig` (`url` or `service`, `caBundle`); none when it
    /// names neither.
    pub fn parse(config: &Value, timeout: Duration) -> Option<ClientConfig> {
        Some(ClientConfig {
            target: target(config)?,
            ca_bundle: ca_bundle(config),
            timeout,
        })
    }
}

fn target(config: &Value) -> Option<Target> {
    if let Some(url) = config["url"].as_str() {
        return Some(Target::Url(url.to_string()));
    }
    let service = config.get("service")?;
    Some(Target::Service {
        namespace: service["namespace"].as_str()?.to_string(),
        name: service["name"].as_str()?.to_string(),
        path: service["path"].as_str().unwrap_or("").to_string(),
        port: service["port"]
            .as_u64()
            .and_then(|p| u16::try_from(p).ok())
            .unwrap_or(443),
    })
}

fn ca_bundle(config: &Value) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let text = config["caBundle"].as_str().filter(|s| !s.is_empty())?;
    base64::engine::general_purpose::STANDARD.decode(text).ok()
}
