//! The operator's API client: kube-rs's client stack, with one change in how it retries. A
//! request the server throttles (429) or turns away (5xx) *with* a `Retry-After` header is sent
//! again after exactly that wait, at most ten times, as client-go does; without the header the
//! error goes to the caller at once, and the reactor's per-object backoff applies. Watches and
//! streaming bodies are never retried here.
//!
//! kube-rs's own default retry is switched off: it retries 429/503/504 up to fifteen times on an
//! exponential backoff that grows to minutes, which holds a worker for that long in a storm.
//!
//! ```no_run
//! # async fn f() -> Result<(), kopr::Error> {
//! let config = kube::Config::infer().await.map_err(|e| kopr::Error::ClientConfig(e.to_string()))?;
//! let client = kopr::client::build(config)?;
//! println!("throttled so far: {}", kopr::client::throttled_responses());
//! # let _ = client; Ok(()) }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::client::Body;
use tower::BoxError;
use tower::buffer::BufferLayer;
use tower::retry::{Policy, RetryLayer};

use crate::handling::errors::Error;

/// The most times one request is sent again after a `Retry-After` (client-go's default).
pub const MAX_RETRIES: u32 = 10;

/// The longest `Retry-After` waited for inside one request; a longer one goes to the caller.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

static THROTTLED: AtomicU64 = AtomicU64::new(0);

/// How many 429 responses this process's kopr clients have received (each retry counts).
pub fn throttled_responses() -> u64 {
    THROTTLED.load(Ordering::Relaxed)
}

/// Builds a client from `config` with kopr's retry policy (see the module docs).
///
/// # Errors
/// [`Error::Kube`] when kube-rs cannot build its stack from the configuration (TLS, auth).
pub fn build(mut config: kube::Config) -> Result<kube::Client, Error> {
    config.default_retry = false;
    let client = kube::client::ClientBuilder::try_from(config)?
        .with_layer(&tower::layer::layer_fn(Counted))
        .with_layer(&BufferLayer::new(1024))
        .with_layer(&RetryLayer::new(RetryAfter::default()))
        .build();
    Ok(client)
}

/// Counts every request sent (each retry too) by method and status
/// (`kopr_api_requests_total`).
#[derive(Clone)]
struct Counted<S>(S);

impl<S, B> tower::Service<Request<Body>> for Counted<S>
where
    S: tower::Service<Request<Body>, Response = Response<B>>,
    S::Future: Send + 'static,
    S::Error: 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::BoxFuture<'static, Result<S::Response, S::Error>>;

    fn poll_ready(
        &mut self,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let verb = request.method().as_str().to_string();
        let sent = self.0.call(request);
        Box::pin(async move {
            let result = sent.await;
            let code = match &result {
                Ok(response) => response.status().as_u16().to_string(),
                Err(_) => "error".into(),
            };
            crate::runtime::metrics::global()
                .api_requests
                .get_or_create(&crate::runtime::metrics::RequestLabels { verb, code })
                .inc();
            result
        })
    }
}

/// The wait a response asks for: its `Retry-After` (whole seconds) on a 429 or 5xx.
fn asked_wait(status: StatusCode, headers: &http::HeaderMap) -> Option<Duration> {
    if status != StatusCode::TOO_MANY_REQUESTS && !status.is_server_error() {
        return None;
    }
    let seconds: u64 = headers
        .get(http::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse()
        .ok()?;
    Some(Duration::from_secs(seconds))
}

/// client-go's rule for one request: wait what `Retry-After` says, then send it again.
#[derive(Clone, Debug, Default)]
struct RetryAfter {
    attempts: u32,
}

impl<B> Policy<Request<Body>, Response<B>, BoxError> for RetryAfter {
    type Future = tokio::time::Sleep;

    fn retry(
        &mut self,
        _request: &mut Request<Body>,
        result: &mut Result<Response<B>, BoxError>,
    ) -> Option<Self::Future> {
        let response = result.as_ref().ok()?;
        if response.status() == StatusCode::TOO_MANY_REQUESTS {
            THROTTLED.fetch_add(1, Ordering::Relaxed);
        }
        let wait = asked_wait(response.status(), response.headers())?;
        if self.attempts >= MAX_RETRIES || wait > MAX_RETRY_AFTER {
            return None;
        }
        self.attempts += 1;
        tracing::debug!(status = %response.status(), ?wait, attempt = self.attempts, "the server asked to retry later");
        Some(tokio::time::sleep(wait))
    }

    fn clone_request(&mut self, request: &Request<Body>) -> Option<Request<Body>> {
        let watch = request
            .uri()
            .query()
            .is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
        if watch {
            return None;
        }
        let body = request.body().try_clone()?;
        let mut copy = Request::new(body);
        *copy.method_mut() = request.method().clone();
        *copy.uri_mut() = request.uri().clone();
        *copy.version_mut() = request.version();
        *copy.headers_mut() = request.headers().clone();
        *copy.extensions_mut() = request.extensions().clone();
        Some(copy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(retry_after: &str) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        h.insert(
            http::header::RETRY_AFTER,
            http::HeaderValue::from_str(retry_after).unwrap(),
        );
        h
    }

    #[test]
    fn only_throttling_and_server_errors_with_retry_after_wait() {
        let one = Some(Duration::from_secs(1));
        assert_eq!(
            asked_wait(StatusCode::TOO_MANY_REQUESTS, &headers("1")),
            one
        );
        assert_eq!(
            asked_wait(StatusCode::SERVICE_UNAVAILABLE, &headers(" 1")),
            one
        );
        assert_eq!(
            asked_wait(StatusCode::INTERNAL_SERVER_ERROR, &headers("1")),
            one
        );
        assert_eq!(asked_wait(StatusCode::CONFLICT, &headers("1")), None);
        assert_eq!(
            asked_wait(StatusCode::TOO_MANY_REQUESTS, &http::HeaderMap::new()),
            None
        );
        // An HTTP date is not a number of seconds: no wait.
        assert_eq!(
            asked_wait(
                StatusCode::TOO_MANY_REQUESTS,
                &headers("Wed, 21 Oct 2015 07:28:00 GMT")
            ),
            None
        );
    }
}
