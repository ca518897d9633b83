//! Telling whether an object on the server still is what the operator asked for.
//!
//! The server fills in what a request leaves out: a Deployment comes back with a strategy, a
//! revision history limit, a DNS policy, an image pull policy and more. Comparing the whole
//! object with the desired one would therefore always find a difference, and an operator that
//! acts on it would update forever. So only what the desired object sets is compared, the idea
//! behind controller-runtime's `equality.Semantic.DeepDerivative`:
//!
//! - a field the desired object leaves out (absent or `null`) matches anything;
//! - a map matches when every field the desired map sets matches (extra keys are the server's
//!   or someone else's business);
//! - a list matches when it has as many items and each matches the desired one in turn (an
//!   added container or environment variable is a change);
//! - anything else must be equal.
//!
//! Unlike `DeepDerivative`, a desired zero, `false` or empty string is compared like any other
//! value: asking for zero replicas means zero.
//!
//! These rules are the rules of a JSON merge patch, which sets the fields it names, merges maps
//! and replaces lists. So sending the desired object as a merge patch makes the actual one match,
//! and once it matches, nothing more is sent.

use serde_json::Value;

/// The paths (like `spec.replicas` or `spec.template.spec.containers[0].image`) at which
/// `actual` departs from `desired`, comparing only what `desired` sets; `root` names the
/// compared values. Empty when `actual` matches.
pub fn differences(root: &str, desired: &Value, actual: &Value) -> Vec<String> {
    let mut found = Vec::new();
    walk(root.to_owned(), desired, actual, &mut found);
    found
}

fn walk(path: String, desired: &Value, actual: &Value, found: &mut Vec<String>) {
    match (desired, actual) {
        (Value::Null, _) => {}
        (Value::Object(wanted), Value::Object(have)) => {
            for (key, value) in wanted {
                let actual = have.get(key).unwrap_or(&Value::Null);
                walk(format!("{path}.{key}"), value, actual, found);
            }
        }
        (Value::Array(wanted), Value::Array(have)) if wanted.len() == have.len() => {
            for (index, (value, actual)) in wanted.iter().zip(have).enumerate() {
                walk(format!("{path}[{index}]"), value, actual, found);
            }
        }
        (Value::Object(_) | Value::Array(_), _) => found.push(path),
        (scalar, actual) if scalar != actual => found.push(path),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fields_the_server_adds_are_ignored() {
        let desired = json!({"replicas": 2, "template": {"spec": {"containers": [
            {"name": "consumer", "image": "app:1"}
        ]}}});
        let actual = json!({"replicas": 2, "revisionHistoryLimit": 10, "template": {"spec": {
            "dnsPolicy": "ClusterFirst",
            "containers": [{"name": "consumer", "image": "app:1", "imagePullPolicy": "IfNotPresent"}]
        }}});
        assert!(differences("spec", &desired, &actual).is_empty());
    }

    #[test]
    fn changed_missing_and_extra_items_are_found() {
        let desired = json!({"replicas": 2, "template": {"spec": {"containers": [
            {"name": "consumer", "env": [{"name": "TOPIC", "value": "a"}]}
        ]}}});
        let scaled = json!({"replicas": 5, "template": {"spec": {"containers": [
            {"name": "consumer", "env": [{"name": "TOPIC", "value": "b"}]}
        ]}}});
        assert_eq!(
            differences("spec", &desired, &scaled),
            [
                "spec.replicas",
                "spec.template.spec.containers[0].env[0].value"
            ]
        );
        let sidecar = json!({"replicas": 2, "template": {"spec": {"containers": [
            {"name": "consumer", "env": [{"name": "TOPIC", "value": "a"}]},
            {"name": "sidecar"}
        ]}}});
        assert_eq!(
            differences("spec", &desired, &sidecar),
            ["spec.template.spec.containers"]
        );
        assert_eq!(
            differences("spec", &desired, &json!({})),
            ["spec.replicas", "spec.template"]
        );
    }

    #[test]
    fn zero_is_a_value_and_null_is_not() {
        assert_eq!(
            differences("spec", &json!({"replicas": 0}), &json!({"replicas": 1})),
            ["spec.replicas"]
        );
        assert_eq!(
            differences("spec", &json!({"replicas": 0}), &json!({})),
            ["spec.replicas"]
        );
        assert!(differences("spec", &json!({"paused": null}), &json!({"paused": true})).is_empty());
    }
}
