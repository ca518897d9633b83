//! Tests for the protobuf decoder. Bodies are produced with the prost types of
//! `k8s-pb` (an independent encoding of the Kubernetes protos), wrapped in the
//! `k8s\0` + `runtime.Unknown` envelope, and compared with kube's JSON form.

use super::{Card, MAX_DEPTH, ProtobufError, Ty, decode, schema};
use k8s_pb::api::{apps, autoscaling, coordination, core, events, policy};
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::{RawExtension, TypeMeta, Unknown};
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use prost::Message;
use serde_json::{Value, json};
use std::collections::BTreeMap;

fn envelope_raw(api_version: &str, kind: &str, raw: Vec<u8>) -> Vec<u8> {
    let unk = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(raw),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    let mut out = b"k8s\0".to_vec();
    out.extend(unk.encode_to_vec());
    out
}

fn envelope(api_version: &str, kind: &str, msg: &impl Message) -> Vec<u8> {
    envelope_raw(api_version, kind, msg.encode_to_vec())
}

fn s(v: &str) -> Option<String> {
    Some(v.to_owned())
}

/// ObjectMeta the way Go's gogo encoder writes it: every non-pointer string
/// and integer field present, even when empty, and an empty (zero)
/// creationTimestamp.
fn go_meta(name: &str, namespace: &str) -> meta::ObjectMeta {
    meta::ObjectMeta {
        name: s(name),
        generate_name: s(""),
        namespace: s(namespace),
        self_link: s(""),
        uid: s(""),
        resource_version: s(""),
        generation: Some(0),
        creation_timestamp: Some(meta::Time::default()),
        ..Default::default()
    }
}

fn quantity(v: &str) -> Quantity {
    Quantity { string: s(v) }
}

fn int_or_str_int(v: i32) -> IntOrString {
    IntOrString {
        r#type: Some(0),
        int_val: Some(v),
        str_val: s(""),
    }
}

fn int_or_str_str(v: &str) -> IntOrString {
    IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(v),
    }
}

/// Removes `null` members (k8s-openapi models a null time as an absent one).
fn strip_nulls(v: &mut Value) {
    match v {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        Value::Array(list) => list.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

/// Round-trips `value` through a k8s-openapi type: any field name the typed
/// model does not know would be lost, so equality proves the names are right.
fn assert_openapi_roundtrip<T>(value: &Value)
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut value = value.clone();
    strip_nulls(&mut value);
    let value = &value;
    let typed: T = match serde_json::from_value(value.clone()) {
        Ok(t) => t,
        Err(e) => panic!("k8s-openapi rejected {value}: {e}"),
    };
    let back = serde_json::to_value(&typed).unwrap_or(Value::Null);
    assert_eq!(&back, value, "k8s-openapi round-trip changed the JSON");
}

#[test]
fn schema_tables_are_consistent() {
    let n = schema::MESSAGES.len();
    for (i, m) in schema::MESSAGES.iter().enumerate() {
        // Go struct order, so tags need not ascend; they must be unique.
        let mut tags: Vec<u32> = m.fields.iter().map(|f| f.tag).collect();
        tags.sort_unstable();
        tags.dedup();
        assert_eq!(tags.len(), m.fields.len(), "message {i}: duplicate tags");
        for f in m.fields {
            if let Ty::Msg(idx) = f.ty {
                assert!(usize::from(idx) < n, "message {i}: bad index");
            }
            assert!(f.inline || !f.name.is_empty());
            assert!(!f.inline || matches!((f.ty, f.card), (Ty::Msg(_), Card::One)));
        }
    }
    assert!(schema::KINDS.iter().all(|k| usize::from(*k) < n));
    for w in schema::KINDS.windows(2) {
        let name = |i: u16| schema::MESSAGES[usize::from(i)].name;
        assert!(name(w[0]) < name(w[1]), "KINDS not sorted by name");
    }
    assert!(usize::from(schema::DELETE_OPTIONS) < n);
}

#[test]
fn configmap_with_data_and_binary_data() {
    let cm = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            labels: BTreeMap::from([("app".into(), "web".into())]),
            ..go_meta("x", "default")
        }),
        immutable: None,
        data: BTreeMap::from([("a".into(), "b".into()), ("empty".into(), String::new())]),
        binary_data: BTreeMap::from([("bin".into(), vec![0u8, 1, 2, 255])]),
    };
    let got = decode(&envelope("v1", "ConfigMap", &cm)).unwrap_or(Value::Null);
    let want = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "x",
            "namespace": "default",
            "labels": {"app": "web"},
            "creationTimestamp": null
        },
        "data": {"a": "b", "empty": ""},
        "binaryData": {"bin": "AAEC/w=="}
    });
    assert_eq!(got, want);
    assert_openapi_roundtrip::<k8s_openapi::api::core::v1::ConfigMap>(&got);
}

#[test]
fn configmap_immutable_false_is_kept() {
    let cm = core::v1::ConfigMap {
        metadata: Some(go_meta("x", "")),
        immutable: Some(false),
        ..Default::default()
    };
    let got = decode(&envelope("v1", "ConfigMap", &cm)).unwrap_or(Value::Null);
    assert_eq!(got["immutable"], json!(false));
    assert!(got["metadata"].get("namespace").is_none());
}

#[test]
fn namespace() {
    let ns = core::v1::Namespace {
        metadata: Some(go_meta("team-a", "")),
        spec: Some(core::v1::NamespaceSpec::default()),
        status: Some(core::v1::NamespaceStatus {
            phase: s(""),
            ..Default::default()
        }),
    };
    let got = decode(&envelope("v1", "Namespace", &ns)).unwrap_or(Value::Null);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": "team-a", "creationTimestamp": null},
            "spec": {},
            "status": {}
        })
    );
    assert_openapi_roundtrip::<k8s_openapi::api::core::v1::Namespace>(&got);
}

fn web_container() -> core::v1::Container {
    core::v1::Container {
        name: s("nginx"),
        image: s("nginx:1.27"),
        ports: vec![core::v1::ContainerPort {
            name: s(""),
            host_port: Some(0),
            container_port: Some(80),
            protocol: s("TCP"),
            host_ip: s(""),
        }],
        resources: Some(core::v1::ResourceRequirements {
            limits: BTreeMap::from([("memory".into(), quantity("128Mi"))]),
            requests: BTreeMap::from([
                ("cpu".into(), quantity("100m")),
                ("memory".into(), quantity("0")),
            ]),
            claims: vec![],
        }),
        working_dir: s(""),
        termination_message_path: s("/dev/termination-log"),
        termination_message_policy: s("File"),
        image_pull_policy: s("IfNotPresent"),
        stdin: Some(false),
        stdin_once: Some(false),
        tty: Some(false),
        ..Default::default()
    }
}

#[test]
fn deployment() {
    let dep = apps::v1::Deployment {
        metadata: Some(meta::ObjectMeta {
            creation_timestamp: Some(meta::Time {
                seconds: Some(1_700_000_000),
                nanos: Some(123),
            }),
            labels: BTreeMap::from([("app".into(), "web".into())]),
            ..go_meta("web", "default")
        }),
        spec: Some(apps::v1::DeploymentSpec {
            replicas: Some(0),
            selector: Some(meta::LabelSelector {
                match_labels: BTreeMap::from([("app".into(), "web".into())]),
                match_expressions: vec![],
            }),
            template: Some(core::v1::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: BTreeMap::from([("app".into(), "web".into())]),
                    ..go_meta("", "")
                }),
                spec: Some(core::v1::PodSpec {
                    containers: vec![web_container()],
                    restart_policy: s("Always"),
                    termination_grace_period_seconds: Some(30),
                    dns_policy: s("ClusterFirst"),
                    service_account_name: s(""),
                    host_network: Some(false),
                    scheduler_name: s("default-scheduler"),
                    security_context: Some(core::v1::PodSecurityContext::default()),
                    ..Default::default()
                }),
            }),
            strategy: Some(apps::v1::DeploymentStrategy {
                r#type: s("RollingUpdate"),
                rolling_update: Some(apps::v1::RollingUpdateDeployment {
                    max_unavailable: Some(int_or_str_int(0)),
                    max_surge: Some(int_or_str_str("25%")),
                }),
            }),
            min_ready_seconds: Some(0),
            revision_history_limit: Some(10),
            paused: Some(false),
            progress_deadline_seconds: Some(600),
        }),
        status: Some(apps::v1::DeploymentStatus {
            observed_generation: Some(0),
            replicas: Some(0),
            ..Default::default()
        }),
    };
    let got = decode(&envelope("apps/v1", "Deployment", &dep)).unwrap_or(Value::Null);
    let want = json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "web",
            "namespace": "default",
            "creationTimestamp": "2023-11-14T22:13:20Z",
            "labels": {"app": "web"}
        },
        "spec": {
            "replicas": 0,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}, "creationTimestamp": null},
                "spec": {
                    "containers": [{
                        "name": "nginx",
                        "image": "nginx:1.27",
                        "ports": [{"containerPort": 80, "protocol": "TCP"}],
                        "resources": {
                            "limits": {"memory": "128Mi"},
                            "requests": {"cpu": "100m", "memory": "0"}
                        },
                        "terminationMessagePath": "/dev/termination-log",
                        "terminationMessagePolicy": "File",
                        "imagePullPolicy": "IfNotPresent"
                    }],
                    "restartPolicy": "Always",
                    "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst",
                    "schedulerName": "default-scheduler",
                    "securityContext": {}
                }
            },
            "strategy": {
                "type": "RollingUpdate",
                "rollingUpdate": {"maxUnavailable": 0, "maxSurge": "25%"}
            },
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600
        },
        "status": {}
    });
    assert_eq!(got, want);
    assert_openapi_roundtrip::<k8s_openapi::api::apps::v1::Deployment>(&got);
}

#[test]
fn service_target_port_int_and_string() {
    let svc = core::v1::Service {
        metadata: Some(go_meta("web", "default")),
        spec: Some(core::v1::ServiceSpec {
            ports: vec![
                core::v1::ServicePort {
                    name: s("http"),
                    protocol: s("TCP"),
                    port: Some(80),
                    target_port: Some(int_or_str_int(8080)),
                    node_port: Some(0),
                    ..Default::default()
                },
                core::v1::ServicePort {
                    name: s("named"),
                    protocol: s("TCP"),
                    port: Some(81),
                    target_port: Some(int_or_str_str("metrics")),
                    node_port: Some(0),
                    ..Default::default()
                },
                core::v1::ServicePort {
                    name: s("unset"),
                    protocol: s("TCP"),
                    port: Some(82),
                    target_port: Some(int_or_str_int(0)),
                    node_port: Some(0),
                    ..Default::default()
                },
            ],
            selector: BTreeMap::from([("app".into(), "web".into())]),
            cluster_ip: s(""),
            r#type: s("ClusterIP"),
            ..Default::default()
        }),
        status: Some(core::v1::ServiceStatus {
            load_balancer: Some(core::v1::LoadBalancerStatus::default()),
            conditions: vec![],
        }),
    };
    let got = decode(&envelope("v1", "Service", &svc)).unwrap_or(Value::Null);
    assert_eq!(
        got["spec"],
        json!({
            "ports": [
                {"name": "http", "protocol": "TCP", "port": 80, "targetPort": 8080},
                {"name": "named", "protocol": "TCP", "port": 81, "targetPort": "metrics"},
                {"name": "unset", "protocol": "TCP", "port": 82}
            ],
            "selector": {"app": "web"},
            "type": "ClusterIP"
        })
    );
    assert_eq!(got["status"], json!({"loadBalancer": {}}));
    assert_openapi_roundtrip::<k8s_openapi::api::core::v1::Service>(&got);
}

#[test]
fn secret_bytes_are_base64() {
    let secret = core::v1::Secret {
        metadata: Some(go_meta("creds", "default")),
        immutable: None,
        data: BTreeMap::from([
            ("password".into(), b"hunter2".to_vec()),
            ("empty".into(), vec![]),
        ]),
        string_data: BTreeMap::new(),
        r#type: s("Opaque"),
    };
    let got = decode(&envelope("v1", "Secret", &secret)).unwrap_or(Value::Null);
    assert_eq!(
        got,
        json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default", "creationTimestamp": null},
            "data": {"password": "aHVudGVyMg==", "empty": ""},
            "type": "Opaque"
        })
    );
    assert_openapi_roundtrip::<k8s_openapi::api::core::v1::Secret>(&got);
}

#[test]
fn delete_options_under_any_api_version() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("1234"),
            resource_version: None,
        }),
        orphan_dependents: None,
        propagation_policy: s("Background"),
        dry_run: vec!["All".into()],
        ignore_store_read_error_with_cluster_breaking_potential: None,
    };
    for api_version in ["meta.k8s.io/v1", "v1", "apps/v1"] {
        let got = decode(&envelope(api_version, "DeleteOptions", &opts)).unwrap_or(Value::Null);
        assert_eq!(
            got,
            json!({
                "apiVersion": api_version,
                "kind": "DeleteOptions",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "1234"},
                "propagationPolicy": "Background",
                "dryRun": ["All"]
            })
        );
    }
    let got = decode(&envelope(
        "v1",
        "DeleteOptions",
        &meta::DeleteOptions::default(),
    ));
    assert_eq!(
        got.unwrap_or(Value::Null),
        json!({"apiVersion": "v1", "kind": "DeleteOptions"})
    );
}

#[test]
fn scale_subresource() {
    let scale = autoscaling::v1::Scale {
        metadata: Some(go_meta("web", "default")),
        spec: Some(autoscaling::v1::ScaleSpec { replicas: Some(3) }),
        status: Some(autoscaling::v1::ScaleStatus {
            replicas: Some(0),
            selector: s(""),
        }),
    };
    let got = decode(&envelope("autoscaling/v1", "Scale", &scale)).unwrap_or(Value::Null);
    assert_eq!(got["spec"], json!({"replicas": 3}));
    // `replicas` is required in ScaleStatus, so its zero is kept.
    assert_eq!(got["status"], json!({"replicas": 0}));
    assert_openapi_roundtrip::<k8s_openapi::api::autoscaling::v1::Scale>(&got);
}

#[test]
fn eviction_embeds_delete_options() {
    let ev = policy::v1::Eviction {
        metadata: Some(go_meta("pod-1", "default")),
        delete_options: Some(meta::DeleteOptions {
            grace_period_seconds: Some(5),
            ..Default::default()
        }),
    };
    let got = decode(&envelope("policy/v1", "Eviction", &ev)).unwrap_or(Value::Null);
    assert_eq!(got["deleteOptions"], json!({"gracePeriodSeconds": 5}));
}

#[test]
fn lease_micro_time() {
    let lease = coordination::v1::Lease {
        metadata: Some(go_meta("leader", "kube-system")),
        spec: Some(coordination::v1::LeaseSpec {
            holder_identity: s("node-1"),
            lease_duration_seconds: Some(15),
            acquire_time: Some(meta::MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(123_456_789),
            }),
            renew_time: Some(meta::MicroTime {
                seconds: Some(-1),
                nanos: Some(500_000_000),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let got = decode(&envelope("coordination.k8s.io/v1", "Lease", &lease)).unwrap_or(Value::Null);
    assert_eq!(
        got["spec"],
        json!({
            "holderIdentity": "node-1",
            "leaseDurationSeconds": 15,
            "acquireTime": "2023-11-14T22:13:20.123456Z",
            "renewTime": "1969-12-31T23:59:59.500000Z",
            "leaseTransitions": 0
        })
    );
    assert_openapi_roundtrip::<k8s_openapi::api::coordination::v1::Lease>(&got);
}

#[test]
fn events_v1_event() {
    let ev = events::v1::Event {
        metadata: Some(go_meta("e1", "default")),
        event_time: Some(meta::MicroTime {
            seconds: Some(0),
            nanos: Some(0),
        }),
        series: Some(events::v1::EventSeries {
            count: Some(2),
            last_observed_time: Some(meta::MicroTime {
                seconds: Some(86_400 * 365),
                nanos: Some(1_000),
            }),
        }),
        reporting_controller: s("kubelet"),
        reporting_instance: s("node-1"),
        action: s("Pulling"),
        reason: s("Pulling"),
        regarding: Some(core::v1::ObjectReference {
            kind: s("Pod"),
            name: s("p"),
            namespace: s("default"),
            ..Default::default()
        }),
        note: s("pulling image"),
        r#type: s("Normal"),
        deprecated_count: Some(0),
        deprecated_first_timestamp: Some(meta::Time::default()),
        ..Default::default()
    };
    let got = decode(&envelope("events.k8s.io/v1", "Event", &ev)).unwrap_or(Value::Null);
    assert_eq!(got["eventTime"], json!("1970-01-01T00:00:00.000000Z"));
    assert_eq!(
        got["series"],
        json!({"count": 2, "lastObservedTime": "1971-01-01T00:00:00.000001Z"})
    );
    assert_eq!(got["deprecatedFirstTimestamp"], Value::Null);
    assert!(got.get("deprecatedCount").is_none());
    assert_openapi_roundtrip::<k8s_openapi::api::events::v1::Event>(&got);
}

#[test]
fn pod_inline_structs_and_probes() {
    let pod = core::v1::Pod {
        metadata: Some(go_meta("p", "default")),
        spec: Some(core::v1::PodSpec {
            volumes: vec![
                core::v1::Volume {
                    name: s("scratch"),
                    volume_source: Some(core::v1::VolumeSource {
                        empty_dir: Some(core::v1::EmptyDirVolumeSource {
                            medium: s(""),
                            size_limit: None,
                        }),
                        ..Default::default()
                    }),
                },
                core::v1::Volume {
                    name: s("cfg"),
                    volume_source: Some(core::v1::VolumeSource {
                        config_map: Some(core::v1::ConfigMapVolumeSource {
                            local_object_reference: Some(core::v1::LocalObjectReference {
                                name: s("settings"),
                            }),
                            items: vec![],
                            default_mode: Some(0o644),
                            optional: Some(false),
                        }),
                        ..Default::default()
                    }),
                },
            ],
            containers: vec![core::v1::Container {
                liveness_probe: Some(core::v1::Probe {
                    handler: Some(core::v1::ProbeHandler {
                        http_get: Some(core::v1::HttpGetAction {
                            path: s("/healthz"),
                            port: Some(int_or_str_str("http")),
                            host: s(""),
                            scheme: s("HTTP"),
                            http_headers: vec![],
                        }),
                        ..Default::default()
                    }),
                    initial_delay_seconds: Some(0),
                    timeout_seconds: Some(1),
                    period_seconds: Some(10),
                    success_threshold: Some(1),
                    failure_threshold: Some(3),
                    termination_grace_period_seconds: None,
                }),
                env: vec![core::v1::EnvVar {
                    name: s("FROM_CM"),
                    value: s(""),
                    value_from: Some(core::v1::EnvVarSource {
                        config_map_key_ref: Some(core::v1::ConfigMapKeySelector {
                            local_object_reference: Some(core::v1::LocalObjectReference {
                                name: s("settings"),
                            }),
                            key: s("k"),
                            optional: None,
                        }),
                        ..Default::default()
                    }),
                }],
                security_context: Some(core::v1::SecurityContext {
                    run_as_user: Some(0),
                    privileged: Some(false),
                    ..Default::default()
                }),
                ..web_container()
            }],
            automount_service_account_token: Some(false),
            host_pid: Some(false),
            ..Default::default()
        }),
        status: Some(core::v1::PodStatus::default()),
    };
    let got = decode(&envelope("v1", "Pod", &pod)).unwrap_or(Value::Null);
    let spec = &got["spec"];
    assert_eq!(
        spec["volumes"],
        json!([
            {"name": "scratch", "emptyDir": {}},
            {"name": "cfg", "configMap": {"name": "settings", "defaultMode": 420, "optional": false}}
        ])
    );
    let c = &spec["containers"][0];
    assert_eq!(
        c["livenessProbe"],
        json!({
            "httpGet": {"path": "/healthz", "port": "http", "scheme": "HTTP"},
            "timeoutSeconds": 1,
            "periodSeconds": 10,
            "successThreshold": 1,
            "failureThreshold": 3
        })
    );
    assert_eq!(
        c["env"],
        json!([{"name": "FROM_CM", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "k"}}}])
    );
    assert_eq!(
        c["securityContext"],
        json!({"runAsUser": 0, "privileged": false})
    );
    assert_eq!(spec["automountServiceAccountToken"], json!(false));
    assert!(spec.get("hostPID").is_none());
    assert_openapi_roundtrip::<k8s_openapi::api::core::v1::Pod>(&got);
}

#[test]
fn controller_revision_raw_extension_and_managed_fields() {
    let rev = apps::v1::ControllerRevision {
        metadata: Some(meta::ObjectMeta {
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: s("kubectl"),
                operation: s("Update"),
                api_version: s("apps/v1"),
                time: Some(meta::Time {
                    seconds: Some(0),
                    nanos: Some(0),
                }),
                fields_type: s("FieldsV1"),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:data":{}}"#.to_vec()),
                }),
                subresource: s(""),
            }],
            ..go_meta("rev-1", "default")
        }),
        data: Some(RawExtension {
            raw: Some(br#"{"spec":{"replicas":2}}"#.to_vec()),
        }),
        revision: Some(1),
    };
    let got = decode(&envelope("apps/v1", "ControllerRevision", &rev)).unwrap_or(Value::Null);
    assert_eq!(got["data"], json!({"spec": {"replicas": 2}}));
    assert_eq!(got["revision"], json!(1));
    assert_eq!(
        got["metadata"]["managedFields"],
        json!([{
            "manager": "kubectl",
            "operation": "Update",
            "apiVersion": "apps/v1",
            "time": "1970-01-01T00:00:00Z",
            "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {}}
        }])
    );
    assert_openapi_roundtrip::<k8s_openapi::api::apps::v1::ControllerRevision>(&got);
}

#[test]
fn raw_extension_may_hold_a_protobuf_object() {
    let inner = envelope("v1", "ConfigMap", &core::v1::ConfigMap::default());
    let rev = apps::v1::ControllerRevision {
        data: Some(RawExtension { raw: Some(inner) }),
        ..Default::default()
    };
    let got = decode(&envelope("apps/v1", "ControllerRevision", &rev)).unwrap_or(Value::Null);
    assert_eq!(
        got["data"],
        json!({"apiVersion": "v1", "kind": "ConfigMap"})
    );
}

#[test]
fn repeated_message_fields_merge_and_packed_ints_decode() {
    // Two occurrences of `metadata` merge, as protobuf requires.
    let a = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            name: s("a"),
            ..Default::default()
        }),
        ..Default::default()
    };
    let b = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            namespace: s("ns"),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut raw = a.encode_to_vec();
    raw.extend(b.encode_to_vec());
    let got = decode(&envelope_raw("v1", "ConfigMap", raw)).unwrap_or(Value::Null);
    assert_eq!(got["metadata"], json!({"name": "a", "namespace": "ns"}));

    // PodSecurityContext.supplementalGroups (repeated int64, field 4) sent
    // both unpacked (the proto2 default, as Go writes it) and packed.
    let psc = core::v1::PodSecurityContext {
        supplemental_groups: vec![1, 2, 3],
        ..Default::default()
    };
    let unpacked = psc.encode_to_vec();
    // Field 4, wire type 2, length 3, varints 1 2 3.
    let packed = vec![0x22, 3, 1, 2, 3];
    for bytes in [unpacked, packed] {
        let spec = core::v1::PodSpec::default().encode_to_vec();
        let mut raw = spec;
        // PodSpec.securityContext is field 14.
        raw.push(14 << 3 | 2);
        raw.push(u8::try_from(bytes.len()).unwrap_or(0));
        raw.extend(&bytes);
        let mut pod = vec![2 << 3 | 2, u8::try_from(raw.len()).unwrap_or(0)];
        pod.extend(raw);
        let got = decode(&envelope_raw("v1", "Pod", pod)).unwrap_or(Value::Null);
        assert_eq!(
            got["spec"]["securityContext"]["supplementalGroups"],
            json!([1, 2, 3])
        );
    }
}

#[test]
fn unknown_fields_are_skipped() {
    let mut raw = core::v1::ConfigMap {
        data: BTreeMap::from([("a".into(), "b".into())]),
        ..Default::default()
    }
    .encode_to_vec();
    // field 99 varint, field 98 fixed64, field 97 fixed32, field 96 bytes,
    // field 95 group containing a varint.
    raw.extend([0x98, 0x06, 0x01]);
    raw.extend([0x91, 0x06, 1, 2, 3, 4, 5, 6, 7, 8]);
    raw.extend([0x8d, 0x06, 1, 2, 3, 4]);
    raw.extend([0x82, 0x06, 2, b'h', b'i']);
    raw.extend([0xfb, 0x05, 0x08, 0x01, 0xfc, 0x05]);
    let got = decode(&envelope_raw("v1", "ConfigMap", raw)).unwrap_or(Value::Null);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "b"}})
    );
}

fn err(body: &[u8]) -> ProtobufError {
    match decode(body) {
        Ok(v) => panic!("expected an error, got {v}"),
        Err(e) => e,
    }
}

#[test]
fn envelope_errors() {
    assert!(matches!(err(b""), ProtobufError::Empty));
    assert!(matches!(err(b"k8s\0"), ProtobufError::Empty));
    assert!(matches!(
        err(b"{\"kind\":\"Pod\"}"),
        ProtobufError::NotProtobuf
    ));
    assert!(matches!(err(b"k8s"), ProtobufError::NotProtobuf));
    assert!(matches!(err(b"k8s\x01abc"), ProtobufError::NotProtobuf));
    let e = err(&envelope("v1", "", &core::v1::ConfigMap::default()));
    assert!(matches!(e, ProtobufError::MissingKind));
    let e = err(&envelope("", "ConfigMap", &core::v1::ConfigMap::default()));
    assert!(matches!(e, ProtobufError::MissingVersion { .. }));
    let e = err(&envelope(
        "v1",
        "Frobnicator",
        &core::v1::ConfigMap::default(),
    ));
    assert_eq!(
        e.to_string(),
        "no kind \"Frobnicator\" is registered for version \"v1\" in the protobuf decoder; \
         send the body as application/json instead"
    );
    let e = err(&envelope(
        "apps/v2",
        "Deployment",
        &core::v1::ConfigMap::default(),
    ));
    assert!(matches!(e, ProtobufError::UnknownKind { .. }));
}

#[test]
fn malformed_payload_errors() {
    // Wrong wire type for ConfigMap.immutable (bool sent as bytes).
    let e = err(&envelope_raw("v1", "ConfigMap", vec![0x22, 0x01, 0x00]));
    assert_eq!(
        e.to_string(),
        "unable to decode protobuf body at immutable: proto: wrong wireType = 2 for field immutable"
    );
    // Truncated nested field reports a path.
    let dep = apps::v1::Deployment {
        spec: Some(apps::v1::DeploymentSpec {
            template: Some(core::v1::PodTemplateSpec {
                spec: Some(core::v1::PodSpec {
                    containers: vec![web_container(), web_container()],
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let mut raw = dep.encode_to_vec();
    // Corrupt the length of the last container's last field so it overruns.
    let good = decode(&envelope_raw("apps/v1", "Deployment", raw.clone()));
    assert!(good.is_ok());
    raw.push(0x0a);
    raw.push(0x7f);
    assert!(matches!(
        err(&envelope_raw("apps/v1", "Deployment", raw)),
        ProtobufError::Malformed { .. }
    ));
    // Varint longer than 10 bytes.
    let e = err(&envelope_raw(
        "v1",
        "ConfigMap",
        vec![
            0x20, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
        ],
    ));
    assert!(e.to_string().contains("integer overflow"), "{e}");
    // Tag 0 and illegal wire types.
    assert!(matches!(
        err(&envelope_raw("v1", "ConfigMap", vec![0x00, 0x00])),
        ProtobufError::Malformed { .. }
    ));
    assert!(matches!(
        err(&envelope_raw("v1", "ConfigMap", vec![0x0f])),
        ProtobufError::Malformed { .. }
    ));
    // A stray end-group.
    assert!(matches!(
        err(&envelope_raw("v1", "ConfigMap", vec![0x0c])),
        ProtobufError::Malformed { .. }
    ));
    // Invalid JSON inside a RawExtension.
    let rev = apps::v1::ControllerRevision {
        data: Some(RawExtension {
            raw: Some(b"{not json".to_vec()),
        }),
        ..Default::default()
    };
    let e = err(&envelope("apps/v1", "ControllerRevision", &rev));
    assert!(
        e.to_string()
            .starts_with("unable to decode protobuf body at data: embedded JSON is invalid"),
        "{e}"
    );
    // Impossible IntOrString type.
    let svc = core::v1::Service {
        spec: Some(core::v1::ServiceSpec {
            ports: vec![core::v1::ServicePort {
                target_port: Some(IntOrString {
                    r#type: Some(7),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let e = err(&envelope("v1", "Service", &svc));
    assert_eq!(
        e.to_string(),
        "unable to decode protobuf body at spec.ports[0].targetPort: impossible IntOrString.Type 7"
    );
    // Times outside Go's JSON range.
    let cm = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            creation_timestamp: Some(meta::Time {
                seconds: Some(i64::MAX),
                nanos: None,
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(matches!(
        err(&envelope("v1", "ConfigMap", &cm)),
        ProtobufError::Malformed { .. }
    ));
}

#[test]
fn go_zero_time_is_null() {
    let cm = core::v1::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            creation_timestamp: Some(meta::Time {
                seconds: Some(super::GO_ZERO_TIME_SECONDS),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let got = decode(&envelope("v1", "ConfigMap", &cm)).unwrap_or(Value::Null);
    assert_eq!(got["metadata"], json!({"creationTimestamp": null}));
}

#[test]
fn nested_envelopes_are_depth_limited() {
    let mut body = envelope("v1", "ConfigMap", &core::v1::ConfigMap::default());
    for _ in 0..(MAX_DEPTH + 5) {
        let rev = apps::v1::ControllerRevision {
            data: Some(RawExtension { raw: Some(body) }),
            ..Default::default()
        };
        body = envelope("apps/v1", "ControllerRevision", &rev);
    }
    assert!(matches!(err(&body), ProtobufError::TooDeep));
    // Deeply nested groups in an unknown field.
    let mut raw = [0xfb, 0x05].repeat(MAX_DEPTH + 5);
    raw.extend([0xfc, 0x05].repeat(MAX_DEPTH + 5));
    assert!(decode(&envelope_raw("v1", "ConfigMap", raw)).is_err());
}

/// Every prefix of a valid body, and many randomly mutated copies, must decode
/// or fail cleanly (no panic).
#[test]
fn truncation_and_mutation_never_panic() {
    let pod = core::v1::Pod {
        metadata: Some(go_meta("p", "default")),
        spec: Some(core::v1::PodSpec {
            containers: vec![web_container()],
            ..Default::default()
        }),
        status: None,
    };
    let bodies = [
        envelope("v1", "Pod", &pod),
        envelope(
            "apps/v1",
            "ControllerRevision",
            &apps::v1::ControllerRevision {
                data: Some(RawExtension {
                    raw: Some(envelope("v1", "Pod", &pod)),
                }),
                ..Default::default()
            },
        ),
    ];
    for body in &bodies {
        for n in 0..body.len() {
            let _ = decode(&body[..n]);
        }
    }
    // xorshift64*: deterministic pseudo-random mutations.
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    for i in 0..20_000 {
        let mut body = bodies[i % bodies.len()].clone();
        let edits = 1 + next() % 4;
        for _ in 0..edits {
            let len = body.len() as u64;
            let pos = usize::try_from(4 + next() % (len - 4)).unwrap_or(4);
            match next() % 4 {
                0 => body[pos] = (next() & 0xff) as u8,
                1 => body[pos] ^= 1 << (next() % 8),
                2 => body.truncate(pos),
                _ => body.insert(pos, (next() & 0xff) as u8),
            }
            if body.len() <= 4 {
                break;
            }
        }
        let _ = decode(&body);
    }
    for _ in 0..5_000 {
        let len = usize::try_from(next() % 64).unwrap_or(0);
        let mut body = b"k8s\0".to_vec();
        body.extend((0..len).map(|_| (next() & 0xff) as u8));
        let _ = decode(&body);
    }
}

#[test]
fn kinds_found_by_api_version_and_kind() {
    let name = |av: &str, k: &str| {
        super::kind_message(av, k).map(|i| schema::MESSAGES[usize::from(i)].name)
    };
    assert_eq!(name("v1", "Pod"), Some("io.k8s.api.core.v1.Pod"));
    assert_eq!(
        name("apps/v1", "Deployment"),
        Some("io.k8s.api.apps.v1.Deployment")
    );
    assert_eq!(
        name("rbac.authorization.k8s.io/v1", "Role"),
        Some("io.k8s.api.rbac.v1.Role")
    );
    assert_eq!(
        name("apiregistration.k8s.io/v1", "APIService"),
        Some("io.k8s.kube-aggregator.pkg.apis.apiregistration.v1.APIService")
    );
    assert_eq!(
        name("autoscaling/v1", "Scale"),
        Some("io.k8s.api.autoscaling.v1.Scale")
    );
    // Types that are not top-level kinds, other versions and custom groups have none.
    assert_eq!(name("v1", "PodSpec"), None);
    assert_eq!(name("apps/v2", "Deployment"), None);
    assert_eq!(name("apps.example.com/v1", "Deployment"), None);
    assert_eq!(name("rbac.example.com/v1", "Role"), None);
}
