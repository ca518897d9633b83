//! What a cycle ends with ([`Outcome`]), why it can fail ([`CycleError`]), and how storing the
//! diff base turns "run again" into "handled" — shared by the cycle and by the landing of its
//! outcome.

use std::time::Duration;

use serde_json::Value;

use crate::persistence::storage::essence;

/// What the worker does after a cycle.
#[derive(Debug)]
pub(crate) enum Outcome {
    /// Nothing more to do until the next event.
    Done,
    /// A write found the object gone (404): handle it as deleted now, without waiting for
    /// the watch event, so that a body the slot still holds is not judged again.
    Gone,
    /// The cycle patched the object; run again on the returned body.
    Continue(Value),
    /// The cycle finished every due handler and stored the diff base, and the returned body
    /// shows no other change: keep it (to tell our own watch event apart) without another cycle.
    Handled(Value),
    /// Run again after this delay (a handler is delayed).
    WakeAfter(Duration),
    /// The framework failed (API error); retry with the per-object backoff.
    Failed(CycleError),
}

impl Outcome {
    /// A short name of the outcome, for debug logs.
    pub(crate) fn name(&self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Gone => "gone",
            Outcome::Continue(_) => "continue",
            Outcome::Handled(_) => "handled",
            Outcome::WakeAfter(_) => "wake-after",
            Outcome::Failed(_) => "failed",
        }
    }
}

/// Why a cycle could not finish: a write to the API failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CycleError {
    /// The cycle's merge patch (handler changes, progress, diff base) failed.
    #[error("patching: {0}")]
    Patch(#[source] kube::Error),
    /// Adding or removing kopr's finalizer failed.
    #[error("{action} the finalizer: {source}")]
    Finalizer {
        /// `updating` or `removing`.
        action: &'static str,
        /// The API's error.
        #[source]
        source: kube::Error,
    },
}

impl CycleError {
    fn source(&self) -> &kube::Error {
        match self {
            CycleError::Patch(error) | CycleError::Finalizer { source: error, .. } => error,
        }
    }

    /// Whether the failure is one that passes by itself: the connection failed, the write
    /// conflicted, the server was throttling (429) or failing (5xx).
    ///
    /// A finalizer's 422 is its resourceVersion test failing (the object changed meanwhile): it
    /// passes with the next body too.
    pub(crate) fn is_transient(&self) -> bool {
        let guarded = matches!(self, CycleError::Finalizer { .. });
        match self.source() {
            kube::Error::Api(status) => {
                matches!(status.code, 409 | 429 | 500 | 502 | 503 | 504)
                    || (guarded && status.code == 422)
            }
            kube::Error::HyperError(_) | kube::Error::Service(_) | kube::Error::ReadEvents(_) => {
                true
            }
            _ => false,
        }
    }

    /// The server's `retryAfterSeconds`, when its Status gave one.
    pub(crate) fn retry_after(&self) -> Option<Duration> {
        match self.source() {
            kube::Error::Api(status) => status
                .details
                .as_ref()
                .map(|d| d.retry_after_seconds)
                .filter(|s| *s > 0)
                .map(|s| Duration::from_secs(u64::from(s))),
            _ => None,
        }
    }
}

/// Whether the object is being deleted.
pub(crate) fn is_deleting(body: &Value) -> bool {
    body.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The outcome of a cycle that stored `stored` as the diff base: when the patch response shows
/// nobody changed the object since this cycle's body, the next cycle would find nothing to do,
/// so it is skipped; any other change (say, a spec edit whose watch event is older than kopr's
/// own write, and so dropped as stale) gets its cycle.
pub(crate) fn after_diff_base(
    identity: &crate::persistence::identity::Identity,
    stored: Option<&Value>,
    outcome: Outcome,
) -> Outcome {
    match outcome {
        // A deletion started meanwhile is not in the essence, and its own watch event is older
        // than this response (so dropped as stale): it needs its cycle.
        Outcome::Continue(new)
            if stored == Some(&essence(identity, &new)) && !is_deleting(&new) =>
        {
            Outcome::Handled(new)
        }
        outcome => outcome,
    }
}

/// Whether `response` is `expected` but for what the server changes on every write
/// (resourceVersion, generation, managedFields).
pub(crate) fn only_ours(expected: &Value, response: &Value) -> bool {
    let (Some(expected), Some(response)) = (expected.as_object(), response.as_object()) else {
        return expected == response;
    };
    let bookkeeping = ["resourceVersion", "generation", "managedFields"];
    let same_metadata = |a: Option<&Value>, b: Option<&Value>| {
        let empty = serde_json::Map::new();
        let a = a.and_then(Value::as_object).unwrap_or(&empty);
        let b = b.and_then(Value::as_object).unwrap_or(&empty);
        let keys = a.keys().chain(b.keys());
        keys.filter(|k| !bookkeeping.contains(&k.as_str()))
            .all(|k| a.get(k) == b.get(k))
    };
    expected
        .keys()
        .chain(response.keys())
        .all(|k| match k.as_str() {
            "metadata" => same_metadata(expected.get(k), response.get(k)),
            _ => expected.get(k) == response.get(k),
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_response_with_only_our_write_is_told_apart_from_anyone_else_s() {
        let expected = json!({"metadata": {"name": "a", "resourceVersion": "4", "generation": 1},
                              "spec": {"x": 1}, "status": {"ready": true}});
        let ours = json!({"metadata": {"name": "a", "resourceVersion": "9", "generation": 1,
                                       "managedFields": []},
                          "spec": {"x": 1}, "status": {"ready": true}});
        assert!(only_ours(&expected, &ours));
        let theirs = json!({"metadata": {"name": "a", "resourceVersion": "9", "generation": 2},
                            "spec": {"x": 2}, "status": {"ready": true}});
        assert!(!only_ours(&expected, &theirs));
        let labelled = json!({"metadata": {"name": "a", "resourceVersion": "9",
                                           "labels": {"k": "v"}, "generation": 1},
                              "spec": {"x": 1}, "status": {"ready": true}});
        assert!(!only_ours(&expected, &labelled));
    }
}
