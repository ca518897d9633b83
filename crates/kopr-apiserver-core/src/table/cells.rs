//! Row cells per printer, following kube-apiserver 1.32's internal printers
//! (always the wide form, as the server generates tables with `Wide: true`).
//! The printers added for issue 17 live in the submodules, by API area.

mod autoscaling;
mod cluster;
mod core_v1;
mod network;
mod storage;
mod workloads;

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::age::{human_duration, nanos_between, parse_time, rfc3339, since};
use super::columns::Kind;
use crate::selectors::{LabelSelector, format_label_selector, format_labels, pod_ip};

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(k))
}

fn text(v: &Value, path: &[&str]) -> String {
    get(v, path)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn int(v: &Value, path: &[&str]) -> i64 {
    get(v, path).and_then(Value::as_i64).unwrap_or(0)
}

fn arr<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    get(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

fn obj_len(v: &Value, path: &[&str]) -> usize {
    get(v, path).and_then(Value::as_object).map_or(0, Map::len)
}

/// Present and not null (a Go pointer that is set).
fn present(v: &Value, path: &[&str]) -> bool {
    get(v, path).is_some_and(|v| !v.is_null())
}

fn or_none(s: String) -> String {
    if s.is_empty() {
        "<none>".to_string()
    } else {
        s
    }
}

fn name(obj: &Value) -> String {
    text(obj, &["metadata", "name"])
}

fn age(obj: &Value, now: Timestamp) -> Value {
    json!(since(get(obj, &["metadata", "creationTimestamp"]), now))
}

/// `layoutContainerCells`: comma-joined container names and images.
fn containers(obj: &Value, spec: &[&str]) -> (String, String) {
    let mut path = spec.to_vec();
    path.push("containers");
    let list = arr(obj, &path);
    let names: Vec<String> = list.iter().map(|c| text(c, &["name"])).collect();
    let images: Vec<String> = list.iter().map(|c| text(c, &["image"])).collect();
    (names.join(","), images.join(","))
}

/// The cells of one row.
pub fn cells(kind: Kind, obj: &Value, now: Timestamp) -> Vec<Value> {
    match kind {
        Kind::Pod => pod(obj, now),
        Kind::Namespace => vec![
            json!(name(obj)),
            json!(text(obj, &["status", "phase"])),
            age(obj, now),
        ],
        Kind::ConfigMap => {
            let n = obj_len(obj, &["data"]) + obj_len(obj, &["binaryData"]);
            vec![json!(name(obj)), json!(n), age(obj, now)]
        }
        Kind::Secret => {
            // stringData is merged into data by the internal conversion.
            let mut keys: BTreeSet<&String> = BTreeSet::new();
            for field in ["data", "stringData"] {
                if let Some(m) = get(obj, &[field]).and_then(Value::as_object) {
                    keys.extend(m.keys());
                }
            }
            vec![
                json!(name(obj)),
                json!(text(obj, &["type"])),
                json!(keys.len()),
                age(obj, now),
            ]
        }
        Kind::Service => service(obj, now),
        Kind::ServiceAccount => {
            vec![
                json!(name(obj)),
                json!(arr(obj, &["secrets"]).len()),
                age(obj, now),
            ]
        }
        Kind::Node => node(obj, now),
        Kind::Event => event(obj, now),
        Kind::Deployment => {
            let (names, images) = containers(obj, &["spec", "template", "spec"]);
            let selector = match LabelSelector::from_label_selector_value(
                get(obj, &["spec", "selector"]).unwrap_or(&Value::Null),
            ) {
                Ok(s) => s.to_string(),
                Err(_) => "<invalid>".to_string(),
            };
            vec![
                json!(name(obj)),
                json!(format!(
                    "{}/{}",
                    int(obj, &["status", "readyReplicas"]),
                    desired_replicas(obj)
                )),
                json!(int(obj, &["status", "updatedReplicas"])),
                json!(int(obj, &["status", "availableReplicas"])),
                age(obj, now),
                json!(names),
                json!(images),
                json!(selector),
            ]
        }
        Kind::ReplicaSet => {
            let (names, images) = containers(obj, &["spec", "template", "spec"]);
            vec![
                json!(name(obj)),
                json!(desired_replicas(obj)),
                json!(int(obj, &["status", "replicas"])),
                json!(int(obj, &["status", "readyReplicas"])),
                age(obj, now),
                json!(names),
                json!(images),
                json!(format_label_selector(get(obj, &["spec", "selector"]))),
            ]
        }
        Kind::StatefulSet => {
            let (names, images) = containers(obj, &["spec", "template", "spec"]);
            vec![
                json!(name(obj)),
                json!(format!(
                    "{}/{}",
                    int(obj, &["status", "readyReplicas"]),
                    desired_replicas(obj)
                )),
                age(obj, now),
                json!(names),
                json!(images),
            ]
        }
        Kind::Job => job(obj, now),
        Kind::Lease => vec![
            json!(name(obj)),
            json!(text(obj, &["spec", "holderIdentity"])),
            age(obj, now),
        ],
        Kind::RoleBinding | Kind::ClusterRoleBinding => role_binding(obj, now),
        Kind::WebhookConfiguration => {
            vec![
                json!(name(obj)),
                json!(arr(obj, &["webhooks"]).len()),
                age(obj, now),
            ]
        }
        Kind::AdmissionPolicy => {
            let param_kind = match get(obj, &["spec", "paramKind"]) {
                Some(p) if p.is_object() => {
                    format!("{}/{}", text(p, &["apiVersion"]), text(p, &["kind"]))
                }
                _ => "<unset>".to_string(),
            };
            vec![
                json!(name(obj)),
                json!(arr(obj, &["spec", "validations"]).len()),
                json!(param_kind),
                age(obj, now),
            ]
        }
        Kind::AdmissionPolicyBinding => vec![
            json!(name(obj)),
            json!(text(obj, &["spec", "policyName"])),
            json!(param_ref(get(obj, &["spec", "paramRef"]))),
            age(obj, now),
        ],
        Kind::PodTemplate => core_v1::pod_template(obj),
        Kind::ReplicationController => core_v1::replication_controller(obj, now),
        Kind::Endpoints => core_v1::endpoints(obj, now),
        Kind::PersistentVolume => core_v1::persistent_volume(obj, now),
        Kind::PersistentVolumeClaim => core_v1::persistent_volume_claim(obj, now),
        Kind::ResourceQuota => core_v1::resource_quota(obj, now),
        Kind::ComponentStatus => core_v1::component_status(obj),
        Kind::DaemonSet => workloads::daemon_set(obj, now),
        Kind::CronJob => workloads::cron_job(obj, now),
        Kind::PodDisruptionBudget => workloads::pod_disruption_budget(obj, now),
        Kind::ControllerRevision => workloads::controller_revision(obj, now),
        Kind::HorizontalPodAutoscaler => autoscaling::horizontal_pod_autoscaler(obj, now),
        Kind::Ingress => network::ingress(obj, now),
        Kind::IngressClass => network::ingress_class(obj, now),
        Kind::NetworkPolicy => network::network_policy(obj, now),
        Kind::EndpointSlice => network::endpoint_slice(obj, now),
        Kind::StorageClass => storage::storage_class(obj, now),
        Kind::VolumeAttachment => storage::volume_attachment(obj, now),
        Kind::CsiDriver => storage::csi_driver(obj, now),
        Kind::CsiNode => storage::csi_node(obj, now),
        Kind::CsiStorageCapacity => storage::csi_storage_capacity(obj),
        Kind::CertificateSigningRequest => cluster::certificate_signing_request(obj, now),
        Kind::PriorityClass => cluster::priority_class(obj, now),
        Kind::RuntimeClass => cluster::runtime_class(obj, now),
        Kind::FlowSchema => cluster::flow_schema(obj, now),
        Kind::PriorityLevelConfiguration => cluster::priority_level(obj, now),
        Kind::ApiService => cluster::api_service(obj, now),
        Kind::Default => vec![
            json!(name(obj)),
            json!(rfc3339(get(obj, &["metadata", "creationTimestamp"]))),
        ],
    }
}

/// The order in which a list's rows are printed: storage order, except that
/// flow schemas are sorted by matching precedence, then name (kube's
/// `FlowSchemaSequence`).
pub fn list_order(kind: Kind, objects: &[Value]) -> Vec<&Value> {
    let mut rows: Vec<&Value> = objects.iter().collect();
    if kind == Kind::FlowSchema {
        rows.sort_by(|a, b| {
            cluster::matching_precedence(a)
                .cmp(&cluster::matching_precedence(b))
                .then_with(|| name(a).cmp(&name(b)))
        });
    }
    rows
}

/// A binding's `paramRef` as kubectl shows it: `namespace/name`, `*/name`
/// without a namespace, the selector, or `<unset>`.
fn param_ref(param_ref: Option<&Value>) -> String {
    let Some(p) = param_ref.filter(|p| p.is_object()) else {
        return "<unset>".to_string();
    };
    let name = text(p, &["name"]);
    let namespace = text(p, &["namespace"]);
    match get(p, &["selector"]) {
        _ if !name.is_empty() && !namespace.is_empty() => format!("{namespace}/{name}"),
        _ if !name.is_empty() => format!("*/{name}"),
        Some(selector) if selector.is_object() => go_label_selector(selector),
        _ => "<unset>".to_string(),
    }
}

/// A LabelSelector as Go's generated `String()` prints it, which is what
/// kube's printer shows for a binding's `paramRef.selector`.
fn go_label_selector(selector: &Value) -> String {
    let mut labels: Vec<(&String, &Value)> = selector
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| m.iter().collect())
        .unwrap_or_default();
    labels.sort_by(|a, b| a.0.cmp(b.0));
    let labels: String = labels
        .iter()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or("")))
        .collect();
    let expressions: String = arr(selector, &["matchExpressions"])
        .iter()
        .map(|e| {
            let values: Vec<&str> = arr(e, &["values"])
                .iter()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                text(e, &["key"]),
                text(e, &["operator"]),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{expressions}}},}}"
    )
}

/// `spec.replicas`, which the API defaults to 1 when unset.
fn desired_replicas(obj: &Value) -> i64 {
    get(obj, &["spec", "replicas"])
        .and_then(Value::as_i64)
        .unwrap_or(1)
}

/// Row conditions: a completed pod is marked so clients can hide it.
pub fn conditions(kind: Kind, obj: &Value) -> Option<Value> {
    if kind != Kind::Pod {
        return None;
    }
    let (reason, message) = match text(obj, &["status", "phase"]).as_str() {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

// --- pods -------------------------------------------------------------------

fn is_restartable_init(spec_init: &[Value], container_name: &str) -> bool {
    spec_init
        .iter()
        .find(|c| text(c, &["name"]) == container_name)
        .is_some_and(|c| text(c, &["restartPolicy"]) == "Always")
}

fn condition_true(conds: &[Value], ty: &str) -> bool {
    conds
        .iter()
        .any(|c| text(c, &["type"]) == ty && text(c, &["status"]) == "True")
}

/// A terminated state's reason, or `Signal:N` / `ExitCode:N` without one.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    let reason = text(t, &["reason"]);
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    let signal = int(t, &["signal"]);
    if signal != 0 {
        format!("{prefix}Signal:{signal}")
    } else {
        format!("{prefix}ExitCode:{}", int(t, &["exitCode"]))
    }
}

/// Latest `lastState.terminated.finishedAt`, kept in `latest`.
fn note_restart(status: &Value, latest: &mut Option<Timestamp>) {
    if !present(status, &["lastState", "terminated"]) {
        return;
    }
    if let Some(t) = parse_time(get(status, &["lastState", "terminated", "finishedAt"]))
        && latest.is_none_or(|l| l < t)
    {
        *latest = Some(t);
    }
}

fn pod(obj: &Value, now: Timestamp) -> Vec<Value> {
    let spec_init = arr(obj, &["spec", "initContainers"]);
    let conds = arr(obj, &["status", "conditions"]);
    let phase = text(obj, &["status", "phase"]);
    let mut reason = phase.clone();
    let status_reason = text(obj, &["status", "reason"]);
    if !status_reason.is_empty() {
        reason = status_reason.clone();
    }
    if conds
        .iter()
        .any(|c| text(c, &["type"]) == "PodScheduled" && text(c, &["reason"]) == "SchedulingGated")
    {
        reason = "SchedulingGated".to_string();
    }

    let mut total = arr(obj, &["spec", "containers"]).len();
    total += spec_init
        .iter()
        .filter(|c| text(c, &["restartPolicy"]) == "Always")
        .count();
    let mut ready = 0usize;
    let mut restarts = 0i64;
    let mut sidecar_restarts = 0i64;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_sidecar_restart: Option<Timestamp> = None;

    let mut initializing = false;
    for (i, c) in arr(obj, &["status", "initContainerStatuses"])
        .iter()
        .enumerate()
    {
        restarts += int(c, &["restartCount"]);
        note_restart(c, &mut last_restart);
        let sidecar = is_restartable_init(spec_init, &text(c, &["name"]));
        if sidecar {
            sidecar_restarts += int(c, &["restartCount"]);
            note_restart(c, &mut last_sidecar_restart);
        }
        let terminated = present(c, &["state", "terminated"]);
        let waiting_reason = text(c, &["state", "waiting", "reason"]);
        if terminated && int(c, &["state", "terminated", "exitCode"]) == 0 {
            continue;
        } else if sidecar && get(c, &["started"]).and_then(Value::as_bool) == Some(true) {
            if get(c, &["ready"]).and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        } else if terminated {
            let t = get(c, &["state", "terminated"]).unwrap_or(&Value::Null);
            reason = terminated_reason(t, "Init:");
        } else if present(c, &["state", "waiting"])
            && !waiting_reason.is_empty()
            && waiting_reason != "PodInitializing"
        {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{i}/{}", spec_init.len());
        }
        initializing = true;
        break;
    }

    let initialized = conds
        .iter()
        .find(|c| text(c, &["type"]) == "Initialized")
        .is_some_and(|c| text(c, &["status"]) == "True");
    if !initializing || initialized {
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        for c in arr(obj, &["status", "containerStatuses"]).iter().rev() {
            restarts += int(c, &["restartCount"]);
            note_restart(c, &mut last_restart);
            let waiting_reason = text(c, &["state", "waiting", "reason"]);
            if present(c, &["state", "waiting"]) && !waiting_reason.is_empty() {
                reason = waiting_reason;
            } else if present(c, &["state", "terminated"]) {
                let t = get(c, &["state", "terminated"]).unwrap_or(&Value::Null);
                reason = terminated_reason(t, "");
            } else if get(c, &["ready"]).and_then(Value::as_bool) == Some(true)
                && present(c, &["state", "running"])
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_true(conds, "Ready") {
                "Running"
            } else {
                "NotReady"
            }
            .to_string();
        }
    }

    let deleting = present(obj, &["metadata", "deletionTimestamp"]);
    if deleting && status_reason == "NodeLost" {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Succeeded" && phase != "Failed" {
        reason = "Terminating".to_string();
    }

    let restarts_text = match last_restart {
        Some(t) if restarts != 0 => {
            format!("{restarts} ({} ago)", human_duration(nanos_between(t, now)))
        }
        _ => restarts.to_string(),
    };

    let gates = arr(obj, &["spec", "readinessGates"]);
    let gates_text = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_count = gates
            .iter()
            .filter(|g| {
                let ty = text(g, &["conditionType"]);
                conds
                    .iter()
                    .find(|c| text(c, &["type"]) == ty)
                    .is_some_and(|c| text(c, &["status"]) == "True")
            })
            .count();
        format!("{true_count}/{}", gates.len())
    };

    vec![
        json!(name(obj)),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_text),
        age(obj, now),
        json!(or_none(pod_ip(obj))),
        json!(or_none(text(obj, &["spec", "nodeName"]))),
        json!(or_none(text(obj, &["status", "nominatedNodeName"]))),
        json!(gates_text),
    ]
}

// --- services -----------------------------------------------------------------

fn service(obj: &Value, now: Timestamp) -> Vec<Value> {
    // The API defaults `type` to ClusterIP and `protocol` to TCP.
    let ty = match text(obj, &["spec", "type"]) {
        t if t.is_empty() => "ClusterIP".to_string(),
        t => t,
    };
    let cluster_ip = arr(obj, &["spec", "clusterIPs"])
        .first()
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| text(obj, &["spec", "clusterIP"]));
    let external_ips: Vec<String> = arr(obj, &["spec", "externalIPs"])
        .iter()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    let external = match ty.as_str() {
        "ClusterIP" | "NodePort" => or_none(external_ips.join(",")),
        "LoadBalancer" => {
            // Server-side tables are wide, so the list is never truncated.
            let lb: BTreeSet<String> = arr(obj, &["status", "loadBalancer", "ingress"])
                .iter()
                .map(|i| {
                    let ip = text(i, &["ip"]);
                    if ip.is_empty() {
                        text(i, &["hostname"])
                    } else {
                        ip
                    }
                })
                .filter(|s| !s.is_empty())
                .collect();
            let mut all: Vec<String> = lb.into_iter().collect();
            if all.is_empty() && external_ips.is_empty() {
                "<pending>".to_string()
            } else {
                all.extend(external_ips);
                all.join(",")
            }
        }
        "ExternalName" => text(obj, &["spec", "externalName"]),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = arr(obj, &["spec", "ports"])
        .iter()
        .map(|p| {
            let port = int(p, &["port"]);
            let proto = match text(p, &["protocol"]) {
                p if p.is_empty() => "TCP".to_string(),
                p => p,
            };
            match int(p, &["nodePort"]) {
                np if np > 0 => format!("{port}:{np}/{proto}"),
                _ => format!("{port}/{proto}"),
            }
        })
        .collect();
    vec![
        json!(name(obj)),
        json!(ty),
        json!(or_none(cluster_ip)),
        json!(external),
        json!(or_none(ports.join(","))),
        age(obj, now),
        json!(format_labels(
            get(obj, &["spec", "selector"]).and_then(Value::as_object)
        )),
    ]
}

// --- nodes ----------------------------------------------------------------------

fn node(obj: &Value, now: Timestamp) -> Vec<Value> {
    let conds = arr(obj, &["status", "conditions"]);
    // Like the printer's map, the last Ready condition wins.
    let mut status: Vec<String> = Vec::new();
    if let Some(c) = conds.iter().rev().find(|c| text(c, &["type"]) == "Ready") {
        status.push(
            if text(c, &["status"]) == "True" {
                "Ready"
            } else {
                "NotReady"
            }
            .to_string(),
        );
    } else {
        status.push("Unknown".to_string());
    }
    if get(obj, &["spec", "unschedulable"]).and_then(Value::as_bool) == Some(true) {
        status.push("SchedulingDisabled".to_string());
    }
    let mut roles: BTreeSet<String> = BTreeSet::new();
    if let Some(labels) = get(obj, &["metadata", "labels"]).and_then(Value::as_object) {
        for (k, v) in labels {
            if let Some(role) = k.strip_prefix("node-role.kubernetes.io/") {
                if !role.is_empty() {
                    roles.insert(role.to_string());
                }
            } else if k == "kubernetes.io/role"
                && let Some(v) = v.as_str().filter(|v| !v.is_empty())
            {
                roles.insert(v.to_string());
            }
        }
    }
    let address = |ty: &str| {
        arr(obj, &["status", "addresses"])
            .iter()
            .find(|a| text(a, &["type"]) == ty)
            .map(|a| text(a, &["address"]))
            .unwrap_or_else(|| "<none>".to_string())
    };
    let info = |k: &str| {
        let v = text(obj, &["status", "nodeInfo", k]);
        if v.is_empty() {
            "<unknown>".to_string()
        } else {
            v
        }
    };
    vec![
        json!(name(obj)),
        json!(status.join(",")),
        json!(or_none(roles.into_iter().collect::<Vec<_>>().join(","))),
        age(obj, now),
        json!(text(obj, &["status", "nodeInfo", "kubeletVersion"])),
        json!(address("InternalIP")),
        json!(address("ExternalIP")),
        json!(info("osImage")),
        json!(info("kernelVersion")),
        json!(info("containerRuntimeVersion")),
    ]
}

// --- events -----------------------------------------------------------------------

/// First present value among the core v1 and events.k8s.io spellings.
fn either<'a>(obj: &'a Value, core: &[&str], events: &[&str]) -> Option<&'a Value> {
    get(obj, core)
        .filter(|v| !v.is_null())
        .or_else(|| get(obj, events).filter(|v| !v.is_null()))
}

fn either_text(obj: &Value, core: &[&str], events: &[&str]) -> String {
    let a = text(obj, core);
    if a.is_empty() { text(obj, events) } else { a }
}

fn event(obj: &Value, now: Timestamp) -> Vec<Value> {
    let first_ts = either(obj, &["firstTimestamp"], &["deprecatedFirstTimestamp"]);
    let first = if parse_time(first_ts).is_some() {
        since(first_ts, now)
    } else {
        since(get(obj, &["eventTime"]), now)
    };
    let last_ts = either(obj, &["lastTimestamp"], &["deprecatedLastTimestamp"]);
    let mut last = if parse_time(last_ts).is_some() {
        since(last_ts, now)
    } else {
        first.clone()
    };
    let mut count = either(obj, &["count"], &["deprecatedCount"])
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if let Some(series) = get(obj, &["series"]).filter(|v| !v.is_null()) {
        last = since(get(series, &["lastObservedTime"]), now);
        count = int(series, &["count"]);
    } else if count == 0 {
        count = 1;
    }
    let refd = |k: &str| either_text(obj, &["involvedObject", k], &["regarding", k]);
    let kind = refd("kind").to_lowercase();
    let ref_name = refd("name");
    let target = if ref_name.is_empty() {
        kind
    } else {
        format!("{kind}/{ref_name}")
    };
    let component = either_text(
        obj,
        &["source", "component"],
        &["deprecatedSource", "component"],
    );
    let host = either_text(obj, &["source", "host"], &["deprecatedSource", "host"]);
    let controller = either_text(obj, &["reportingComponent"], &["reportingController"]);
    let instance = text(obj, &["reportingInstance"]);
    let component = if component.is_empty() {
        controller
    } else {
        component
    };
    let host = if host.is_empty() { instance } else { host };
    let source = if host.is_empty() {
        component
    } else {
        format!("{component}, {host}")
    };
    let message = either_text(obj, &["message"], &["note"]);
    vec![
        json!(last),
        json!(text(obj, &["type"])),
        json!(text(obj, &["reason"])),
        json!(target),
        json!(refd("fieldPath")),
        json!(source),
        json!(message.trim()),
        json!(first),
        json!(count),
        json!(name(obj)),
    ]
}

// --- jobs -------------------------------------------------------------------------

/// `hasJobCondition`: the first condition of the type decides.
fn job_condition(conds: &[Value], ty: &str) -> bool {
    conds
        .iter()
        .find(|c| text(c, &["type"]) == ty)
        .is_some_and(|c| text(c, &["status"]) == "True")
}

fn job(obj: &Value, now: Timestamp) -> Vec<Value> {
    let succeeded = int(obj, &["status", "succeeded"]);
    let completions = match get(obj, &["spec", "completions"]).and_then(Value::as_i64) {
        Some(c) => format!("{succeeded}/{c}"),
        None => match get(obj, &["spec", "parallelism"])
            .and_then(Value::as_i64)
            .unwrap_or(0)
        {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let start = parse_time(get(obj, &["status", "startTime"]));
    let end = parse_time(get(obj, &["status", "completionTime"]));
    let duration = match (start, end) {
        (None, _) => String::new(),
        (Some(s), None) => human_duration(nanos_between(s, now)),
        (Some(s), Some(e)) => human_duration(nanos_between(s, e)),
    };
    let conds = arr(obj, &["status", "conditions"]);
    let status = if job_condition(conds, "Complete") {
        "Complete"
    } else if job_condition(conds, "Failed") {
        "Failed"
    } else if present(obj, &["metadata", "deletionTimestamp"]) {
        "Terminating"
    } else if job_condition(conds, "Suspended") {
        "Suspended"
    } else if job_condition(conds, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = containers(obj, &["spec", "template", "spec"]);
    vec![
        json!(name(obj)),
        json!(status),
        json!(completions),
        json!(duration),
        age(obj, now),
        json!(names),
        json!(images),
        json!(format_label_selector(get(obj, &["spec", "selector"]))),
    ]
}

// --- rbac -------------------------------------------------------------------------

fn role_binding(obj: &Value, now: Timestamp) -> Vec<Value> {
    let role_ref = format!(
        "{}/{}",
        text(obj, &["roleRef", "kind"]),
        text(obj, &["roleRef", "name"])
    );
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in arr(obj, &["subjects"]) {
        let subject_name = text(s, &["name"]);
        match text(s, &["kind"]).as_str() {
            "ServiceAccount" => sas.push(format!("{}/{subject_name}", text(s, &["namespace"]))),
            "User" => users.push(subject_name),
            "Group" => groups.push(subject_name),
            _ => {}
        }
    }
    vec![
        json!(name(obj)),
        json!(role_ref),
        age(obj, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
}
