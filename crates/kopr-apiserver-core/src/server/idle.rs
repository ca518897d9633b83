//! Idle connections, as Go's `http.Server{IdleTimeout}` and its HTTP/2
//! server's `IdleTimeout` in kube-apiserver (90 s): a connection with no
//! request in flight for that long is shut down gracefully (HTTP/2 GOAWAY,
//! HTTP/1.1 close). As in Go, a request in flight (a quiet watch) keeps its
//! connection however long it is silent, and HTTP/2 pings are not activity.
//! (Upgraded connections, exec and port-forward, leave hyper and this
//! accounting when they switch protocols.)

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::time::Instant;

/// What one connection is doing: when it last moved bytes, and how many
/// requests it has in flight.
pub struct Activity {
    base: Instant,
    last_ms: AtomicU64,
    in_flight: AtomicUsize,
}

impl Activity {
    /// A connection active now.
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            base: Instant::now(),
            last_ms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
        })
    }

    fn touch(&self) {
        let ms = self.base.elapsed().as_millis() as u64;
        self.last_ms.store(ms, Ordering::Relaxed);
    }

    fn last(&self) -> Instant {
        self.base + Duration::from_millis(self.last_ms.load(Ordering::Relaxed))
    }

    /// Marks a request in flight until the guard (kept by its response
    /// body) is dropped.
    pub fn begin(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::Relaxed);
        self.touch();
        InFlight(self.clone())
    }

    /// Resolves once the connection has been idle for `timeout`.
    pub async fn idle_for(&self, timeout: Duration) {
        loop {
            let deadline = self.last() + timeout;
            tokio::time::sleep_until(deadline).await;
            let quiet = self.last() + timeout <= Instant::now();
            if quiet && self.in_flight.load(Ordering::Relaxed) == 0 {
                return;
            }
            if quiet {
                // Busy with a silent request: look again a timeout later.
                self.touch();
            }
        }
    }
}

/// A request in flight.
pub struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A response body holding its request's [`InFlight`] until it ends, and
/// the request's unread body, if any (see [`super::early`]).
pub struct Tracked<B> {
    inner: B,
    _in_flight: InFlight,
    _unread: Option<super::early::Unread>,
}

impl<B> Tracked<B> {
    /// `inner`, counted in flight until dropped.
    pub fn new(inner: B, in_flight: InFlight, unread: Option<super::early::Unread>) -> Self {
        Tracked {
            inner,
            _in_flight: in_flight,
            _unread: unread,
        }
    }
}

impl<B: HttpBody<Data = Bytes> + Unpin> HttpBody for Tracked<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}
