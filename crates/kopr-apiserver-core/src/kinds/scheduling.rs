//! `scheduling.k8s.io`: PriorityClasses.

use k8s_openapi::api::scheduling;

use super::plain;
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `scheduling.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "scheduling.k8s.io",
    "v1",
    "priorityclasses",
    "PriorityClass",
    Scope::Cluster,
)
.short(&["pc"])
.stored(plain, decode_as::<scheduling::v1::PriorityClass>)
.schema(schema_of::<scheduling::v1::PriorityClass>)
.validate(validation::kinds::scheduling::priority_class)
.default(defaults::by_kind::priority_class)
.printer(Printer::PriorityClass)];
