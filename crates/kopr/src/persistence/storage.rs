//! Where kopr keeps its state on objects: the diff base ("last handled configuration") and
//! the finalizer, under the names of the operator's [`Identity`].

use serde_json::{Map, Value, json};

use crate::persistence::identity::Identity;

/// The name part of the annotation holding the essence of the last fully handled state
/// (`<domain>/last-handled-configuration`).
pub const LAST_HANDLED: &str = "last-handled-configuration";
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
    /// In annotations (`<name>.kopr.dev/...`), the default: works for every kind, with or without a
    /// status schema.
    #[default]
    Annotations,
    /// Under `status.kopr` (`status.kopr.<name>` for an operator with a name of its own):
    /// needs a status subresource whose schema keeps unknown fields
    /// (`x-kubernetes-preserve-unknown-fields`, or a `kopr` property that does).
    ///
    /// Recommended for throughput: a handled change is then written with one `/status` patch
    /// (the handlers' results, the progress and the diff base together) instead of a `/status`
    /// patch followed by a patch of the object's annotations, so each handled object costs the
    /// API server one write and one watch event fewer.
    Status,
}

/// `leaf` nested under `path` (`["status", "kopr"]` → `{"status": {"kopr": leaf}}`).
pub(crate) fn nest(path: &[String], leaf: Value) -> Value {
    path.iter()
        .rev()
        .fold(leaf, |inner, key| json!({ key.as_str(): inner }))
}

/// The JSON pointer of `path`, with `field` appended.
pub(crate) fn pointer(path: &[String], field: &str) -> String {
    let mut text = String::new();
    for key in path.iter().map(String::as_str).chain([field]) {
        text.push('/');
        text.push_str(key);
    }
    text
}

/// The essence of an object: what users change. Everything except apiVersion, kind, metadata and
/// status, plus the labels and the annotations that are not bookkeeping: not kubectl's, not
/// this operator's and not any kopr operator's (`kopr.dev/…`, `<name>.kopr.dev/…`).
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
/// let identity = kopr::Identity::new("greeting");
/// assert_eq!(kopr::storage::essence(&identity, &body), json!({
///     "metadata": {"labels": {"app": "hi"}, "annotations": {"note": "x"}},
///     "spec": {"message": "hi"},
/// }));
/// ```
pub fn essence(identity: &Identity, body: &Value) -> Value {
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
            .filter(|(k, _)| !identity.is_bookkeeping(k) && k.as_str() != KUBECTL_LAST_APPLIED)
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

/// Reads the stored diff base, if any: the operator's own, else one kopr kept under its
/// historical name. An unreadable annotation counts as absent.
pub fn read_diff_base(identity: &Identity, storage: Storage, body: &Value) -> Option<Value> {
    match storage {
        Storage::Annotations => {
            let annotations = body.pointer("/metadata/annotations")?;
            let read = |key: String| {
                annotations
                    .get(key)
                    .and_then(Value::as_str)
                    .and_then(|text| serde_json::from_str(text).ok())
            };
            read(identity.annotation(LAST_HANDLED))
                .or_else(|| identity.legacy_annotation(LAST_HANDLED).and_then(read))
        }
        Storage::Status => identity.status_paths().iter().find_map(|path| {
            body.pointer(&pointer(path, "lastHandledConfiguration"))
                .filter(|v| !v.is_null())
                .cloned()
        }),
    }
}

/// The merge patch storing `essence` as the diff base (and dropping a diff base kept under
/// kopr's historical name), or `None` when it would not fit in the object's annotations
/// alongside the existing ones.
pub fn write_diff_base(
    identity: &Identity,
    storage: Storage,
    body: &Value,
    essence: &Value,
) -> Option<Value> {
    match storage {
        Storage::Annotations => {
            let key = identity.annotation(LAST_HANDLED);
            let legacy = identity.legacy_annotation(LAST_HANDLED);
            let text = serde_json::to_string(essence).ok()?;
            let annotations = body
                .pointer("/metadata/annotations")
                .and_then(Value::as_object);
            let others: usize = annotations
                .map(|a| {
                    a.iter()
                        .filter(|(k, _)| **k != key && Some(*k) != legacy.as_ref())
                        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
                        .sum()
                })
                .unwrap_or(0);
            if others + key.len() + text.len() > ANNOTATIONS_SIZE_LIMIT {
                return None;
            }
            let mut write = Map::new();
            if let Some(legacy) = legacy.filter(|l| annotations.is_some_and(|a| a.contains_key(l)))
            {
                write.insert(legacy, Value::Null);
            }
            write.insert(key, Value::String(text));
            Some(json!({"metadata": {"annotations": write}}))
        }
        Storage::Status => {
            let paths = identity.status_paths();
            let mut write = Value::Null;
            for legacy in paths.iter().skip(1) {
                if body
                    .pointer(&pointer(legacy, "lastHandledConfiguration"))
                    .is_some()
                {
                    let gone = nest(legacy, json!({"lastHandledConfiguration": null}));
                    crate::handling::patch::merge_into(&mut write, gone);
                }
            }
            let own = nest(&paths[0], json!({"lastHandledConfiguration": essence}));
            crate::handling::patch::merge_into(&mut write, own);
            Some(write)
        }
    }
}

/// Whether the object carries the operator's finalizer (or kopr's historical one).
pub fn has_finalizer(identity: &Identity, body: &Value) -> bool {
    let legacy = identity.legacy_finalizer();
    finalizers(body)
        .iter()
        .any(|f| f == identity.finalizer() || Some(f) == legacy.as_ref())
}

/// Whether the object's finalizers need a patch: the operator's finalizer is to be added or
/// released, or kopr's historical one is still there to be replaced or released.
pub fn finalizer_outdated(identity: &Identity, body: &Value, needed: bool) -> bool {
    let list = finalizers(body);
    let own = list.iter().any(|f| f == identity.finalizer());
    let legacy = identity
        .legacy_finalizer()
        .is_some_and(|legacy| list.contains(&legacy));
    own != needed || legacy
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

/// A JSON patch adding (`add = true`) or removing the operator's finalizer (and removing
/// kopr's historical one either way), guarded by a test of the resourceVersion it was
/// computed from, so that other controllers' concurrent changes to the list are never
/// overwritten.
pub fn finalizer_patch(identity: &Identity, body: &Value, add: bool) -> Value {
    let legacy = identity.legacy_finalizer();
    let mut list = finalizers(body);
    list.retain(|f| f != identity.finalizer() && Some(f) != legacy.as_ref());
    if add {
        list.push(identity.finalizer().to_owned());
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
            essence(&Identity::default(), &body),
            json!({"spec": {"a": 1}, "data": {"k": "v"},
                   "metadata": {"labels": {"app": "x"}, "annotations": {"note": "n"}}})
        );
    }

    #[test]
    fn diff_base_round_trip_and_size_limit() {
        let body = json!({"metadata": {}, "spec": {"a": 1}});
        let e = essence(&Identity::default(), &body);
        for storage in [Storage::Annotations, Storage::Status] {
            let mut stored = body.clone();
            json_patch::merge(
                &mut stored,
                &write_diff_base(&Identity::default(), storage, &body, &e).unwrap(),
            );
            assert_eq!(
                read_diff_base(&Identity::default(), storage, &stored),
                Some(e.clone())
            );
        }
        let huge = json!({"spec": {"blob": "x".repeat(ANNOTATIONS_SIZE_LIMIT)}});
        assert_eq!(
            write_diff_base(
                &Identity::default(),
                Storage::Annotations,
                &huge,
                &essence(&Identity::default(), &huge)
            ),
            None
        );
    }

    #[test]
    fn finalizer_patch_keeps_other_finalizers() {
        let kopr = Identity::default();
        const FINALIZER: &str = "kopr.dev/finalizer";
        let body = json!({"metadata": {"resourceVersion": "7", "finalizers": ["other/one"]}});
        assert!(!has_finalizer(&kopr, &body));
        let add = finalizer_patch(&kopr, &body, true);
        assert_eq!(add[0]["value"], "7");
        assert_eq!(add[1]["value"], json!(["other/one", FINALIZER]));
        let with =
            json!({"metadata": {"resourceVersion": "8", "finalizers": ["other/one", FINALIZER]}});
        assert!(has_finalizer(&kopr, &with));
        assert_eq!(
            finalizer_patch(&kopr, &with, false)[1]["value"],
            json!(["other/one"])
        );
    }

    #[test]
    fn a_named_operator_moves_the_historical_names() {
        let greeting = Identity::new("greeting");
        let body = json!({"metadata": {"resourceVersion": "3",
            "finalizers": ["other/one", "kopr.dev/finalizer"],
            "annotations": {"kopr.dev/last-handled-configuration": "{\"spec\":{\"a\":1}}"}}});
        assert!(has_finalizer(&greeting, &body));
        assert!(finalizer_outdated(&greeting, &body, true));
        assert!(finalizer_outdated(&greeting, &body, false));
        assert_eq!(
            finalizer_patch(&greeting, &body, true)[1]["value"],
            json!(["other/one", "greeting.kopr.dev/finalizer"])
        );
        assert_eq!(
            finalizer_patch(&greeting, &body, false)[1]["value"],
            json!(["other/one"])
        );
        let base = read_diff_base(&greeting, Storage::Annotations, &body);
        assert_eq!(base, Some(json!({"spec": {"a": 1}})));
        let essence = json!({"spec": {"a": 2}});
        let write = write_diff_base(&greeting, Storage::Annotations, &body, &essence).unwrap();
        let mut after = body.clone();
        json_patch::merge(&mut after, &write);
        let annotations = after["metadata"]["annotations"].as_object().unwrap();
        assert_eq!(annotations.len(), 1, "{annotations:?}");
        assert_eq!(
            read_diff_base(&greeting, Storage::Annotations, &after),
            Some(essence)
        );
        let own = json!({"metadata": {"finalizers": ["greeting.kopr.dev/finalizer"]}});
        assert!(!finalizer_outdated(&greeting, &own, true));
        assert!(finalizer_outdated(&greeting, &own, false));
    }
}
