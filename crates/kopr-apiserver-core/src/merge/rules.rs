//! The merge rules of the built-in types, one table keyed by Go type (its
//! OpenAPI definition name) and field (its JSON name), as kube's Go struct
//! tags give them: `patchStrategy`/`patchMergeKey` for strategic merge patch,
//! `+listType`/`+listMapKey`/`+mapType` for server-side apply, plus the types
//! tagged `+structType=atomic` and the defaults of list-map key fields.
//!
//! Fields not listed merge by the defaults: lists atomic, maps and structs
//! granular. Listed are the fields whose merge differs from those defaults,
//! and the atomic lists kopr publishes explicitly in its OpenAPI.

use std::collections::HashMap;
use std::sync::LazyLock;

use crate::patch::schema::ListStrategy;

/// How one field merges, as its Go struct tags say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldRule {
    /// `patchStrategy`: `merge`, `retainKeys` or `merge,retainKeys`.
    pub patch_strategy: Option<&'static str>,
    /// `patchMergeKey`.
    pub patch_merge_key: Option<&'static str>,
    /// `+listType`: `atomic`, `set` or `map`.
    pub list_type: Option<&'static str>,
    /// `+listMapKey`s, in declaration order.
    pub list_map_keys: &'static [&'static str],
    /// `+mapType`: `atomic` or `granular`.
    pub map_type: Option<&'static str>,
}

impl FieldRule {
    /// The list's strategy for strategic merge patch: `patchStrategy=merge`
    /// merges by the `patchMergeKey`, or as a set without one; anything else
    /// replaces the list.
    pub fn strategic(&self) -> ListStrategy {
        let merges = self
            .patch_strategy
            .is_some_and(|s| s.split(',').any(|p| p == "merge"));
        match (merges, self.patch_merge_key) {
            (true, Some(key)) => ListStrategy::map(&[key]),
            (true, None) => ListStrategy::Set,
            (false, _) => ListStrategy::Atomic,
        }
    }

    /// The list's strategy for server-side apply, from `+listType` and
    /// `+listMapKey` (atomic without a list type).
    pub fn apply(&self) -> ListStrategy {
        ListStrategy::from_openapi(
            self.list_type,
            &self
                .list_map_keys
                .iter()
                .map(|k| (*k).to_string())
                .collect::<Vec<_>>(),
        )
    }

    /// Whether the field's `patchStrategy` includes `retainKeys`.
    pub fn retains_keys(&self) -> bool {
        self.patch_strategy
            .is_some_and(|s| s.split(',').any(|p| p == "retainKeys"))
    }

    /// Whether the field is a map tagged `+mapType=atomic`.
    pub fn map_is_atomic(&self) -> bool {
        self.map_type == Some("atomic")
    }
}

const NONE: FieldRule = FieldRule {
    patch_strategy: None,
    patch_merge_key: None,
    list_type: None,
    list_map_keys: &[],
    map_type: None,
};
/// `+listType=atomic`.
const ATOMIC: FieldRule = FieldRule {
    list_type: Some("atomic"),
    ..NONE
};
/// `+mapType=atomic`.
const ATOMIC_MAP: FieldRule = FieldRule {
    map_type: Some("atomic"),
    ..NONE
};
/// `patchStrategy:"merge"` on a scalar list, `+listType=set`.
const MERGED_SET: FieldRule = FieldRule {
    patch_strategy: Some("merge"),
    list_type: Some("set"),
    ..NONE
};

/// `patchStrategy:"merge" patchMergeKey:"<keys[0]>"`, `+listType=map` with
/// `keys` as the `+listMapKey`s.
const fn keyed(keys: &'static [&'static str]) -> FieldRule {
    FieldRule {
        patch_strategy: Some("merge"),
        patch_merge_key: Some(keys[0]),
        list_type: Some("map"),
        list_map_keys: keys,
        map_type: None,
    }
}

/// `+listType=map` keyed by `keys`, without a patch strategy (strategic
/// merge patch replaces the list).
const fn apply_keyed(keys: &'static [&'static str]) -> FieldRule {
    FieldRule {
        list_type: Some("map"),
        list_map_keys: keys,
        ..NONE
    }
}

/// `rule` with `patchStrategy:"merge,retainKeys"`.
const fn retaining(rule: FieldRule) -> FieldRule {
    FieldRule {
        patch_strategy: Some("merge,retainKeys"),
        ..rule
    }
}

const BY_NAME: FieldRule = keyed(&["name"]);
const BY_TYPE: FieldRule = keyed(&["type"]);
const BY_IP: FieldRule = keyed(&["ip"]);
const PORTS: FieldRule = keyed(&["containerPort", "protocol"]);

/// The rules, by type (OpenAPI definition name) and field (JSON name).
/// Fields of embedded Go structs are listed under the embedded type (e.g.
/// `EphemeralContainerCommon`), as their tags are.
#[rustfmt::skip]
pub(super) const RULES: &[(&str, &str, FieldRule)] = &[
    // meta/v1
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", MERGED_SET),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", keyed(&["uid"])),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "managedFields", ATOMIC),
    ("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "matchExpressions", ATOMIC),
    // core/v1: pods and containers
    ("io.k8s.api.core.v1.PodSpec", "containers", BY_NAME),
    ("io.k8s.api.core.v1.PodSpec", "initContainers", BY_NAME),
    ("io.k8s.api.core.v1.PodSpec", "ephemeralContainers", BY_NAME),
    ("io.k8s.api.core.v1.PodSpec", "volumes", retaining(BY_NAME)),
    ("io.k8s.api.core.v1.PodSpec", "imagePullSecrets", BY_NAME),
    ("io.k8s.api.core.v1.PodSpec", "hostAliases", BY_IP),
    ("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints", keyed(&["topologyKey", "whenUnsatisfiable"])),
    ("io.k8s.api.core.v1.PodSpec", "resourceClaims", retaining(BY_NAME)),
    ("io.k8s.api.core.v1.PodSpec", "schedulingGates", BY_NAME),
    ("io.k8s.api.core.v1.PodSpec", "tolerations", ATOMIC),
    ("io.k8s.api.core.v1.PodSpec", "readinessGates", ATOMIC),
    ("io.k8s.api.core.v1.PodSpec", "nodeSelector", ATOMIC_MAP),
    ("io.k8s.api.core.v1.Container", "ports", PORTS),
    ("io.k8s.api.core.v1.Container", "env", BY_NAME),
    ("io.k8s.api.core.v1.Container", "volumeMounts", keyed(&["mountPath"])),
    ("io.k8s.api.core.v1.Container", "volumeDevices", keyed(&["devicePath"])),
    ("io.k8s.api.core.v1.Container", "envFrom", ATOMIC),
    ("io.k8s.api.core.v1.Container", "command", ATOMIC),
    ("io.k8s.api.core.v1.Container", "args", ATOMIC),
    ("io.k8s.api.core.v1.Container", "resizePolicy", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "ports", PORTS),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "env", BY_NAME),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "volumeMounts", keyed(&["mountPath"])),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "volumeDevices", keyed(&["devicePath"])),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "envFrom", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "command", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "args", ATOMIC),
    ("io.k8s.api.core.v1.EphemeralContainerCommon", "resizePolicy", ATOMIC),
    ("io.k8s.api.core.v1.ResourceRequirements", "claims", apply_keyed(&["name"])),
    ("io.k8s.api.core.v1.PodStatus", "conditions", BY_TYPE),
    ("io.k8s.api.core.v1.PodStatus", "podIPs", BY_IP),
    ("io.k8s.api.core.v1.PodStatus", "hostIPs", BY_IP),
    ("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses", retaining(BY_NAME)),
    ("io.k8s.api.core.v1.PodStatus", "containerStatuses", ATOMIC),
    ("io.k8s.api.core.v1.PodStatus", "initContainerStatuses", ATOMIC),
    ("io.k8s.api.core.v1.PodStatus", "ephemeralContainerStatuses", ATOMIC),
    // core/v1: the other kinds
    ("io.k8s.api.core.v1.NodeSpec", "podCIDRs", MERGED_SET),
    ("io.k8s.api.core.v1.NodeSpec", "taints", ATOMIC),
    ("io.k8s.api.core.v1.NodeStatus", "conditions", BY_TYPE),
    ("io.k8s.api.core.v1.NodeStatus", "addresses", BY_TYPE),
    ("io.k8s.api.core.v1.NamespaceStatus", "conditions", BY_TYPE),
    ("io.k8s.api.core.v1.ServiceSpec", "ports", keyed(&["port", "protocol"])),
    ("io.k8s.api.core.v1.ServiceSpec", "selector", ATOMIC_MAP),
    ("io.k8s.api.core.v1.ServiceSpec", "clusterIPs", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "externalIPs", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "ipFamilies", ATOMIC),
    ("io.k8s.api.core.v1.ServiceSpec", "loadBalancerSourceRanges", ATOMIC),
    ("io.k8s.api.core.v1.ServiceStatus", "conditions", BY_TYPE),
    ("io.k8s.api.core.v1.ServiceAccount", "secrets", BY_NAME),
    ("io.k8s.api.core.v1.ServiceAccount", "imagePullSecrets", ATOMIC),
    ("io.k8s.api.core.v1.ReplicationControllerSpec", "selector", ATOMIC_MAP),
    ("io.k8s.api.core.v1.ReplicationControllerStatus", "conditions", BY_TYPE),
    ("io.k8s.api.core.v1.PersistentVolumeClaimStatus", "conditions", BY_TYPE),
    // apps/v1, batch/v1, autoscaling/v2, policy/v1
    ("io.k8s.api.apps.v1.DeploymentSpec", "strategy", FieldRule { patch_strategy: Some("retainKeys"), ..NONE }),
    ("io.k8s.api.apps.v1.DeploymentStatus", "conditions", BY_TYPE),
    ("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions", BY_TYPE),
    ("io.k8s.api.apps.v1.StatefulSetSpec", "volumeClaimTemplates", ATOMIC),
    ("io.k8s.api.apps.v1.StatefulSetStatus", "conditions", BY_TYPE),
    ("io.k8s.api.apps.v1.DaemonSetStatus", "conditions", BY_TYPE),
    ("io.k8s.api.batch.v1.JobStatus", "conditions", FieldRule { patch_strategy: Some("merge"), patch_merge_key: Some("type"), ..ATOMIC }),
    ("io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerStatus", "conditions", BY_TYPE),
    ("io.k8s.api.policy.v1.PodDisruptionBudgetStatus", "conditions", BY_TYPE),
    // Conditions apply keys by type but strategic merge patch replaces.
    ("io.k8s.api.certificates.v1.CertificateSigningRequestStatus", "conditions", apply_keyed(&["type"])),
    ("io.k8s.api.flowcontrol.v1.FlowSchemaStatus", "conditions", apply_keyed(&["type"])),
    ("io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationStatus", "conditions", apply_keyed(&["type"])),
    ("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIServiceStatus", "conditions", BY_TYPE),
    ("io.k8s.api.storage.v1.CSINodeSpec", "drivers", BY_NAME),
    // rbac/v1
    ("io.k8s.api.rbac.v1.Role", "rules", ATOMIC),
    ("io.k8s.api.rbac.v1.ClusterRole", "rules", ATOMIC),
    ("io.k8s.api.rbac.v1.RoleBinding", "subjects", ATOMIC),
    ("io.k8s.api.rbac.v1.ClusterRoleBinding", "subjects", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "verbs", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "apiGroups", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "resources", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "resourceNames", ATOMIC),
    ("io.k8s.api.rbac.v1.PolicyRule", "nonResourceURLs", ATOMIC),
    ("io.k8s.api.rbac.v1.AggregationRule", "clusterRoleSelectors", ATOMIC),
    // admissionregistration/v1
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration", "webhooks", BY_NAME),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration", "webhooks", BY_NAME),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "matchConditions", BY_NAME),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "matchConditions", BY_NAME),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "rules", ATOMIC),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "rules", ATOMIC),
    ("io.k8s.api.admissionregistration.v1.ValidatingWebhook", "admissionReviewVersions", ATOMIC),
    ("io.k8s.api.admissionregistration.v1.MutatingWebhook", "admissionReviewVersions", ATOMIC),
];

/// Types tagged `+structType=atomic` (published as `x-kubernetes-map-type:
/// atomic`): server-side apply owns them whole.
pub(super) const ATOMIC_STRUCTS: &[&str] = &[
    "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
    "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
    "io.k8s.api.core.v1.ObjectReference",
    "io.k8s.api.core.v1.LocalObjectReference",
    "io.k8s.api.core.v1.ConfigMapKeySelector",
    "io.k8s.api.core.v1.SecretKeySelector",
    "io.k8s.api.core.v1.ObjectFieldSelector",
    "io.k8s.api.core.v1.ResourceFieldSelector",
    "io.k8s.api.core.v1.NodeSelector",
    "io.k8s.api.core.v1.TypedLocalObjectReference",
    "io.k8s.api.rbac.v1.RoleRef",
];

/// OpenAPI defaults of list-map key fields, by item type and field: apply
/// keys an item that omits the field by its default.
pub(super) const KEY_DEFAULTS: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
];

static BY_FIELD: LazyLock<HashMap<(&'static str, &'static str), &'static FieldRule>> =
    LazyLock::new(|| RULES.iter().map(|(t, f, r)| ((*t, *f), r)).collect());

/// The rule of field `field` declared by type `type_name`, if it has one.
pub fn field_rule(type_name: &str, field: &str) -> Option<&'static FieldRule> {
    BY_FIELD.get(&(type_name, field)).copied()
}

/// Whether the type is tagged `+structType=atomic`.
pub fn struct_is_atomic(type_name: &str) -> bool {
    ATOMIC_STRUCTS.contains(&type_name)
}

/// The default of the list-map key field `key` of items of type `type_name`.
pub fn key_default(type_name: &str, key: &str) -> Option<&'static str> {
    KEY_DEFAULTS
        .iter()
        .find(|(t, k, _)| *t == type_name && *k == key)
        .map(|(_, _, d)| *d)
}
