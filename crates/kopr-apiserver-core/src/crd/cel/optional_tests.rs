//! Tests of CEL optional types in rules: `optionalOldSelf`, the optional
//! functions and macros, optional field selection and entries, and the
//! compile errors of their misuse.

use super::*;
use serde_json::json;

const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";
const RULES: &str =
    "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";

/// A `spec` with the given rules and fields `x` (bool), `name` (string),
/// `m` (map of integers), `l` (list of integers) and `sub.a` (string).
fn spec_schema(rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": rules,
        "properties": {
            "x": {"type": "boolean"},
            "name": {"type": "string"},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "l": {"type": "array", "items": {"type": "integer"}},
            "sub": {"type": "object", "properties": {"a": {"type": "string"}}}
        }
    }}})
}

fn compiled(s: &Value) -> CelValidator {
    let errs = CelValidator::check(s, ROOT);
    assert!(errs.is_empty(), "{:?}", msgs(&errs));
    match CelValidator::compile(s, ROOT) {
        Ok(v) => v,
        Err(e) => panic!("compile failed: {:?}", msgs(&e)),
    }
}

fn msgs(errs: &[FieldError]) -> Vec<String> {
    errs.iter().map(ToString::to_string).collect()
}

/// Whether a single rule holds for `obj` (and `old`).
fn holds(rule: &str, optional_old_self: bool, obj: Value, old: Option<Value>) -> bool {
    let mut r = json!({"rule": rule});
    if optional_old_self {
        r["optionalOldSelf"] = json!(true);
    }
    let v = compiled(&spec_schema(json!([r])));
    let errs = v.validate(
        &json!({ "spec": obj }),
        old.map(|o| json!({ "spec": o })).as_ref(),
    );
    match errs.as_slice() {
        [] => true,
        [e] if e.detail.starts_with("failed rule") => false,
        other => panic!("{rule}: {:?}", msgs(other)),
    }
}

fn check_errs(rule: Value) -> Vec<String> {
    msgs(&CelValidator::check(&spec_schema(json!([rule])), ROOT))
}

#[test]
fn optional_old_self_runs_on_create_with_none() {
    // The rule of the issue: holds on create (oldSelf is optional.none()),
    // on update the old x decides.
    let rule = "oldSelf.optMap(o, o.x).orValue(true)";
    assert!(holds(rule, true, json!({"x": false}), None));
    assert!(holds(
        rule,
        true,
        json!({"x": false}),
        Some(json!({"x": true}))
    ));
    assert!(!holds(
        rule,
        true,
        json!({"x": true}),
        Some(json!({"x": false}))
    ));
    let rule = json!([{"rule": "oldSelf.optMap(o, !o.x || self.x).orValue(true)",
        "optionalOldSelf": true, "message": "x may not be turned off"}]);
    let v = compiled(&spec_schema(rule));
    let on = json!({"spec": {"x": true}});
    let off = json!({"spec": {"x": false}});
    assert!(v.validate(&off, None).is_empty());
    assert!(v.validate(&on, None).is_empty());
    assert!(v.validate(&off, Some(&off)).is_empty());
    assert!(v.validate(&on, Some(&off)).is_empty());
    assert!(v.validate(&on, Some(&on)).is_empty());
    assert_eq!(
        msgs(&v.validate(&off, Some(&on))),
        ["spec: Invalid value: \"object\": x may not be turned off"]
    );
    assert!(
        !holds("oldSelf.hasValue()", true, json!({}), None),
        "evaluated on create"
    );
    assert!(holds(
        "oldSelf.hasValue()",
        true,
        json!({}),
        Some(json!({}))
    ));
    assert!(holds("!oldSelf.hasValue()", true, json!({}), None));
}

#[test]
fn optional_old_self_none_without_correlated_old_value() {
    // A rule on spec.sub: the old object has no spec.sub, so oldSelf is none
    // on update too; without optionalOldSelf the rule does not run at all.
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "sub": {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [
            {"rule": "oldSelf.hasValue()", "optionalOldSelf": true, "message": "sub may not be added"},
            {"rule": "self == oldSelf", "message": "sub is immutable"}
        ]}
    }}}});
    let v = compiled(&s);
    let new = json!({"spec": {"sub": {"a": "x"}}});
    assert_eq!(
        msgs(&v.validate(&new, Some(&json!({"spec": {}})))),
        ["spec.sub: Invalid value: \"object\": sub may not be added"]
    );
    assert_eq!(
        msgs(&v.validate(&new, Some(&json!({"spec": {"sub": {"a": "y"}}})))),
        ["spec.sub: Invalid value: \"object\": sub is immutable"]
    );
    assert!(
        v.validate(&new, Some(&json!({"spec": {"sub": {"a": "x"}}})))
            .is_empty()
    );
}

#[test]
fn immutable_once_set_transition() {
    let rule =
        "!oldSelf.hasValue() || !has(oldSelf.value().name) || self.name == oldSelf.value().name";
    let set = |n: &str| json!({"name": n});
    assert!(holds(rule, true, set("a"), None));
    assert!(holds(rule, true, set("a"), Some(json!({}))));
    assert!(holds(rule, true, set("a"), Some(set("a"))));
    assert!(!holds(rule, true, set("b"), Some(set("a"))));
    // The same with field selection through the optional.
    let rule = "oldSelf.?name.orValue(self.name) == self.name";
    assert!(holds(rule, true, set("a"), None));
    assert!(!holds(rule, true, set("b"), Some(set("a"))));
    let rule = "oldSelf.name.orValue(self.name) == self.name";
    assert!(holds(rule, true, set("a"), Some(json!({}))));
    assert!(!holds(rule, true, set("b"), Some(set("a"))));
    let rule = "!has(oldSelf.name) || oldSelf.name.value() == self.name";
    assert!(holds(rule, true, set("a"), None));
    assert!(holds(rule, true, set("a"), Some(json!({}))));
    assert!(!holds(rule, true, set("b"), Some(set("a"))));
}

#[test]
fn optional_functions() {
    let obj = json!({"x": true, "name": "n", "m": {"k": 1}, "l": [5], "sub": {"a": "z"}});
    for rule in [
        "optional.of(1).hasValue()",
        "!optional.none().hasValue()",
        "optional.of(1).value() == 1",
        "optional.none().orValue(2) == 2",
        "optional.of(1).or(optional.of(2)).value() == 1",
        "optional.none().or(optional.of(2)).value() == 2",
        "!optional.ofNonZeroValue('').hasValue()",
        "optional.ofNonZeroValue(self.name).hasValue()",
        "optional.of(self.name).optMap(n, n + '!').value() == 'n!'",
        "!optional.none().optMap(n, n + '!').hasValue()",
        "optional.of(self.sub).optFlatMap(s, s.?a).value() == 'z'",
        "!optional.of(self.m).optFlatMap(s, s.?b).hasValue()",
        "self.?name.hasValue() && self.?name.value() == 'n'",
        "!self.m.?missing.hasValue()",
        "self.?sub.?a.orValue('') == 'z'",
        "!self.?sub.?a.hasValue() || self.?sub.?a.value() == 'z'",
        "self.m[?'k'].orValue(0) == 1",
        "self.m[?'nope'].orValue(7) == 7",
        "self.l[?0].value() == 5",
        "!self.l[?3].hasValue()",
        "[?optional.none(), ?self.?name, 1 == 1].size() == 2",
        "{?'a': optional.none(), ?'b': self.?name}.size() == 1",
        "{?'b': self.?name}['b'] == 'n'",
        "optional.none() == optional.none()",
        "optional.of(1) == optional.of(1)",
        "optional.of(1) != optional.of(2)",
        "optional.of(1) != optional.none()",
        "self.?name == optional.of('n')",
        "self.m.?missing == optional.none()",
        "type(optional.none()) == type(optional.of(1))",
        "optional.of({'k': 2}).k.value() == 2",
        "optional.of({'k': 2})['k'].value() == 2",
        "!optional.of({'k': 2}).j.hasValue()",
        "!optional.of(self.m).?j.hasValue()",
        "cel.bind(o, self.?sub, o.optMap(s, s.a).orValue('') == 'z')",
        "self.?sub.a.value() == 'z'",
        "has(optional.of(self.sub).a)",
        "optional.of(self).orValue(self).x == self.x",
        "self.?l.orValue([]).size() == 1",
        "self.?m.orValue({}).size() == 1",
        "self.?name.orValue('a') + 'b' == 'nb'",
        "self.?name.optMap(n, n.size()).orValue(0) == 1",
        "[?self.l[?9], ?self.l[?0]] == [5]",
    ] {
        assert!(holds(rule, false, obj.clone(), None), "{rule}");
    }
    assert!(holds("self.?x.orValue(true)", false, json!({}), None));
    let rule = "has(oldSelf.sub) == has(self.sub) && oldSelf.?sub.?a.orValue('') == self.?sub.?a.orValue('')";
    assert!(holds(rule, true, json!({}), None));
    assert!(holds(
        rule,
        true,
        json!({"sub": {"a": "q"}}),
        Some(json!({"sub": {"a": "q"}}))
    ));
    assert!(!holds(
        rule,
        true,
        json!({"sub": {"a": "q"}}),
        Some(json!({"sub": {}}))
    ));
    assert!(!holds(rule, true, json!({"sub": {}}), Some(json!({}))));
    assert!(!holds(
        "self.?x.orValue(true)",
        false,
        json!({"x": false}),
        None
    ));
}

#[test]
fn optional_none_value_is_an_evaluation_error() {
    let v = compiled(&spec_schema(json!([{"rule": "self.?name.value() == 'a'"}])));
    assert_eq!(
        msgs(&v.validate(&json!({"spec": {}}), None)),
        [
            "spec: Invalid value: \"object\": optional.none() dereference evaluating rule: self.?name.value() == 'a'"
        ]
    );
}

#[test]
fn message_expression_sees_optional_old_self() {
    let v = compiled(&spec_schema(json!([{
        "rule": "oldSelf.optMap(o, o.name == self.name).orValue(true)",
        "optionalOldSelf": true,
        "messageExpression": "'name was ' + oldSelf.?name.orValue('unset')"
    }])));
    assert_eq!(
        msgs(&v.validate(
            &json!({"spec": {"name": "b"}}),
            Some(&json!({"spec": {"name": "a"}}))
        )),
        ["spec: Invalid value: \"object\": name was a"]
    );
}

#[test]
fn optional_compile_errors() {
    let p = RULES;
    let e = check_errs(json!({"rule": "self.?nope.hasValue()"}));
    assert_eq!(
        e,
        [format!(
            "{p}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.?nope.hasValue()\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.?nope.hasValue()\n | ....^"
        )]
    );
    let e = check_errs(json!({"rule": "self.name.hasValue()"}));
    assert!(
        e[0].ends_with(
            "compilation failed: ERROR: <input>:1:19: found no matching overload for 'hasValue' applied to 'string.()'\n | self.name.hasValue()\n | ..................^"
        ),
        "{e:?}"
    );
    let e = check_errs(json!({"rule": "self.?name.orValue(1) == 1"}));
    assert!(
        e[0].contains(
            "ERROR: <input>:1:19: found no matching overload for 'orValue' applied to 'optional_type(string).(int)'"
        ),
        "{e:?}"
    );
    let e = check_errs(json!({"rule": "[?1].size() == 1"}));
    assert!(
        e[0].ends_with(
            "compilation failed: ERROR: <input>:1:3: expected type 'optional_type(int)' but found 'int'\n | [?1].size() == 1\n | ..^"
        ),
        "{e:?}"
    );
    let e = check_errs(json!({"rule": "self.?sub.optMap(1, true).orValue(true)"}));
    assert!(
        e[0].ends_with(
            "compilation failed: ERROR: <input>:1:18: optMap() variable name must be a simple identifier\n | self.?sub.optMap(1, true).orValue(true)\n | .................^"
        ),
        "{e:?}"
    );
    let e = check_errs(json!({"rule": "oldSelf.sub.hasValue()"}));
    assert!(
        e[0].contains("found no matching overload for 'hasValue' applied to 'selfType0.sub.()'"),
        "{e:?}"
    );
}

#[test]
fn optional_old_self_requires_old_self() {
    // A rule that does not compile is not known to use oldSelf: kube reports
    // both errors.
    let e = check_errs(json!({"rule": "oldSelf.optMap(o, o.x).orValue(", "optionalOldSelf": true}));
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e[0].starts_with(&format!(
            "{RULES}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"oldSelf.optMap(o, o.x).orValue(\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(0xc000000000)}}: compilation failed: ERROR: <input>:1:32: Syntax error:"
        )),
        "{e:?}"
    );
    assert_eq!(
        e[1],
        format!(
            "{RULES}[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
        )
    );
    // optionalOldSelf: false is set too.
    let e = check_errs(json!({"rule": "self.x", "optionalOldSelf": false}));
    assert_eq!(
        e,
        [format!(
            "{RULES}[0].optionalOldSelf: Invalid value: false: may not be set if oldSelf is not used in rule"
        )]
    );
    // Without optionalOldSelf, oldSelf is not optional.
    let e = check_errs(json!({"rule": "oldSelf.hasValue()"}));
    assert!(
        e[0].contains("found no matching overload for 'hasValue' applied to 'selfType0.()'"),
        "{e:?}"
    );
}

#[test]
fn rules_that_do_not_compile_are_served_with_errors() {
    let s = spec_schema(json!([
        {"rule": "self.x == ", "message": "m"},
        {"rule": "self.x", "messageExpression": "1 + ", "message": "x must be set"}
    ]));
    let errs = msgs(&CelValidator::check(&s, ROOT));
    assert_eq!(errs.len(), 2, "{errs:?}");
    assert!(
        errs[0].contains(": compilation failed: ERROR: <input>:1:11: Syntax error:"),
        "{errs:?}"
    );
    assert!(
        errs[1].starts_with(&format!("{RULES}[1].messageExpression: Invalid value: apiextensions.ValidationRule{{Rule:\"self.x\", Message:\"x must be set\", MessageExpression:\"1 + \"")),
        "{errs:?}"
    );
    assert!(
        errs[1]
            .contains(": messageExpression compilation failed: ERROR: <input>:1:5: Syntax error:"),
        "{errs:?}"
    );
    let v = match CelValidator::compile(&s, ROOT) {
        Ok(v) => v,
        Err(e) => panic!("{:?}", msgs(&e)),
    };
    let e = msgs(&v.validate(&json!({"spec": {"x": false}}), None));
    assert_eq!(e.len(), 2, "{e:?}");
    assert!(
        e[0].starts_with(
            "spec: Invalid value: \"object\": rule compile error: compilation failed: ERROR: <input>:1:11: Syntax error:"
        ),
        "{e:?}"
    );
    // The rule whose messageExpression does not compile still runs, with
    // its message.
    assert_eq!(e[1], "spec: Invalid value: \"object\": x must be set");
}
