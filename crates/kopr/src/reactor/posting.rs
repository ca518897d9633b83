//! Posting: what the operator says about a handler's attempt, as a log line and, for
//! failures (and successes with [`Operator::success_events`](crate::Operator::success_events)), a Kubernetes Event on the
//! object.

use serde_json::Value;

use super::progression::Report;
use super::{ObjectKey, ResourceRuntime};
use crate::handling::context::Reason;
use crate::runtime::events::EventType;

/// Logs and posts `report` about handler `id`'s attempt on `body`.
pub(super) fn post(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Value,
    id: &str,
    reason: Reason,
    report: &Report,
) {
    let events = &runtime.shared.events;
    match report {
        Report::Succeeded => {
            tracing::info!(object = %key, handler = %id, reason = %reason, "Handler '{id}' succeeded.");
            if runtime.shared.settings.success_events {
                events.post(
                    body,
                    EventType::Normal,
                    "HandlerSucceeded",
                    &format!("Handler '{id}' succeeded."),
                );
            }
        }
        Report::Ignored(text) => {
            tracing::warn!(object = %key, handler = %id, "{text}");
            events.post(body, EventType::Warning, "HandlerFailed", text);
        }
        Report::Failed(text) => {
            tracing::error!(object = %key, handler = %id, "{text}");
            events.post(body, EventType::Warning, "HandlerFailed", text);
        }
        Report::Retrying(text) => {
            tracing::error!(object = %key, handler = %id, "{text}");
            events.post(body, EventType::Warning, "HandlerRetrying", text);
        }
    }
}
