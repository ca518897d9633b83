//! `networking.k8s.io`: Ingresses, IngressClasses and NetworkPolicies.

use k8s_openapi::api::networking;

use super::generation;
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `networking.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "networking.k8s.io",
        "v1",
        "ingressclasses",
        "IngressClass",
        Scope::Cluster,
    )
    .stored(generation, decode_as::<networking::v1::IngressClass>)
    .schema(schema_of::<networking::v1::IngressClass>)
    .validate(validation::kinds::networking::ingress_class)
    .default(defaults::by_kind::ingress_class)
    .printer(Printer::IngressClass),
    KindDef::new(
        "networking.k8s.io",
        "v1",
        "ingresses",
        "Ingress",
        Scope::Namespaced,
    )
    .short(&["ing"])
    .subresources(&[Sub::Status])
    .stored(generation, decode_as::<networking::v1::Ingress>)
    .schema(schema_of::<networking::v1::Ingress>)
    .validate(validation::kinds::networking::ingress)
    .printer(Printer::Ingress),
    KindDef::new(
        "networking.k8s.io",
        "v1",
        "networkpolicies",
        "NetworkPolicy",
        Scope::Namespaced,
    )
    .short(&["netpol"])
    .stored(generation, decode_as::<networking::v1::NetworkPolicy>)
    .schema(schema_of::<networking::v1::NetworkPolicy>)
    .validate(validation::kinds::networking::network_policy)
    .default(defaults::by_kind::network_policy)
    .printer(Printer::NetworkPolicy),
];
