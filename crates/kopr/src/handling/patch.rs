//! The patch a cycle accumulates: handlers' own changes plus the framework's bookkeeping,
//! sent together at the end of the cycle as at most one merge patch for the object and one for
//! its `/status` subresource.

use std::sync::{Arc, Mutex, MutexGuard};

use serde::Serialize;
use serde_json::{Map, Value};

/// A JSON merge patch being built. Cloning gives another handle to the same patch.
///
/// Handlers get theirs from [`Context::patch`](crate::Context::patch), admission handlers
/// from [`Review::patch`](crate::Review::patch). Setters return `&Self`, so they chain.
///
/// # Errors
/// A value that cannot be serialized (a map with non-string keys, a failing `Serialize`
/// impl) is not stored, so it never deletes the field on the server: the patch keeps the
/// error ([`Patch::error`]), and the handler's attempt fails with it (retried as any error),
/// an admission handler's request is refused with it.
///
/// ```
/// use kopr::Patch;
/// use serde_json::json;
///
/// let patch = Patch::new();
/// patch
///     .status("phase", "Ready")
///     .spec("replicas", 3)
///     .label("app", Some("web"))
///     .annotation("example.com/old", None)
///     .set("data.level", "debug");
/// assert_eq!(
///     patch.to_value(),
///     json!({
///         "status": {"phase": "Ready"},
///         "spec": {"replicas": 3},
///         "metadata": {"labels": {"app": "web"}, "annotations": {"example.com/old": null}},
///         "data": {"level": "debug"},
///     })
/// );
/// ```
#[derive(Debug, Clone, Default)]
pub struct Patch {
    inner: Arc<Mutex<Value>>,
    /// The first value that could not be serialized, with its path.
    error: Arc<Mutex<Option<String>>>,
}

impl Patch {
    /// An empty patch.
    pub fn new() -> Patch {
        Patch::default()
    }

    fn lock(&self) -> MutexGuard<'_, Value> {
        // A handler that panicked while holding the lock leaves a usable value behind.
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Sets the value at the dotted `path` (for example `status.phase`); `null` deletes the
    /// field on the server. A value that cannot be serialized is not stored: see
    /// [`Patch::error`].
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let patch = kopr::Patch::new();
    /// patch.set("status.phase", "Ready");
    /// // JSON objects need string keys: this one cannot be serialized.
    /// patch.set("status.byPair", BTreeMap::from([((1, 2), "x")]));
    /// assert_eq!(patch.to_value(), serde_json::json!({"status": {"phase": "Ready"}}));
    /// assert!(patch.error().is_some_and(|e| e.starts_with("status.byPair: ")));
    /// ```
    pub fn set(&self, path: &str, value: impl Serialize) -> &Self {
        let segments: Vec<&str> = path.split('.').filter(|s| !s.is_empty()).collect();
        self.set_at(&segments, value)
    }

    /// Sets the value at a path given as segments (segments may contain dots); see
    /// [`Patch::set`].
    ///
    /// ```
    /// let patch = kopr::Patch::new();
    /// patch
    ///     .set_at(&["metadata", "labels", "example.com/tier"], "web")
    ///     .set_at(&["metadata", "labels", "example.com/zone"], "a");
    /// assert_eq!(patch.to_value()["metadata"]["labels"]["example.com/tier"], "web");
    /// ```
    pub fn set_at(&self, path: &[&str], value: impl Serialize) -> &Self {
        match serde_json::to_value(value) {
            Ok(value) => self.put(path, value),
            Err(error) => {
                let mut first = self.error.lock().unwrap_or_else(|p| p.into_inner());
                if first.is_none() {
                    *first = Some(format!("{}: {error}", path.join(".")));
                }
            }
        }
        self
    }

    /// The first value this patch could not serialize, as `<path>: <serde's message>`.
    ///
    /// ```
    /// let patch = kopr::Patch::new();
    /// patch.status("ready", true);
    /// assert_eq!(patch.error(), None);
    /// ```
    pub fn error(&self) -> Option<String> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    fn put(&self, path: &[&str], value: Value) {
        let mut guard = self.lock();
        let Some((last, parents)) = path.split_last() else {
            merge_into(&mut guard, value);
            return;
        };
        let mut node = &mut *guard;
        for segment in parents {
            node = object_entry(node, segment);
        }
        if !node.is_object() {
            *node = Value::Object(Map::new());
        }
        if let Value::Object(map) = node {
            map.insert((*last).to_owned(), value);
        }
    }

    /// Merges a whole merge-patch document into this one.
    ///
    /// ```
    /// let patch = kopr::Patch::new();
    /// patch.status("ready", true);
    /// patch.merge(serde_json::json!({"status": {"replicas": 2}}));
    /// assert_eq!(patch.to_value(), serde_json::json!({"status": {"ready": true, "replicas": 2}}));
    /// ```
    pub fn merge(&self, patch: Value) -> &Self {
        merge_into(&mut self.lock(), patch);
        self
    }

    /// Sets `status.<key>` (see [`Patch::set`]).
    pub fn status(&self, key: &str, value: impl Serialize) -> &Self {
        self.set_at(&["status", key], value)
    }

    /// Sets `spec.<key>` (see [`Patch::set`]).
    pub fn spec(&self, key: &str, value: impl Serialize) -> &Self {
        self.set_at(&["spec", key], value)
    }

    /// Sets the label `key` (`None` removes it).
    pub fn label(&self, key: &str, value: Option<&str>) -> &Self {
        self.set_at(&["metadata", "labels", key], value)
    }

    /// Sets the annotation `key` (`None` removes it).
    pub fn annotation(&self, key: &str, value: Option<&str>) -> &Self {
        self.set_at(&["metadata", "annotations", key], value)
    }

    /// Whether nothing has been set.
    pub fn is_empty(&self) -> bool {
        match &*self.lock() {
            Value::Null => true,
            Value::Object(map) => map.is_empty(),
            _ => false,
        }
    }

    /// A copy of the document built so far.
    pub fn to_value(&self) -> Value {
        match &*self.lock() {
            Value::Null => Value::Object(Map::new()),
            other => other.clone(),
        }
    }
}

fn object_entry<'a>(node: &'a mut Value, key: &str) -> &'a mut Value {
    if !node.is_object() {
        *node = Value::Object(Map::new());
    }
    match node {
        Value::Object(map) => map
            .entry(key.to_owned())
            .or_insert_with(|| Value::Object(Map::new())),
        _ => unreachable!("just made an object"),
    }
}

/// Merges merge-patch `patch` into merge-patch `target`, keeping nested `null`s (they delete on
/// the server). A `null` patch as a whole is an empty patch.
pub fn merge_into(target: &mut Value, patch: Value) {
    match patch {
        Value::Null => {}
        Value::Object(entries) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(map) = target {
                for (key, value) in entries {
                    match map.get_mut(&key) {
                        Some(existing) if value.is_object() && existing.is_object() => {
                            merge_into(existing, value)
                        }
                        _ => {
                            map.insert(key, value);
                        }
                    }
                }
            }
        }
        other => *target = other,
    }
}

/// Splits a merge patch into the part for the object and the `status` part.
pub fn split_status(mut patch: Value) -> (Value, Option<Value>) {
    let status = patch.as_object_mut().and_then(|map| map.remove("status"));
    (patch, status)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builds_nested_merge_patches() {
        let patch = Patch::new();
        assert!(patch.is_empty());
        patch.set("status.phase", "Ready");
        patch.status("count", 3);
        patch.label("app", Some("web"));
        patch.annotation("old", None);
        patch.merge(json!({"status": {"extra": true}}));
        assert_eq!(
            patch.to_value(),
            json!({"status": {"phase": "Ready", "count": 3, "extra": true},
                   "metadata": {"labels": {"app": "web"}, "annotations": {"old": null}}})
        );
        let (body, status) = split_status(patch.to_value());
        assert_eq!(
            status,
            Some(json!({"phase": "Ready", "count": 3, "extra": true}))
        );
        assert!(body.get("status").is_none());
    }

    #[test]
    fn a_null_patch_changes_nothing() {
        let mut target = json!({"a": 1});
        merge_into(&mut target, Value::Null);
        merge_into(&mut target, json!({"b": null}));
        assert_eq!(target, json!({"a": 1, "b": null}));
    }

    #[test]
    fn clones_share_one_document() {
        let a = Patch::new();
        let b = a.clone();
        b.spec("replicas", 2);
        assert_eq!(a.to_value(), json!({"spec": {"replicas": 2}}));
    }
}
