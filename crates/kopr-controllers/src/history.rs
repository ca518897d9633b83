//! ControllerRevisions: the history DaemonSets and StatefulSets keep of
//! their pod templates, as kube's `controller/history` package and the
//! DaemonSet controller keep it. A revision holds the strategic merge patch
//! that puts its template back (see [`super::templates::replace_patch`]),
//! a revision number, the template's labels plus `controller-revision-hash`,
//! the owner's annotations (so `kubectl rollout history` shows its
//! change-cause) and a controller reference to the owner; `kubectl rollout
//! history|undo` read and apply them.

use std::cmp::Ordering;
use std::sync::Arc;

use serde_json::{Map, Value, json};

use super::informer::{Informer, Kind};
use super::podutil::{self, CONTROLLER_MANAGER, int_at};
use super::replicaset::adopt;
use super::writes::{self, Part};
use crate::object;
use crate::registry::Api;
use crate::selectors::LabelSelector;
use crate::status::ApiError;

/// The label naming the revision a pod or revision belongs to.
pub const REVISION_HASH: &str = "controller-revision-hash";

/// Longest owner name kept in a revision name (`ControllerRevisionName`).
const NAME_PREFIX_MAX: usize = 223;

/// A revision's number.
pub fn number(cr: &Value) -> i64 {
    int_at(cr, "/revision").unwrap_or(0)
}

/// The `controller-revision-hash` label of a pod or revision ("" if none).
pub fn hash_label(obj: &Value) -> &str {
    object::labels(obj)
        .and_then(|l| l.get(REVISION_HASH))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A revision's data (`null` when missing).
pub fn data(cr: &Value) -> &Value {
    cr.get("data").unwrap_or(&Value::Null)
}

/// Orders revisions oldest first: by number, then creation, then name
/// (`SortControllerRevisions`).
pub fn sort(list: &mut [Arc<Value>]) {
    list.sort_by(|a, b| {
        number(a)
            .cmp(&number(b))
            .then_with(|| podutil::creation_key(a).cmp(&podutil::creation_key(b)))
    });
}

/// The highest revision number in a list (0 when empty).
pub fn max_number(list: &[Arc<Value>]) -> i64 {
    list.iter().map(|r| number(r)).max().unwrap_or(0)
}

/// 32-bit FNV-1 (Go's `fnv.New32`).
fn fnv32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in bytes {
        h = h.wrapping_mul(0x01000193);
        h ^= u32::from(*b);
    }
    h
}

/// `HashControllerRevision`: FNV-1 over the raw data and the collision
/// count in decimal, encoded safely.
pub fn hash_data(data: &Value, probe: Option<i64>) -> String {
    let mut bytes = super::templates::raw_bytes(data);
    if let Some(p) = probe {
        bytes.extend_from_slice(p.to_string().as_bytes());
    }
    podutil::safe_encode(&fnv32(&bytes).to_string())
}

/// `ControllerRevisionName`: `<owner>-<hash>`, the owner's name cut to 223
/// characters.
pub fn name_for(owner: &str, hash: &str) -> String {
    let prefix = owner.get(..NAME_PREFIX_MAX).unwrap_or(owner);
    format!("{prefix}-{hash}")
}

/// A new revision of `owner` (not yet created): labelled with the owner's
/// template labels and `hash`, carrying the owner's annotations.
pub fn new_revision(
    owner: &Value,
    owner_ref: Value,
    name: &str,
    hash: &str,
    data: Value,
    revision: i64,
) -> Value {
    let mut labels: Map<String, Value> = podutil::at(owner, "/spec/template/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.insert(REVISION_HASH.into(), json!(hash));
    let mut meta = json!({
        "name": name,
        "namespace": object::namespace(owner),
        "labels": labels,
        "ownerReferences": [owner_ref],
    });
    if let Some(ann) = object::meta(owner)
        .and_then(|m| m.get("annotations"))
        .filter(|a| a.as_object().is_some_and(|m| !m.is_empty()))
    {
        meta["annotations"] = ann.clone();
    }
    json!({
        "apiVersion": "apps/v1",
        "kind": "ControllerRevision",
        "metadata": meta,
        "data": data,
        "revision": revision,
    })
}

/// The revisions `owner` controls, sorted oldest first, after adopting the
/// orphans its selector matches (`ClaimControllerRevisions`).
pub async fn claim(
    api: &Api,
    informer: &Informer,
    owner: &Value,
    selector: &LabelSelector,
    owner_ref: &Value,
) -> Result<Vec<Arc<Value>>, ApiError> {
    let mut adopted = false;
    if !object::is_deleting(owner) {
        for orphan in informer.orphans(Kind::ControllerRevision, object::namespace(owner)) {
            if !object::is_deleting(&orphan) && podutil::selects(selector, &orphan) {
                adopted |= adopt(api, Kind::ControllerRevision, &orphan, owner_ref.clone())
                    .await?
                    .is_some();
            }
        }
    }
    if adopted {
        informer.catch_up().await;
    }
    let mut list = informer.controlled_by(Kind::ControllerRevision, object::uid(owner));
    sort(&mut list);
    Ok(list)
}

/// Creates a revision.
pub async fn create(api: &Api, body: Value) -> Result<Arc<Value>, ApiError> {
    let Some(rt) = api.catalog.get("apps", "v1", "controllerrevisions") else {
        return Err(ApiError::internal("controllerrevisions are not served"));
    };
    let ns = object::namespace(&body).to_string();
    let written = api
        .create(&rt, Some(&ns), body, &podutil::writer(CONTROLLER_MANAGER))
        .await?;
    Ok(written.object)
}

/// Reads a revision from storage (None when there is none).
pub async fn get(api: &Api, namespace: &str, name: &str) -> Result<Option<Arc<Value>>, ApiError> {
    let Some(t) = writes::target(api, Kind::ControllerRevision, namespace, name) else {
        return Ok(None);
    };
    writes::unless_gone(api.get(&t).await)
}

/// Changes a revision's number (`UpdateControllerRevision`).
pub async fn renumber(api: &Api, cr: &Arc<Value>, revision: i64) -> Result<Arc<Value>, ApiError> {
    if number(cr) == revision {
        return Ok(cr.clone());
    }
    rewrite(api, cr, move |new| new["revision"] = json!(revision)).await
}

/// Sets a revision's `controller-revision-hash` label.
pub async fn set_hash_label(
    api: &Api,
    cr: &Arc<Value>,
    hash: &str,
) -> Result<Arc<Value>, ApiError> {
    rewrite(api, cr, |new| {
        if let Some(m) = object::meta_mut(new) {
            let labels = m.entry("labels").or_insert_with(|| json!({}));
            if !labels.is_object() {
                *labels = json!({});
            }
            labels[REVISION_HASH] = json!(hash);
        }
    })
    .await
}

async fn rewrite(
    api: &Api,
    cr: &Arc<Value>,
    change: impl Fn(&mut Value),
) -> Result<Arc<Value>, ApiError> {
    let Some(t) = writes::target_of(api, Kind::ControllerRevision, cr) else {
        return Ok(cr.clone());
    };
    writes::update_same_uid(
        api,
        &t,
        Part::Object,
        CONTROLLER_MANAGER,
        object::uid(cr),
        |cur| {
            let mut new = cur.clone();
            change(&mut new);
            Ok(new)
        },
    )
    .await
}

/// Deletes a revision (gone already is fine).
pub async fn delete(api: &Api, cr: &Value) -> Result<(), ApiError> {
    let Some(t) = writes::target_of(api, Kind::ControllerRevision, cr) else {
        return Ok(());
    };
    writes::delete_same_uid(api, &t, object::uid(cr), None).await?;
    Ok(())
}

/// Orders revisions by number alone (`historiesByRevision`).
pub fn by_number(a: &Arc<Value>, b: &Arc<Value>) -> Ordering {
    number(a).cmp(&number(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1_matches_go() {
        // hash/fnv New32 of "" and "a".
        assert_eq!(fnv32(b""), 0x811c9dc5);
        assert_eq!(fnv32(b"a"), 0x050c5d7e);
    }

    #[test]
    fn revision_names_cut_long_owners() {
        assert_eq!(name_for("web", "abc"), "web-abc");
        let long = "x".repeat(300);
        assert_eq!(name_for(&long, "h").len(), 225);
    }

    #[test]
    fn revisions_copy_template_labels_and_annotations() {
        let owner = json!({
            "metadata": {"name": "ds", "namespace": "ns", "uid": "u",
                "annotations": {"kubernetes.io/change-cause": "why"}},
            "spec": {"template": {"metadata": {"labels": {"app": "a"}}}},
        });
        let cr = new_revision(&owner, json!({"uid": "u"}), "ds-h", "h", json!({}), 3);
        assert_eq!(
            cr["metadata"]["labels"],
            json!({"app": "a", REVISION_HASH: "h"})
        );
        assert_eq!(
            cr["metadata"]["annotations"]["kubernetes.io/change-cause"],
            "why"
        );
        assert_eq!(cr["revision"], 3);
        assert_eq!(hash_label(&cr), "h");
    }
}
