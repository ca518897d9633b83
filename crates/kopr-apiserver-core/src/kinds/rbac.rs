//! `rbac.authorization.k8s.io`: Roles, ClusterRoles and their bindings.

use k8s_openapi::api::rbac;

use super::create_on_update;
use crate::defaults;
use crate::resources::kind::{KindDef, Scope, schema_of};
use crate::table::Printer;
use crate::typed::decode_as;
use crate::validation;

/// The kinds of `rbac.authorization.k8s.io`, in discovery order.
pub(super) static KINDS: &[KindDef] = &[
    KindDef::new(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterrolebindings",
        "ClusterRoleBinding",
        Scope::Cluster,
    )
    .stored(create_on_update, decode_as::<rbac::v1::ClusterRoleBinding>)
    .schema(schema_of::<rbac::v1::ClusterRoleBinding>)
    .validate(validation::kinds::cluster_role_binding)
    .default(defaults::by_kind::role_binding)
    .printer(Printer::ClusterRoleBinding),
    KindDef::new(
        "rbac.authorization.k8s.io",
        "v1",
        "clusterroles",
        "ClusterRole",
        Scope::Cluster,
    )
    .stored(create_on_update, decode_as::<rbac::v1::ClusterRole>)
    .schema(schema_of::<rbac::v1::ClusterRole>)
    .validate(validation::kinds::cluster_role),
    KindDef::new(
        "rbac.authorization.k8s.io",
        "v1",
        "rolebindings",
        "RoleBinding",
        Scope::Namespaced,
    )
    .stored(create_on_update, decode_as::<rbac::v1::RoleBinding>)
    .schema(schema_of::<rbac::v1::RoleBinding>)
    .validate(validation::kinds::role_binding)
    .default(defaults::by_kind::role_binding)
    .printer(Printer::RoleBinding),
    KindDef::new(
        "rbac.authorization.k8s.io",
        "v1",
        "roles",
        "Role",
        Scope::Namespaced,
    )
    .stored(create_on_update, decode_as::<rbac::v1::Role>)
    .schema(schema_of::<rbac::v1::Role>)
    .validate(validation::kinds::role),
];
