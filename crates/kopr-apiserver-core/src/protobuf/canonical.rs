//! Whether a built-in object is already in the form its k8s-openapi type gives it back: the
//! proof that lets the registry skip the typed round trip (decode into the Go type's twin,
//! encode again) when it would change nothing.
//!
//! The walk follows the field tables of [`super::schema`], which are generated from the same
//! k8s-openapi sources as the types. It answers `true` only when every key is a field of the
//! type, every value has exactly the JSON type the field decodes from and encodes to
//! unchanged, no value is `null`, and every field the type always writes is present. Anything
//! else (an unknown field, a wrong type, `null`, base64 bytes, a timestamp in another layout)
//! answers `false`, and the caller takes the typed round trip, which decides as before.

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::schema::MESSAGES;
use super::{Card, Field, MAX_DEPTH, Msg, Ty};

/// Whether `obj`, an object of the top-level kind `api_version`/`kind`, would come out of
/// its typed round trip exactly as it is. Kinds without a field table answer `false`.
pub(crate) fn decodes_unchanged(api_version: &str, kind: &str, obj: &Value) -> bool {
    let (Some(msg), Some(map)) = (super::message_of(api_version, kind), obj.as_object()) else {
        return false;
    };
    // The types write both, and refuse other values.
    if map.get("apiVersion").and_then(Value::as_str) != Some(api_version)
        || map.get("kind").and_then(Value::as_str) != Some(kind)
    {
        return false;
    }
    message_unchanged(msg, map, 0, &["apiVersion", "kind"])
}

/// [`decodes_unchanged`] for an `ObjectMeta` (a custom resource's metadata).
pub(crate) fn object_meta_unchanged(meta: &Value) -> bool {
    match (MESSAGES.get(usize::from(super::schema::OBJECT_META)), meta) {
        (Some(msg), Value::Object(map)) => message_unchanged(msg, map, 0, &[]),
        _ => false,
    }
}

/// The field named `key` of `msg`, looking into inlined (embedded) structs.
fn field<'m>(msg: &'m Msg, key: &str, depth: usize) -> Option<&'m Field> {
    if depth > MAX_DEPTH {
        return None;
    }
    msg.fields.iter().find_map(|f| {
        if f.inline {
            nested(f).and_then(|inner| field(inner, key, depth + 1))
        } else if f.name == key && !f.untyped {
            Some(f)
        } else {
            None
        }
    })
}

fn nested(f: &Field) -> Option<&'static Msg> {
    match f.ty {
        Ty::Msg(i) => MESSAGES.get(usize::from(i)),
        _ => None,
    }
}

/// Whether every field the type always writes (a required field: a non-`Option` in
/// k8s-openapi) is in `map`.
fn required_present(msg: &Msg, map: &Map<String, Value>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    msg.fields.iter().all(|f| {
        if f.inline {
            nested(f).is_some_and(|inner| required_present(inner, map, depth + 1))
        } else {
            !f.required || map.contains_key(f.name)
        }
    })
}

fn message_unchanged(msg: &Msg, map: &Map<String, Value>, depth: usize, skip: &[&str]) -> bool {
    if depth > MAX_DEPTH || !required_present(msg, map, depth) {
        return false;
    }
    map.iter().all(|(key, value)| {
        if skip.contains(&key.as_str()) {
            return true;
        }
        match field(msg, key, depth) {
            Some(f) => field_unchanged(f, value, depth),
            None => false,
        }
    })
}

fn field_unchanged(f: &Field, v: &Value, depth: usize) -> bool {
    match f.card {
        Card::One => value_unchanged(f.ty, v, depth),
        Card::Repeated => v
            .as_array()
            .is_some_and(|items| items.iter().all(|i| value_unchanged(f.ty, i, depth))),
        Card::Map => v
            .as_object()
            .is_some_and(|entries| entries.values().all(|i| value_unchanged(f.ty, i, depth))),
    }
}

fn value_unchanged(ty: Ty, v: &Value, depth: usize) -> bool {
    match ty {
        Ty::Bool => v.is_boolean(),
        Ty::Int32 => v.as_i64().is_some_and(|n| i32::try_from(n).is_ok()),
        Ty::Int64 => v.is_i64(),
        Ty::String | Ty::Quantity => v.is_string(),
        Ty::IntOrString => v.is_string() || value_unchanged(Ty::Int32, v, depth),
        Ty::StringList => v
            .as_array()
            .is_some_and(|items| items.iter().all(Value::is_string)),
        // A nested top-level kind (a StatefulSet's claim templates) gains `apiVersion` and
        // `kind` through its type: the round trip decides.
        Ty::Msg(i) if super::schema::KINDS.contains(&i) => false,
        Ty::Msg(i) => match (MESSAGES.get(usize::from(i)), v) {
            (Some(msg), Value::Object(map)) => message_unchanged(msg, map, depth + 1, &[]),
            _ => false,
        },
        Ty::Time => same_through::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Time>(v),
        Ty::MicroTime => {
            same_through::<k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime>(v)
        }
        // Embedded JSON, kept as it is.
        Ty::FieldsV1 => v.is_object(),
        // Base64 is re-encoded, and raw extensions are rare: the round trip decides.
        Ty::Bytes | Ty::RawExtension => false,
    }
}

/// Whether a leaf decodes into `T` and encodes back to itself (timestamps, whose layout
/// the types normalise).
fn same_through<T: DeserializeOwned + Serialize>(v: &Value) -> bool {
    v.is_string()
        && T::deserialize(v)
            .ok()
            .and_then(|t| serde_json::to_value(t).ok())
            .is_some_and(|back| back == *v)
}

/// Objects with every field set, from the field tables, for tests that compare a shortcut
/// with the general path over every built-in kind.
#[cfg(test)]
pub(crate) mod samples {
    use serde_json::{Map, Value, json};

    use super::super::schema::MESSAGES;
    use super::super::{Card, Field, Msg, Ty};

    /// An object of the top-level kind with every field its type has set (fields of base64
    /// bytes, raw extensions and recursive types left out).
    pub(crate) fn full_object(api_version: &str, kind: &str) -> Option<Value> {
        let msg = super::super::message_of(api_version, kind)?;
        let mut map = Map::new();
        fill(msg, &mut map, &mut Vec::new());
        map.insert("apiVersion".into(), json!(api_version));
        map.insert("kind".into(), json!(kind));
        Some(Value::Object(map))
    }

    fn leaf(ty: Ty, stack: &mut Vec<u16>) -> Option<Value> {
        Some(match ty {
            Ty::Bool => json!(true),
            Ty::Int32 => json!(7),
            Ty::Int64 => json!(-9),
            Ty::String => json!("s"),
            Ty::Quantity => json!("1Gi"),
            Ty::IntOrString => json!("http"),
            Ty::StringList => json!(["a", "b"]),
            Ty::Time => json!("2024-01-02T03:04:05Z"),
            Ty::MicroTime => json!("2024-01-02T03:04:05.123456Z"),
            Ty::FieldsV1 => json!({"f:data": {".": {}, "f:a": {}}}),
            // The proof never vouches for these; leave them out of the full object.
            Ty::Bytes | Ty::RawExtension => return None,
            Ty::Msg(i) => {
                if stack.contains(&i) || stack.len() > 12 {
                    return None;
                }
                stack.push(i);
                let mut map = Map::new();
                fill(&MESSAGES[usize::from(i)], &mut map, stack);
                stack.pop();
                Value::Object(map)
            }
        })
    }

    pub(crate) fn fill(msg: &Msg, map: &mut Map<String, Value>, stack: &mut Vec<u16>) {
        for f in msg.fields {
            if f.inline {
                if let Ty::Msg(i) = f.ty {
                    fill(&MESSAGES[usize::from(i)], map, stack);
                }
                continue;
            }
            if f.untyped {
                continue;
            }
            if let Some(v) = field_value(f, stack) {
                map.insert(f.name.to_string(), v);
            }
        }
    }

    fn field_value(f: &Field, stack: &mut Vec<u16>) -> Option<Value> {
        let one = leaf(f.ty, stack)?;
        Some(match f.card {
            Card::One => one,
            Card::Repeated => json!([one]),
            Card::Map => json!({"k": one}),
        })
    }
}

#[cfg(test)]
mod tests {
    //! The proof against what it stands for: for every built-in kind, an object with every
    //! field set, and variants of it with a field removed, `null` or of the wrong type. When
    //! the proof says the round trip changes nothing, the round trip must give the object
    //! back exactly, with no unknown field and no error.

    use serde_json::{Value, json};

    use super::samples::full_object;
    use super::{decodes_unchanged, object_meta_unchanged};

    /// Every path of `v` (object keys and array indices), parents before children.
    fn paths(v: &Value, prefix: &mut Vec<Value>, out: &mut Vec<Vec<Value>>) {
        match v {
            Value::Object(m) => {
                for (k, c) in m {
                    prefix.push(json!(k));
                    out.push(prefix.clone());
                    paths(c, prefix, out);
                    prefix.pop();
                }
            }
            Value::Array(a) => {
                for (i, c) in a.iter().enumerate() {
                    prefix.push(json!(i));
                    out.push(prefix.clone());
                    paths(c, prefix, out);
                    prefix.pop();
                }
            }
            _ => {}
        }
    }

    /// A change to a value, given its parent container and its key or index there.
    type Change = dyn Fn(&mut Value, &Value);

    /// Applies `change` to the value at `path` (given it and its parent container).
    fn mutate(v: &mut Value, path: &[Value], change: &Change) {
        let Some((last, init)) = path.split_last() else {
            return;
        };
        let mut cur = v;
        for seg in init {
            cur = match seg {
                Value::String(k) => &mut cur[k.as_str()],
                Value::Number(n) => &mut cur[n.as_u64().unwrap_or(0) as usize],
                _ => return,
            };
        }
        change(cur, last);
    }

    fn remove(parent: &mut Value, last: &Value) {
        match (parent, last) {
            (Value::Object(m), Value::String(k)) => {
                m.remove(k);
            }
            (Value::Array(a), Value::Number(n)) => {
                a.remove(n.as_u64().unwrap_or(0) as usize);
            }
            _ => {}
        }
    }

    fn set(parent: &mut Value, last: &Value, to: &dyn Fn(&Value) -> Value) {
        let slot = match (parent, last) {
            (Value::Object(m), Value::String(k)) => m.get_mut(k),
            (Value::Array(a), Value::Number(n)) => a.get_mut(n.as_u64().unwrap_or(0) as usize),
            _ => None,
        };
        if let Some(slot) = slot {
            *slot = to(slot);
        }
    }

    fn wrong_type(v: &Value) -> Value {
        match v {
            Value::String(_) => json!(5),
            Value::Number(_) => json!(1.5),
            Value::Bool(_) => json!("true"),
            Value::Array(_) => json!({"a": 1}),
            Value::Object(_) => json!(["a"]),
            Value::Null => json!(0),
        }
    }

    /// Where two values first differ, and how.
    fn difference(a: &Value, b: &Value, at: String) -> String {
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                for k in x.keys().chain(y.keys()) {
                    match (x.get(k), y.get(k)) {
                        (Some(p), Some(q)) if p != q => {
                            return difference(p, q, format!("{at}.{k}"));
                        }
                        (Some(_), None) | (None, Some(_)) => {
                            return format!("{at}.{k}: {:?} / {:?}", x.get(k), y.get(k));
                        }
                        _ => {}
                    }
                }
                format!("{at}: equal")
            }
            (Value::Array(x), Value::Array(y)) if x.len() == y.len() => x
                .iter()
                .zip(y)
                .enumerate()
                .find(|(_, (p, q))| p != q)
                .map_or(format!("{at}: equal"), |(i, (p, q))| {
                    difference(p, q, format!("{at}[{i}]"))
                }),
            _ => format!("{at}: {a} / {b}"),
        }
    }

    /// Asserts the proof's promise for `obj`: where it vouches, the kind's decode with the
    /// shortcut gives what the round trip gives. Returns whether it vouched.
    fn check(rt: &crate::resources::ResourceType, obj: &Value) -> bool {
        let vouched = decodes_unchanged(&rt.api_version(), &rt.kind, obj);
        if vouched {
            let decode = rt.def.and_then(|d| d.decode).expect("a built-in decode");
            let mut short = obj.clone();
            let shortcut = decode(rt, &mut short).map_err(|e| e.message.clone());
            let mut long = obj.clone();
            crate::typed::FORCE_ROUND_TRIP.with(|f| f.set(true));
            let round_trip = decode(rt, &mut long).map_err(|e| e.message.clone());
            crate::typed::FORCE_ROUND_TRIP.with(|f| f.set(false));
            assert_eq!(round_trip, Ok(Vec::new()), "{}: vouched for", rt.kind);
            assert_eq!(shortcut, round_trip, "{}", rt.kind);
            if short != long {
                panic!(
                    "{}: vouched for, yet the round trip differs at {}",
                    rt.kind,
                    difference(&short, &long, String::new())
                );
            }
        }
        vouched
    }

    #[test]
    fn the_proof_holds_for_every_built_in_kind() {
        let mut vouched_full = Vec::new();
        for def in crate::kinds::all() {
            if def.decode.is_none() {
                continue;
            }
            let rt = def.resource_type();
            let av = rt.api_version();
            let Some(full) = full_object(&av, &rt.kind) else {
                continue;
            };
            if check(&rt, &full) {
                vouched_full.push(rt.kind.clone());
            }
            let mut all = Vec::new();
            paths(&full, &mut Vec::new(), &mut all);
            // Every top-level and metadata path, and an even spread of the deeper ones.
            let stride = (all.len() / 40).max(1);
            for (i, path) in all.iter().enumerate() {
                let shallow = path.len() == 1 || path.first() == Some(&json!("metadata"));
                if !shallow && i % stride != 0 {
                    continue;
                }
                let variants: [&Change; 3] =
                    [&remove, &|p, l| set(p, l, &|_| Value::Null), &|p, l| {
                        set(p, l, &wrong_type)
                    }];
                for change in variants {
                    let mut v = full.clone();
                    mutate(&mut v, path, change);
                    check(&rt, &v);
                }
            }
        }
        // The proof is of use: it vouches for a full object of nearly every kind (those with
        // base64 or raw fields the full object leaves out, and required, are the exceptions).
        for kind in [
            "ConfigMap",
            "Secret",
            "Pod",
            "Deployment",
            "Service",
            "Lease",
            "Event",
        ] {
            assert!(
                vouched_full.iter().any(|k| k == kind),
                "{kind}: {vouched_full:?}"
            );
        }
    }

    #[test]
    fn a_typical_config_map_and_its_metadata_are_vouched_for() {
        let cm = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a", "namespace": "default", "labels": {"app": "x"},
                "creationTimestamp": "2026-12-03T10:00:00Z",
                "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                    "time": "2026-12-03T10:00:00Z", "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:data": {".": {}, "f:k": {}}}}],
                "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u", "controller": true}]},
            "data": {"k": "v"},
        });
        assert!(decodes_unchanged("v1", "ConfigMap", &cm));
        assert!(object_meta_unchanged(&cm["metadata"]));
        // What the round trip would change is never vouched for.
        for (path, value) in [
            (
                "/metadata/creationTimestamp",
                json!("2026-12-03T10:00:00+00:00"),
            ),
            ("/metadata/bogus", json!(1)),
            ("/data/k", json!(5)),
            ("/metadata/labels", Value::Null),
            ("/binaryData", json!({"b": "aGk="})),
        ] {
            let mut v = cm.clone();
            let (parent, key) = path.rsplit_once('/').unwrap_or_default();
            v.pointer_mut(parent)
                .and_then(Value::as_object_mut)
                .map(|m| m.insert(key.to_string(), value));
            assert!(!decodes_unchanged("v1", "ConfigMap", &v), "{path}");
        }
        let mut no_kind = cm.clone();
        no_kind.as_object_mut().map(|m| m.remove("kind"));
        assert!(!decodes_unchanged("v1", "ConfigMap", &no_kind));
        let mut owner = cm.clone();
        owner["metadata"]["ownerReferences"][0]
            .as_object_mut()
            .map(|m| m.remove("uid"));
        assert!(!object_meta_unchanged(&owner["metadata"]));
    }
}
