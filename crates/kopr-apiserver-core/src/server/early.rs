//! Answers given before the request body is read, over HTTP/2.
//!
//! A handler may answer without reading all of the body (413 for a body over
//! the limit, 401/403, 429, 415). Over HTTP/2 the unread body must then be
//! refused only after the whole answer is on its way: RFC 9113 §8.1 has the
//! server send its response and then `RST_STREAM(NO_ERROR)`, which is what
//! Go's server (so kube-apiserver) does. The `h2` crate sends `NO_ERROR` when
//! the request body is dropped after the response has ended, but `CANCEL`
//! when it is dropped before; a client then loses the answer to a stream
//! error. So the request body is shared between the handler and the response
//! body, and released when the last of them is gone: never before the
//! response's final frame is queued. Then what is left of it (up to
//! [`DRAIN_BYTES`], for [`DRAIN_TIME`]) is read and discarded, so that a
//! client still sending finishes its stream normally.

use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};

use bytes::Bytes;
use hyper::body::{Body as HttpBody, Frame, Incoming, SizeHint};

/// The request body as the handler reads it.
pub struct Shared(Arc<Mutex<Incoming>>);

/// What the response body keeps of its request's body, until it is dropped.
pub struct Unread(Option<Arc<Mutex<Incoming>>>);

/// How much of an unread body is read and thrown away after the answer, so
/// the client's stream ends as it sent it (curl 7.x drops an answer that a
/// `RST_STREAM` follows while it is still sending); beyond it, the rest is
/// refused with `RST_STREAM(NO_ERROR)`.
const DRAIN_BYTES: usize = 8 * 1024 * 1024;
/// How long the draining may take.
const DRAIN_TIME: std::time::Duration = std::time::Duration::from_secs(5);

impl Drop for Unread {
    fn drop(&mut self) {
        let Some(shared) = self.0.take() else { return };
        // Still read by the handler (a stream it keeps): it drops the body itself.
        let Ok(mutex) = Arc::try_unwrap(shared) else {
            return;
        };
        let body = mutex
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if body.is_end_stream() {
            return;
        }
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let mut body = body;
            let drain = async {
                let mut read = 0usize;
                while let Some(Ok(frame)) = http_body_util::BodyExt::frame(&mut body).await {
                    read += frame.data_ref().map_or(0, |d| d.len());
                    if read > DRAIN_BYTES {
                        break;
                    }
                }
            };
            let _ = tokio::time::timeout(DRAIN_TIME, drain).await;
        });
    }
}

/// Shares `body` between the handler and its response, when it has anything
/// left to read; a request without a body (most GETs) is passed as it is.
pub fn share(body: Incoming) -> Result<(Shared, Unread), Incoming> {
    if body.is_end_stream() {
        return Err(body);
    }
    let body = Arc::new(Mutex::new(body));
    Ok((Shared(body.clone()), Unread(Some(body))))
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Incoming> {
        // Only ever locked for a poll, which cannot panic while holding it;
        // a poisoned lock still holds a usable body.
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

impl HttpBody for Shared {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut *self.lock()).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.lock().is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.lock().size_hint()
    }
}
