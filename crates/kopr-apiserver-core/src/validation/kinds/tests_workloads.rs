//! Tests of the validation of LimitRanges, ResourceQuotas, PodTemplates,
//! PersistentVolumes and claims, ReplicationControllers, Endpoints,
//! ControllerRevisions, DaemonSet update strategies, CronJobs,
//! PodDisruptionBudgets, HorizontalPodAutoscalers and
//! CertificateSigningRequests (messages as kube-apiserver 1.32 words them).

use super::super::validate_kind as validate;
use crate::defaults::apply_defaults;
use base64::Engine;
use serde_json::{Value, json};

fn errs(group: &str, res: &str, mut v: Value, old: Option<Value>) -> Vec<String> {
    apply_defaults(group, res, &mut v);
    let old = old.map(|mut o| {
        apply_defaults(group, res, &mut o);
        o
    });
    validate(group, res, &v, old.as_ref())
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn has(errors: &[String], want: &str) -> bool {
    errors.iter().any(|e| e == want)
}

#[track_caller]
fn assert_has(errors: &[String], want: &str) {
    assert!(has(errors, want), "missing {want:?} in {errors:#?}");
}

fn meta() -> Value {
    json!({"name": "x", "namespace": "default", "resourceVersion": "1"})
}

fn containers() -> Value {
    json!([{"name": "c", "image": "nginx:1"}])
}

fn q(v: &str, s: &str) -> String {
    let (value, scale) = v.split_once('e').unwrap_or((v, "0"));
    format!(
        "resource.Quantity{{i:resource.int64Amount{{value:{value}, scale:{scale}}}, d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"{s}\", Format:\"DecimalSI\"}}"
    )
}

fn csr_pem() -> String {
    let key = rcgen::KeyPair::generate().unwrap_or_else(|e| panic!("{e}"));
    let params =
        rcgen::CertificateParams::new(vec!["node-1".to_string()]).unwrap_or_else(|e| panic!("{e}"));
    let csr = params
        .serialize_request(&key)
        .unwrap_or_else(|e| panic!("{e}"));
    csr.pem().unwrap_or_else(|e| panic!("{e}"))
}

fn b64(s: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(s.as_bytes())
}

#[test]
fn valid_objects_pass() {
    let pod_tmpl =
        json!({"metadata": {"labels": {"app": "a"}}, "spec": {"containers": containers()}});
    let cases = vec![
        (
            "",
            "limitranges",
            json!({"metadata": meta(), "spec": {"limits": [
            {"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}, "default": {"memory": "1Gi"}},
            {"type": "PersistentVolumeClaim", "max": {"storage": "10Gi"}}]}}),
        ),
        (
            "",
            "resourcequotas",
            json!({"metadata": meta(), "spec": {"hard": {"pods": "10", "requests.cpu": "2", "count/deployments.apps": "3"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["high"]}]}}}),
        ),
        (
            "",
            "podtemplates",
            json!({"metadata": meta(), "template": pod_tmpl.clone()}),
        ),
        (
            "",
            "replicationcontrollers",
            json!({"metadata": meta(), "spec": {"template": pod_tmpl.clone()}}),
        ),
        (
            "",
            "persistentvolumes",
            json!({"metadata": {"name": "pv1"}, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}, "storageClassName": "standard"}}),
        ),
        (
            "",
            "persistentvolumeclaims",
            json!({"metadata": meta(), "spec": {"accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}}}}),
        ),
        (
            "",
            "endpoints",
            json!({"metadata": meta(), "subsets": [{"addresses": [{"ip": "10.0.0.1", "hostname": "a"}],
            "ports": [{"port": 80}]}]}),
        ),
        (
            "apps",
            "controllerrevisions",
            json!({"metadata": meta(), "data": {"spec": {}}, "revision": 1}),
        ),
        (
            "batch",
            "cronjobs",
            json!({"metadata": meta(), "spec": {"schedule": "*/5 * * * *", "timeZone": "Europe/Paris",
            "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": containers()}}}}}}),
        ),
        (
            "policy",
            "poddisruptionbudgets",
            json!({"metadata": {"name": "Not_A_DNS_Name", "namespace": "default"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "a"}}}}),
        ),
        (
            "autoscaling",
            "horizontalpodautoscalers",
            json!({"metadata": meta(), "spec": {"maxReplicas": 3,
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
            "behavior": {"scaleDown": {"stabilizationWindowSeconds": 300}}}}),
        ),
        (
            "certificates.k8s.io",
            "certificatesigningrequests",
            json!({"metadata": {"name": "csr:any name"},
            "spec": {"request": b64(&csr_pem()), "signerName": "kubernetes.io/kube-apiserver-client",
                "usages": ["client auth", "digital signature"], "expirationSeconds": 3600}}),
        ),
    ];
    for (g, r, v) in cases {
        assert_eq!(errs(g, r, v, None), Vec::<String>::new(), "{g}/{r}");
    }
}

#[test]
fn limit_ranges() {
    let e = errs(
        "",
        "limitranges",
        json!({"metadata": meta(), "spec": {"limits": [
            {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
            {"type": "Pod", "default": {"cpu": "1"}},
            {"type": "Foo"},
            {"type": "PersistentVolumeClaim", "min": {"cpu": "1"}},
            {"type": "Container", "max": {"storage": "1Gi"}},
        ]}}),
        None,
    );
    assert_has(
        &e,
        &format!(
            "spec.limits[0].min[cpu]: Invalid value: {}: min value 2 is greater than max value 1",
            q("2", "2")
        ),
    );
    // The default request was defaulted from the max, which is below the min.
    assert_has(
        &e,
        &format!(
            "spec.limits[0].defaultRequest[cpu]: Invalid value: {}: min value 2 is greater than default request value 1",
            q("1", "1")
        ),
    );
    assert_has(
        &e,
        &format!(
            "spec.limits[0].default[cpu]: Invalid value: {}: min value 2 is greater than default value 1",
            q("2", "2")
        ),
    );
    assert_has(
        &e,
        "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'",
    );
    assert_has(
        &e,
        "spec.limits[2].type: Invalid value: \"Foo\": must be a standard limit type or fully qualified",
    );
    assert_has(
        &e,
        "spec.limits[3].limits: Required value: either minimum or maximum storage value is required, but neither was provided",
    );
    assert_has(&e, "spec.limits[4].type: Duplicate value: \"Container\"");
    assert_has(
        &e,
        "spec.limits[4].max[storage]: Invalid value: \"storage\": must be a standard resource for containers",
    );
    let e = errs(
        "",
        "limitranges",
        json!({"metadata": meta(), "spec": {"limits": [
            {"type": "Pod", "min": {"cpu": "1"}, "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "500m"}}]}}),
        None,
    );
    assert_eq!(
        e,
        vec![format!(
            "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: {}: ratio 500m is less than 1",
            q("500e-3", "500m")
        )]
    );
    let e = errs(
        "",
        "limitranges",
        json!({"metadata": meta(), "spec": {"limits": [
            {"type": "Pod", "min": {"cpu": "1"}, "max": {"cpu": "4"}, "maxLimitRequestRatio": {"cpu": "5"}}]}}),
        None,
    );
    assert_eq!(
        e,
        vec![format!(
            "spec.limits[0].maxLimitRequestRatio[cpu]: Invalid value: {}: ratio 5 is greater than max/min = 4.000000",
            q("5", "5")
        )]
    );
}

#[test]
fn limit_range_defaults() {
    let mut v = json!({"spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "1Mi"}},
        {"type": "Pod", "max": {"cpu": "2"}}]}});
    apply_defaults("", "limitranges", &mut v);
    assert_eq!(v["spec"]["limits"][0]["default"], json!({"cpu": "2"}));
    assert_eq!(
        v["spec"]["limits"][0]["defaultRequest"],
        json!({"cpu": "2", "memory": "1Mi"})
    );
    assert!(v["spec"]["limits"][1].get("default").is_none());
}

#[test]
fn resource_quotas() {
    let e = errs(
        "",
        "resourcequotas",
        json!({"metadata": meta(), "spec": {"hard": {"pods": "1.5", "cpu": "-1", "foo": "1"},
            "scopes": ["BestEffort", "NotBestEffort"]}}),
        None,
    );
    assert_has(
        &e,
        &format!(
            "spec.hard[pods]: Invalid value: {}: must be an integer",
            q("15e-1", "")
        ),
    );
    assert_has(
        &e,
        "spec.hard[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
    );
    assert_has(
        &e,
        "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource type or fully qualified",
    );
    assert_has(
        &e,
        "spec.hard[foo]: Invalid value: \"foo\": must be a standard resource for quota",
    );
    assert_has(
        &e,
        "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: unsupported scope applied to resource",
    );
    assert_has(
        &e,
        "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"BestEffort\", \"NotBestEffort\"}: conflicting scopes",
    );
    let e = errs(
        "",
        "resourcequotas",
        json!({"metadata": meta(), "spec": {"hard": {"pods": "1"},
            "scopeSelector": {"matchExpressions": [{"scopeName": "Terminating", "operator": "In", "values": ["x"]},
                {"scopeName": "Nope", "operator": "Exists"}]}}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.scopeSelector.matchExpressions.operator: Invalid value: \"In\": must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            "spec.scopeSelector.matchExpressions.scopeName: Invalid value: \"Nope\": unsupported scope",
        ]
    );
    let old =
        json!({"metadata": meta(), "spec": {"hard": {"pods": "1"}, "scopes": ["Terminating"]}});
    let new =
        json!({"metadata": meta(), "spec": {"hard": {"pods": "1"}, "scopes": ["NotTerminating"]}});
    assert_eq!(
        errs("", "resourcequotas", new, Some(old)),
        vec![
            "spec.scopes: Invalid value: []core.ResourceQuotaScope{\"NotTerminating\"}: field is immutable"
        ]
    );
}

#[test]
fn persistent_volumes() {
    let e = errs(
        "",
        "persistentvolumes",
        json!({"metadata": {"name": "pv"}, "spec": {}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.accessModes: Required value",
            "spec.capacity: Required value",
            "spec.capacity: Unsupported value: core.ResourceList(nil): supported values: \"storage\"",
            "spec: Required value: must specify a volume type",
        ]
    );
    let e = errs(
        "",
        "persistentvolumes",
        json!({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "0"}, "accessModes": ["Foo", "ReadWriteOncePod", "ReadWriteOnce"],
            "local": {"path": "/a/../b"}, "persistentVolumeReclaimPolicy": "Keep",
            "volumeMode": "Raw", "storageClassName": "Bad_Class"}}),
        None,
    );
    assert_has(
        &e,
        "spec.accessModes: Unsupported value: \"Foo\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
    );
    assert_has(
        &e,
        "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
    );
    assert_has(
        &e,
        "spec.capacity[storage]: Invalid value: \"0\": must be greater than zero",
    );
    assert_has(
        &e,
        "spec.persistentVolumeReclaimPolicy: Unsupported value: \"Keep\": supported values: \"Delete\", \"Recycle\", \"Retain\"",
    );
    assert_has(
        &e,
        "spec.local.path: Invalid value: \"/a/../b\": must not contain '..'",
    );
    assert_has(
        &e,
        "spec.nodeAffinity: Required value: Local volume requires node affinity",
    );
    assert_has(
        &e,
        "spec.volumeMode: Unsupported value: \"Raw\": supported values: \"Block\", \"Filesystem\"",
    );
    assert!(e.iter().any(|m| m.starts_with(
        "spec.storageClassName: Invalid value: \"Bad_Class\": a lowercase RFC 1123 subdomain"
    )));
    let e = errs(
        "",
        "persistentvolumes",
        json!({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
            "local": {"path": "/l"}, "nfs": {"server": "s", "path": "x"}}}),
        None,
    );
    // kube checks nfs before local.
    assert_eq!(
        e,
        vec![
            "spec.nfs.path: Invalid value: \"x\": must be an absolute path",
            "spec.local: Forbidden: may not specify more than 1 volume type",
        ]
    );
    let pv = |path: &str, mode: &str| {
        json!({"metadata": {"name": "pv", "resourceVersion": "1"}, "spec": {"capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"], "hostPath": {"path": path}, "volumeMode": mode}})
    };
    let e = errs(
        "",
        "persistentvolumes",
        pv("/b", "Block"),
        Some(pv("/a", "Filesystem")),
    );
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e[0].starts_with(
        "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n"
    ));
    assert_eq!(
        e[1],
        "volumeMode: Invalid value: \"Block\": field is immutable"
    );
    let mut v = json!({"spec": {"hostPath": {"path": "/"}}});
    apply_defaults("", "persistentvolumes", &mut v);
    assert_eq!(
        v,
        json!({"spec": {"hostPath": {"path": "/", "type": ""}, "persistentVolumeReclaimPolicy": "Retain",
            "volumeMode": "Filesystem"}, "status": {"phase": "Pending"}})
    );
}

#[test]
fn persistent_volume_claims() {
    let e = errs(
        "",
        "persistentvolumeclaims",
        json!({"metadata": meta(), "spec": {"dataSource": {"name": "snap", "kind": "VolumeSnapshot"}}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.accessModes: Required value: at least 1 access mode is required",
            "spec.resources[storage]: Required value",
            "spec.dataSource: Invalid value: \"VolumeSnapshot\": must be 'PersistentVolumeClaim' when referencing the default apiGroup",
        ]
    );
    let pvc = |mode: &str, size: &str| json!({"metadata": meta(), "spec": {"accessModes": [mode], "resources": {"requests": {"storage": size}}}});
    assert_eq!(
        errs(
            "",
            "persistentvolumeclaims",
            pvc("ReadWriteOnce", "-1Gi"),
            None
        ),
        vec!["spec.resources[storage]: Invalid value: \"-1Gi\": must be greater than zero"]
    );
    let e = errs(
        "",
        "persistentvolumeclaims",
        pvc("ReadWriteMany", "1Gi"),
        Some(pvc("ReadWriteOnce", "1Gi")),
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].starts_with("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims\n"));
    let mut v = json!({"spec": {}});
    apply_defaults("", "persistentvolumeclaims", &mut v);
    assert_eq!(
        v,
        json!({"spec": {"volumeMode": "Filesystem"}, "status": {"phase": "Pending"}})
    );
}

#[test]
fn replication_controllers_and_pod_templates() {
    let e = errs(
        "",
        "replicationcontrollers",
        json!({"metadata": meta(), "spec": {"replicas": -1, "template": {"spec": {"containers": containers()}}}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.selector: Required value",
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
    let e = errs(
        "",
        "replicationcontrollers",
        json!({"metadata": meta(), "spec": {"selector": {"app": "b"}, "template": {"metadata": {"labels": {"app": "a"}},
            "spec": {"restartPolicy": "Never", "activeDeadlineSeconds": 5, "containers": containers()}}}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: `selector` does not match template `labels`",
            "spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\"",
            "spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicationController is not Supported",
        ]
    );
    let mut v = json!({"spec": {"template": {"metadata": {"labels": {"app": "a"}}}}});
    apply_defaults("", "replicationcontrollers", &mut v);
    assert_eq!(v["spec"]["selector"], json!({"app": "a"}));
    assert_eq!(v["metadata"]["labels"], json!({"app": "a"}));
    assert_eq!(v["spec"]["replicas"], 1);
    let e = errs(
        "",
        "podtemplates",
        json!({"metadata": {"name": "Bad", "namespace": "default"}, "template": {"spec": {"containers": containers()}}}),
        None,
    );
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].starts_with("metadata.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain")
    );
}

#[test]
fn controller_revisions() {
    assert_eq!(
        errs(
            "apps",
            "controllerrevisions",
            json!({"metadata": meta(), "revision": -1}),
            None
        ),
        vec![
            "data: Required value: data is mandatory",
            "revision: Invalid value: -1: must be greater than or equal to 0",
        ]
    );
    let e = errs(
        "apps",
        "controllerrevisions",
        json!({"metadata": meta(), "data": {"a": 2}, "revision": 1}),
        Some(json!({"metadata": meta(), "data": {"a": 1}, "revision": 1})),
    );
    assert_eq!(
        e,
        vec![
            "data: Invalid value: runtime.Unknown{TypeMeta:runtime.TypeMeta{APIVersion:\"\", Kind:\"\"}, Raw:[]uint8{0x7b, 0x22, 0x61, 0x22, 0x3a, 0x32, 0x7d}, ContentEncoding:\"\", ContentType:\"\"}: field is immutable"
        ]
    );
}

#[test]
fn endpoints() {
    let e = errs(
        "",
        "endpoints",
        json!({"metadata": meta(), "subsets": [{}, {"addresses": [{"ip": "127.0.0.1"}, {"ip": "abc", "nodeName": "N"}],
            "ports": [{"port": 80}, {"port": 0, "name": "b", "protocol": "HTTP"}]}]}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "subsets[0]: Required value: must specify `addresses` or `notReadyAddresses`",
            "subsets[1].addresses[0].ip: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)",
            "subsets[1].addresses[1].ip: Invalid value: \"abc\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "subsets[1].addresses[1].nodeName: Invalid value: \"N\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            "subsets[1].addresses[1].ip: Invalid value: \"abc\": must be a valid IP address",
            "subsets[1].ports[0].name: Required value",
            "subsets[1].ports[1].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "subsets[1].ports[1].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
        ]
    );
}

fn daemon_set(strategy: Value) -> Value {
    json!({"metadata": meta(), "spec": {"selector": {"matchLabels": {"app": "a"}}, "updateStrategy": strategy,
        "template": {"metadata": {"labels": {"app": "a"}}, "spec": {"containers": containers()}}}})
}

#[test]
fn daemon_set_strategies() {
    let e = errs(
        "apps",
        "daemonsets",
        daemon_set(json!({"rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}})),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:\"\"}: may not be set when maxUnavailable is non-zero"
        ]
    );
    let e = errs(
        "apps",
        "daemonsets",
        daemon_set(json!({"rollingUpdate": {"maxUnavailable": "120%", "maxSurge": 0}})),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"120%\"}: must not be greater than 100%"
        ]
    );
    let e = errs(
        "apps",
        "daemonsets",
        daemon_set(json!({"rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}})),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
        ]
    );
    let e = errs(
        "apps",
        "daemonsets",
        daemon_set(json!({"type": "Blue"})),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:\"Blue\", RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: \"RollingUpdate\", \"OnDelete\""
        ]
    );
    let mut no_selector = daemon_set(json!({}));
    if let Some(spec) = no_selector["spec"].as_object_mut() {
        spec.remove("selector");
    }
    assert_eq!(
        errs("apps", "daemonsets", no_selector, None),
        vec![
            "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"a\"}: `selector` does not match template `labels`"
        ]
    );
}

fn cron(schedule: &str, extra: Value) -> Value {
    let mut v = json!({"metadata": meta(), "spec": {"schedule": schedule,
        "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": containers()}}}}}});
    if let (Some(spec), Some(extra)) = (v["spec"].as_object_mut(), extra.as_object()) {
        for (k, x) in extra {
            spec.insert(k.clone(), x.clone());
        }
    }
    v
}

#[test]
fn cron_jobs() {
    assert_eq!(
        errs("batch", "cronjobs", cron("every minute", json!({})), None),
        vec![
            "spec.schedule: Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]"
        ]
    );
    assert_eq!(
        errs("batch", "cronjobs", cron("0 25 * * *", json!({})), None),
        vec![
            "spec.schedule: Invalid value: \"0 25 * * *\": end of range (25) above maximum (23): 25"
        ]
    );
    assert_eq!(
        errs(
            "batch",
            "cronjobs",
            cron("TZ=UTC 0 * * * *", json!({})),
            None
        ),
        vec![
            "spec.schedule: Invalid value: \"TZ=UTC 0 * * * *\": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
        ]
    );
    assert_eq!(
        errs(
            "batch",
            "cronjobs",
            cron("@daily", json!({"timeZone": "Mars/Olympus"})),
            None
        ),
        vec!["spec.timeZone: Invalid value: \"Mars/Olympus\": unknown time zone Mars/Olympus"]
    );
    assert_eq!(
        errs(
            "batch",
            "cronjobs",
            cron("@daily", json!({"timeZone": "Local"})),
            None
        ),
        vec![
            "spec.timeZone: Invalid value: \"Local\": timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"
        ]
    );
    assert_eq!(
        errs(
            "batch",
            "cronjobs",
            cron(
                "@daily",
                json!({"concurrencyPolicy": "Sometimes", "startingDeadlineSeconds": -1})
            ),
            None
        ),
        vec![
            "spec.startingDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
            "spec.concurrencyPolicy: Unsupported value: \"Sometimes\": supported values: \"Allow\", \"Forbid\", \"Replace\"",
        ]
    );
    let mut v = cron("@daily", json!({}));
    v["spec"]["jobTemplate"]["spec"]["template"]["spec"]
        .as_object_mut()
        .map(|s| s.remove("restartPolicy"));
    v["spec"]["jobTemplate"]["spec"]["manualSelector"] = json!(true);
    v["metadata"]["name"] = json!("a".repeat(53));
    assert_eq!(
        errs("batch", "cronjobs", v, None),
        vec![
            "spec.jobTemplate.spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\"",
            "spec.jobTemplate.spec.manualSelector: Unsupported value: true: supported values: \"nil\", \"false\"",
            "metadata.name: Invalid value: \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": must be no more than 52 characters",
        ]
    );
    // A TZ already in the stored schedule may stay.
    let old = cron("CRON_TZ=UTC 0 * * * *", json!({}));
    assert!(errs("batch", "cronjobs", old.clone(), Some(old)).is_empty());
    // Job defaults are not applied to job templates.
    let mut v = cron("@daily", json!({}));
    apply_defaults("batch", "cronjobs", &mut v);
    let js = &v["spec"]["jobTemplate"]["spec"];
    assert!(js.get("backoffLimit").is_none() && js.get("completions").is_none());
    assert_eq!(js["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(v["spec"]["concurrencyPolicy"], "Allow");
}

#[test]
fn pod_disruption_budgets() {
    let pdb =
        |spec: Value| json!({"metadata": {"name": "p", "namespace": "default"}, "spec": spec});
    assert_eq!(
        errs(
            "policy",
            "poddisruptionbudgets",
            pdb(json!({"minAvailable": 1, "maxUnavailable": "150%"})),
            None
        ),
        vec![
            "spec: Invalid value: policy.PodDisruptionBudgetSpec{MinAvailable:(*intstr.IntOrString)(0xc000000000), Selector:(*v1.LabelSelector)(nil), MaxUnavailable:(*intstr.IntOrString)(0xc000000000), UnhealthyPodEvictionPolicy:(*policy.UnhealthyPodEvictionPolicyType)(nil)}: minAvailable and maxUnavailable cannot be both set",
            "spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%",
        ]
    );
    assert_eq!(
        errs(
            "policy",
            "poddisruptionbudgets",
            pdb(json!({"minAvailable": "half", "unhealthyPodEvictionPolicy": "Never"})),
            None
        ),
        vec![
            "spec.minAvailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"half\"}: a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')",
            "spec.unhealthyPodEvictionPolicy: Unsupported value: \"Never\": supported values: \"AlwaysAllow\", \"IfHealthyBudget\"",
        ]
    );
    assert_eq!(
        errs(
            "policy",
            "poddisruptionbudgets",
            json!({"metadata": {"name": "a/b", "namespace": "default"}, "spec": {"maxUnavailable": -1}}),
            None
        ),
        vec!["spec.maxUnavailable: Invalid value: -1: must be greater than or equal to 0"]
    );
    assert_eq!(
        errs(
            "policy",
            "poddisruptionbudgets",
            json!({"metadata": {"name": "a/b", "namespace": "default"}, "spec": {}}),
            None
        ),
        vec!["metadata.name: Invalid value: \"a/b\": may not contain '/'"]
    );
}

#[test]
fn horizontal_pod_autoscalers() {
    let e = errs(
        "autoscaling",
        "horizontalpodautoscalers",
        json!({"metadata": meta(), "spec": {"maxReplicas": 0, "scaleTargetRef": {"kind": "a/b"},
            "metrics": [{"type": "Pods", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 0}}}],
            "behavior": {"scaleUp": {"selectPolicy": "Most", "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.maxReplicas: Invalid value: 0: must be greater than 0",
            "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
            "spec.scaleTargetRef.kind: Invalid value: \"a/b\": may not contain '/'",
            "spec.scaleTargetRef.name: Required value",
            "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0",
            "spec.metrics[0].pods: Required value: must populate information for the given metric source",
            "spec.behavior.scaleUp.selectPolicy: Unsupported value: \"Most\": supported values: \"Disabled\", \"Max\", \"Min\"",
            "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
            "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800",
        ]
    );
    let e = errs(
        "autoscaling",
        "horizontalpodautoscalers",
        json!({"metadata": meta(), "spec": {"minReplicas": 0, "maxReplicas": 2,
            "scaleTargetRef": {"kind": "Deployment", "name": "w"},
            "metrics": [{"type": "External", "external": {"metric": {"name": "q"}, "target": {"type": "Value", "value": "0"}}}]}}),
        None,
    );
    assert_eq!(
        e,
        vec![
            "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1",
            format!(
                "spec.metrics[0].external.target.value: Invalid value: {}: must be positive",
                q("0", "0")
            )
            .as_str(),
        ]
    );
    let mut v = json!({"spec": {"behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}});
    apply_defaults("autoscaling", "horizontalpodautoscalers", &mut v);
    assert_eq!(
        v["spec"],
        json!({"minReplicas": 1,
            "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}],
            "behavior": {
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
                    {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
                "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
                    {"type": "Percent", "value": 100, "periodSeconds": 15}]}}})
    );
}

fn csr(request: &str, extra: Value) -> Value {
    let mut v = json!({"metadata": {"name": "c", "resourceVersion": "1"}, "spec": {"request": request,
        "signerName": "example.com/signer", "usages": ["client auth"]}});
    if let Some(extra) = extra.as_object() {
        for (k, x) in extra {
            v[k] = x.clone();
        }
    }
    v
}

#[test]
fn certificate_signing_requests() {
    let g = "certificates.k8s.io";
    let r = "certificatesigningrequests";
    assert_eq!(
        errs(g, r, csr(&b64("abc"), json!({})), None),
        vec![
            "spec.request: Invalid value: []byte{0x61, 0x62, 0x63}: PEM block type must be CERTIFICATE REQUEST"
        ]
    );
    // A request whose signature does not verify.
    let pem = csr_pem();
    let (head, body) = pem.split_once('\n').unwrap_or_default();
    let mut der = base64::engine::general_purpose::STANDARD
        .decode(
            body.lines()
                .filter(|l| !l.starts_with("-----"))
                .collect::<String>(),
        )
        .unwrap_or_default();
    if let Some(last) = der.last_mut() {
        *last ^= 1;
    }
    let tampered = format!(
        "{head}\n{}\n-----END CERTIFICATE REQUEST-----\n",
        base64::engine::general_purpose::STANDARD.encode(&der)
    );
    let e = errs(g, r, csr(&b64(&tampered), json!({})), None);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(
        e[0].ends_with(": x509: ECDSA verification failure"),
        "{e:#?}"
    );
    let good = b64(&pem);
    let mut v = csr(&good, json!({}));
    v["spec"]["signerName"] = json!("signer");
    v["spec"]["usages"] = json!(["client auth", "telepathy", "client auth"]);
    v["spec"]["expirationSeconds"] = json!(60);
    v["status"] = json!({"conditions": [{"type": "Approved", "status": "False"}, {"type": "Denied", "status": "True"}]});
    assert_eq!(
        errs(g, r, v, None),
        vec![
            "spec.usages[1]: Unsupported value: \"telepathy\": supported values: \"any\", \"cert sign\", \"client auth\", \"code signing\", \"content commitment\", \"crl sign\", \"data encipherment\", \"decipher only\", \"digital signature\", \"email protection\", \"encipher only\", \"ipsec end system\", \"ipsec tunnel\", \"ipsec user\", \"key agreement\", \"key encipherment\", \"microsoft sgc\", \"netscape sgc\", \"ocsp signing\", \"s/mime\", \"server auth\", \"signing\", \"timestamping\"",
            "spec.usages[2]: Duplicate value: \"client auth\"",
            "spec.signerName: Invalid value: \"signer\": must be a fully qualified domain and path of the form 'example.com/signer-name'",
            "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)",
            "status.conditions[0].status: Unsupported value: \"False\": supported values: \"True\"",
            "status.conditions[1].type: Invalid value: \"Denied\": Approved and Denied conditions are mutually exclusive",
        ]
    );
    let mut v = csr(&good, json!({}));
    v["spec"]["signerName"] = json!("Example.com/x");
    v["spec"]["usages"] = json!([]);
    assert_eq!(
        errs(g, r, v, None),
        vec![
            "spec.usages: Required value",
            "spec.signerName: Invalid value: \"Example.com\": validating label \"Example\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
        ]
    );
    // Approval conditions may not be removed; an issued certificate may not
    // be replaced.
    let approved =
        json!({"conditions": [{"type": "Approved", "status": "True"}], "certificate": b64("x")});
    let old = csr(&good, json!({"status": approved}));
    let new = csr(&good, json!({"status": {"certificate": b64("y")}}));
    assert_eq!(
        errs(g, r, new, Some(old)),
        vec![
            "status.conditions: Forbidden: updates may not remove a condition of type \"Approved\"",
            "status.certificate: Forbidden: updates may not modify existing certificate content",
        ]
    );
    let new = csr(&good, json!({"status": {"certificate": b64("not pem")}}));
    assert_eq!(
        errs(g, r, new, Some(csr(&good, json!({})))),
        vec![
            "status.certificate: Invalid value: \"<certificate data>\": must contain at least one CERTIFICATE PEM block"
        ]
    );
}

/// A tiny deterministic generator of arbitrary JSON.
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn value(&mut self, depth: u32) -> Value {
        const KEYS: &[&str] = &[
            "metadata",
            "spec",
            "status",
            "name",
            "type",
            "limits",
            "max",
            "min",
            "default",
            "hard",
            "scopes",
            "capacity",
            "accessModes",
            "hostPath",
            "path",
            "csi",
            "local",
            "subsets",
            "addresses",
            "ports",
            "ip",
            "template",
            "selector",
            "schedule",
            "timeZone",
            "jobTemplate",
            "minAvailable",
            "maxUnavailable",
            "metrics",
            "behavior",
            "scaleUp",
            "policies",
            "request",
            "usages",
            "conditions",
            "data",
            "updateStrategy",
            "rollingUpdate",
            "resources",
            "requests",
            "storage",
            "cpu",
            "target",
            "resource",
            "value",
            "certificate",
            "scopeSelector",
            "matchExpressions",
            "nodeAffinity",
            "required",
            "iscsi",
            "iqn",
        ];
        match self.next() % 7 {
            0 => Value::Null,
            1 => json!(self.next().is_multiple_of(3)),
            2 => json!((self.next() % 2000) as i64 - 1000),
            3 => json!(
                [
                    "1",
                    "-1Gi",
                    "1.5",
                    "abc",
                    "0",
                    "*/5 * * * *",
                    "@every 1x",
                    "10%",
                    "1e3",
                    "UTC"
                ][(self.next() % 10) as usize]
            ),
            4 if depth > 0 => {
                let n = self.next() % 5;
                let mut m = serde_json::Map::new();
                for _ in 0..n {
                    let k = KEYS[(self.next() as usize) % KEYS.len()];
                    m.insert(k.to_string(), self.value(depth - 1));
                }
                Value::Object(m)
            }
            5 if depth > 0 => {
                let n = self.next() % 3;
                Value::Array((0..n).map(|_| self.value(depth - 1)).collect())
            }
            _ => json!("x"),
        }
    }
}

#[test]
fn arbitrary_json_never_panics() {
    let kinds = [
        ("", "limitranges"),
        ("", "resourcequotas"),
        ("", "podtemplates"),
        ("", "replicationcontrollers"),
        ("", "persistentvolumes"),
        ("", "persistentvolumeclaims"),
        ("", "endpoints"),
        ("apps", "controllerrevisions"),
        ("apps", "daemonsets"),
        ("batch", "cronjobs"),
        ("policy", "poddisruptionbudgets"),
        ("autoscaling", "horizontalpodautoscalers"),
        ("certificates.k8s.io", "certificatesigningrequests"),
    ];
    let mut g = Gen(7);
    for _ in 0..300 {
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
