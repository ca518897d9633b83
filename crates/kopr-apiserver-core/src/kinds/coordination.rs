//! `coordination.k8s.io`: Leases.

use k8s_openapi::api::coordination;

use super::create_on_update;
use crate::resources::kind::{KindDef, Scope, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `coordination.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "coordination.k8s.io",
    "v1",
    "leases",
    "Lease",
    Scope::Namespaced,
)
.stored(create_on_update, decode_as::<coordination::v1::Lease>)
.schema(schema_of::<coordination::v1::Lease>)
.validate(validation::kinds::lease)
.printer(Printer::Lease)];
