//! `discovery.k8s.io`: EndpointSlices.

use k8s_openapi::api::discovery;

use super::generation;
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `discovery.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "discovery.k8s.io",
    "v1",
    "endpointslices",
    "EndpointSlice",
    Scope::Namespaced,
)
.stored(generation, decode_as::<discovery::v1::EndpointSlice>)
.schema(schema_of::<discovery::v1::EndpointSlice>)
.validate(validation::kinds::discovery::endpoint_slice)
.default(defaults::by_kind::endpoint_slice)
.printer(Printer::EndpointSlice)];
