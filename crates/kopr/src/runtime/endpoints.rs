//! The health and metrics endpoints, as controller-runtime serves them: `--health-listen`
//! serves `/healthz` (the process is alive and its runtime is not wedged: a heartbeat task
//! ticks every second, and a beat older than 30 s fails the check) and `/readyz` (every
//! watched resource has been listed at least once, so the operator has caught up; a standby
//! is ready, as it only waits). `--metrics-listen` serves `/metrics` (see
//! [`crate::runtime::metrics`]). Both are plain HTTP and off unless asked for.
//!
//! The author adds checks of their own ([`Operator::liveness_check`](crate::Operator::liveness_check),
//! [`Operator::readiness_check`](crate::Operator::readiness_check), as controller-runtime's
//! `AddHealthzCheck`/`AddReadyzCheck` and Kopf's `on.probe`): a probe answers `ok` when kopr's
//! own check and every added one pass, else 500 (`/healthz`) or 503 (`/readyz`) with a line
//! per failed check, `[-]<name> failed: <reason>`, as kube-apiserver words them.
//!
//! ```no_run
//! # async fn run(client: kube::Client) -> Result<(), kopr::Error> {
//! kopr::Operator::new()
//!     .health_listen("0.0.0.0:8081".parse().unwrap())
//!     .metrics_listen("0.0.0.0:8080".parse().unwrap())
//!     .run_until(client, kopr::cli::shutdown_signal())
//!     .await
//! # }
//! ```
//!
//! The Deployment that [`Manifests`](crate::manifests::Manifests) generates passes both
//! flags and probes `/healthz` (liveness) and `/readyz` (readiness) on port 8081.
//!
//! # Caveats
//! The endpoints have no authentication or TLS: keep them on the pod network (or a
//! loopback address).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio_util::sync::CancellationToken;

use crate::handling::errors::Error;

/// The most a heartbeat may be late before `/healthz` fails.
const WEDGED_AFTER: Duration = Duration::from_secs(30);

/// A check the author added to a probe: its name and what it runs.
#[derive(Clone)]
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) run: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
}

impl Check {
    /// The check `name` running `check`, its error shown with `Display`.
    pub(crate) fn new<E: std::fmt::Display>(
        name: impl Into<String>,
        check: impl Fn() -> Result<(), E> + Send + Sync + 'static,
    ) -> Check {
        Check {
            name: name.into(),
            run: Arc::new(move || check().map_err(|e| e.to_string())),
        }
    }
}

impl std::fmt::Debug for Check {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Check({})", self.name)
    }
}

/// The checks the author added, by probe.
#[derive(Clone, Debug, Default)]
pub(crate) struct Checks {
    pub(crate) liveness: Vec<Check>,
    pub(crate) readiness: Vec<Check>,
}

/// The failures of `checks`, one line each, or `None` when all pass.
fn failures(checks: &[Check]) -> Option<String> {
    let lines: Vec<String> = checks
        .iter()
        .filter_map(|check| {
            (check.run)()
                .err()
                .map(|reason| format!("[-]{} failed: {reason}", check.name))
        })
        .collect();
    (!lines.is_empty()).then(|| lines.join("\n") + "\n")
}

/// What the probes report.
#[derive(Debug)]
pub struct Health {
    /// The author's checks.
    checks: Checks,
    started: Instant,
    /// Milliseconds since `started` of the last heartbeat.
    beat: AtomicU64,
    /// Resources not yet listed.
    unlisted: AtomicUsize,
    /// Standing by for leadership (ready, as it only waits).
    standby: AtomicBool,
}

impl Health {
    pub(crate) fn new(resources: usize, checks: Checks) -> Arc<Health> {
        Arc::new(Health {
            checks,
            started: Instant::now(),
            beat: AtomicU64::new(0),
            unlisted: AtomicUsize::new(resources),
            standby: AtomicBool::new(false),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// A resource's first listing is done.
    pub(crate) fn listed(&self) {
        let _ = self
            .unlisted
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }

    /// Standing by (or not) for leadership.
    pub(crate) fn standing_by(&self, standby: bool) {
        self.standby.store(standby, Ordering::SeqCst);
    }

    /// Whether the process is alive and not wedged.
    pub fn healthy(&self) -> bool {
        self.now_ms()
            .saturating_sub(self.beat.load(Ordering::SeqCst))
            < u64::try_from(WEDGED_AFTER.as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether the operator has caught up (or stands by).
    pub fn ready(&self) -> bool {
        self.standby.load(Ordering::SeqCst) || self.unlisted.load(Ordering::SeqCst) == 0
    }

    /// Ticks the heartbeat every second until `shutdown`.
    pub(crate) fn beat_until(self: &Arc<Self>, shutdown: CancellationToken) {
        let health = self.clone();
        tokio::spawn(async move {
            loop {
                health.beat.store(health.now_ms(), Ordering::SeqCst);
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    () = tokio::time::sleep(Duration::from_secs(1)) => {}
                }
            }
        });
    }
}

fn text(code: u16, content_type: &'static str, body: String) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    response
}

const PLAIN: &str = "text/plain; charset=utf-8";
const OPENMETRICS: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Answers one probe or scrape.
fn answer(path: &str, health: Option<&Health>, metrics: bool) -> http::Response<Full<Bytes>> {
    match (path, health) {
        ("/healthz" | "/livez", Some(h)) if !h.healthy() => {
            text(500, PLAIN, "the runtime is wedged".into())
        }
        ("/healthz" | "/livez", Some(h)) => match failures(&h.checks.liveness) {
            None => text(200, PLAIN, "ok".into()),
            Some(failed) => text(500, PLAIN, failed),
        },
        ("/readyz", Some(h)) if !h.ready() => {
            text(503, PLAIN, "watches are not caught up yet".into())
        }
        ("/readyz", Some(h)) => match failures(&h.checks.readiness) {
            None => text(200, PLAIN, "ok".into()),
            Some(failed) => text(503, PLAIN, failed),
        },
        ("/metrics", _) if metrics => {
            text(200, OPENMETRICS, crate::runtime::metrics::global().encode())
        }
        _ => text(404, PLAIN, "not found".into()),
    }
}

/// Serves the probes (with `health`) or the metrics on `listen` until `shutdown`; returns the
/// address bound.
///
/// # Errors
/// The address cannot be bound.
pub(crate) async fn serve(
    listen: SocketAddr,
    health: Option<Arc<Health>>,
    metrics: bool,
    shutdown: CancellationToken,
) -> Result<SocketAddr, Error> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                () = shutdown.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else { continue };
            let health = health.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(
                    move |request: http::Request<hyper::body::Incoming>| {
                        let response = answer(request.uri().path(), health.as_deref(), metrics);
                        async move { Ok::<_, std::convert::Infallible>(response) }
                    },
                );
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(address)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn readiness_waits_for_every_listing_unless_standing_by() {
        let health = Health::new(2, Checks::default());
        assert!(!health.ready());
        health.standing_by(true);
        assert!(health.ready());
        health.standing_by(false);
        health.listed();
        assert!(!health.ready());
        health.listed();
        assert!(health.ready());
        health.listed();
        assert!(health.ready(), "never below zero");
        assert!(health.healthy());
        assert_eq!(answer("/nothing", Some(&health), true).status(), 404);
        assert_eq!(answer("/metrics", Some(&health), false).status(), 404);
    }

    #[test]
    fn added_checks_fail_their_probe_with_their_reason() {
        let failing = Check {
            name: "database".into(),
            run: Arc::new(|| Err("connection refused".into())),
        };
        let passing = Check {
            name: "cache".into(),
            run: Arc::new(|| Ok(())),
        };
        let checks = Checks {
            liveness: vec![passing.clone()],
            readiness: vec![passing, failing],
        };
        let health = Health::new(0, checks);
        assert_eq!(answer("/healthz", Some(&health), false).status(), 200);
        let ready = answer("/readyz", Some(&health), false);
        assert_eq!(ready.status(), 503);
    }
}
