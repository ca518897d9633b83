//! Merge schema knowledge for the built-in kinds served by kopr-apiserver.
//!
//! kube-apiserver derives list and map merge semantics from Go struct tags:
//! `patchStrategy`/`patchMergeKey` drive strategic merge patch (SMP), while
//! `listType`/`listMapKey`/`mapType`/`structType` drive server-side apply
//! (SSA, structured-merge-diff). The two sets of tags do not always agree
//! (container ports merge on `containerPort` for SMP but are keyed by
//! `containerPort`+`protocol` for SSA), so this module answers both
//! questions separately.
//!
//! Paths are field paths from the object root without list indices, e.g.
//! `["spec","template","spec","containers","ports"]` for the ports of any
//! container of a Deployment. For list items the path is the path of the list.
//!
//! Custom resources: kube-apiserver rejects strategic merge patch for custom
//! resources with HTTP 415 (Unsupported Media Type); callers must check
//! [`is_builtin`] (or [`strategic_schema`] returning `None`) and produce that
//! error themselves. For SSA, custom resources get their list semantics from
//! `x-kubernetes-list-type`/`x-kubernetes-list-map-keys`/`x-kubernetes-map-type`
//! in the CRD schema: implement [`MergeSchema`] for a type wrapping the CRD
//! schema (or pass a closure, see the blanket impl) and hand it to
//! `apply::server_side_apply`. Without schema knowledge, [`apply_schema`]
//! falls back to atomic lists and granular maps, which is what
//! structured-merge-diff does for a schemaless object.

use serde_json::Value;

/// How a list (or map) at a path inside an object of a kind merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replace the whole list (SMP default; SSA `listType=atomic`).
    Atomic,
    /// Primitive list merged as a set (SMP `patchStrategy=merge` on a scalar
    /// list; SSA `listType=set`).
    Set,
    /// List of objects keyed by the given fields (SMP uses only the first key,
    /// the `patchMergeKey`; SSA uses all of them, the `listMapKey`s).
    Map {
        /// Key field names, in declaration order.
        keys: Vec<String>,
    },
}

impl ListStrategy {
    /// Builds a keyed-list strategy from key names.
    pub fn map(keys: &[&str]) -> ListStrategy {
        ListStrategy::Map {
            keys: keys.iter().map(|k| (*k).to_string()).collect(),
        }
    }

    /// Builds the strategy described by a CRD's OpenAPI extensions
    /// (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`).
    /// A missing or unknown list type is atomic, as in kube-apiserver.
    pub fn from_openapi(list_type: Option<&str>, map_keys: &[String]) -> ListStrategy {
        match list_type {
            Some("set") => ListStrategy::Set,
            Some("map") if !map_keys.is_empty() => ListStrategy::Map {
                keys: map_keys.to_vec(),
            },
            _ => ListStrategy::Atomic,
        }
    }
}

/// Which flavour of merge semantics a [`BuiltinSchema`] answers for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// Strategic merge patch (`patchStrategy`/`patchMergeKey` tags).
    Strategic,
    /// Server-side apply (`listType`/`listMapKey`/`mapType`/`structType`).
    Apply,
}

/// Pluggable merge schema used by the strategic merge patch and apply
/// engines. Closures `Fn(&[&str]) -> ListStrategy` implement it with
/// granular maps, no `$retainKeys` and no key defaults.
pub trait MergeSchema {
    /// Strategy for the list at `path`.
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;

    /// Whether the object at `path` is atomic for SSA (`structType=atomic`
    /// or `mapType=atomic`). For list items, `path` is the list's path.
    fn map_is_atomic(&self, _path: &[&str]) -> bool {
        false
    }

    /// Whether the object at `path` carries `patchStrategy=retainKeys`.
    fn retain_keys_allowed(&self, _path: &[&str]) -> bool {
        false
    }

    /// Default value of a list-map key field for items that omit it
    /// (SSA uses OpenAPI defaults, e.g. `protocol: TCP` for ports).
    fn key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }
}

impl<F> MergeSchema for F
where
    F: Fn(&[&str]) -> ListStrategy,
{
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        self(path)
    }
}

/// Merge schema of a built-in kind (or the schemaless fallback for an
/// unknown kind), for one [`Flavor`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuiltinSchema {
    /// API group ("" for the core group).
    pub group: String,
    /// Kind, e.g. "Deployment".
    pub kind: String,
    /// Which semantics to answer with.
    pub flavor: Flavor,
}

impl MergeSchema for BuiltinSchema {
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match self.flavor {
            Flavor::Strategic => list_strategy(&self.group, &self.kind, path),
            Flavor::Apply => apply_list_strategy(&self.group, &self.kind, path),
        }
    }

    fn map_is_atomic(&self, path: &[&str]) -> bool {
        match self.flavor {
            Flavor::Strategic => false,
            Flavor::Apply => map_is_atomic(&self.group, &self.kind, path),
        }
    }

    fn retain_keys_allowed(&self, path: &[&str]) -> bool {
        retain_keys_allowed(&self.group, &self.kind, path)
    }

    fn key_default(&self, path: &[&str], key: &str) -> Option<Value> {
        if self.flavor == Flavor::Apply && is_builtin(&self.group, &self.kind) {
            builtin_key_default(path, key)
        } else {
            None
        }
    }
}

/// Schema for strategic merge patch of a built-in kind; `None` for kinds this
/// module does not know (custom resources), for which kube-apiserver answers
/// 415 Unsupported Media Type.
pub fn strategic_schema(group: &str, kind: &str) -> Option<BuiltinSchema> {
    is_builtin(group, kind).then(|| BuiltinSchema {
        group: group.to_string(),
        kind: kind.to_string(),
        flavor: Flavor::Strategic,
    })
}

/// Schema for server-side apply. Unknown kinds get the schemaless fallback
/// (atomic lists, granular maps) except for `metadata`, which is shared by
/// every kind.
pub fn apply_schema(group: &str, kind: &str) -> BuiltinSchema {
    BuiltinSchema {
        group: group.to_string(),
        kind: kind.to_string(),
        flavor: Flavor::Apply,
    }
}

/// The kinds whose merge semantics this module knows.
const BUILTIN_KINDS: &[(&str, &str)] = &[
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
pub fn is_builtin(group: &str, kind: &str) -> bool {
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
pub fn list_strategy(group: &str, kind: &str, path: &[&str]) -> ListStrategy {
    lookup(group, kind, path).map_or(ListStrategy::Atomic, |i| i.smp)
}

/// Server-side-apply strategy for the list at `path` (from `listType` and
/// `listMapKey`). Lists without a list type are atomic.
pub fn apply_list_strategy(group: &str, kind: &str, path: &[&str]) -> ListStrategy {
    lookup(group, kind, path).map_or(ListStrategy::Atomic, |i| i.ssa)
}

/// Whether `$retainKeys` applies to the object at `path` (for list items:
/// the list's path), i.e. the field has `patchStrategy` containing
/// `retainKeys`: pod volumes and resource claims, and Deployment
/// `spec.strategy`.
pub fn retain_keys_allowed(group: &str, kind: &str, path: &[&str]) -> bool {
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
pub fn map_is_atomic(group: &str, kind: &str, path: &[&str]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_lists_for_every_kind() {
        for (g, k) in BUILTIN_KINDS {
            assert_eq!(
                list_strategy(g, k, &["metadata", "ownerReferences"]),
                ListStrategy::map(&["uid"])
            );
            assert_eq!(
                list_strategy(g, k, &["metadata", "finalizers"]),
                ListStrategy::Set
            );
            assert_eq!(
                apply_list_strategy(g, k, &["metadata", "finalizers"]),
                ListStrategy::Set
            );
            assert!(map_is_atomic(g, k, &["metadata", "ownerReferences"]));
        }
        // Even for unknown kinds metadata is shared.
        assert_eq!(
            apply_list_strategy("example.com", "Widget", &["metadata", "finalizers"]),
            ListStrategy::Set
        );
    }

    #[test]
    fn pod_template_lists() {
        let p = ["spec", "template", "spec", "containers"];
        for (g, k) in [
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("batch", "Job"),
        ] {
            assert_eq!(list_strategy(g, k, &p), ListStrategy::map(&["name"]));
            assert_eq!(
                list_strategy(
                    g,
                    k,
                    &["spec", "template", "spec", "initContainers", "ports"]
                ),
                ListStrategy::map(&["containerPort"])
            );
            assert_eq!(
                apply_list_strategy(g, k, &["spec", "template", "spec", "containers", "ports"]),
                ListStrategy::map(&["containerPort", "protocol"])
            );
            assert_eq!(
                list_strategy(g, k, &["spec", "template", "metadata", "finalizers"]),
                ListStrategy::Set
            );
            assert!(retain_keys_allowed(
                g,
                k,
                &["spec", "template", "spec", "volumes"]
            ));
            assert!(map_is_atomic(g, k, &["spec", "selector"]));
        }
        assert_eq!(
            list_strategy("", "Pod", &["spec", "containers", "env"]),
            ListStrategy::map(&["name"])
        );
        assert_eq!(
            list_strategy("", "Pod", &["spec", "containers", "volumeMounts"]),
            ListStrategy::map(&["mountPath"])
        );
        assert_eq!(
            list_strategy("", "Pod", &["spec", "tolerations"]),
            ListStrategy::Atomic
        );
        assert_eq!(
            list_strategy("", "Pod", &["spec", "containers", "args"]),
            ListStrategy::Atomic
        );
        assert!(map_is_atomic("", "Pod", &["spec", "nodeSelector"]));
        assert!(!map_is_atomic(
            "",
            "Pod",
            &["spec", "containers", "resources"]
        ));
    }

    #[test]
    fn conditions_and_others() {
        for (g, k) in [
            ("", "Pod"),
            ("", "Node"),
            ("", "Namespace"),
            ("apps", "Deployment"),
            ("apps", "ReplicaSet"),
            ("apps", "StatefulSet"),
            ("batch", "Job"),
        ] {
            assert_eq!(
                list_strategy(g, k, &["status", "conditions"]),
                ListStrategy::map(&["type"])
            );
        }
        assert_eq!(
            apply_list_strategy("batch", "Job", &["status", "conditions"]),
            ListStrategy::Atomic
        );
        assert_eq!(
            list_strategy("", "Service", &["spec", "ports"]),
            ListStrategy::map(&["port"])
        );
        assert_eq!(
            apply_list_strategy("", "Service", &["spec", "ports"]),
            ListStrategy::map(&["port", "protocol"])
        );
        assert_eq!(
            list_strategy("", "Node", &["status", "addresses"]),
            ListStrategy::map(&["type"])
        );
        assert_eq!(
            list_strategy("rbac.authorization.k8s.io", "Role", &["rules"]),
            ListStrategy::Atomic
        );
        assert!(retain_keys_allowed(
            "apps",
            "Deployment",
            &["spec", "strategy"]
        ));
        assert!(!retain_keys_allowed(
            "apps",
            "StatefulSet",
            &["spec", "strategy"]
        ));
        assert_eq!(
            list_strategy("", "ConfigMap", &["data"]),
            ListStrategy::Atomic
        );
    }

    #[test]
    fn builtin_and_schema_objects() {
        assert!(is_builtin("", "ConfigMap"));
        assert!(!is_builtin("example.com", "Widget"));
        assert!(strategic_schema("example.com", "Widget").is_none());
        let s = apply_schema("", "Service");
        assert_eq!(
            s.key_default(&["spec", "ports"], "protocol"),
            Some(Value::String("TCP".into()))
        );
        let closure = |p: &[&str]| {
            if p == ["items"] {
                ListStrategy::Set
            } else {
                ListStrategy::Atomic
            }
        };
        assert_eq!(closure.list_strategy(&["items"]), ListStrategy::Set);
        assert!(!closure.map_is_atomic(&["x"]));
        assert_eq!(
            ListStrategy::from_openapi(Some("map"), &["name".to_string()]),
            ListStrategy::map(&["name"])
        );
        assert_eq!(ListStrategy::from_openapi(None, &[]), ListStrategy::Atomic);
    }
}
