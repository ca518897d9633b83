//! A fault-injecting proxy for tests: it stands between an operator and a [`TestCluster`] and,
//! at configured rates and deterministically from a seed, answers requests with 429 and a
//! `Retry-After`, 500 or 503 Status bodies, drops the connection before or after the server
//! processed the request (after: the write happened and the client saw an error), delays
//! requests, and cuts watch streams mid-way. Everything else passes through unchanged,
//! credentials included, so the operator runs as whoever its token says.
//!
//! ```no_run
//! # async fn test(operator: kopr::Operator) -> Result<(), kopr::Error> {
//! use kopr::testing::{FaultProxy, Faults, TestCluster};
//! let cluster = TestCluster::start().await?;
//! let proxy = FaultProxy::start(&cluster, Faults::rate(0.1).seed(7)).await?;
//! let running = cluster.run_through(operator, &proxy);
//! // ... drive the operator, then:
//! println!("{:?}", proxy.injected());
//! running.stop().await?;
//! # Ok(()) }
//! ```
//!
//! [`TestCluster`]: crate::testing::TestCluster

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use futures::StreamExt;
use http::{HeaderValue, StatusCode};
use http_body_util::BodyExt;
use rand::{Rng, SeedableRng};

use crate::handling::errors::Error;

/// Which faults a [`FaultProxy`] injects, and how often.
#[derive(Debug, Clone)]
pub struct Faults {
    /// The share of non-watch requests that get a fault (0.0 to 1.0), split evenly over the
    /// enabled kinds.
    pub rate: f64,
    /// The seed of the fault sequence.
    pub seed: u64,
    /// 429 Too Many Requests with `Retry-After: <seconds>`.
    pub throttle: bool,
    /// The `Retry-After` of throttled requests, in seconds.
    pub retry_after: u64,
    /// 500 and 503 with Status bodies.
    pub server_errors: bool,
    /// The connection dropped before the request reaches the server.
    pub reset_before: bool,
    /// The connection dropped after the server processed the request.
    pub reset_after: bool,
    /// A delay before every request (not counted as a fault).
    pub latency: Duration,
    /// The share of watch streams cut after a short while.
    pub watch_cut_rate: f64,
    /// Only the requests this accepts get faults (all when `None`).
    pub only_for: Option<RequestFilter>,
    /// At most this many faults in all (watch cuts aside).
    pub limit: Option<u64>,
}

impl Faults {
    /// Every kind of fault at `rate` in total, seed 0, `Retry-After: 1`, no latency, and the
    /// same rate of watch cuts.
    pub fn rate(rate: f64) -> Faults {
        Faults {
            rate: rate.clamp(0.0, 1.0),
            seed: 0,
            throttle: true,
            retry_after: 1,
            server_errors: true,
            reset_before: true,
            reset_after: true,
            latency: Duration::ZERO,
            watch_cut_rate: rate.clamp(0.0, 1.0),
            only_for: None,
            limit: None,
        }
    }

    /// The seed of the fault sequence.
    pub fn seed(mut self, seed: u64) -> Faults {
        self.seed = seed;
        self
    }

    /// Only these kinds of faults: `throttle`, `server_errors`, `reset_before`, `reset_after`.
    pub fn only(
        mut self,
        throttle: bool,
        server_errors: bool,
        reset_before: bool,
        reset_after: bool,
    ) -> Faults {
        self.throttle = throttle;
        self.server_errors = server_errors;
        self.reset_before = reset_before;
        self.reset_after = reset_after;
        self
    }

    /// A delay before every request.
    pub fn latency(mut self, latency: Duration) -> Faults {
        self.latency = latency;
        self
    }

    /// The share of watch streams cut.
    pub fn watch_cuts(mut self, rate: f64) -> Faults {
        self.watch_cut_rate = rate.clamp(0.0, 1.0);
        self
    }

    /// Only the requests `accept` accepts (by method, URI and headers) get faults: say, the
    /// merge `PATCH`es that record handler outcomes, or only those not to `/status`.
    pub fn only_for(
        mut self,
        accept: impl Fn(&http::request::Parts) -> bool + Send + Sync + 'static,
    ) -> Faults {
        self.only_for = Some(RequestFilter(Arc::new(accept)));
        self
    }

    /// At most `limit` faults in all (watch cuts aside): a deterministic "the first write fails".
    pub fn limit(mut self, limit: u64) -> Faults {
        self.limit = Some(limit);
        self
    }
}

/// Which requests may get faults, judged on the request's head.
#[derive(Clone)]
pub struct RequestFilter(Arc<Accept>);

/// A request filter's function.
type Accept = dyn Fn(&http::request::Parts) -> bool + Send + Sync;

impl std::fmt::Debug for RequestFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("RequestFilter(..)")
    }
}

/// How many requests passed and how many faults of each kind were injected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultCounts {
    /// Requests forwarded and answered by the server, faults after the fact included.
    pub forwarded: u64,
    /// 429 answers.
    pub throttled: u64,
    /// 500 and 503 answers.
    pub server_errors: u64,
    /// Connections dropped before forwarding.
    pub reset_before: u64,
    /// Connections dropped after the server processed the request.
    pub reset_after: u64,
    /// Watch streams cut.
    pub watches_cut: u64,
    /// Requests sent again sooner than the `Retry-After` their 429 asked for (the same method,
    /// path and body arriving before the wait was over).
    pub early_retries: u64,
}

#[derive(Default)]
struct Counters {
    forwarded: AtomicU64,
    throttled: AtomicU64,
    server_errors: AtomicU64,
    reset_before: AtomicU64,
    reset_after: AtomicU64,
    watches_cut: AtomicU64,
    early_retries: AtomicU64,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Fault {
    Throttle,
    ServerError(u16),
    ResetBefore,
    ResetAfter,
}

struct Shared {
    upstream: kube::Client,
    faults: Faults,
    rng: Mutex<rand::rngs::StdRng>,
    counters: Counters,
    /// Throttled requests (method, URI, body) and when their `Retry-After` is over.
    throttled: Mutex<HashMap<(String, String, bytes::Bytes), tokio::time::Instant>>,
    /// Faults injected so far, for the limit.
    injected: AtomicU64,
    /// Faults are injected (watch cuts aside) while this is set.
    enabled: std::sync::atomic::AtomicBool,
}

/// A running fault-injecting proxy in front of a [`TestCluster`](crate::testing::TestCluster).
pub struct FaultProxy {
    url: String,
    kubeconfig: String,
    shared: Arc<Shared>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for FaultProxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultProxy")
            .field("url", &self.url)
            .finish_non_exhaustive()
    }
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A body that fails at once: the connection is dropped mid-response, as a reset.
fn reset() -> Response {
    let failing = futures::stream::once(async {
        Err::<bytes::Bytes, std::io::Error>(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            "fault injected: connection reset",
        ))
    });
    Response::new(Body::from_stream(failing))
}

fn status(code: u16, reason: &str, message: &str, retry_after: Option<u64>) -> Response {
    let mut body = serde_json::json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code,
    });
    if let Some(seconds) = retry_after {
        body["details"] = serde_json::json!({ "retryAfterSeconds": seconds });
    }
    let mut response = Response::new(Body::from(body.to_string()));
    *response.status_mut() =
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn is_watch(req: &Request) -> bool {
    req.uri()
        .query()
        .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"))
}

impl Shared {
    fn pick(&self, watch: bool, request: &http::request::Parts) -> (Option<Fault>, bool) {
        let f = &self.faults;
        let Ok(mut rng) = self.rng.lock() else {
            return (None, false);
        };
        if watch {
            return (None, rng.random_bool(f.watch_cut_rate));
        }
        if !self.enabled.load(Ordering::Relaxed)
            || f.only_for
                .as_ref()
                .is_some_and(|accept| !(accept.0)(request))
        {
            return (None, false);
        }
        if f.limit
            .is_some_and(|limit| self.injected.load(Ordering::Relaxed) >= limit)
        {
            return (None, false);
        }
        let mut kinds = Vec::new();
        if f.throttle {
            kinds.push(Fault::Throttle);
        }
        if f.server_errors {
            kinds.push(Fault::ServerError(500));
            kinds.push(Fault::ServerError(503));
        }
        if f.reset_before {
            kinds.push(Fault::ResetBefore);
        }
        if f.reset_after {
            kinds.push(Fault::ResetAfter);
        }
        if kinds.is_empty() || !rng.random_bool(f.rate) {
            return (None, false);
        }
        self.injected.fetch_add(1, Ordering::Relaxed);
        (Some(kinds[rng.random_range(0..kinds.len())]), false)
    }

    /// Notes a request that repeats a throttled one before its `Retry-After` was over.
    fn check_retry(&self, key: &(String, String, bytes::Bytes)) {
        let Ok(mut throttled) = self.throttled.lock() else {
            return;
        };
        if let Some(until) = throttled.remove(key)
            && tokio::time::Instant::now() < until
        {
            self.counters.early_retries.fetch_add(1, Ordering::Relaxed);
        }
    }

    fn note_throttled(&self, key: (String, String, bytes::Bytes)) {
        let until = tokio::time::Instant::now() + Duration::from_secs(self.faults.retry_after);
        if let Ok(mut throttled) = self.throttled.lock() {
            throttled.insert(key, until);
        }
    }
}

async fn forward(
    shared: &Shared,
    parts: http::request::Parts,
    bytes: bytes::Bytes,
) -> Result<Response, Response> {
    let upstream = http::Request::from_parts(parts, kube::client::Body::from(bytes.to_vec()));
    let response = shared
        .upstream
        .send(upstream)
        .await
        .map_err(|e| status(502, "InternalError", &format!("proxy: {e}"), None))?;
    shared.counters.forwarded.fetch_add(1, Ordering::Relaxed);
    let (parts, body) = response.into_parts();
    Ok(Response::from_parts(parts, Body::new(body)))
}

async fn handle(State(shared): State<Arc<Shared>>, req: Request) -> Response {
    if !shared.faults.latency.is_zero() {
        tokio::time::sleep(shared.faults.latency).await;
    }
    let watch = is_watch(&req);
    let (parts, body) = req.into_parts();
    let bytes = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            let message = format!("proxy: reading the body: {e}");
            return status(400, "BadRequest", &message, None);
        }
    };
    let key = (
        parts.method.to_string(),
        parts.uri.to_string(),
        bytes.clone(),
    );
    if !watch {
        shared.check_retry(&key);
    }
    let (fault, cut) = shared.pick(watch, &parts);
    let count = |c: &AtomicU64| {
        c.fetch_add(1, Ordering::Relaxed);
    };
    match fault {
        Some(Fault::Throttle) => {
            count(&shared.counters.throttled);
            shared.note_throttled(key);
            let seconds = shared.faults.retry_after;
            let message = "fault injected: too many requests";
            let mut r = status(429, "TooManyRequests", message, Some(seconds));
            r.headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds));
            return r;
        }
        Some(Fault::ServerError(code)) => {
            count(&shared.counters.server_errors);
            let reason = if code == 503 {
                "ServiceUnavailable"
            } else {
                "InternalError"
            };
            return status(code, reason, "fault injected: server error", None);
        }
        Some(Fault::ResetBefore) => {
            count(&shared.counters.reset_before);
            return reset();
        }
        Some(Fault::ResetAfter) | None => {}
    }
    let response = match forward(&shared, parts, bytes).await {
        Ok(r) => r,
        Err(r) => return r,
    };
    if fault == Some(Fault::ResetAfter) {
        count(&shared.counters.reset_after);
        // The server did the work; drain its answer, then drop the connection.
        let _ = response.into_body().collect().await;
        return reset();
    }
    if cut {
        count(&shared.counters.watches_cut);
        let (parts, body) = response.into_parts();
        let delay = {
            let millis = shared
                .rng
                .lock()
                .map(|mut r| r.random_range(50..500))
                .unwrap_or(100);
            Duration::from_millis(millis)
        };
        let deadline = tokio::time::sleep(delay);
        let stream = body.into_data_stream().take_until(deadline);
        return Response::from_parts(parts, Body::from_stream(stream));
    }
    response
}

impl FaultProxy {
    /// Starts a proxy on a free loopback port in front of `cluster`'s API server.
    ///
    /// # Errors
    /// When the listener cannot be bound or the upstream client built.
    pub async fn start(
        cluster: &crate::testing::TestCluster,
        faults: Faults,
    ) -> Result<FaultProxy, Error> {
        // The upstream client trusts the server's CA and adds no credentials of its own: each
        // request keeps the caller's `Authorization` header.
        let invalid = |e: &dyn std::fmt::Display| Error::ClientConfig(e.to_string());
        let file = kube::config::Kubeconfig::from_yaml(&cluster.kubeconfig_yaml())
            .map_err(|e| invalid(&e))?;
        let mut config =
            kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
                .await
                .map_err(|e| invalid(&e))?;
        config.auth_info = kube::config::AuthInfo::default();
        config.default_retry = false;
        let upstream = kube::Client::try_from(config)?;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let url = format!("http://{}", listener.local_addr()?);
        let shared = Arc::new(Shared {
            upstream,
            rng: Mutex::new(rand::rngs::StdRng::seed_from_u64(faults.seed)),
            faults,
            counters: Counters::default(),
            throttled: Mutex::new(HashMap::new()),
            injected: AtomicU64::new(0),
            enabled: std::sync::atomic::AtomicBool::new(true),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: faults\n  cluster:\n    server: {url}\nusers:\n- name: faults\n  user:\n    token: {}\ncontexts:\n- name: faults\n  context:\n    cluster: faults\n    user: faults\n    namespace: default\ncurrent-context: faults\n",
            cluster.server().token()
        );
        Ok(FaultProxy {
            url,
            kubeconfig,
            shared,
            task,
        })
    }

    /// The proxy's URL (`http://127.0.0.1:<port>`).
    pub fn url(&self) -> &str {
        &self.url
    }

    /// A kubeconfig (admin credentials) that goes through the proxy.
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig.clone()
    }

    /// Stops or resumes injecting faults (watch cuts aside), say to let a test change an
    /// object while a write keeps failing, then let the write through.
    pub fn set_enabled(&self, enabled: bool) {
        self.shared.enabled.store(enabled, Ordering::Relaxed);
    }

    /// What was forwarded and injected so far.
    pub fn injected(&self) -> FaultCounts {
        let c = &self.shared.counters;
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        FaultCounts {
            forwarded: get(&c.forwarded),
            throttled: get(&c.throttled),
            server_errors: get(&c.server_errors),
            reset_before: get(&c.reset_before),
            reset_after: get(&c.reset_after),
            watches_cut: get(&c.watches_cut),
            early_retries: get(&c.early_retries),
        }
    }
}
