//! `policy`: PodDisruptionBudgets.

use k8s_openapi::api::policy;

use super::generation;
use crate::resources::kind::{BodyDef, KindDef, Known, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `policy`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "policy",
    "v1",
    "poddisruptionbudgets",
    "PodDisruptionBudget",
    Scope::Namespaced,
)
.known(Known::DisruptionBudgets)
.short(&["pdb"])
.subresources(&[Sub::Status])
.stored(generation, decode_as::<policy::v1::PodDisruptionBudget>)
.schema(schema_of::<policy::v1::PodDisruptionBudget>)
.validate(validation::kinds::policy::pod_disruption_budget)
.printer(Printer::PodDisruptionBudget)];

/// The body of a pod's `eviction` subresource.
pub(super) static BODIES: &[BodyDef] = &[BodyDef {
    group: "policy",
    version: "v1",
    kind: "Eviction",
    schema: schema_of::<policy::v1::Eviction>,
}];
