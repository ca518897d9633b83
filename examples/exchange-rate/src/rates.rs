//! Fetching exchange rates over HTTP(S) from an exchangeratesapi.io-style API:
//! `GET <url>?symbols=USD` answers `{"base": "EUR", "date": "2021-01-19", "rates": {"USD": 1.2}}`,
//! and an unknown symbol is refused with a 4xx status and `{"error": ...}`.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use serde_json::Value;

/// How long one request may take, connection included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer accepted.
const MAX_BODY: usize = 1 << 20;

/// One currency's rate against the API's base currency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    /// The currency asked for, uppercase.
    pub currency: String,
    /// The rate as the API wrote it, e.g. `1.1901`.
    pub rate: String,
    /// The base currency, e.g. `EUR`.
    pub base: String,
    /// The date the rate is for, as the API wrote it.
    pub date: String,
}

/// Why a rate could not be fetched.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RatesError {
    /// The currency is not a three-letter code.
    #[error("'{0}' is not a currency code (three letters, like USD)")]
    InvalidCurrency(String),
    /// The API does not know the currency.
    #[error("unknown currency {currency}: {message}")]
    UnknownCurrency {
        /// The currency asked for.
        currency: String,
        /// What the API said.
        message: String,
    },
    /// The API could not be reached or did not answer in time.
    #[error("the rates API at {url} is unreachable: {message}")]
    Unreachable {
        /// The URL asked.
        url: String,
        /// What failed.
        message: String,
    },
    /// The API answered with an error that may go away (5xx, 429, authorization).
    #[error("the rates API at {url} answered {status}: {message}")]
    Unavailable {
        /// The URL asked.
        url: String,
        /// The HTTP status.
        status: u16,
        /// What the API said.
        message: String,
    },
    /// The URL given to the operator is not usable.
    #[error("the rates URL '{url}' is invalid: {message}")]
    InvalidUrl {
        /// The URL.
        url: String,
        /// Why.
        message: String,
    },
    /// The API answered something that is not a rates document.
    #[error("the rates API at {url} answered something unexpected: {message}")]
    BadAnswer {
        /// The URL asked.
        url: String,
        /// What is wrong with it.
        message: String,
    },
}

impl RatesError {
    /// Whether asking again cannot help until the object (or the operator's options) change.
    pub fn is_permanent(&self) -> bool {
        matches!(
            self,
            RatesError::InvalidCurrency(_)
                | RatesError::UnknownCurrency { .. }
                | RatesError::InvalidUrl { .. }
        )
    }
}

/// Normalizes a currency code: three ASCII letters, uppercased.
pub fn currency_code(currency: &str) -> Result<String, RatesError> {
    let code = currency.trim();
    if code.len() == 3 && code.bytes().all(|b| b.is_ascii_alphabetic()) {
        Ok(code.to_ascii_uppercase())
    } else {
        Err(RatesError::InvalidCurrency(currency.to_owned()))
    }
}

/// A client of one rates API.
#[derive(Clone)]
pub struct RatesClient {
    url: String,
    http: Result<Client<HttpsConnector<HttpConnector>, Empty<Bytes>>, String>,
}

impl std::fmt::Debug for RatesClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RatesClient")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

fn connector() -> Result<HttpsConnector<HttpConnector>, String> {
    let provider = rustls::crypto::ring::default_provider();
    let builder = match hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_native_roots(provider)
    {
        Ok(builder) => builder,
        Err(error) => {
            // Without trusted roots only plain-http APIs work; https ones fail per request.
            tracing::warn!(%error, "no trusted root certificates found; https rates URLs will fail");
            let config = rustls::ClientConfig::builder_with_provider(
                rustls::crypto::ring::default_provider().into(),
            )
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .with_root_certificates(rustls::RootCertStore::empty())
            .with_no_client_auth();
            hyper_rustls::HttpsConnectorBuilder::new().with_tls_config(config)
        }
    };
    Ok(builder.https_or_http().enable_http1().build())
}

impl RatesClient {
    /// A client of the API at `url` (e.g. `https://api.exchangeratesapi.io/latest`).
    pub fn new(url: &str) -> Self {
        RatesClient {
            url: url.to_owned(),
            http: connector()
                .map(|connector| Client::builder(TokioExecutor::new()).build(connector)),
        }
    }

    /// The API's URL.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn request_url(&self, code: &str) -> String {
        let separator = if self.url.contains('?') { '&' } else { '?' };
        format!("{}{separator}symbols={code}", self.url)
    }

    /// Fetches the rate of `currency`.
    pub async fn fetch(&self, currency: &str) -> Result<Quote, RatesError> {
        let code = currency_code(currency)?;
        let url = self.request_url(&code);
        let uri: http::Uri =
            url.parse()
                .map_err(|e: http::uri::InvalidUri| RatesError::InvalidUrl {
                    url: self.url.clone(),
                    message: e.to_string(),
                })?;
        if !matches!(uri.scheme_str(), Some("http" | "https")) {
            return Err(RatesError::InvalidUrl {
                url: self.url.clone(),
                message: "only http and https URLs are supported".into(),
            });
        }
        let unreachable = |message: String| RatesError::Unreachable {
            url: self.url.clone(),
            message,
        };
        let http = self
            .http
            .as_ref()
            .map_err(|e| unreachable(format!("setting up TLS failed: {e}")))?;
        let exchange = async {
            let response = http.get(uri).await.map_err(|e| unreachable(describe(&e)))?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| unreachable(format!("reading the answer: {e}")))?
                .to_bytes();
            Ok::<_, RatesError>((status, body))
        };
        let (status, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .map_err(|_| unreachable(format!("no answer within {REQUEST_TIMEOUT:?}")))??;
        let document: Option<Value> = serde_json::from_slice(&body).ok();
        if !status.is_success() {
            let message = document
                .as_ref()
                .and_then(error_message)
                .unwrap_or_else(|| String::from_utf8_lossy(&body).chars().take(200).collect());
            return Err(match status.as_u16() {
                400 | 404 | 422 => RatesError::UnknownCurrency {
                    currency: code,
                    message,
                },
                code => RatesError::Unavailable {
                    url: self.url.clone(),
                    status: code,
                    message,
                },
            });
        }
        let bad = |message: &str| RatesError::BadAnswer {
            url: self.url.clone(),
            message: message.to_owned(),
        };
        let document = document.ok_or_else(|| bad("not JSON"))?;
        let rates = document
            .get("rates")
            .and_then(Value::as_object)
            .ok_or_else(|| bad("no rates"))?;
        let rate = match rates.get(&code) {
            Some(Value::Number(number)) => number.to_string(),
            Some(Value::String(text)) if text.parse::<f64>().is_ok() => text.clone(),
            Some(_) => return Err(bad(&format!("the rate of {code} is not a number"))),
            None => {
                return Err(RatesError::UnknownCurrency {
                    message: format!("the API has no rate for {code}"),
                    currency: code,
                });
            }
        };
        let text = |key: &str| {
            document
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        Ok(Quote {
            currency: code,
            rate,
            base: text("base"),
            date: text("date"),
        })
    }
}

/// The error text of an API answer: `{"error": "..."}` or `{"error": {"message"|"info": "..."}}`.
fn error_message(document: &Value) -> Option<String> {
    let error = document.get("error")?;
    match error {
        Value::String(text) => Some(text.clone()),
        Value::Object(map) => ["message", "info", "type"]
            .iter()
            .find_map(|key| map.get(*key).and_then(Value::as_str))
            .map(str::to_owned),
        _ => None,
    }
}

/// An error with its chain of causes ("client error (Connect): tcp connect error: ...").
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
    fn currency_codes_are_three_letters() {
        assert_eq!(currency_code(" usd "), Ok("USD".into()));
        assert!(currency_code("US").is_err());
        assert!(currency_code("US$").is_err());
        assert!(currency_code("USD&x=1").is_err());
    }

    #[test]
    fn symbols_join_an_existing_query() {
        assert_eq!(
            RatesClient::new("http://h/latest").request_url("USD"),
            "http://h/latest?symbols=USD"
        );
        assert_eq!(
            RatesClient::new("http://h/latest?k=1").request_url("USD"),
            "http://h/latest?k=1&symbols=USD"
        );
    }

    #[test]
    fn error_documents_of_both_shapes() {
        let flat = serde_json::json!({"error": "Symbols 'XYZ' are invalid"});
        let nested = serde_json::json!({"error": {"code": 202, "info": "invalid currency codes"}});
        assert_eq!(
            error_message(&flat).as_deref(),
            Some("Symbols 'XYZ' are invalid")
        );
        assert_eq!(
            error_message(&nested).as_deref(),
            Some("invalid currency codes")
        );
    }

    #[test]
    fn permanence() {
        assert!(RatesError::InvalidCurrency("x".into()).is_permanent());
        let unreachable = RatesError::Unreachable {
            url: "u".into(),
            message: "m".into(),
        };
        assert!(!unreachable.is_permanent());
    }
}
