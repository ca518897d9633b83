//! `authentication.k8s.io`: reviews computed per request (who am I, is this token valid).

use crate::resources::Computed;
use crate::resources::kind::{KindDef, Scope};

/// The kinds of `authentication.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "authentication.k8s.io",
        "v1",
        "selfsubjectreviews",
        "SelfSubjectReview",
        Scope::Cluster,
    )
    .computed(Computed::SelfSubjectReview),
    KindDef::new(
        "authentication.k8s.io",
        "v1",
        "tokenreviews",
        "TokenReview",
        Scope::Cluster,
    )
    .computed(Computed::TokenReview),
];
