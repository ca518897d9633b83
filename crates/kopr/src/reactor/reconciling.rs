//! The reconcile step of a cycle: once no cause handler is left for the object, runs the
//! resource's reconcile if it is due, works out when it is due next (a requeue, a backoff
//! after an error, or the next change), reports a failure, and sends the patch it built.
//!
//! Its write carries the body it expects back; a response showing nothing else changed is
//! kept (so the watch event of this write is stale and triggers nothing), anything else
//! (someone changed the object meanwhile) makes the reconcile due again.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tokio::time::Instant;

use super::invoke::{Call, Typed, invoke_with_limit};
use super::landing::{Landing, Then};
use super::outcome::Outcome;
use super::{ObjectKey, ResourceRuntime};
use crate::handling::context::Reason;
use crate::handling::diff::Diff;
use crate::handling::errors::HandlerError;
use crate::handling::patch::merge_into;
use crate::handling::reconcile::action_of;
use crate::runtime::events::EventType;

/// Runs the reconcile when it is due, then sends `patch` (the cycle's bookkeeping) with the
/// reconcile's own.
pub(super) async fn run(
    runtime: &Arc<ResourceRuntime>,
    key: &ObjectKey,
    body: &Arc<Value>,
    typed: &Typed,
    mut patch: Value,
) -> Outcome {
    let Some(spec) = &runtime.spec.reconcile else {
        return send(runtime, key, body, patch, None).await;
    };
    let failures = {
        let slots = runtime.slots();
        match slots.get(key) {
            Some(slot)
                if slot.reconcile_change().is_some()
                    || slot.reconcile_at().is_some_and(|at| at <= Instant::now()) =>
            {
                Some(slot.reconcile_failures)
            }
            _ => None,
        }
    };
    let Some(failures) = failures else {
        return send(runtime, key, body, patch, None).await;
    };
    if !spec.handler.filters.matches_object(body) {
        clear_due(runtime, key);
        return send(runtime, key, body, patch, None).await;
    }
    runtime.wait_synced().await;
    // Triggers from here on make it due again.
    clear_due(runtime, key);
    let handler = &spec.handler;
    let call = Call {
        handler,
        reason: Reason::Reconcile,
        diff: Diff::default(),
        old: None,
        new: None,
        event_type: None,
        retry: failures,
        started: Timestamp::now(),
        cancel: runtime.shared.shutdown.child_token(),
        subhandlers: None,
    };
    let limit = handler.options.timeout;
    let (result, own) = invoke_with_limit(runtime, key, body, typed, call, limit).await;
    merge_into(&mut patch, own);
    match result {
        Ok(value) => {
            let next = action_of(value).requeue_after();
            tracing::debug!(object = %key, handler = %handler.id, requeue = ?next, "reconciled");
            due_after(runtime, key, next, 0);
        }
        Err(error) => {
            let failures = failures.saturating_add(1);
            let delay = match &error {
                HandlerError::Permanent(_) => None,
                HandlerError::Temporary(_, delay) => Some(*delay),
                HandlerError::Other(_) => Some(super::error_backoff(
                    failures,
                    runtime.shared.settings.max_error_backoff,
                )),
            };
            let id = &handler.id;
            let text = match delay {
                Some(delay) => format!(
                    "Reconcile '{id}' failed: {}; retrying in {:.1} s.",
                    error.to_message(),
                    delay.as_secs_f64()
                ),
                None => format!(
                    "Reconcile '{id}' failed permanently: {}; waiting for a change.",
                    error.to_message()
                ),
            };
            tracing::error!(object = %key, handler = %id, "{text}");
            runtime
                .shared
                .events
                .post(body, EventType::Warning, "ReconcileFailed", &text);
            due_after(runtime, key, delay, failures);
        }
    }
    let mut expected = Value::clone(body);
    if patch.is_object() {
        json_patch::merge(&mut expected, &patch);
    }
    send(runtime, key, body, patch, Some(expected)).await
}

/// Makes the reconcile not due (a trigger from now on makes it due again).
fn clear_due(runtime: &ResourceRuntime, key: &ObjectKey) {
    if let Some(extra) = runtime
        .slots()
        .get_mut(key)
        .and_then(|slot| slot.extra_if_any())
    {
        extra.reconcile_at = None;
        extra.reconcile_change = None;
    }
}

/// After a run: records the failure count and makes the reconcile due `after` from now
/// (unless a trigger made it due earlier meanwhile).
fn due_after(runtime: &ResourceRuntime, key: &ObjectKey, after: Option<Duration>, failures: u32) {
    let mut slots = runtime.slots();
    let Some(slot) = slots.get_mut(key) else {
        return;
    };
    slot.reconcile_failures = failures;
    if let Some(after) = after {
        let at = Instant::now() + after;
        let extra = slot.extra_mut();
        extra.reconcile_at = Some(extra.reconcile_at.map_or(at, |due| due.min(at)));
    }
}

/// Sends the cycle's patch. With `expected` (the body as the reconcile's write should leave
/// it), a response showing only that is kept without another cycle.
async fn send(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Value,
    patch: Value,
    expected: Option<Value>,
) -> Outcome {
    let then = match expected {
        Some(expected) => Then::Reconciled(expected),
        None => Then::Rest,
    };
    Landing::new(runtime, body, patch, then)
        .land(runtime, key, body)
        .await
}
