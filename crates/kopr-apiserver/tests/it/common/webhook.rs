//! A small HTTPS webhook (admission or CRD conversion) for tests: a CA and a
//! certificate for 127.0.0.1 from rcgen, and an answer computed per request
//! by the test.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::routing::post;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, pem::PemObject};
use serde_json::{Value, json};

/// A running webhook server.
pub struct WebhookServer {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// Its CA, PEM.
    pub ca_pem: String,
    /// Every AdmissionReview `request` received, with the path it came to.
    pub calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// TLS connections accepted.
    pub connections: Arc<std::sync::atomic::AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for WebhookServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl WebhookServer {
    /// The base64 CA bundle for a webhook's `clientConfig`.
    pub fn ca_bundle(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::STANDARD.encode(&self.ca_pem)
    }

    /// The requests received on `path`.
    pub fn requests(&self, path: &str) -> Vec<Value> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, r)| r.clone())
            .collect()
    }
}

type Answer = dyn Fn(&str, &Value) -> Value + Send + Sync;

struct Shared {
    answer: Box<Answer>,
    calls: Arc<Mutex<Vec<(String, Value)>>>,
    /// The answer is the whole body (not an AdmissionReview's `response`).
    raw: bool,
}

async fn review(
    State(shared): State<Arc<Shared>>,
    uri: http::Uri,
    body: axum::body::Bytes,
) -> axum::response::Response {
    let review: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let request = review["request"].clone();
    let path = uri.path().to_string();
    shared
        .calls
        .lock()
        .unwrap()
        .push((path.clone(), request.clone()));
    let mut response = if shared.raw {
        (shared.answer)(&path, &review)
    } else {
        (shared.answer)(&path, &request)
    };
    if let Some(ms) = response.get("__delay_ms").and_then(Value::as_u64) {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
    if let Some(code) = response.get("__http_status").and_then(Value::as_u64) {
        let mut r = axum::response::Response::new(axum::body::Body::from("broken"));
        *r.status_mut() = http::StatusCode::from_u16(code as u16).unwrap();
        return r;
    }
    if let Some(map) = response.as_object_mut() {
        map.retain(|k, _| !k.starts_with("__"));
        if !shared.raw {
            map.entry("uid").or_insert(request["uid"].clone());
        }
    }
    let review = if shared.raw {
        response
    } else {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
    };
    let mut r = axum::response::Response::new(axum::body::Body::from(review.to_string()));
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// This host's address on its outward interface (no packet is sent): what
/// Endpoints of a Service backed by a local webhook point at.
pub fn host_address() -> String {
    let socket = std::net::UdpSocket::bind("0.0.0.0:0").expect("udp socket");
    socket
        .connect("198.51.100.1:9")
        .expect("a non-loopback interface (Endpoints may not name loopback addresses)");
    let ip = socket.local_addr().expect("local address").ip();
    assert!(
        !ip.is_loopback() && !ip.is_unspecified(),
        "no outward interface: {ip}"
    );
    ip.to_string()
}

/// Starts a webhook answering each `(path, request)` with `answer`'s
/// `response` (the request's uid is added unless the answer sets one;
/// `__delay_ms` delays the answer, `__http_status` answers that status with
/// a plain body).
pub async fn serve(
    answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
) -> WebhookServer {
    start(Box::new(answer), false).await
}

/// Starts a webhook answering each `(path, review)` with `answer`'s whole
/// body (a ConversionReview, say; `__delay_ms` and `__http_status` as for
/// [`serve`]). Every review's `request` is recorded.
pub async fn serve_raw(
    answer: impl Fn(&str, &Value) -> Value + Send + Sync + 'static,
) -> WebhookServer {
    start(Box::new(answer), true).await
}

async fn start(answer: Box<Answer>, raw: bool) -> WebhookServer {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_cert = ca_params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(ca_params, ca_key);
    // Also the name a Service `hook` in `default` is called by.
    let names = vec!["localhost".to_string(), "hook.default.svc".to_string()];
    let mut params = rcgen::CertificateParams::new(names).unwrap();
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress("127.0.0.1".parse().unwrap()));
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = params.signed_by(&key, &issuer).unwrap();
    let chain = vec![CertificateDer::from_pem_slice(cert.pem().as_bytes()).unwrap()];
    let private = PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes()).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(chain, private)
        .unwrap();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    // All addresses: Endpoints may not point at loopback (kube refuses it), so a
    // webhook reached through a Service is reached at this host's own address.
    let listener = tokio::net::TcpListener::bind("0.0.0.0:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("https://127.0.0.1:{port}");
    let calls = Arc::new(Mutex::new(Vec::new()));
    let shared = Arc::new(Shared {
        answer,
        calls: calls.clone(),
        raw,
    });
    let app = axum::Router::new()
        .fallback(post(review))
        .with_state(shared);
    let connections = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = connections.clone();
    let task = tokio::spawn(async move {
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            counted.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let acceptor = acceptor.clone();
            let app = app.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let service = TowerToHyperService::new(app);
                let _ = auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(tls), service)
                    .await;
            });
        }
    });
    WebhookServer {
        url,
        ca_pem: ca_cert.pem(),
        calls,
        connections,
        task,
    }
}
