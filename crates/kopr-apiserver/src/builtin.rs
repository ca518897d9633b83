//! The built-in resources kopr-apiserver serves, with the names, scopes and
//! subresources kube-apiserver gives them.

use crate::resources::{Catalog, ResourceType};

/// Registers every built-in resource.
pub fn register_builtins(catalog: &Catalog) {
    let core = |plural: &str, singular: &str, kind: &str, namespaced: bool| {
        ResourceType::new("", "v1", plural, singular, kind, namespaced)
    };
    let all = &["all"];
    for rt in [
        core("namespaces", "namespace", "Namespace", false)
            .short(&["ns"])
            .with_status(),
        core("configmaps", "configmap", "ConfigMap", true).short(&["cm"]),
        core("secrets", "secret", "Secret", true),
        core("services", "service", "Service", true)
            .short(&["svc"])
            .categories(all)
            .with_status(),
        core("serviceaccounts", "serviceaccount", "ServiceAccount", true).short(&["sa"]),
        core("pods", "pod", "Pod", true)
            .short(&["po"])
            .categories(all)
            .with_status()
            .with_log(),
        core("events", "event", "Event", true).short(&["ev"]),
        core("nodes", "node", "Node", false)
            .short(&["no"])
            .with_status(),
        ResourceType::new(
            "apps",
            "v1",
            "deployments",
            "deployment",
            "Deployment",
            true,
        )
        .short(&["deploy"])
        .categories(all)
        .with_status()
        .with_scale(),
        ResourceType::new(
            "apps",
            "v1",
            "replicasets",
            "replicaset",
            "ReplicaSet",
            true,
        )
        .short(&["rs"])
        .categories(all)
        .with_status()
        .with_scale(),
        ResourceType::new(
            "apps",
            "v1",
            "statefulsets",
            "statefulset",
            "StatefulSet",
            true,
        )
        .short(&["sts"])
        .categories(all)
        .with_status()
        .with_scale(),
        ResourceType::new("batch", "v1", "jobs", "job", "Job", true)
            .categories(all)
            .with_status(),
        ResourceType::new(
            "coordination.k8s.io",
            "v1",
            "leases",
            "lease",
            "Lease",
            true,
        ),
        ResourceType::new("events.k8s.io", "v1", "events", "event", "Event", true)
            .short(&["ev"])
            .stored_as("core/events", "v1"),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "clusterrolebinding",
            "ClusterRoleBinding",
            false,
        ),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            false,
        ),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "rolebinding",
            "RoleBinding",
            true,
        ),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "role",
            "Role",
            true,
        ),
        ResourceType::new(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "customresourcedefinition",
            "CustomResourceDefinition",
            false,
        )
        .short(&["crd", "crds"])
        .categories(&["api-extensions"])
        .with_status(),
        ResourceType::new(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            "MutatingWebhookConfiguration",
            false,
        ),
        ResourceType::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            "ValidatingWebhookConfiguration",
            false,
        ),
    ] {
        catalog.register(rt);
    }
}

/// Namespaces created at first start.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that can never be deleted.
pub const UNDELETABLE_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public"];

/// Whether an API group is one of the built-in groups (not served by CRDs).
pub fn is_builtin_group(group: &str) -> bool {
    matches!(
        group,
        "" | "apps"
            | "batch"
            | "coordination.k8s.io"
            | "events.k8s.io"
            | "rbac.authorization.k8s.io"
            | "admissionregistration.k8s.io"
            | "apiextensions.k8s.io"
            | "meta.k8s.io"
    )
}
