//! The core group (`v1`): pods, services, config, storage claims, namespaces, nodes and the rest of kube's original API, in kube-apiserver's discovery order.

use std::sync::Arc;

use k8s_openapi::api::core;

use super::{ALL, create_on_update, generation, plain};
use crate::defaults;
use crate::quota::evaluators::Measured;
use crate::registry::strategy::{
    NamespaceStrategy, NodeStrategy, PodStrategy, ServiceStrategy, VolumeStrategy,
};
use crate::resources::Computed;
use crate::resources::kind::{BodyDef, KindDef, Known, Scope, Sub, schema_of};
use crate::selectors;
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of the core group, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new("", "v1", "bindings", "Binding", Scope::Namespaced).computed(Computed::Binding),
    KindDef::new(
        "",
        "v1",
        "componentstatuses",
        "ComponentStatus",
        Scope::Cluster,
    )
    .short(&["cs"])
    .only_verbs(&["get", "list"])
    .computed(Computed::ComponentStatus)
    .schema(schema_of::<core::v1::ComponentStatus>)
    .printer(Printer::ComponentStatus),
    KindDef::new("", "v1", "configmaps", "ConfigMap", Scope::Namespaced)
        .short(&["cm"])
        .stored(plain, decode_as::<core::v1::ConfigMap>)
        .schema(schema_of::<core::v1::ConfigMap>)
        .validate(validation::kinds::config_map)
        .printer(Printer::ConfigMap),
    KindDef::new("", "v1", "endpoints", "Endpoints", Scope::Namespaced)
        .short(&["ep"])
        .stored(plain, decode_as::<core::v1::Endpoints>)
        .schema(schema_of::<core::v1::Endpoints>)
        .validate(validation::kinds::endpoints::endpoints)
        .default(defaults::by_kind::endpoints)
        .printer(Printer::Endpoints),
    KindDef::new("", "v1", "events", "Event", Scope::Namespaced)
        .short(&["ev"])
        .stored(create_on_update, decode_as::<core::v1::Event>)
        .schema(schema_of::<core::v1::Event>)
        .validate(validation::kinds::core_event)
        .printer(Printer::Event)
        .fields(&selectors::EVENT_FIELDS),
    KindDef::new("", "v1", "limitranges", "LimitRange", Scope::Namespaced)
        .short(&["limits"])
        .stored(plain, decode_as::<core::v1::LimitRange>)
        .schema(schema_of::<core::v1::LimitRange>)
        .validate(validation::kinds::quota::limit_range)
        .default(defaults::by_kind::limit_range),
    KindDef::new("", "v1", "namespaces", "Namespace", Scope::Cluster)
        .known(Known::Namespaces)
        .short(&["ns"])
        .subresources(&[Sub::Status])
        .stored(
            || Arc::new(NamespaceStrategy),
            decode_as::<core::v1::Namespace>,
        )
        .schema(schema_of::<core::v1::Namespace>)
        .validate(validation::kinds::namespace)
        .default(defaults::by_kind::namespace)
        .printer(Printer::Namespace)
        .fields(&selectors::NAMESPACE_FIELDS),
    KindDef::new("", "v1", "nodes", "Node", Scope::Cluster)
        .known(Known::Nodes)
        .short(&["no"])
        .subresources(&[Sub::Status, Sub::Proxy])
        .stored(|| Arc::new(NodeStrategy), decode_as::<core::v1::Node>)
        .schema(schema_of::<core::v1::Node>)
        .validate(validation::kinds::node)
        .default(defaults::by_kind::node)
        .printer(Printer::Node)
        .fields(&selectors::NODE_FIELDS),
    KindDef::new(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        Scope::Namespaced,
    )
    .quota(Measured::Claims)
    .short(&["pvc"])
    .subresources(&[Sub::Status])
    .stored(
        || Arc::new(VolumeStrategy::CLAIM),
        decode_as::<core::v1::PersistentVolumeClaim>,
    )
    .schema(schema_of::<core::v1::PersistentVolumeClaim>)
    .validate(validation::kinds::volumes::persistent_volume_claim)
    .default(defaults::by_kind::persistent_volume_claim)
    .printer(Printer::PersistentVolumeClaim),
    KindDef::new(
        "",
        "v1",
        "persistentvolumes",
        "PersistentVolume",
        Scope::Cluster,
    )
    .short(&["pv"])
    .subresources(&[Sub::Status])
    .stored(
        || Arc::new(VolumeStrategy::VOLUME),
        decode_as::<core::v1::PersistentVolume>,
    )
    .schema(schema_of::<core::v1::PersistentVolume>)
    .validate(validation::kinds::volumes::persistent_volume)
    .default(defaults::by_kind::persistent_volume)
    .printer(Printer::PersistentVolume),
    KindDef::new("", "v1", "pods", "Pod", Scope::Namespaced)
        .known(Known::Pods)
        .quota(Measured::Pods)
        .short(&["po"])
        .categories(ALL)
        .subresources(&[
            Sub::Status,
            Sub::Log,
            Sub::Binding,
            Sub::Eviction,
            Sub::EphemeralContainers,
            Sub::Exec,
            Sub::Attach,
            Sub::PortForward,
        ])
        .stored(|| Arc::new(PodStrategy), decode_as::<core::v1::Pod>)
        .schema(schema_of::<core::v1::Pod>)
        .validate(validation::kinds::pod_kind)
        .default(defaults::by_kind::pod)
        .printer(Printer::Pod)
        .fields(&selectors::POD_FIELDS),
    KindDef::new("", "v1", "podtemplates", "PodTemplate", Scope::Namespaced)
        .stored(generation, decode_as::<core::v1::PodTemplate>)
        .schema(schema_of::<core::v1::PodTemplate>)
        .validate(validation::kinds::replication::pod_template)
        .default(defaults::by_kind::pod_template)
        .printer(Printer::PodTemplate),
    KindDef::new(
        "",
        "v1",
        "replicationcontrollers",
        "ReplicationController",
        Scope::Namespaced,
    )
    .short(&["rc"])
    .categories(ALL)
    .subresources(&[Sub::Status, Sub::Scale])
    .stored(generation, decode_as::<core::v1::ReplicationController>)
    .schema(schema_of::<core::v1::ReplicationController>)
    .validate(validation::kinds::replication::replication_controller)
    .default(defaults::by_kind::replication_controller)
    .printer(Printer::ReplicationController)
    .fields(&selectors::REPLICATION_CONTROLLER_FIELDS),
    KindDef::new(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        Scope::Namespaced,
    )
    .short(&["quota"])
    .subresources(&[Sub::Status])
    .stored(plain, decode_as::<core::v1::ResourceQuota>)
    .schema(schema_of::<core::v1::ResourceQuota>)
    .validate(validation::kinds::quota::resource_quota)
    .printer(Printer::ResourceQuota),
    KindDef::new("", "v1", "secrets", "Secret", Scope::Namespaced)
        .stored(plain, decode_as::<core::v1::Secret>)
        .schema(schema_of::<core::v1::Secret>)
        .validate(validation::kinds::secret)
        .default(defaults::by_kind::secret)
        .printer(Printer::Secret)
        .fields(&selectors::SECRET_FIELDS),
    KindDef::new(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        Scope::Namespaced,
    )
    .known(Known::ServiceAccounts)
    .short(&["sa"])
    .subresources(&[Sub::Token])
    .stored(plain, decode_as::<core::v1::ServiceAccount>)
    .schema(schema_of::<core::v1::ServiceAccount>)
    .validate(validation::kinds::service_account)
    .printer(Printer::ServiceAccount),
    KindDef::new("", "v1", "services", "Service", Scope::Namespaced)
        .known(Known::Services)
        .quota(Measured::Services)
        .short(&["svc"])
        .categories(ALL)
        .subresources(&[Sub::Status])
        .stored(|| Arc::new(ServiceStrategy), decode_as::<core::v1::Service>)
        .schema(schema_of::<core::v1::Service>)
        .validate(validation::kinds::service)
        .default(defaults::by_kind::service)
        .printer(Printer::Service)
        .fields(&selectors::SERVICE_FIELDS),
];

/// The body of a pod's `binding` subresource.
pub(super) static BODIES: &[BodyDef] = &[BodyDef {
    group: "",
    version: "v1",
    kind: "Binding",
    schema: schema_of::<core::v1::Binding>,
}];
