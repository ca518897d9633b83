//! Per-kind validation for every built-in kind kube-apiserver 1.32 stores,
//! one module per API area (core, workloads, volumes, quota, networking,
//! storage, flow control, certificates, ...); [`lookup`] finds a kind's
//! validator. Pod specs live in [`pod`].

/// Pod spec and template validation.
pub mod pod;

use super::names;
use super::{Checker, FieldError, Obj, child, go_quote, go_repr, index, key};
use crate::validation::metadata::{
    FIELD_IMMUTABLE, NameFn, validate_labels, validate_object_meta, validate_object_meta_update,
};
use pod::{
    PodOpts, labels_repr, validate_pod_spec, validate_pod_spec_update, validate_pod_template_spec,
};
use serde_json::Value;
use std::collections::BTreeSet;

mod admission;
mod admission_policy;
mod apps;
mod batch;
mod core;
mod events;
mod rbac;
mod selector;
// Cluster kinds of networking, discovery, flowcontrol, node, scheduling,
// storage and apiregistration (referenced by module path in `lookup`).
pub(crate) mod apiregistration;
pub(crate) mod csi;
pub(crate) mod discovery;
pub(crate) mod flowcontrol;
mod meta_shapes;
mod netaddr;
pub(crate) mod networking;
pub(crate) mod scheduling;
pub(crate) mod storage;
#[cfg(test)]
mod tests_cluster_net;
#[cfg(test)]
mod tests_cluster_storage;
// Workload, storage, quota, policy, autoscaling and certificate kinds
// (referenced by module path in `lookup`).
pub(crate) mod autoscaling;
pub(crate) mod certificates;
pub(crate) mod cronjob;
mod csr_der;
pub(crate) mod endpoints;
pub(crate) mod policy;
mod pv_sources;
pub(crate) mod quota;
pub(crate) mod replication;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_workloads;
pub(crate) mod volumes;

#[allow(unused_imports)]
pub use self::admission::*;
#[allow(unused_imports)]
pub use self::admission_policy::*;
#[allow(unused_imports)]
pub use self::apps::*;
#[allow(unused_imports)]
pub use self::batch::*;
#[allow(unused_imports)]
pub use self::core::*;
#[allow(unused_imports)]
pub use self::events::*;
#[allow(unused_imports)]
pub use self::rbac::*;
#[allow(unused_imports)]
pub use self::selector::*;

/// A kind's validator: `(checker, new object, old object on update)`.
pub type ValidateFn = fn(&mut Checker, &Obj, Option<&Obj>);

fn empty() -> &'static Obj {
    static EMPTY: std::sync::OnceLock<Obj> = std::sync::OnceLock::new();
    EMPTY.get_or_init(Obj::new)
}

fn sub<'a>(ck: &mut Checker, o: &'a Obj, k: &str, path: &str) -> &'a Obj {
    ck.obj(o, k, path).unwrap_or(empty())
}

fn nonneg(ck: &mut Checker, o: &Obj, k: &str, path: &str) {
    if let Some(v) = ck.i64(o, k, path)
        && v < 0
    {
        ck.push(FieldError::invalid(
            child(path, k),
            v,
            "must be greater than or equal to 0",
        ));
    }
}

fn nonneg_i32(ck: &mut Checker, o: &Obj, k: &str, path: &str) -> i64 {
    let v = ck.i32(o, k, path).unwrap_or(0);
    if v < 0 {
        ck.push(FieldError::invalid(
            child(path, k),
            v,
            "must be greater than or equal to 0",
        ));
    }
    v
}

/// Standard create/update shape: create runs `meta + body`; update runs
/// `meta update + (meta again if `revalidate`) + body`.
fn meta_for(
    ck: &mut Checker,
    root: &Obj,
    old: Option<&Obj>,
    namespaced: bool,
    f: NameFn,
    revalidate_on_update: bool,
) {
    object_meta_checks(
        ck,
        root,
        old,
        namespaced,
        f,
        revalidate_on_update,
        MetaRules::CORE,
    );
}

/// Which ObjectMeta rules a kind's validation applies.
#[derive(Clone, Copy)]
struct MetaRules {
    /// The core group's checks in `ValidateObjectMeta` (kube finalizer names).
    core: bool,
    /// The core finalizer-name check on updates too.
    finalizers_on_update: bool,
}

impl MetaRules {
    const CORE: MetaRules = MetaRules {
        core: true,
        finalizers_on_update: false,
    };
}

/// ObjectMeta checks of a create (`old` None) or an update: on update the
/// update checks, optionally the finalizer names, and, when
/// `revalidate_on_update`, the create checks again.
fn object_meta_checks(
    ck: &mut Checker,
    root: &Obj,
    old: Option<&Obj>,
    namespaced: bool,
    f: NameFn,
    revalidate_on_update: bool,
    rules: MetaRules,
) {
    match old {
        None => validate_object_meta(ck, root, namespaced, f, rules.core),
        Some(o) => {
            validate_object_meta_update(ck, root, o);
            if rules.finalizers_on_update {
                finalizer_check(ck, root);
            }
            if revalidate_on_update {
                validate_object_meta(ck, root, namespaced, f, rules.core);
            }
        }
    }
}

fn finalizer_check(ck: &mut Checker, root: &Obj) {
    // Core-group per-index finalizer check for update paths (ValidateObjectMetaUpdate in core).
    let meta = sub(ck, root, "metadata", "");
    let fins = ck.str_list(meta, "finalizers", "metadata");
    for (i, f) in fins.iter().enumerate() {
        crate::validation::metadata::validate_kube_finalizer_name(
            ck,
            f,
            &index("metadata.finalizers", i),
        );
    }
}
