//! A cycle's outcome on its way to the server: the writes that record what a handler did (its
//! patch, result, progress, the diff base, the release of kopr's finalizer). When a write fails,
//! what is left of it stays in the object's slot and the next cycle sends it again instead of
//! judging the object afresh, so a handler that succeeded is not run again because its outcome
//! was lost on the way, and an outcome that landed half (the `/status` part but not the
//! object's) is completed, never mistaken for a new cause.
//!
//! # Guarantees
//! - While the operator process lives, a handler that returned runs again for the same cause
//!   only if its own result asks for it (an error to retry): failed outcome writes are retried
//!   with the per-object backoff until they land or the object is gone.
//! - The merge patches are absolute (values, not edits), so sending them again on a newer body
//!   is their rebase; the finalizer's JSON patch is guarded by a resourceVersion test and is
//!   rebuilt on the newest body when that test fails.
//! - A restart loses what was not written: the attempt in flight and an outcome not yet landed
//!   may run again after a crash (at-least-once).
//! - The release of the finalizer follows the delete handlers' outcomes and progress records:
//!   a delete handler whose success landed is not run again after a crash.

use serde_json::Value;

use super::outcome::{CycleError, Outcome, after_diff_base};
use super::patching::Sent;
use super::{ObjectKey, ResourceRuntime, latest};
use crate::persistence::storage::{self, has_finalizer};

/// What the cycle does once its writes landed.
#[derive(Debug, Clone)]
pub(crate) enum Then {
    /// Another cycle runs on the patched body right away (more handlers may be due).
    Again,
    /// The object waits for its next event.
    Rest,
    /// The cause is fully handled and this essence was stored as its diff base.
    Handled(Value),
    /// The deletion is handled: release kopr's finalizer.
    ReleaseFinalizer,
    /// The reconcile ran; the object should now read as this body (but for versions).
    Reconciled(Value),
}

/// The writes of one cycle that have not landed yet.
#[derive(Debug)]
pub(crate) struct Landing {
    /// The object these writes belong to (a new object under the same name drops them).
    uid: Option<String>,
    /// The `/status` merge patch (`{"status": …}`), until it lands.
    status: Option<Value>,
    /// The object's merge patch, until it lands.
    main: Option<Value>,
    then: Then,
}

impl Landing {
    /// The writes of a cycle on `body`: `patch` (split for `/status`) and what follows.
    pub(crate) fn new(runtime: &ResourceRuntime, body: &Value, patch: Value, then: Then) -> Self {
        let (status, main) = runtime.split_merge(patch);
        Landing {
            uid: latest::uid(body).map(str::to_owned),
            status,
            main,
            then,
        }
    }

    /// Whether these writes belong to the object `body` is (same uid).
    pub(crate) fn belongs_to(&self, body: &Value) -> bool {
        self.uid.as_deref() == latest::uid(body)
    }

    /// Sends what is left, then does what follows. On an API error, what is still left is kept
    /// in the object's slot for the next cycle.
    pub(crate) async fn land(
        mut self,
        runtime: &ResourceRuntime,
        key: &ObjectKey,
        body: &Value,
    ) -> Outcome {
        let sent = match runtime
            .send_parts(key, &mut self.status, &mut self.main)
            .await
        {
            Ok(sent) => sent,
            Err(error) => {
                self.keep(runtime, key);
                return Outcome::Failed(CycleError::Patch(error));
            }
        };
        match (&self.then, sent) {
            // At rest: the response is not kept, so that a change made by someone else before
            // this write (its watch event older than the response) still gets its cycle.
            (_, Sent::Gone) => Outcome::Gone,
            (Then::Rest, _) | (Then::Again | Then::Handled(_), Sent::Nothing) => Outcome::Done,
            (Then::Again, Sent::Body(new)) => Outcome::Continue(new),
            (Then::Handled(stored), Sent::Body(new)) => after_diff_base(
                &runtime.shared.settings.identity,
                Some(stored),
                Outcome::Continue(new),
            ),
            (Then::ReleaseFinalizer, Sent::Body(new)) => self.release(runtime, key, &new).await,
            (Then::Reconciled(_), Sent::Nothing) => Outcome::Done,
            (Then::Reconciled(expected), Sent::Body(new)) => {
                if super::outcome::only_ours(expected, &new) {
                    // The watch event of this write may have come in already.
                    runtime.forget_own_change(key, &new);
                    Outcome::Handled(new)
                } else {
                    // Someone else's change came in meanwhile (its own watch event is older
                    // than this response, so dropped as stale): it gets its reconcile.
                    runtime.reconcile_due(key, expected, &new);
                    Outcome::Continue(new)
                }
            }
            (Then::ReleaseFinalizer, Sent::Nothing) => self.release(runtime, key, body).await,
        }
    }

    /// Removes kopr's finalizer from the object as `current` shows it; when the resourceVersion
    /// test fails (the object changed since), rebuilds the patch on a fresh read once.
    async fn release(self, runtime: &ResourceRuntime, key: &ObjectKey, current: &Value) -> Outcome {
        let mut current = current.clone();
        for attempt in 0..2 {
            let identity = &runtime.shared.settings.identity;
            if !has_finalizer(identity, &current) {
                return Outcome::Done;
            }
            let operations = storage::finalizer_patch(identity, &current, false);
            let error = match runtime.apply_json(key, operations).await {
                // The released (or last) body is kept: a late watch event of this cycle's own
                // writes, still showing the finalizer, is then stale and cannot start the
                // deletion again.
                Ok(Some(released)) => return Outcome::Handled(released),
                Ok(None) => return Outcome::Gone,
                Err(error) => error,
            };
            let stale = matches!(&error, kube::Error::Api(s) if s.code == 409 || s.code == 422);
            if attempt == 0 && stale {
                match runtime.read_fresh(key).await {
                    Ok(Some(fresh)) if self.belongs_to(&fresh) => {
                        current = fresh;
                        continue;
                    }
                    Ok(Some(_)) | Ok(None) => return Outcome::Gone,
                    Err(error) => return self.failed_release(runtime, key, error),
                }
            }
            return self.failed_release(runtime, key, error);
        }
        Outcome::Done
    }

    fn failed_release(
        self,
        runtime: &ResourceRuntime,
        key: &ObjectKey,
        source: kube::Error,
    ) -> Outcome {
        self.keep(runtime, key);
        Outcome::Failed(CycleError::Finalizer {
            action: "removing",
            source,
        })
    }

    /// Puts what is left into the object's slot.
    fn keep(self, runtime: &ResourceRuntime, key: &ObjectKey) {
        match runtime.slots().get_mut(key) {
            Some(slot) => slot.extra_mut().landing = Some(self),
            None => tracing::debug!(object = %key, "no slot to keep an unlanded outcome in"),
        }
    }
}

/// Takes the writes a failed cycle left for the object, if they belong to `body`'s object.
pub(crate) fn take(runtime: &ResourceRuntime, key: &ObjectKey, body: &Value) -> Option<Landing> {
    let landing = runtime
        .slots()
        .get_mut(key)?
        .extra_if_any()?
        .landing
        .take()?;
    if !landing.belongs_to(body) {
        tracing::debug!(object = %key, "an unlanded outcome of an earlier object dropped");
        return None;
    }
    Some(landing)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn writes_belong_to_one_object() {
        let landing = Landing {
            uid: Some("u1".into()),
            status: None,
            main: Some(json!({"metadata": {"annotations": {"a": "b"}}})),
            then: Then::Rest,
        };
        assert!(landing.belongs_to(&json!({"metadata": {"uid": "u1"}})));
        assert!(!landing.belongs_to(&json!({"metadata": {"uid": "u2"}})));
    }
}
