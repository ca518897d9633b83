//! A binding's parameters: the objects of the policy's `paramKind` that its
//! `paramRef` names or selects, each evaluated on its own, with kube's
//! configuration errors for a reference that cannot be resolved.

use serde_json::Value;

use super::config::{Binding, Policy};
use crate::resources::Catalog;
use crate::storage::Store;

/// Why a policy or binding cannot be applied: a configuration error, which
/// the failure policy decides on.
#[derive(Debug, PartialEq)]
pub(super) enum ConfigError {
    /// `failed to configure policy: …`
    Policy(String),
    /// `failed to configure binding: …`
    Binding(String),
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Policy(why) => write!(f, "failed to configure policy: {why}"),
            ConfigError::Binding(why) => write!(f, "failed to configure binding: {why}"),
        }
    }
}

/// Splits an apiVersion into group and version.
fn group_version(api_version: &str) -> (&str, &str) {
    api_version.split_once('/').unwrap_or(("", api_version))
}

/// The parameters to evaluate the binding with: `[None]` when the policy
/// or the binding has none, one entry per parameter object otherwise, and
/// none at all when they are missing and `parameterNotFoundAction` is
/// `Allow`.
///
/// # Errors
/// The configuration errors kube reports.
pub(super) fn collect(
    store: &Store,
    catalog: &Catalog,
    policy: &Policy,
    binding: &Binding,
    request_namespace: &str,
) -> Result<Vec<Option<Value>>, ConfigError> {
    let Some((api_version, kind)) = &policy.param_kind else {
        return Ok(vec![None]);
    };
    let Some(param_ref) = &binding.param_ref else {
        return Ok(vec![None]);
    };
    let (group, version) = group_version(api_version);
    let rt = catalog.by_kind(group, version, kind).ok_or_else(|| {
        ConfigError::Policy(format!(
            "failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        ))
    })?;
    let namespace = if rt.namespaced {
        match (param_ref.namespace.as_str(), request_namespace) {
            ("", "") => {
                return Err(ConfigError::Binding(
                    "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into(),
                ));
            }
            ("", ns) | (ns, _) => Some(ns),
        }
    } else if !param_ref.namespace.is_empty() {
        return Err(ConfigError::Binding(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        ));
    } else {
        None
    };
    let found: Vec<Value> = match (&param_ref.selector, param_ref.name.as_str()) {
        (Some(_), name) if !name.is_empty() => {
            return Err(ConfigError::Binding(
                "paramRef.name and paramRef.selector are mutually exclusive".into(),
            ));
        }
        (None, "") => {
            return Err(ConfigError::Binding(
                "one of name or selector must be provided".into(),
            ));
        }
        (None, name) => store
            .current(&rt.key(namespace, name))
            .map(|s| s.object.as_ref().clone())
            .into_iter()
            .collect(),
        (Some(selector), _) => {
            let selector = selector
                .as_ref()
                .map_err(|e| ConfigError::Binding(e.to_string()))?;
            store
                .current_objects(&rt.list_prefix(namespace))
                .iter()
                .filter(|o| {
                    selector.matches(o.pointer("/metadata/labels").and_then(Value::as_object))
                })
                .map(|o| o.as_ref().clone())
                .collect()
        }
    };
    if found.is_empty() && param_ref.deny_when_missing {
        return Err(ConfigError::Binding(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        ));
    }
    Ok(found
        .into_iter()
        .map(|mut param| {
            // Parameters are shown as of the paramKind's version.
            if let Some(m) = param.as_object_mut() {
                m.insert("apiVersion".into(), Value::from(api_version.as_str()));
                m.insert("kind".into(), Value::from(kind.as_str()));
            }
            Some(param)
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_versions_split_into_group_and_version() {
        assert_eq!(group_version("v1"), ("", "v1"));
        assert_eq!(group_version("example.com/v1"), ("example.com", "v1"));
    }

    #[test]
    fn configuration_errors_read_as_kube_writes_them() {
        assert_eq!(
            ConfigError::Binding("x".into()).to_string(),
            "failed to configure binding: x"
        );
        assert_eq!(
            ConfigError::Policy("y".into()).to_string(),
            "failed to configure policy: y"
        );
    }
}
