//! The strategies of the kinds kopr-apiserver serves (see
//! [`Strategy`]), and the generic create and update preparation every
//! kind goes through before its strategy's own rules.

/// The decoding, defaulting and validation of a built-in kind, in a
/// strategy's `impl`.
macro_rules! builtin_admission {
    () => {
        fn normalize(
            &self,
            rt: &$crate::resources::ResourceType,
            obj: &mut serde_json::Value,
        ) -> Result<Vec<String>, $crate::status::ApiError> {
            $crate::registry::strategy::builtin_normalize(rt, obj)
        }

        fn default(&self, rt: &$crate::resources::ResourceType, obj: &mut serde_json::Value) {
            $crate::registry::strategy::builtin_default(rt, obj);
        }

        fn validate(
            &self,
            rt: &$crate::resources::ResourceType,
            obj: &serde_json::Value,
            old: Option<&serde_json::Value>,
        ) -> Vec<$crate::validation::FieldError> {
            $crate::registry::strategy::builtin_validate(rt, obj, old)
        }
    };
}

mod apiservices;
mod apps;
mod autoscaling;
mod autoscaling_annotations;
mod certificates;
mod core;
mod custom;
mod volumes;

use serde_json::{Value, json};

pub use self::apiservices::{ApiServiceStrategy, local_available};
pub use self::apps::DaemonSetStrategy;
pub use self::autoscaling::HpaV1Strategy;
pub use self::certificates::SigningRequestStrategy;
pub use self::core::{
    EventStrategy, NamespaceStrategy, NodeStrategy, PodStrategy, ServiceStrategy,
    UNDELETABLE_NAMESPACES, pod_qos_class,
};
pub use self::custom::{CLEANUP_FINALIZER, CustomResourceStrategy, DefinitionStrategy};
pub use self::volumes::VolumeStrategy;
use crate::object;
use crate::resources::ResourceType;
pub use crate::resources::Strategy;
use crate::resources::kind::Sub;
use crate::status::ApiError;
use crate::validation::FieldError;

/// The strategy of a built-in kind without rules of its own beyond these
/// flags: decoded into its Go type's schema, defaulted and validated by
/// kube's rules for it.
#[derive(Debug, Default, Clone, Copy)]
pub struct Builtin {
    /// Keeps `metadata.generation`.
    pub generation: bool,
    /// PUT of a missing object creates it.
    pub create_on_update: bool,
    /// Deletes orphan dependents unless told otherwise.
    pub orphan_by_default: bool,
}

impl Builtin {
    /// A kind without generation tracking or other specialties.
    pub const PLAIN: Builtin = Builtin {
        generation: false,
        create_on_update: false,
        orphan_by_default: false,
    };
    /// A kind whose spec changes bump `metadata.generation`.
    pub const GENERATION: Builtin = Builtin {
        generation: true,
        create_on_update: false,
        orphan_by_default: false,
    };
    /// A kind PUT may create (Events, Leases, RBAC objects).
    pub const CREATE_ON_UPDATE: Builtin = Builtin {
        generation: false,
        create_on_update: true,
        orphan_by_default: false,
    };
    /// batch/v1 Jobs: generation, and dependents orphaned by default.
    pub const JOB: Builtin = Builtin {
        generation: true,
        create_on_update: false,
        orphan_by_default: true,
    };
}

impl Strategy for Builtin {
    fn tracks_generation(&self) -> bool {
        self.generation
    }

    fn allows_create_on_update(&self) -> bool {
        self.create_on_update
    }

    fn orphans_dependents_by_default(&self) -> bool {
        self.orphan_by_default
    }

    builtin_admission!();
}

/// A write to `/status` changes only the status (and managedFields): `new` becomes `old` with
/// `new`'s status and managedFields. Parts of `new` equal to `old`'s (the spec, untouched by a
/// status write, and the metadata but for managedFields) are kept rather than copied from
/// `old`; the result is the same.
fn keep_only_status(new: &mut Value, old: &Value) {
    let (Some(fresh), Some(old_map)) = (new.as_object_mut(), old.as_object()) else {
        // Not objects: `old` as it is, less its status (`new` has none to give).
        let mut merged = old.clone();
        if let Some(map) = merged.as_object_mut() {
            map.remove("status");
        }
        *new = merged;
        return;
    };
    let status = fresh.remove("status");
    let managed = fresh
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"));
    let mut merged = serde_json::Map::new();
    for (key, value) in old_map {
        if key == "status" {
            continue;
        }
        let kept = fresh.remove(key).filter(|mine| {
            if key == "metadata" {
                equal_but_managed_fields(mine, value)
            } else {
                mine == value
            }
        });
        let value = match kept {
            Some(mine) => mine,
            None if key == "metadata" => {
                let mut meta = value.clone();
                if let Some(m) = meta.as_object_mut() {
                    m.remove("managedFields");
                }
                meta
            }
            None => value.clone(),
        };
        merged.insert(key.clone(), value);
    }
    if let Some(s) = status {
        merged.insert("status".into(), s);
    }
    if let Some(mf) = managed
        && let Some(m) = merged.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("managedFields".into(), mf);
    } else if let Some(mf) = old_map.get("metadata").and_then(|m| m.get("managedFields"))
        && let Some(m) = merged.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("managedFields".into(), mf.clone());
    }
    *new = Value::Object(merged);
}

/// Whether two metadata maps are equal once `managedFields` is left out of both (`mine`
/// has it taken out already).
fn equal_but_managed_fields(mine: &Value, old: &Value) -> bool {
    let (Some(mine), Some(old)) = (mine.as_object(), old.as_object()) else {
        return mine == old;
    };
    let mut others = old.iter().filter(|(k, _)| *k != "managedFields");
    mine.len() == others.clone().count() && others.all(|(k, v)| mine.get(k).is_some_and(|m| m == v))
}

/// A built-in kind's decoding: into its Go type's schema.
pub(crate) fn builtin_normalize(
    rt: &ResourceType,
    obj: &mut Value,
) -> Result<Vec<String>, ApiError> {
    let unknown = crate::typed::normalize(rt, obj)?;
    go_zero_values(rt, obj);
    Ok(unknown)
}

/// Drops the fields of a built-in object that hold their Go type's zero
/// value (`{}` for a value struct, `""`, `0`, `false`, `[]`, `null`), so that
/// objects compare and are stored as kube-apiserver sees them once decoded
/// into Go structs; custom resources are left as they are.
pub(crate) fn go_zero_values(rt: &ResourceType, obj: &mut Value) {
    if rt.custom.is_none() {
        crate::protobuf::drop_zero_values(&rt.api_version(), &rt.kind, obj);
    }
}

/// A built-in kind's defaulting, as kube's `SetDefaults_*` functions do it.
pub(crate) fn builtin_default(rt: &ResourceType, obj: &mut Value) {
    if let Some(default) = rt.def.and_then(|d| d.default) {
        crate::defaults::apply(default, obj);
    }
    go_zero_values(rt, obj);
}

/// A built-in kind's validation, as kube's `Validate*` functions do it.
pub(crate) fn builtin_validate(
    rt: &ResourceType,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    crate::validation::validate(rt.def.and_then(|d| d.validate), rt.namespaced, obj, old)
}

/// Prepares a new object: resets what a create may not set (status, for
/// kinds with a status subresource), then the kind's own initial state,
/// then generation 1.
pub fn prepare_for_create(rt: &ResourceType, obj: &mut Value) {
    if let Some(map) = obj.as_object_mut() {
        if rt.serves(Sub::Status)
            && let Some(sent) = map.remove("status")
            && let Some(kept) = rt.strategy.status_sent_on_create(sent)
        {
            map.insert("status".into(), kept);
        }
        rt.strategy.prepare_for_create(map);
    }
    if rt.strategy.tracks_generation()
        && let Some(m) = object::meta_mut(obj)
    {
        m.insert("generation".into(), json!(1));
    }
}

/// Whether two objects differ outside `metadata` and `status` (and type
/// fields): the changes that bump `generation`.
pub fn spec_changed(new: &Value, old: &Value, ignore_status: bool) -> bool {
    let (Some(n), Some(o)) = (new.as_object(), old.as_object()) else {
        return new != old;
    };
    let skip = |k: &str| {
        k == "metadata" || k == "kind" || k == "apiVersion" || (ignore_status && k == "status")
    };
    let differs = n.iter().any(|(k, v)| !skip(k) && o.get(k) != Some(v));
    differs || o.keys().any(|k| !skip(k) && !n.contains_key(k))
}

/// Prepares an update: the kind's own rules first; then, for `/status`
/// writes, everything but status (and managedFields) comes from `old`; on
/// the main resource, status comes from `old` when the kind has a status
/// subresource; generation is bumped on spec changes and when deletion
/// starts.
pub fn prepare_for_update(
    rt: &ResourceType,
    new: &mut Value,
    old: &Value,
    subresource: Option<&str>,
) {
    if rt.strategy.prepare_for_update(new, old, subresource) {
        return;
    }
    if subresource == Some("status") {
        keep_only_status(new, old);
        return;
    }
    if rt.serves(Sub::Status)
        && let Some(map) = new.as_object_mut()
    {
        match old.get("status") {
            Some(s) => {
                map.insert("status".into(), s.clone());
            }
            None => {
                map.remove("status");
            }
        }
    }
    if rt.strategy.tracks_generation() {
        let gen_old = object::generation(old).max(1);
        let bumped = spec_changed(new, old, rt.serves(Sub::Status))
            || (object::is_deleting(new) && !object::is_deleting(old));
        if let Some(m) = object::meta_mut(new) {
            m.insert(
                "generation".into(),
                json!(if bumped { gen_old + 1 } else { gen_old }),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What a status write keeps, as a copy of `old` with `new`'s status and managedFields.
    fn copied(new: &Value, old: &Value) -> Value {
        let status = new.get("status").cloned();
        let managed = object::meta(new)
            .and_then(|m| m.get("managedFields"))
            .cloned();
        let mut merged = old.clone();
        if let Some(map) = merged.as_object_mut() {
            match status {
                Some(s) => map.insert("status".into(), s),
                None => map.remove("status"),
            };
        }
        if let (Some(mf), Some(m)) = (managed, object::meta_mut(&mut merged)) {
            m.insert("managedFields".into(), mf);
        }
        merged
    }

    #[test]
    fn a_status_write_keeps_only_the_status_and_managed_fields() {
        let old = json!({
            "apiVersion": "v1", "kind": "K",
            "metadata": {"name": "a", "labels": {"x": "1"}, "managedFields": [{"manager": "old"}]},
            "spec": {"n": 1, "list": [1, 2]},
            "status": {"phase": "old"}
        });
        let cases = [
            // A merge patch of the status: everything else equal.
            json!({
                "apiVersion": "v1", "kind": "K",
                "metadata": {"name": "a", "labels": {"x": "1"}, "managedFields": [{"manager": "new"}]},
                "spec": {"n": 1, "list": [1, 2]},
                "status": {"phase": "new"}
            }),
            // A write that also changed the spec, labels and dropped managedFields and status.
            json!({
                "apiVersion": "v1", "kind": "K",
                "metadata": {"name": "a", "labels": {"x": "2"}},
                "spec": {"n": 2},
                "extra": true
            }),
            // Without metadata, or not an object at all.
            json!({"spec": {"n": 1}, "status": {"phase": "s"}}),
            json!([1, 2]),
            json!(null),
        ];
        for new in cases {
            let mut kept = new.clone();
            keep_only_status(&mut kept, &old);
            assert_eq!(kept, copied(&new, &old), "for {new}");
        }
        let mut from_nothing = json!({"status": {"a": 1}});
        keep_only_status(&mut from_nothing, &json!("not an object"));
        assert_eq!(from_nothing, json!("not an object"));
    }
}
