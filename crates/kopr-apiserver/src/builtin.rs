//! The built-in resources kopr-apiserver serves, with the names, scopes and
//! subresources kube-apiserver gives them.

use crate::registry::strategy::{
    ApiServiceStrategy, Builtin, DaemonSetStrategy, DefinitionStrategy, EventStrategy,
    HpaV1Strategy, NamespaceStrategy, NodeStrategy, PodStrategy, ServiceStrategy,
    SigningRequestStrategy, VolumeStrategy,
};
use crate::resources::{Catalog, Computed, ResourceType};

/// Registers every built-in resource, each with its strategy.
pub fn register_builtins(catalog: &Catalog) {
    let mut all: Vec<ResourceType> = core()
        .into_iter()
        .chain(grouped())
        .chain(reviews())
        .collect();
    // Discovery lists the groups by their APIServices' priorities.
    all.sort_by_key(|rt| std::cmp::Reverse(group_priority(&rt.group)));
    for rt in all {
        catalog.register(rt);
    }
}

/// The APIService priorities of the built-in group versions, as
/// kube-apiserver 1.32 registers them: `(group, version,
/// groupPriorityMinimum, versionPriority)`, highest group first.
pub const API_SERVICE_PRIORITIES: &[(&str, &str, u32, u32)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// A group's APIService priority (`groupPriorityMinimum`); the core group
/// sorts first, groups of custom resources (1000) last.
pub fn group_priority(group: &str) -> u32 {
    if group.is_empty() {
        return u32::MAX;
    }
    API_SERVICE_PRIORITIES
        .iter()
        .find(|(g, ..)| *g == group)
        .map_or(1000, |(_, _, p, _)| *p)
}

/// A resource of `group`/`version` whose singular name is its kind in
/// lower case, as for every built-in kind.
fn res(group: &str, version: &str, plural: &str, kind: &str, namespaced: bool) -> ResourceType {
    ResourceType::new(
        group,
        version,
        plural,
        &kind.to_ascii_lowercase(),
        kind,
        namespaced,
    )
}

const ALL: &[&str] = &["all"];
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// The core (`v1`) resources, in kube-apiserver's discovery order.
fn core() -> Vec<ResourceType> {
    let core = |plural: &str, kind: &str, namespaced: bool| res("", "v1", plural, kind, namespaced);
    vec![
        core("bindings", "Binding", true).computed(Computed::Binding),
        core("componentstatuses", "ComponentStatus", false)
            .short(&["cs"])
            .only_verbs(&["get", "list"])
            .computed(Computed::ComponentStatus),
        core("configmaps", "ConfigMap", true)
            .short(&["cm"])
            .strategy(Builtin::PLAIN),
        core("endpoints", "Endpoints", true)
            .short(&["ep"])
            .strategy(Builtin::PLAIN),
        core("events", "Event", true)
            .short(&["ev"])
            .strategy(Builtin::CREATE_ON_UPDATE),
        core("limitranges", "LimitRange", true)
            .short(&["limits"])
            .strategy(Builtin::PLAIN),
        core("namespaces", "Namespace", false)
            .short(&["ns"])
            .with_status()
            .strategy(NamespaceStrategy),
        core("nodes", "Node", false)
            .short(&["no"])
            .with_status()
            .strategy(NodeStrategy),
        core("persistentvolumeclaims", "PersistentVolumeClaim", true)
            .short(&["pvc"])
            .with_status()
            .strategy(VolumeStrategy::CLAIM),
        core("persistentvolumes", "PersistentVolume", false)
            .short(&["pv"])
            .with_status()
            .strategy(VolumeStrategy::VOLUME),
        core("pods", "Pod", true)
            .short(&["po"])
            .categories(ALL)
            .with_status()
            .with_log()
            .with_binding()
            .with_eviction()
            .with_ephemeral_containers()
            .strategy(PodStrategy),
        core("podtemplates", "PodTemplate", true).strategy(Builtin::GENERATION),
        core("replicationcontrollers", "ReplicationController", true)
            .short(&["rc"])
            .categories(ALL)
            .with_status()
            .with_scale()
            .strategy(Builtin::GENERATION),
        core("resourcequotas", "ResourceQuota", true)
            .short(&["quota"])
            .with_status()
            .strategy(Builtin::PLAIN),
        core("secrets", "Secret", true).strategy(Builtin::PLAIN),
        core("serviceaccounts", "ServiceAccount", true)
            .short(&["sa"])
            .with_token()
            .strategy(Builtin::PLAIN),
        core("services", "Service", true)
            .short(&["svc"])
            .categories(ALL)
            .with_status()
            .strategy(ServiceStrategy),
    ]
}

/// The resources of the named groups, the groups in kube-apiserver's
/// discovery order (their APIServices' priorities).
fn grouped() -> Vec<ResourceType> {
    let apps = |plural: &str, kind: &str| res("apps", "v1", plural, kind, true);
    let rbac = |plural: &str, kind: &str, namespaced: bool| {
        res("rbac.authorization.k8s.io", "v1", plural, kind, namespaced)
            .strategy(Builtin::CREATE_ON_UPDATE)
    };
    let admission = |plural: &str, kind: &str| {
        res("admissionregistration.k8s.io", "v1", plural, kind, false)
            .categories(API_EXTENSIONS)
            .strategy(Builtin::GENERATION)
    };
    let storage = |plural: &str, kind: &str, namespaced: bool| {
        res("storage.k8s.io", "v1", plural, kind, namespaced).strategy(Builtin::PLAIN)
    };
    let flow = |plural: &str, kind: &str| {
        res("flowcontrol.apiserver.k8s.io", "v1", plural, kind, false)
            .with_status()
            .strategy(Builtin::GENERATION)
    };
    vec![
        res(
            "apiregistration.k8s.io",
            "v1",
            "apiservices",
            "APIService",
            false,
        )
        .categories(API_EXTENSIONS)
        .with_status()
        .strategy(ApiServiceStrategy),
        apps("controllerrevisions", "ControllerRevision").strategy(Builtin::PLAIN),
        apps("daemonsets", "DaemonSet")
            .short(&["ds"])
            .categories(ALL)
            .with_status()
            .strategy(DaemonSetStrategy),
        apps("deployments", "Deployment")
            .short(&["deploy"])
            .categories(ALL)
            .with_status()
            .with_scale()
            .strategy(Builtin::GENERATION),
        apps("replicasets", "ReplicaSet")
            .short(&["rs"])
            .categories(ALL)
            .with_status()
            .with_scale()
            .strategy(Builtin::GENERATION),
        apps("statefulsets", "StatefulSet")
            .short(&["sts"])
            .categories(ALL)
            .with_status()
            .with_scale()
            .strategy(Builtin::GENERATION),
        res("events.k8s.io", "v1", "events", "Event", true)
            .short(&["ev"])
            .stored_as("core/events", "v1")
            .strategy(EventStrategy),
        res(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
        )
        .short(&["hpa"])
        .categories(ALL)
        .with_status()
        .strategy(Builtin::GENERATION),
        res(
            "autoscaling",
            "v1",
            "horizontalpodautoscalers",
            "HorizontalPodAutoscaler",
            true,
        )
        .short(&["hpa"])
        .categories(ALL)
        .with_status()
        .stored_as("autoscaling/horizontalpodautoscalers", "autoscaling/v2")
        .strategy(HpaV1Strategy),
        res("batch", "v1", "cronjobs", "CronJob", true)
            .short(&["cj"])
            .categories(ALL)
            .with_status()
            .strategy(Builtin::GENERATION),
        res("batch", "v1", "jobs", "Job", true)
            .categories(ALL)
            .with_status()
            .strategy(Builtin::JOB),
        res(
            "certificates.k8s.io",
            "v1",
            "certificatesigningrequests",
            "CertificateSigningRequest",
            false,
        )
        .short(&["csr"])
        .with_status()
        .with_approval()
        .strategy(SigningRequestStrategy),
        res(
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            "IngressClass",
            false,
        )
        .strategy(Builtin::GENERATION),
        res("networking.k8s.io", "v1", "ingresses", "Ingress", true)
            .short(&["ing"])
            .with_status()
            .strategy(Builtin::GENERATION),
        res(
            "networking.k8s.io",
            "v1",
            "networkpolicies",
            "NetworkPolicy",
            true,
        )
        .short(&["netpol"])
        .strategy(Builtin::GENERATION),
        res(
            "policy",
            "v1",
            "poddisruptionbudgets",
            "PodDisruptionBudget",
            true,
        )
        .short(&["pdb"])
        .with_status()
        .strategy(Builtin::GENERATION),
        rbac("clusterrolebindings", "ClusterRoleBinding", false),
        rbac("clusterroles", "ClusterRole", false),
        rbac("rolebindings", "RoleBinding", true),
        rbac("roles", "Role", true),
        storage("csidrivers", "CSIDriver", false),
        storage("csinodes", "CSINode", false),
        storage("csistoragecapacities", "CSIStorageCapacity", true),
        storage("storageclasses", "StorageClass", false).short(&["sc"]),
        storage("volumeattachments", "VolumeAttachment", false).with_status(),
        admission(
            "mutatingwebhookconfigurations",
            "MutatingWebhookConfiguration",
        ),
        admission("validatingadmissionpolicies", "ValidatingAdmissionPolicy").with_status(),
        admission(
            "validatingadmissionpolicybindings",
            "ValidatingAdmissionPolicyBinding",
        ),
        admission(
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
        ),
        res(
            "apiextensions.k8s.io",
            "v1",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
        )
        .short(&["crd", "crds"])
        .categories(API_EXTENSIONS)
        .with_status()
        .strategy(DefinitionStrategy),
        res(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            "PriorityClass",
            false,
        )
        .short(&["pc"])
        .strategy(Builtin::PLAIN),
        res("coordination.k8s.io", "v1", "leases", "Lease", true)
            .strategy(Builtin::CREATE_ON_UPDATE),
        res("node.k8s.io", "v1", "runtimeclasses", "RuntimeClass", false).strategy(Builtin::PLAIN),
        res(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            true,
        )
        .strategy(Builtin::GENERATION),
        flow("flowschemas", "FlowSchema"),
        flow("prioritylevelconfigurations", "PriorityLevelConfiguration"),
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
        "" | "apiregistration.k8s.io"
            | "apps"
            | "events.k8s.io"
            | "authentication.k8s.io"
            | "authorization.k8s.io"
            | "autoscaling"
            | "batch"
            | "certificates.k8s.io"
            | "networking.k8s.io"
            | "policy"
            | "rbac.authorization.k8s.io"
            | "storage.k8s.io"
            | "admissionregistration.k8s.io"
            | "apiextensions.k8s.io"
            | "scheduling.k8s.io"
            | "coordination.k8s.io"
            | "node.k8s.io"
            | "discovery.k8s.io"
            | "flowcontrol.apiserver.k8s.io"
            | "meta.k8s.io"
    )
}
