//! Posting alerts as JSON to a webhook (the walkthrough's idea of sending them to a Slack
//! channel): one `POST` with `Content-Type: application/json` per change, over http or https.
//!
//! The document has a `text` field with the alerts in words, which is what a Slack incoming
//! webhook shows, beside the structured alerts:
//!
//! ```json
//! {"text": "pod-alert default/pod-watch: 1 pod has problems\n- pod default/web is Pending: ...",
//!  "orchestr": {"namespace": "default", "name": "pod-watch"},
//!  "problems": 1,
//!  "alerts": [{"name": "web", "namespace": "default", "phase": "Pending", "issues": [...]}]}
//! ```

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::{Value, json};

use crate::pods::PodAlert;

/// How long one post may take, connecting included.
pub const POST_TIMEOUT: Duration = Duration::from_secs(10);

/// How much of the receiver's answer is read (for error messages).
const MAX_ANSWER: usize = 64 * 1024;

/// Why alerts could not be posted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The URL is not an absolute http or https URL.
    #[error("the webhook URL '{url}' is invalid: {message}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// What is wrong with it.
        message: String,
    },
    /// The receiver could not be reached or did not answer in time.
    #[error("the webhook at {url} is unreachable: {message}")]
    Unreachable {
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// The receiver answered with an error status.
    #[error("the webhook at {url} answered {status}: {message}")]
    Refused {
        /// The URL.
        url: String,
        /// The HTTP status.
        status: u16,
        /// The start of the answer.
        message: String,
    },
}

/// Checks that `url` is an absolute http or https URL; returns it (clap's value parser for
/// `--webhook-url`).
pub fn parse_url(url: &str) -> Result<String, WebhookError> {
    uri(url).map(|_| url.to_owned())
}

fn uri(url: &str) -> Result<http::Uri, WebhookError> {
    let invalid = |message: &str| WebhookError::InvalidUrl {
        url: url.to_owned(),
        message: message.to_owned(),
    };
    let uri: http::Uri = url
        .parse()
        .map_err(|e: http::uri::InvalidUri| invalid(&e.to_string()))?;
    if !matches!(uri.scheme_str(), Some("http" | "https")) {
        return Err(invalid("only http and https URLs are supported"));
    }
    if uri.host().is_none_or(str::is_empty) {
        return Err(invalid("the URL has no host"));
    }
    Ok(uri)
}

type HttpClient = Client<HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client of one webhook.
#[derive(Clone)]
pub struct Webhook {
    url: String,
    http: Result<HttpClient, String>,
}

impl std::fmt::Debug for Webhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

/// An https-or-http connector trusting the system's root certificates (none when the system
/// has none: https URLs then fail per post, plain http ones still work).
fn connector() -> Result<HttpsConnector<HttpConnector>, String> {
    let provider = rustls::crypto::ring::default_provider;
    let builder = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider())
    {
        Ok(builder) => builder,
        Err(error) => {
            tracing::warn!(%error, "no trusted root certificates; https webhooks will fail");
            let config = rustls::ClientConfig::builder_with_provider(provider().into())
                .with_safe_default_protocol_versions()
                .map_err(|e| e.to_string())?
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth();
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
        }
    };
    Ok(builder.https_or_http().enable_http1().build())
}

impl Webhook {
    /// A client posting to `url`; an invalid URL fails each post with
    /// [`WebhookError::InvalidUrl`].
    pub fn new(url: &str) -> Self {
        Webhook {
            url: url.to_owned(),
            http: connector().map(|c| Client::builder(TokioExecutor::new()).build(c)),
        }
    }

    /// The URL posted to.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Posts `document` as JSON; any 2xx answer is success.
    pub async fn post(&self, document: &Value) -> Result<(), WebhookError> {
        let uri = uri(&self.url)?;
        let unreachable = |message: String| WebhookError::Unreachable {
            url: self.url.clone(),
            message,
        };
        let http = self
            .http
            .as_ref()
            .map_err(|e| unreachable(format!("setting up TLS failed: {e}")))?;
        let body = Bytes::from(document.to_string());
        let request = http::Request::post(uri)
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::USER_AGENT, "pod-alert")
            .body(Full::new(body))
            .map_err(|e| unreachable(e.to_string()))?;
        let exchange = async {
            let response = http
                .request(request)
                .await
                .map_err(|e| unreachable(describe(&e)))?;
            let status = response.status();
            let answer = Limited::new(response.into_body(), MAX_ANSWER)
                .collect()
                .await
                .map(|collected| collected.to_bytes())
                .unwrap_or_default();
            Ok::<_, WebhookError>((status, answer))
        };
        let (status, answer) = tokio::time::timeout(POST_TIMEOUT, exchange)
            .await
            .map_err(|_| unreachable(format!("no answer within {POST_TIMEOUT:?}")))??;
        if status.is_success() {
            return Ok(());
        }
        Err(WebhookError::Refused {
            url: self.url.clone(),
            status: status.as_u16(),
            message: String::from_utf8_lossy(&answer).chars().take(200).collect(),
        })
    }
}

/// The document posted for the Orchestr `namespace/name`: its alerts, how many pods have
/// problems in all, and the same in words under `text`.
pub fn document(namespace: &str, name: &str, alerts: &[PodAlert], problems: usize) -> Value {
    let mut text = match problems {
        0 => format!("pod-alert {namespace}/{name}: all pods are running again"),
        1 => format!("pod-alert {namespace}/{name}: 1 pod has problems"),
        n => format!("pod-alert {namespace}/{name}: {n} pods have problems"),
    };
    for alert in alerts {
        text.push_str("\n- ");
        text.push_str(&alert.summary());
    }
    if problems > alerts.len() {
        text.push_str(&format!("\n- and {} more", problems - alerts.len()));
    }
    json!({
        "text": text,
        "orchestr": {"namespace": namespace, "name": name},
        "problems": problems,
        "alerts": alerts,
    })
}

/// An error with its chain of causes.
fn describe(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_absolute_http() {
        assert!(parse_url("http://127.0.0.1:9000/hook").is_ok());
        assert!(parse_url("https://hooks.slack.com/services/T/B/X").is_ok());
        assert!(parse_url("ftp://example.com/").is_err());
        assert!(parse_url("/relative").is_err());
        assert!(parse_url("not a url").is_err());
    }

    #[test]
    fn the_document_says_it_in_words_too() {
        let alert = PodAlert {
            name: "web".into(),
            namespace: "shop".into(),
            phase: "Failed".into(),
            reason: Some("Evicted".into()),
            message: None,
            issues: Vec::new(),
        };
        let document = document("default", "watch", &[alert], 3);
        assert_eq!(
            document["text"],
            "pod-alert default/watch: 3 pods have problems\n\
             - pod shop/web is Failed: Evicted\n- and 2 more"
        );
        assert_eq!(document["alerts"][0]["name"], "web");
        assert_eq!(document["orchestr"]["name"], "watch");
        let clear = super::document("default", "watch", &[], 0);
        assert_eq!(
            clear["text"],
            "pod-alert default/watch: all pods are running again"
        );
    }
}
