//! The merge schema interface the strategic merge patch and apply engines
//! consult: how a list at a path merges ([`ListStrategy`]), whether an
//! object is atomic, whether `$retainKeys` applies, and list-map key
//! defaults ([`MergeSchema`]).
//!
//! Paths are field paths from the object root without list indices, e.g.
//! `["spec","template","spec","containers","ports"]` for the ports of any
//! container of a Deployment. For list items the path is the path of the list.
//!
//! The schemas themselves live with what they describe: the built-in kinds'
//! rules, from their Go struct tags, in `crate::merge`; a custom resource's
//! in its CRD's structural schema (`crate::crd`). Closures
//! `Fn(&[&str]) -> ListStrategy` are schemas too, for tests and callers
//! without schema knowledge; with none, structured-merge-diff's schemaless
//! fallback is atomic lists and granular maps.

use serde_json::Value;

/// How a list (or map) at a path inside an object of a kind merges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListStrategy {
    /// Replace the whole list (SMP default; SSA `listType=atomic`).
    Atomic,
    /// Primitive list merged as a set (SMP `patchStrategy=merge` on a scalar
    /// list; SSA `listType=set`).
    Set,
    /// List of objects keyed by the given fields (SMP uses only the first key,
    /// the `patchMergeKey`; SSA uses all of them, the `listMapKey`s).
    Map {
        /// Key field names, in declaration order.
        keys: Vec<String>,
    },
}

impl ListStrategy {
    /// Builds a keyed-list strategy from key names.
    pub fn map(keys: &[&str]) -> ListStrategy {
        ListStrategy::Map {
            keys: keys.iter().map(|k| (*k).to_string()).collect(),
        }
    }

    /// Builds the strategy described by a CRD's OpenAPI extensions
    /// (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`).
    /// A missing or unknown list type is atomic, as in kube-apiserver.
    pub fn from_openapi(list_type: Option<&str>, map_keys: &[String]) -> ListStrategy {
        match list_type {
            Some("set") => ListStrategy::Set,
            Some("map") if !map_keys.is_empty() => ListStrategy::Map {
                keys: map_keys.to_vec(),
            },
            _ => ListStrategy::Atomic,
        }
    }
}

/// Pluggable merge schema used by the strategic merge patch and apply
/// engines. Closures `Fn(&[&str]) -> ListStrategy` implement it with
/// granular maps, no `$retainKeys` and no key defaults.
pub trait MergeSchema {
    /// Strategy for the list at `path`.
    fn list_strategy(&self, path: &[&str]) -> ListStrategy;

    /// Whether the object at `path` is atomic for SSA (`structType=atomic`
    /// or `mapType=atomic`). For list items, `path` is the list's path.
    fn map_is_atomic(&self, _path: &[&str]) -> bool {
        false
    }

    /// Whether the object at `path` carries `patchStrategy=retainKeys`.
    fn retain_keys_allowed(&self, _path: &[&str]) -> bool {
        false
    }

    /// Default value of a list-map key field for items that omit it
    /// (SSA uses OpenAPI defaults, e.g. `protocol: TCP` for ports).
    fn key_default(&self, _path: &[&str], _key: &str) -> Option<Value> {
        None
    }
}

impl<F> MergeSchema for F
where
    F: Fn(&[&str]) -> ListStrategy,
{
    fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        self(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closures_and_openapi_strategies() {
        let closure = |p: &[&str]| {
            if p == ["items"] {
                ListStrategy::Set
            } else {
                ListStrategy::Atomic
            }
        };
        assert_eq!(closure.list_strategy(&["items"]), ListStrategy::Set);
        assert!(!closure.map_is_atomic(&["x"]));
        assert!(!closure.retain_keys_allowed(&["x"]));
        assert_eq!(closure.key_default(&["items"], "protocol"), None);
        assert_eq!(
            ListStrategy::from_openapi(Some("map"), &["name".to_string()]),
            ListStrategy::map(&["name"])
        );
        assert_eq!(
            ListStrategy::from_openapi(Some("set"), &[]),
            ListStrategy::Set
        );
        assert_eq!(
            ListStrategy::from_openapi(Some("map"), &[]),
            ListStrategy::Atomic
        );
        assert_eq!(ListStrategy::from_openapi(None, &[]), ListStrategy::Atomic);
    }
}
