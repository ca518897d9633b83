//! Shared shapes of the cluster-resource validators (networking, discovery,
//! flowcontrol, node, scheduling, storage, apiregistration): how they run
//! ObjectMeta checks (kube's core-group `ValidateObjectMeta` /
//! `ValidateObjectMetaUpdate` with the kube finalizer-name check, or the
//! generic apimachinery ones without it), how Go prints a named string slice,
//! and kube's null-is-absent comparison of immutable fields.

#[allow(unused_imports)]
use super::*;

/// Whether a kind's update validation re-runs its create validation (and so
/// the create-time ObjectMeta checks) besides the update checks.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum OnUpdate {
    /// Only `ValidateObjectMetaUpdate`.
    UpdateOnly,
    /// `ValidateObjectMetaUpdate`, then `ValidateObjectMeta` again.
    Revalidate,
}

/// Core-group ObjectMeta validation (`k8s.io/kubernetes/pkg/apis/core/validation`).
pub(super) fn core_meta(
    ck: &mut Checker,
    root: &Obj,
    old: Option<&Obj>,
    namespaced: bool,
    name_fn: NameFn,
    on_update: OnUpdate,
) {
    match old {
        None => validate_object_meta(ck, root, namespaced, name_fn, true),
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            finalizer_check(ck, root);
            if on_update == OnUpdate::Revalidate {
                validate_object_meta(ck, root, namespaced, name_fn, true);
            }
        }
    }
}

/// Generic ObjectMeta validation (`k8s.io/apimachinery/pkg/api/validation`).
pub(super) fn generic_meta(
    ck: &mut Checker,
    root: &Obj,
    old: Option<&Obj>,
    namespaced: bool,
    name_fn: NameFn,
    on_update: OnUpdate,
) {
    match old {
        None => validate_object_meta(ck, root, namespaced, name_fn, false),
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            if on_update == OnUpdate::Revalidate {
                validate_object_meta(ck, root, namespaced, name_fn, false);
            }
        }
    }
}

/// Renders a list of strings as Go prints a named string slice type with
/// `%#v`, e.g. `[]networking.PolicyType{"Ingress"}`.
pub(super) fn go_string_slice(type_name: &str, items: &[&str]) -> Value {
    let q: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    go_repr(format!("[]{type_name}{{{}}}", q.join(", ")))
}

/// Whether two optional JSON values are equal, `null` counting as absent.
pub(super) fn same_value(a: Option<&Value>, b: Option<&Value>) -> bool {
    let norm = |v: Option<&Value>| match v {
        None | Some(Value::Null) => None,
        Some(x) => Some(x.clone()),
    };
    norm(a) == norm(b)
}
