//! Where kopr keeps its state on objects: the diff base ("last handled configuration"), the
//! finalizer, and the key names they use.

use serde_json::{Map, Value, json};

/// The prefix of every annotation kopr writes.
pub const ANNOTATION_PREFIX: &str = "kopr.dev/";
/// The annotation holding the essence of the last fully handled state.
pub const LAST_HANDLED: &str = "kopr.dev/last-handled-configuration";
/// The finalizer kopr adds while delete handlers, timers or daemons need it.
pub const FINALIZER: &str = "kopr.dev/finalizer";
/// kubectl's own bookkeeping annotation, never part of the essence.
const KUBECTL_LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The most an annotation set may hold on a real API server (256 KiB in total).
pub const ANNOTATIONS_SIZE_LIMIT: usize = 256 * 1024;

/// Where progress and the diff base are stored ([`Operator::storage`](crate::Operator::storage)).
///
/// ```
/// use kopr::{Operator, Storage};
/// assert_eq!(Storage::default(), Storage::Annotations);
/// let operator = Operator::new().storage(Storage::Status);
/// ```
///
/// # Caveats
/// With `Annotations`, the diff base takes room in the object's annotations, which the API
/// server limits to 256 KiB in all; a diff base that does not fit is kept in memory only
/// (with a Warning Event), so after a restart such an object is handled as created again.
/// With `Status`, a status schema that does not keep `status.kopr` makes the server prune
/// kopr's records, so every change looks like a creation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Storage {
    /// In annotations (`kopr.dev/...`), the default: works for every kind, with or without a
    /// status schema.
    #[default]
    Annotations,
    /// Under `status.kopr`: needs a status subresource whose schema keeps unknown fields
    /// (`x-kubernetes-preserve-unknown-fields`, or a `kopr` property that does).
    ///
    /// Recommended for throughput: a handled change is then written with one `/status` patch
    /// (the handlers' results, the progress and the diff base together) instead of a `/status`
    /// patch followed by a patch of the object's annotations, so each handled object costs the
    /// API server one write and one watch event fewer.
    Status,
}

/// The essence of an object: what users change. Everything except apiVersion, kind, metadata and
/// status, plus the labels and the annotations that are not kopr's or kubectl's bookkeeping.
/// A change of the essence is an update cause ([`Resource::on_update`](crate::Resource::on_update)).
///
/// ```
/// use serde_json::json;
/// let body = json!({
///     "apiVersion": "example.com/v1", "kind": "Greeting",
///     "metadata": {"name": "hello", "resourceVersion": "7", "labels": {"app": "hi"},
///                  "annotations": {"kopr.dev/greet": "{}", "note": "x"}},
///     "spec": {"message": "hi"},
///     "status": {"greet": "said hi"},
/// });
/// assert_eq!(kopr::storage::essence(&body), json!({
///     "metadata": {"labels": {"app": "hi"}, "annotations": {"note": "x"}},
///     "spec": {"message": "hi"},
/// }));
/// ```
pub fn essence(body: &Value) -> Value {
    let mut essence = Map::new();
    if let Value::Object(map) = body {
        for (key, value) in map {
            if !matches!(key.as_str(), "apiVersion" | "kind" | "metadata" | "status") {
                essence.insert(key.clone(), value.clone());
            }
        }
    }
    let mut metadata = Map::new();
    if let Some(labels) = body.pointer("/metadata/labels").filter(|l| non_empty(l)) {
        metadata.insert("labels".into(), labels.clone());
    }
    if let Some(Value::Object(annotations)) = body.pointer("/metadata/annotations") {
        let kept: Map<String, Value> = annotations
            .iter()
            .filter(|(k, _)| {
                !k.starts_with(ANNOTATION_PREFIX) && k.as_str() != KUBECTL_LAST_APPLIED
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !kept.is_empty() {
            metadata.insert("annotations".into(), Value::Object(kept));
        }
    }
    if !metadata.is_empty() {
        essence.insert("metadata".into(), Value::Object(metadata));
    }
    Value::Object(essence)
}

fn non_empty(value: &Value) -> bool {
    value.as_object().is_some_and(|m| !m.is_empty())
}

/// Reads the stored diff base, if any. An unreadable annotation counts as absent.
pub fn read_diff_base(storage: Storage, body: &Value) -> Option<Value> {
    match storage {
        Storage::Annotations => body
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(LAST_HANDLED))
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str(text).ok()),
        Storage::Status => body
            .pointer("/status/kopr/lastHandledConfiguration")
            .filter(|v| !v.is_null())
            .cloned(),
    }
}

/// The merge patch storing `essence` as the diff base, or `None` when it would not fit in the
/// object's annotations alongside the existing ones.
pub fn write_diff_base(storage: Storage, body: &Value, essence: &Value) -> Option<Value> {
    match storage {
        Storage::Annotations => {
            let text = serde_json::to_string(essence).ok()?;
            let others: usize = body
                .pointer("/metadata/annotations")
                .and_then(Value::as_object)
                .map(|a| {
                    a.iter()
                        .filter(|(k, _)| k.as_str() != LAST_HANDLED)
                        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                        .sum()
                })
                .unwrap_or(0);
            if others + LAST_HANDLED.len() + text.len() > ANNOTATIONS_SIZE_LIMIT {
                return None;
            }
            Some(json!({"metadata": {"annotations": {LAST_HANDLED: text}}}))
        }
        Storage::Status => Some(json!({"status": {"kopr": {"lastHandledConfiguration": essence}}})),
    }
}

/// Whether the object carries kopr's finalizer.
pub fn has_finalizer(body: &Value) -> bool {
    finalizers(body).iter().any(|f| f == FINALIZER)
}

fn finalizers(body: &Value) -> Vec<String> {
    body.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// A JSON patch adding (`add = true`) or removing kopr's finalizer, guarded by a test of the
/// resourceVersion it was computed from, so that other controllers' concurrent changes to the
/// list are never overwritten.
pub fn finalizer_patch(body: &Value, add: bool) -> Value {
    let mut list = finalizers(body);
    list.retain(|f| f != FINALIZER);
    if add {
        list.push(FINALIZER.to_owned());
    }
    let resource_version = body
        .pointer("/metadata/resourceVersion")
        .cloned()
        .unwrap_or(Value::Null);
    json!([
        {"op": "test", "path": "/metadata/resourceVersion", "value": resource_version},
        {"op": "add", "path": "/metadata/finalizers", "value": list},
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn essence_keeps_what_users_change() {
        let body = json!({
            "apiVersion": "v1", "kind": "X",
            "metadata": {"name": "a", "resourceVersion": "5", "labels": {"app": "x"},
                         "annotations": {"kopr.dev/h": "{}", "kubectl.kubernetes.io/last-applied-configuration": "{}", "note": "n"}},
            "spec": {"a": 1}, "data": {"k": "v"}, "status": {"s": 1}
        });
        assert_eq!(
            essence(&body),
            json!({"spec": {"a": 1}, "data": {"k": "v"},
                   "metadata": {"labels": {"app": "x"}, "annotations": {"note": "n"}}})
        );
    }

    #[test]
    fn diff_base_round_trip_and_size_limit() {
        let body = json!({"metadata": {}, "spec": {"a": 1}});
        let e = essence(&body);
        for storage in [Storage::Annotations, Storage::Status] {
            let mut stored = body.clone();
            json_patch::merge(&mut stored, &write_diff_base(storage, &body, &e).unwrap());
            assert_eq!(read_diff_base(storage, &stored), Some(e.clone()));
        }
        let huge = json!({"spec": {"blob": "x".repeat(ANNOTATIONS_SIZE_LIMIT)}});
        assert_eq!(
            write_diff_base(Storage::Annotations, &huge, &essence(&huge)),
            None
        );
    }

    #[test]
    fn finalizer_patch_keeps_other_finalizers() {
        let body = json!({"metadata": {"resourceVersion": "7", "finalizers": ["other/one"]}});
        assert!(!has_finalizer(&body));
        let add = finalizer_patch(&body, true);
        assert_eq!(add[0]["value"], "7");
        assert_eq!(add[1]["value"], json!(["other/one", FINALIZER]));
        let with =
            json!({"metadata": {"resourceVersion": "8", "finalizers": ["other/one", FINALIZER]}});
        assert!(has_finalizer(&with));
        assert_eq!(
            finalizer_patch(&with, false)[1]["value"],
            json!(["other/one"])
        );
    }
}
