//! The scheduler: binds each pending pod without a node (and for the
//! `default-scheduler`) to the least-allocated node that passes kube-
//! scheduler's default filters (NodeUnschedulable, TaintToleration,
//! NodeAffinity/nodeSelector, NodeResourcesFit). A pod that fits nowhere
//! gets `PodScheduled=False` with reason `Unschedulable` and the scheduler's
//! message, e.g. `0/3 nodes are available: 3 Insufficient cpu. preemption:
//! 0/3 nodes are available: 3 No preemption victims found for incoming
//! pod..`, and is retried when pods go away or nodes change.
//!
//! Binding follows the `pods/binding` subresource: `spec.nodeName` and the
//! `PodScheduled=True` condition are written together, only if the pod is
//! still unbound.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::informer::{Change, Informer, Kind};
use super::podutil::{self, rfc3339};
use super::recorder::{Recorder, Source};
use super::workqueue::WorkQueue;
use super::writes::{self, Part};
use crate::object;
use crate::registry::Api;
use crate::status::ApiError;
use crate::validation::kinds::pod::parse_quantity;

/// The scheduler's name, as pods name it in `spec.schedulerName`.
pub const DEFAULT_SCHEDULER: &str = "default-scheduler";

/// How long an unschedulable pod waits before it is tried again even
/// without a cluster change (`podMaxInUnschedulablePodsDuration`).
const UNSCHEDULABLE_RETRY: Duration = Duration::from_secs(300);

/// CPU assumed for a container without requests when scoring (100m).
const DEFAULT_CPU_REQUEST: f64 = 0.1;
/// Memory assumed for a container without requests when scoring (200Mi).
const DEFAULT_MEMORY_REQUEST: f64 = 200.0 * 1024.0 * 1024.0;

/// The scheduler.
pub struct Scheduler {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    queue: Arc<WorkQueue>,
    unschedulable: Mutex<HashSet<String>>,
    usage: Mutex<UsageCache>,
    source: Source,
}

/// Why one node does not fit.
struct NodeFailure {
    reasons: Vec<String>,
    /// Preemption cannot help (UnschedulableAndUnresolvable).
    unresolvable: bool,
}

fn requests_of(container: &Value) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(map) = podutil::at(container, "/resources/requests").and_then(Value::as_object) {
        for (k, v) in map {
            let q = match v {
                Value::String(s) => parse_quantity(s),
                Value::Number(n) => n.as_f64(),
                _ => None,
            };
            if let Some(q) = q {
                out.insert(k.clone(), q);
            }
        }
    }
    out
}

/// A pod's effective requests (`resourcehelper.PodRequests`): the sum over
/// its containers, at least each init container's, plus overhead.
pub fn pod_requests(pod: &Value) -> BTreeMap<String, f64> {
    let mut total: BTreeMap<String, f64> = BTreeMap::new();
    for c in podutil::at(pod, "/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in requests_of(c) {
            *total.entry(k).or_default() += v;
        }
    }
    for c in podutil::at(pod, "/spec/initContainers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for (k, v) in requests_of(c) {
            let e = total.entry(k).or_default();
            if v > *e {
                *e = v;
            }
        }
    }
    if let Some(map) = podutil::at(pod, "/spec/overhead").and_then(Value::as_object) {
        for (k, v) in map {
            if let Some(q) = v.as_str().and_then(parse_quantity) {
                *total.entry(k.clone()).or_default() += q;
            }
        }
    }
    total
}

/// Requests used for scoring, with defaults for containers that set none.
fn non_zero_requests(pod: &Value) -> (f64, f64) {
    let mut cpu = 0.0;
    let mut mem = 0.0;
    for c in podutil::at(pod, "/spec/containers")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let r = requests_of(c);
        cpu += r.get("cpu").copied().unwrap_or(DEFAULT_CPU_REQUEST);
        mem += r.get("memory").copied().unwrap_or(DEFAULT_MEMORY_REQUEST);
    }
    (cpu, mem)
}

fn allocatable(node: &Value) -> BTreeMap<String, f64> {
    node.pointer("/status/allocatable")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str().and_then(parse_quantity)?)))
                .collect()
        })
        .unwrap_or_default()
}

fn tolerates(tolerations: &[Value], key: &str, value: &str, effect: &str) -> bool {
    tolerations.iter().any(|t| {
        let t_effect = t.get("effect").and_then(Value::as_str).unwrap_or("");
        let t_key = t.get("key").and_then(Value::as_str).unwrap_or("");
        let exists = t.get("operator").and_then(Value::as_str) == Some("Exists");
        let t_value = t.get("value").and_then(Value::as_str).unwrap_or("");
        (t_effect.is_empty() || t_effect == effect)
            && ((t_key.is_empty() && exists) || t_key == key)
            && (exists || t_value == value)
    })
}

fn label_of<'a>(labels: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    labels?.get(key).and_then(Value::as_str)
}

fn expression_matches(expr: &Value, labels: Option<&Map<String, Value>>) -> bool {
    let key = expr.get("key").and_then(Value::as_str).unwrap_or("");
    let values: Vec<&str> = expr
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let have = label_of(labels, key);
    match expr.get("operator").and_then(Value::as_str).unwrap_or("") {
        "In" => have.is_some_and(|h| values.contains(&h)),
        "NotIn" => have.is_none_or(|h| !values.contains(&h)),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(h), Some(v)) = (
                have.and_then(|h| h.parse::<i64>().ok()),
                values.first().and_then(|v| v.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if op == "Gt" { h > v } else { h < v }
        }
        _ => false,
    }
}

fn affinity_matches(pod: &Value, node: &Value) -> bool {
    let labels = object::labels(node);
    if let Some(sel) = pod.pointer("/spec/nodeSelector").and_then(Value::as_object) {
        for (k, v) in sel {
            if label_of(labels, k) != v.as_str() {
                return false;
            }
        }
    }
    let Some(terms) = pod
        .pointer("/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms")
        .and_then(Value::as_array)
    else {
        return true;
    };
    terms.iter().any(|term| {
        let exprs = term.get("matchExpressions").and_then(Value::as_array);
        let fields = term.get("matchFields").and_then(Value::as_array);
        if exprs.is_none_or(|e| e.is_empty()) && fields.is_none_or(|f| f.is_empty()) {
            return false;
        }
        let labels_ok = exprs
            .into_iter()
            .flatten()
            .all(|e| expression_matches(e, labels));
        let mut field_map = Map::new();
        field_map.insert("metadata.name".into(), json!(object::name(node)));
        let fields_ok = fields
            .into_iter()
            .flatten()
            .all(|e| expression_matches(e, Some(&field_map)));
        labels_ok && fields_ok
    })
}

/// What the pods bound to one node request.
#[derive(Default, Clone)]
struct NodeUsage {
    requested: BTreeMap<String, f64>,
    pods: f64,
    /// CPU requested, with the scoring defaults for containers without requests.
    cpu: f64,
    /// Memory requested, with the scoring defaults.
    memory: f64,
}

/// What one bound, unfinished pod takes from its node.
#[derive(Debug, Clone, PartialEq)]
struct PodUsage {
    node: String,
    requested: BTreeMap<String, f64>,
    cpu: f64,
    memory: f64,
}

impl PodUsage {
    /// A pod's usage; None for a pod without a node or finished (finished
    /// pods release theirs).
    fn of(pod: &Value) -> Option<PodUsage> {
        let node = podutil::str_at(pod, "/spec/nodeName");
        if node.is_empty() || podutil::is_terminal(pod) {
            return None;
        }
        let (cpu, memory) = non_zero_requests(pod);
        Some(PodUsage {
            node: node.to_string(),
            requested: pod_requests(pod),
            cpu,
            memory,
        })
    }
}

/// The requests of the pods on each node, kept up to date from pod
/// changes (as kube-scheduler's cache is) so that scheduling one pod does
/// not go through every pod.
#[derive(Default)]
struct UsageCache {
    /// Pod key → its usage.
    pods: HashMap<String, PodUsage>,
    /// Node → keys of its pods.
    on_node: HashMap<String, BTreeSet<String>>,
    /// Node → the sum over its pods.
    nodes: HashMap<String, NodeUsage>,
}

impl UsageCache {
    /// Records a pod's current state (None once it is gone).
    fn account(&mut self, key: &str, pod: Option<&Value>) {
        let now = pod.and_then(PodUsage::of);
        if self.pods.get(key) == now.as_ref() {
            return;
        }
        let before = self.pods.remove(key);
        if let Some(b) = &before
            && let Some(keys) = self.on_node.get_mut(&b.node)
        {
            keys.remove(key);
        }
        if let Some(n) = &now {
            self.on_node
                .entry(n.node.clone())
                .or_default()
                .insert(key.to_string());
            self.pods.insert(key.to_string(), n.clone());
        }
        let mut touched: Vec<String> = before.into_iter().map(|b| b.node).collect();
        if let Some(n) = now
            && !touched.contains(&n.node)
        {
            touched.push(n.node);
        }
        for node in touched {
            self.sum(&node);
        }
    }

    /// Sums the usage of one node's pods again (exactly, not by adding and
    /// subtracting floating-point amounts).
    fn sum(&mut self, node: &str) {
        let keys = self.on_node.get(node).filter(|k| !k.is_empty());
        let Some(keys) = keys else {
            self.on_node.remove(node);
            self.nodes.remove(node);
            return;
        };
        let mut total = NodeUsage::default();
        for p in keys.iter().filter_map(|k| self.pods.get(k)) {
            total.pods += 1.0;
            for (k, v) in &p.requested {
                *total.requested.entry(k.clone()).or_default() += v;
            }
            total.cpu += p.cpu;
            total.memory += p.memory;
        }
        self.nodes.insert(node.to_string(), total);
    }
}

/// Sorted `"<count> <reason>"` entries, as `FitError` prints them.
fn histogram<'a>(reasons: impl Iterator<Item = &'a str>) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for r in reasons {
        *counts.entry(r).or_default() += 1;
    }
    let mut parts: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    parts.sort();
    parts.join(", ")
}

/// What the filters and the score look at in the pod being scheduled.
struct Fit<'a> {
    pod: &'a Value,
    requests: BTreeMap<String, f64>,
    want_cpu: f64,
    want_mem: f64,
    tolerations: Vec<Value>,
}

impl Fit<'_> {
    /// The kube-scheduler plugins in order (NodeUnschedulable, TaintToleration,
    /// NodeAffinity, NodeResourcesFit) on one node; its LeastAllocated score if it fits.
    fn score(&self, node: &Value, usage: Option<&NodeUsage>) -> Result<f64, NodeFailure> {
        // NodeUnschedulable
        if node.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true)
            && !tolerates(
                &self.tolerations,
                "node.kubernetes.io/unschedulable",
                "",
                "NoSchedule",
            )
        {
            return Err(NodeFailure {
                reasons: vec!["node(s) were unschedulable".into()],
                unresolvable: true,
            });
        }
        // TaintToleration (a node that is not Ready carries the
        // node lifecycle controller's not-ready taint).
        let mut taints: Vec<(String, String, String)> = node
            .pointer("/spec/taints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| {
                let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or("").to_string();
                (s("key"), s("value"), s("effect"))
            })
            .collect();
        if !podutil::condition_true(node, "Ready") {
            taints.push((
                "node.kubernetes.io/not-ready".into(),
                String::new(),
                "NoSchedule".into(),
            ));
        }
        let untolerated = taints.iter().find(|(k, v, e)| {
            (e == "NoSchedule" || e == "NoExecute") && !tolerates(&self.tolerations, k, v, e)
        });
        if let Some((k, v, _)) = untolerated {
            return Err(NodeFailure {
                reasons: vec![format!("node(s) had untolerated taint {{{k}: {v}}}")],
                unresolvable: true,
            });
        }
        // NodeAffinity
        if !affinity_matches(self.pod, node) {
            return Err(NodeFailure {
                reasons: vec!["node(s) didn't match Pod's node affinity/selector".into()],
                unresolvable: true,
            });
        }
        // NodeResourcesFit
        let alloc = allocatable(node);
        let empty = NodeUsage::default();
        let NodeUsage {
            requested: used,
            pods: used_pods,
            cpu: used_cpu_nz,
            memory: used_mem_nz,
        } = usage.unwrap_or(&empty);
        let (used_pods, used_cpu_nz, used_mem_nz) = (*used_pods, *used_cpu_nz, *used_mem_nz);
        let mut reasons = Vec::new();
        if used_pods + 1.0 > alloc.get("pods").copied().unwrap_or(0.0) {
            reasons.push("Too many pods".to_string());
        }
        for (k, want) in &self.requests {
            if *want <= 0.0 {
                continue;
            }
            let have = alloc.get(k).copied().unwrap_or(0.0);
            let in_use = used.get(k).copied().unwrap_or(0.0);
            if in_use + want > have * (1.0 + 1e-9) {
                reasons.push(format!("Insufficient {k}"));
            }
        }
        if !reasons.is_empty() {
            return Err(NodeFailure {
                reasons,
                unresolvable: false,
            });
        }
        // LeastAllocated score over cpu and memory.
        let cpu_cap = alloc.get("cpu").copied().unwrap_or(0.0);
        let mem_cap = alloc.get("memory").copied().unwrap_or(0.0);
        let free = |cap: f64, used: f64| {
            if cap <= 0.0 {
                0.0
            } else {
                ((cap - used) / cap).max(0.0)
            }
        };
        let score = (free(cpu_cap, used_cpu_nz + self.want_cpu)
            + free(mem_cap, used_mem_nz + self.want_mem))
            / 2.0;
        Ok(score)
    }
}

impl Scheduler {
    /// A scheduler working from the cache.
    pub fn new(
        api: Api,
        informer: Arc<Informer>,
        recorder: Recorder,
        queue: Arc<WorkQueue>,
    ) -> Arc<Scheduler> {
        Arc::new(Scheduler {
            api,
            informer,
            recorder,
            queue,
            unschedulable: Mutex::new(HashSet::new()),
            usage: Mutex::new(UsageCache::default()),
            source: Source::component(DEFAULT_SCHEDULER),
        })
    }

    fn wants(pod: &Value) -> bool {
        let scheduler = podutil::str_at(pod, "/spec/schedulerName");
        podutil::str_at(pod, "/spec/nodeName").is_empty()
            && (scheduler.is_empty() || scheduler == DEFAULT_SCHEDULER)
            && !object::is_deleting(pod)
            && !podutil::is_terminal(pod)
            && podutil::at(pod, "/spec/schedulingGates")
                .and_then(Value::as_array)
                .is_none_or(|g| g.is_empty())
    }

    /// Keeps the per-node requests current, queues pods to schedule and
    /// wakes unschedulable pods when room may have appeared. Every pod
    /// change the cache applies must pass through here.
    pub fn observe(&self, ch: &Change) {
        match ch.kind {
            Kind::Pod => {
                match self.usage.lock() {
                    Ok(mut cache) => cache.account(&ch.key, ch.new.as_deref()),
                    Err(poisoned) => poisoned.into_inner().account(&ch.key, ch.new.as_deref()),
                }
                if let Some(p) = ch.new.as_deref()
                    && Self::wants(p)
                {
                    self.queue.add(ch.key.clone());
                }
                let freed = ch.old.as_deref().is_some_and(|o| {
                    !podutil::str_at(o, "/spec/nodeName").is_empty() && !podutil::is_terminal(o)
                }) && ch.new.as_deref().is_none_or(podutil::is_terminal);
                if freed {
                    self.wake_all();
                }
                if ch.new.is_none()
                    && let Ok(mut set) = self.unschedulable.lock()
                {
                    set.remove(&ch.key);
                }
            }
            Kind::Node => self.wake_all(),
            _ => {}
        }
    }

    fn wake_all(&self) {
        let keys: Vec<String> = match self.unschedulable.lock() {
            Ok(set) => set.iter().cloned().collect(),
            Err(_) => return,
        };
        for k in keys {
            self.queue.add(k);
        }
    }

    /// Tries to schedule one pod.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(pod) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        if !Self::wants(&pod) {
            if let Ok(mut set) = self.unschedulable.lock() {
                set.remove(&key);
            }
            return Ok(None);
        }
        let nodes = self.informer.list(Kind::Node, None);
        let usage = match self.usage.lock() {
            Ok(cache) => cache.nodes.clone(),
            Err(poisoned) => poisoned.into_inner().nodes.clone(),
        };
        let (want_cpu, want_mem) = non_zero_requests(&pod);
        let fit = Fit {
            pod: &pod,
            requests: pod_requests(&pod),
            want_cpu,
            want_mem,
            tolerations: pod
                .pointer("/spec/tolerations")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default(),
        };
        let mut failures: Vec<NodeFailure> = Vec::new();
        let mut best: Vec<(f64, String)> = Vec::new();
        for node in &nodes {
            let name = object::name(node);
            match fit.score(node, usage.get(name)) {
                Ok(score) => best.push((score, name.to_string())),
                Err(failure) => failures.push(failure),
            }
        }
        let Some(top) = best.iter().map(|(s, _)| *s).reduce(f64::max) else {
            return self.unschedulable(&key, &pod, nodes.len(), &failures).await;
        };
        let ties: Vec<&String> = best
            .iter()
            .filter(|(s, _)| (*s - top).abs() < 1e-9)
            .map(|(_, n)| n)
            .collect();
        let chosen = ties[rand::random_range(0..ties.len())].clone();
        match self.bind(&pod, &chosen).await {
            Ok(bound) => {
                if let Ok(mut set) = self.unschedulable.lock() {
                    set.remove(&key);
                }
                self.recorder.normal(
                    &bound,
                    "Scheduled",
                    format!(
                        "Successfully assigned {}/{} to {chosen}",
                        object::namespace(&pod),
                        object::name(&pod)
                    ),
                    &self.source,
                );
                Ok(None)
            }
            Err(e) if e.code == 404 || e.code == 409 => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn unschedulable(
        &self,
        key: &str,
        pod: &Value,
        node_count: usize,
        failures: &[NodeFailure],
    ) -> Result<Option<Duration>, ApiError> {
        let message = if node_count == 0 {
            "no nodes available to schedule pods".to_string()
        } else {
            let filters = histogram(
                failures
                    .iter()
                    .flat_map(|f| f.reasons.iter().map(String::as_str)),
            );
            let preemption = histogram(failures.iter().map(|f| {
                if f.unresolvable {
                    "Preemption is not helpful for scheduling"
                } else {
                    "No preemption victims found for incoming pod"
                }
            }));
            let post_filter =
                format!("preemption: 0/{node_count} nodes are available: {preemption}.");
            format!("0/{node_count} nodes are available: {filters}. {post_filter}.")
        };
        if let Ok(mut set) = self.unschedulable.lock() {
            set.insert(key.to_string());
        }
        self.recorder
            .warning(pod, "FailedScheduling", message.clone(), &self.source);
        let current = podutil::condition(pod, "PodScheduled");
        let same = current.is_some_and(|c| {
            c.get("status").and_then(Value::as_str) == Some("False")
                && c.get("reason").and_then(Value::as_str) == Some("Unschedulable")
                && c.get("message").and_then(Value::as_str) == Some(message.as_str())
        });
        if !same && let Some(t) = writes::target_of(&self.api, Kind::Pod, pod) {
            let now = rfc3339(podutil::now());
            let written = writes::update_same_uid(
                &self.api,
                &t,
                Part::Status,
                DEFAULT_SCHEDULER,
                object::uid(pod),
                |cur| {
                    let mut p = cur.clone();
                    let mut conds = podutil::conditions_of(cur);
                    podutil::put_condition(
                        &mut conds,
                        json!({
                            "type": "PodScheduled",
                            "status": "False",
                            "lastProbeTime": null,
                            "lastTransitionTime": now,
                            "reason": "Unschedulable",
                            "message": message,
                        }),
                    );
                    p["status"]["conditions"] = json!(conds);
                    Ok(p)
                },
            )
            .await;
            match written {
                Ok(_) => {}
                Err(e) if e.code == 404 || e.code == 409 => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(Some(UNSCHEDULABLE_RETRY))
    }

    /// Binds a pod to a node, as the `binding` subresource does.
    async fn bind(&self, pod: &Value, node: &str) -> Result<Arc<Value>, ApiError> {
        self.api
            .bind_pod(crate::registry::Bind {
                namespace: object::namespace(pod),
                name: object::name(pod),
                uid: Some(object::uid(pod)),
                node,
                annotations: &Map::new(),
            })
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fit_error_histogram_is_sorted() {
        let reasons = [
            "Insufficient cpu",
            "Insufficient memory",
            "Insufficient cpu",
        ];
        assert_eq!(
            histogram(reasons.iter().copied()),
            "1 Insufficient memory, 2 Insufficient cpu"
        );
    }

    #[test]
    fn requests_take_the_larger_of_containers_and_init_containers() {
        let pod = json!({"spec": {
            "containers": [{"resources": {"requests": {"cpu": "250m"}}}, {"resources": {"requests": {"cpu": "250m", "memory": "1Gi"}}}],
            "initContainers": [{"resources": {"requests": {"cpu": "1"}}}],
        }});
        let r = pod_requests(&pod);
        assert_eq!(r["cpu"], 1.0);
        assert_eq!(r["memory"], 1024.0 * 1024.0 * 1024.0);
    }

    #[test]
    fn node_usage_follows_pod_changes() {
        let pod = |node: &str, cpu: &str, phase: &str| {
            json!({
                "spec": {"nodeName": node, "containers": [{"resources": {"requests": {"cpu": cpu}}}]},
                "status": {"phase": phase},
            })
        };
        let mut cache = UsageCache::default();
        cache.account("a", Some(&pod("n1", "500m", "Running")));
        cache.account("b", Some(&pod("n1", "250m", "Pending")));
        cache.account("c", Some(&pod("", "1", "Pending")));
        assert_eq!(cache.nodes["n1"].pods, 2.0);
        assert_eq!(cache.nodes["n1"].requested["cpu"], 0.75);
        // A bound pod that finishes releases its requests; one that is
        // bound later adds them.
        cache.account("a", Some(&pod("n1", "500m", "Succeeded")));
        cache.account("c", Some(&pod("n2", "1", "Pending")));
        assert_eq!(cache.nodes["n1"].requested["cpu"], 0.25);
        assert_eq!(cache.nodes["n2"].requested["cpu"], 1.0);
        cache.account("b", None);
        assert!(!cache.nodes.contains_key("n1"));
        assert_eq!(cache.pods.len(), 1);
    }

    #[test]
    fn node_selectors_and_affinity() {
        let node = json!({"metadata": {"name": "n1", "labels": {"zone": "a", "size": "4"}}});
        assert!(affinity_matches(
            &json!({"spec": {"nodeSelector": {"zone": "a"}}}),
            &node
        ));
        assert!(!affinity_matches(
            &json!({"spec": {"nodeSelector": {"zone": "b"}}}),
            &node
        ));
        let gt = json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchExpressions": [{"key": "size", "operator": "Gt", "values": ["2"]}]}]}}}}});
        assert!(affinity_matches(&gt, &node));
    }
}
