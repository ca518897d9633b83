//! Writes shared by the workload controllers, the scheduler and the
//! simulated kubelet: targets by cache kind, read-modify-writes that apply
//! only while the stored object is still the one the controller looked at
//! (same uid; an object of the same name created meanwhile is left alone),
//! status replacement, and deletes preconditioned on a uid.

use std::sync::Arc;

use serde_json::Value;

use super::informer::Kind;
use super::podutil;
use crate::object;
use crate::registry::{Api, DeleteOptions, Target};
use crate::status::{ApiError, ResourceRef};

/// Which part of an object a guarded write goes through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The object itself (metadata and spec).
    Object,
    /// The `status` subresource.
    Status,
}

/// The target of a named object of a cached kind (None when the resource
/// is not served).
pub fn target(api: &Api, kind: Kind, namespace: &str, name: &str) -> Option<Target> {
    let (group, plural) = kind.resource();
    Some(Target {
        rt: api.catalog.get(group, "v1", plural)?,
        namespace: (kind != Kind::Node).then(|| namespace.to_string()),
        name: Some(name.to_string()),
    })
}

/// The target of a cached object.
pub fn target_of(api: &Api, kind: Kind, obj: &Value) -> Option<Target> {
    target(api, kind, object::namespace(obj), object::name(obj))
}

/// A 409 Conflict about the stored object `cur` of the target's resource.
pub fn conflict(t: &Target, cur: &Value, why: &str) -> ApiError {
    ApiError::conflict(
        ResourceRef {
            group: &t.rt.group,
            resource: &t.rt.plural,
        },
        object::name(cur),
        why,
    )
}

/// Read-modify-write of `part` of the object at `t` as `manager`, applied
/// only while the stored object has `uid`; otherwise a 409 Conflict.
/// `change` maps the stored object to the new one (or refuses with an
/// error of its own). Returns the object as stored.
pub async fn update_same_uid(
    api: &Api,
    t: &Target,
    part: Part,
    manager: &str,
    uid: &str,
    change: impl Fn(&Value) -> Result<Value, ApiError>,
) -> Result<Arc<Value>, ApiError> {
    let guarded = |cur: &Value| {
        if object::uid(cur) != uid {
            return Err(conflict(
                t,
                cur,
                &format!("the {} was replaced", t.rt.kind.to_lowercase()),
            ));
        }
        change(cur)
    };
    let opts = podutil::writer(manager);
    let written = match part {
        Part::Object => api.mutate(t, &opts, guarded).await?,
        Part::Status => api.mutate_status(t, &opts, guarded).await?,
    };
    Ok(written.object)
}

/// Replaces the status of the object at `t` with `status`, written by the
/// controller manager, while the object has `uid`.
pub async fn replace_status(
    api: &Api,
    t: &Target,
    uid: &str,
    status: &Value,
) -> Result<Arc<Value>, ApiError> {
    update_same_uid(
        api,
        t,
        Part::Status,
        podutil::CONTROLLER_MANAGER,
        uid,
        |cur| {
            let mut new = cur.clone();
            new["status"] = status.clone();
            Ok(new)
        },
    )
    .await
}

/// Replaces the status of the object at `t` with `status` only while it is
/// still `seen` (same uid and resourceVersion): a status computed from what
/// a controller saw is not written over a newer one (kube's
/// `UpdateStatus` with the resourceVersion read); a 409 otherwise, `None`
/// when the object is gone.
pub async fn replace_status_seen(
    api: &Api,
    t: &Target,
    seen: &Value,
    status: &Value,
) -> Result<Option<Arc<Value>>, ApiError> {
    let version = object::meta_str(seen, "resourceVersion")
        .unwrap_or("")
        .to_string();
    let written = update_same_uid(
        api,
        t,
        Part::Status,
        podutil::CONTROLLER_MANAGER,
        object::uid(seen),
        |cur| {
            if object::meta_str(cur, "resourceVersion").unwrap_or("") != version {
                return Err(ApiError::stale_resource_version(
                    t.rt.reference(),
                    object::name(cur),
                ));
            }
            let mut new = cur.clone();
            new["status"] = status.clone();
            Ok(new)
        },
    )
    .await;
    unless_gone(written)
}

/// Writes `status` as the status of the cached object `obj` of `kind`
/// when it differs from the stored one (compared as the k8s-openapi type
/// `T` encodes them), while the object has the same uid. Returns false when
/// the object is gone.
pub async fn update_status<T: serde::de::DeserializeOwned + serde::Serialize>(
    api: &Api,
    kind: Kind,
    obj: &Value,
    status: &Value,
) -> Result<bool, ApiError> {
    if !podutil::status_changed::<T>(obj, status) {
        return Ok(true);
    }
    let Some(t) = target_of(api, kind, obj) else {
        return Ok(false);
    };
    let written = replace_status(api, &t, object::uid(obj), status).await;
    Ok(unless_gone(written)?.is_some())
}

/// A write's result, with the object being gone (404) as `None`.
pub fn unless_gone<T>(r: Result<T, ApiError>) -> Result<Option<T>, ApiError> {
    match r {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.code == 404 => Ok(None),
        Err(e) => Err(e),
    }
}

/// Deletes the object at `t` if it still has `uid` (with `grace` seconds
/// of grace when given). Returns whether it was deleted: an object already
/// gone (404) or replaced (409) is not an error.
pub async fn delete_same_uid(
    api: &Api,
    t: &Target,
    uid: &str,
    grace: Option<i64>,
) -> Result<bool, ApiError> {
    let opts = DeleteOptions {
        grace_period_seconds: grace,
        precondition_uid: Some(uid.to_string()),
        ..DeleteOptions::default()
    };
    match api.delete(t, &opts).await {
        Ok(_) => Ok(true),
        Err(e) if e.code == 404 || e.code == 409 => Ok(false),
        Err(e) => Err(e),
    }
}
