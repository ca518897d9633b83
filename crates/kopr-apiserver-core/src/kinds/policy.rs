//! `policy`: PodDisruptionBudgets.

use k8s_openapi::api::policy;

use super::generation;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
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
.short(&["pdb"])
.subresources(&[Sub::Status])
.stored(generation, decode_as::<policy::v1::PodDisruptionBudget>)
.schema(schema_of::<policy::v1::PodDisruptionBudget>)
.validate(validation::kinds::policy::pod_disruption_budget)
.printer(Printer::PodDisruptionBudget)];
