//! `admissionregistration.k8s.io`: admission webhooks' configurations and ValidatingAdmissionPolicies with their bindings.

use k8s_openapi::api::admissionregistration;

use super::{API_EXTENSIONS, generation};
use crate::resources::kind::{KindDef, Scope, Sub};
use crate::typed::decode_as;

/// The kinds of `admissionregistration.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "mutatingwebhookconfigurations",
        "MutatingWebhookConfiguration",
        Scope::Cluster,
    )
    .categories(API_EXTENSIONS)
    .stored(
        generation,
        decode_as::<admissionregistration::v1::MutatingWebhookConfiguration>,
    ),
    KindDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicies",
        "ValidatingAdmissionPolicy",
        Scope::Cluster,
    )
    .categories(API_EXTENSIONS)
    .subresources(&[Sub::Status])
    .stored(
        generation,
        decode_as::<admissionregistration::v1::ValidatingAdmissionPolicy>,
    ),
    KindDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingadmissionpolicybindings",
        "ValidatingAdmissionPolicyBinding",
        Scope::Cluster,
    )
    .categories(API_EXTENSIONS)
    .stored(
        generation,
        decode_as::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>,
    ),
    KindDef::new(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
        "ValidatingWebhookConfiguration",
        Scope::Cluster,
    )
    .categories(API_EXTENSIONS)
    .stored(
        generation,
        decode_as::<admissionregistration::v1::ValidatingWebhookConfiguration>,
    ),
];
