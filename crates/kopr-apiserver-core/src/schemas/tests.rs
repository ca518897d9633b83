//! Structure checks of the generated schemas.

use super::*;
use serde_json::Map;

fn rt(group: &str, version: &str, kind: &str) -> ResourceType {
    let plural = format!("{}s", kind.to_lowercase());
    ResourceType::new(group, version, &plural, &kind.to_lowercase(), kind, true)
}

fn doc(group: &str, version: &str, kind: &str) -> Map<String, Value> {
    schemas_for(&rt(group, version, kind)).into_iter().collect()
}

/// Follows `$ref` (bare or wrapped in a single-element `allOf`).
fn deref<'a>(d: &'a Map<String, Value>, v: &'a Value) -> &'a Value {
    let r = v
        .get("$ref")
        .or_else(|| v.pointer("/allOf/0/$ref"))
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix(REF_PREFIX));
    match r {
        Some(name) => d.get(name).unwrap_or_else(|| panic!("dangling ref {name}")),
        None => v,
    }
}

/// Walks a dotted field path from a kind, like `kubectl explain`.
fn field<'a>(d: &'a Map<String, Value>, root: &str, path: &str) -> &'a Value {
    let mut cur = d.get(root).unwrap_or_else(|| panic!("no {root}"));
    for seg in path.split('.') {
        cur = deref(d, cur);
        if cur.get("type") == Some(&json!("array")) {
            cur = deref(d, &cur["items"]);
        }
        cur = cur
            .pointer(&format!("/properties/{seg}"))
            .unwrap_or_else(|| panic!("no field {seg} in {path}"));
    }
    cur
}

fn assert_no_dangling(d: &Map<String, Value>) {
    for (name, s) in d {
        let mut refs = Vec::new();
        collect_refs(s, &mut refs);
        for r in refs {
            assert!(d.contains_key(&r), "{name} refers to missing {r}");
        }
        assert!(
            !s.to_string().contains("#/$defs/"),
            "{name} has a $defs ref"
        );
        assert!(
            !s.to_string().contains("#/definitions/"),
            "{name} has a definitions ref"
        );
    }
}

#[test]
fn names_follow_kube() {
    assert_eq!(
        schema_name("", "v1", "ConfigMap"),
        "io.k8s.api.core.v1.ConfigMap"
    );
    assert_eq!(
        schema_name("apps", "v1", "Deployment"),
        "io.k8s.api.apps.v1.Deployment"
    );
    assert_eq!(
        schema_name("coordination.k8s.io", "v1", "Lease"),
        "io.k8s.api.coordination.v1.Lease"
    );
    assert_eq!(
        schema_name("rbac.authorization.k8s.io", "v1", "Role"),
        "io.k8s.api.rbac.v1.Role"
    );
    assert_eq!(
        schema_name(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration"
        ),
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration"
    );
    assert_eq!(
        schema_name("events.k8s.io", "v1", "Event"),
        "io.k8s.api.events.v1.Event"
    );
    assert_eq!(
        schema_name("example.com", "v1", "Greeting"),
        "com.example.v1.Greeting"
    );
    assert_eq!(
        schema_name("stable.example.com", "v1beta1", "Foo"),
        "com.example.stable.v1beta1.Foo"
    );
    assert_eq!(
        schema_name("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
    );
}

#[test]
fn every_builtin_generates_with_gvk_and_list() {
    for b in BUILTINS.iter() {
        let name = schema_name(b.group, b.version, b.kind);
        let d = doc(b.group, b.version, b.kind);
        let s = d.get(&name).unwrap_or_else(|| panic!("no schema {name}"));
        assert_eq!(s["type"], "object", "{name}");
        assert!(
            s["description"].as_str().is_some_and(|t| !t.is_empty()),
            "{name}"
        );
        assert_eq!(
            s["x-kubernetes-group-version-kind"],
            json!([{"group": b.group, "kind": b.kind, "version": b.version}])
        );
        assert!(
            s.get("x-kubernetes-preserve-unknown-fields").is_none(),
            "{name} fell back"
        );
        let required = s.get("required").cloned().unwrap_or(json!([]));
        assert!(
            !required
                .as_array()
                .is_some_and(|r| r.contains(&json!("metadata"))),
            "{name}"
        );
        if b.list {
            let list = &d[&format!("{name}List")];
            assert_eq!(
                list["x-kubernetes-group-version-kind"][0]["kind"],
                format!("{}List", b.kind)
            );
            assert_eq!(
                list["properties"]["items"]["items"]["$ref"],
                format!("{REF_PREFIX}{name}")
            );
            assert_eq!(
                deref(&d, &list["properties"]["metadata"])["properties"]["continue"]["type"],
                "string"
            );
        }
        assert_no_dangling(&d);
    }
}

#[test]
fn configmap_structure() {
    let d = doc("", "v1", "ConfigMap");
    let cm = &d["io.k8s.api.core.v1.ConfigMap"];
    assert_eq!(cm["properties"]["data"]["type"], "object");
    assert_eq!(
        cm["properties"]["data"]["additionalProperties"],
        json!({"type": "string"})
    );
    assert_eq!(
        cm["properties"]["binaryData"]["additionalProperties"]["format"],
        "byte"
    );
    // metadata is a wrapped ref with its own description, as kube has it.
    let md = &cm["properties"]["metadata"];
    assert_eq!(md["allOf"][0]["$ref"], format!("{REF_PREFIX}{OBJECT_META}"));
    assert!(md["description"].is_string());
    let om = deref(&d, md);
    assert_eq!(
        om["properties"]["labels"]["additionalProperties"]["type"],
        "string"
    );
    assert_eq!(
        om["properties"]["finalizers"]["x-kubernetes-list-type"],
        "set"
    );
    assert_eq!(
        om["properties"]["ownerReferences"]["x-kubernetes-patch-merge-key"],
        "uid"
    );
    let ts = deref(&d, &om["properties"]["creationTimestamp"]);
    assert_eq!(
        (ts["type"].as_str(), ts["format"].as_str()),
        (Some("string"), Some("date-time"))
    );
    assert_no_dangling(&d);
}

#[test]
fn deployment_template_reaches_containers() {
    let d = doc("apps", "v1", "Deployment");
    let root = "io.k8s.api.apps.v1.Deployment";
    let containers = field(&d, root, "spec.template.spec.containers");
    assert_eq!(containers["type"], "array");
    assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    let image = field(&d, root, "spec.template.spec.containers.image");
    assert_eq!(image["type"], "string");
    let ports = field(&d, root, "spec.template.spec.containers.ports");
    assert_eq!(
        ports["x-kubernetes-list-map-keys"],
        json!(["containerPort", "protocol"])
    );
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    let volumes = field(&d, root, "spec.template.spec.volumes");
    assert_eq!(volumes["x-kubernetes-patch-strategy"], "merge,retainKeys");
    let labels = field(&d, root, "spec.template.metadata.labels");
    assert_eq!(labels["type"], "object");
    let selector = deref(&d, field(&d, root, "spec.selector"));
    assert_eq!(selector["x-kubernetes-map-type"], "atomic");
    // IntOrString and Quantity have kube's v3 shapes.
    let ios = deref(&d, field(&d, root, "spec.strategy.rollingUpdate.maxSurge"));
    assert_eq!(ios["format"], "int-or-string");
    assert_eq!(
        ios["oneOf"],
        json!([{"type": "integer"}, {"type": "string"}])
    );
    let limits = field(&d, root, "spec.template.spec.containers.resources.limits");
    let q = deref(&d, &limits["additionalProperties"]);
    assert_eq!(q["oneOf"], json!([{"type": "string"}, {"type": "number"}]));
    assert!(q.get("x-kubernetes-int-or-string").is_none());
    assert_no_dangling(&d);
}

#[test]
fn other_kinds_structure() {
    let d = doc("", "v1", "Service");
    let ports = field(&d, "io.k8s.api.core.v1.Service", "spec.ports");
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "port");
    let tp = deref(
        &d,
        field(&d, "io.k8s.api.core.v1.Service", "spec.ports.targetPort"),
    );
    assert_eq!(tp["format"], "int-or-string");

    let d = doc("", "v1", "Secret");
    assert_eq!(
        d["io.k8s.api.core.v1.Secret"]["properties"]["data"]["additionalProperties"]["format"],
        "byte"
    );

    let d = doc("coordination.k8s.io", "v1", "Lease");
    let rt = deref(
        &d,
        field(&d, "io.k8s.api.coordination.v1.Lease", "spec.renewTime"),
    );
    assert_eq!(rt["format"], "date-time");

    let d = doc("rbac.authorization.k8s.io", "v1", "RoleBinding");
    let rr = deref(&d, field(&d, "io.k8s.api.rbac.v1.RoleBinding", "roleRef"));
    let required = rr["required"].as_array().cloned().unwrap_or_default();
    assert!(required.contains(&json!("kind")) && required.contains(&json!("name")));
    assert_eq!(rr["x-kubernetes-map-type"], "atomic");

    let d = doc(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
    );
    let wh = field(
        &d,
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "webhooks",
    );
    assert_eq!(wh["x-kubernetes-list-map-keys"], json!(["name"]));
    field(
        &d,
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "webhooks.clientConfig.caBundle",
    );

    let d = doc("events.k8s.io", "v1", "Event");
    field(&d, "io.k8s.api.events.v1.Event", "regarding.kind");
    assert!(!d.contains_key("io.k8s.api.core.v1.Event"));

    let d = doc("autoscaling", "v1", "Scale");
    field(&d, "io.k8s.api.autoscaling.v1.Scale", "spec.replicas");
    assert!(!d.contains_key("io.k8s.api.autoscaling.v1.ScaleList"));
}

#[test]
fn unknown_kinds_are_permissive() {
    let d = doc("example.com", "v1", "Greeting");
    let g = &d["com.example.v1.Greeting"];
    assert_eq!(g["type"], "object");
    assert_eq!(g["x-kubernetes-preserve-unknown-fields"], true);
    assert_eq!(
        g["x-kubernetes-group-version-kind"],
        json!([{"group": "example.com", "kind": "Greeting", "version": "v1"}])
    );
    assert!(deref(&d, &g["properties"]["metadata"])["properties"]["name"].is_object());
    assert_no_dangling(&d);
}

#[test]
fn cached_and_stable() {
    let a = schemas_for(&rt("", "v1", "Pod"));
    let b = schemas_for(&rt("", "v1", "Pod"));
    assert_eq!(a, b);
    assert_eq!(a[0].0, "io.k8s.api.core.v1.Pod");
    let names: BTreeSet<&String> = a.iter().map(|(n, _)| n).collect();
    assert_eq!(names.len(), a.len(), "duplicate names");
}

#[test]
fn extensions_follow_the_merge_rules_of_every_type() {
    // Conditions keyed by type for apply, and for strategic merge patch only
    // where kube's Go tags say so.
    let d = doc("", "v1", "PersistentVolumeClaim");
    let c = field(
        &d,
        "io.k8s.api.core.v1.PersistentVolumeClaim",
        "status.conditions",
    );
    assert_eq!(c["x-kubernetes-list-type"], "map");
    assert_eq!(c["x-kubernetes-patch-merge-key"], "type");
    let d = doc("certificates.k8s.io", "v1", "CertificateSigningRequest");
    let c = field(
        &d,
        "io.k8s.api.certificates.v1.CertificateSigningRequest",
        "status.conditions",
    );
    assert_eq!(c["x-kubernetes-list-map-keys"], json!(["type"]));
    assert!(c.get("x-kubernetes-patch-strategy").is_none());
    // Embedded structs' rules are published on the embedding type.
    let d = doc("", "v1", "Pod");
    let ports = field(
        &d,
        "io.k8s.api.core.v1.Pod",
        "spec.ephemeralContainers.ports",
    );
    assert_eq!(ports["x-kubernetes-patch-merge-key"], "containerPort");
    let d = doc("storage.k8s.io", "v1", "CSINode");
    let drivers = field(&d, "io.k8s.api.storage.v1.CSINode", "spec.drivers");
    assert_eq!(drivers["x-kubernetes-patch-merge-key"], "name");
}
