//! Tests of label and field selectors.

use super::*;
use serde_json::json;

/// The field selectors of the built-in kind `group`/`resource`.
fn labels_of(group: &str, resource: &str) -> &'static FieldLabels {
    crate::kinds::all()
        .into_iter()
        .find(|k| k.group == group && k.plural == resource)
        .and_then(|k| k.fields)
        .unwrap_or(&DEFAULT_FIELDS)
}

fn field_value(group: &str, resource: &str, obj: &Value, field: &str) -> Option<Option<String>> {
    super::field_value(labels_of(group, resource), obj, field)
}

fn labels(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn perr(s: &str) -> String {
    match LabelSelector::parse(s) {
        Ok(sel) => panic!("{s:?} parsed as {sel:?}"),
        Err(e) => e.to_string(),
    }
}

fn ok(s: &str) -> LabelSelector {
    match LabelSelector::parse(s) {
        Ok(sel) => sel,
        Err(e) => panic!("{s:?}: {e}"),
    }
}

#[test]
fn equality_based() {
    let l = labels(json!({"app": "web", "tier": "front"}));
    assert!(ok("app=web").matches(Some(&l)));
    assert!(ok("app==web").matches(Some(&l)));
    assert!(ok(" app = web , tier=front ").matches(Some(&l)));
    assert!(!ok("app=db").matches(Some(&l)));
    assert!(ok("app!=db").matches(Some(&l)));
    assert!(ok("missing!=x").matches(Some(&l)));
    assert!(!ok("app!=web").matches(Some(&l)));
    assert!(ok("app").matches(Some(&l)));
    assert!(!ok("!app").matches(Some(&l)));
    assert!(ok("!missing").matches(Some(&l)));
    assert!(ok("").matches(None));
    assert!(ok("").is_everything());
    assert!(!ok("app").matches(None));
    assert!(ok("app=").matches(Some(&labels(json!({"app": ""})))));
    assert!(!ok("app=").matches(None));
}

#[test]
fn set_based() {
    let l = labels(json!({"env": "prod", "n": "10"}));
    assert!(ok("env in (prod,dev)").matches(Some(&l)));
    assert!(ok("env in(prod)").matches(Some(&l)));
    assert!(!ok("env notin (prod, dev)").matches(Some(&l)));
    assert!(ok("other notin (prod)").matches(Some(&l)));
    assert!(!ok("other in (prod)").matches(Some(&l)));
    assert!(ok("env in (in)").matches(Some(&labels(json!({"env": "in"})))));
    assert!(ok("in in (notin)").matches(Some(&labels(json!({"in": "notin"})))));
    assert!(ok("env in (,prod)").matches(Some(&labels(json!({"env": ""})))));
    assert!(ok("env in ()").matches(Some(&labels(json!({"env": ""})))));
    assert!(ok("n>5").matches(Some(&l)));
    assert!(!ok("n<5").matches(Some(&l)));
    assert!(!ok("env>5").matches(Some(&l)));
    assert_eq!(ok("b in (z,a),a").to_string(), "a,b in (a,z)");
    assert_eq!(ok("!x,y!=1").to_string(), "!x,y!=1");
}

#[test]
fn parse_errors() {
    assert_eq!(
        perr("a b"),
        "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'"
    );
    assert_eq!(perr("a=b c"), "found 'c', expected: ',' or 'end of string'");
    assert_eq!(perr("a=b,"), "found '', expected: identifier after ','");
    assert_eq!(
        perr(",a"),
        "found ',', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        perr("a in b"),
        "unable to parse requirement: found 'b' expected: '('"
    );
    assert_eq!(
        perr("a in (b"),
        "unable to parse requirement: found '', expected: ',' or ')'"
    );
    assert_eq!(
        perr("a in (b c)"),
        "unable to parse requirement: found 'c', expected: ',' or ')'"
    );
    assert_eq!(
        perr("a in (=)"),
        "unable to parse requirement: found '=', expected: ',', ')' or identifier"
    );
    assert_eq!(
        perr("a=(b"),
        "unable to parse requirement: found '(', expected: identifier"
    );
    assert_eq!(
        perr("!=a"),
        "found '!=', expected: !, identifier, or 'end of string'"
    );
    assert_eq!(
        perr("!(a"),
        "unable to parse requirement: found '(', expected: identifier"
    );
    assert_eq!(perr("!a=b"), "found '=', expected: ',' or 'end of string'");
    assert_eq!(
        perr("a ( b"),
        "unable to parse requirement: found '(', expected: '=', '!=', '==', 'in', notin'"
    );
    assert_eq!(
        perr("a>b"),
        "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
    );
}

#[test]
fn validation_errors() {
    let qn = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    assert_eq!(
        perr("-a=b"),
        format!("unable to parse requirement: <nil>: Invalid value: \"-a\": name part {qn}")
    );
    assert_eq!(
        perr("a/b/c"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name {qn} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        )
    );
    assert_eq!(
        perr("/a"),
        "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
    );
    assert_eq!(
        perr("Ex.com/a"),
        "unable to parse requirement: <nil>: Invalid value: \"Ex.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    );
    assert_eq!(
        perr("a/"),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part {qn}"
        )
    );
    let long = "k".repeat(64);
    assert_eq!(
        perr(&long),
        format!(
            "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters"
        )
    );
    let lv = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    assert_eq!(
        perr("a=b@"),
        format!("unable to parse requirement: values[0][a]: Invalid value: \"b@\": {lv}")
    );
    assert_eq!(
        perr("a in (x@,-y)"),
        format!(
            "unable to parse requirement: [values[0][a]: Invalid value: \"-y\": {lv}, values[1][a]: Invalid value: \"x@\": {lv}]"
        )
    );
}

#[test]
fn from_value() {
    let sel = LabelSelector::from_label_selector_value(&json!({
        "matchLabels": {"app": "web"},
        "matchExpressions": [
            {"key": "env", "operator": "In", "values": ["prod", "dev"]},
            {"key": "legacy", "operator": "DoesNotExist"}
        ]
    }))
    .unwrap_or_default();
    assert_eq!(sel.to_string(), "app=web,env in (dev,prod),!legacy");
    assert!(sel.matches(Some(&labels(json!({"app": "web", "env": "dev"})))));
    assert!(!sel.matches(Some(&labels(
        json!({"app": "web", "env": "dev", "legacy": "1"})
    ))));
    let none = LabelSelector::from_label_selector_value(&Value::Null).unwrap_or_default();
    assert!(!none.matches(None) && !none.is_everything());
    let all = LabelSelector::from_label_selector_value(&json!({})).unwrap_or_default();
    assert!(all.matches(None) && all.is_everything());
    let e = LabelSelector::from_label_selector_value(
        &json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
    );
    assert_eq!(
        e.map_err(|e| e.to_string()),
        Err("\"Bogus\" is not a valid label selector operator".to_string())
    );
    let e = LabelSelector::from_label_selector_value(
        &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
    );
    assert_eq!(
        e.map_err(|e| e.to_string()),
        Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".to_string())
    );
    let e = LabelSelector::from_label_selector_value(
        &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
    );
    assert_eq!(
        e.map_err(|e| e.to_string()),
        Err("values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist".to_string())
    );
    assert_eq!(format_label_selector(None), "<none>");
    assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
    assert_eq!(
        format_label_selector(Some(&json!({"matchLabels": {"a": "b"}}))),
        "a=b"
    );
}

#[test]
fn format_labels_sorted() {
    assert_eq!(format_labels(None), "<none>");
    assert_eq!(
        format_labels(Some(&labels(json!({"b": "1", "a": "2"})))),
        "a=2,b=1"
    );
}

#[test]
fn lexer_edge_cases_do_not_panic() {
    for s in [
        "",
        "!",
        "!!",
        "=",
        "==",
        "===",
        "!=!",
        "(",
        ")",
        "a in",
        "a in (",
        "a in (,",
        "a in (,,)",
        "a notin",
        "a=\0b",
        "\0",
        "a\0=b",
        "<>",
        "a<",
        "é=ü",
        "a in ((",
        ",,,",
        "a=b,!",
        "x in (a,)",
    ] {
        let _ = LabelSelector::parse(s);
        let _ = FieldSelector::parse(s);
    }
    // a NUL byte ends an identifier and is skipped, like the Go lexer
    assert!(LabelSelector::parse("a\0").is_ok());
    assert!(ok("x in (a,)").matches(Some(&labels(json!({"x": ""})))));
}

#[test]
fn field_selectors() {
    let get = |f: &str| match f {
        "metadata.name" => Some("web-1".to_string()),
        "status.phase" => Some("Running".to_string()),
        _ => None,
    };
    let ok = |s: &str| match FieldSelector::parse(s) {
        Ok(sel) => sel,
        Err(e) => panic!("{s:?}: {e}"),
    };
    assert!(ok("metadata.name=web-1").matches(&get));
    assert!(ok("metadata.name==web-1,status.phase!=Pending").matches(&get));
    assert!(!ok("status.phase=Pending").matches(&get));
    assert!(ok("spec.nodeName=").matches(&get));
    assert!(ok("").is_everything());
    assert!(ok("=").is_everything());
    assert!(ok(",,").is_everything());
    let esc = ok("a=x\\,y\\=z\\\\");
    assert!(esc.matches(&|_| Some("x,y=z\\".to_string())));
    assert_eq!(esc.to_string(), "a=x\\,y\\=z\\\\");
    assert_eq!(esc.fields().collect::<Vec<_>>(), vec!["a"]);
    assert_eq!(ok("b=1,a=2").fields().collect::<Vec<_>>(), vec!["a", "b"]);
    assert_eq!(ok("a=1").requires_exact_match("a"), Some("1"));

    let err = |s: &str| FieldSelector::parse(s).map_err(|e| e.to_string()).err();
    assert_eq!(
        err("foo"),
        Some("invalid selector: 'foo'; can't understand 'foo'".into())
    );
    assert_eq!(
        err("b=1,foo"),
        Some("invalid selector: 'b=1,foo'; can't understand 'foo'".into())
    );
    assert_eq!(
        err("a=b=c"),
        Some("invalid field selector: unescaped character in value: 61".into())
    );
    assert_eq!(
        err("a=\\x"),
        Some("invalid field selector: invalid escape sequence: \\x".into())
    );
    assert_eq!(
        err("a=x\\"),
        Some("invalid field selector: invalid escape sequence: \\".into())
    );
}

#[test]
fn field_labels_per_kind() {
    let conv = |g: &str, r: &str, f: &str| {
        convert_field_label(labels_of(g, r), f).map_err(|e| e.to_string())
    };
    assert_eq!(conv("", "pods", "spec.host"), Ok("spec.nodeName".into()));
    assert_eq!(
        conv("", "pods", "foo"),
        Err("field label not supported: foo".into())
    );
    assert_eq!(
        conv("", "nodes", "metadata.namespace"),
        Err("field label not supported: metadata.namespace".into())
    );
    assert_eq!(
        conv("batch", "jobs", "foo"),
        Err("field label \"foo\" not supported for batchv1.Job".into())
    );
    assert_eq!(
        conv("", "configmaps", "data.x"),
        Err("\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"".into())
    );
    assert_eq!(
        conv("events.k8s.io", "events", "involvedObject.kind"),
        Err("field label not supported: involvedObject.kind".into())
    );
    let sel = FieldSelector::parse("spec.host=n1")
        .unwrap_or_default()
        .convert_for(labels_of("", "pods"));
    assert_eq!(
        sel.map(|s| s.to_string()),
        Ok("spec.nodeName=n1".to_string())
    );
}

#[test]
fn field_values() {
    let pod = json!({
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {"nodeName": "n1", "restartPolicy": "Always"},
        "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}
    });
    let fv = |f: &str| field_value("", "pods", &pod, f);
    assert_eq!(fv("metadata.name"), Some(Some("p".into())));
    assert_eq!(fv("spec.host"), Some(Some("n1".into())));
    assert_eq!(fv("spec.hostNetwork"), Some(Some("false".into())));
    assert_eq!(fv("status.podIP"), Some(Some("10.0.0.1".into())));
    assert_eq!(fv("spec.schedulerName"), Some(Some(String::new())));
    assert_eq!(fv("status.podIPs"), Some(None));
    assert_eq!(fv("spec.containers"), None);

    let ev = json!({
        "metadata": {"name": "e", "namespace": "ns"},
        "regarding": {"kind": "Pod", "name": "p"},
        "reportingController": "kubelet",
        "reason": "Started", "type": "Normal"
    });
    assert_eq!(
        field_value("events.k8s.io", "events", &ev, "regarding.kind"),
        Some(Some("Pod".into()))
    );
    assert_eq!(
        field_value("events.k8s.io", "events", &ev, "reportingController"),
        Some(Some("kubelet".into()))
    );
    assert_eq!(
        field_value("", "events", &ev, "source"),
        Some(Some("kubelet".into()))
    );
    assert_eq!(
        field_value("", "events", &ev, "involvedObject.name"),
        Some(Some("p".into()))
    );
    let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 3}});
    assert_eq!(
        field_value("batch", "jobs", &job, "status.successful"),
        Some(Some("3".into()))
    );
    let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
    assert_eq!(
        field_value("", "nodes", &node, "spec.unschedulable"),
        Some(Some("true".into()))
    );
}
