//! `node.k8s.io`: RuntimeClasses.

use k8s_openapi::api::node;

use super::plain;
use crate::resources::kind::{KindDef, Scope, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `node.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "node.k8s.io",
    "v1",
    "runtimeclasses",
    "RuntimeClass",
    Scope::Cluster,
)
.stored(plain, decode_as::<node::v1::RuntimeClass>)
.schema(schema_of::<node::v1::RuntimeClass>)
.validate(validation::kinds::scheduling::runtime_class)
.printer(Printer::RuntimeClass)];
