//! `admissionregistration.k8s.io`: admission webhooks' configurations and ValidatingAdmissionPolicies with their bindings.

use k8s_openapi::api::admissionregistration;

use super::{API_EXTENSIONS, generation};
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, Sub, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

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
    )
    .schema(schema_of::<admissionregistration::v1::MutatingWebhookConfiguration>)
    .validate(validation::kinds::mutating_webhooks)
    .default(defaults::by_kind::mutating_webhooks)
    .printer(Printer::WebhookConfiguration),
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
    )
    .schema(schema_of::<admissionregistration::v1::ValidatingAdmissionPolicy>)
    .validate(validation::kinds::validating_admission_policy)
    .default(defaults::by_kind::validating_admission_policy)
    .printer(Printer::AdmissionPolicy),
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
    )
    .schema(schema_of::<admissionregistration::v1::ValidatingAdmissionPolicyBinding>)
    .validate(validation::kinds::validating_admission_policy_binding)
    .default(defaults::by_kind::validating_admission_policy_binding)
    .printer(Printer::AdmissionPolicyBinding),
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
    )
    .schema(schema_of::<admissionregistration::v1::ValidatingWebhookConfiguration>)
    .validate(validation::kinds::validating_webhooks)
    .default(defaults::by_kind::validating_webhooks)
    .printer(Printer::WebhookConfiguration),
];
