//! The schema of a custom resource as apiextensions-apiserver publishes it
//! in OpenAPI v3: its structural schema unfolded (an int-or-string field
//! gets its `anyOf` of integer and string) and embedded resources given
//! `apiVersion`, `kind` and `metadata`.

use serde_json::{Map, Value, json};

const INT_OR_STRING: &str = "x-kubernetes-int-or-string";
const EMBEDDED: &str = "x-kubernetes-embedded-resource";

/// Unfolds `schema` (a custom resource's published schema, whose top level
/// already carries `apiVersion`, `kind` and `metadata`) in place.
pub fn unfold(schema: &mut Value) {
    let type_meta: Map<String, Value> = ["apiVersion", "kind", "metadata"]
        .into_iter()
        .filter_map(|k| {
            schema
                .pointer(&format!("/properties/{k}"))
                .map(|v| (k.to_string(), v.clone()))
        })
        .collect();
    if let Some(props) = schema.get_mut("properties").and_then(Value::as_object_mut) {
        for (name, child) in props.iter_mut() {
            if !type_meta.contains_key(name) {
                walk(child, &type_meta);
            }
        }
    }
}

fn walk(node: &mut Value, type_meta: &Map<String, Value>) {
    let Some(map) = node.as_object_mut() else {
        return;
    };
    if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
        for child in props.values_mut() {
            walk(child, type_meta);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child) = map.get_mut(key) {
            walk(child, type_meta);
        }
    }
    if map.get(INT_OR_STRING) == Some(&Value::Bool(true)) {
        unfold_int_or_string(map);
    }
    if map.get(EMBEDDED) == Some(&Value::Bool(true)) {
        add_type_meta(map, type_meta);
    }
}

fn int_or_string_choices() -> Value {
    json!([{"type": "integer"}, {"type": "string"}])
}

/// As kube's `Structural.Unfold`: an `anyOf` of integer and string, or, when
/// the field has an `anyOf` of its own, that choice first in its `allOf`.
fn unfold_int_or_string(map: &mut Map<String, Value>) {
    let choices = int_or_string_choices();
    let already = |v: Option<&Value>| v == Some(&choices);
    if already(map.get("anyOf")) {
        return;
    }
    let first_all_of = map
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(|f| f.get("anyOf"));
    if already(first_all_of) {
        return;
    }
    if !map.contains_key("anyOf") {
        map.insert("anyOf".into(), choices);
        return;
    }
    let all_of = map.entry("allOf").or_insert_with(|| json!([]));
    if let Some(list) = all_of.as_array_mut() {
        list.insert(0, json!({"anyOf": choices}));
    }
}

/// An embedded resource's `apiVersion`, `kind` and `metadata`, the first two
/// required.
fn add_type_meta(map: &mut Map<String, Value>, type_meta: &Map<String, Value>) {
    let props = map.entry("properties").or_insert_with(|| json!({}));
    if let Some(props) = props.as_object_mut() {
        for (k, v) in type_meta {
            props.insert(k.clone(), v.clone());
        }
    }
    let required = map.entry("required").or_insert_with(|| json!([]));
    if let Some(list) = required.as_array_mut() {
        for k in ["kind", "apiVersion"] {
            if !list.iter().any(|r| r == k) {
                list.push(json!(k));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn int_or_string_and_embedded_resources_unfold() {
        let mut schema = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "properties": {
                "port": {"x-kubernetes-int-or-string": true},
                "both": {"x-kubernetes-int-or-string": true, "anyOf": [{"maximum": 3}]},
                "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                             "x-kubernetes-preserve-unknown-fields": true},
            }},
        }});
        unfold(&mut schema);
        let spec = &schema["properties"]["spec"]["properties"];
        assert_eq!(spec["port"]["anyOf"], int_or_string_choices());
        assert_eq!(spec["both"]["allOf"][0]["anyOf"], int_or_string_choices());
        assert_eq!(spec["both"]["anyOf"], json!([{"maximum": 3}]));
        assert_eq!(spec["template"]["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            spec["template"]["properties"]["kind"],
            json!({"type": "string"})
        );
        let again = schema.clone();
        unfold(&mut schema);
        assert_eq!(schema, again, "unfolding twice changes nothing");
    }
}
