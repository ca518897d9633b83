//! One cycle for one object: detect the cause, pick the next handler whose turn it is, run it,
//! and persist its outcome together with its patch in one request (plus `/status`).
//!
//! One handler runs per cycle and its outcome is written before the next one starts. A write
//! that fails is kept and sent again by the next cycle ([`landing`](super::landing)), so a
//! handler that succeeded never runs again for the same cause while the operator lives; across
//! a crash, only the attempt in flight and an outcome not yet written can repeat.
//!
//! A deletion is no exception: each delete handler's outcome is written with its progress
//! record before kopr's finalizer is released (one more write than the release alone), so an
//! operator killed between the two finds the handler finished after the restart and only
//! releases the finalizer.

use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::invoke::{Call, Typed, invoke};
use super::landing::{self, Landing, Then};
use super::outcome::is_deleting;
use super::outcome::{CycleError, Outcome};
use super::{ObjectKey, ResourceRuntime, background};
use crate::handling::context::Reason;
use crate::handling::diff::{Diff, diff, resolve};
use crate::handling::filters::FilterInput;
use crate::handling::handlers::{HandlerSpec, Trigger};
use crate::handling::patch::merge_into;
use crate::persistence::progress::{self, Progress};
use crate::persistence::storage::{self, essence, has_finalizer};
use crate::runtime::events::EventType;

/// One cycle's object: its key, its body and typed value, and what its slot remembers, read
/// once when the cycle starts.
struct Cycle<'a> {
    runtime: &'a Arc<ResourceRuntime>,
    key: &'a ObjectKey,
    body: Arc<Value>,
    typed: Typed,
    /// The diff base kept in memory for objects too large for the annotation.
    memory_diff_base: Option<Value>,
    /// Whether resume handlers are due (first cycle since the operator started).
    resume_due: bool,
}

/// A handler chosen for this cycle with its view of the change.
struct Selected<'a> {
    handler: &'a HandlerSpec,
    reason: Reason,
    diff: Diff,
    old: Option<Value>,
    new: Option<Value>,
}

/// How a fully handled cause is closed.
enum Finish {
    /// Store the diff base (when `write`) and clear the progress records.
    DiffBase { write: bool },
    /// Remove kopr's finalizer so the object can go.
    RemoveFinalizer,
}

/// Runs one cycle for `body`.
pub(crate) async fn run(
    runtime: &Arc<ResourceRuntime>,
    key: &ObjectKey,
    body: Arc<Value>,
    deleted: bool,
) -> Outcome {
    let unlanded = landing::take(runtime, key, &body);
    if deleted {
        background::stop_all(runtime, key).await;
        run_optional_deletes(runtime, key, &body).await;
        return Outcome::Done;
    }
    if let Some(unlanded) = unlanded {
        // The last cycle's outcome did not land whole: finish it before judging the object.
        return unlanded.land(runtime, key, &body).await;
    }
    let typed = match (runtime.spec.parse)(&body) {
        Ok(typed) => typed,
        Err(message) => return report_parse_error(runtime, key, &body, message).await,
    };
    let (had_parse_error, memory_diff_base, resume_due) = match runtime.slots().get_mut(key) {
        Some(slot) => (
            slot.extra_if_any()
                .and_then(|extra| extra.reported_parse_error.take())
                .is_some(),
            slot.extra()
                .and_then(|extra| extra.memory_diff_base.clone()),
            slot.resume_due,
        ),
        None => (false, None, false),
    };
    let mut patch = Value::Null;
    for path in runtime.shared.settings.identity.status_paths() {
        let reported = body
            .pointer(&storage::pointer(path, "message"))
            .is_some_and(|m| !m.is_null());
        if had_parse_error || reported {
            merge_into(&mut patch, storage::nest(path, json!({"message": null})));
        }
    }
    let cycle = Cycle {
        runtime,
        key,
        body,
        typed,
        memory_diff_base,
        resume_due,
    };
    if is_deleting(&cycle.body) {
        return cycle.deletion(patch).await;
    }
    let needs = needs_finalizer(runtime, &cycle.body);
    let identity = &runtime.shared.settings.identity;
    if storage::finalizer_outdated(identity, &cycle.body, needs) {
        let operations = storage::finalizer_patch(identity, &cycle.body, needs);
        return match runtime.apply_json(key, operations).await {
            Ok(Some(new)) => Outcome::Continue(new),
            Ok(None) => Outcome::Gone,
            Err(source) => Outcome::Failed(CycleError::Finalizer {
                action: "updating",
                source,
            }),
        };
    }
    background::reconcile(runtime, key, &cycle.body);
    cycle.changes(patch).await
}

/// Whether some delete handler, timer or daemon that applies to the object needs the finalizer.
fn needs_finalizer(runtime: &ResourceRuntime, body: &Value) -> bool {
    let spec = &runtime.spec;
    spec.handlers.iter().any(|h| {
        matches!(h.trigger, Trigger::Delete { optional: false }) && h.filters.matches_object(body)
    }) || spec
        .timers
        .iter()
        .any(|t| t.handler.filters.matches_object(body))
        || spec
            .daemons
            .iter()
            .any(|d| d.handler.filters.matches_object(body))
}

async fn report_parse_error(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Value,
    message: String,
) -> Outcome {
    {
        let mut slots = runtime.slots();
        let Some(slot) = slots.get_mut(key) else {
            return Outcome::Done;
        };
        let extra = slot.extra_mut();
        if extra.reported_parse_error.as_deref() == Some(message.as_str()) {
            return Outcome::Done;
        }
        extra.reported_parse_error = Some(message.clone());
    }
    let text = format!("The object cannot be handled: {message}");
    tracing::error!(object = %key, kind = %runtime.api_resource().kind, "{text}");
    runtime
        .shared
        .events
        .post(body, EventType::Warning, "InvalidObject", &text);
    let own = &runtime.shared.settings.identity.status_paths()[0];
    let status = storage::nest(own, json!({"message": text}));
    send(runtime, key, body, status, false).await
}

impl Cycle<'_> {
    /// The create/update/resume part of a cycle.
    async fn changes(&self, patch: Value) -> Outcome {
        let (runtime, key, body) = (self.runtime, self.key, &self.body);
        let causes = runtime.spec.handlers.iter().any(|h| {
            matches!(
                h.trigger,
                Trigger::Create | Trigger::Update | Trigger::Field(_) | Trigger::Resume { .. }
            )
        });
        if !causes {
            // Nothing to diff: a reconcile alone (or only delete and event handlers).
            return super::reconciling::run(runtime, key, body, &self.typed, patch).await;
        }
        let (storage, identity) = (
            runtime.shared.settings.storage,
            &runtime.shared.settings.identity,
        );
        let essence = essence(identity, body);
        let stored = storage::read_diff_base(identity, storage, body)
            .or_else(|| self.memory_diff_base.clone());
        let resume_due = self.resume_due;
        let cause = match &stored {
            None => Some(Reason::Create),
            Some(base) if *base != essence => Some(Reason::Update),
            Some(_) => None,
        };
        let full_diff = match cause {
            Some(_) => diff(stored.as_ref(), Some(&essence)),
            None => Diff::default(),
        };
        let mut selected = Vec::new();
        for handler in &runtime.spec.handlers {
            let choice = match (&handler.trigger, cause) {
                (Trigger::Create, Some(Reason::Create)) => Some((
                    Reason::Create,
                    full_diff.clone(),
                    None,
                    Some(essence.clone()),
                )),
                (Trigger::Update, Some(Reason::Update)) => Some((
                    Reason::Update,
                    full_diff.clone(),
                    stored.clone(),
                    Some(essence.clone()),
                )),
                (Trigger::Field(path), Some(reason)) => {
                    let relative = full_diff.relative_to(path);
                    (!relative.is_empty()).then(|| {
                        let old = stored.as_ref().and_then(|b| resolve(b, path)).cloned();
                        let new = resolve(&essence, path).cloned();
                        (reason, relative, old, new)
                    })
                }
                // A new object is created, never resumed (even when first seen in a listing).
                (Trigger::Resume { .. }, cause) if resume_due && cause != Some(Reason::Create) => {
                    Some((Reason::Resume, Diff::default(), None, Some(essence.clone())))
                }
                _ => None,
            };
            if let Some((reason, diff, old, new)) = choice {
                let input = FilterInput {
                    body,
                    old: old.as_ref(),
                    new: new.as_ref(),
                    diff: &diff,
                };
                if handler.filters.matches(&input) {
                    selected.push(Selected {
                        handler,
                        reason,
                        diff,
                        old,
                        new,
                    });
                }
            }
        }
        let tracks_changes = runtime.spec.handlers.iter().any(|h| {
            matches!(
                h.trigger,
                Trigger::Create | Trigger::Update | Trigger::Field(_)
            ) && h.filters.matches_object(body)
        });
        if selected.is_empty() && (cause.is_none() || !tracks_changes) {
            if let Some(slot) = runtime.slots().get_mut(key) {
                slot.resume_due = false;
            }
            // No cause handler is left: the reconcile's turn, if it is due.
            return super::reconciling::run(runtime, key, body, &self.typed, patch).await;
        }
        let finish = Finish::DiffBase {
            write: cause.is_some() && tracks_changes,
        };
        self.run_selected(selected, patch, finish).await
    }

    /// The deletion part of a cycle: stop timers and daemons, run delete handlers, release the
    /// finalizer.
    async fn deletion(&self, patch: Value) -> Outcome {
        let (runtime, key, body) = (self.runtime, self.key, &self.body);
        background::stop_all(runtime, key).await;
        if !has_finalizer(&runtime.shared.settings.identity, body) {
            run_optional_deletes(runtime, key, body).await;
            return send(runtime, key, body, patch, false).await;
        }
        let resume_due = self.resume_due;
        let empty = Diff::default();
        let selected: Vec<Selected> = runtime
            .spec
            .handlers
            .iter()
            .filter_map(|handler| {
                let reason = match handler.trigger {
                    Trigger::Delete { .. } => Reason::Delete,
                    Trigger::Resume { deleted: true } if resume_due => Reason::Resume,
                    _ => return None,
                };
                let input = FilterInput {
                    body,
                    old: None,
                    new: None,
                    diff: &empty,
                };
                handler.filters.matches(&input).then(|| Selected {
                    handler,
                    reason,
                    diff: Diff::default(),
                    old: None,
                    new: None,
                })
            })
            .collect();
        self.run_selected(selected, patch, Finish::RemoveFinalizer)
            .await
    }
}

/// Runs optional delete handlers once, best effort, for an object leaving without a finalizer.
async fn run_optional_deletes(runtime: &Arc<ResourceRuntime>, key: &ObjectKey, body: &Arc<Value>) {
    let due = {
        let mut slots = runtime.slots();
        match slots.get_mut(key) {
            Some(slot) if !slot.optional_deletes_done => {
                slot.optional_deletes_done = true;
                true
            }
            _ => false,
        }
    };
    let optional: Vec<&HandlerSpec> = runtime
        .spec
        .handlers
        .iter()
        .filter(|h| matches!(h.trigger, Trigger::Delete { optional: true }))
        .filter(|h| h.filters.matches_object(body))
        .collect();
    if !due || optional.is_empty() {
        return;
    }
    let Ok(typed) = (runtime.spec.parse)(body) else {
        return;
    };
    for handler in optional {
        let call = Call {
            handler,
            reason: Reason::Delete,
            diff: Diff::default(),
            old: None,
            new: None,
            event_type: None,
            retry: 0,
            started: Timestamp::now(),
            cancel: runtime.shared.shutdown.child_token(),
            subhandlers: None,
        };
        let (result, _) = invoke(runtime, key, body, &typed, call).await;
        if let Err(error) = result {
            tracing::warn!(object = %key, handler = %handler.id, %error, "optional delete handler failed");
        }
    }
}

impl Cycle<'_> {
    /// Picks the next handler whose turn it is, runs it, and persists the outcome.
    async fn run_selected(
        &self,
        selected: Vec<Selected<'_>>,
        mut patch: Value,
        finish: Finish,
    ) -> Outcome {
        let (runtime, key, body) = (self.runtime, self.key, &self.body);
        let (storage, identity) = (
            runtime.shared.settings.storage,
            &runtime.shared.settings.identity,
        );
        let now = Timestamp::now();
        let mut records: Vec<Progress> = selected
            .iter()
            .map(|s| progress::read(identity, storage, body, &s.handler.id))
            .collect();
        let next = (0..selected.len()).find(|&i| records[i].is_ready(now));
        if let Some(index) = next {
            let chosen = &selected[index];
            let (record, result, handler_patch) = self.execute(chosen, &records[index]).await;
            merge_into(&mut patch, handler_patch);
            if let Some(stored) = result.and_then(|r| runtime.result_patch(&chosen.handler.id, r)) {
                merge_into(&mut patch, stored);
            }
            records[index] = record;
        } else if let Some(earliest) = records
            .iter()
            .filter(|r| !r.is_finished())
            .filter_map(|r| r.delayed)
            .min()
        {
            let wait = Duration::try_from(earliest.duration_since(now)).unwrap_or_default();
            return Outcome::WakeAfter(wait);
        }
        let finished = records.iter().all(Progress::is_finished);
        // The record of the handler that ran goes with its outcome while handlers are left,
        // and always on a deletion, whose records are never purged: a delete handler's success
        // lands before the finalizer is released, so that an operator killed in between finds
        // it finished after the restart and only releases the finalizer.
        let deleting = matches!(finish, Finish::RemoveFinalizer);
        if let Some(index) = next.filter(|_| !finished || deleting) {
            let id = &selected[index].handler.id;
            merge_into(
                &mut patch,
                progress::write_patch(identity, storage, body, id, &records[index]),
            );
        }
        if !finished {
            return send(runtime, key, body, patch, true).await;
        }
        match finish {
            Finish::DiffBase { write } => {
                let ids = selected.iter().map(|s| s.handler.id.as_str());
                let purge = progress::purge_patch(identity, storage, body, &patch, ids);
                merge_into(&mut patch, purge);
                let stored = write.then(|| store_diff_base(runtime, key, body, &mut patch));
                if let Some(slot) = runtime.slots().get_mut(key) {
                    slot.resume_due = false;
                }
                let then = match stored {
                    Some(stored) => Then::Handled(stored),
                    None => Then::Again,
                };
                Landing::new(runtime, body, patch, then)
                    .land(runtime, key, body)
                    .await
            }
            Finish::RemoveFinalizer => {
                // The finalizer goes once the handlers' outcomes (and records) landed.
                Landing::new(runtime, body, patch, Then::ReleaseFinalizer)
                    .land(runtime, key, body)
                    .await
            }
        }
    }

    /// Runs the chosen change handler and its subhandlers (execution), works out its new
    /// progress record (progression) and reports the attempt (posting).
    async fn execute(
        &self,
        chosen: &Selected<'_>,
        record: &Progress,
    ) -> (Progress, Option<Value>, Value) {
        let target = super::execution::Target {
            runtime: self.runtime,
            key: self.key,
            body: &self.body,
            typed: &self.typed,
            reason: chosen.reason,
            diff: &chosen.diff,
            old: chosen.old.as_ref(),
            new: chosen.new.as_ref(),
        };
        let done = super::execution::execute(&target, chosen.handler, record, 0).await;
        (done.record, done.value, done.patch)
    }
}

/// Adds the diff base to `patch`: the essence of the object as it will be after the patch, so a
/// handler's own label or spec changes do not look like a user's update. Returns that essence.
fn store_diff_base(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Value,
    patch: &mut Value,
) -> Value {
    let storage = runtime.shared.settings.storage;
    let mut after = body.clone();
    if patch.is_object() {
        json_patch::merge(&mut after, patch);
    }
    let identity = &runtime.shared.settings.identity;
    let essence = essence(identity, &after);
    match storage::write_diff_base(identity, storage, body, &essence) {
        Some(write) => {
            merge_into(patch, write);
            if let Some(extra) = runtime
                .slots()
                .get_mut(key)
                .and_then(|slot| slot.extra_if_any())
            {
                extra.memory_diff_base = None;
            }
        }
        None => {
            let first = {
                let mut slots = runtime.slots();
                let slot = slots.get_mut(key);
                match slot {
                    Some(slot) => slot
                        .extra_mut()
                        .memory_diff_base
                        .replace(essence.clone())
                        .is_none(),
                    None => false,
                }
            };
            if first {
                let text = "The object is too large to keep its last handled state in an \
                            annotation; it is kept in memory, so changes made while the operator \
                            is down are seen as a new creation after a restart.";
                tracing::warn!(object = %key, "{text}");
                runtime
                    .shared
                    .events
                    .post(body, EventType::Warning, "DiffBaseTooLarge", text);
            }
        }
    }
    essence
}

/// Sends the cycle's merge patch. With `again`, the next cycle runs on the patched body right
/// away (more handlers may be due); otherwise the object waits for its next event.
async fn send(
    runtime: &ResourceRuntime,
    key: &ObjectKey,
    body: &Value,
    patch: Value,
    again: bool,
) -> Outcome {
    let then = if again { Then::Again } else { Then::Rest };
    Landing::new(runtime, body, patch, then)
        .land(runtime, key, body)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::persistence::identity::Identity;
    use crate::reactor::outcome::after_diff_base;

    #[test]
    fn a_cycle_after_the_diff_base_runs_only_when_someone_else_changed_the_object() {
        let stored = json!({"spec": {"message": "a"}});
        let response = |message: &str| {
            json!({"metadata": {"name": "w", "resourceVersion": "9"},
                   "spec": {"message": message}, "status": {"kopr": {}}})
        };
        assert!(matches!(
            after_diff_base(
                &Identity::default(),
                Some(&stored),
                Outcome::Continue(response("a"))
            ),
            Outcome::Handled(_)
        ));
        assert!(matches!(
            after_diff_base(
                &Identity::default(),
                Some(&stored),
                Outcome::Continue(response("b"))
            ),
            Outcome::Continue(_)
        ));
        assert!(
            matches!(
                after_diff_base(&Identity::default(), None, Outcome::Continue(response("a"))),
                Outcome::Continue(_)
            ),
            "without a stored diff base the next cycle decides"
        );
        assert!(matches!(
            after_diff_base(&Identity::default(), Some(&stored), Outcome::Done),
            Outcome::Done
        ));
        let mut deleting = response("a");
        deleting["metadata"]["deletionTimestamp"] = json!("2026-11-25T07:16:21Z");
        assert!(
            matches!(
                after_diff_base(
                    &Identity::default(),
                    Some(&stored),
                    Outcome::Continue(deleting)
                ),
                Outcome::Continue(_)
            ),
            "a deletion that started meanwhile gets its cycle"
        );
    }
}
