//! Server-side apply and managed-fields tracking, following
//! sigs.k8s.io/structured-merge-diff as used by kube-apiserver 1.32.
//!
//! * [`server_side_apply`] merges an applied configuration
//!   (`application/apply-patch+yaml`, already decoded by the caller) into the
//!   live object, records the applier's ownership in `metadata.managedFields`,
//!   removes fields the applier owned before but no longer specifies (unless
//!   another manager owns them) and reports conflicts with other managers.
//! * [`update_managed_fields`] records ownership for every other write
//!   (create, update, patch): the writer's `Update` entry gains the fields it
//!   changed and other managers lose them.
//!
//! Caller responsibilities (kube-apiserver does these outside the field
//! manager): a missing `fieldManager` on apply is a 422, see
//! [`field_manager_required_status`]; `force` on a non-apply patch is a 422;
//! the name in the body must match the URL; resetting `status` (or `spec` on
//! the status subresource) is the strategy's job, and the matching paths should
//! be passed as `ignored_fields`.
//!
//! Not modelled: conversion between API versions (all managers are assumed to
//! use the served version), unions, and the distinction between struct fields and map keys in a granular map (an
//! entry of a `map[string]Object` is recorded like a struct field).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::schema::{ListStrategy, MergeSchema};
use crate::gofmt::quote as go_quote;

mod errors;
mod fields;
mod kept;
mod managers;
#[cfg(test)]
mod tests;
mod walk;

#[allow(unused_imports)]
pub use self::errors::*;
#[allow(unused_imports)]
pub use self::fields::*;
#[allow(unused_imports)]
pub use self::managers::*;
#[allow(unused_imports)]
pub use self::walk::*;

/// Maximum number of `Update` entries kept before the oldest are merged into
/// `ancient-changes` buckets.
const MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT_CHANGES: &str = "ancient-changes";

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/// A server-side apply request.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// The stored object, `None` when apply creates it.
    pub live: Option<&'a Value>,
    /// The applied configuration (decoded apply-patch body).
    pub applied: &'a Value,
    /// `fieldManager` (the caller rejects empty ones with
    /// [`field_manager_required_status`]).
    pub manager: &'a str,
    /// `force=true`: take ownership instead of failing on conflicts.
    pub force: bool,
    /// The served apiVersion, e.g. `v1` or `apps/v1`.
    pub api_version: &'a str,
    /// The served kind; the applied object must match it (an empty string
    /// skips the kind check).
    pub kind: &'a str,
    /// Subresource (`status`), if the apply targets one.
    pub subresource: Option<&'a str>,
    /// RFC3339 time for `managedFields[].time`.
    pub now: &'a str,
    /// Paths reset by the strategy (e.g. `["status"]` on the main resource);
    /// never owned and never compared.
    pub ignored_fields: &'a [&'a [&'a str]],
}

fn gvk_string(obj: &Map<String, Value>) -> String {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    format!("{group}/{version}, Kind={kind}")
}

fn object_desc(obj: &Map<String, Value>) -> String {
    let meta = obj.get("metadata");
    let get = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    format!("{}/{}; {}", get("namespace"), get("name"), gvk_string(obj))
}

/// Applies `req.applied` over `req.live` as kube-apiserver's server-side
/// apply does and returns the resulting object, with
/// `metadata.managedFields` updated. A no-op apply returns the live object
/// (managed fields may still change; the time is not bumped).
pub fn server_side_apply(
    req: ApplyRequest<'_>,
    schema: &dyn MergeSchema,
) -> Result<Value, ApplyError> {
    let Value::Object(applied) = req.applied else {
        return Err(ApplyError::BadRequest(
            "error decoding YAML: the applied configuration must be an object".to_string(),
        ));
    };
    let applied_api = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let applied_kind = applied.get("kind").and_then(Value::as_str).unwrap_or("");
    if applied_api != req.api_version || (!req.kind.is_empty() && applied_kind != req.kind) {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(applied)
        )));
    }
    if applied
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    let mut live = match req.live {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(ApplyError::Internal(
                "couldn't get accessor: live object is not an object".into(),
            ));
        }
    };
    let mut managers = decode_managed_fields(take_managed_fields(&mut live).as_ref())
        .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?;

    let manager = if req.manager.is_empty() {
        "unknown"
    } else {
        req.manager
    };
    let info = ManagerInfo {
        manager: manager.to_string(),
        operation: Operation::Apply,
        api_version: String::new(),
        subresource: req.subresource.unwrap_or("").to_string(),
    };
    let id = info.identifier();
    let ignored = FieldSet::from_plain_paths(req.ignored_fields);
    let live_obj = live.as_object().cloned().unwrap_or_default();

    let typed_err = |what: &str, obj: &Map<String, Value>, e: WalkError| {
        ApplyError::Internal(format!(
            "failed to create typed {what} object ({}): {e}",
            object_desc(obj)
        ))
    };
    let config_set = field_set_of(schema, req.applied, true)
        .map_err(|e| typed_err("patch", applied, e))?
        .recursive_difference(&ignored);
    let mut walker = Walker {
        schema,
        spath: Vec::new(),
        skip_managed_fields: false,
    };
    let merged = walker
        .merge(Some(&live), req.applied)
        .map_err(|e| typed_err("live", &live_obj, e))?;

    let previous = managers.get(&id).cloned();
    let last_set = previous
        .as_ref()
        .map(|e| e.set.recursive_difference(&ignored));
    managers.insert(
        id.clone(),
        Entry {
            info,
            api_version: req.api_version.to_string(),
            set: config_set,
            time: previous.and_then(|e| e.time),
        },
    );

    let new_obj = match last_set {
        Some(last) if !last.is_empty() => prune(schema, &merged, &managers, &last)
            .map_err(|e| ApplyError::Internal(format!("failed to prune fields: {e}")))?,
        _ => merged,
    };

    let cmp = compare_objects(schema, &live, &new_obj)
        .map_err(|e| ApplyError::Internal(format!("failed to compare objects: {e}")))?
        .filter(&ignored);
    update_others(&mut managers, &id, &cmp, req.force).map_err(ApplyError::Conflict)?;

    let strip = strip_set();
    if let Some(e) = managers.get_mut(&id) {
        e.set = e.set.difference(strip);
    }
    let changed = new_obj != live;
    if changed && let Some(e) = managers.get_mut(&id) {
        e.time = Some(req.now.to_string());
    }
    managers.retain(|_, e| !e.set.is_empty());
    let mut out = if changed { new_obj } else { live };
    set_managed_fields(&mut out, &managers);
    Ok(out)
}

/// Removes what the applier owned last time and no longer specifies, unless
/// some manager (including the applier's new configuration) owns it.
fn prune(
    schema: &dyn MergeSchema,
    merged: &Value,
    managers: &Managers,
    last: &FieldSet,
) -> Result<Value, WalkError> {
    let pruned = remove_paths(schema, merged, last);
    let managed = managers
        .values()
        .fold(FieldSet::default(), |acc, e| acc.union(&e.set));
    let merged_set = field_set_of(schema, merged, false)?;
    let pruned_set = field_set_of(schema, &pruned, false)?;
    let pruned = remove_paths(
        schema,
        merged,
        &merged_set.difference(&pruned_set.union(&managed)),
    );
    let pruned_set = field_set_of(schema, &pruned, false)?;
    Ok(remove_paths(
        schema,
        merged,
        &merged_set.difference(&pruned_set).intersection(last),
    ))
}

/// A non-apply write (create, update, patch) whose managed fields to record.
#[derive(Debug, Clone, Copy)]
pub struct UpdateRequest<'a> {
    /// The stored object before the write, `None` on create.
    pub old: Option<&'a Value>,
    /// `fieldManager`, or [`manager_from_user_agent`] when absent.
    pub manager: &'a str,
    /// Subresource written (`status`, `scale`), if any. On subresources the
    /// client's managedFields are ignored.
    pub subresource: Option<&'a str>,
    /// The served apiVersion, e.g. `v1`.
    pub api_version: &'a str,
    /// RFC3339 time for `managedFields[].time`.
    pub now: &'a str,
    /// Paths reset by the strategy (e.g. `["status"]`), never owned.
    pub ignored_fields: &'a [&'a [&'a str]],
}

impl UpdateRequest<'_> {
    /// The writer's identity: its `Update` entry for this version and subresource, under
    /// `unknown` when the request names no manager.
    fn writer(&self) -> ManagerInfo {
        ManagerInfo {
            manager: if self.manager.is_empty() {
                "unknown"
            } else {
                self.manager
            }
            .to_string(),
            operation: Operation::Update,
            api_version: self.api_version.to_string(),
            subresource: self.subresource.unwrap_or("").to_string(),
        }
    }
}

/// A creation without managedFields of its own, the common case, recorded without the
/// general comparison: its one entry's `fieldsV1` is built straight from the object by
/// [`walk::created_fields_v1`], to the same result. `false` when it does not apply (or the
/// object is one the comparison refuses), and the general path decides.
fn record_creation(req: &UpdateRequest<'_>, new: &mut Value, schema: &dyn MergeSchema) -> bool {
    if req.old.is_some() || req.subresource.is_some() {
        return false;
    }
    if new
        .get("metadata")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("managedFields"))
    {
        return false;
    }
    let ignored = FieldSet::from_plain_paths(req.ignored_fields);
    let Ok(fields) = walk::created_fields_v1(schema, new, &ignored) else {
        return false;
    };
    let Some(root) = new.as_object_mut() else {
        return false;
    };
    if fields.is_empty() {
        return true;
    }
    let info = req.writer();
    let entry = entry_json(&info, req.api_version, Some(req.now), Value::Object(fields));
    if let Value::Object(meta) = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()))
    {
        meta.insert("managedFields".into(), Value::Array(vec![entry]));
    }
    true
}

#[cfg(test)]
thread_local! {
    /// Tests compare the creation shortcut with the general comparison it stands for.
    pub(crate) static FORCE_GENERAL: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// How many updates [`kept::update`] wrote, so tests know the shortcut was taken.
    pub(crate) static KEPT_UPDATES: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

fn force_general() -> bool {
    #[cfg(test)]
    {
        FORCE_GENERAL.with(std::cell::Cell::get)
    }
    #[cfg(not(test))]
    {
        false
    }
}

/// What an update records as its writer's: the fields it changed, less those the strategy
/// resets and those nobody owns.
fn recorded_set(changed: FieldSet, ignored: &FieldSet) -> FieldSet {
    let mut set = if ignored.is_empty() {
        changed
    } else {
        changed.recursive_difference(ignored)
    };
    set.subtract(strip_set());
    set
}

fn is_reset_managed_fields(v: &Value) -> bool {
    match v {
        Value::Array(a) if a.is_empty() => true,
        Value::Array(a) if a.len() == 1 => a[0].as_object().is_some_and(|m| m.is_empty()),
        _ => false,
    }
}

/// Records an `Update` entry for a non-apply write, as kube-apiserver does:
/// the writer gains ownership of every field it added or changed (other
/// managers lose it, never a conflict), every manager loses fields that were
/// removed, and entries left empty disappear. A client may replace
/// `metadata.managedFields` wholesale; `[]` or `[{}]` clears them. `new` is
/// updated in place. Like kube's `UpdateNoErrors`, this never fails: if the
/// objects cannot be compared, the old object's managedFields are kept.
pub fn update_managed_fields(req: UpdateRequest<'_>, new: &mut Value, schema: &dyn MergeSchema) {
    if !new.is_object() {
        return;
    }
    if !force_general() && record_creation(&req, new, schema) {
        return;
    }
    // The old object is compared in place, without its managedFields (read from it, never
    // copied out with the rest); a creation compares with an empty base.
    let mut base = match req.old {
        Some(Value::Object(_)) => None,
        _ => Some({
            // Creating: the typed empty object kube compares against has the
            // top-level structs (metadata, spec, status) present.
            let mut base = Map::new();
            if let Value::Object(m) = &*new {
                for k in ["metadata", "spec", "status"] {
                    if m.get(k).is_some_and(Value::is_object) {
                        base.insert(k.to_string(), Value::Object(Map::new()));
                    }
                }
            }
            Value::Object(base)
        }),
    };
    let old_managed = base.as_mut().map_or_else(
        || {
            req.old
                .and_then(|o| o.pointer("/metadata/managedFields"))
                .map(std::borrow::Cow::Borrowed)
        },
        |b| take_managed_fields(b).map(std::borrow::Cow::Owned),
    );
    let old: &Value = match (&base, req.old) {
        (Some(b), _) => b,
        (None, Some(o)) => o,
        (None, None) => return,
    };
    let mut new_managed = take_managed_fields(new);
    let ignored = FieldSet::from_plain_paths(req.ignored_fields);
    let cmp = match walk::compare_objects_without_managed_fields(schema, old, new, base.is_none()) {
        Ok(c) if ignored.is_empty() => c,
        Ok(c) => c.filter(&ignored),
        Err(_) => {
            if let (Some(list), Some(meta)) = (
                old_managed,
                new.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                meta.insert("managedFields".into(), list.into_owned());
            }
            return;
        }
    };
    // The writer's recorded set, when the kept path worked it out and declined.
    let mut recorded = None;
    if !force_general()
        && base.is_none()
        && let Some(stored) = old_managed.as_deref()
    {
        let changed = cmp.modified.union(&cmp.added);
        let owned = recorded_set(changed.clone(), &ignored);
        if let Some(list) = kept::update(&req, stored, &mut new_managed, &cmp, &changed, &owned) {
            #[cfg(test)]
            KEPT_UPDATES.with(|n| n.set(n.get() + 1));
            put_managed_fields(new, list);
            return;
        }
        recorded = Some(owned);
    }
    let from_old = || decode_managed_fields(old_managed.as_deref()).unwrap_or_default();
    let mut managers = if req.subresource.is_some() {
        from_old()
    } else {
        match &new_managed {
            Some(v) if is_reset_managed_fields(v) => Managers::new(),
            Some(v) => match decode_managed_fields(Some(v)) {
                Ok(m) if !m.is_empty() => m,
                _ => from_old(),
            },
            None => from_old(),
        }
    };
    let workflow = "current-operation";
    // Never fails with force.
    let _ = update_others(&mut managers, workflow, &cmp, true);

    // On creation nothing is modified: take the added set as it is, without copies.
    let op_set = recorded.unwrap_or_else(|| {
        recorded_set(
            if cmp.modified.is_empty() {
                cmp.added
            } else {
                cmp.modified.union(&cmp.added)
            },
            &ignored,
        )
    });
    if !op_set.is_empty() {
        let info = req.writer();
        let id = info.identifier();
        let set = match managers.get(&id) {
            Some(prev) => op_set.union(&prev.set),
            None => op_set,
        };
        managers.insert(
            id,
            Entry {
                info,
                api_version: req.api_version.to_string(),
                set,
                time: Some(req.now.to_string()),
            },
        );
    }
    cap_update_managers(&mut managers);
    set_managed_fields(new, &managers);
}
