//! The built-in resources kopr-apiserver serves, with the names, scopes and
//! subresources kube-apiserver gives them.

use crate::registry::strategy::{
    Builtin, DefinitionStrategy, EventStrategy, NamespaceStrategy, PodStrategy, ServiceStrategy,
};
use crate::resources::{Catalog, Computed, ResourceType};

/// Registers every built-in resource, each with its strategy.
pub fn register_builtins(catalog: &Catalog) {
    for rt in core().into_iter().chain(grouped()).chain(reviews()) {
        catalog.register(rt);
    }
}

/// The core (`v1`) resources.
fn core() -> Vec<ResourceType> {
    let core = |plural: &str, singular: &str, kind: &str, namespaced: bool| {
        ResourceType::new("", "v1", plural, singular, kind, namespaced)
    };
    let all = &["all"];
    vec![
        core("namespaces", "namespace", "Namespace", false)
            .short(&["ns"])
            .with_status()
            .strategy(NamespaceStrategy),
        core("configmaps", "configmap", "ConfigMap", true)
            .short(&["cm"])
            .strategy(Builtin::PLAIN),
        core("secrets", "secret", "Secret", true).strategy(Builtin::PLAIN),
        // Written by hand to point a Service (say, an admission webhook's)
        // at an address: there is no endpoints controller.
        core("endpoints", "endpoints", "Endpoints", true)
            .short(&["ep"])
            .strategy(Builtin::PLAIN),
        core("services", "service", "Service", true)
            .short(&["svc"])
            .categories(all)
            .with_status()
            .strategy(ServiceStrategy),
        core("serviceaccounts", "serviceaccount", "ServiceAccount", true)
            .short(&["sa"])
            .with_token()
            .strategy(Builtin::PLAIN),
        core("pods", "pod", "Pod", true)
            .short(&["po"])
            .categories(all)
            .with_status()
            .with_log()
            .strategy(PodStrategy),
        core("events", "event", "Event", true)
            .short(&["ev"])
            .strategy(Builtin::CREATE_ON_UPDATE),
        core("nodes", "node", "Node", false)
            .short(&["no"])
            .with_status()
            .strategy(Builtin::PLAIN),
    ]
}

/// The resources of the named groups.
fn grouped() -> Vec<ResourceType> {
    let all = &["all"];
    vec![
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
        .with_scale()
        .strategy(Builtin::GENERATION),
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
        .with_scale()
        .strategy(Builtin::GENERATION),
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
        .with_scale()
        .strategy(Builtin::GENERATION),
        ResourceType::new("batch", "v1", "jobs", "job", "Job", true)
            .categories(all)
            .with_status()
            .strategy(Builtin::JOB),
        ResourceType::new(
            "coordination.k8s.io",
            "v1",
            "leases",
            "lease",
            "Lease",
            true,
        )
        .strategy(Builtin::CREATE_ON_UPDATE),
        ResourceType::new("events.k8s.io", "v1", "events", "event", "Event", true)
            .short(&["ev"])
            .stored_as("core/events", "v1")
            .strategy(EventStrategy),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            "clusterrolebinding",
            "ClusterRoleBinding",
            false,
        )
        .strategy(Builtin::CREATE_ON_UPDATE),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            "clusterrole",
            "ClusterRole",
            false,
        )
        .strategy(Builtin::CREATE_ON_UPDATE),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            "rolebinding",
            "RoleBinding",
            true,
        )
        .strategy(Builtin::CREATE_ON_UPDATE),
        ResourceType::new(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            "role",
            "Role",
            true,
        )
        .strategy(Builtin::CREATE_ON_UPDATE),
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
        .with_status()
        .strategy(DefinitionStrategy),
        ResourceType::new(
            "admissionregistration.k8s.io",
            "v1",
            "mutatingwebhookconfigurations",
            "mutatingwebhookconfiguration",
            "MutatingWebhookConfiguration",
            false,
        )
        .strategy(Builtin::GENERATION),
        ResourceType::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "validatingwebhookconfiguration",
            "ValidatingWebhookConfiguration",
            false,
        )
        .strategy(Builtin::GENERATION),
        ResourceType::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicies",
            "validatingadmissionpolicy",
            "ValidatingAdmissionPolicy",
            false,
        )
        .categories(&["api-extensions"])
        .with_status()
        .strategy(Builtin::GENERATION),
        ResourceType::new(
            "admissionregistration.k8s.io",
            "v1",
            "validatingadmissionpolicybindings",
            "validatingadmissionpolicybinding",
            "ValidatingAdmissionPolicyBinding",
            false,
        )
        .categories(&["api-extensions"])
        .strategy(Builtin::GENERATION),
    ]
}

/// The review resources of `authentication.k8s.io` and
/// `authorization.k8s.io`, computed per request.
fn reviews() -> Vec<ResourceType> {
    let review = |group: &str, plural: &str, kind: &str, namespaced: bool, computed| {
        ResourceType::new(
            group,
            "v1",
            plural,
            &kind.to_ascii_lowercase(),
            kind,
            namespaced,
        )
        .computed(computed)
    };
    let authn = "authentication.k8s.io";
    let authz = "authorization.k8s.io";
    vec![
        review(
            authn,
            "selfsubjectreviews",
            "SelfSubjectReview",
            false,
            Computed::SelfSubjectReview,
        ),
        review(
            authn,
            "tokenreviews",
            "TokenReview",
            false,
            Computed::TokenReview,
        ),
        review(
            authz,
            "localsubjectaccessreviews",
            "LocalSubjectAccessReview",
            true,
            Computed::SubjectAccessReview,
        ),
        review(
            authz,
            "selfsubjectaccessreviews",
            "SelfSubjectAccessReview",
            false,
            Computed::SelfSubjectAccessReview,
        ),
        review(
            authz,
            "selfsubjectrulesreviews",
            "SelfSubjectRulesReview",
            false,
            Computed::SelfSubjectRulesReview,
        ),
        review(
            authz,
            "subjectaccessreviews",
            "SubjectAccessReview",
            false,
            Computed::SubjectAccessReview,
        ),
    ]
}

/// Namespaces created at first start.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that can never be deleted.
pub use crate::registry::strategy::UNDELETABLE_NAMESPACES;

/// Whether an API group is one of the built-in groups (not served by CRDs).
pub fn is_builtin_group(group: &str) -> bool {
    matches!(
        group,
        "" | "apps"
            | "batch"
            | "coordination.k8s.io"
            | "events.k8s.io"
            | "rbac.authorization.k8s.io"
            | "authentication.k8s.io"
            | "authorization.k8s.io"
            | "admissionregistration.k8s.io"
            | "apiextensions.k8s.io"
            | "meta.k8s.io"
    )
}
