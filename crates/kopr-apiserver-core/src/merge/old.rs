//! TEMPORARY: the old path-shaped merge rules of `patch/schema.rs`, kept
//! only to compare the type-graph rules against them; deleted once equal.
#![allow(dead_code)]

use serde_json::Value;

use crate::patch::schema::ListStrategy;

/// The kinds whose merge semantics this module knows.
pub(super) const BUILTIN_KINDS: &[(&str, &str)] = &[
    ("", "Namespace"),
    ("", "ConfigMap"),
    ("", "Secret"),
    ("", "Service"),
    ("", "ServiceAccount"),
    ("", "Pod"),
    ("", "Event"),
    ("", "Node"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("batch", "Job"),
    ("coordination.k8s.io", "Lease"),
    ("events.k8s.io", "Event"),
    ("rbac.authorization.k8s.io", "Role"),
    ("rbac.authorization.k8s.io", "ClusterRole"),
    ("rbac.authorization.k8s.io", "RoleBinding"),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
    (
        "admissionregistration.k8s.io",
        "ValidatingWebhookConfiguration",
    ),
    (
        "admissionregistration.k8s.io",
        "MutatingWebhookConfiguration",
    ),
    ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy"),
    (
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ("", "Endpoints"),
    ("", "LimitRange"),
    ("", "ResourceQuota"),
    ("", "PodTemplate"),
    ("", "PersistentVolume"),
    ("", "PersistentVolumeClaim"),
    ("", "ReplicationController"),
    ("apps", "DaemonSet"),
    ("apps", "ControllerRevision"),
    ("autoscaling", "HorizontalPodAutoscaler"),
    ("batch", "CronJob"),
    ("certificates.k8s.io", "CertificateSigningRequest"),
    ("discovery.k8s.io", "EndpointSlice"),
    ("flowcontrol.apiserver.k8s.io", "FlowSchema"),
    ("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration"),
    ("networking.k8s.io", "Ingress"),
    ("networking.k8s.io", "IngressClass"),
    ("networking.k8s.io", "NetworkPolicy"),
    ("node.k8s.io", "RuntimeClass"),
    ("policy", "PodDisruptionBudget"),
    ("scheduling.k8s.io", "PriorityClass"),
    ("storage.k8s.io", "StorageClass"),
    ("storage.k8s.io", "CSIDriver"),
    ("storage.k8s.io", "CSINode"),
    ("storage.k8s.io", "CSIStorageCapacity"),
    ("storage.k8s.io", "VolumeAttachment"),
    ("apiregistration.k8s.io", "APIService"),
];

/// Whether `group`/`kind` is one of the built-in kinds served (and therefore
/// accepts strategic merge patch).
pub(super) fn is_builtin(group: &str, kind: &str) -> bool {
    BUILTIN_KINDS.iter().any(|(g, k)| *g == group && *k == kind)
}

/// Both flavours' answer for one list field.
struct ListInfo {
    smp: ListStrategy,
    ssa: ListStrategy,
}

fn same(s: ListStrategy) -> Option<ListInfo> {
    Some(ListInfo {
        smp: s.clone(),
        ssa: s,
    })
}

fn keyed(key: &str) -> Option<ListInfo> {
    same(ListStrategy::map(&[key]))
}

/// Where the pod template lives in an object of this kind, if it has one.
fn pod_template_root(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    match (group, kind) {
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job")
        | ("", "ReplicationController") => Some(&["spec", "template"]),
        ("", "PodTemplate") => Some(&["template"]),
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template"]),
        _ => None,
    }
}

/// Where the pod spec lives in an object of this kind, if it has one.
fn pod_spec_root(group: &str, kind: &str) -> Option<&'static [&'static str]> {
    match (group, kind) {
        ("", "Pod") => Some(&["spec"]),
        ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("batch", "Job")
        | ("", "ReplicationController") => Some(&["spec", "template", "spec"]),
        ("", "PodTemplate") => Some(&["template", "spec"]),
        ("batch", "CronJob") => Some(&["spec", "jobTemplate", "spec", "template", "spec"]),
        _ => None,
    }
}

/// The part of `path` below the pod spec, if `path` is inside it.
fn pod_spec_rel<'p, 'a>(group: &str, kind: &str, path: &'p [&'a str]) -> Option<&'p [&'a str]> {
    let root = pod_spec_root(group, kind)?;
    path.strip_prefix(root).filter(|rel| !rel.is_empty())
}

/// The part of `path` below the pod template's metadata, if inside it.
fn template_meta_rel<'p, 'a>(
    group: &str,
    kind: &str,
    path: &'p [&'a str],
) -> Option<&'p [&'a str]> {
    let root = pod_template_root(group, kind)?;
    path.strip_prefix(root)?.strip_prefix(&["metadata"][..])
}

fn is_container_list(name: &str) -> bool {
    matches!(
        name,
        "containers" | "initContainers" | "ephemeralContainers"
    )
}

/// List semantics of ObjectMeta fields, relative to a metadata root.
fn object_meta_list(rel: &[&str]) -> Option<ListInfo> {
    match rel {
        ["ownerReferences"] => keyed("uid"),
        ["finalizers"] => same(ListStrategy::Set),
        _ => None,
    }
}

/// List semantics inside a PodSpec, relative to the pod spec root.
fn pod_spec_list(rel: &[&str]) -> Option<ListInfo> {
    match rel {
        [c] if is_container_list(c) => keyed("name"),
        [c, "ports"] if is_container_list(c) => Some(ListInfo {
            smp: ListStrategy::map(&["containerPort"]),
            ssa: ListStrategy::map(&["containerPort", "protocol"]),
        }),
        [c, "env"] if is_container_list(c) => keyed("name"),
        [c, "volumeMounts"] if is_container_list(c) => keyed("mountPath"),
        [c, "volumeDevices"] if is_container_list(c) => keyed("devicePath"),
        [c, "resources", "claims"] if is_container_list(c) => Some(ListInfo {
            smp: ListStrategy::Atomic,
            ssa: ListStrategy::map(&["name"]),
        }),
        ["volumes"] => keyed("name"),
        ["imagePullSecrets"] => keyed("name"),
        ["hostAliases"] => keyed("ip"),
        ["topologySpreadConstraints"] => Some(ListInfo {
            smp: ListStrategy::map(&["topologyKey"]),
            ssa: ListStrategy::map(&["topologyKey", "whenUnsatisfiable"]),
        }),
        ["resourceClaims"] => keyed("name"),
        ["schedulingGates"] => keyed("name"),
        _ => None,
    }
}

/// Which kinds have `status.conditions` keyed by `type`.
fn conditions_by_type(group: &str, kind: &str) -> Option<ListInfo> {
    match (group, kind) {
        ("", "Pod" | "Node" | "Namespace" | "Service" | "ReplicationController")
        | ("", "PersistentVolumeClaim")
        | ("apps", "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")
        | ("autoscaling", "HorizontalPodAutoscaler")
        | ("policy", "PodDisruptionBudget")
        | ("certificates.k8s.io", "CertificateSigningRequest")
        | ("flowcontrol.apiserver.k8s.io", "FlowSchema" | "PriorityLevelConfiguration")
        | ("apiregistration.k8s.io", "APIService") => keyed("type"),
        // Job conditions: patchMergeKey=type but listType=atomic.
        ("batch", "Job") => Some(ListInfo {
            smp: ListStrategy::map(&["type"]),
            ssa: ListStrategy::Atomic,
        }),
        _ => None,
    }
}

fn lookup(group: &str, kind: &str, path: &[&str]) -> Option<ListInfo> {
    if let ["metadata", rel @ ..] = path {
        return object_meta_list(rel);
    }
    if let Some(rel) = template_meta_rel(group, kind, path) {
        return object_meta_list(rel);
    }
    if let Some(rel) = pod_spec_rel(group, kind, path) {
        return pod_spec_list(rel);
    }
    if path == ["status", "conditions"] {
        return conditions_by_type(group, kind);
    }
    match (group, kind, path) {
        ("", "Pod", ["status", "podIPs" | "hostIPs"]) => keyed("ip"),
        ("", "Pod", ["status", "resourceClaimStatuses"]) => keyed("name"),
        ("", "Service", ["spec", "ports"]) => Some(ListInfo {
            smp: ListStrategy::map(&["port"]),
            ssa: ListStrategy::map(&["port", "protocol"]),
        }),
        ("", "ServiceAccount", ["secrets"]) => keyed("name"),
        ("storage.k8s.io", "CSINode", ["spec", "drivers"]) => keyed("name"),
        ("", "Node", ["spec", "podCIDRs"]) => same(ListStrategy::Set),
        ("", "Node", ["status", "addresses"]) => keyed("type"),
        (
            "admissionregistration.k8s.io",
            "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
            ["webhooks"] | ["webhooks", "matchConditions"],
        ) => keyed("name"),
        _ => None,
    }
}

/// Strategic-merge-patch strategy for the list at `path` in an object of
/// `group`/`kind` (from `patchStrategy`/`patchMergeKey`). Lists without a
/// patch strategy (including every unknown path) are replaced: `Atomic`.
pub(super) fn list_strategy(group: &str, kind: &str, path: &[&str]) -> ListStrategy {
    lookup(group, kind, path).map_or(ListStrategy::Atomic, |i| i.smp)
}

/// Server-side-apply strategy for the list at `path` (from `listType` and
/// `listMapKey`). Lists without a list type are atomic.
pub(super) fn apply_list_strategy(group: &str, kind: &str, path: &[&str]) -> ListStrategy {
    lookup(group, kind, path).map_or(ListStrategy::Atomic, |i| i.ssa)
}

/// Whether `$retainKeys` applies to the object at `path` (for list items:
/// the list's path), i.e. the field has `patchStrategy` containing
/// `retainKeys`: pod volumes and resource claims, and Deployment
/// `spec.strategy`.
pub(super) fn retain_keys_allowed(group: &str, kind: &str, path: &[&str]) -> bool {
    if (group, kind) == ("apps", "Deployment") && path == ["spec", "strategy"] {
        return true;
    }
    matches!(
        pod_spec_rel(group, kind, path),
        Some(["volumes"] | ["resourceClaims"])
    )
}

/// Whether the object at `path` is atomic for server-side apply
/// (`structType=atomic` such as LabelSelector, OwnerReference,
/// ObjectReference, RoleRef and key selectors, or `mapType=atomic` such as
/// `nodeSelector` and Service `spec.selector`).
pub(super) fn map_is_atomic(group: &str, kind: &str, path: &[&str]) -> bool {
    if path == ["metadata", "ownerReferences"] {
        return true;
    }
    if pod_template_root(group, kind).is_some() && path == ["spec", "selector"] {
        return true;
    }
    if template_meta_rel(group, kind, path) == Some(&["ownerReferences"][..]) {
        return true;
    }
    if let Some(rel) = pod_spec_rel(group, kind, path) {
        return match rel {
            ["nodeSelector"]
            | ["topologySpreadConstraints", "labelSelector"]
            | [
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
            ]
            | ["imagePullSecrets"] => true,
            [c, "env", "valueFrom", sel] if is_container_list(c) => matches!(
                *sel,
                "configMapKeyRef" | "secretKeyRef" | "fieldRef" | "resourceFieldRef"
            ),
            _ => false,
        };
    }
    matches!(
        (group, kind, path),
        ("", "Service", ["spec", "selector"])
            | ("", "Event", ["involvedObject"] | ["related"])
            | ("events.k8s.io", "Event", ["regarding"] | ["related"])
            | (
                "rbac.authorization.k8s.io",
                "RoleBinding" | "ClusterRoleBinding",
                ["roleRef"]
            )
            | (
                "admissionregistration.k8s.io",
                "ValidatingWebhookConfiguration" | "MutatingWebhookConfiguration",
                ["webhooks", "namespaceSelector" | "objectSelector"],
            )
    )
}

/// OpenAPI defaults of list-map key fields of built-in kinds.
fn builtin_key_default(_path: &[&str], key: &str) -> Option<Value> {
    (key == "protocol").then(|| Value::String("TCP".to_string()))
}
