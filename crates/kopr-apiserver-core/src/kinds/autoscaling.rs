//! `autoscaling`: HorizontalPodAutoscalers, stored as `v2` and served as `v1` too.

use std::sync::Arc;

use k8s_openapi::api::autoscaling;

use super::{ALL, generation};
use crate::defaults;
use crate::registry::strategy::HpaV1Strategy;
use crate::resources::kind::{BodyDef, KindDef, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `autoscaling`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "autoscaling",
        "v2",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        Scope::Namespaced,
    )
    .short(&["hpa"])
    .categories(ALL)
    .subresources(&[Sub::Status])
    .stored(
        generation,
        decode_as::<autoscaling::v2::HorizontalPodAutoscaler>,
    )
    .schema(schema_of::<autoscaling::v2::HorizontalPodAutoscaler>)
    .validate(validation::kinds::autoscaling::horizontal_pod_autoscaler)
    .default(defaults::by_kind::horizontal_pod_autoscaler)
    .printer(Printer::HorizontalPodAutoscaler),
    KindDef::new(
        "autoscaling",
        "v1",
        "horizontalpodautoscalers",
        "HorizontalPodAutoscaler",
        Scope::Namespaced,
    )
    .short(&["hpa"])
    .categories(ALL)
    .subresources(&[Sub::Status])
    .stored(
        || Arc::new(HpaV1Strategy),
        decode_as::<autoscaling::v1::HorizontalPodAutoscaler>,
    )
    .schema(schema_of::<autoscaling::v1::HorizontalPodAutoscaler>)
    .stored_as("autoscaling/horizontalpodautoscalers", "autoscaling/v2")
    .validate(validation::kinds::autoscaling::horizontal_pod_autoscaler)
    .default(defaults::by_kind::horizontal_pod_autoscaler)
    .printer(Printer::HorizontalPodAutoscaler),
];

/// The body of the `scale` subresources.
pub(super) static BODIES: &[BodyDef] = &[BodyDef {
    group: "autoscaling",
    version: "v1",
    kind: "Scale",
    schema: schema_of::<autoscaling::v1::Scale>,
}];
