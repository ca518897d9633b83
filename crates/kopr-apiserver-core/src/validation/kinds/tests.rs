//! Tests of per-kind validation.

use super::super::validate_kind as validate;
use crate::defaults::apply_defaults;
use serde_json::{Value, json};

fn errs(group: &str, res: &str, mut v: Value, old: Option<Value>) -> Vec<String> {
    apply_defaults(group, res, &mut v);
    validate(group, res, &v, old.as_ref())
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn pod_tmpl(labels: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}})
}

#[test]
fn valid_minimal_objects_pass() {
    let ns = json!({"name": "x", "namespace": "default"});
    let cases = vec![
        ("", "namespaces", json!({"metadata": {"name": "team-a"}})),
        (
            "",
            "configmaps",
            json!({"metadata": ns, "data": {"a.b": "c"}}),
        ),
        (
            "",
            "secrets",
            json!({"metadata": ns, "data": {"k": "dg=="}}),
        ),
        (
            "",
            "services",
            json!({"metadata": ns, "spec": {"selector": {"app": "a"}, "ports": [{"port": 80}]}}),
        ),
        (
            "",
            "services",
            json!({"metadata": ns, "spec": {"type": "ExternalName", "externalName": "example.com"}}),
        ),
        ("", "serviceaccounts", json!({"metadata": ns})),
        (
            "",
            "pods",
            json!({"metadata": ns, "spec": {"containers": [{"name": "c", "image": "nginx",
            "ports": [{"containerPort": 80, "name": "http"}], "env": [{"name": "A", "value": "b"}],
            "volumeMounts": [{"name": "v", "mountPath": "/v"}]}], "volumes": [{"name": "v"}]}}),
        ),
        (
            "",
            "events",
            json!({"metadata": ns, "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"},
            "reason": "Started", "message": "m", "type": "Normal"}),
        ),
        ("", "nodes", json!({"metadata": {"name": "node-1"}})),
        (
            "apps",
            "deployments",
            json!({"metadata": ns, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": pod_tmpl(json!({"app": "a"}))}}),
        ),
        (
            "apps",
            "replicasets",
            json!({"metadata": ns, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": pod_tmpl(json!({"app": "a"}))}}),
        ),
        (
            "apps",
            "statefulsets",
            json!({"metadata": ns, "spec": {"serviceName": "s", "selector": {"matchLabels": {"app": "a"}},
            "template": pod_tmpl(json!({"app": "a"}))}}),
        ),
        (
            "apps",
            "daemonsets",
            json!({"metadata": ns, "spec": {"selector": {"matchLabels": {"app": "a"}},
            "template": pod_tmpl(json!({"app": "a"}))}}),
        ),
        (
            "batch",
            "jobs",
            json!({"metadata": {"name": "j", "namespace": "default", "uid": "u-1"},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}),
        ),
        (
            "coordination.k8s.io",
            "leases",
            json!({"metadata": ns, "spec": {"holderIdentity": "h", "leaseDurationSeconds": 15}}),
        ),
        (
            "events.k8s.io",
            "events",
            json!({"metadata": ns, "eventTime": "2024-01-01T00:00:00.000000Z",
            "reportingController": "kubelet", "reportingInstance": "n1", "action": "Pull", "reason": "Pulled",
            "type": "Normal", "regarding": {"namespace": "default"}}),
        ),
        (
            "rbac.authorization.k8s.io",
            "roles",
            json!({"metadata": ns, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterroles",
            json!({"metadata": {"name": "system:x"}, "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]}),
        ),
        (
            "rbac.authorization.k8s.io",
            "rolebindings",
            json!({"metadata": ns, "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "default"}, {"kind": "User", "name": "alice"}]}),
        ),
        (
            "rbac.authorization.k8s.io",
            "clusterrolebindings",
            json!({"metadata": {"name": "b"}, "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "Group", "name": "g"}]}),
        ),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
            json!({"metadata": {"name": "w"}, "webhooks": [{
            "name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "s", "namespace": "n", "path": "/validate"}},
            "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]}),
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            json!({"metadata": {"name": "w"}, "webhooks": [{
            "name": "mutate.example.com", "sideEffects": "NoneOnDryRun", "admissionReviewVersions": ["v1", "v1beta1"],
            "clientConfig": {"url": "https://example.com/m"}}]}),
        ),
    ];
    for (g, r, v) in cases {
        assert_eq!(errs(g, r, v, None), Vec::<String>::new(), "{g}/{r}");
    }
}

#[test]
fn pod_errors() {
    let e = errs(
        "",
        "pods",
        json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {}}),
        None,
    );
    assert_eq!(e, vec!["spec.containers: Required value"]);
    let e = errs(
        "",
        "pods",
        json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"restartPolicy": "Sometimes", "containers": [
            {"name": "A_b", "image": "x"}, {"name": "c"}, {"name": "c", "image": "y",
             "ports": [{"containerPort": 70000, "protocol": "HTTP"}], "volumeMounts": [{"name": "nope", "mountPath": "/x"}]}]}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.containers[0].name: Invalid value: \"A_b\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.containers[1].image: Required value",
            "spec.containers[2].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
            "spec.containers[2].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            "spec.containers[2].volumeMounts[0].name: Not found: \"nope\"",
            "spec.containers[2].name: Duplicate value: \"c\"",
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
        ]
    );
}

#[test]
fn pod_update_rules() {
    let mut old = json!({"metadata": {"name": "p", "namespace": "d", "resourceVersion": "1"},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    apply_defaults("", "pods", &mut old);
    let mut new = old.clone();
    new["spec"]["containers"][0]["image"] = json!("nginx:2");
    assert!(validate("", "pods", &new, Some(&old)).is_empty());
    new["spec"]["restartPolicy"] = json!("Never");
    let e = validate("", "pods", &new, Some(&old));
    assert_eq!(e.len(), 1);
    assert!(e[0].to_string().starts_with(
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"
    ));
    let mut renamed = old.clone();
    renamed["metadata"]["name"] = json!("q");
    let e: Vec<String> = validate("", "pods", &renamed, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert!(e.contains(&"metadata.name: Invalid value: \"q\": field is immutable".to_string()));
}

#[test]
fn deployment_errors() {
    let ns = json!({"name": "d", "namespace": "default"});
    let e = errs(
        "apps",
        "deployments",
        json!({"metadata": ns, "spec": {"replicas": -1, "selector": {"matchLabels": {"app": "a"}}, "template": pod_tmpl(json!({"app": "b"}))}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`",
        ]
    );
    let e = errs(
        "apps",
        "deployments",
        json!({"metadata": ns, "spec": {"template": pod_tmpl(json!({"app": "b"}))}}),
        None,
    );
    assert_eq!(e, vec!["spec.selector: Required value"]);
    let mut old = json!({"metadata": {"name": "d", "namespace": "default", "resourceVersion": "3"},
        "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": pod_tmpl(json!({"app": "a", "v": "1"}))}});
    apply_defaults("apps", "deployments", &mut old);
    let mut new = old.clone();
    new["spec"]["selector"]["matchLabels"]["v"] = json!("1");
    let e: Vec<String> = validate("apps", "deployments", &new, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        e,
        vec![
            "spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"a\", \"v\":\"1\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
        ]
    );
}

#[test]
fn statefulset_update_forbidden() {
    let mut old = json!({"metadata": {"name": "s", "namespace": "default", "resourceVersion": "3"},
        "spec": {"serviceName": "a", "selector": {"matchLabels": {"app": "a"}}, "template": pod_tmpl(json!({"app": "a"}))}});
    apply_defaults("apps", "statefulsets", &mut old);
    let mut new = old.clone();
    new["spec"]["serviceName"] = json!("b");
    let e: Vec<String> = validate("apps", "statefulsets", &new, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        e,
        vec![
            "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
        ]
    );
}

#[test]
fn service_configmap_secret_errors() {
    let ns = json!({"name": "s", "namespace": "default"});
    let e = errs(
        "",
        "services",
        json!({"metadata": ns, "spec": {"ports": [{"port": 80, "protocol": "ICMP"}]}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        ]
    );
    let e = errs("", "services", json!({"metadata": ns, "spec": {}}), None);
    assert_eq!(e, vec!["spec.ports: Required value"]);
    let e = errs(
        "",
        "services",
        json!({"metadata": {"name": "1svc", "namespace": "d"}, "spec": {"ports": [{"port": 1}]}}),
        None,
    );
    assert!(
        e[0].starts_with("metadata.name: Invalid value: \"1svc\": a DNS-1035 label must consist")
    );
    let e = errs(
        "",
        "configmaps",
        json!({"metadata": ns, "data": {"a b": "x"}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "data[a b]: Invalid value: \"a b\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
        ]
    );
    let big = "x".repeat(1024 * 1024 + 1);
    let e = errs(
        "",
        "configmaps",
        json!({"metadata": ns, "data": {"a": big}}),
        None,
    );
    assert_eq!(e, vec!["[]: Too long: must have at most 1048576 bytes"]);
    let old = json!({"metadata": {"name": "s", "namespace": "default", "resourceVersion": "1"}, "type": "Opaque", "immutable": true, "data": {"a": "eA=="}});
    let new = json!({"metadata": {"name": "s", "namespace": "default", "resourceVersion": "1"}, "type": "kubernetes.io/tls", "immutable": true, "data": {"a": "eQ=="}});
    let e: Vec<String> = validate("", "secrets", &new, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        e,
        vec![
            "type: Invalid value: \"kubernetes.io/tls\": field is immutable",
            "data: Forbidden: field is immutable when `immutable` is set",
            "data[tls.crt]: Required value",
            "data[tls.key]: Required value",
        ]
    );
}

#[test]
fn job_rbac_webhook_lease_namespace_errors() {
    let e = errs(
        "batch",
        "jobs",
        json!({"metadata": {"name": "j", "namespace": "d", "uid": "u"}, "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.template.spec.restartPolicy: Unsupported value: \"Always\": supported values: \"OnFailure\", \"Never\""
        ]
    );
    let old = json!({"metadata": {"name": "b", "namespace": "d", "resourceVersion": "1"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"}});
    let new = json!({"metadata": {"name": "b", "namespace": "d", "resourceVersion": "1"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}});
    let e: Vec<String> = validate(
        "rbac.authorization.k8s.io",
        "rolebindings",
        &new,
        Some(&old),
    )
    .iter()
    .map(ToString::to_string)
    .collect();
    assert_eq!(
        e,
        vec![
            "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"ClusterRole\", Name:\"edit\"}: cannot change roleRef"
        ]
    );
    let e = errs(
        "rbac.authorization.k8s.io",
        "rolebindings",
        json!({"metadata": {"name": "b", "namespace": "d"}, "roleRef": {"kind": "Pod"}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "roleRef.kind: Unsupported value: \"Pod\": supported values: \"Role\", \"ClusterRole\"",
            "roleRef.name: Required value",
        ]
    );
    let e = errs(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        json!({"metadata": {"name": "w"}, "webhooks": [{"name": "short", "clientConfig": {}}]}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "webhooks[0].name: Invalid value: \"short\": should be a domain with at least three segments separated by dots",
            "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[0].clientConfig: Required value: exactly one of url or service is required",
            "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
        ]
    );
    let e = errs(
        "coordination.k8s.io",
        "leases",
        json!({"metadata": {"name": "l", "namespace": "d"}, "spec": {"leaseDurationSeconds": 0}}),
        None,
    );
    assert_eq!(
        e,
        vec!["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]
    );
    let e = errs("", "namespaces", json!({"metadata": {"name": "a.b"}}), None);
    assert_eq!(
        e,
        vec!["metadata.name: Invalid value: \"a.b\": must not contain dots"]
    );
    let e = errs(
        "",
        "events",
        json!({"metadata": {"name": "e", "namespace": "a"}, "involvedObject": {"namespace": "b"}}),
        None,
    );
    assert_eq!(
        e,
        vec!["involvedObject.namespace: Invalid value: \"b\": does not match event.namespace"]
    );
}

#[test]
fn type_errors_are_reported() {
    let e = errs(
        "",
        "pods",
        json!({"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": "nope"}}),
        None,
    );
    assert_eq!(
        e[0],
        "spec.containers: Invalid value: \"nope\": must be of type array"
    );
    let v = validate(
        "apps",
        "deployments",
        &json!({"metadata": {"name": "d", "namespace": "n"}, "spec": {"replicas": "3"}}),
        None,
    );
    assert!(
        v.iter()
            .any(|e| e.kind == crate::validation::FieldErrorKind::TypeInvalid
                && e.field == "spec.replicas")
    );
}

/// Deterministic pseudo-random JSON generator used to check that no input panics.
struct Gen(u64);
impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn value(&mut self, depth: u32) -> Value {
        const KEYS: &[&str] = &[
            "metadata",
            "spec",
            "name",
            "namespace",
            "labels",
            "annotations",
            "containers",
            "template",
            "selector",
            "matchLabels",
            "matchExpressions",
            "ports",
            "port",
            "targetPort",
            "image",
            "volumes",
            "env",
            "data",
            "type",
            "roleRef",
            "subjects",
            "webhooks",
            "rules",
            "clientConfig",
            "service",
            "url",
            "replicas",
            "strategy",
            "rollingUpdate",
            "maxSurge",
            "uid",
            "finalizers",
            "ownerReferences",
            "initContainers",
            "volumeMounts",
            "resources",
            "limits",
            "requests",
            "securityContext",
            "status",
            "operator",
            "values",
            "key",
            "restartPolicy",
            "updateStrategy",
            "path",
            "emptyDir",
            "secret",
            "livenessProbe",
            "httpGet",
            "tolerations",
            "completionMode",
            "completions",
            "deletionTimestamp",
        ];
        let pick = if depth == 0 {
            self.next() % 6
        } else {
            self.next() % 9
        };
        match pick {
            0 => Value::Null,
            1 => Value::Bool(self.next().is_multiple_of(2)),
            2 => json!((self.next() as i64) - (1 << 30)),
            3 => json!(
                ["", "a", "Foo", "x/y/z", "é-", "-", "25%", "None", "v1", "*"]
                    [(self.next() % 10) as usize]
            ),
            4 => json!(1.5),
            5 => json!(u64::MAX),
            6 | 7 => {
                let n = self.next() % 5;
                let mut m = serde_json::Map::new();
                for _ in 0..n {
                    let k = KEYS[(self.next() as usize) % KEYS.len()];
                    m.insert(k.into(), self.value(depth - 1));
                }
                Value::Object(m)
            }
            _ => {
                let n = self.next() % 3;
                Value::Array((0..n).map(|_| self.value(depth - 1)).collect())
            }
        }
    }
}

#[test]
fn arbitrary_json_never_panics() {
    let kinds = [
        ("", "namespaces"),
        ("", "configmaps"),
        ("", "secrets"),
        ("", "services"),
        ("", "serviceaccounts"),
        ("", "pods"),
        ("", "events"),
        ("", "nodes"),
        ("apps", "deployments"),
        ("apps", "replicasets"),
        ("apps", "statefulsets"),
        ("apps", "daemonsets"),
        ("batch", "jobs"),
        ("batch", "cronjobs"),
        ("coordination.k8s.io", "leases"),
        ("events.k8s.io", "events"),
        ("rbac.authorization.k8s.io", "roles"),
        ("rbac.authorization.k8s.io", "clusterroles"),
        ("rbac.authorization.k8s.io", "rolebindings"),
        ("rbac.authorization.k8s.io", "clusterrolebindings"),
        (
            "admissionregistration.k8s.io",
            "validatingwebhookconfigurations",
        ),
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
        ),
    ];
    let mut g = Gen(42);
    for _ in 0..400 {
        for (grp, res) in kinds {
            let mut a = g.value(6);
            let b = g.value(6);
            apply_defaults(grp, res, &mut a);
            for e in validate(grp, res, &a, None) {
                let _ = e.to_string();
            }
            for e in validate(grp, res, &a, Some(&b)) {
                let _ = e.to_string();
            }
        }
    }
}
