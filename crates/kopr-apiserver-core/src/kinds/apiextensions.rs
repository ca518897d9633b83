//! `apiextensions.k8s.io`: CustomResourceDefinitions.

use std::sync::Arc;

use super::API_EXTENSIONS;
use crate::registry::strategy::DefinitionStrategy;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::typed::decode_as;

/// The kinds of `apiextensions.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", Scope::Cluster)
        .short(&["crd", "crds"])
        .categories(API_EXTENSIONS)
        .subresources(&[Sub::Status])
        .stored(|| Arc::new(DefinitionStrategy), decode_as::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>)
        .schema(schema_of::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>),
];
