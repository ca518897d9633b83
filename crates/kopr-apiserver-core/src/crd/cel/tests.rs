//! Tests of CEL rule compilation and evaluation.

use super::*;
use serde_json::json;

const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

fn schema(spec: Value) -> Value {
    json!({"type": "object", "properties": {"spec": spec}})
}

fn compile(s: &Value) -> CelValidator {
    match CelValidator::compile(s, ROOT) {
        Ok(v) => v,
        Err(e) => panic!("compile failed: {e:?}"),
    }
}

fn msgs(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

fn compile_err(s: &Value) -> Vec<String> {
    let e = msgs(&CelValidator::check(s, ROOT));
    assert!(!e.is_empty(), "expected compile error");
    e
}

fn replicas_schema() -> Value {
    schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"},
            {"rule": "self.replicas < 100", "messageExpression": "'replicas is ' + string(self.replicas)"}
        ],
        "properties": {
            "replicas": {"type": "integer"},
            "minReplicas": {"type": "integer"}
        }
    }))
}

#[test]
fn object_rule_message() {
    let v = compile(&replicas_schema());
    assert!(!v.is_empty());
    assert!(
        v.validate(&json!({"spec": {"replicas": 3, "minReplicas": 1}}), None)
            .is_empty()
    );
    let e = v.validate(&json!({"spec": {"replicas": 1, "minReplicas": 2}}), None);
    assert_eq!(
        msgs(&e),
        ["spec: Invalid value: \"object\": replicas must be at least minReplicas"]
    );
}

#[test]
fn message_expression() {
    let v = compile(&replicas_schema());
    let e = v.validate(&json!({"spec": {"replicas": 150, "minReplicas": 2}}), None);
    assert_eq!(
        msgs(&e),
        ["spec: Invalid value: \"object\": replicas is 150"]
    );
}

#[test]
fn missing_field_is_evaluation_error() {
    let v = compile(&replicas_schema());
    let e = v.validate(&json!({"spec": {"replicas": 1}}), None);
    assert_eq!(
        msgs(&e),
        [
            "spec: Invalid value: \"object\": no such key: minReplicas evaluating rule: replicas must be at least minReplicas"
        ]
    );
}

#[test]
fn has_macro_and_default_message() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "!has(self.a) || self.a.startsWith('x')"}],
        "properties": {"a": {"type": "string"}}
    }));
    let v = compile(&s);
    assert!(v.validate(&json!({"spec": {}}), None).is_empty());
    assert!(v.validate(&json!({"spec": {"a": "xy"}}), None).is_empty());
    assert_eq!(
        msgs(&v.validate(&json!({"spec": {"a": "y"}}), None)),
        ["spec: Invalid value: \"object\": failed rule: !has(self.a) || self.a.startsWith('x')"]
    );
}

#[test]
fn transition_rule() {
    let s = schema(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "value is immutable"}
        ]}, "other": {"type": "string"}}
    }));
    let v = compile(&s);
    let new = json!({"spec": {"name": "b"}});
    assert!(v.validate(&new, None).is_empty(), "not run on create");
    assert!(
        v.validate(&new, Some(&json!({"spec": {}}))).is_empty(),
        "no old value"
    );
    assert!(
        v.validate(&new, Some(&json!({"spec": {"name": "b"}})))
            .is_empty()
    );
    assert_eq!(
        msgs(&v.validate(&new, Some(&json!({"spec": {"name": "a"}})))),
        ["spec.name: Invalid value: \"string\": value is immutable"]
    );
}

#[test]
fn optional_old_self() {
    let s = schema(json!({
        "type": "object",
        "properties": {"name": {"type": "string", "x-kubernetes-validations": [
            {"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": true, "message": "immutable"}
        ]}}
    }));
    let v = compile(&s);
    let new = json!({"spec": {"name": "b"}});
    assert!(v.validate(&new, None).is_empty());
    assert_eq!(
        v.validate(&new, Some(&json!({"spec": {"name": "a"}})))
            .len(),
        1
    );
}

#[test]
fn list_items_and_map_values() {
    let s = schema(json!({
        "type": "object",
        "properties": {
            "items": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self >= 0", "message": "must be non-negative"}
            ]}},
            "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self.size() <= 3"}
            ]}},
            "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
                {"rule": "self.all(x, x != 'bad')", "fieldPath": ".foo", "reason": "FieldValueForbidden", "message": "no bad"}
            ]}
        }
    }));
    // fieldPath .foo is not a valid path of a string list.
    let e = compile_err(&s);
    assert_eq!(
        e,
        [
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].x-kubernetes-validations[0].fieldPath: Invalid value: \".foo\": fieldPath must be a valid path"
        ]
    );
    let mut s = s;
    s["properties"]["spec"]["properties"]["list"]["x-kubernetes-validations"][0]
        .as_object_mut()
        .map(|o| o.remove("fieldPath"));
    let v = compile(&s);
    let e = v.validate(
        &json!({"spec": {"items": [1, -2, 3], "labels": {"a": "xy", "k": "long"}, "list": ["ok", "bad"]}}),
        None,
    );
    let mut m = msgs(&e);
    m.sort();
    assert_eq!(
        m,
        [
            "spec.items[1]: Invalid value: \"integer\": must be non-negative",
            "spec.labels[k]: Invalid value: \"string\": failed rule: self.size() <= 3",
            "spec.list: Forbidden: no bad",
        ]
    );
}

#[test]
fn field_path_and_reason() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.a.size() > 0", "fieldPath": ".a", "reason": "FieldValueRequired", "message": "a needed"},
            {"rule": "self.m.all(k, k != 'x')", "fieldPath": ".m['x']", "message": "no x"}
        ],
        "properties": {"a": {"type": "string"}, "m": {"type": "object", "additionalProperties": {"type": "string"}}}
    }));
    let v = compile(&s);
    let e = v.validate(&json!({"spec": {"a": "", "m": {"x": "1"}}}), None);
    assert_eq!(
        msgs(&e),
        [
            "spec.a: Required value: a needed",
            "spec.m[x]: Invalid value: \"object\": no x"
        ]
    );
}

#[test]
fn compile_errors() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.replicas >"}],
        "properties": {"replicas": {"type": "integer"}}
    }));
    let e = compile_err(&s);
    assert_eq!(e.len(), 1);
    assert!(
        e[0].starts_with("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>'"),
        "{}",
        e[0]
    );
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.foo == 1"}, {"rule": "self.replicas == bar"}, {"rule": "self.replicas"}, {"rule": "self.replicas + 'a' == 'b'"}],
        "properties": {"replicas": {"type": "integer"}}
    }));
    let e = compile_err(&s);
    assert_eq!(e.len(), 4, "{e:#?}");
    assert!(e[0].ends_with("compilation failed: ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^"), "{}", e[0]);
    assert!(e[1].ends_with("compilation failed: ERROR: <input>:1:18: undeclared reference to 'bar' (in container '')\n | self.replicas == bar\n | .................^"), "{}", e[1]);
    assert!(
        e[2].ends_with(": cel expression must evaluate to a bool"),
        "{}",
        e[2]
    );
    assert!(
        e[3].contains("found no matching overload for '_+_' applied to '(int, string)'"),
        "{}",
        e[3]
    );
}

#[test]
fn rule_shape_errors() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "true", "reason": "Bogus"},
            {"rule": "true", "optionalOldSelf": true}
        ]
    }));
    let e = compile_err(&s);
    let p = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        e,
        [
            format!("{p}[0].rule: Required value: rule is not specified"),
            format!(
                "{p}[1].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
            ),
            format!(
                "{p}[2].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
            ),
        ]
    );
    let s = schema(
        json!({"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}),
    );
    let e = compile_err(&s);
    assert_eq!(
        e,
        [
            "spec.versions[0].schema.openAPIV3Schema.properties[spec].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.versions[0].schema.openAPIV3Schema.properties[spec]"
        ]
    );
}

#[test]
fn map_list_correlation_and_ratcheting() {
    let s = schema(json!({
        "type": "array",
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "properties": {
            "name": {"type": "string"},
            "v": {"type": "integer", "x-kubernetes-validations": [
                {"rule": "self >= oldSelf", "message": "no decrease"},
                {"rule": "self < 10", "message": "too big"}
            ]}
        }}
    }));
    let v = compile(&s);
    let old = json!({"spec": [{"name": "a", "v": 5}, {"name": "b", "v": 20}]});
    let new = json!({"spec": [{"name": "b", "v": 20}, {"name": "a", "v": 4}]});
    // b is unchanged (ratcheted); a decreased.
    assert_eq!(
        msgs(&v.validate(&new, Some(&old))),
        ["spec[1].v: Invalid value: \"integer\": no decrease"]
    );
    assert_eq!(v.validate(&new, None).len(), 1, "create reports too big");
}

#[test]
fn resource_root_and_embedded() {
    let s = json!({
        "type": "object",
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"}],
        "properties": {"spec": {"type": "object"}}
    });
    let v = compile(&s);
    assert!(
        v.validate(&json!({"metadata": {"name": "ok-1"}, "spec": {}}), None)
            .is_empty()
    );
    assert_eq!(
        msgs(&v.validate(&json!({"metadata": {"name": "x"}}), None)),
        ["<nil>: Invalid value: \"object\": bad name"]
    );
}

#[test]
fn int_or_string_and_escaping() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "type(self.port) == int ? self.port > 0 : self.port.endsWith('%')", "message": "bad port"},
            {"rule": "self.foo__dash__bar == 'x' && self.__namespace__ == 'n'", "message": "bad names"}
        ],
        "properties": {
            "port": {"x-kubernetes-int-or-string": true},
            "foo-bar": {"type": "string"},
            "namespace": {"type": "string"}
        }
    }));
    let v = compile(&s);
    assert!(
        v.validate(
            &json!({"spec": {"port": 5, "foo-bar": "x", "namespace": "n"}}),
            None
        )
        .is_empty()
    );
    assert!(
        v.validate(
            &json!({"spec": {"port": "5%", "foo-bar": "x", "namespace": "n"}}),
            None
        )
        .is_empty()
    );
    assert_eq!(
        v.validate(
            &json!({"spec": {"port": "5", "foo-bar": "x", "namespace": "n"}}),
            None
        )
        .len(),
        1
    );
}

#[test]
fn formats_and_bind() {
    let s = schema(json!({
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.timeout < duration('1h')", "message": "timeout"},
            {"rule": "self.at > timestamp('2020-01-01T00:00:00Z')", "message": "at"},
            {"rule": "cel.bind(x, self.timeout, x > duration('1s'))", "message": "bind"},
            {"rule": "self.?missing.orValue('d') == 'd'", "message": "opt"}
        ],
        "properties": {
            "timeout": {"type": "string", "format": "duration"},
            "at": {"type": "string", "format": "date-time"},
            "missing": {"type": "string"}
        }
    }));
    let v = compile(&s);
    assert_eq!(
        msgs(&v.validate(
            &json!({"spec": {"timeout": "30m", "at": "2021-01-01T00:00:00Z"}}),
            None
        )),
        Vec::<String>::new()
    );
    assert_eq!(
        v.validate(
            &json!({"spec": {"timeout": "2h", "at": "2021-01-01T00:00:00Z"}}),
            None
        )
        .len(),
        1
    );
}

#[test]
fn no_rules_is_empty() {
    let v = compile(&schema(json!({"type": "object"})));
    assert!(v.is_empty());
    assert!(v.validate(&json!({"spec": {}}), None).is_empty());
}

#[test]
fn inline_depth_fits_small_stack() {
    let nested_all = (0..7).fold("x > 0".to_string(), |acc, i| {
        format!("self.l.all(v{i}, {acc})")
    });
    let chain = vec!["1"; INLINE_DEPTH_LIMIT - 2].join(" + ") + " > 0";
    let ternary = (0..10).fold("true".to_string(), |acc, _| {
        format!("self.l.size() > 0 ? ({acc}) : false")
    });
    let lists = (0..10).fold("1".to_string(), |acc, _| format!("[{acc}]")) + " != []";
    for r in [nested_all.replace("x > 0", "v0 > 0"), chain, ternary, lists] {
        let s = schema(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": r.clone()}],
            "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}),
        );
        let v = compile(&s);
        let h = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || v.validate(&json!({"spec": {"l": [1, 2]}}), None));
        let errs = h.map(|h| h.join());
        assert!(matches!(&errs, Ok(Ok(e)) if e.is_empty()), "{r}: {errs:?}");
    }
}

#[test]
fn deep_expressions_rejected_or_run_on_big_stack() {
    let long = vec!["1"; 20_000].join("+") + " > 0";
    let s = schema(json!({"type": "object", "x-kubernetes-validations": [{"rule": long}]}));
    let e = compile_err(&s);
    assert!(
        e[0].ends_with("expression recursion limit exceeded: 250"),
        "{}",
        e[0]
    );
    let mid = vec!["1"; 200].join("+") + " > 0";
    let s = schema(json!({"type": "object", "x-kubernetes-validations": [{"rule": mid}]}));
    assert!(compile(&s).validate(&json!({"spec": {}}), None).is_empty());
}

#[test]
fn fuzz_random_rules_and_objects() {
    const ATOMS: &[&str] = &[
        "self",
        "oldSelf",
        ".",
        "a",
        "l",
        "m",
        "s",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ":",
        "+",
        "-",
        "*",
        "/",
        "%",
        "==",
        "!=",
        "<",
        ">=",
        "&&",
        "||",
        "!",
        "?",
        "1",
        "0",
        "-1",
        "2.5",
        "'x'",
        "\"y\"",
        "b'z'",
        "true",
        "null",
        "size",
        "has",
        "all",
        "exists",
        "map",
        "filter",
        "x",
        "in",
        "matches",
        "'('",
        "int",
        "string",
        "type",
        "dyn",
        "cel",
        "bind",
        "optional",
        "none",
        "of",
        "orValue",
        "hasValue",
        "value",
        "startsWith",
        "9223372036854775807",
        "duration",
        "'1h'",
        "timestamp",
        "quantity",
        "'1Gi'",
        "url",
        "sets",
        "contains",
        "?.",
        "[?",
        "\u{1F600}",
        "\n",
        "//",
        "'''",
        "__dash__",
        "Foo{",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let base = json!({
        "type": "object",
        "properties": {
            "a": {"type": "integer"},
            "s": {"type": "string"},
            "l": {"type": "array", "items": {"type": "integer"}},
            "m": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}}
        }
    });
    let objs = [
        json!({"spec": {"a": 1, "s": "x", "l": [1, 2], "m": {"k": "v", "n": 3}}}),
        json!({"spec": {"a": "wrong", "l": {"x": 1}, "m": [1]}}),
        json!({"spec": null}),
        json!({"spec": [{"a": 1, "l": [3]}, [2]]}),
        json!(7),
    ];
    const TERMS: &[&str] = &[
        "self",
        "oldSelf",
        "self.a",
        "self.s",
        "self.l",
        "self.m",
        "self.m.k",
        "self.l[1]",
        "1",
        "2.5",
        "'x'",
        "true",
        "null",
        "[1, 2]",
        "{'k': 1}",
        "self.m['n']",
        "oldSelf.a",
        "self.?a",
        "optional.none()",
        "dyn(self.m.n)",
        "type(self.a)",
        "int",
        "duration('1h')",
        "quantity('1Gi')",
        "b'z'",
        "9223372036854775807",
        "-1",
        "x",
    ];
    const BIN: &[&str] = &[
        "+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "in",
    ];
    const WRAP: &[&str] = &[
        "size({})",
        "!{}",
        "({})",
        "{}.size()",
        "string({})",
        "int({})",
        "has({}.a)",
        "{}.all(x, x > 0)",
        "{}.exists(x, x == 'k')",
        "{}.map(x, x)",
        "{}.filter(x, x)",
        "{}.orValue(1)",
        "{}.hasValue()",
        "{}.startsWith('x')",
        "{}.matches('(')",
        "cel.bind(x, {}, x)",
        "{}.isGreaterThan(quantity('1'))",
        "-{}",
        "{} ? 1 : 2",
        "{}[0]",
        "{}.?k",
        "sets.contains({}, [1])",
    ];
    fn gen_expr(next: &mut dyn FnMut() -> u64, depth: u32) -> String {
        let pick = |n: u64, len: usize| (n % len as u64) as usize;
        match if depth == 0 { 0 } else { next() % 3 } {
            0 => TERMS[pick(next(), TERMS.len())].to_string(),
            1 => format!(
                "{} {} {}",
                gen_expr(next, depth - 1),
                BIN[pick(next(), BIN.len())],
                gen_expr(next, depth - 1)
            ),
            _ => WRAP[pick(next(), WRAP.len())].replace("{}", &gen_expr(next, depth - 1)),
        }
    }
    let mut compiled = 0;
    for i in 0..800 {
        let rule = if i % 4 == 0 {
            let n = (next() % 12 + 1) as usize;
            let parts: Vec<&str> = (0..n)
                .map(|_| ATOMS[(next() % ATOMS.len() as u64) as usize])
                .collect();
            parts.join(if next() % 2 == 0 { " " } else { "" })
        } else {
            gen_expr(&mut next, 3)
        };
        let mut s = base.clone();
        s["x-kubernetes-validations"] =
            json!([{"rule": rule, "message": "m", "messageExpression": "string(self)"}]);
        let mut s = schema(s);
        if next() % 3 == 0 {
            let items = s["properties"]["spec"].clone();
            s["properties"]["spec"] = json!({"type": "array", "items": items,
                "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"]});
        }
        if CelValidator::check(&s, ROOT).is_empty()
            && let Ok(v) = CelValidator::compile(&s, ROOT)
        {
            compiled += 1;
            for o in &objs {
                for old in &objs {
                    let _ = v.validate(o, Some(old));
                }
                let _ = v.validate(o, None);
            }
        }
    }
    assert!(compiled > 100, "{compiled}");
}

#[test]
fn send_sync() {
    fn check<T: Send + Sync>() {}
    check::<CelValidator>();
}

#[test]
fn hostile_inputs_do_not_panic() {
    let rules = [
        "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
        "Foo{a: 1} == 1",
        "self.x.y.z",
        "1/0 == 1",
        "[1][5] == 1",
        "self + 1 == 2",
        "'\u{1F600}' == self.x.",
        "9223372036854775807 + 1 > 0",
        "dyn(self).foo.bar == 1",
        "self.all(x, x)",
        "size(self, 1) == 1",
        "optional.none().value() == 1",
        "self.x.matches('(') ",
    ];
    let long = vec!["1"; 3000].join(" + ") + " > 0";
    for r in rules.iter().map(|s| s.to_string()).chain([long]) {
        let s = schema(
            json!({"type": "object", "x-kubernetes-validations": [{"rule": r}],
            "properties": {"x": {"type": "string"}}}),
        );
        if let Ok(v) = CelValidator::compile(&s, ROOT) {
            let _ = v.validate(&json!({"spec": {"x": "a"}}), None);
            let _ = v.validate(&json!({"spec": 5}), Some(&json!({"spec": []})));
        }
    }
}

#[test]
fn field_path_errors_read_as_kube_writes_them() {
    let s = json!({"type": "object", "properties": {"a": {"type": "object",
        "additionalProperties": {"type": "string"}}}});
    assert_eq!(valid_field_path(".a['x.y']", &s).as_deref(), Ok("a[x.y]"));
    let error = |path: &str| valid_field_path(path, &s).map_err(|e| e.to_string());
    assert_eq!(
        error(".b"),
        Err("does not refer to a valid field".to_string())
    );
    assert_eq!(error(".a["), Err("unexpected end of JSON path".to_string()));
    assert_eq!(
        error(".a[x]"),
        Err("expected single quoted string but got x".to_string())
    );
    assert_eq!(error(".a['x'.b"), Err("expected ] but got .".to_string()));
    assert_eq!(error("a"), Err("expected [ or . but got: a".to_string()));
    assert_eq!(
        error(".a['\\q']"),
        Err("invalid escape char \\q".to_string())
    );
}
