//! `apiregistration.k8s.io`: APIServices, one per served group version.

use std::sync::Arc;

use super::API_EXTENSIONS;
use crate::defaults;
use crate::registry::strategy::ApiServiceStrategy;
use crate::resources::kind::{KindDef, Known, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `apiregistration.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "apiregistration.k8s.io",
    "v1",
    "apiservices",
    "APIService",
    Scope::Cluster,
)
.known(Known::ApiServices)
.categories(API_EXTENSIONS)
.subresources(&[Sub::Status])
.stored(
    || Arc::new(ApiServiceStrategy),
    decode_as::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>,
)
.schema(schema_of::<k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService>)
.validate(validation::kinds::apiregistration::api_service)
.default(defaults::by_kind::api_service)
.printer(Printer::ApiService)];
