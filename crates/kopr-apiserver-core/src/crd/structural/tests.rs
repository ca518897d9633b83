//! Unit tests for the structural schema machinery, with exact messages.

use super::*;
use crate::validation::FieldErrorKind;
use serde_json::json;

fn s(v: Value) -> Structural {
    Structural::from_value(&v)
}

fn msgs(schema: &Structural, obj: &Value) -> Vec<String> {
    schema
        .validate(obj)
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn book() -> Structural {
    s(json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["author", "title"],
                "properties": {
                    "author": {"type": "string"},
                    "title": {"type": "string", "maxLength": 5},
                    "message": {"type": "string"},
                    "pages": {"type": "integer", "minimum": 1, "maximum": 1000},
                    "genre": {"type": "string", "enum": ["a", "b"]},
                    "tags": {"type": "array", "maxItems": 2, "items": {"type": "string"}},
                }
            }
        }
    }))
}

#[test]
fn book_example_prune_then_required() {
    let schema = book();
    let mut obj = json!({"apiVersion": "x/v1", "kind": "Book", "metadata": {"name": "b"}, "spec": {"foo": "bar"}});
    let pruned = schema.prune(&mut obj);
    assert_eq!(pruned, vec!["spec.foo"]);
    assert_eq!(obj["spec"], json!({}));
    assert_eq!(obj["metadata"], json!({"name": "b"}));
    assert_eq!(
        msgs(&schema, &obj),
        vec!["spec.author: Required value", "spec.title: Required value"]
    );
    let e = schema.validate(&obj);
    assert_eq!(e[0].kind, FieldErrorKind::Required);
}

#[test]
fn type_error() {
    let schema = book();
    let obj = json!({"spec": {"author": "a", "title": "t", "message": 5}});
    let e = schema.validate(&obj);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0].kind, FieldErrorKind::TypeInvalid);
    assert_eq!(e[0].field, "spec.message");
    assert_eq!(
        e[0].to_string(),
        "spec.message: Invalid value: \"integer\": spec.message in body must be of type string: \"integer\""
    );
}

#[test]
fn enum_length_items_bounds() {
    let schema = book();
    let obj = json!({"spec": {"author": "a", "title": "toolong", "genre": "x", "tags": ["a", "b", "c"], "pages": 0}});
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "spec.genre: Unsupported value: \"x\": supported values: \"a\", \"b\"",
            "spec.pages: Invalid value: 0: spec.pages in body should be greater than or equal to 1",
            "spec.tags: Too many: 3: must have at most 2 items",
            "spec.title: Too long: may not be longer than 5",
        ]
    );
    let e = schema.validate(&obj);
    assert_eq!(e[0].kind, FieldErrorKind::NotSupported);
    assert_eq!(e[2].kind, FieldErrorKind::TooMany);
    assert_eq!(e[3].kind, FieldErrorKind::TooLong);
    let obj = json!({"spec": {"author": "a", "title": "t", "pages": 1001.5}});
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "spec.pages: Invalid value: \"number\": spec.pages in body must be of type integer: \"number\"",
            "spec.pages: Invalid value: 1001.5: spec.pages in body should be less than or equal to 1000",
        ]
    );
}

#[test]
fn numbers() {
    let schema = s(json!({"type": "object", "properties": {
        "a": {"type": "integer", "maximum": 10, "exclusiveMaximum": true},
        "b": {"type": "number", "minimum": 0.5, "exclusiveMinimum": true},
        "c": {"type": "integer", "multipleOf": 3},
        "d": {"type": "number", "multipleOf": 0.5},
        "e": {"type": "integer", "format": "int32"},
        "f": {"type": "integer"},
    }}));
    let obj = json!({"a": 10, "b": 0.5, "c": 4, "d": 1.2, "e": 7, "f": 2.0});
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "a: Invalid value: 10: a in body should be less than 10",
            "b: Invalid value: 0.5: b in body should be greater than 0.5",
            "c: Invalid value: 4: c in body should be a multiple of 3",
            "d: Invalid value: 1.2: d in body should be a multiple of 0.5",
        ]
    );
}

#[test]
fn strings_pattern_min_length() {
    let schema = s(json!({"type": "object", "properties": {
        "p": {"type": "string", "pattern": "^[a-z]+\\d$"},
        "m": {"type": "string", "minLength": 3},
    }}));
    assert_eq!(
        msgs(&schema, &json!({"p": "abc", "m": "ab"})),
        vec![
            "m: Invalid value: \"ab\": m in body should be at least 3 chars long",
            "p: Invalid value: \"abc\": p in body should match '^[a-z]+\\d$'",
        ]
    );
    assert!(msgs(&schema, &json!({"p": "abc1", "m": "abc"})).is_empty());
    // Go's \d is ASCII-only.
    assert_eq!(msgs(&schema, &json!({"p": "abc\u{0663}"})).len(), 1);
}

#[test]
fn objects() {
    let schema = s(json!({"type": "object", "properties": {
        "few": {"type": "object", "minProperties": 2, "required": ["x"]},
        "many": {"type": "object", "maxProperties": 1},
        "closed": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": false},
        "map": {"type": "object", "additionalProperties": {"type": "integer"}},
    }}));
    let obj = json!({
        "few": {"a": 1},
        "many": {"a": 1, "b": 2},
        "closed": {"a": "x", "b": 1},
        "map": {"k": "v"},
    });
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "closed: Invalid value: \"b\": closed.b in body is a forbidden property",
            "few: Invalid value: 1: few in body should have at least 2 properties",
            "many: Too many: 2: must have at most 1 items",
            "map.k: Invalid value: \"string\": map.k in body must be of type integer: \"string\"",
        ]
    );
}

#[test]
fn arrays_unique_min() {
    let schema = s(json!({"type": "object", "properties": {
        "u": {"type": "array", "uniqueItems": true, "minItems": 4, "items": {"type": "integer", "maximum": 5}},
    }}));
    assert_eq!(
        msgs(&schema, &json!({"u": [1, 1, 9]})),
        vec![
            "u[2]: Invalid value: 9: u[2] in body should be less than or equal to 5",
            "u: Invalid value: 3: u in body should have at least 4 items",
            "u: Invalid value: \"\": u in body shouldn't contain duplicates",
        ]
    );
}

#[test]
fn nullable_and_null() {
    let schema = s(json!({"type": "object", "properties": {
        "n": {"type": "string", "nullable": true},
        "s": {"type": "string"},
    }}));
    assert_eq!(
        msgs(&schema, &json!({"n": null, "s": null})),
        vec!["s: Invalid value: \"null\": s in body must be of type string: \"null\""]
    );
}

#[test]
fn int_or_string() {
    let schema = s(json!({"type": "object", "properties": {
        "p": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
    }}));
    assert!(msgs(&schema, &json!({"p": 80})).is_empty());
    assert!(msgs(&schema, &json!({"p": "http"})).is_empty());
    let m = msgs(&schema, &json!({"p": true}));
    assert_eq!(
        m[0],
        "p: Invalid value: \"boolean\": p in body must be of type integer,string: \"boolean\""
    );
    assert!(m.contains(
        &"<nil>: Invalid value: \"\": \"p\" must validate at least one schema (anyOf)".to_string()
    ));
}

#[test]
fn composition() {
    let schema = s(json!({"type": "object", "properties": {
        "one": {"type": "integer", "oneOf": [{"minimum": 0}, {"maximum": 10}]},
        "all": {"type": "integer", "allOf": [{"minimum": 5}, {"maximum": 10}]},
        "not": {"type": "string", "not": {"enum": ["x"]}},
    }}));
    assert_eq!(
        msgs(&schema, &json!({"one": 5, "all": 3, "not": "x"})),
        vec![
            "all: Invalid value: 3: all in body should be greater than or equal to 5",
            "<nil>: Invalid value: \"\": \"all\" must validate all the schemas (allOf)",
            "<nil>: Invalid value: \"\": \"not\" must not validate the schema (not)",
            "<nil>: Invalid value: \"\": \"one\" must validate one and only one schema (oneOf). Found 2 valid alternatives",
        ]
    );
}

#[test]
fn formats() {
    let schema = s(json!({"type": "object", "properties": {
        "d": {"type": "string", "format": "date"},
        "t": {"type": "string", "format": "date-time"},
        "u": {"type": "string", "format": "uuid"},
        "e": {"type": "string", "format": "email"},
        "h": {"type": "string", "format": "hostname"},
        "i4": {"type": "string", "format": "ipv4"},
        "i6": {"type": "string", "format": "ipv6"},
        "c": {"type": "string", "format": "cidr"},
        "m": {"type": "string", "format": "mac"},
        "b": {"type": "string", "format": "byte"},
        "du": {"type": "string", "format": "duration"},
        "uri": {"type": "string", "format": "uri"},
        "x": {"type": "string", "format": "unknown-thing"},
        "bs": {"type": "string", "format": "bsonobjectid"},
    }}));
    let good = json!({
        "d": "2024-02-29", "t": "2024-01-02T03:04:05Z", "u": "123e4567-e89b-12d3-a456-426614174000",
        "e": "a@b.com", "h": "example.com", "i4": "10.0.0.01", "i6": "::1", "c": "10.0.0.0/8",
        "m": "00:1a:2b:3c:4d:5e", "b": "aGVsbG8=", "du": "1h30m", "uri": "https://x.io/a?b",
        "x": "anything", "bs": "507f1f77bcf86cd799439011",
    });
    assert!(
        msgs(&schema, &good).is_empty(),
        "{:?}",
        msgs(&schema, &good)
    );
    let bad = json!({
        "d": "2023-02-29", "t": "2024-01-02 03:04:05", "u": "nope", "e": "nope", "h": "-bad-",
        "i4": "1.2.3", "i6": "1.2.3.4", "c": "10.0.0.0/33", "m": "00:1a", "b": "a", "du": "forever",
        "uri": "relative/path", "bs": "xyz",
    });
    let m = msgs(&schema, &bad);
    assert_eq!(m.len(), 13, "{m:?}");
    assert!(
        m.contains(
            &"d: Invalid value: \"2023-02-29\": d in body must be of type date: \"2023-02-29\""
                .to_string()
        )
    );
    assert!(m.contains(&"t: Invalid value: \"2024-01-02 03:04:05\": t in body must be of type date-time: \"2024-01-02 03:04:05\"".to_string()));
    assert_eq!(schema.validate(&bad)[0].kind, FieldErrorKind::TypeInvalid);
    // Scala-style durations are accepted too.
    assert!(formats::validates("duration", "3 days"));
    assert!(formats::validates("duration", "-1.5h"));
    assert!(!formats::validates("duration", "5 mo"));
    assert!(formats::validates("isbn", "978-0321751041"));
    assert!(formats::validates("isbn10", "0321751043"));
    assert!(formats::validates("creditcard", "4111 1111 1111 1111"));
    assert!(formats::validates("ssn", "123-45-6789"));
    assert!(!formats::validates("ssn", "123456789"));
    assert!(formats::validates("hexcolor", "#fff"));
    assert!(formats::validates("rgbcolor", "rgb(255, 0, 10)"));
    assert!(formats::validates("uri", "mailto:a@b"));
    assert!(!formats::validates("uri", "http://exa mple.com/"));
    assert!(formats::validates("email", "John <j@x.org>"));
    assert!(formats::validates("mac", "0000.5e00.5301"));
}

#[test]
fn format_on_wrong_type_and_integer_formats() {
    let schema = s(json!({"type": "object", "properties": {
        "d": {"type": "string", "format": "date"},
        "i": {"type": "integer", "format": "int32"},
    }}));
    assert_eq!(
        msgs(&schema, &json!({"d": 5})),
        vec!["d: Invalid value: \"int64\": d in body must be of type date: \"int64\""]
    );
    assert!(msgs(&schema, &json!({"i": 5})).is_empty());
}

#[test]
fn list_types() {
    let schema = s(json!({"type": "object", "properties": {
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "map": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {"name": {"type": "string"}, "v": {"type": "integer"}}}},
        "map2": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a", "b"],
            "items": {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}}},
    }}));
    let obj = json!({
        "set": ["x", "y", "x", "x"],
        "map": [{"name": "a", "v": 1}, {"name": "a", "v": 2}],
        "map2": [{"a": "x", "b": 1}, {"a": "x", "b": 1}],
    });
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "map[1]: Duplicate value: map[string]interface {}{\"name\":\"a\"}",
            "map2[1]: Duplicate value: map[string]interface {}{\"a\":\"x\", \"b\":1}",
            "set[2]: Duplicate value: \"x\"",
        ]
    );
    assert_eq!(schema.validate(&obj)[0].kind, FieldErrorKind::Duplicate);
    assert_eq!(schema.list_strategy(&["set"]), ListStrategy::Set);
    assert_eq!(schema.list_strategy(&["map"]), ListStrategy::map(&["name"]));
    assert_eq!(schema.list_strategy(&["nope"]), ListStrategy::Atomic);
    assert_eq!(
        schema.at(&["map", "v"]).map(Structural::type_name),
        Some("integer")
    );
}

#[test]
fn map_atomic() {
    let schema = s(json!({"type": "object", "properties": {
        "sel": {"type": "object", "x-kubernetes-map-type": "atomic"},
        "list": {"type": "array", "items": {"type": "object", "x-kubernetes-map-type": "atomic"}},
        "gran": {"type": "object"},
    }}));
    assert!(schema.map_is_atomic(&["sel"]));
    assert!(schema.map_is_atomic(&["list"]));
    assert!(!schema.map_is_atomic(&["gran"]));
    assert!(!schema.map_is_atomic(&["missing"]));
}

#[test]
fn embedded_resource() {
    let schema = s(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true},
        }},
    }}));
    let mut obj = json!({"spec": {"template": {"metadata": {"name": "a/b", "labels": {"a": "b"}}, "foo": 1}}});
    assert!(schema.prune(&mut obj).is_empty());
    assert_eq!(obj["spec"]["template"]["foo"], json!(1));
    let m = msgs(&schema, &obj);
    assert_eq!(m[0], "spec.template.apiVersion: Required value");
    assert_eq!(m[1], "spec.template.kind: Required value");
    assert_eq!(
        m[2],
        "spec.template.metadata.name: Invalid value: \"a/b\": may not contain '/'"
    );
    let ok = json!({"spec": {"template": {"apiVersion": "v1", "kind": "Pod"}}});
    assert!(msgs(&schema, &ok).is_empty());
    let bad_kind = json!({"spec": {"template": {"apiVersion": "a/b/c", "kind": "x_y"}}});
    let m = msgs(&schema, &bad_kind);
    assert_eq!(
        m[0],
        "spec.template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"
    );
    assert!(m[1].starts_with("spec.template.kind: Invalid value: \"x_y\": may have mixed case, but should otherwise match: "));
}

#[test]
fn pruning_paths_and_preserve() {
    let schema = s(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"typed": {"type": "object", "properties": {"k": {"type": "string"}}}}},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        }},
    }}));
    let mut obj = json!({
        "apiVersion": "a/v1", "kind": "K", "metadata": {"x": 1}, "status": {"s": 1},
        "spec": {
            "items": [{"a": "x", "b": 1}, {"c": 2}],
            "free": {"anything": {"deep": 1}, "typed": {"k": "v", "drop": 1}},
            "labels": {"x": "y"},
        }
    });
    let pruned = schema.prune(&mut obj);
    assert_eq!(
        pruned,
        vec![
            "spec.free.typed.drop",
            "spec.items[0].b",
            "spec.items[1].c",
            "status"
        ]
    );
    assert_eq!(obj["spec"]["free"]["anything"], json!({"deep": 1}));
    assert_eq!(obj["metadata"], json!({"x": 1}));
    assert_eq!(obj["spec"]["labels"], json!({"x": "y"}));
}

#[test]
fn defaults_and_nulls() {
    let schema = s(json!({"type": "object", "properties": {
        "spec": {"type": "object", "default": {}, "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "auto"},
            "nothing": {"type": "string"},
            "nullable": {"type": "string", "nullable": true},
            "obj": {"type": "object", "default": {"a": "x", "junk": 1}, "properties": {"a": {"type": "string"}}},
            "list": {"type": "array", "items": {"type": "object", "properties": {
                "p": {"type": "string", "default": "TCP"}}}},
            "m": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "q": {"type": "integer", "default": 7}}}},
        }},
    }}));
    let mut obj = json!({"spec": {"mode": null, "nothing": null, "nullable": null,
        "list": [{}, {"p": "UDP"}], "m": {"k": {}}}});
    schema.drop_nulls(&mut obj);
    assert_eq!(obj["spec"].get("nothing"), None);
    assert_eq!(obj["spec"]["mode"], Value::Null);
    assert_eq!(obj["spec"]["nullable"], Value::Null);
    schema.apply_defaults(&mut obj);
    assert_eq!(
        obj,
        json!({"spec": {"replicas": 1, "mode": "auto", "nullable": null, "obj": {"a": "x"},
            "list": [{"p": "TCP"}, {"p": "UDP"}], "m": {"k": {"q": 7}}}})
    );
    let mut empty = json!({});
    schema.apply_defaults(&mut empty);
    assert_eq!(empty["spec"]["replicas"], json!(1));
}

#[test]
fn root_errors_use_nil_path() {
    let schema = s(json!({"type": "object", "minProperties": 5}));
    assert_eq!(
        msgs(&schema, &json!({"a": 1})),
        vec!["<nil>: Invalid value: 1:  in body should have at least 5 properties"]
    );
    let schema = s(json!({"type": "object", "additionalProperties": {"type": "string"}}));
    assert_eq!(
        msgs(&schema, &json!({"a": 1})),
        vec!["a: Invalid value: \"integer\": .a in body must be of type string: \"integer\""]
    );
}

#[test]
fn enum_non_strings() {
    let schema =
        s(json!({"type": "object", "properties": {"n": {"type": "integer", "enum": [1, 2]}}}));
    assert_eq!(
        msgs(&schema, &json!({"n": 3})),
        vec!["n: Unsupported value: 3: supported values: \"1\", \"2\""]
    );
    assert!(msgs(&schema, &json!({"n": 2})).is_empty());
}

#[test]
fn lenient_parsing_never_panics() {
    let weird = [
        json!(null),
        json!("x"),
        json!({"type": 5, "properties": [], "items": [1], "required": "a", "enum": {}, "pattern": "(",
            "maxLength": -3, "minItems": 1.5, "additionalProperties": "no", "multipleOf": 0.1}),
        json!({"properties": {"a": {"pattern": "[[", "x-kubernetes-list-type": "map"}}}),
    ];
    let objs = [
        json!(null),
        json!(1),
        json!({"a": [1, {"b": null}], "x": "y"}),
        json!([1, 2, 3]),
    ];
    for w in &weird {
        let sc = s(w.clone());
        for o in &objs {
            let mut o = o.clone();
            sc.drop_nulls(&mut o);
            sc.apply_defaults(&mut o);
            let _ = sc.prune(&mut o);
            let _ = sc.validate(&o);
            let _ = sc.list_strategy(&["a"]);
            let _ = sc.map_is_atomic(&["a", "b"]);
        }
    }
    let bad_pattern =
        s(json!({"type": "object", "properties": {"p": {"type": "string", "pattern": "("}}}));
    let m = msgs(&bad_pattern, &json!({"p": "x"}));
    assert!(
        m[0].starts_with(
            "p: Invalid value: \"x\": p in body should match '(, but pattern is invalid: "
        ),
        "{m:?}"
    );
}

#[test]
fn deep_values_are_bounded() {
    let mut schema_v = json!({"type": "object"});
    for _ in 0..200 {
        schema_v = json!({"type": "object", "properties": {"a": schema_v}});
    }
    let sc = s(schema_v);
    let mut v = json!(1);
    for _ in 0..400 {
        v = json!({"a": v});
    }
    let _ = sc.validate(&v);
    let _ = sc.prune(&mut v);
}

/// Every way a path grows, as kube-openapi spells it: a declared property (bare under the
/// root), a key of additionalProperties or patternProperties (`.k`, even under the root),
/// an item (`[i]`), and a required field inside each.
#[test]
fn error_paths_are_spelled_as_kube_openapi_spells_them() {
    let schema = s(json!({
        "type": "object",
        "additionalProperties": {"type": "object", "required": ["need"]},
        "properties": {
            "spec": {"type": "object", "properties": {
                "items": {"type": "array", "items": {
                    "type": "object", "required": ["id"],
                    "properties": {"n": {"type": "integer"}}
                }},
                "labels": {"type": "object", "additionalProperties": {"type": "integer"}},
                "pat": {"type": "object", "patternProperties": {"^x": {"type": "boolean"}}},
            }}
        }
    }));
    let obj = json!({
        "extra": {},
        "spec": {
            "items": [{"id": 1, "n": 2}, {"n": "two"}],
            "labels": {"a.b": "c"},
            "pat": {"xy": 1},
        }
    });
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "extra.need: Required value",
            "spec.items[1].n: Invalid value: \"string\": spec.items[1].n in body must be of type integer: \"string\"",
            "spec.items[1].id: Required value",
            "spec.labels.a.b: Invalid value: \"string\": spec.labels.a.b in body must be of type integer: \"string\"",
            "spec.pat.xy: Invalid value: \"integer\": spec.pat.xy in body must be of type boolean: \"integer\"",
        ]
    );
}

/// The embedded-resource and list-type walks skip the parts of a schema that have neither,
/// and still find them wherever they are: under items, additionalProperties and properties.
#[test]
fn walks_reach_embedded_resources_and_list_types_at_any_depth() {
    let schema = s(json!({
        "type": "object",
        "properties": {
            "plain": {"type": "object", "properties": {"a": {"type": "string"}}},
            "deep": {"type": "object", "additionalProperties": {"type": "array", "items": {
                "type": "object", "x-kubernetes-embedded-resource": true,
                "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"tags": {"type": "array", "x-kubernetes-list-type": "set",
                    "items": {"type": "string"}}}
            }}},
        }
    }));
    assert!(schema.walk_embedded && schema.walk_list_types);
    assert!(!schema.properties["plain"].walk_embedded);
    assert!(!schema.properties["plain"].walk_list_types);
    let obj = json!({
        "plain": {"a": "x"},
        "deep": {"k": [{"apiVersion": "v1", "kind": "Thing", "tags": ["t", "t"]}, {"kind": "Thing"}]},
    });
    assert_eq!(
        msgs(&schema, &obj),
        vec![
            "deep[k][1].apiVersion: Required value",
            "deep[k][0].tags[1]: Duplicate value: \"t\"",
        ]
    );
}
