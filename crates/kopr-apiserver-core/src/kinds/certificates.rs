//! `certificates.k8s.io`: CertificateSigningRequests.

use std::sync::Arc;

use k8s_openapi::api::certificates;

use crate::registry::strategy::SigningRequestStrategy;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::selectors;
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `certificates.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[KindDef::new(
    "certificates.k8s.io",
    "v1",
    "certificatesigningrequests",
    "CertificateSigningRequest",
    Scope::Cluster,
)
.short(&["csr"])
.subresources(&[Sub::Status, Sub::Approval])
.stored(
    || Arc::new(SigningRequestStrategy),
    decode_as::<certificates::v1::CertificateSigningRequest>,
)
.schema(schema_of::<certificates::v1::CertificateSigningRequest>)
.validate(validation::kinds::certificates::certificate_signing_request)
.printer(Printer::CertificateSigningRequest)
.fields(&selectors::CERTIFICATE_SIGNING_REQUEST_FIELDS)];
