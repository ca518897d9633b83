//! `flowcontrol.apiserver.k8s.io`: API Priority and Fairness' FlowSchemas and PriorityLevelConfigurations.

use k8s_openapi::api::flowcontrol;

use super::generation;
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `flowcontrol.apiserver.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "flowschemas",
        "FlowSchema",
        Scope::Cluster,
    )
    .subresources(&[Sub::Status])
    .stored(generation, decode_as::<flowcontrol::v1::FlowSchema>)
    .schema(schema_of::<flowcontrol::v1::FlowSchema>)
    .validate(validation::kinds::flowcontrol::flow_schema)
    .default(defaults::by_kind::flow_schema)
    .printer(Printer::FlowSchema),
    KindDef::new(
        "flowcontrol.apiserver.k8s.io",
        "v1",
        "prioritylevelconfigurations",
        "PriorityLevelConfiguration",
        Scope::Cluster,
    )
    .subresources(&[Sub::Status])
    .stored(
        generation,
        decode_as::<flowcontrol::v1::PriorityLevelConfiguration>,
    )
    .schema(schema_of::<flowcontrol::v1::PriorityLevelConfiguration>)
    .validate(validation::kinds::flowcontrol::priority_level_configuration)
    .default(defaults::by_kind::priority_level_configuration)
    .printer(Printer::PriorityLevelConfiguration),
];
