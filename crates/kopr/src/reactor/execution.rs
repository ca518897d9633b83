//! Executing a chosen cause handler and its subhandlers, as Kopf does: the handler runs, and
//! the subhandlers it registered with [`Context::subhandler`](crate::Context::subhandler) run
//! after it, within the same cause, one per cycle, each with its own progress record (id
//! `parent/child`). The handler is called again on each cycle until its subhandlers are done
//! (so it registers them again), and is done itself once they all succeeded; a subhandler that
//! failed for good fails it. Subhandlers may register their own.
//!
//! Execution here; what a result means for the records is [`super::progression`]'s, what is
//! said about it [`super::posting`]'s.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use jiff::Timestamp;
use serde_json::Value;

use super::invoke::{Call, Typed, invoke_with_limit};
use super::progression::{self, Report};
use super::{ObjectKey, ResourceRuntime, posting};
use crate::handling::context::Reason;
use crate::handling::diff::Diff;
use crate::handling::handlers::HandlerSpec;
use crate::handling::patch::merge_into;
use crate::persistence::progress::{self, Progress};

/// How deep subhandlers may nest.
const MAX_DEPTH: u8 = 8;

/// The object and cause a handler runs for.
pub(super) struct Target<'a> {
    pub(super) runtime: &'a Arc<ResourceRuntime>,
    pub(super) key: &'a ObjectKey,
    pub(super) body: &'a Arc<Value>,
    pub(super) typed: &'a Typed,
    pub(super) reason: Reason,
    pub(super) diff: &'a Diff,
    pub(super) old: Option<&'a Value>,
    pub(super) new: Option<&'a Value>,
}

/// What one execution gives: the handler's next record, its value when it succeeded, and the
/// patch to send (its own changes, its subhandlers' records and results).
pub(super) struct Executed {
    pub(super) record: Progress,
    pub(super) value: Option<Value>,
    pub(super) patch: Value,
}

/// Runs `handler` (whose record is `record`) and, when it registers subhandlers, the first of
/// them whose turn it is.
pub(super) fn execute<'a>(
    target: &'a Target<'a>,
    handler: &'a HandlerSpec,
    record: &'a Progress,
    depth: u8,
) -> BoxFuture<'a, Executed> {
    Box::pin(async move {
        let options = &handler.options;
        let now = Timestamp::now();
        let started = record.started.unwrap_or(now);
        let elapsed = Duration::try_from(now.duration_since(started)).unwrap_or_default();
        let limit = options.timeout.map(|t| t.saturating_sub(elapsed));
        let registered: crate::handling::context::Registered = Arc::default();
        let call = Call {
            handler,
            reason: target.reason,
            diff: target.diff.clone(),
            old: target.old.cloned(),
            new: target.new.cloned(),
            event_type: None,
            retry: record.retries,
            started,
            cancel: target.runtime.shared.shutdown.child_token(),
            subhandlers: (depth < MAX_DEPTH).then(|| registered.clone()),
        };
        let (runtime, key, body) = (target.runtime, target.key, target.body);
        let (result, patch) =
            invoke_with_limit(runtime, key, body, target.typed, call, limit).await;
        let subhandlers = crate::handling::handlers::registered(&registered);
        match result {
            Ok(value) if !subhandlers.is_empty() => {
                let parent = Parent {
                    handler,
                    record,
                    started,
                    value,
                };
                with_subhandlers(target, parent, subhandlers, patch, depth).await
            }
            result => {
                let step = progression::progress(
                    options,
                    &handler.id,
                    record,
                    started,
                    result,
                    Timestamp::now(),
                );
                let report = &step.report;
                posting::post(runtime, key, body, &handler.id, target.reason, report);
                Executed {
                    record: step.record,
                    value: step.value,
                    patch,
                }
            }
        }
    })
}

/// A handler that returned and registered subhandlers.
struct Parent<'a> {
    handler: &'a HandlerSpec,
    record: &'a Progress,
    started: Timestamp,
    value: Value,
}

/// Runs the first subhandler whose turn it is, and works out where the parent stands.
async fn with_subhandlers(
    target: &Target<'_>,
    parent: Parent<'_>,
    subhandlers: Vec<HandlerSpec>,
    mut patch: Value,
    depth: u8,
) -> Executed {
    let runtime = target.runtime;
    let (storage, identity) = (
        runtime.shared.settings.storage,
        &runtime.shared.settings.identity,
    );
    let now = Timestamp::now();
    let mut records: Vec<Progress> = subhandlers
        .iter()
        .map(|s| progress::read(identity, storage, target.body, &s.id))
        .collect();
    if let Some(index) = (0..subhandlers.len()).find(|&i| records[i].is_ready(now)) {
        let sub = &subhandlers[index];
        let done = execute(target, sub, &records[index], depth + 1).await;
        merge_into(&mut patch, done.patch);
        if let Some(stored) = done.value.and_then(|v| runtime.result_patch(&sub.id, v)) {
            merge_into(&mut patch, stored);
        }
        merge_into(
            &mut patch,
            progress::write_patch(identity, storage, target.body, &sub.id, &done.record),
        );
        records[index] = done.record;
    }
    let id = &parent.handler.id;
    let mut record = Progress {
        started: Some(parent.started),
        ..parent.record.clone()
    };
    let failed: Vec<&str> = subhandlers
        .iter()
        .zip(&records)
        .filter(|(_, r)| r.failure)
        .map(|(s, _)| s.id.as_str())
        .collect();
    let finished_at = Timestamp::now();
    let report = if !failed.is_empty() {
        let message = format!("subhandlers failed: {}", failed.join(", "));
        record.failure = true;
        record.stopped = Some(finished_at);
        record.delayed = None;
        record.message = Some(message.clone());
        Some(Report::Failed(format!("Handler '{id}' failed: {message}")))
    } else if records.iter().all(Progress::is_finished) {
        record.success = true;
        record.stopped = Some(finished_at);
        record.delayed = None;
        record.message = None;
        Some(Report::Succeeded)
    } else {
        // Called again at once when a subhandler is ready, else when the first one will be.
        record.delayed = match records.iter().any(|r| r.is_ready(finished_at)) {
            true => None,
            false => records
                .iter()
                .filter(|r| !r.is_finished())
                .filter_map(|r| r.delayed)
                .min(),
        };
        None
    };
    if let Some(report) = &report {
        posting::post(runtime, target.key, target.body, id, target.reason, report);
    }
    let value = record.success.then_some(parent.value);
    Executed {
        record,
        value,
        patch,
    }
}
