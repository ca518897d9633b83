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
    let rules = MetaRules {
        core: true,
        finalizers_on_update: true,
    };
    let revalidate = on_update == OnUpdate::Revalidate;
    object_meta_checks(ck, root, old, namespaced, name_fn, revalidate, rules);
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
    let rules = MetaRules {
        core: false,
        finalizers_on_update: false,
    };
    let revalidate = on_update == OnUpdate::Revalidate;
    object_meta_checks(ck, root, old, namespaced, name_fn, revalidate, rules);
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
