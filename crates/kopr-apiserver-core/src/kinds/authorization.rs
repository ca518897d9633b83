//! `authorization.k8s.io`: access reviews computed per request.

use crate::resources::Computed;
use crate::resources::kind::{KindDef, Scope};

/// The kinds of `authorization.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "authorization.k8s.io",
        "v1",
        "localsubjectaccessreviews",
        "LocalSubjectAccessReview",
        Scope::Namespaced,
    )
    .computed(Computed::SubjectAccessReview),
    KindDef::new(
        "authorization.k8s.io",
        "v1",
        "selfsubjectaccessreviews",
        "SelfSubjectAccessReview",
        Scope::Cluster,
    )
    .computed(Computed::SelfSubjectAccessReview),
    KindDef::new(
        "authorization.k8s.io",
        "v1",
        "selfsubjectrulesreviews",
        "SelfSubjectRulesReview",
        Scope::Cluster,
    )
    .computed(Computed::SelfSubjectRulesReview),
    KindDef::new(
        "authorization.k8s.io",
        "v1",
        "subjectaccessreviews",
        "SubjectAccessReview",
        Scope::Cluster,
    )
    .computed(Computed::SubjectAccessReview),
];
