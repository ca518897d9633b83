//! kube-apiserver 1.32 defaulting for built-in kinds (the `SetDefaults_*`
//! functions of every served group version, plus the few values kube fills
//! in strategies/admission that clients always observe); the kinds of the
//! newer API areas have their own modules here.
//!
//! Not done here (handled elsewhere or by admission in kube): Service
//! clusterIP/clusterIPs/ipFamilies/ipFamilyPolicy allocation, nodePort
//! allocation, the ServiceAccount admission (serviceAccountName, token
//! volume), DefaultTolerationSeconds tolerations, LimitRanger defaults, and
//! server-managed metadata (uid, resourceVersion, creationTimestamp,
//! generation).

use serde_json::{Map, Value, json};

type Obj = Map<String, Value>;

// Cluster kinds of networking, discovery, flowcontrol, scheduling, storage
// and apiregistration.
mod apiregistration;
mod flowcontrol;
mod networking;
mod scheduling;
mod storage;
// Volumes, quotas, endpoints, autoscalers, and the extra workload defaults
// (ReplicationController selector/labels, CronJob job templates).
mod autoscaling;
mod endpoints;
mod quota;
mod volumes;
mod workloads;

/// A Secret's `stringData` moved into `data` (base64), overriding keys it
/// shares, as kube's conversion of v1 Secrets does: `stringData` is
/// write-only and never stored; then `type` defaults to `Opaque`.
fn default_secret(root: &mut Obj) {
    use base64::Engine;
    if let Some(Value::Object(strings)) = root.remove("stringData") {
        let data = root
            .entry("data")
            .or_insert_with(|| Value::Object(Map::new()));
        if !data.is_object() {
            *data = Value::Object(Map::new());
        }
        if let Some(data) = data.as_object_mut() {
            for (k, v) in strings {
                let text = v.as_str().unwrap_or_default();
                let encoded = base64::engine::general_purpose::STANDARD.encode(text.as_bytes());
                data.insert(k, Value::String(encoded));
            }
        }
    }
    set_str(root, "type", "Opaque");
}

/// A kind's defaulting (kube's `SetDefaults_<Kind>`s), on the object's map.
pub type DefaultFn = fn(&mut Map<String, Value>);

/// Applies a kind's defaulting (`default`, from its definition in
/// `crate::kinds`) to `obj` in place; a non-object value is left unchanged.
/// For Jobs, the generated selector and labels use `metadata.uid`, which the
/// caller must set first.
pub fn apply(default: DefaultFn, obj: &mut Value) {
    if let Some(root) = obj.as_object_mut() {
        default(root);
    }
}

/// Applies the defaults of the built-in kind `group`/`resource` (the unit
/// tests' entry).
#[cfg(test)]
pub(crate) fn apply_defaults(group: &str, resource: &str, obj: &mut Value) {
    let def = crate::kinds::all()
        .into_iter()
        .find(|k| k.group == group && k.plural == resource);
    if let Some(default) = def.and_then(|d| d.default) {
        apply(default, obj);
    }
}

/// Each built-in kind's defaulting, as its definition in `crate::kinds`
/// names it.
pub mod by_kind {
    use super::*;

    /// Pods.
    pub fn pod(root: &mut Obj) {
        default_pod(root)
    }
    /// Services.
    pub fn service(root: &mut Obj) {
        default_service(root)
    }
    /// Secrets.
    pub fn secret(root: &mut Obj) {
        default_secret(root)
    }
    /// Namespaces.
    pub fn namespace(root: &mut Obj) {
        default_namespace(root)
    }
    /// Nodes.
    pub fn node(root: &mut Obj) {
        default_node(root)
    }
    /// PodTemplates.
    pub fn pod_template(root: &mut Obj) {
        if let Some(t) = obj_mut(root, "template") {
            default_pod_template(t);
        }
    }
    /// ReplicationControllers.
    pub fn replication_controller(root: &mut Obj) {
        workloads::rc_selector_and_labels(root);
        default_rc(root);
    }
    /// PersistentVolumes.
    pub fn persistent_volume(root: &mut Obj) {
        volumes::persistent_volume(root)
    }
    /// PersistentVolumeClaims.
    pub fn persistent_volume_claim(root: &mut Obj) {
        volumes::persistent_volume_claim(root)
    }
    /// LimitRanges.
    pub fn limit_range(root: &mut Obj) {
        quota::limit_range(root)
    }
    /// Endpoints.
    pub fn endpoints(root: &mut Obj) {
        endpoints::endpoints(root)
    }
    /// HorizontalPodAutoscalers (both versions).
    pub fn horizontal_pod_autoscaler(root: &mut Obj) {
        autoscaling::horizontal_pod_autoscaler(root)
    }
    /// Deployments.
    pub fn deployment(root: &mut Obj) {
        default_deployment(root)
    }
    /// ReplicaSets.
    pub fn replica_set(root: &mut Obj) {
        default_replica_set(root)
    }
    /// StatefulSets.
    pub fn stateful_set(root: &mut Obj) {
        default_stateful_set(root)
    }
    /// DaemonSets.
    pub fn daemon_set(root: &mut Obj) {
        default_daemon_set(root)
    }
    /// Jobs.
    pub fn job(root: &mut Obj) {
        default_job(root)
    }
    /// CronJobs.
    pub fn cron_job(root: &mut Obj) {
        default_cron_job(root)
    }
    /// RoleBindings and ClusterRoleBindings.
    pub fn role_binding(root: &mut Obj) {
        default_binding(root)
    }
    /// ValidatingWebhookConfigurations.
    pub fn validating_webhooks(root: &mut Obj) {
        default_webhooks(root, false)
    }
    /// MutatingWebhookConfigurations.
    pub fn mutating_webhooks(root: &mut Obj) {
        default_webhooks(root, true)
    }
    /// ValidatingAdmissionPolicies.
    pub fn validating_admission_policy(root: &mut Obj) {
        if let Some(spec) = existing_obj(root, "spec") {
            set_str(spec, "failurePolicy", "Fail");
            if let Some(m) = existing_obj(spec, "matchConstraints") {
                default_match_resources(m);
            }
        }
    }
    /// ValidatingAdmissionPolicyBindings.
    pub fn validating_admission_policy_binding(root: &mut Obj) {
        if let Some(m) = existing_obj(root, "spec").and_then(|s| existing_obj(s, "matchResources"))
        {
            default_match_resources(m);
        }
    }
    /// NetworkPolicies.
    pub fn network_policy(root: &mut Obj) {
        networking::network_policy(root)
    }
    /// IngressClasses.
    pub fn ingress_class(root: &mut Obj) {
        networking::ingress_class(root)
    }
    /// EndpointSlices.
    pub fn endpoint_slice(root: &mut Obj) {
        networking::endpoint_slice(root)
    }
    /// FlowSchemas.
    pub fn flow_schema(root: &mut Obj) {
        flowcontrol::flow_schema(root)
    }
    /// PriorityLevelConfigurations.
    pub fn priority_level_configuration(root: &mut Obj) {
        flowcontrol::priority_level_configuration(root)
    }
    /// PriorityClasses.
    pub fn priority_class(root: &mut Obj) {
        scheduling::priority_class(root)
    }
    /// StorageClasses.
    pub fn storage_class(root: &mut Obj) {
        storage::storage_class(root)
    }
    /// CSIDrivers.
    pub fn csi_driver(root: &mut Obj) {
        storage::csi_driver(root)
    }
    /// APIServices.
    pub fn api_service(root: &mut Obj) {
        apiregistration::api_service(root)
    }
}

fn is_unset(o: &Obj, k: &str) -> bool {
    match o.get(k) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    }
}

/// Sets `k` to the string `v` when it is absent, null or empty.
fn set_str(o: &mut Obj, k: &str, v: &str) {
    if is_unset(o, k) {
        o.insert(k.into(), Value::String(v.into()));
    }
}

/// Sets `k` to `v` when it is absent or null.
fn set_val(o: &mut Obj, k: &str, v: Value) {
    if matches!(o.get(k), None | Some(Value::Null)) {
        o.insert(k.into(), v);
    }
}

/// The object at `k`, created when absent or null; `None` when it has
/// another type (left for validation to report).
fn obj_mut<'a>(o: &'a mut Obj, k: &str) -> Option<&'a mut Obj> {
    if matches!(o.get(k), None | Some(Value::Null)) {
        o.insert(k.into(), Value::Object(Obj::new()));
    }
    o.get_mut(k).and_then(Value::as_object_mut)
}

/// The existing object at `k`, without creating it.
fn existing_obj<'a>(o: &'a mut Obj, k: &str) -> Option<&'a mut Obj> {
    o.get_mut(k).and_then(Value::as_object_mut)
}

/// Mutable object items of the array at `k`.
fn items_mut<'a>(o: &'a mut Obj, k: &str) -> impl Iterator<Item = &'a mut Obj> {
    o.get_mut(k)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|a| a.iter_mut().filter_map(Value::as_object_mut))
}

// -------------------------------------------------------------------- pods

/// The image tag kube's ParseImageName would find: `Some("latest")` when no
/// tag or digest is given, `None` for unparsable references.
fn image_tag(image: &str) -> Option<String> {
    if image.is_empty() || image.trim() != image {
        return None;
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    // The path (after an optional domain) must be lowercase.
    let path = match repo.split_once('/') {
        Some((first, rest)) if first.contains(['.', ':']) || first == "localhost" => rest,
        _ => repo,
    };
    if path.is_empty()
        || !path.bytes().all(|c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'-' | b'/')
        })
    {
        return None;
    }
    if let Some(t) = tag
        && (t.is_empty()
            || t.len() > 128
            || !t
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')))
    {
        return None;
    }
    match (tag, digest) {
        (Some(t), _) => Some(t.to_string()),
        (None, Some(_)) => Some(String::new()),
        (None, None) => Some("latest".into()),
    }
}

fn default_probe(p: &mut Obj) {
    set_val(p, "timeoutSeconds", json!(1));
    set_val(p, "periodSeconds", json!(10));
    set_val(p, "successThreshold", json!(1));
    set_val(p, "failureThreshold", json!(3));
    if let Some(h) = existing_obj(p, "httpGet") {
        set_str(h, "path", "/");
        set_str(h, "scheme", "HTTP");
    }
}

fn default_handler(h: &mut Obj) {
    if let Some(g) = existing_obj(h, "httpGet") {
        set_str(g, "path", "/");
        set_str(g, "scheme", "HTTP");
    }
}

fn default_container(c: &mut Obj) {
    if is_unset(c, "imagePullPolicy") {
        let image = c.get("image").and_then(Value::as_str).unwrap_or("");
        let policy = if image_tag(image).as_deref() == Some("latest") {
            "Always"
        } else {
            "IfNotPresent"
        };
        c.insert("imagePullPolicy".into(), Value::String(policy.into()));
    }
    set_str(c, "terminationMessagePath", "/dev/termination-log");
    set_str(c, "terminationMessagePolicy", "File");
    for p in items_mut(c, "ports") {
        set_str(p, "protocol", "TCP");
    }
    for e in items_mut(c, "env") {
        if let Some(fr) = existing_obj(e, "valueFrom").and_then(|v| existing_obj(v, "fieldRef")) {
            set_str(fr, "apiVersion", "v1");
        }
    }
    for k in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = existing_obj(c, k) {
            default_probe(p);
        }
    }
    if let Some(l) = existing_obj(c, "lifecycle") {
        for k in ["postStart", "preStop"] {
            if let Some(h) = existing_obj(l, k) {
                default_handler(h);
            }
        }
    }
}

const VOLUME_SOURCE_KEYS: &[&str] = &[
    "emptyDir",
    "hostPath",
    "gitRepo",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "flocker",
    "persistentVolumeClaim",
    "rbd",
    "cinder",
    "cephfs",
    "quobyte",
    "downwardAPI",
    "fc",
    "flexVolume",
    "configMap",
    "azureFile",
    "vsphereVolume",
    "photonPersistentDisk",
    "portworxVolume",
    "azureDisk",
    "storageos",
    "projected",
    "scaleIO",
    "csi",
    "ephemeral",
    "image",
];

fn default_volume(v: &mut Obj) {
    if VOLUME_SOURCE_KEYS
        .iter()
        .all(|k| matches!(v.get(*k), None | Some(Value::Null)))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for k in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = existing_obj(v, k) {
            set_val(s, "defaultMode", json!(420));
        }
    }
    if let Some(h) = existing_obj(v, "hostPath") {
        set_val(h, "type", json!(""));
    }
    if let Some(p) = existing_obj(v, "projected") {
        for src in items_mut(p, "sources") {
            if let Some(t) = existing_obj(src, "serviceAccountToken") {
                set_val(t, "expirationSeconds", json!(3600));
            }
            if let Some(d) = existing_obj(src, "downwardAPI") {
                for item in items_mut(d, "items") {
                    if let Some(fr) = existing_obj(item, "fieldRef") {
                        set_str(fr, "apiVersion", "v1");
                    }
                }
            }
        }
    }
    if let Some(d) = existing_obj(v, "downwardAPI") {
        for item in items_mut(d, "items") {
            if let Some(fr) = existing_obj(item, "fieldRef") {
                set_str(fr, "apiVersion", "v1");
            }
        }
    }
    if let Some(e) = existing_obj(v, "ephemeral")
        && let Some(t) = existing_obj(e, "volumeClaimTemplate")
        && let Some(s) = existing_obj(t, "spec")
    {
        set_str(s, "volumeMode", "Filesystem");
    }
}

/// SetDefaults_PodSpec plus the per-element defaults of its children.
fn default_pod_spec(spec: &mut Obj) {
    set_str(spec, "dnsPolicy", "ClusterFirst");
    set_str(spec, "restartPolicy", "Always");
    set_val(spec, "securityContext", json!({}));
    set_val(spec, "terminationGracePeriodSeconds", json!(30));
    set_str(spec, "schedulerName", "default-scheduler");
    for k in ["containers", "initContainers", "ephemeralContainers"] {
        for c in items_mut(spec, k) {
            default_container(c);
        }
    }
    for v in items_mut(spec, "volumes") {
        default_volume(v);
    }
}

/// Pod template defaults (as in Deployments, Jobs, ...): the spec defaults
/// and the `creationTimestamp: null` that kube serializes for templates.
fn default_pod_template(t: &mut Obj) {
    if let Some(m) = obj_mut(t, "metadata") {
        set_val(m, "creationTimestamp", Value::Null);
        if !m.contains_key("creationTimestamp") {
            m.insert("creationTimestamp".into(), Value::Null);
        }
    }
    if let Some(s) = obj_mut(t, "spec") {
        default_pod_spec(s);
    }
}

fn default_host_network_ports(spec: &mut Obj) {
    for k in ["containers", "initContainers"] {
        for c in items_mut(spec, k) {
            for p in items_mut(c, "ports") {
                let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                if hp == 0
                    && let Some(cp) = p.get("containerPort").cloned()
                {
                    p.insert("hostPort".into(), cp);
                }
            }
        }
    }
}

/// Copies limits into missing requests (SetDefaults_Pod).
fn default_requests_from_limits(c: &mut Obj) {
    let Some(res) = existing_obj(c, "resources") else {
        return;
    };
    let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    if let Some(req) = obj_mut(res, "requests") {
        for (k, v) in limits {
            req.entry(k).or_insert(v);
        }
    }
}

fn default_pod(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    default_pod_spec(spec);
    for k in ["containers", "initContainers"] {
        for c in items_mut(spec, k) {
            default_requests_from_limits(c);
        }
    }
    set_val(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
        default_host_network_ports(spec);
    }
    // Set by the Priority admission plugin in kube.
    if matches!(spec.get("priority"), None | Some(Value::Null)) {
        let prio = match spec
            .get("priorityClassName")
            .and_then(Value::as_str)
            .unwrap_or("")
        {
            "system-node-critical" => Some(2_000_001_000),
            "system-cluster-critical" => Some(2_000_000_000),
            "" => Some(0),
            _ => None,
        };
        if let Some(p) = prio {
            spec.insert("priority".into(), json!(p));
        }
    }
    set_str(spec, "preemptionPolicy", "PreemptLowerPriority");
}

// ---------------------------------------------------------------- services

fn default_service(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_str(spec, "sessionAffinity", "None");
    match spec.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            spec.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has = spec
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has {
                spec.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    set_str(spec, "type", "ClusterIP");
    for p in items_mut(spec, "ports") {
        set_str(p, "protocol", "TCP");
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if unset && let Some(port) = p.get("port").cloned() {
            p.insert("targetPort".into(), port);
        }
    }
    let ty = spec
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let has_ext = spec
        .get("externalIPs")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty());
    let externally = ty == "LoadBalancer" || ty == "NodePort" || (ty == "ClusterIP" && has_ext);
    if externally {
        set_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        set_val(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        set_val(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

// --------------------------------------------------------- namespace, node

fn default_namespace(root: &mut Obj) {
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty()
        && let Some(meta) = obj_mut(root, "metadata")
        && let Some(labels) = obj_mut(meta, "labels")
    {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
    if let Some(status) = obj_mut(root, "status") {
        set_str(status, "phase", "Active");
    }
}

fn default_node(root: &mut Obj) {
    if let Some(status) = existing_obj(root, "status")
        && matches!(status.get("allocatable"), None | Some(Value::Null))
        && let Some(cap) = status.get("capacity").filter(|c| c.is_object()).cloned()
    {
        status.insert("allocatable".into(), cap);
    }
}

// -------------------------------------------------------------------- apps

fn default_template_in(spec: &mut Obj) {
    if let Some(t) = obj_mut(spec, "template") {
        default_pod_template(t);
    }
}

fn default_deployment(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_val(spec, "replicas", json!(1));
    if let Some(st) = obj_mut(spec, "strategy") {
        set_str(st, "type", "RollingUpdate");
        if st.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = obj_mut(st, "rollingUpdate")
        {
            set_val(ru, "maxUnavailable", json!("25%"));
            set_val(ru, "maxSurge", json!("25%"));
        }
    }
    set_val(spec, "revisionHistoryLimit", json!(10));
    set_val(spec, "progressDeadlineSeconds", json!(600));
    default_template_in(spec);
}

fn default_replica_set(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_val(spec, "replicas", json!(1));
    default_template_in(spec);
}

fn default_rc(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_val(spec, "replicas", json!(1));
    if let Some(t) = existing_obj(spec, "template") {
        default_pod_template(t);
    }
}

fn default_stateful_set(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_str(spec, "podManagementPolicy", "OrderedReady");
    if let Some(us) = obj_mut(spec, "updateStrategy") {
        if is_unset(us, "type") {
            us.insert("type".into(), json!("RollingUpdate"));
            set_val(us, "rollingUpdate", json!({}));
        }
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = existing_obj(us, "rollingUpdate")
        {
            set_val(ru, "partition", json!(0));
        }
    }
    if let Some(p) = obj_mut(spec, "persistentVolumeClaimRetentionPolicy") {
        set_str(p, "whenDeleted", "Retain");
        set_str(p, "whenScaled", "Retain");
    }
    set_val(spec, "replicas", json!(1));
    set_val(spec, "revisionHistoryLimit", json!(10));
    default_template_in(spec);
    for pvc in items_mut(spec, "volumeClaimTemplates") {
        set_str(pvc, "apiVersion", "v1");
        set_str(pvc, "kind", "PersistentVolumeClaim");
        if let Some(m) = obj_mut(pvc, "metadata") {
            set_val(m, "creationTimestamp", Value::Null);
            m.entry("creationTimestamp").or_insert(Value::Null);
        }
        if let Some(s) = obj_mut(pvc, "spec") {
            set_str(s, "volumeMode", "Filesystem");
        }
        if let Some(st) = obj_mut(pvc, "status") {
            set_str(st, "phase", "Pending");
        }
    }
}

fn default_daemon_set(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    if let Some(us) = obj_mut(spec, "updateStrategy") {
        set_str(us, "type", "RollingUpdate");
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = obj_mut(us, "rollingUpdate")
        {
            set_val(ru, "maxUnavailable", json!(1));
            set_val(ru, "maxSurge", json!(0));
        }
    }
    set_val(spec, "revisionHistoryLimit", json!(10));
    default_template_in(spec);
}

// ------------------------------------------------------------------- batch

const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";

fn default_job_spec(spec: &mut Obj) {
    let unset = |s: &Obj, k: &str| matches!(s.get(k), None | Some(Value::Null));
    if unset(spec, "completions") && unset(spec, "parallelism") {
        spec.insert("completions".into(), json!(1));
        spec.insert("parallelism".into(), json!(1));
    }
    set_val(spec, "parallelism", json!(1));
    if unset(spec, "backoffLimit") {
        let v = if unset(spec, "backoffLimitPerIndex") {
            6
        } else {
            i32::MAX as i64
        };
        spec.insert("backoffLimit".into(), json!(v));
    }
    set_val(spec, "completionMode", json!("NonIndexed"));
    set_val(spec, "suspend", json!(false));
    let has_pfp = !unset(spec, "podFailurePolicy");
    if let Some(pfp) = existing_obj(spec, "podFailurePolicy") {
        for rule in items_mut(pfp, "rules") {
            for pat in items_mut(rule, "onPodConditions") {
                set_str(pat, "status", "True");
            }
        }
    }
    set_val(
        spec,
        "podReplacementPolicy",
        json!(if has_pfp {
            "Failed"
        } else {
            "TerminatingOrFailed"
        }),
    );
    default_template_in(spec);
}

fn default_job(root: &mut Obj) {
    let meta = root.get("metadata").and_then(Value::as_object);
    let uid = meta
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    default_job_spec(spec);
    // Job strategy PrepareForCreate: generate selector and labels (once the object has its
    // uid: on a create, after mutating admission, when defaulting runs again).
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !manual && !uid.is_empty() {
        if let Some(t) = obj_mut(spec, "template")
            && let Some(m) = obj_mut(t, "metadata")
            && let Some(labels) = obj_mut(m, "labels")
        {
            for (k, v) in [
                ("job-name", &name),
                (JOB_NAME, &name),
                ("controller-uid", &uid),
                (CONTROLLER_UID, &uid),
            ] {
                labels.entry(k).or_insert_with(|| Value::String(v.clone()));
            }
        }
        if let Some(sel) = obj_mut(spec, "selector")
            && let Some(ml) = obj_mut(sel, "matchLabels")
        {
            ml.entry(CONTROLLER_UID)
                .or_insert_with(|| Value::String(uid.clone()));
        }
    }
    // SetDefaults_Job: copy template labels to the job when it has none.
    let tlabels = spec
        .get("template")
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let Some(tl) = tlabels
        && let Some(meta) = obj_mut(root, "metadata")
    {
        let empty = meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if empty {
            meta.insert("labels".into(), tl);
        }
    }
}

fn default_cron_job(root: &mut Obj) {
    let Some(spec) = obj_mut(root, "spec") else {
        return;
    };
    set_str(spec, "concurrencyPolicy", "Allow");
    set_val(spec, "suspend", json!(false));
    set_val(spec, "successfulJobsHistoryLimit", json!(3));
    set_val(spec, "failedJobsHistoryLimit", json!(1));
    if let Some(jt) = obj_mut(spec, "jobTemplate") {
        if let Some(m) = obj_mut(jt, "metadata") {
            m.entry("creationTimestamp").or_insert(Value::Null);
        }
        if let Some(js) = obj_mut(jt, "spec") {
            workloads::job_template_spec(js);
        }
    }
}

// -------------------------------------------------------------------- rbac

fn default_binding(root: &mut Obj) {
    if let Some(rr) = existing_obj(root, "roleRef") {
        set_str(rr, "apiGroup", "rbac.authorization.k8s.io");
    }
    for s in items_mut(root, "subjects") {
        if is_unset(s, "apiGroup") {
            match s.get("kind").and_then(Value::as_str) {
                Some("User" | "Group") => {
                    s.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
                }
                Some("ServiceAccount") => {
                    s.insert("apiGroup".into(), json!(""));
                }
                _ => {}
            }
        }
    }
}

// -------------------------------------------------------- admission webhooks

fn default_webhooks(root: &mut Obj, mutating: bool) {
    for h in items_mut(root, "webhooks") {
        set_str(h, "failurePolicy", "Fail");
        set_str(h, "matchPolicy", "Equivalent");
        set_val(h, "namespaceSelector", json!({}));
        set_val(h, "objectSelector", json!({}));
        set_val(h, "timeoutSeconds", json!(10));
        if mutating {
            set_str(h, "reinvocationPolicy", "Never");
        }
        for r in items_mut(h, "rules") {
            set_str(r, "scope", "*");
        }
        if let Some(cc) = existing_obj(h, "clientConfig")
            && let Some(svc) = existing_obj(cc, "service")
        {
            set_val(svc, "port", json!(443));
        }
    }
}

/// `matchConstraints` of a policy, `matchResources` of a binding.
fn default_match_resources(m: &mut Obj) {
    set_str(m, "matchPolicy", "Equivalent");
    set_val(m, "namespaceSelector", json!({}));
    set_val(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        for r in items_mut(m, key) {
            set_str(r, "scope", "*");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(group: &str, res: &str, mut v: Value) -> Value {
        apply_defaults(group, res, &mut v);
        v
    }

    #[test]
    fn image_pull_policy() {
        assert_eq!(image_tag("nginx").as_deref(), Some("latest"));
        assert_eq!(image_tag("nginx:latest").as_deref(), Some("latest"));
        assert_eq!(image_tag("nginx:1.25").as_deref(), Some("1.25"));
        assert_eq!(image_tag("localhost:5000/nginx").as_deref(), Some("latest"));
        assert_eq!(image_tag("registry.io:5000/a/b:v1").as_deref(), Some("v1"));
        assert_eq!(image_tag("nginx@sha256:abc").as_deref(), Some(""));
        assert_eq!(image_tag("Nginx"), None);
        assert_eq!(image_tag(""), None);
        assert_eq!(image_tag("é:"), None);
    }

    #[test]
    fn pod_defaults() {
        let v = d(
            "",
            "pods",
            json!({"metadata": {"name": "p"}, "spec": {"containers": [
                {"name": "a", "image": "nginx", "ports": [{"containerPort": 80}],
                 "resources": {"limits": {"cpu": "1"}},
                 "livenessProbe": {"httpGet": {"port": 80}}},
                {"name": "b", "image": "nginx:1.2"}
            ], "volumes": [{"name": "v"}, {"name": "s", "secret": {"secretName": "x"}}]}}),
        );
        let s = &v["spec"];
        assert_eq!(s["restartPolicy"], "Always");
        assert_eq!(s["dnsPolicy"], "ClusterFirst");
        assert_eq!(s["schedulerName"], "default-scheduler");
        assert_eq!(s["terminationGracePeriodSeconds"], 30);
        assert_eq!(s["securityContext"], json!({}));
        assert_eq!(s["enableServiceLinks"], true);
        assert_eq!(s["priority"], 0);
        assert_eq!(s["preemptionPolicy"], "PreemptLowerPriority");
        let c0 = &s["containers"][0];
        assert_eq!(c0["imagePullPolicy"], "Always");
        assert_eq!(c0["terminationMessagePath"], "/dev/termination-log");
        assert_eq!(c0["terminationMessagePolicy"], "File");
        assert_eq!(c0["ports"][0]["protocol"], "TCP");
        assert_eq!(c0["resources"]["requests"]["cpu"], "1");
        assert_eq!(
            c0["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                   "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(s["containers"][1]["imagePullPolicy"], "IfNotPresent");
        assert_eq!(s["volumes"][0]["emptyDir"], json!({}));
        assert_eq!(s["volumes"][1]["secret"]["defaultMode"], 420);
    }

    #[test]
    fn service_defaults() {
        let v = d("", "services", json!({"spec": {"ports": [{"port": 80}]}}));
        assert_eq!(
            v["spec"],
            json!({"ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}], "sessionAffinity": "None",
                   "type": "ClusterIP", "internalTrafficPolicy": "Cluster"})
        );
        let v = d(
            "",
            "services",
            json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP"}}),
        );
        assert_eq!(v["spec"]["externalTrafficPolicy"], "Cluster");
        assert_eq!(v["spec"]["allocateLoadBalancerNodePorts"], true);
        assert_eq!(
            v["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"],
            10800
        );
    }

    #[test]
    fn deployment_and_statefulset_defaults() {
        let v = d(
            "apps",
            "deployments",
            json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "x:1"}]}}}}),
        );
        let s = &v["spec"];
        assert_eq!(s["replicas"], 1);
        assert_eq!(
            s["strategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}})
        );
        assert_eq!(s["revisionHistoryLimit"], 10);
        assert_eq!(s["progressDeadlineSeconds"], 600);
        assert_eq!(
            s["template"]["metadata"],
            json!({"creationTimestamp": null})
        );
        assert!(s["template"]["spec"].get("enableServiceLinks").is_none());
        assert_eq!(s["template"]["spec"]["restartPolicy"], "Always");
        let v = d("apps", "statefulsets", json!({"spec": {}}));
        let s = &v["spec"];
        assert_eq!(s["podManagementPolicy"], "OrderedReady");
        assert_eq!(
            s["updateStrategy"],
            json!({"type": "RollingUpdate", "rollingUpdate": {"partition": 0}})
        );
        assert_eq!(
            s["persistentVolumeClaimRetentionPolicy"],
            json!({"whenDeleted": "Retain", "whenScaled": "Retain"})
        );
        assert_eq!(s["replicas"], 1);
        assert_eq!(s["revisionHistoryLimit"], 10);
    }

    #[test]
    fn job_defaults() {
        let v = d(
            "batch",
            "jobs",
            json!({"metadata": {"name": "j", "uid": "u1"}, "spec": {"template": {"spec": {"restartPolicy": "Never"}}}}),
        );
        let s = &v["spec"];
        assert_eq!(s["completions"], 1);
        assert_eq!(s["parallelism"], 1);
        assert_eq!(s["backoffLimit"], 6);
        assert_eq!(s["completionMode"], "NonIndexed");
        assert_eq!(s["suspend"], false);
        assert_eq!(s["podReplacementPolicy"], "TerminatingOrFailed");
        assert_eq!(
            s["selector"],
            json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}})
        );
        let labels = json!({"batch.kubernetes.io/controller-uid": "u1", "batch.kubernetes.io/job-name": "j",
                            "controller-uid": "u1", "job-name": "j"});
        assert_eq!(s["template"]["metadata"]["labels"], labels);
        assert_eq!(v["metadata"]["labels"], labels);
    }

    #[test]
    fn misc_defaults() {
        let v = d("", "namespaces", json!({"metadata": {"name": "ns"}}));
        assert_eq!(v["metadata"]["labels"]["kubernetes.io/metadata.name"], "ns");
        // The `kubernetes` finalizer is the strategy's, on create only (not a default).
        assert!(v.pointer("/spec/finalizers").is_none(), "{v}");
        assert_eq!(v["status"]["phase"], "Active");
        assert_eq!(d("", "secrets", json!({}))["type"], "Opaque");
        let v = d(
            "rbac.authorization.k8s.io",
            "rolebindings",
            json!({"roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s"}]}),
        );
        assert_eq!(v["roleRef"]["apiGroup"], "rbac.authorization.k8s.io");
        assert_eq!(v["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
        let v = d(
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations",
            json!({"webhooks": [{"name": "a.b.c", "rules": [{}], "clientConfig": {"service": {"name": "s", "namespace": "n"}}}]}),
        );
        let h = &v["webhooks"][0];
        assert_eq!(h["failurePolicy"], "Fail");
        assert_eq!(h["matchPolicy"], "Equivalent");
        assert_eq!(h["namespaceSelector"], json!({}));
        assert_eq!(h["objectSelector"], json!({}));
        assert_eq!(h["timeoutSeconds"], 10);
        assert_eq!(h["reinvocationPolicy"], "Never");
        assert_eq!(h["rules"][0]["scope"], "*");
        assert_eq!(h["clientConfig"]["service"]["port"], 443);
        // Wrong types never panic.
        for (g, r) in [
            ("", "pods"),
            ("apps", "deployments"),
            ("batch", "jobs"),
            ("", "services"),
        ] {
            let mut v =
                json!({"spec": {"containers": 3, "template": [], "ports": "x"}, "metadata": 1});
            apply_defaults(g, r, &mut v);
            let mut v = json!("x");
            apply_defaults(g, r, &mut v);
        }
    }
}
