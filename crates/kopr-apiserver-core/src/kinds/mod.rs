//! The built-in kinds: one module per API group, each defining its kinds as
//! [`KindDef`] values (names, scope, subresources, strategy, decoding), and
//! the group facts discovery and the APIServices need (priorities). The
//! registry, http and the other stages find a kind through the catalog and
//! never name one; a new built-in kind is one value in its group's module.
//!
//! A kind's value names its rules (validation, defaulting, table printer,
//! field labels, quota evaluator) and the role the server's own verbs find it
//! by (`Known`: eviction reaches pods and disruption budgets through it); the
//! rules' code sits in those stages' modules, reached only through the value.
//! Merge rules are not keyed by kind: they belong to the types
//! (`crate::merge`), reached from a kind's type. Subresource bodies that are
//! no kind of their own (Eviction, Binding, Scale) are [`bodies`].

mod admissionregistration;
mod apiextensions;
mod apiregistration;
mod apps;
mod authentication;
mod authorization;
mod autoscaling;
mod batch;
mod certificates;
mod coordination;
mod core;
mod discovery;
mod events;
mod flowcontrol;
mod networking;
mod node;
mod policy;
mod rbac;
mod scheduling;
mod storage;

use std::sync::Arc;

use crate::registry::strategy::Builtin;
use crate::resources::kind::{BodyDef, KindDef};
use crate::resources::{Catalog, Strategy};

/// Every built-in kind, each group's in discovery order, the groups by their
/// APIServices' priorities (the core group first).
pub fn all() -> Vec<&'static KindDef> {
    let mut all: Vec<&'static KindDef> = [
        core::KINDS,
        apiregistration::KINDS,
        apps::KINDS,
        events::KINDS,
        autoscaling::KINDS,
        batch::KINDS,
        certificates::KINDS,
        networking::KINDS,
        policy::KINDS,
        rbac::KINDS,
        storage::KINDS,
        admissionregistration::KINDS,
        apiextensions::KINDS,
        scheduling::KINDS,
        coordination::KINDS,
        node::KINDS,
        discovery::KINDS,
        flowcontrol::KINDS,
        authentication::KINDS,
        authorization::KINDS,
    ]
    .into_iter()
    .flatten()
    .collect();
    // Discovery lists the groups by their APIServices' priorities.
    all.sort_by_key(|k| std::cmp::Reverse(group_priority(k.group)));
    all
}

/// The subresources' bodies published beside the kinds.
pub fn bodies() -> impl Iterator<Item = &'static BodyDef> {
    [core::BODIES, policy::BODIES, autoscaling::BODIES]
        .into_iter()
        .flatten()
}

/// Registers every built-in kind in `catalog`.
pub fn register(catalog: &Catalog) {
    for kind in all() {
        catalog.register(kind.resource_type());
    }
}

/// Kinds categorised `all` (`kubectl get all`).
const ALL: &[&str] = &["all"];
/// Kinds categorised `api-extensions`.
const API_EXTENSIONS: &[&str] = &["api-extensions"];

/// The strategy of a kind without rules of its own.
fn plain() -> Arc<dyn Strategy> {
    Arc::new(Builtin::PLAIN)
}

/// The strategy of a kind whose spec changes bump `metadata.generation`.
fn generation() -> Arc<dyn Strategy> {
    Arc::new(Builtin::GENERATION)
}

/// The strategy of a kind PUT may create.
fn create_on_update() -> Arc<dyn Strategy> {
    Arc::new(Builtin::CREATE_ON_UPDATE)
}

/// The APIService priorities of the built-in group versions, as
/// kube-apiserver 1.32 registers them: `(group, version,
/// groupPriorityMinimum, versionPriority)`, highest group first.
pub const API_SERVICE_PRIORITIES: &[(&str, &str, u32, u32)] = &[
    ("", "v1", 18000, 1),
    ("apiregistration.k8s.io", "v1", 18000, 15),
    ("apps", "v1", 17800, 15),
    ("events.k8s.io", "v1", 17750, 15),
    ("authentication.k8s.io", "v1", 17700, 15),
    ("authorization.k8s.io", "v1", 17600, 15),
    ("autoscaling", "v2", 17500, 30),
    ("autoscaling", "v1", 17500, 15),
    ("batch", "v1", 17400, 15),
    ("certificates.k8s.io", "v1", 17300, 15),
    ("networking.k8s.io", "v1", 17200, 15),
    ("policy", "v1", 17100, 15),
    ("rbac.authorization.k8s.io", "v1", 17000, 15),
    ("storage.k8s.io", "v1", 16800, 15),
    ("admissionregistration.k8s.io", "v1", 16700, 15),
    ("apiextensions.k8s.io", "v1", 16700, 15),
    ("scheduling.k8s.io", "v1", 16600, 15),
    ("coordination.k8s.io", "v1", 16500, 15),
    ("node.k8s.io", "v1", 16300, 15),
    ("discovery.k8s.io", "v1", 16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1", 16100, 21),
];

/// A group's APIService priority (`groupPriorityMinimum`); the core group
/// sorts first, groups of custom resources (1000) last.
pub fn group_priority(group: &str) -> u32 {
    if group.is_empty() {
        return u32::MAX;
    }
    API_SERVICE_PRIORITIES
        .iter()
        .find(|(g, ..)| *g == group)
        .map_or(1000, |(_, _, p, _)| *p)
}

/// Namespaces created at first start.
pub const SYSTEM_NAMESPACES: &[&str] =
    &["default", "kube-system", "kube-public", "kube-node-lease"];

/// Namespaces that can never be deleted.
pub use crate::registry::strategy::UNDELETABLE_NAMESPACES;

/// Whether an API group is one of the built-in groups (not served by CRDs).
pub fn is_builtin_group(group: &str) -> bool {
    matches!(
        group,
        "" | "apiregistration.k8s.io"
            | "apps"
            | "events.k8s.io"
            | "authentication.k8s.io"
            | "authorization.k8s.io"
            | "autoscaling"
            | "batch"
            | "certificates.k8s.io"
            | "networking.k8s.io"
            | "policy"
            | "rbac.authorization.k8s.io"
            | "storage.k8s.io"
            | "admissionregistration.k8s.io"
            | "apiextensions.k8s.io"
            | "scheduling.k8s.io"
            | "coordination.k8s.io"
            | "node.k8s.io"
            | "discovery.k8s.io"
            | "flowcontrol.apiserver.k8s.io"
            | "meta.k8s.io"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every stored built-in kind decodes as its Go type, is published with its OpenAPI
    /// schema and has kube's validation (a CRD's is its strategy's, which also checks the
    /// schemas); computed kinds have no decoding or strategy.
    #[test]
    fn every_stored_kind_decodes_and_validates() {
        let validated_by_strategy = ["customresourcedefinitions"];
        for kind in all() {
            let name = format!("{}/{} {}", kind.group, kind.version, kind.plural);
            if kind.computed.is_some() {
                assert!(kind.decode.is_none() && kind.strategy.is_none(), "{name}");
                continue;
            }
            assert!(kind.decode.is_some(), "{name}: no decoding");
            assert!(kind.strategy.is_some(), "{name}: no strategy");
            assert!(kind.schema.is_some(), "{name}: no OpenAPI schema");
            assert_eq!(
                kind.validate.is_none(),
                validated_by_strategy.contains(&kind.plural),
                "{name}: validation"
            );
        }
    }

    /// Every stored kind has kube's table printer, except those kube prints with its default
    /// columns (Name, Created At): it has no printer for them either.
    #[test]
    fn every_stored_kind_has_columns_or_is_listed_with_the_default_ones() {
        let default_columns = [
            "limitranges",
            "roles",
            "clusterroles",
            "customresourcedefinitions",
        ];
        for kind in all().into_iter().filter(|k| k.computed.is_none()) {
            assert_eq!(
                kind.printer.is_none(),
                default_columns.contains(&kind.plural),
                "{}/{} {}: printer",
                kind.group,
                kind.version,
                kind.plural
            );
        }
    }

    /// Each (group, version, resource) is defined once, and the catalog serves them all.
    #[test]
    fn kinds_are_unique_and_registered() {
        let mut seen = std::collections::BTreeSet::new();
        for kind in all() {
            assert!(
                seen.insert((kind.group, kind.version, kind.plural)),
                "{} twice",
                kind.plural
            );
        }
        let catalog = Catalog::default();
        register(&catalog);
        assert_eq!(catalog.all().len(), seen.len());
    }

    /// The kinds kube selects by more fields than `metadata.name` and
    /// `metadata.namespace` (those with field label conversions in kube's
    /// schemes) have their field labels; no other has any. Persistent volumes
    /// and claims carry a `name` field in kube's storage, but no conversion
    /// admits it in a request, so they are not here.
    #[test]
    fn field_labels_are_kubes() {
        let mut labelled: Vec<String> = all()
            .into_iter()
            .filter(|k| k.fields.is_some())
            .map(|k| format!("{}/{}", k.group, k.plural))
            .collect();
        labelled.sort();
        let expected = [
            "/events",
            "/namespaces",
            "/nodes",
            "/pods",
            "/replicationcontrollers",
            "/secrets",
            "/services",
            "batch/jobs",
            "certificates.k8s.io/certificatesigningrequests",
            "events.k8s.io/events",
        ];
        assert_eq!(labelled, expected);
    }

    /// Each role the server's verbs look a kind up by, and each quota
    /// evaluator, is played by exactly one kind.
    #[test]
    fn roles_and_quota_evaluators_are_played_once() {
        use crate::quota::evaluators::Measured;
        use crate::resources::kind::Known;
        let known = [
            Known::Pods,
            Known::Nodes,
            Known::Namespaces,
            Known::Services,
            Known::ServiceAccounts,
            Known::DisruptionBudgets,
            Known::ApiServices,
        ];
        for k in known {
            let n = all().into_iter().filter(|d| d.known == Some(k)).count();
            assert_eq!(n, 1, "{k:?}");
        }
        for m in [Measured::Pods, Measured::Services, Measured::Claims] {
            let n = all().into_iter().filter(|d| d.quota == Some(m)).count();
            assert_eq!(n, 1, "{m:?}");
        }
        let catalog = Catalog::default();
        register(&catalog);
        let pods = catalog.known(Known::Pods).map(|rt| rt.plural.clone());
        assert_eq!(pods.as_deref(), Some("pods"));
        let claims = catalog.measured_by(&crate::quota::Evaluator::Claims);
        assert_eq!(
            claims.map(|rt| rt.plural.clone()).as_deref(),
            Some("persistentvolumeclaims")
        );
        assert_eq!(
            catalog.evaluator("", "configmaps"),
            crate::quota::Evaluator::count("", "configmaps")
        );
        assert_eq!(
            catalog.evaluator("", "services"),
            crate::quota::Evaluator::Services
        );
    }
}
