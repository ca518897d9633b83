//! Go's zero values in JSON: what a built-in object is once decoded into its
//! Go type, where an absent field, `null`, `""`, `0`, `false`, `[]`, `{}` and
//! a value struct of zero fields are all one and the same value.
//!
//! kube-apiserver compares old and new objects (immutable fields, the pod
//! spec rule, managedFields, the no-op update) after decoding them into Go
//! structs, with `apiequality.Semantic.DeepEqual`, which also takes an empty
//! slice or map for a nil one. A client that writes `resources: {}` where
//! the stored pod has none (k8s-openapi does, for every value struct it read
//! back) changes nothing there. [`drop_zero_values`] gives a JSON object that
//! canonical form, guided by the field tables of [`super::schema`]: pointers
//! keep their zero values, since a Go pointer to `0` is not a nil pointer.

use serde_json::{Map, Value};

use super::schema::MESSAGES;
use super::{Card, Field, MAX_DEPTH, Msg, Ty};

/// Removes the fields of `obj` (a built-in object of `api_version`/`kind`)
/// that hold their Go type's zero value, recursively; the top-level
/// `metadata` is left alone (the registry keeps it). Objects of kinds
/// without a field table, and values of unexpected types, are left as they
/// are (validation reports those).
///
/// ```text
/// let mut pod = json!({"spec": {"containers": [{"name": "c", "resources": {}}]}});
/// drop_zero_values("v1", "Pod", &mut pod);
/// assert_eq!(pod, json!({"spec": {"containers": [{"name": "c"}]}}));
/// ```
pub(crate) fn drop_zero_values(api_version: &str, kind: &str, obj: &mut Value) {
    let (Some(msg), Some(map)) = (super::message_of(api_version, kind), obj.as_object_mut()) else {
        return;
    };
    drop_in(map, msg, 0, true);
}

fn drop_in(map: &mut Map<String, Value>, msg: &Msg, depth: usize, top: bool) {
    if depth > MAX_DEPTH {
        return;
    }
    for f in msg.fields {
        if f.inline {
            if let Some(inner) = nested(f) {
                drop_in(map, inner, depth + 1, false);
            }
            continue;
        }
        if top && f.name == "metadata" {
            continue;
        }
        if let Some(v) = map.get_mut(f.name)
            && settle(f, v, depth)
        {
            map.remove(f.name);
        }
    }
}

fn nested(f: &Field) -> Option<&'static Msg> {
    match f.ty {
        Ty::Msg(i) => MESSAGES.get(usize::from(i)),
        _ => None,
    }
}

/// Drops the zero values inside each element of a list or map field `f`.
fn drop_in_each<'a>(items: impl Iterator<Item = &'a mut Value>, f: &Field, depth: usize) {
    if let Some(inner) = nested(f) {
        for item in items {
            if let Value::Object(m) = item {
                drop_in(m, inner, depth + 1, false);
            }
        }
    }
}

/// Drops the zero values inside `v` and says whether `v` itself is the zero
/// value of field `f`.
fn settle(f: &Field, v: &mut Value, depth: usize) -> bool {
    if v.is_null() {
        return true;
    }
    match f.card {
        Card::Repeated => {
            let Value::Array(items) = v else {
                return false;
            };
            drop_in_each(items.iter_mut(), f, depth);
            items.is_empty()
        }
        Card::Map => {
            let Value::Object(entries) = v else {
                return false;
            };
            drop_in_each(entries.values_mut(), f, depth);
            entries.is_empty()
        }
        Card::One => match f.ty {
            Ty::Msg(_) => {
                let (Some(inner), Value::Object(m)) = (nested(f), v) else {
                    return false;
                };
                drop_in(m, inner, depth + 1, false);
                f.value_struct && m.is_empty()
            }
            _ if f.pointer => false,
            Ty::String | Ty::Bytes => v.as_str() == Some(""),
            Ty::Bool => v.as_bool() == Some(false),
            Ty::Int32 | Ty::Int64 => v.as_i64() == Some(0) || v.as_u64() == Some(0),
            Ty::Time
            | Ty::MicroTime
            | Ty::Quantity
            | Ty::IntOrString
            | Ty::RawExtension
            | Ty::FieldsV1
            | Ty::StringList => false,
        },
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::drop_zero_values;

    #[test]
    fn value_structs_and_zero_scalars_go_pointers_stay() {
        let mut pod = json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "p", "labels": {}},
            "spec": {
                "containers": [{
                    "name": "c",
                    "image": "",
                    "resources": {"limits": {}, "claims": []},
                    "stdin": false,
                    "securityContext": {},
                    "ports": [{"containerPort": 80, "hostPort": 0}],
                }],
                "activeDeadlineSeconds": 0,
                "nodeSelector": {},
                "hostNetwork": false,
            },
            "status": null,
        });
        drop_zero_values("v1", "Pod", &mut pod);
        assert_eq!(
            pod,
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "p", "labels": {}},
                "spec": {
                    "containers": [{
                        "name": "c",
                        "securityContext": {},
                        "ports": [{"containerPort": 80}],
                    }],
                    "activeDeadlineSeconds": 0,
                },
            })
        );
    }

    #[test]
    fn nested_object_meta_of_a_template_is_a_value_struct() {
        let mut deployment = json!({
            "spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {"containers": []}}},
        });
        drop_zero_values("apps/v1", "Deployment", &mut deployment);
        assert_eq!(deployment, json!({}));
    }

    #[test]
    fn unknown_kinds_and_odd_types_are_left_alone() {
        let mut odd = json!({"spec": {"containers": "nope", "hostNetwork": "yes"}});
        let before = odd.clone();
        drop_zero_values("v1", "Pod", &mut odd);
        assert_eq!(odd, before);
        let mut custom = json!({"spec": {"x": {}}});
        drop_zero_values("example.com/v1", "Widget", &mut custom);
        assert_eq!(custom, json!({"spec": {"x": {}}}));
    }
}
