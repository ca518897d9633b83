//! The disruption controller, as kube-controller-manager's: keeps each
//! PodDisruptionBudget's status current from the pods its selector picks
//! (`expectedPods`, `currentHealthy`, `desiredHealthy`,
//! `disruptionsAllowed`, `observedGeneration`, the `DisruptionAllowed`
//! condition), taking the expected count for percentages and
//! `maxUnavailable` from the pods' controllers' scale (ReplicationController,
//! Deployment, ReplicaSet, StatefulSet, or any kind with a `scale`
//! subresource); drops `disruptedPods` entries once the pod is being
//! deleted, gone, or was not deleted in time; on failure reports
//! `SyncFailed` with no disruptions allowed. Also resets a pod's stale
//! `DisruptionTarget` condition (set by an eviction whose delete never came).
//! Events: `NoPods`, `CalculateExpectedPodCountFailed`, `UnmanagedPods`,
//! `NotDeleted`, `MultiplePodDisruptionBudgets`.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use super::informer::{Change, Informer, Kind};
use super::podutil::{self, CONTROLLER_MANAGER, after, parse_time, rfc3339, until};
use super::recorder::{Recorder, Source};
use super::workqueue::WorkQueue;
use super::writes::{self, Part};
use crate::object;
use crate::registry::eviction::{self, DISRUPTION_ALLOWED};
use crate::registry::{Api, Target};
use crate::resources::kind::Sub;
use crate::status::{ApiError, ResourceRef};

/// How long a pod recorded in `disruptedPods` may take to be marked for
/// deletion before it counts again (`DeletionTimeout`).
const DELETION_TIMEOUT: Duration = Duration::from_secs(120);

/// How long a `DisruptionTarget` condition may stand on a pod that is not
/// being deleted before it is reset (`stalePodDisruptionTimeout`).
const STALE_DISRUPTION_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a sync failed: a write (a conflict is retried) or a computation
/// (reported on the budget as `SyncFailed`).
enum SyncError {
    Api(ApiError),
    Calc(CalcError),
}

/// Why a budget's status could not be computed; the messages are kube's.
#[derive(Debug, thiserror::Error)]
enum CalcError {
    /// The budget's selector selects nothing usable (why it does not parse, if it
    /// does not).
    #[error("{}", .0.as_ref().map(ToString::to_string).unwrap_or_default())]
    Selector(Option<crate::selectors::SelectorError>),
    /// A controller reference with an unreadable `apiVersion`.
    #[error(transparent)]
    GroupVersion(#[from] GroupVersionError),
    /// `maxUnavailable` or `minAvailable` is not an int or a percentage.
    #[error(transparent)]
    Scaled(#[from] IntOrPercentError),
    /// A pod whose controller is not found (the pod's name).
    #[error("found no controllers for pod {0:?}")]
    NoController(String),
    /// A controller of a kind the server does not serve.
    #[error("no matches for kind {kind:?} in version {version:?}")]
    NoKind { kind: String, version: String },
    /// A controller whose kind has no `scale` subresource (the group-qualified
    /// resource).
    #[error("{0} does not implement the scale subresource")]
    NoScale(String),
    /// Reading the controller failed.
    #[error("{}", .0.message)]
    Read(ApiError),
}

/// `schema.ParseGroupVersion`'s error (the `apiVersion`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unexpected GroupVersion string: {0}")]
pub(super) struct GroupVersionError(String);

/// `intstr.GetScaledValueFromIntOrPercent`'s errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum IntOrPercentError {
    /// A string without `%`.
    #[error("invalid value for IntOrString: invalid type: string is not a percentage")]
    NotPercentage,
    /// A percentage whose number does not parse.
    #[error(
        "invalid value for IntOrString: invalid value {value:?}: strconv.Atoi: parsing {number:?}: invalid syntax"
    )]
    Syntax { value: String, number: String },
    /// Neither a number nor a string.
    #[error("invalid value for IntOrString: invalid type: neither int nor percentage")]
    NeitherIntNorPercentage,
}

impl From<ApiError> for SyncError {
    fn from(e: ApiError) -> Self {
        SyncError::Api(e)
    }
}

/// The controller.
pub struct DisruptionController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
    queue: Arc<WorkQueue>,
}

/// The pod budgets a pod's labels match, in name order.
fn budgets_for(informer: &Informer, pod: &Value) -> Vec<Arc<Value>> {
    let labels = object::labels(pod);
    informer
        .list(Kind::PodDisruptionBudget, Some(object::namespace(pod)))
        .into_iter()
        .filter(|pdb| eviction::budget_selector(pdb).is_some_and(|s| s.matches(labels)))
        .collect()
}

/// How long until a pod's `DisruptionTarget` condition is stale, if it has
/// one that can be (`nonTerminatingPodHasStaleDisruptionCondition`).
fn stale_condition_wait(pod: &Value, now: jiff::Timestamp) -> Option<Duration> {
    if object::is_deleting(pod) || podutil::is_terminal(pod) {
        return None;
    }
    let c = podutil::condition(pod, "DisruptionTarget")?;
    let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
    if c.get("status").and_then(Value::as_str) != Some("True") || reason == "TerminationByKubelet" {
        return None;
    }
    let since = c
        .get("lastTransitionTime")
        .and_then(Value::as_str)
        .and_then(parse_time)
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    Some(until(after(since, STALE_DISRUPTION_TIMEOUT), now))
}

/// `schema.ParseGroupVersion`: the group of an `apiVersion`.
pub(super) fn group_version(api_version: &str) -> Result<(&str, &str), GroupVersionError> {
    if api_version.is_empty() || api_version == "/" {
        return Ok(("", ""));
    }
    match api_version.split_once('/') {
        None => Ok(("", api_version)),
        Some((g, v)) if !v.contains('/') => Ok((g, v)),
        Some(_) => Err(GroupVersionError(api_version.to_string())),
    }
}

fn ref_str<'a>(r: &'a Value, field: &str) -> &'a str {
    r.get(field).and_then(Value::as_str).unwrap_or("")
}

/// Whether a controller reference names `kind` in one of `groups`
/// (`verifyGroupKind`).
fn is_kind(r: &Value, kind: &str, groups: &[&str]) -> Result<bool, GroupVersionError> {
    let (group, _) = group_version(ref_str(r, "apiVersion"))?;
    Ok(ref_str(r, "kind") == kind && groups.contains(&group))
}

fn replicas(obj: &Value) -> i64 {
    podutil::int_at(obj, "/spec/replicas").unwrap_or(1)
}

/// `intstr.GetScaledValueFromIntOrPercent`, rounding up.
fn scaled(v: &Value, total: i64) -> Result<i64, IntOrPercentError> {
    match v {
        Value::Number(n) => Ok(n.as_i64().unwrap_or(0)),
        Value::String(s) => {
            let Some(p) = s.strip_suffix('%') else {
                return Err(IntOrPercentError::NotPercentage);
            };
            let p: i64 = p.parse().map_err(|_| IntOrPercentError::Syntax {
                value: s.clone(),
                number: p.to_string(),
            })?;
            Ok((p * total + 99).div_euclid(100))
        }
        _ => Err(IntOrPercentError::NeitherIntNorPercentage),
    }
}

/// A `metav1.LabelSelector` as Go's `%v` prints it (its generated `String`).
pub(super) fn go_selector(sel: Option<&Value>) -> String {
    let Some(sel) = sel.filter(|s| s.is_object()) else {
        return "nil".into();
    };
    let labels: BTreeMap<&str, String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("").to_string()))
                .collect()
        })
        .unwrap_or_default();
    let labels: String = labels.iter().map(|(k, v)| format!("{k}: {v},")).collect();
    let exprs: String = sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|e| {
                    let values: Vec<&str> = e
                        .get("values")
                        .and_then(Value::as_array)
                        .map(|v| v.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    format!(
                        "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                        ref_str(e, "key"),
                        ref_str(e, "operator"),
                        values.join(" ")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{labels}}},MatchExpressions:[]LabelSelectorRequirement{{{exprs}}},}}"
    )
}

/// Whether the budget's condition already says what its status does
/// (`ConditionsAreUpToDate`).
fn conditions_up_to_date(pdb: &Value) -> bool {
    let Some(c) = podutil::condition(pdb, DISRUPTION_ALLOWED) else {
        return false;
    };
    if podutil::int_at(pdb, "/status/observedGeneration").unwrap_or(0) != object::generation(pdb) {
        return false;
    }
    let status = c.get("status").and_then(Value::as_str).unwrap_or("");
    let reason = c.get("reason").and_then(Value::as_str).unwrap_or("");
    if podutil::int_at(pdb, "/status/disruptionsAllowed").unwrap_or(0) > 0 {
        status == "True" && reason == "SufficientPods"
    } else {
        status == "False" && reason == "InsufficientPods"
    }
}

/// The counts a budget's status is computed from.
struct Counts {
    current: i64,
    desired: i64,
    expected: i64,
    disrupted: Map<String, Value>,
}

impl DisruptionController {
    /// A controller working from the cache, fed through `queue`.
    pub fn new(
        api: Api,
        informer: Arc<Informer>,
        recorder: Recorder,
        queue: Arc<WorkQueue>,
    ) -> Arc<Self> {
        Arc::new(DisruptionController {
            api,
            informer,
            recorder,
            source: Source::component("controllermanager"),
            queue,
        })
    }

    /// The controller's work queue (budget keys, and pod keys whose
    /// `DisruptionTarget` condition may go stale).
    pub fn queue(&self) -> &Arc<WorkQueue> {
        &self.queue
    }

    /// Queues the budgets a change concerns.
    pub fn observe(&self, ch: &Change) {
        match ch.kind {
            Kind::PodDisruptionBudget => self.queue.add(ch.key.clone()),
            Kind::Pod => {
                let mut keys = BTreeSet::new();
                for pod in ch.old.iter().chain(ch.new.iter()) {
                    for pdb in budgets_for(&self.informer, pod) {
                        keys.insert(
                            Kind::PodDisruptionBudget
                                .key(object::namespace(&pdb), object::name(&pdb)),
                        );
                    }
                }
                if let Some(pod) = ch.new.as_deref().or(ch.old.as_deref()) {
                    self.warn_of_several_budgets(pod);
                }
                for key in keys {
                    self.queue.add(key);
                }
                if let Some(pod) = ch.new.as_deref()
                    && let Some(wait) = stale_condition_wait(pod, podutil::now())
                {
                    self.queue.add_after(ch.key.clone(), wait);
                }
            }
            _ => {}
        }
    }

    fn warn_of_several_budgets(&self, pod: &Value) {
        let budgets = budgets_for(&self.informer, pod);
        if budgets.len() < 2 {
            return;
        }
        let message = format!(
            "Pod {:?}/{:?} matches multiple PodDisruptionBudgets.  Chose {:?} arbitrarily.",
            object::namespace(pod),
            object::name(pod),
            object::name(&budgets[0])
        );
        tracing::info!("{message}");
        self.recorder
            .warning(pod, "MultiplePodDisruptionBudgets", message, &self.source);
    }

    /// Syncs one key: a budget, or a pod with a `DisruptionTarget` condition.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        if key.starts_with(Kind::Pod.prefix()) {
            return self.reset_stale_condition(&key).await;
        }
        let Some(pdb) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        match self.try_sync(&pdb).await {
            Ok(again) => Ok(again),
            Err(SyncError::Api(e)) if e.code == 409 => Err(e),
            Err(SyncError::Api(e)) => {
                tracing::warn!(key, error = %e, "syncing a PodDisruptionBudget failed");
                self.fail_safe(&pdb, &e.message).await.map(|()| None)
            }
            Err(SyncError::Calc(e)) => {
                let message = e.to_string();
                tracing::warn!(key, error = %message, "syncing a PodDisruptionBudget failed");
                self.fail_safe(&pdb, &message).await.map(|()| None)
            }
        }
    }

    async fn try_sync(&self, pdb: &Value) -> Result<Option<Duration>, SyncError> {
        let Some(selector) = eviction::budget_selector(pdb) else {
            let v = pdb.pointer("/spec/selector").unwrap_or(&Value::Null);
            let e = CalcError::Selector(
                crate::selectors::LabelSelector::from_label_selector_value(v).err(),
            );
            self.recorder.warning(
                pdb,
                "NoPods",
                format!("Failed to get pods: {e}"),
                &self.source,
            );
            return Err(SyncError::Calc(e));
        };
        let pods: Vec<Arc<Value>> = self
            .informer
            .list(Kind::Pod, Some(object::namespace(pdb)))
            .into_iter()
            .filter(|p| podutil::selects(&selector, p))
            .collect();
        if pods.is_empty() {
            self.recorder
                .normal(pdb, "NoPods", "No matching pods found", &self.source);
        }
        let (expected, desired, unmanaged) = match self.expected_pod_count(pdb, &pods).await {
            Ok(v) => v,
            Err(e) => {
                self.recorder.warning(
                    pdb,
                    "CalculateExpectedPodCountFailed",
                    format!("Failed to calculate the number of expected pods: {e}"),
                    &self.source,
                );
                return Err(SyncError::Calc(e));
            }
        };
        if !unmanaged.is_empty() {
            self.recorder.warning(
                pdb,
                "UnmanagedPods",
                format!(
                    "Pods selected by this PodDisruptionBudget (selector: {}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.",
                    go_selector(pdb.pointer("/spec/selector"))
                ),
                &self.source,
            );
        }
        let now = podutil::now();
        let (disrupted, recheck) = self.disrupted_pods(&pods, pdb, now);
        let current = pods
            .iter()
            .filter(|p| !object::is_deleting(p))
            .filter(|p| !disrupted.contains_key(object::name(p)))
            .filter(|p| podutil::is_ready(p))
            .count() as i64;
        let counts = Counts {
            current,
            desired,
            expected,
            disrupted,
        };
        self.update_status(pdb, counts).await?;
        Ok(recheck.map(|at| until(at, now)))
    }

    /// The expected number of pods, the desired number of healthy ones, and
    /// the selected pods without a controller (`getExpectedPodCount`).
    async fn expected_pod_count(
        &self,
        pdb: &Value,
        pods: &[Arc<Value>],
    ) -> Result<(i64, i64, Vec<String>), CalcError> {
        let field = |k: &str| pdb.pointer(&format!("/spec/{k}")).filter(|v| !v.is_null());
        if let Some(max) = field("maxUnavailable") {
            let (expected, unmanaged) = self.expected_scale(pods).await?;
            let max = scaled(max, expected)?;
            return Ok((expected, (expected - max).max(0), unmanaged));
        }
        match field("minAvailable") {
            Some(Value::Number(n)) => Ok((pods.len() as i64, n.as_i64().unwrap_or(0), Vec::new())),
            Some(min) => {
                let (expected, unmanaged) = self.expected_scale(pods).await?;
                Ok((expected, scaled(min, expected)?, unmanaged))
            }
            None => Ok((0, 0, Vec::new())),
        }
    }

    /// The sum of the scales of the pods' controllers, and the pods
    /// without one (`getExpectedScale`).
    async fn expected_scale(&self, pods: &[Arc<Value>]) -> Result<(i64, Vec<String>), CalcError> {
        let mut scales: HashMap<String, i64> = HashMap::new();
        let mut unmanaged = Vec::new();
        for pod in pods {
            let Some(cref) = podutil::controller_ref(pod) else {
                unmanaged.push(object::name(pod).to_string());
                continue;
            };
            if scales.contains_key(ref_str(cref, "uid")) {
                continue;
            }
            match self.controller_scale(cref, object::namespace(pod)).await? {
                Some((uid, scale)) => {
                    scales.insert(uid, scale);
                }
                None => return Err(CalcError::NoController(object::name(pod).to_string())),
            }
        }
        Ok((scales.values().sum(), unmanaged))
    }

    /// The cached object of `kind` a reference names, if it has the
    /// reference's uid.
    fn cached(&self, kind: Kind, ns: &str, r: &Value) -> Option<Arc<Value>> {
        self.informer
            .get(kind, ns, ref_str(r, "name"))
            .filter(|o| object::uid(o) == ref_str(r, "uid"))
    }

    /// The uid and scale of the controller a reference names, tried as
    /// kube's finders are: ReplicationController, the Deployment of a
    /// ReplicaSet, a ReplicaSet of no Deployment, StatefulSet, then any
    /// kind's `scale` subresource.
    async fn controller_scale(
        &self,
        r: &Value,
        ns: &str,
    ) -> Result<Option<(String, i64)>, CalcError> {
        let found = |o: &Value| Some((object::uid(o).to_string(), replicas(o)));
        if is_kind(r, "ReplicationController", &[""])?
            && let Some(rc) = self.cached(Kind::ReplicationController, ns, r)
        {
            return Ok(found(&rc));
        }
        if is_kind(r, "ReplicaSet", &["apps", "extensions"])?
            && let Some(rs) = self.cached(Kind::ReplicaSet, ns, r)
        {
            match podutil::controller_ref(&rs) {
                Some(d) if is_kind(d, "Deployment", &["apps", "extensions"])? => {
                    if let Some(d) = self.cached(Kind::Deployment, ns, d) {
                        return Ok(found(&d));
                    }
                }
                _ => {}
            }
            if podutil::controller_of(&rs).is_none_or(|(kind, _)| kind != "Deployment") {
                return Ok(found(&rs));
            }
        }
        if is_kind(r, "StatefulSet", &["apps"])?
            && let Some(ss) = self.cached(Kind::StatefulSet, ns, r)
        {
            return Ok(found(&ss));
        }
        self.scale_of(r, ns).await
    }

    /// The uid and `spec.replicas` of the `scale` subresource of the object
    /// a reference names (`getScaleController`).
    async fn scale_of(&self, r: &Value, ns: &str) -> Result<Option<(String, i64)>, CalcError> {
        let (group, version) = group_version(ref_str(r, "apiVersion"))?;
        let kind = ref_str(r, "kind");
        let Some(rt) = self.api.catalog.by_kind(group, version, kind) else {
            let gv = match group {
                "" => version.to_string(),
                g => format!("{g}/{version}"),
            };
            return Err(CalcError::NoKind {
                kind: kind.to_string(),
                version: gv,
            });
        };
        if !rt.serves(Sub::Scale) {
            let gr = ResourceRef {
                group: &rt.group,
                resource: &rt.plural,
            };
            return Err(CalcError::NoScale(gr.qualified()));
        }
        let t = Target {
            rt: rt.clone(),
            namespace: rt.namespaced.then(|| ns.to_string()),
            name: Some(ref_str(r, "name").to_string()),
        };
        let obj = match self.api.get(&t).await {
            Ok(o) => o,
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(CalcError::Read(e)),
        };
        if object::uid(&obj) != ref_str(r, "uid") {
            return Ok(None);
        }
        let path = rt.scale_paths().spec_replicas;
        let scale = crate::crd::value_at(&obj, &path)
            .and_then(Value::as_i64)
            .unwrap_or(0);
        Ok(Some((object::uid(&obj).to_string(), scale)))
    }

    /// The budget's `disruptedPods` without the pods being deleted, gone or
    /// overdue, and when the earliest remaining entry runs out
    /// (`buildDisruptedPodMap`).
    fn disrupted_pods(
        &self,
        pods: &[Arc<Value>],
        pdb: &Value,
        now: jiff::Timestamp,
    ) -> (Map<String, Value>, Option<jiff::Timestamp>) {
        let mut kept = Map::new();
        let mut recheck: Option<jiff::Timestamp> = None;
        let Some(recorded) = pdb
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object)
        else {
            return (kept, recheck);
        };
        for pod in pods {
            if object::is_deleting(pod) {
                continue;
            }
            let Some(at) = recorded.get(object::name(pod)) else {
                continue;
            };
            let since = at
                .as_str()
                .and_then(parse_time)
                .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
            let expected = after(since, DELETION_TIMEOUT);
            if expected < now {
                let ns = object::namespace(pdb);
                self.recorder.warning(
                    pod,
                    "NotDeleted",
                    format!("Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't"),
                    &self.source,
                );
            } else {
                recheck = Some(recheck.map_or(expected, |r| r.min(expected)));
                kept.insert(object::name(pod).to_string(), at.clone());
            }
        }
        (kept, recheck)
    }

    /// Writes the budget's status when it changed (`updatePdbStatus`).
    async fn update_status(&self, pdb: &Value, c: Counts) -> Result<(), ApiError> {
        let allowed = match c.current - c.desired {
            a if c.expected <= 0 || a <= 0 => 0,
            a => a,
        };
        let generation = object::generation(pdb);
        let int = |k: &str| podutil::int_at(pdb, &format!("/status/{k}")).unwrap_or(0);
        let empty = Map::new();
        let recorded = pdb
            .pointer("/status/disruptedPods")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        if int("currentHealthy") == c.current
            && int("desiredHealthy") == c.desired
            && int("expectedPods") == c.expected
            && int("disruptionsAllowed") == allowed
            && *recorded == c.disrupted
            && int("observedGeneration") == generation
            && conditions_up_to_date(pdb)
        {
            return Ok(());
        }
        let mut status = json!({
            "disruptionsAllowed": allowed,
            "currentHealthy": c.current,
            "desiredHealthy": c.desired,
            "expectedPods": c.expected,
        });
        if generation != 0 {
            status["observedGeneration"] = json!(generation);
        }
        if !c.disrupted.is_empty() {
            status["disruptedPods"] = Value::Object(c.disrupted);
        }
        if let Some(conditions) = pdb.pointer("/status/conditions") {
            status["conditions"] = conditions.clone();
        }
        eviction::set_disruption_allowed_condition(&mut status);
        self.write_status(pdb, status).await
    }

    /// Allows no disruptions, with a `SyncFailed` condition (`failSafe`).
    async fn fail_safe(&self, pdb: &Value, message: &str) -> Result<(), ApiError> {
        let mut status = pdb.get("status").cloned().unwrap_or_else(|| json!({}));
        if !status.is_object() {
            status = json!({});
        }
        status["disruptionsAllowed"] = json!(0);
        for k in ["currentHealthy", "desiredHealthy", "expectedPods"] {
            if status.get(k).is_none() {
                status[k] = json!(0);
            }
        }
        let generation = podutil::int_at(&status, "/observedGeneration").unwrap_or(0);
        eviction::set_condition(&mut status, "False", "SyncFailed", message, generation);
        self.write_status(pdb, status).await
    }

    /// Replaces the budget's status, only while it is still the version the
    /// status was computed from (a 409 otherwise, so the sync runs again).
    async fn write_status(&self, pdb: &Value, status: Value) -> Result<(), ApiError> {
        type Status = k8s_openapi::api::policy::v1::PodDisruptionBudgetStatus;
        if !podutil::status_changed::<Status>(pdb, &status) {
            return Ok(());
        }
        let Some(t) = writes::target_of(&self.api, Kind::PodDisruptionBudget, pdb) else {
            return Ok(());
        };
        writes::replace_status_seen(&self.api, &t, pdb, &status).await?;
        Ok(())
    }

    /// Sets a stale `DisruptionTarget` condition of a pod to `False`
    /// (`syncStalePodDisruption`).
    async fn reset_stale_condition(&self, key: &str) -> Result<Option<Duration>, ApiError> {
        let Some(pod) = self.informer.get_key(key) else {
            return Ok(None);
        };
        let now = podutil::now();
        match stale_condition_wait(&pod, now) {
            None => return Ok(None),
            Some(wait) if !wait.is_zero() => return Ok(Some(wait)),
            Some(_) => {}
        }
        let Some(t) = writes::target_of(&self.api, Kind::Pod, &pod) else {
            return Ok(None);
        };
        let written = writes::update_same_uid(
            &self.api,
            &t,
            Part::Status,
            CONTROLLER_MANAGER,
            object::uid(&pod),
            |cur| {
                let mut new = cur.clone();
                if stale_condition_wait(cur, now).is_some_and(|w| w.is_zero()) {
                    let mut conditions = podutil::conditions_of(cur);
                    if let Some(c) = conditions
                        .iter_mut()
                        .find(|c| c.get("type") == Some(&json!("DisruptionTarget")))
                    {
                        *c = json!({
                            "type": "DisruptionTarget",
                            "status": "False",
                            "lastProbeTime": null,
                            "lastTransitionTime": rfc3339(now),
                        });
                    }
                    new["status"]["conditions"] = json!(conditions);
                }
                Ok(new)
            },
        )
        .await;
        writes::unless_gone(written)?;
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_round_up() {
        assert_eq!(scaled(&json!("50%"), 3), Ok(2));
        assert_eq!(scaled(&json!("25%"), 4), Ok(1));
        assert_eq!(scaled(&json!(2), 10), Ok(2));
        assert!(scaled(&json!("5"), 10).is_err());
    }

    #[test]
    fn group_versions_parse_as_go_does() {
        assert_eq!(group_version("apps/v1"), Ok(("apps", "v1")));
        assert_eq!(group_version("v1"), Ok(("", "v1")));
        assert_eq!(group_version(""), Ok(("", "")));
        assert!(group_version("a/b/c").is_err());
    }

    #[test]
    fn selectors_print_as_go_does() {
        let sel = json!({
            "matchLabels": {"tier": "web", "app": "x"},
            "matchExpressions": [{"key": "k", "operator": "In", "values": ["a", "b"]}],
        });
        assert_eq!(
            go_selector(Some(&sel)),
            "&LabelSelector{MatchLabels:map[string]string{app: x,tier: web,},MatchExpressions:[]LabelSelectorRequirement{LabelSelectorRequirement{Key:k,Operator:In,Values:[a b],},},}"
        );
        assert_eq!(go_selector(None), "nil");
    }

    #[test]
    fn disruption_target_conditions_go_stale() {
        let now = podutil::now();
        let pod = |status: &str, reason: &str, at: jiff::Timestamp| {
            json!({"status": {"phase": "Running", "conditions": [
                {"type": "DisruptionTarget", "status": status, "reason": reason, "lastTransitionTime": rfc3339(at)}
            ]}})
        };
        let old = now - jiff::SignedDuration::from_secs(600);
        assert_eq!(
            stale_condition_wait(&pod("True", "EvictionByEvictionAPI", old), now),
            Some(Duration::ZERO)
        );
        let fresh = stale_condition_wait(&pod("True", "EvictionByEvictionAPI", now), now);
        assert!(fresh.is_some_and(|w| w > Duration::from_secs(100)));
        assert_eq!(
            stale_condition_wait(&pod("True", "TerminationByKubelet", old), now),
            None
        );
        assert_eq!(stale_condition_wait(&pod("False", "", old), now), None);
    }

    #[test]
    fn conditions_are_up_to_date_only_for_the_observed_generation() {
        let pdb = |allowed: i64, status: &str, reason: &str, observed: i64| {
            json!({"metadata": {"generation": 2}, "status": {
                "observedGeneration": observed, "disruptionsAllowed": allowed,
                "conditions": [{"type": "DisruptionAllowed", "status": status, "reason": reason}],
            }})
        };
        assert!(conditions_up_to_date(&pdb(1, "True", "SufficientPods", 2)));
        assert!(!conditions_up_to_date(&pdb(1, "True", "SufficientPods", 1)));
        assert!(conditions_up_to_date(&pdb(
            0,
            "False",
            "InsufficientPods",
            2
        )));
        assert!(!conditions_up_to_date(&pdb(0, "False", "SyncFailed", 2)));
    }
}
