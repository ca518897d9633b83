//! Tests of server-side apply and managed-fields tracking.

use super::*;
use crate::merge::apply_schema;

const T1: &str = "2024-01-01T00:00:00Z";
const T2: &str = "2024-01-01T00:00:05Z";

fn apply(
    live: Option<&Value>,
    applied: Value,
    manager: &str,
    force: bool,
) -> Result<Value, ApplyError> {
    let api = applied["apiVersion"].as_str().unwrap_or("v1").to_string();
    let kind = applied["kind"].as_str().unwrap_or("ConfigMap").to_string();
    let schema = apply_schema(&api, &kind);
    server_side_apply(
        ApplyRequest {
            live,
            applied: &applied,
            manager,
            force,
            api_version: &api,
            kind: &kind,
            subresource: None,
            now: T2,
            ignored_fields: &[],
        },
        &schema,
    )
}

fn update(old: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
    let schema = apply_schema("v1", "ConfigMap");
    update_managed_fields(
        UpdateRequest {
            old,
            manager,
            subresource: None,
            api_version: "v1",
            now,
            ignored_fields: &[],
        },
        new,
        &schema,
    );
}

fn cm(data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": data})
}

fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn apply_creates_and_records_ownership() {
    let mut applied = cm(json!({"key": "v"}));
    applied["metadata"]["labels"] = json!({"app": "x"});
    let out = apply(None, applied, "kubectl", false).unwrap();
    assert_eq!(out["data"], json!({"key": "v"}));
    assert_eq!(
        entries(&out),
        vec![json!({
            "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": T2,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
        })]
    );
}

#[test]
fn apply_removes_fields_no_longer_specified() {
    let v1 = apply(None, cm(json!({"a": "1", "b": "2"})), "m", false).unwrap();
    let v2 = apply(Some(&v1), cm(json!({"a": "1"})), "m", false).unwrap();
    assert_eq!(v2["data"], json!({"a": "1"}));
    assert_eq!(entries(&v2)[0]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    // Dropping everything removes the emptied map.
    let v3 = apply(
        Some(&v2),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        "m",
        false,
    )
    .unwrap();
    assert!(v3.get("data").is_none(), "{v3}");
    assert!(v3["metadata"].get("managedFields").is_none());
}

#[test]
fn shared_ownership_keeps_field() {
    let v1 = apply(None, cm(json!({"a": "1"})), "m1", false).unwrap();
    let v2 = apply(Some(&v1), cm(json!({"a": "1"})), "m2", false).unwrap();
    assert_eq!(entries(&v2).len(), 2);
    let v3 = apply(
        Some(&v2),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
        "m1",
        false,
    )
    .unwrap();
    assert_eq!(v3["data"], json!({"a": "1"}));
    let e = entries(&v3);
    assert_eq!(e.len(), 1);
    assert_eq!(e[0]["manager"], "m2");
}

#[test]
fn conflict_with_updater_and_force() {
    let mut created = cm(json!({"key": "old"}));
    update(None, &mut created, "kubectl-client-side-apply", T1);
    assert_eq!(
        entries(&created)[0]["fieldsV1"],
        json!({"f:data": {".": {}, "f:key": {}}})
    );
    let err = apply(Some(&created), cm(json!({"key": "new"})), "kubectl", false).unwrap_err();
    assert_eq!(err.status_code(), 409);
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
    );
    let status = err.to_status();
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(status["code"], 409);
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using v1", "field": ".data.key"}])
    );
    // Same value: no conflict, shared ownership.
    let ok = apply(Some(&created), cm(json!({"key": "old"})), "kubectl", false).unwrap();
    assert_eq!(entries(&ok).len(), 2);
    // Force moves ownership.
    let forced = apply(Some(&created), cm(json!({"key": "new"})), "kubectl", true).unwrap();
    assert_eq!(forced["data"]["key"], "new");
    let e = entries(&forced);
    assert_eq!(e[0]["manager"], "kubectl");
    assert_eq!(e[0]["fieldsV1"], json!({"f:data": {"f:key": {}}}));
    // The updater keeps only `.data` itself.
    assert_eq!(e[1]["manager"], "kubectl-client-side-apply");
    assert_eq!(e[1]["fieldsV1"], json!({"f:data": {}}));
}

#[test]
fn multiple_conflicts_message() {
    let v1 = apply(None, cm(json!({"a": "1", "b": "1"})), "alpha", false).unwrap();
    let mut v2 = v1.clone();
    v2["data"]["c"] = json!("1");
    update(Some(&v1), &mut v2, "beta", T1);
    let err = apply(
        Some(&v2),
        cm(json!({"a": "2", "b": "2", "c": "2"})),
        "gamma",
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 3 conflicts: conflicts with \"alpha\":\n- .data.a\n- .data.b\nconflicts with \"beta\" using v1:\n- .data.c"
    );
    assert_eq!(err.conflicts().map(<[Conflict]>::len), Some(3));
    assert_eq!(
        err.conflicts()
            .and_then(|c| c.first())
            .map(|c| c.field.as_str()),
        Some(".data.a")
    );
}

#[test]
fn subresource_manager_display() {
    let info = ManagerInfo {
        manager: "kubelet".into(),
        operation: Operation::Update,
        api_version: "v1".into(),
        subresource: "status".into(),
    };
    assert_eq!(
        info.display(),
        "\"kubelet\" with subresource \"status\" using v1"
    );
    assert_eq!(
        info.identifier(),
        r#"{"manager":"kubelet","operation":"Update","apiVersion":"v1","subresource":"status"}"#
    );
}

#[test]
fn list_maps_and_sets_encoding() {
    let applied = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["x"]},
        "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"spec": {"containers": [
            {"name": "c1", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
    let out = apply(None, applied, "kubectl", false).unwrap();
    assert_eq!(
        entries(&out)[0]["fieldsV1"],
        json!({
            "f:metadata": {"f:finalizers": {"v:\"x\"": {}}},
            "f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {},
                    "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
            }}}}
        })
    );
    // Round trip of the encoding.
    let f = &entries(&out)[0]["fieldsV1"];
    assert_eq!(&FieldSet::from_fields_v1(f).unwrap().to_fields_v1(), f);
}

#[test]
fn containers_merge_and_prune_by_key() {
    let dep = |containers: Value| {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"template": {"spec": {"containers": containers}}}})
    };
    let v1 = apply(
        None,
        dep(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])),
        "m",
        false,
    )
    .unwrap();
    // Another manager adds a container.
    let v2 = apply(
        Some(&v1),
        dep(json!([{"name": "z", "image": "z"}])),
        "other",
        false,
    )
    .unwrap();
    assert_eq!(
        v2["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "z", "image": "z"}])
    );
    // m drops b: b goes, z (owned by other) stays.
    let v3 = apply(
        Some(&v2),
        dep(json!([{"name": "a", "image": "a2"}])),
        "m",
        false,
    )
    .unwrap();
    assert_eq!(
        v3["spec"]["template"]["spec"]["containers"],
        json!([{"name": "a", "image": "a2"}, {"name": "z", "image": "z"}])
    );
    let err = apply(
        Some(&v3),
        dep(json!([{"name": "a", "image": "x"}])),
        "other",
        false,
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"m\": .spec.template.spec.containers[name=\"a\"].image"
    );
}

#[test]
fn owner_references_items_are_atomic() {
    let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
        "ownerReferences": [{"uid": "u1", "name": "o", "kind": "K", "apiVersion": "v1"}]}});
    let out = apply(None, applied, "m", false).unwrap();
    assert_eq!(
        entries(&out)[0]["fieldsV1"],
        json!({"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}}})
    );
}

#[test]
fn apply_validation_errors() {
    let mut bad = cm(json!({}));
    bad["metadata"]["managedFields"] = json!([]);
    let err = apply(None, bad, "m", false).unwrap_err();
    assert_eq!(
        err,
        ApplyError::BadRequest("metadata.managedFields must be nil".into())
    );
    let schema = apply_schema("v1", "ConfigMap");
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
    let err = server_side_apply(
        ApplyRequest {
            live: None,
            applied: &secret,
            manager: "m",
            force: false,
            api_version: "v1",
            kind: "ConfigMap",
            subresource: None,
            now: T1,
            ignored_fields: &[],
        },
        &schema,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), "invalid object type: /v1, Kind=Secret");
    assert_eq!(err.status_code(), 400);
    let dup = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
    let err = apply(None, dup, "m", false).unwrap_err();
    assert_eq!(err.status_code(), 500);
    assert!(
        err.to_string()
            .contains("duplicate entries for key [name=\"a\"]"),
        "{err}"
    );
    let nokey = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
        "spec": {"template": {"spec": {"containers": [{"image": "a"}]}}}});
    let err = apply(None, nokey, "m", false).unwrap_err();
    assert!(
        err.to_string().contains("omits key field \"name\""),
        "{err}"
    );
}

#[test]
fn noop_apply_keeps_time() {
    let v1 = apply(None, cm(json!({"a": "1"})), "m", false).unwrap();
    let mut live = v1.clone();
    live["metadata"]["managedFields"][0]["time"] = json!(T1);
    let v2 = apply(Some(&live), cm(json!({"a": "1"})), "m", false).unwrap();
    assert_eq!(v2, live);
}

#[test]
fn update_tracks_changes_and_removals() {
    let mut created = cm(json!({"a": "1"}));
    created["metadata"]["labels"] = json!({"x": "y"});
    update(None, &mut created, "creator", T1);
    assert_eq!(
        entries(&created),
        vec![
            json!({"manager": "creator", "operation": "Update", "apiVersion": "v1", "time": T1,
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}}})
        ]
    );
    // Another writer changes data.a and removes the labels.
    let mut next = created.clone();
    next["data"]["a"] = json!("2");
    next["metadata"].as_object_mut().unwrap().remove("labels");
    next["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    update(Some(&created), &mut next, "editor", T2);
    let e = entries(&next);
    assert_eq!(e.len(), 2);
    assert_eq!(e[0]["manager"], "creator");
    assert_eq!(e[0]["fieldsV1"], json!({"f:data": {}}));
    assert_eq!(e[1]["manager"], "editor");
    assert_eq!(e[1]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
    // A write that changes only server-owned metadata records nothing.
    let mut same = next.clone();
    same["metadata"]["resourceVersion"] = json!("5");
    update(Some(&next), &mut same, "third", T2);
    assert_eq!(entries(&same).len(), 2);
}

#[test]
fn update_can_reset_managed_fields() {
    let mut created = cm(json!({"a": "1"}));
    update(None, &mut created, "creator", T1);
    let mut next = created.clone();
    next["metadata"]["managedFields"] = json!([{}]);
    update(Some(&created), &mut next, "editor", T2);
    assert!(next["metadata"].get("managedFields").is_none(), "{next}");
}

#[test]
fn cap_update_managers_merges_oldest() {
    let mut obj = cm(json!({}));
    update(None, &mut obj, "m0", T1);
    for i in 0..12 {
        let mut next = obj.clone();
        next["data"][format!("k{i}")] = json!("v");
        next["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        update(
            Some(&obj),
            &mut next,
            &format!("m{i:02}"),
            &format!("2024-01-01T00:00:{i:02}Z"),
        );
        obj = next;
    }
    let e = entries(&obj);
    assert_eq!(e.len(), 10);
    assert!(e.iter().any(|x| x["manager"] == "ancient-changes"));
}

#[test]
fn fields_v1_decoding_errors() {
    assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"k:notjson": {}})).is_err());
    assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
    let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
        "managedFields": [{"manager": "m", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]}});
    let err = apply(Some(&live), cm(json!({})), "m", false).unwrap_err();
    assert_eq!(
        err.to_string(),
        "failed to decode managed fields: operation must be `Apply` or `Update`"
    );
}

#[test]
fn user_agent_prefix() {
    assert_eq!(
        manager_from_user_agent("kubectl/v1.32.0 (linux/amd64)"),
        "kubectl"
    );
    assert_eq!(manager_from_user_agent(""), "");
}

#[test]
fn no_panics_on_odd_inputs() {
    let odd = [
        json!(null),
        json!(1),
        json!([]),
        json!({"apiVersion": "v1", "kind": "ConfigMap"}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": 1, "data": [1, [2]]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"finalizers": [{"a": 1}, [1]], "ownerReferences": [1, {"x": 1}]}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": [{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:finalizers": {"v:1": {}, "i:0": {}}}}}], "finalizers": [1, 1]}}),
    ];
    for live in &odd {
        for applied in &odd {
            let _ = apply(Some(live), applied.clone(), "m", false);
            let _ = apply(Some(live), applied.clone(), "m", true);
            let mut n = applied.clone();
            update(Some(live), &mut n, "u", T1);
            let mut n = live.clone();
            let schema = apply_schema("v1", "ConfigMap");
            update_managed_fields(
                UpdateRequest {
                    old: Some(applied),
                    manager: "",
                    subresource: Some("status"),
                    api_version: "v1",
                    now: T1,
                    ignored_fields: &[&["status"]],
                },
                &mut n,
                &schema,
            );
        }
    }
}

#[test]
fn subtract_in_place_equals_difference() {
    let set = FieldSet::from_plain_paths(&[
        &["apiVersion"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "labels", "app"],
        &["data", "a"],
        &["data", "b"],
    ]);
    for other in [
        strip_set().clone(),
        FieldSet::from_plain_paths(&[&["data", "a"], &["data", "b"]]),
        FieldSet::from_plain_paths(&[&["metadata", "labels", "app"], &["kind"]]),
        FieldSet::default(),
    ] {
        let mut subtracted = set.clone();
        subtracted.subtract(&other);
        assert_eq!(subtracted, set.difference(&other));
    }
    let mut emptied = set.clone();
    emptied.subtract(&set);
    assert!(emptied.is_empty());
    assert_eq!(emptied, FieldSet::default());
}

/// The creation shortcut against the general comparison it stands for: the same
/// managedFields for every built-in kind's full object (with and without `status` ignored),
/// variants of it with fields nulled, emptied or of another shape, and objects the
/// comparison refuses.
#[test]
fn a_creation_records_what_the_general_comparison_records() {
    fn both(api: &str, kind: &str, obj: &Value, ignored: &[&[&str]]) {
        let schema = apply_schema(api, kind);
        let run = |general: bool| {
            let mut new = obj.clone();
            FORCE_GENERAL.with(|f| f.set(general));
            update_managed_fields(
                UpdateRequest {
                    old: None,
                    manager: if kind == "Pod" { "" } else { "creator" },
                    subresource: None,
                    api_version: api,
                    now: T1,
                    ignored_fields: ignored,
                },
                &mut new,
                &schema,
            );
            FORCE_GENERAL.with(|f| f.set(false));
            new
        };
        assert_eq!(run(false), run(true), "{kind} {ignored:?}\n{obj}");
    }
    fn variants(obj: &Value) -> Vec<Value> {
        let mut out = vec![obj.clone()];
        let Some(root) = obj.as_object() else {
            return out;
        };
        for (k, v) in root {
            for replacement in [Value::Null, json!({}), json!([]), json!("x")] {
                let mut o = obj.clone();
                o[k] = replacement;
                out.push(o);
            }
            if let Value::Object(inner) = v {
                for (k2, v2) in inner {
                    let replacements = match v2 {
                        Value::Array(a) => {
                            // Duplicated items, an item without its fields, an empty list.
                            let mut twice = a.clone();
                            twice.extend(a.iter().cloned());
                            vec![json!(twice), json!([{}]), json!([])]
                        }
                        _ => vec![Value::Null, json!({}), json!(["a", "a"])],
                    };
                    for replacement in replacements {
                        let mut o = obj.clone();
                        o[k][k2] = replacement;
                        out.push(o);
                    }
                }
            }
        }
        out
    }
    let mut kinds = 0;
    for def in crate::kinds::all() {
        let rt = def.resource_type();
        let api = rt.api_version();
        let Some(full) = crate::protobuf::samples::full_object(&api, &rt.kind) else {
            continue;
        };
        kinds += 1;
        let mut full = full;
        // What a create leaves: no managedFields of the client's.
        if let Some(meta) = full.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("managedFields");
        }
        for obj in variants(&full) {
            both(&api, &rt.kind, &obj, &[]);
            both(&api, &rt.kind, &obj, &[&["status"]]);
        }
    }
    assert!(kinds > 50, "{kinds}");
    // A custom resource: its own list rules, a minimal object, metadata only.
    for obj in [
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}}, "spec": {}, "status": {"x": 1}}),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": "odd", "spec": [1, 2]}),
        json!({"kind": "Widget"}),
    ] {
        both("example.com/v1", "Widget", &obj, &[]);
        both("example.com/v1", "Widget", &obj, &[&["status"]]);
    }
}
