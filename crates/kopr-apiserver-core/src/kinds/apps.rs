//! `apps`: the workloads (Deployments, ReplicaSets, StatefulSets, DaemonSets) and their revisions.

use std::sync::Arc;

use k8s_openapi::api::apps;

use super::{ALL, generation, plain};
use crate::defaults;
use crate::registry::strategy::DaemonSetStrategy;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `apps`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "apps",
        "v1",
        "controllerrevisions",
        "ControllerRevision",
        Scope::Namespaced,
    )
    .stored(plain, decode_as::<apps::v1::ControllerRevision>)
    .schema(schema_of::<apps::v1::ControllerRevision>)
    .validate(validation::kinds::replication::controller_revision)
    .printer(Printer::ControllerRevision),
    KindDef::new("apps", "v1", "daemonsets", "DaemonSet", Scope::Namespaced)
        .short(&["ds"])
        .categories(ALL)
        .subresources(&[Sub::Status])
        .stored(
            || Arc::new(DaemonSetStrategy),
            decode_as::<apps::v1::DaemonSet>,
        )
        .schema(schema_of::<apps::v1::DaemonSet>)
        .validate(validation::kinds::daemon_set)
        .default(defaults::by_kind::daemon_set)
        .printer(Printer::DaemonSet),
    KindDef::new("apps", "v1", "deployments", "Deployment", Scope::Namespaced)
        .short(&["deploy"])
        .categories(ALL)
        .subresources(&[Sub::Status, Sub::Scale])
        .stored(generation, decode_as::<apps::v1::Deployment>)
        .schema(schema_of::<apps::v1::Deployment>)
        .validate(validation::kinds::deployment)
        .default(defaults::by_kind::deployment)
        .printer(Printer::Deployment),
    KindDef::new("apps", "v1", "replicasets", "ReplicaSet", Scope::Namespaced)
        .short(&["rs"])
        .categories(ALL)
        .subresources(&[Sub::Status, Sub::Scale])
        .stored(generation, decode_as::<apps::v1::ReplicaSet>)
        .schema(schema_of::<apps::v1::ReplicaSet>)
        .validate(validation::kinds::replica_set)
        .default(defaults::by_kind::replica_set)
        .printer(Printer::ReplicaSet),
    KindDef::new(
        "apps",
        "v1",
        "statefulsets",
        "StatefulSet",
        Scope::Namespaced,
    )
    .short(&["sts"])
    .categories(ALL)
    .subresources(&[Sub::Status, Sub::Scale])
    .stored(generation, decode_as::<apps::v1::StatefulSet>)
    .schema(schema_of::<apps::v1::StatefulSet>)
    .validate(validation::kinds::stateful_set)
    .default(defaults::by_kind::stateful_set)
    .printer(Printer::StatefulSet),
];
