//! What an object costs against a quota, per kind, as kube's quota
//! evaluators measure it: pods (compute resources and counts, with their
//! scopes), services (load balancers, node ports), persistent volume claims
//! (storage, per storage class) and a plain object count for every other
//! resource (`count/<resource>.<group>`, and the legacy `configmaps`,
//! `secrets`, `replicationcontrollers`, `resourcequotas`).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::list::{self, ResourceList};
use super::scopes::{self, ScopeSelector};
use crate::quantity::Quantity;

/// The resources a pod's usage is reported under.
const POD_RESOURCES: &[&str] = &[
    "count/pods",
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
];

/// The resources a pod must set on every container when a quota limits them.
const POD_REQUIRED: &[&str] = &[
    "cpu",
    "memory",
    "requests.cpu",
    "requests.memory",
    "limits.cpu",
    "limits.memory",
];

const SERVICE_RESOURCES: &[&str] = &[
    "count/services",
    "services",
    "services.loadbalancers",
    "services.nodeports",
];

const CLAIM_RESOURCES: &[&str] = &[
    "count/persistentvolumeclaims",
    "persistentvolumeclaims",
    "requests.storage",
];

/// The suffix of per-storage-class claim resources.
const STORAGE_CLASS_SUFFIX: &str = ".storageclass.storage.k8s.io/";

/// Core resources counted under their own name as well as `count/<name>`.
const LEGACY_COUNTS: &[&str] = &[
    "configmaps",
    "secrets",
    "replicationcontrollers",
    "resourcequotas",
];

/// How one resource is measured. A kind measured by more than its count says
/// which evaluator measures it in its definition (`KindDef::quota`); any other
/// resource is counted ([`Evaluator::count`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluator {
    /// Pods: their count, compute requests and limits, extended resources.
    Pods,
    /// Services: their count, node ports and load balancers.
    Services,
    /// Persistent volume claims: their count and storage, per storage class.
    Claims,
    /// Any other resource: one per object.
    Count {
        /// API group (empty for core).
        group: String,
        /// Resource (plural).
        plural: String,
    },
}

/// `count/<plural>` or `count/<plural>.<group>`.
pub fn object_count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

fn one() -> Quantity {
    Quantity::from_int(1)
}

/// The kinds measured by more than their count, as their definitions name
/// their evaluator (`KindDef::quota`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Measured {
    /// By [`Evaluator::Pods`].
    Pods,
    /// By [`Evaluator::Services`].
    Services,
    /// By [`Evaluator::Claims`].
    Claims,
}

impl From<Measured> for Evaluator {
    fn from(m: Measured) -> Evaluator {
        match m {
            Measured::Pods => Evaluator::Pods,
            Measured::Services => Evaluator::Services,
            Measured::Claims => Evaluator::Claims,
        }
    }
}

impl Evaluator {
    /// The evaluator that counts a resource's objects.
    pub fn count(group: &str, plural: &str) -> Evaluator {
        Evaluator::Count {
            group: group.to_string(),
            plural: plural.to_string(),
        }
    }

    /// The evaluators a quota limiting `names` needs to compute its usage;
    /// `of` gives a resource's evaluator (by group and plural).
    pub fn for_names<'a>(
        names: impl IntoIterator<Item = &'a String>,
        of: &dyn Fn(&str, &str) -> Evaluator,
    ) -> Vec<Evaluator> {
        let mut out = vec![Evaluator::Pods, Evaluator::Services, Evaluator::Claims];
        for name in names {
            let counted = if let Some(rest) = name.strip_prefix("count/") {
                match rest.split_once('.') {
                    Some((plural, group)) => of(group, plural),
                    None => of("", rest),
                }
            } else if LEGACY_COUNTS.contains(&name.as_str()) {
                of("", name)
            } else {
                continue;
            };
            if !out.contains(&counted) {
                out.push(counted);
            }
        }
        out
    }

    /// Whether a write of this kind can change usage: creates always,
    /// updates of services and claims (a type change, a resize).
    pub fn handles(&self, create: bool) -> bool {
        create || matches!(self, Evaluator::Services | Evaluator::Claims)
    }

    /// Of the quota's `names`, those this evaluator reports usage under.
    pub fn matching_resources(&self, names: &[String]) -> Vec<String> {
        let mut out: BTreeSet<String> = BTreeSet::new();
        for n in names {
            let hit = match self {
                Evaluator::Pods => {
                    POD_RESOURCES.contains(&n.as_str())
                        || n.starts_with("hugepages-")
                        || n.starts_with("requests.hugepages-")
                        || (n.starts_with("requests.") && !is_native(n))
                }
                Evaluator::Services => SERVICE_RESOURCES.contains(&n.as_str()),
                Evaluator::Claims => {
                    CLAIM_RESOURCES.contains(&n.as_str())
                        || n.ends_with(&format!("{STORAGE_CLASS_SUFFIX}requests.storage"))
                        || n.ends_with(&format!("{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"))
                }
                Evaluator::Count { group, plural } => {
                    *n == object_count_name(group, plural)
                        || (group.is_empty()
                            && LEGACY_COUNTS.contains(&plural.as_str())
                            && n == plural)
                }
            };
            if hit {
                out.insert(n.clone());
            }
        }
        out.into_iter().collect()
    }

    /// Whether `obj` is in a quota scope. Only pods have scopes: a scoped
    /// quota matches nothing else.
    pub fn matches_scope(&self, selector: &ScopeSelector, obj: &Value) -> bool {
        match self {
            Evaluator::Pods => scopes::pod_matches(selector, obj),
            _ => false,
        }
    }

    /// What `obj` uses, at `now` (pods past their end use only their count).
    pub fn usage(&self, obj: &Value, now: jiff::Timestamp) -> ResourceList {
        let mut out = ResourceList::new();
        match self {
            Evaluator::Pods => {
                out.insert("count/pods".into(), one());
                if charged(obj, now) {
                    let spec = &obj["spec"];
                    let requests = pod_total(spec, "requests", true);
                    let limits = pod_total(spec, "limits", true);
                    out = list::add(&out, &compute_usage(&requests, &limits));
                }
            }
            Evaluator::Services => {
                out.insert("count/services".into(), one());
                out.insert("services".into(), one());
                let spec = &obj["spec"];
                let ports = spec["ports"].as_array().map_or(0, Vec::len) as i64;
                match spec["type"].as_str() {
                    Some("NodePort") => {
                        out.insert("services.nodeports".into(), Quantity::from_int(ports));
                    }
                    Some("LoadBalancer") => {
                        out.insert("services.loadbalancers".into(), one());
                        let explicit = spec["ports"].as_array().map_or(0, |p| {
                            p.iter()
                                .filter(|p| p["nodePort"].as_i64().is_some_and(|n| n != 0))
                                .count()
                        }) as i64;
                        let n = if spec["allocateLoadBalancerNodePorts"] == Value::Bool(false) {
                            explicit
                        } else {
                            ports
                        };
                        out.insert("services.nodeports".into(), Quantity::from_int(n));
                    }
                    _ => {}
                }
            }
            Evaluator::Claims => {
                out.insert("count/persistentvolumeclaims".into(), one());
                out.insert("persistentvolumeclaims".into(), one());
                let class = obj["spec"]["storageClassName"]
                    .as_str()
                    .or_else(|| {
                        obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"]
                            .as_str()
                    })
                    .unwrap_or("");
                if !class.is_empty() {
                    out.insert(
                        format!("{class}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"),
                        one(),
                    );
                }
                let storage =
                    Quantity::from_value(&obj["spec"]["resources"]["requests"]["storage"]);
                if let Some(q) = storage {
                    if !class.is_empty() {
                        out.insert(
                            format!("{class}{STORAGE_CLASS_SUFFIX}requests.storage"),
                            q.clone(),
                        );
                    }
                    out.insert("requests.storage".into(), q);
                }
            }
            Evaluator::Count { group, plural } => {
                out.insert(object_count_name(group, plural), one());
                if group.is_empty() && LEGACY_COUNTS.contains(&plural.as_str()) {
                    out.insert(plural.clone(), one());
                }
            }
        }
        out
    }

    /// kube's pod constraints: when a quota limits cpu or memory, every
    /// container must set the matching request or limit.
    ///
    /// # Errors
    /// [`MissingResources`], the resources containers do not set.
    pub fn constraints(&self, required: &[String], obj: &Value) -> Result<(), MissingResources> {
        if *self != Evaluator::Pods {
            return Ok(());
        }
        let required: BTreeSet<&str> = required
            .iter()
            .map(String::as_str)
            .filter(|r| POD_REQUIRED.contains(r))
            .collect();
        if required.is_empty() {
            return Ok(());
        }
        let mut missing: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        let spec = &obj["spec"];
        for c in containers(spec, "containers").chain(containers(spec, "initContainers")) {
            let requests = list::from_json(c["resources"].get("requests"));
            let limits = list::from_json(c["resources"].get("limits"));
            let have = compute_usage(&requests, &limits);
            for r in &required {
                if !have.contains_key(*r) {
                    missing
                        .entry((*r).to_string())
                        .or_default()
                        .insert(c["name"].as_str().unwrap_or("").to_string());
                }
            }
        }
        if missing.is_empty() {
            return Ok(());
        }
        Err(MissingResources(missing))
    }
}

/// The requests or limits a pod's containers must set for a quota and do not: each
/// resource with the names of the containers lacking it. The message is kube's
/// (`must specify limits.cpu for: a,b; requests.memory for: a`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("must specify {}", missing_list(.0))]
pub struct MissingResources(pub BTreeMap<String, BTreeSet<String>>);

fn missing_list(missing: &BTreeMap<String, BTreeSet<String>>) -> String {
    let parts: Vec<String> = missing
        .iter()
        .map(|(r, names)| {
            format!(
                "{r} for: {}",
                names
                    .iter()
                    .map(String::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect();
    parts.join("; ")
}

/// `IsNativeResource`: no domain, or a `kubernetes.io/` one.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `QuotaV1Pod`: a pod in a terminal phase, or past its deletion grace
/// period, no longer uses compute resources.
fn charged(pod: &Value, now: jiff::Timestamp) -> bool {
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deleted = pod["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let grace = pod["metadata"]["deletionGracePeriodSeconds"].as_i64();
    if let (Some(at), Some(grace)) = (deleted, grace) {
        let end = at
            .checked_add(jiff::SignedDuration::from_secs(grace))
            .unwrap_or(at);
        if now > end {
            return false;
        }
    }
    true
}

fn containers<'a>(spec: &'a Value, field: &str) -> impl Iterator<Item = &'a Value> {
    spec[field].as_array().into_iter().flatten()
}

fn add_into(into: &mut ResourceList, more: &ResourceList) {
    *into = list::add(into, more);
}

fn max_into(into: &mut ResourceList, other: &ResourceList) {
    for (k, q) in other {
        match into.get(k) {
            Some(cur) if cur.cmp_value(q).is_ge() => {}
            _ => {
                into.insert(k.clone(), q.clone());
            }
        }
    }
}

/// A pod's effective `requests` or `limits` (`PodRequests`/`PodLimits`):
/// its containers and restartable init containers (sidecars) together, or
/// the largest init container step if larger, plus the pod overhead when
/// `overhead` (LimitRanger leaves it out).
pub fn pod_total(spec: &Value, which: &str, overhead: bool) -> ResourceList {
    let of = |c: &Value| list::from_json(c["resources"].get(which));
    let mut total = ResourceList::new();
    for c in containers(spec, "containers") {
        add_into(&mut total, &of(c));
    }
    let mut sidecars = ResourceList::new();
    let mut init_max = ResourceList::new();
    for c in containers(spec, "initContainers") {
        let own = of(c);
        let step = if c["restartPolicy"] == "Always" {
            add_into(&mut total, &own);
            add_into(&mut sidecars, &own);
            sidecars.clone()
        } else {
            list::add(&own, &sidecars)
        };
        max_into(&mut init_max, &step);
    }
    max_into(&mut total, &init_max);
    if !overhead {
        return total;
    }
    let overhead = list::from_json(spec.get("overhead"));
    if which == "requests" {
        add_into(&mut total, &overhead);
    } else if !total.is_empty() {
        let names: Vec<String> = total.keys().cloned().collect();
        add_into(&mut total, &list::mask(&overhead, &names));
    }
    total
}

/// `podComputeUsageHelper`: the quota names of requests and limits.
fn compute_usage(requests: &ResourceList, limits: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    out.insert("pods".into(), one());
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if let Some(q) = requests.get(r) {
            out.insert(r.into(), q.clone());
            out.insert(format!("requests.{r}"), q.clone());
        }
        if let Some(q) = limits.get(r) {
            out.insert(format!("limits.{r}"), q.clone());
        }
    }
    for (name, q) in requests {
        if name.starts_with("hugepages-") {
            out.insert(name.clone(), q.clone());
            out.insert(format!("requests.{name}"), q.clone());
        } else if !is_native(name) && !name.starts_with("requests.") {
            out.insert(format!("requests.{name}"), q.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn now() -> jiff::Timestamp {
        jiff::Timestamp::now()
    }

    #[test]
    fn pods_sum_containers_and_take_the_largest_init_step() {
        let pod = json!({"spec": {
            "containers": [
                {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m"}}},
                {"name": "b", "resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [
                {"name": "i", "resources": {"requests": {"cpu": "1"}}},
            ],
        }});
        let u = Evaluator::Pods.usage(&pod, now());
        assert_eq!(
            list::pretty(&u),
            "count/pods=1,cpu=1,limits.cpu=200m,memory=64Mi,pods=1,requests.cpu=1,requests.memory=64Mi"
        );
        let done = json!({"spec": pod["spec"].clone(), "status": {"phase": "Succeeded"}});
        assert_eq!(
            list::pretty(&Evaluator::Pods.usage(&done, now())),
            "count/pods=1"
        );
    }

    #[test]
    fn sidecars_run_alongside() {
        let pod = json!({"spec": {
            "containers": [{"name": "a", "resources": {"requests": {"cpu": "1"}}}],
            "initContainers": [
                {"name": "s", "restartPolicy": "Always", "resources": {"requests": {"cpu": "500m"}}},
                {"name": "i", "resources": {"requests": {"cpu": "1"}}},
            ],
        }});
        let u = Evaluator::Pods.usage(&pod, now());
        assert_eq!(u["requests.cpu"].string(), "1500m");
    }

    #[test]
    fn pod_constraints_name_the_containers() {
        let pod = json!({"spec": {"containers": [
            {"name": "b", "resources": {"requests": {"cpu": "1"}}},
            {"name": "a"},
        ]}});
        let required = vec![
            "limits.cpu".to_string(),
            "requests.cpu".into(),
            "pods".into(),
        ];
        assert_eq!(
            Evaluator::Pods
                .constraints(&required, &pod)
                .map_err(|e| e.to_string()),
            Err("must specify limits.cpu for: a,b; requests.cpu for: a".into())
        );
        assert_eq!(Evaluator::Pods.constraints(&["pods".into()], &pod), Ok(()));
    }

    #[test]
    fn services_claims_and_counts() {
        let svc = json!({"spec": {"type": "LoadBalancer", "ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(
            list::pretty(&Evaluator::Services.usage(&svc, now())),
            "count/services=1,services=1,services.loadbalancers=1,services.nodeports=2"
        );
        let pvc = json!({"spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "1Gi"}}}});
        assert_eq!(
            list::pretty(&Evaluator::Claims.usage(&pvc, now())),
            "count/persistentvolumeclaims=1,fast.storageclass.storage.k8s.io/persistentvolumeclaims=1,fast.storageclass.storage.k8s.io/requests.storage=1Gi,persistentvolumeclaims=1,requests.storage=1Gi"
        );
        let cm = Evaluator::count("", "configmaps");
        assert_eq!(
            list::pretty(&cm.usage(&json!({}), now())),
            "configmaps=1,count/configmaps=1"
        );
        let names: Vec<String> = ["count/deployments.apps", "configmaps", "pods", "cpu"]
            .map(String::from)
            .to_vec();
        let of = |group: &str, plural: &str| match plural {
            "pods" => Evaluator::Pods,
            _ => Evaluator::count(group, plural),
        };
        let evals = Evaluator::for_names(&names, &of);
        assert_eq!(evals.iter().filter(|e| **e == Evaluator::Pods).count(), 1);
        assert!(evals.contains(&Evaluator::count("apps", "deployments")));
        assert!(evals.contains(&cm));
        assert_eq!(
            Evaluator::Pods.matching_resources(&names),
            vec!["cpu", "pods"]
        );
        assert_eq!(cm.matching_resources(&names), vec!["configmaps"]);
    }
}
