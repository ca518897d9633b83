//! The RBAC authorizer: allows what a Role or ClusterRole bound to the user
//! grants, as kube's `rbac` authorizer does. Cluster role bindings apply
//! everywhere, role bindings in their namespace (and may name a
//! ClusterRole, granting it there only). Nothing is denied outright: a
//! request no rule allows gets no opinion, and a binding naming a role that
//! does not exist is reported in the reason.
//!
//! The roles and bindings are read from the store's current state and
//! compiled into an index ([`index`]), rebuilt only when one of them
//! changes; a write that is acknowledged is seen by the next request.

pub mod covers;
mod index;
pub mod rules;

use std::sync::{Arc, RwLock};

use crate::authz::{Attributes, Authorizer, Decision};
use crate::identity::UserInfo;
use crate::storage::Store;
use index::Index;
pub use index::{Binding, RoleRef, Subject};
pub use rules::PolicyRule;

/// The RBAC authorizer over a store's roles and bindings.
pub struct Rbac {
    store: Store,
    index: RwLock<Arc<Index>>,
}

impl std::fmt::Debug for Rbac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Rbac(..)")
    }
}

/// The rules that apply to a user in a namespace, and the errors met while
/// resolving them (bindings naming missing roles).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ResolvedRules {
    /// Every rule the user holds there.
    pub rules: Vec<PolicyRule>,
    /// Resolution errors, in kube's words.
    pub errors: Vec<String>,
}

impl Rbac {
    /// The authorizer over `store`.
    pub fn new(store: Store) -> Rbac {
        Rbac {
            store,
            // Never current: the first request builds the index.
            index: RwLock::new(Arc::new(Index::stale())),
        }
    }

    /// The index for the store's present roles and bindings.
    fn index(&self) -> Arc<Index> {
        let stamp = index::stamp(&self.store);
        if let Ok(current) = self.index.read()
            && current.stamp == stamp
        {
            return current.clone();
        }
        let fresh = Arc::new(Index::build(&self.store, stamp));
        if let Ok(mut slot) = self.index.write() {
            *slot = fresh.clone();
        }
        fresh
    }
}

impl Authorizer for Rbac {
    /// Every rule `user` holds in `namespace` (cluster-wide rules included;
    /// `None`: cluster-wide only), as `SelfSubjectRulesReview` lists them.
    fn rules_for(&self, user: &UserInfo, namespace: Option<&str>) -> ResolvedRules {
        let mut out = ResolvedRules::default();
        self.index().visit(user, namespace, &mut |_, found| {
            match found {
                Ok(rules) => out.rules.extend(rules.iter().cloned()),
                Err(e) => out.errors.push(e),
            }
            true
        });
        out
    }

    fn authorize(&self, user: &UserInfo, attributes: &Attributes) -> Decision {
        let namespace = attributes
            .resource
            .as_ref()
            .and_then(|r| r.namespace.as_deref())
            .filter(|ns| !ns.is_empty());
        let mut allowed_by = None;
        let mut errors = Vec::new();
        self.index()
            .visit(user, namespace, &mut |binding, found| match found {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(attributes)) {
                        allowed_by = Some(binding.describe_for(user));
                        return false;
                    }
                    true
                }
                Err(e) => {
                    errors.push(e);
                    true
                }
            });
        match allowed_by {
            Some(why) => Decision::Allow(format!("RBAC: allowed by {why}")),
            None if errors.is_empty() => Decision::NoOpinion(String::new()),
            None => Decision::NoOpinion(format!("RBAC: {}", aggregate(&errors))),
        }
    }
}

/// Several errors as kube's aggregate prints them: one alone, or `[a, b]`.
fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}
