//! The core group (`v1`): pods, services, config, storage claims, namespaces, nodes and the rest of kube's original API, in kube-apiserver's discovery order.

use std::sync::Arc;

use k8s_openapi::api::core;

use super::{ALL, create_on_update, generation, plain};
use crate::registry::strategy::{
    NamespaceStrategy, NodeStrategy, PodStrategy, ServiceStrategy, VolumeStrategy,
};
use crate::resources::Computed;
use crate::resources::kind::{KindDef, Scope, Sub};
use crate::typed::decode_as;

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
    .computed(Computed::ComponentStatus),
    KindDef::new("", "v1", "configmaps", "ConfigMap", Scope::Namespaced)
        .short(&["cm"])
        .stored(plain, decode_as::<core::v1::ConfigMap>),
    KindDef::new("", "v1", "endpoints", "Endpoints", Scope::Namespaced)
        .short(&["ep"])
        .stored(plain, decode_as::<core::v1::Endpoints>),
    KindDef::new("", "v1", "events", "Event", Scope::Namespaced)
        .short(&["ev"])
        .stored(create_on_update, decode_as::<core::v1::Event>),
    KindDef::new("", "v1", "limitranges", "LimitRange", Scope::Namespaced)
        .short(&["limits"])
        .stored(plain, decode_as::<core::v1::LimitRange>),
    KindDef::new("", "v1", "namespaces", "Namespace", Scope::Cluster)
        .short(&["ns"])
        .subresources(&[Sub::Status])
        .stored(
            || Arc::new(NamespaceStrategy),
            decode_as::<core::v1::Namespace>,
        ),
    KindDef::new("", "v1", "nodes", "Node", Scope::Cluster)
        .short(&["no"])
        .subresources(&[Sub::Status])
        .stored(|| Arc::new(NodeStrategy), decode_as::<core::v1::Node>),
    KindDef::new(
        "",
        "v1",
        "persistentvolumeclaims",
        "PersistentVolumeClaim",
        Scope::Namespaced,
    )
    .short(&["pvc"])
    .subresources(&[Sub::Status])
    .stored(
        || Arc::new(VolumeStrategy::CLAIM),
        decode_as::<core::v1::PersistentVolumeClaim>,
    ),
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
    ),
    KindDef::new("", "v1", "pods", "Pod", Scope::Namespaced)
        .short(&["po"])
        .categories(ALL)
        .subresources(&[
            Sub::Status,
            Sub::Log,
            Sub::Binding,
            Sub::Eviction,
            Sub::EphemeralContainers,
        ])
        .stored(|| Arc::new(PodStrategy), decode_as::<core::v1::Pod>),
    KindDef::new("", "v1", "podtemplates", "PodTemplate", Scope::Namespaced)
        .stored(generation, decode_as::<core::v1::PodTemplate>),
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
    .stored(generation, decode_as::<core::v1::ReplicationController>),
    KindDef::new(
        "",
        "v1",
        "resourcequotas",
        "ResourceQuota",
        Scope::Namespaced,
    )
    .short(&["quota"])
    .subresources(&[Sub::Status])
    .stored(plain, decode_as::<core::v1::ResourceQuota>),
    KindDef::new("", "v1", "secrets", "Secret", Scope::Namespaced)
        .stored(plain, decode_as::<core::v1::Secret>),
    KindDef::new(
        "",
        "v1",
        "serviceaccounts",
        "ServiceAccount",
        Scope::Namespaced,
    )
    .short(&["sa"])
    .subresources(&[Sub::Token])
    .stored(plain, decode_as::<core::v1::ServiceAccount>),
    KindDef::new("", "v1", "services", "Service", Scope::Namespaced)
        .short(&["svc"])
        .categories(ALL)
        .subresources(&[Sub::Status])
        .stored(|| Arc::new(ServiceStrategy), decode_as::<core::v1::Service>),
];
