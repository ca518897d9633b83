//! Unit tests with kube's exact messages.

use super::*;
use serde_json::json;

fn greeting() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "greetings.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Greeting", "plural": "greetings"},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"message": {"type": "string"}}}
                    }
                }}
            }]
        }
    })
}

fn book_extra_props() -> Value {
    json!({
                                "chapters": {
                                    "type": "array",
                                    "x-kubernetes-list-type": "map",
                                    "x-kubernetes-list-map-keys": ["name"],
                                    "items": {"type": "object", "required": ["name"],
                                              "properties": {"name": {"type": "string"},
                                                             "pages": {"type": "integer"}}}
                                },
                                "extra": {"type": "object", "additionalProperties": {"type": "string"}},
                                "raw": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
    })
}

fn book() -> Value {
    let mut b = book_base();
    set(&mut b, "/spec/versions/0/schema", book_schema());
    if let (Some(Value::Object(p)), Value::Object(extra)) = (
        b.pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties"),
        book_extra_props(),
    ) {
        p.extend(extra);
    }
    b
}

fn book_schema() -> Value {
    json!({"openAPIV3Schema": {
        "type": "object",
        "description": "A book.",
        "required": ["spec"],
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {
                "type": "object",
                "required": ["title"],
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "author": {"type": "string"},
                    "pages": {"type": "integer", "minimum": 1, "default": 100},
                    "copies": {"type": "integer", "format": "int32"},
                    "isbn": {"x-kubernetes-int-or-string": true,
                             "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "tags": {"type": "array", "items": {"type": "string"},
                             "x-kubernetes-list-type": "set"},
                    "rules": {"type": "string",
                              "x-kubernetes-validations": [{"rule": "self.size() > 0"}]}
                }
            },
            "status": {"type": "object", "properties": {"copies": {"type": "integer"}}}
        }
    }})
}

fn book_base() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "books.library.example.com"},
        "spec": {
            "group": "library.example.com",
            "names": {"kind": "Book", "plural": "books", "singular": "book",
                      "shortNames": ["bk"], "categories": ["all"]},
            "scope": "Namespaced",
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {
                    "status": {},
                    "scale": {"specReplicasPath": ".spec.copies", "statusReplicasPath": ".status.copies"}
                },
                "additionalPrinterColumns": [
                    {"name": "Title", "type": "string", "jsonPath": ".spec.title"},
                    {"name": "Pages", "type": "integer", "format": "int32", "jsonPath": ".spec.pages"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "selectableFields": [{"jsonPath": ".spec.author"}],
                "schema": null
            }]
        }
    })
}

fn msg(crd: &Value, old: Option<&Value>) -> String {
    let mut c = crd.clone();
    apply_defaults(&mut c);
    let errs = validate(&c, old);
    invalid_crd_message(&c, &errs)
}

fn errs_of(crd: &Value) -> Vec<String> {
    let mut c = crd.clone();
    apply_defaults(&mut c);
    validate(&c, None).iter().map(ToString::to_string).collect()
}

/// Sets (or inserts into the parent object) the value at a JSON pointer.
fn set(v: &mut Value, ptr: &str, x: Value) {
    let Some((parent, last)) = ptr.rsplit_once('/') else {
        return;
    };
    match v.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(last.to_string(), x);
        }
        Some(Value::Array(a)) => {
            if let Some(t) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *t = x;
            }
        }
        _ => {}
    }
}

#[test]
fn greeting_is_valid() {
    assert_eq!(errs_of(&greeting()), Vec::<String>::new());
}

#[test]
fn book_is_valid() {
    assert_eq!(errs_of(&book()), Vec::<String>::new());
}

#[test]
fn two_storage_versions() {
    let mut c = greeting();
    let v = c.pointer("/spec/versions/0").cloned().unwrap_or_default();
    let mut v2 = v.clone();
    set(&mut v2, "/name", json!("v2"));
    set(&mut c, "/spec/versions", json!([v, v2]));
    let ver = |n: &str| {
        format!(
            "apiextensions.CustomResourceDefinitionVersion{{Name:\"{n}\", Served:true, Storage:true, Deprecated:false, DeprecationWarning:(*string)(nil), Schema:(*apiextensions.CustomResourceValidation)(nil), Subresources:(*apiextensions.CustomResourceSubresources)(nil), AdditionalPrinterColumns:[]apiextensions.CustomResourceColumnDefinition(nil), SelectableFields:[]apiextensions.SelectableField(nil)}}"
        )
    };
    assert_eq!(
        msg(&c, None),
        format!(
            "CustomResourceDefinition.apiextensions.k8s.io \"greetings.example.com\" is invalid: [spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{{{}, {}}}: must have exactly one version marked as storage version, status.storedVersions: Invalid value: []string{{\"v1\"}}: must have the storage version v2]",
            ver("v1"),
            ver("v2")
        )
    );
}

#[test]
fn wrong_metadata_name() {
    let mut c = greeting();
    set(&mut c, "/metadata/name", json!("greeting.example.com"));
    assert_eq!(
        msg(&c, None),
        "CustomResourceDefinition.apiextensions.k8s.io \"greeting.example.com\" is invalid: metadata.name: Invalid value: \"greeting.example.com\": must be spec.names.plural+\".\"+spec.group"
    );
}

#[test]
fn missing_type() {
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/message",
        json!({"description": "what to say"}),
    );
    assert_eq!(
        msg(&c, None),
        "CustomResourceDefinition.apiextensions.k8s.io \"greetings.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].properties[message].type: Required value: must not be empty for specified object fields"
    );
}

#[test]
fn missing_type_per_version_path() {
    let mut c = greeting();
    let v = c.pointer("/spec/versions/0").cloned().unwrap_or_default();
    let mut v2 = v.clone();
    set(&mut v2, "/name", json!("v2"));
    set(&mut v2, "/storage", json!(false));
    set(
        &mut v2,
        "/schema/openAPIV3Schema/properties/spec/properties/message",
        json!({}),
    );
    set(&mut c, "/spec/versions", json!([v, v2]));
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[message].type: Required value: must not be empty for specified object fields"
        ]
    );
}

#[test]
fn bad_scope() {
    let mut c = greeting();
    set(&mut c, "/spec/scope", json!("Global"));
    assert_eq!(
        msg(&c, None),
        "CustomResourceDefinition.apiextensions.k8s.io \"greetings.example.com\" is invalid: spec.scope: Unsupported value: \"Global\": supported values: \"Cluster\", \"Namespaced\""
    );
}

#[test]
fn group_and_names() {
    let mut c = greeting();
    set(&mut c, "/metadata/name", json!("greetings.example"));
    set(&mut c, "/spec/group", json!("example"));
    set(&mut c, "/spec/names/shortNames", json!(["G"]));
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.group: Invalid value: \"example\": should be a domain with at least one dot",
            "spec.names.shortNames[0]: Invalid value: \"G\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
    let mut c = greeting();
    set(&mut c, "/spec/names/listKind", json!("Greeting"));
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.names.listKind: Invalid value: \"Greeting\": kind and listKind may not be the same"
        ]
    );
}

#[test]
fn schema_required() {
    let mut c = greeting();
    if let Some(v) = c
        .pointer_mut("/spec/versions/0")
        .and_then(Value::as_object_mut)
    {
        v.remove("schema");
    }
    assert_eq!(
        errs_of(&c),
        vec!["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]
    );
}

#[test]
fn structural_rules() {
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties",
        json!({
            "metadata": {"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object"}}},
            "spec": {"type": "object", "properties": {"a": {"type": "string"}},
                     "additionalProperties": {"type": "string"}},
            "list": {"type": "array", "uniqueItems": true, "items": {"type": "string"}},
            "ref": {"$ref": "#/definitions/x"}
        }),
    );
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.validation.openAPIV3Schema.properties[list].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            "spec.validation.openAPIV3Schema.properties[ref].$ref: Forbidden: $ref is not supported",
            "spec.validation.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        ]
    );
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/metadata",
        json!({"type": "object", "properties": {"name": {"type": "string"}, "labels": {"type": "object"}}}),
    );
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.validation.openAPIV3Schema.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"
        ]
    );
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/message",
        json!({"anyOf": [{"type": "string"}, {"type": "integer"}]}),
    );
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[message].anyOf[0].type: Forbidden: must be empty to be structural",
            "spec.validation.openAPIV3Schema.properties[spec].properties[message].anyOf[1].type: Forbidden: must be empty to be structural",
            "spec.validation.openAPIV3Schema.properties[spec].properties[message].type: Required value: must not be empty for specified object fields",
        ]
    );
}

#[test]
fn list_types_and_defaults() {
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties",
        json!({
            "ports": {"type": "array", "x-kubernetes-list-type": "map",
                      "x-kubernetes-list-map-keys": ["port", "proto"],
                      "items": {"type": "object", "required": ["port"],
                                "properties": {"port": {"type": "integer"}, "proto": {"type": "string"}}}},
            "keys": {"type": "string", "x-kubernetes-list-map-keys": ["a"]},
            "obj": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": "y"}}
        }),
    );
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[obj].default: Invalid value: map[string]interface {}{\"a\":\"x\", \"b\":\"y\"}: must not have unknown fields",
            "spec.validation.openAPIV3Schema.properties[spec].properties[keys].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty",
            "spec.validation.openAPIV3Schema.properties[spec].properties[ports].items.properties[proto].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
        ]
    );
}

#[test]
fn subresources_columns_selectable_conversion() {
    let mut c = book();
    set(
        &mut c,
        "/spec/versions/0/subresources/scale/specReplicasPath",
        json!(".status.copies"),
    );
    set(
        &mut c,
        "/spec/versions/0/additionalPrinterColumns/0/type",
        json!("text"),
    );
    set(
        &mut c,
        "/spec/versions/0/additionalPrinterColumns/1/jsonPath",
        json!("spec.pages"),
    );
    set(
        &mut c,
        "/spec/versions/0/selectableFields",
        json!([{"jsonPath": ".spec.tags"}, {"jsonPath": ".spec.nope"}, {"jsonPath": ".spec.author"}, {"jsonPath": ".spec.author"}]),
    );
    set(
        &mut c,
        "/spec/conversion",
        json!({"strategy": "Webhook", "webhook": {"clientConfig": {"url": "http://conv.example.com/x?y=1"}}}),
    );
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.subresources.scale.specReplicasPath: Invalid value: \".status.copies\": should be a json path under .spec",
            "spec.additionalPrinterColumns[0].type: Invalid value: \"text\": must be one of boolean,date,integer,number,string",
            "spec.additionalPrinterColumns[1].JSONPath: Invalid value: \"spec.pages\": must be a simple json path starting with .",
            "spec.selectableFields[0].jsonPath: Invalid value: \".spec.tags\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            "spec.selectableFields[1].jsonPath: Invalid value: \".spec.nope\": is an invalid path: does not refer to a valid field",
            "spec.selectableFields[3].jsonPath: Duplicate value: \".spec.author\"",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]",
            "spec.conversion.webhookClientConfig.url: Invalid value: \"y=1\": query parameters are not permitted in the URL",
            "spec.conversion.conversionReviewVersions: Required value",
        ]
    );
}

#[test]
fn status_subresource_root_type() {
    let mut c = book();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/type",
        json!("array"),
    );
    let e = errs_of(&c);
    assert_eq!(
        e.first().map(String::as_str),
        Some(
            "spec.validation.openAPIV3Schema.type: Invalid value: \"array\": only \"object\" is allowed as the type at the root of the schema if the status subresource is enabled"
        )
    );
}

#[test]
fn update_rules() {
    let mut old = greeting();
    apply_defaults(&mut old);
    set(&mut old, "/metadata/resourceVersion", json!("5"));
    let st = accepted_status(&old, &[], "2024-01-01T00:00:00Z");
    set(&mut old, "/status", st);
    let mut old2 = old.clone();
    set(
        &mut old2,
        "/status/storedVersions",
        json!(["v1beta1", "v1"]),
    );

    let mut new = old.clone();
    set(&mut new, "/spec/scope", json!("Cluster"));
    set(&mut new, "/spec/group", json!("example.org"));
    assert_eq!(
        validate(&new, Some(&old))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec![
            "spec.scope: Invalid value: \"Cluster\": field is immutable",
            "spec.group: Invalid value: \"example.org\": field is immutable",
        ]
    );
    let new = old2.clone();
    assert_eq!(
        invalid_crd_message(&new, &validate(&new, Some(&old2))),
        "CustomResourceDefinition.apiextensions.k8s.io \"greetings.example.com\" is invalid: status.storedVersions[0]: Invalid value: \"v1beta1\": missing from spec.versions; v1beta1 was previously a storage version, and must remain in spec.versions until a storage migration ensures no data remains persisted in v1beta1 and removes v1beta1 from status.storedVersions"
    );
    assert!(validate(&old, Some(&old)).is_empty());
}

#[test]
fn defaults() {
    let mut c = greeting();
    apply_defaults(&mut c);
    assert_eq!(c.pointer("/spec/names/singular"), Some(&json!("greeting")));
    assert_eq!(
        c.pointer("/spec/names/listKind"),
        Some(&json!("GreetingList"))
    );
    assert_eq!(
        c.pointer("/spec/conversion"),
        Some(&json!({"strategy": "None"}))
    );
    assert_eq!(c.pointer("/status/storedVersions"), Some(&json!(["v1"])));
    let mut w = json!({"spec": {"conversion": {"strategy": "Webhook",
        "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}}}});
    apply_defaults(&mut w);
    assert_eq!(
        w.pointer("/spec/conversion/webhook/clientConfig/service/port"),
        Some(&json!(443))
    );
}

#[test]
fn status_after_accept() {
    let mut c = greeting();
    apply_defaults(&mut c);
    let now = "2024-05-01T10:00:00Z";
    let st = accepted_status(&c, &[], now);
    assert_eq!(
        st,
        json!({
            "acceptedNames": {"kind": "Greeting", "listKind": "GreetingList", "plural": "greetings", "singular": "greeting"},
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "lastTransitionTime": now,
                 "reason": "NoConflicts", "message": "no conflicts found"},
                {"type": "Established", "status": "True", "lastTransitionTime": now,
                 "reason": "InitialNamesAccepted", "message": "the initial names have been accepted"}
            ],
            "storedVersions": ["v1"]
        })
    );
    // A second CRD in the same group claiming the same kind.
    let mut other = greeting();
    set(&mut other, "/metadata/name", json!("salutes.example.com"));
    set(&mut other, "/spec/names/plural", json!("salutes"));
    apply_defaults(&mut other);
    let mut accepted = c.clone();
    set(&mut accepted, "/status", st);
    let st2 = accepted_status(&other, &[&accepted], now);
    assert_eq!(
        st2.pointer("/conditions/0"),
        Some(
            &json!({"type": "NamesAccepted", "status": "False", "lastTransitionTime": now,
                     "reason": "ListKindConflict", "message": "\"GreetingList\" is already in use"})
        )
    );
    assert_eq!(
        st2.pointer("/conditions/1"),
        Some(
            &json!({"type": "Established", "status": "False", "lastTransitionTime": now,
                     "reason": "NotAccepted", "message": "not all names are accepted"})
        )
    );
    assert_eq!(
        st2.pointer("/acceptedNames"),
        Some(&json!({"kind": "", "plural": "salutes"}))
    );
}

#[test]
fn protected_group_approval() {
    let mut c = greeting();
    set(&mut c, "/metadata/name", json!("greetings.x.k8s.io"));
    set(&mut c, "/spec/group", json!("x.k8s.io"));
    assert_eq!(
        errs_of(&c),
        vec![
            "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation \"api-approved.kubernetes.io\", see https://github.com/kubernetes/enhancements/pull/1111"
        ]
    );
}

#[test]
fn no_panic_on_garbage() {
    let samples = [
        json!(null),
        json!([1, 2]),
        json!({"spec": 3}),
        json!({"spec": {"versions": [1, {"name": 2}], "names": []}}),
        json!({"spec": {"versions": [{"schema": {"openAPIV3Schema": {"items": [{"items": true}], "properties": {"a": 1}}}}]}}),
        json!({"spec": {"versions": [{"name": "v1", "storage": true, "schema": {"openAPIV3Schema": {
            "type": "object", "x-kubernetes-preserve-unknown-fields": false, "allOf": [{"not": {"items": []}}],
            "properties": {"a": {"type": "array", "x-kubernetes-list-type": "map", "items": []}},
            "additionalProperties": false, "dependencies": {"a": ["b"]}}}}], "selectableFields": [{"jsonPath": "['x"}]}}),
    ];
    for s in samples {
        let mut c = s.clone();
        apply_defaults(&mut c);
        let _ = validate(&c, None);
        let _ = validate(&c, Some(&s));
        let _ = accepted_status(&c, &[&s], "now");
        let _ = stored_versions(&c, Some(&s));
    }
}

#[test]
fn embedded_resource_and_hooks() {
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/template",
        json!({"type": "object", "x-kubernetes-embedded-resource": true}),
    );
    assert_eq!(
        errs_of(&c),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].properties[template].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"
        ]
    );
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations",
        json!([{"rule": "self.message.size() > 0"}]),
    );
    apply_defaults(&mut c);
    let cel = |path: &str, _: &Value| {
        vec![FieldError::invalid(
            format!("{path}.x-kubernetes-validations[0].rule"),
            "x",
            "compile error",
        )]
    };
    let hooks = Hooks {
        cel: Some(&cel),
        default_value: None,
    };
    assert_eq!(
        validate_with(&c, None, hooks)
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        vec![
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: \"x\": compile error"
        ]
    );
}

fn with_rules(rules: Value) -> Value {
    let mut c = greeting();
    set(
        &mut c,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations",
        rules,
    );
    c
}

#[test]
fn cel_compile_errors_are_invalid() {
    let c = with_rules(json!([{"rule": "self.nope == 'x'"}]));
    assert_eq!(
        msg(&c, None),
        "CustomResourceDefinition.apiextensions.k8s.io \"greetings.example.com\" is invalid: spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.nope == 'x'\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'\n | self.nope == 'x'\n | ....^"
    );
    let c = with_rules(json!([
        {"rule": "self.message.size() >", "message": "m"},
        {"rule": "self.message != ''", "messageExpression": "1"},
        {"rule": "self.message == 'a'", "optionalOldSelf": true}
    ]));
    let p = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations";
    assert_eq!(
        errs_of(&c),
        [
            format!(
                "{p}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.message.size() >\", Message:\"m\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:22: Syntax error: mismatched input '<EOF>' expecting {{'[', '{{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}}\n | self.message.size() >\n | .....................^"
            ),
            format!(
                "{p}[1].messageExpression: Invalid value: apiextensions.ValidationRule{{Rule:\"self.message != ''\", Message:\"\", MessageExpression:\"1\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: messageExpression must evaluate to a string"
            ),
            format!(
                "{p}[2].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
            ),
        ]
    );
}

#[test]
fn cel_errors_per_version_and_on_update() {
    let mut c = greeting();
    let v = c.pointer("/spec/versions/0").cloned().unwrap_or_default();
    let mut v2 = v.clone();
    set(&mut v2, "/name", json!("v2"));
    set(&mut v2, "/storage", json!(false));
    set(
        &mut v2,
        "/schema/openAPIV3Schema/properties/spec/properties/items",
        json!({"type": "array", "items": {"type": "string",
            "x-kubernetes-validations": [{"rule": "self != oldSelf"}]}}),
    );
    set(&mut c, "/spec/versions", json!([v, v2]));
    assert_eq!(
        errs_of(&c),
        [
            "spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Invalid value: \"self != oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.versions[1].schema.openAPIV3Schema.properties[spec].properties[items]"
        ]
    );
    // Update: a valid CRD made invalid, and one already invalid, are refused.
    let mut old = with_rules(json!([{"rule": "self.message != ''"}]));
    apply_defaults(&mut old);
    set(&mut old, "/metadata/resourceVersion", json!("5"));
    let st = accepted_status(&old, &[], "2024-01-01T00:00:00Z");
    set(&mut old, "/status", st);
    assert!(validate(&old, Some(&old)).is_empty());
    let mut new = old.clone();
    set(
        &mut new,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations/0/rule",
        json!("self.message != 1"),
    );
    let e: Vec<String> = validate(&new, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(e.len(), 1, "{e:?}");
    assert!(
        e[0].ends_with(
            "compilation failed: ERROR: <input>:1:14: found no matching overload for '_!=_' applied to '(string, int)'\n | self.message != 1\n | .............^"
        ),
        "{e:?}"
    );
    assert_eq!(validate(&new, Some(&new)).len(), 1);
}

#[test]
fn cel_optional_rules_are_valid_and_schema_errors_come_first() {
    let c = with_rules(json!([
        {"rule": "oldSelf.optMap(o, o.message == self.message).orValue(true)", "optionalOldSelf": true},
        {"rule": "self.?message.orValue('') != 'x' && [?self.?message].size() <= 1"}
    ]));
    assert_eq!(errs_of(&c), Vec::<String>::new());
    // The rules of a node with a schema error are not compiled.
    let c = with_rules(json!([{"rule": "self.nope", "reason": "Bogus"}]));
    assert_eq!(
        errs_of(&c),
        [
            "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
        ]
    );
}

#[test]
fn versions_with_rules_that_do_not_compile_stay_served() {
    // Stored before rules were checked: kube serves the version and reports
    // the compile error on writes; the status carries no violation.
    let mut c = with_rules(json!([{"rule": "self.nope == 'x'"}]));
    apply_defaults(&mut c);
    let st = accepted_status(&c, &[], "2024-01-01T00:00:00Z");
    let types: Vec<&str> = st["conditions"]
        .as_array()
        .map(|a| a.iter().filter_map(|c| c["type"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(types, ["NamesAccepted", "Established"]);
    let v = c.pointer("/spec/versions/0").cloned().unwrap_or_default();
    assert!(crate::crd::CustomVersion::from_version(&v, 0).is_ok());
}
