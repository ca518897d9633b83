//! Calling a webhook: POST of a review over HTTPS to its URL, or
//! to the address its Service's Endpoints give; the server certificate
//! verified against `caBundle` (else the system's roots); the whole call
//! bounded by `timeoutSeconds`. Connections are kept open and reused, as
//! Go's HTTP client does (a call that finds its reused connection closed by
//! the webhook is sent once more on a new one). Failures are described in
//! the words of Go's HTTP client, as kube's messages quote them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use rustls::pki_types::{CertificateDer, ServerName, pem::PemObject};
use serde_json::Value;

use super::{ClientConfig, Target};
use crate::storage::Store;

/// Why a webhook was not called or gave no answer; the messages are kube's, in the
/// words of Go's HTTP client (admission puts `failed to call webhook: ` before them,
/// CRD conversion `conversion webhook for <gvk> failed: `).
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// Its address or the trust for its certificate could not be settled.
    #[error("{0}")]
    Setup(#[from] SetupError),
    /// The POST failed.
    #[error("Post \"{url}\": {source}")]
    Exchange {
        /// The URL as kube prints it.
        url: String,
        /// Why.
        source: ExchangeError,
    },
    /// No answer within `timeoutSeconds`.
    #[error("Post \"{url}\": context deadline exceeded")]
    Timeout {
        /// The URL as kube prints it.
        url: String,
    },
}

/// Why a webhook's address or the trust for its certificate could not be settled.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// A `url` that is not a URL.
    #[error("parse {url:?}: {source}")]
    Url {
        url: String,
        source: http::uri::InvalidUri,
    },
    /// The Service gives no address.
    #[error("Post \"{url}\": {source}")]
    Service { url: String, source: ServiceError },
    /// A `caBundle` block that is not PEM.
    #[error("unable to load root certificates: {0}")]
    BundlePem(#[from] rustls::pki_types::pem::Error),
    /// A `caBundle` certificate rustls refuses as a root.
    #[error("unable to load root certificates: {0}")]
    BundleRoot(rustls::Error),
    /// Roots the verifier cannot use.
    #[error("{0}")]
    Verifier(#[from] rustls::client::VerifierBuilderError),
    /// The TLS configuration could not be built.
    #[error("{0}")]
    Tls(rustls::Error),
}

/// Why a Service gives no address for its webhook.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// No such Service.
    #[error("service \"{0}\" not found")]
    NotFound(String),
    /// The Service has no such port.
    #[error("no service port {port} found for service \"{name}\"")]
    NoPort { name: String, port: u16 },
    /// No ready address in its Endpoints.
    #[error("no endpoints available for service \"{0}\"")]
    NoEndpoints(String),
}

/// Why a POST failed, in the words of Go's HTTP client.
#[derive(Debug, thiserror::Error)]
pub enum ExchangeError {
    /// Nothing listens there.
    #[error("dial tcp {host}:{port}: connect: connection refused")]
    Refused { host: String, port: u16 },
    /// The connection could not be opened otherwise.
    #[error("dial tcp {host}:{port}: {source}")]
    Dial {
        host: String,
        port: u16,
        source: std::io::Error,
    },
    /// A host that is not a name TLS can verify.
    #[error("tls: {0}")]
    ServerName(#[from] rustls::pki_types::InvalidDnsNameError),
    /// The TLS handshake failed.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// HTTP failed (handshake, sending, reading the answer).
    #[error("{0}")]
    Http(#[from] hyper::Error),
    /// The request could not be built.
    #[error("{0}")]
    Request(#[from] http::Error),
    /// The body could not be read, or is too large.
    #[error("{0}")]
    Body(Box<dyn std::error::Error + Send + Sync>),
    /// A status other than 2xx, in client-go's words.
    #[error("{0}")]
    Status(String),
}

/// Go's words for a TLS failure.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// The chain does not lead to a trusted root.
    #[error("tls: failed to verify certificate: x509: certificate signed by unknown authority")]
    UnknownAuthority,
    /// The certificate is not for the host.
    #[error("tls: failed to verify certificate: x509: certificate is not valid for {0}")]
    NotValidFor(String),
    /// The certificate is outside its validity.
    #[error("tls: failed to verify certificate: x509: certificate has expired or is not yet valid")]
    Expired,
    /// Another TLS failure.
    #[error("tls: {0}")]
    Other(rustls::Error),
    /// The peer ended the handshake.
    #[error("remote error: {0}")]
    Remote(std::io::Error),
}

/// The largest response body read.
const MAX_RESPONSE: usize = 16 << 20;

/// Where one call goes.
struct Endpoint {
    /// The URL as kube prints it (`https://name.namespace.svc:443/path`).
    url: String,
    /// The host the certificate must name.
    server_name: String,
    /// The address dialled.
    dial: (String, u16),
    /// Path and query sent.
    path_and_query: String,
}

/// The most idle connections kept per webhook address.
const MAX_IDLE: usize = 32;

/// A sender on an open HTTP/1.1 connection.
type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// Connections are shared by calls to the same address, name and trust.
#[derive(Clone, PartialEq, Eq, Hash)]
struct PoolKey {
    dial: (String, u16),
    server_name: String,
    /// The TLS configuration (one per CA bundle), by address.
    tls: usize,
}

/// Calls webhooks; keeps one TLS configuration per CA bundle and the idle
/// connections.
pub struct Caller {
    store: Store,
    tls: Mutex<HashMap<Option<Vec<u8>>, Arc<rustls::ClientConfig>>>,
    idle: Arc<Mutex<HashMap<PoolKey, Vec<Sender>>>>,
}

fn split_host_port(authority: &str) -> (String, Option<u16>) {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']').unwrap_or((rest, ""));
        let port = after.strip_prefix(':').and_then(|p| p.parse().ok());
        return (host.to_string(), port);
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => (host.to_string(), port.parse().ok()),
        None => (authority.to_string(), None),
    }
}

fn with_timeout(path: &str, timeout: Duration) -> String {
    let path = if path.is_empty() { "/" } else { path };
    format!("{path}?timeout={}s", timeout.as_secs().max(1))
}

impl Caller {
    pub fn new(store: Store) -> Caller {
        Caller {
            store,
            tls: Mutex::new(HashMap::new()),
            idle: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn tls(&self, ca_bundle: Option<&[u8]>) -> Result<Arc<rustls::ClientConfig>, SetupError> {
        let key = ca_bundle.map(<[u8]>::to_vec);
        if let Ok(cache) = self.tls.lock()
            && let Some(config) = cache.get(&key)
        {
            return Ok(config.clone());
        }
        let mut roots = rustls::RootCertStore::empty();
        let mut bundle = Vec::new();
        match ca_bundle {
            Some(pem) => {
                for cert in CertificateDer::pem_slice_iter(pem) {
                    let cert = cert?;
                    roots.add(cert.clone()).map_err(SetupError::BundleRoot)?;
                    bundle.push(cert);
                }
            }
            None => {
                for cert in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(cert);
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = super::trust::Verifier::new(roots, bundle, provider.clone())?;
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(SetupError::Tls)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        let config = Arc::new(config);
        if let Ok(mut cache) = self.tls.lock() {
            cache.insert(key, config.clone());
        }
        Ok(config)
    }

    /// The address of a Service's webhook: an ExternalName's host, or the
    /// first address of its Endpoints.
    fn resolve(
        &self,
        namespace: &str,
        name: &str,
        port: u16,
    ) -> Result<(String, u16), ServiceError> {
        let service = self
            .store
            .current(&format!("/core/services/{namespace}/{name}"))
            .ok_or_else(|| ServiceError::NotFound(name.to_string()))?;
        let spec = &service.object["spec"];
        if spec["type"].as_str() == Some("ExternalName") {
            let host = spec["externalName"].as_str().unwrap_or_default();
            return Ok((host.to_string(), port));
        }
        let service_port = spec["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["port"].as_u64() == Some(u64::from(port)))
            .ok_or_else(|| ServiceError::NoPort {
                name: name.to_string(),
                port,
            })?;
        let port_name = service_port["name"].as_str().unwrap_or("");
        let target_port = match &service_port["targetPort"] {
            Value::Number(n) => n.as_u64().and_then(|n| u16::try_from(n).ok()),
            Value::Null => Some(port),
            _ => None,
        };
        let none = || ServiceError::NoEndpoints(name.to_string());
        let endpoints = self
            .store
            .current(&format!("/core/endpoints/{namespace}/{name}"))
            .ok_or_else(none)?;
        for subset in endpoints.object["subsets"].as_array().into_iter().flatten() {
            let Some(address) = subset["addresses"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(|a| a["ip"].as_str())
            else {
                continue;
            };
            let ports = subset["ports"].as_array().cloned().unwrap_or_default();
            let port = ports
                .iter()
                .find(|p| p["name"].as_str().unwrap_or("") == port_name)
                .and_then(|p| p["port"].as_u64())
                .and_then(|p| u16::try_from(p).ok())
                .or(target_port);
            if let Some(port) = port {
                return Ok((address.to_string(), port));
            }
        }
        Err(none())
    }

    fn endpoint(&self, hook: &ClientConfig) -> Result<Endpoint, SetupError> {
        match &hook.target {
            Target::Url(url) => {
                let uri: http::Uri = url.parse().map_err(|source| SetupError::Url {
                    url: url.clone(),
                    source,
                })?;
                let authority = uri.authority().map(|a| a.as_str()).unwrap_or("");
                let (host, port) = split_host_port(authority);
                Ok(Endpoint {
                    url: format!("{url}?timeout={}s", hook.timeout.as_secs()),
                    server_name: host.clone(),
                    dial: (host, port.unwrap_or(443)),
                    path_and_query: with_timeout(uri.path(), hook.timeout),
                })
            }
            Target::Service {
                namespace,
                name,
                path,
                port,
            } => {
                let host = format!("{name}.{namespace}.svc");
                let url = format!(
                    "https://{host}:{port}{path}?timeout={}s",
                    hook.timeout.as_secs()
                );
                let dial = match self.resolve(namespace, name, *port) {
                    Ok(dial) => dial,
                    Err(source) => return Err(SetupError::Service { url, source }),
                };
                Ok(Endpoint {
                    url,
                    server_name: host,
                    dial,
                    path_and_query: with_timeout(path, hook.timeout),
                })
            }
        }
    }

    /// POSTs `body` to the webhook; returns the response body of a 200.
    ///
    /// # Errors
    /// [`CallError`], why there is no answer.
    pub async fn post(&self, hook: &ClientConfig, body: Vec<u8>) -> Result<Bytes, CallError> {
        let endpoint = self.endpoint(hook)?;
        let tls = self.tls(hook.ca_bundle.as_deref())?;
        let url = endpoint.url.clone();
        let exchange = self.exchange(endpoint, tls, Bytes::from(body));
        match tokio::time::timeout(hook.timeout, exchange).await {
            Ok(Ok(bytes)) => Ok(bytes),
            Ok(Err(source)) => Err(CallError::Exchange { url, source }),
            Err(_) => Err(CallError::Timeout { url }),
        }
    }
}

/// Go's words for a TLS failure.
fn tls_error(e: std::io::Error, host: &str) -> TlsError {
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>());
    match inner {
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::UnknownIssuer | rustls::CertificateError::BadSignature,
        )) => TlsError::UnknownAuthority,
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::NotValidForName
            | rustls::CertificateError::NotValidForNameContext { .. },
        )) => TlsError::NotValidFor(host.to_string()),
        Some(rustls::Error::InvalidCertificate(
            rustls::CertificateError::Expired | rustls::CertificateError::ExpiredContext { .. },
        )) => TlsError::Expired,
        Some(other) => TlsError::Other(other.clone()),
        None => TlsError::Remote(e),
    }
}

/// client-go's error for a response that is not a 2xx.
fn http_error(code: u16, body: &[u8]) -> String {
    if let Ok(status) = serde_json::from_slice::<Value>(body)
        && status["kind"] == "Status"
        && let Some(message) = status["message"].as_str()
    {
        return message.to_string();
    }
    let text = String::from_utf8_lossy(body).trim().to_string();
    match code {
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => "the server does not allow access to the requested resource".into(),
        404 => "the server could not find the requested resource".into(),
        500 if !text.is_empty() => {
            format!("an error on the server ({text:?}) has prevented the request from succeeding")
        }
        _ => format!(
            "the server responded with the status code {code} but did not return more information"
        ),
    }
}

/// Opens a connection: TCP, TLS, HTTP/1.1.
async fn connect(
    endpoint: &Endpoint,
    tls: Arc<rustls::ClientConfig>,
) -> Result<Sender, ExchangeError> {
    let (host, port) = &endpoint.dial;
    let tcp = tokio::net::TcpStream::connect((host.as_str(), *port))
        .await
        .map_err(|source| match source.kind() {
            std::io::ErrorKind::ConnectionRefused => ExchangeError::Refused {
                host: host.clone(),
                port: *port,
            },
            _ => ExchangeError::Dial {
                host: host.clone(),
                port: *port,
                source,
            },
        })?;
    let name = ServerName::try_from(endpoint.server_name.clone())?;
    let stream = tokio_rustls::TlsConnector::from(tls)
        .connect(name, tcp)
        .await
        .map_err(|e| tls_error(e, &endpoint.server_name))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

impl Caller {
    /// An idle connection to the endpoint, if one is still open.
    fn take_idle(&self, key: &PoolKey) -> Option<Sender> {
        let mut idle = self.idle.lock().ok()?;
        let senders = idle.get_mut(key)?;
        while let Some(sender) = senders.pop() {
            if !sender.is_closed() {
                return Some(sender);
            }
        }
        None
    }

    /// Keeps the connection for the next call once it is idle again.
    fn keep(&self, key: PoolKey, mut sender: Sender) {
        let idle = self.idle.clone();
        tokio::spawn(async move {
            if sender.ready().await.is_err() {
                return;
            }
            if let Ok(mut idle) = idle.lock() {
                let senders = idle.entry(key).or_default();
                if senders.len() < MAX_IDLE {
                    senders.push(sender);
                }
            }
        });
    }

    /// One POST and its response body, on an idle connection or a new one.
    async fn exchange(
        &self,
        endpoint: Endpoint,
        tls: Arc<rustls::ClientConfig>,
        body: Bytes,
    ) -> Result<Bytes, ExchangeError> {
        let key = PoolKey {
            dial: endpoint.dial.clone(),
            server_name: endpoint.server_name.clone(),
            tls: Arc::as_ptr(&tls) as usize,
        };
        let port = endpoint.dial.1;
        let authority = if port == 443 {
            endpoint.server_name.clone()
        } else {
            format!("{}:{port}", endpoint.server_name)
        };
        let request = || {
            http::Request::post(endpoint.path_and_query.as_str())
                .header(http::header::HOST, authority.as_str())
                .header(http::header::CONTENT_TYPE, "application/json")
                .header(http::header::ACCEPT, "application/json, */*")
                .body(Full::new(body.clone()))
        };
        let mut reused = self.take_idle(&key);
        let (sender, response) = loop {
            let was_reused = reused.is_some();
            let mut sender = match reused.take() {
                Some(sender) => sender,
                None => connect(&endpoint, tls.clone()).await?,
            };
            if sender.ready().await.is_err() && was_reused {
                continue;
            }
            match sender.send_request(request()?).await {
                Ok(response) => break (sender, response),
                // The webhook closed the idle connection: once more on a new one.
                Err(e) if was_reused && (e.is_closed() || e.is_incomplete_message()) => {}
                Err(e) => return Err(e.into()),
            }
        };
        let code = response.status().as_u16();
        let limited = http_body_util::Limited::new(response.into_body(), MAX_RESPONSE);
        let bytes = limited
            .collect()
            .await
            .map_err(ExchangeError::Body)?
            .to_bytes();
        self.keep(key, sender);
        if !(200..300).contains(&code) {
            return Err(ExchangeError::Status(http_error(code, &bytes)));
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_ports_split_as_urls_write_them() {
        assert_eq!(split_host_port("example.com"), ("example.com".into(), None));
        assert_eq!(
            split_host_port("127.0.0.1:8443"),
            ("127.0.0.1".into(), Some(8443))
        );
        assert_eq!(split_host_port("[::1]:9443"), ("::1".into(), Some(9443)));
        assert_eq!(with_timeout("", Duration::from_secs(10)), "/?timeout=10s");
        assert_eq!(with_timeout("/v", Duration::from_secs(3)), "/v?timeout=3s");
    }

    #[test]
    fn non_2xx_answers_read_as_client_go_reports_them() {
        assert_eq!(
            http_error(404, b""),
            "the server could not find the requested resource"
        );
        assert_eq!(
            http_error(500, b"boom"),
            "an error on the server (\"boom\") has prevented the request from succeeding"
        );
        assert_eq!(
            http_error(500, br#"{"kind":"Status","message":"no"}"#),
            "no"
        );
    }
}
