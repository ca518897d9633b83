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
mod apiregistration;
mod csi;
mod discovery;
mod flowcontrol;
mod meta_shapes;
mod netaddr;
mod networking;
mod scheduling;
mod storage;
#[cfg(test)]
mod tests_cluster_net;
#[cfg(test)]
mod tests_cluster_storage;
// Workload, storage, quota, policy, autoscaling and certificate kinds
// (referenced by module path in `lookup`).
mod autoscaling;
mod certificates;
mod cronjob;
mod csr_der;
mod endpoints;
mod policy;
mod pv_sources;
mod quota;
mod replication;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_workloads;
mod volumes;

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

/// Scope and validator of a built-in kind.
pub struct KindSpec {
    /// Whether objects of the kind live in a namespace.
    pub namespaced: bool,
    /// The validator.
    pub validate: ValidateFn,
}

/// Looks up the validator for `(group, resource)`.
pub fn lookup(group: &str, resource: &str) -> Option<KindSpec> {
    let (namespaced, validate): (bool, ValidateFn) = match (group, resource) {
        ("", "namespaces") => (false, namespace),
        ("", "configmaps") => (true, config_map),
        ("", "secrets") => (true, secret),
        ("", "services") => (true, service),
        ("", "serviceaccounts") => (true, service_account),
        ("", "pods") => (true, pod_kind),
        ("", "events") => (true, core_event),
        ("", "nodes") => (false, node),
        ("apps", "deployments") => (true, deployment),
        ("apps", "replicasets") => (true, replica_set),
        ("apps", "statefulsets") => (true, stateful_set),
        ("apps", "daemonsets") => (true, daemon_set),
        ("batch", "jobs") => (true, job),
        ("coordination.k8s.io", "leases") => (true, lease),
        ("events.k8s.io", "events") => (true, events_event),
        ("rbac.authorization.k8s.io", "roles") => (true, role),
        ("rbac.authorization.k8s.io", "clusterroles") => (false, cluster_role),
        ("rbac.authorization.k8s.io", "rolebindings") => (true, role_binding),
        ("rbac.authorization.k8s.io", "clusterrolebindings") => (false, cluster_role_binding),
        ("admissionregistration.k8s.io", "validatingwebhookconfigurations") => {
            (false, validating_webhooks)
        }
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations") => {
            (false, mutating_webhooks)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            (false, validating_admission_policy)
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            (false, validating_admission_policy_binding)
        }
        ("networking.k8s.io", "ingresses") => (true, networking::ingress),
        ("networking.k8s.io", "ingressclasses") => (false, networking::ingress_class),
        ("networking.k8s.io", "networkpolicies") => (true, networking::network_policy),
        ("discovery.k8s.io", "endpointslices") => (true, discovery::endpoint_slice),
        ("flowcontrol.apiserver.k8s.io", "flowschemas") => (false, flowcontrol::flow_schema),
        ("flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations") => {
            (false, flowcontrol::priority_level_configuration)
        }
        ("node.k8s.io", "runtimeclasses") => (false, scheduling::runtime_class),
        ("scheduling.k8s.io", "priorityclasses") => (false, scheduling::priority_class),
        ("storage.k8s.io", "storageclasses") => (false, storage::storage_class),
        ("storage.k8s.io", "volumeattachments") => (false, storage::volume_attachment),
        ("storage.k8s.io", "csistoragecapacities") => (true, storage::csi_storage_capacity),
        ("storage.k8s.io", "csidrivers") => (false, csi::csi_driver),
        ("storage.k8s.io", "csinodes") => (false, csi::csi_node),
        ("apiregistration.k8s.io", "apiservices") => (false, apiregistration::api_service),
        ("", "limitranges") => (true, quota::limit_range),
        ("", "resourcequotas") => (true, quota::resource_quota),
        ("", "podtemplates") => (true, replication::pod_template),
        ("", "replicationcontrollers") => (true, replication::replication_controller),
        ("", "persistentvolumes") => (false, volumes::persistent_volume),
        ("", "persistentvolumeclaims") => (true, volumes::persistent_volume_claim),
        ("", "endpoints") => (true, endpoints::endpoints),
        ("apps", "controllerrevisions") => (true, replication::controller_revision),
        ("batch", "cronjobs") => (true, cronjob::cron_job),
        ("policy", "poddisruptionbudgets") => (true, policy::pod_disruption_budget),
        ("autoscaling", "horizontalpodautoscalers") => {
            (true, autoscaling::horizontal_pod_autoscaler)
        }
        ("certificates.k8s.io", "certificatesigningrequests") => {
            (false, certificates::certificate_signing_request)
        }
        _ => return None,
    };
    Some(KindSpec {
        namespaced,
        validate,
    })
}

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
