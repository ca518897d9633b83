//! Execution: one handler call, in its own task (so that a panic is caught), inside its
//! span, bounded by its timeout. Returns the handler's result and the patch it built; what
//! the result means for the handler's progress is [`super::progression`]'s business.

use std::any::Any;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tracing::Instrument;

use super::{ObjectKey, ResourceRuntime};
use crate::handling::context::{RawContext, Reason};
use crate::handling::diff::Diff;
use crate::handling::errors::HandlerError;
use crate::handling::handlers::HandlerSpec;
use crate::handling::patch::Patch;

/// The typed object a handler sees, parsed once per cycle.
pub(crate) type Typed = Arc<dyn Any + Send + Sync>;

/// One handler call's inputs.
pub(crate) struct Call<'a> {
    pub(crate) handler: &'a HandlerSpec,
    pub(crate) reason: Reason,
    pub(crate) diff: Diff,
    pub(crate) old: Option<Value>,
    pub(crate) new: Option<Value>,
    pub(crate) event_type: Option<&'static str>,
    pub(crate) retry: u32,
    pub(crate) started: Timestamp,
    pub(crate) cancel: tokio_util::sync::CancellationToken,
    /// Where the handler's [`subhandler`](crate::Context::subhandler)s go (cause handlers
    /// only).
    pub(crate) subhandlers: Option<crate::handling::context::Registered>,
}

/// Runs a handler in its own task (so a panic is caught) inside its span, and returns its
/// result and the patch it built. `limit` bounds the attempt's duration.
pub(crate) async fn invoke(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Arc<Value>,
    typed: &Typed,
    call: Call<'_>,
) -> (Result<Value, HandlerError>, Value) {
    invoke_with_limit(runtime, key, body, typed, call, None).await
}

pub(crate) async fn invoke_with_limit(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Arc<Value>,
    typed: &Typed,
    call: Call<'_>,
    limit: Option<Duration>,
) -> (Result<Value, HandlerError>, Value) {
    let started = std::time::Instant::now();
    let (id, retry) = (call.handler.id.clone(), call.retry > 0);
    let (result, patch, outcome) = run(runtime, key, body, typed, call, limit).await;
    crate::runtime::metrics::global().handler_run(
        &runtime.label,
        &id,
        outcome,
        started.elapsed(),
        retry,
    );
    (result, patch)
}

/// The outcome label of a handler's result.
fn outcome(result: &Result<Value, HandlerError>) -> &'static str {
    match result {
        Ok(_) => "success",
        Err(HandlerError::Temporary(..)) => "temporary",
        Err(HandlerError::Permanent(_)) => "permanent",
        Err(_) => "error",
    }
}

async fn run(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Arc<Value>,
    typed: &Typed,
    call: Call<'_>,
    limit: Option<Duration>,
) -> (Result<Value, HandlerError>, Value, &'static str) {
    let span = tracing::info_span!(
        "handler",
        handler = %call.handler.id,
        kind = %runtime.api_resource().kind,
        object = %key,
        reason = %call.reason,
    );
    let patch = Patch::new();
    let shared = &runtime.shared;
    let context = RawContext {
        typed: typed.clone(),
        body: body.clone(),
        reason: call.reason,
        diff: call.diff,
        old: call.old,
        new: call.new,
        handler_id: call.handler.id.clone(),
        event_type: call.event_type,
        retry: call.retry,
        started: call.started,
        patch: patch.clone(),
        client: shared.client.clone(),
        span: span.clone(),
        cancel: call.cancel,
        subhandlers: call.subhandlers,
        memo: shared.memo.clone(),
        events: shared.events.clone(),
    };
    let future = (call.handler.func)(context);
    let task = tokio::spawn(crate::runtime::events::scope(
        shared.events.clone(),
        future.instrument(span),
    ));
    let abort = task.abort_handle();
    let joined = match limit {
        Some(limit) => match tokio::time::timeout(limit, task).await {
            Ok(joined) => joined,
            Err(_) => {
                abort.abort();
                return (
                    Err(HandlerError::permanent(format!(
                        "Handler '{}' has timed out after {limit:?}.",
                        call.handler.id
                    ))),
                    patch.to_value(),
                    "timeout",
                );
            }
        },
        None => task.await,
    };
    let mut panicked = false;
    let result = match joined {
        Ok(result) => result,
        Err(error) if error.is_panic() => {
            panicked = true;
            let payload = error.into_panic();
            let text = payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic".into());
            Err(HandlerError::message(format!("panicked: {text}")))
        }
        Err(_) => {
            // Only the runtime shutting down cancels the task (a timeout aborts it and returns
            // above): the process is going away, as in a crash, and the attempt has no outcome.
            // Recording one (a failure to retry after the backoff) would delay the handler after
            // the restart; the cycle waits to be dropped with the runtime instead.
            tracing::debug!(object = %key, handler = %call.handler.id, "handler task cancelled");
            let never: std::convert::Infallible = std::future::pending().await;
            match never {}
        }
    };
    // A value the handler's patch could not serialize fails an attempt that did not fail.
    let result = match (result, patch.error()) {
        (Ok(_), Some(error)) => Err(HandlerError::message(format!(
            "the handler's patch could not be serialized: {error}"
        ))),
        (result, _) => result,
    };
    let label = if panicked { "panic" } else { outcome(&result) };
    (result, patch.to_value(), label)
}
