//! The list-type, patch-strategy and map-type extensions kube-apiserver
//! publishes on the built-in kinds' fields. k8s-openapi's schemas do not
//! carry them, so they are listed here, agreeing with the strategic merge
//! patch and apply engines' own knowledge (`crate::patch::schema`).

use std::collections::BTreeMap;

use serde_json::{Value, json};

/// How one list (or map) property merges, as kube's OpenAPI tells clients.
struct ListExt {
    /// `x-kubernetes-patch-strategy`.
    strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`.
    list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys`.
    map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type`.
    map_type: Option<&'static str>,
}

const NONE: ListExt = ListExt {
    strategy: None,
    merge_key: None,
    list_type: None,
    map_keys: &[],
    map_type: None,
};
const ATOMIC: ListExt = ListExt {
    list_type: Some("atomic"),
    ..NONE
};
const ATOMIC_MAP: ListExt = ListExt {
    map_type: Some("atomic"),
    ..NONE
};
const MERGED_SET: ListExt = ListExt {
    strategy: Some("merge"),
    list_type: Some("set"),
    ..NONE
};

/// A list merged by one key, for both strategic merge patch and apply.
const fn keyed(key: &'static [&'static str; 1]) -> ListExt {
    ListExt {
        strategy: Some("merge"),
        merge_key: Some(key[0]),
        list_type: Some("map"),
        map_keys: key,
        map_type: None,
    }
}

/// A list merged by `key` for strategic merge patch and by `keys` for apply.
const fn keyed2(key: &'static str, keys: &'static [&'static str]) -> ListExt {
    ListExt {
        strategy: Some("merge"),
        merge_key: Some(key),
        list_type: Some("map"),
        map_keys: keys,
        map_type: None,
    }
}

const BY_NAME: ListExt = keyed(&["name"]);
const BY_TYPE: ListExt = keyed(&["type"]);
const BY_IP: ListExt = keyed(&["ip"]);
const RETAIN_BY_NAME: ListExt = ListExt {
    strategy: Some("merge,retainKeys"),
    ..BY_NAME
};

/// Property extensions, by schema (name after `io.k8s.`) and property.
#[rustfmt::skip]
const PROPERTY_EXTENSIONS: &[(&str, &str, ListExt)] = &[
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "finalizers", MERGED_SET),
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "ownerReferences", keyed(&["uid"])),
    ("apimachinery.pkg.apis.meta.v1.ObjectMeta", "managedFields", ATOMIC),
    ("apimachinery.pkg.apis.meta.v1.LabelSelector", "matchExpressions", ATOMIC),
    ("api.core.v1.PodSpec", "containers", BY_NAME),
    ("api.core.v1.PodSpec", "initContainers", BY_NAME),
    ("api.core.v1.PodSpec", "ephemeralContainers", BY_NAME),
    ("api.core.v1.PodSpec", "volumes", RETAIN_BY_NAME),
    ("api.core.v1.PodSpec", "imagePullSecrets", BY_NAME),
    ("api.core.v1.PodSpec", "hostAliases", BY_IP),
    ("api.core.v1.PodSpec", "topologySpreadConstraints", keyed2("topologyKey", &["topologyKey", "whenUnsatisfiable"])),
    ("api.core.v1.PodSpec", "resourceClaims", RETAIN_BY_NAME),
    ("api.core.v1.PodSpec", "schedulingGates", BY_NAME),
    ("api.core.v1.PodSpec", "tolerations", ATOMIC),
    ("api.core.v1.PodSpec", "readinessGates", ATOMIC),
    ("api.core.v1.PodSpec", "nodeSelector", ATOMIC_MAP),
    ("api.core.v1.Container", "ports", keyed2("containerPort", &["containerPort", "protocol"])),
    ("api.core.v1.Container", "env", BY_NAME),
    ("api.core.v1.Container", "volumeMounts", keyed(&["mountPath"])),
    ("api.core.v1.Container", "volumeDevices", keyed(&["devicePath"])),
    ("api.core.v1.Container", "envFrom", ATOMIC),
    ("api.core.v1.Container", "command", ATOMIC),
    ("api.core.v1.Container", "args", ATOMIC),
    ("api.core.v1.Container", "resizePolicy", ATOMIC),
    ("api.core.v1.EphemeralContainer", "ports", keyed2("containerPort", &["containerPort", "protocol"])),
    ("api.core.v1.EphemeralContainer", "env", BY_NAME),
    ("api.core.v1.EphemeralContainer", "volumeMounts", keyed(&["mountPath"])),
    ("api.core.v1.EphemeralContainer", "volumeDevices", keyed(&["devicePath"])),
    ("api.core.v1.EphemeralContainer", "envFrom", ATOMIC),
    ("api.core.v1.EphemeralContainer", "command", ATOMIC),
    ("api.core.v1.EphemeralContainer", "args", ATOMIC),
    ("api.core.v1.EphemeralContainer", "resizePolicy", ATOMIC),
    ("api.core.v1.ResourceRequirements", "claims", ListExt { list_type: Some("map"), map_keys: &["name"], ..NONE }),
    ("api.core.v1.PodStatus", "conditions", BY_TYPE),
    ("api.core.v1.PodStatus", "podIPs", BY_IP),
    ("api.core.v1.PodStatus", "hostIPs", BY_IP),
    ("api.core.v1.PodStatus", "resourceClaimStatuses", RETAIN_BY_NAME),
    ("api.core.v1.PodStatus", "containerStatuses", ATOMIC),
    ("api.core.v1.PodStatus", "initContainerStatuses", ATOMIC),
    ("api.core.v1.PodStatus", "ephemeralContainerStatuses", ATOMIC),
    ("api.core.v1.NodeSpec", "podCIDRs", MERGED_SET),
    ("api.core.v1.NodeSpec", "taints", ATOMIC),
    ("api.core.v1.NodeStatus", "conditions", BY_TYPE),
    ("api.core.v1.NodeStatus", "addresses", BY_TYPE),
    ("api.core.v1.NamespaceStatus", "conditions", BY_TYPE),
    ("api.core.v1.ServiceSpec", "ports", keyed2("port", &["port", "protocol"])),
    ("api.core.v1.ServiceSpec", "selector", ATOMIC_MAP),
    ("api.core.v1.ServiceSpec", "clusterIPs", ATOMIC),
    ("api.core.v1.ServiceSpec", "externalIPs", ATOMIC),
    ("api.core.v1.ServiceSpec", "ipFamilies", ATOMIC),
    ("api.core.v1.ServiceSpec", "loadBalancerSourceRanges", ATOMIC),
    ("api.core.v1.ServiceStatus", "conditions", BY_TYPE),
    ("api.core.v1.ServiceAccount", "secrets", BY_NAME),
    ("api.core.v1.ServiceAccount", "imagePullSecrets", ATOMIC),
    ("api.apps.v1.DeploymentSpec", "strategy", ListExt { strategy: Some("retainKeys"), ..NONE }),
    ("api.apps.v1.DeploymentStatus", "conditions", BY_TYPE),
    ("api.apps.v1.ReplicaSetStatus", "conditions", BY_TYPE),
    ("api.apps.v1.StatefulSetStatus", "conditions", BY_TYPE),
    ("api.apps.v1.StatefulSetSpec", "volumeClaimTemplates", ATOMIC),
    ("api.batch.v1.JobStatus", "conditions", ListExt { strategy: Some("merge"), merge_key: Some("type"), list_type: Some("atomic"), ..NONE }),
    ("api.rbac.v1.Role", "rules", ATOMIC),
    ("api.rbac.v1.ClusterRole", "rules", ATOMIC),
    ("api.rbac.v1.RoleBinding", "subjects", ATOMIC),
    ("api.rbac.v1.ClusterRoleBinding", "subjects", ATOMIC),
    ("api.rbac.v1.PolicyRule", "verbs", ATOMIC),
    ("api.rbac.v1.PolicyRule", "apiGroups", ATOMIC),
    ("api.rbac.v1.PolicyRule", "resources", ATOMIC),
    ("api.rbac.v1.PolicyRule", "resourceNames", ATOMIC),
    ("api.rbac.v1.PolicyRule", "nonResourceURLs", ATOMIC),
    ("api.rbac.v1.AggregationRule", "clusterRoleSelectors", ATOMIC),
    ("api.admissionregistration.v1.ValidatingWebhookConfiguration", "webhooks", BY_NAME),
    ("api.admissionregistration.v1.MutatingWebhookConfiguration", "webhooks", BY_NAME),
    ("api.admissionregistration.v1.ValidatingWebhook", "matchConditions", BY_NAME),
    ("api.admissionregistration.v1.MutatingWebhook", "matchConditions", BY_NAME),
    ("api.admissionregistration.v1.ValidatingWebhook", "rules", ATOMIC),
    ("api.admissionregistration.v1.MutatingWebhook", "rules", ATOMIC),
    ("api.admissionregistration.v1.ValidatingWebhook", "admissionReviewVersions", ATOMIC),
    ("api.admissionregistration.v1.MutatingWebhook", "admissionReviewVersions", ATOMIC),
];

/// Schemas that are atomic as a whole (`x-kubernetes-map-type: atomic`).
const ATOMIC_TYPES: &[&str] = &[
    "apimachinery.pkg.apis.meta.v1.LabelSelector",
    "apimachinery.pkg.apis.meta.v1.OwnerReference",
    "api.core.v1.ObjectReference",
    "api.core.v1.LocalObjectReference",
    "api.core.v1.ConfigMapKeySelector",
    "api.core.v1.SecretKeySelector",
    "api.core.v1.ObjectFieldSelector",
    "api.core.v1.ResourceFieldSelector",
    "api.core.v1.NodeSelector",
    "api.core.v1.TypedLocalObjectReference",
    "api.rbac.v1.RoleRef",
];

/// Adds the list-type, patch-strategy and map-type extensions kube
/// publishes for the fields the strategic merge patch and apply engines
/// treat specially.
pub(super) fn apply_extensions(defs: &mut BTreeMap<String, Value>) {
    for (schema, property, ext) in PROPERTY_EXTENSIONS {
        let Some(Value::Object(p)) = defs
            .get_mut(&format!("io.k8s.{schema}"))
            .and_then(|s| s.pointer_mut(&format!("/properties/{property}")))
        else {
            continue;
        };
        let mut set = |k: &str, v: Option<&str>| {
            if let Some(v) = v {
                p.insert(k.into(), json!(v));
            }
        };
        set("x-kubernetes-list-type", ext.list_type);
        set("x-kubernetes-map-type", ext.map_type);
        set("x-kubernetes-patch-merge-key", ext.merge_key);
        set("x-kubernetes-patch-strategy", ext.strategy);
        if !ext.map_keys.is_empty() {
            p.insert("x-kubernetes-list-map-keys".into(), json!(ext.map_keys));
        }
    }
    for schema in ATOMIC_TYPES {
        if let Some(Value::Object(m)) = defs.get_mut(&format!("io.k8s.{schema}")) {
            m.insert("x-kubernetes-map-type".into(), json!("atomic"));
        }
    }
}
