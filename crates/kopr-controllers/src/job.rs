//! The Job controller, as kube-controller-manager's (1.32): runs up to
//! `parallelism` pods (`<job>-<5 random>`, or `<job>-<index>-<5 random>` for
//! `Indexed` jobs) until `completions` succeed, with the
//! `batch.kubernetes.io/job-tracking` finalizer on each pod so that every
//! finished pod is counted exactly once (through
//! `status.uncountedTerminatedPods`). Failed pods are replaced after the
//! pod-failure back-off (10 s doubling, at most 6 min) until more than
//! `backoffLimit` have failed. Conditions, with kube's reasons and messages:
//! `SuccessCriteriaMet` then `Complete` (`CompletionsReached`, "Reached
//! expected number of succeeded pods"); `FailureTarget` then `Failed`
//! (`BackoffLimitExceeded`, "Job has reached the specified backoff limit";
//! `DeadlineExceeded`, "Job was active longer than specified deadline");
//! `Suspended`. Status: `active`, `ready`, `terminating`, `succeeded`,
//! `failed`, `startTime`, `completionTime`, `completedIndexes`.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::informer::{Informer, Kind};
use super::podutil::{self, CONTROLLER_MANAGER, int_at, rfc3339};
use super::recorder::{Recorder, Source};
use super::writes::{self, Part};
use crate::object;
use crate::registry::Api;
use crate::status::ApiError;

/// The finalizer that keeps a Job's finished pods until they are counted.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// Queue keys of orphaned pods whose tracking finalizer must go.
pub const ORPHAN_PREFIX: &str = "orphan-pod:";

const POD_BACKOFF_INITIAL: Duration = Duration::from_secs(10);
const POD_BACKOFF_MAX: Duration = Duration::from_secs(360);

fn has_finalizer(pod: &Value) -> bool {
    object::finalizers(pod)
        .iter()
        .any(|f| f == TRACKING_FINALIZER)
}

fn uid_list(status: &Value, which: &str) -> Vec<String> {
    status
        .pointer(&format!("/uncountedTerminatedPods/{which}"))
        .map(crate::object::string_list)
        .unwrap_or_default()
}

fn completion_index(pod: &Value) -> Option<i64> {
    object::meta(pod)?
        .get("annotations")?
        .get(COMPLETION_INDEX)?
        .as_str()?
        .parse()
        .ok()
}

/// Parses `completedIndexes` (`1,3-5`).
fn parse_indexes(s: &str) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(n) = part.parse() {
                    out.insert(n);
                }
            }
        }
    }
    out
}

/// Formats indexes as `completedIndexes` does.
fn format_indexes(set: &BTreeSet<i64>) -> String {
    let mut parts = Vec::new();
    let mut iter = set.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        parts.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    parts.join(",")
}

fn job_condition(ty: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": ty,
        "status": "True",
        "lastProbeTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// When a finished pod finished.
fn finished_at(pod: &Value) -> Option<jiff::Timestamp> {
    pod.pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|c| {
            c.pointer("/state/terminated/finishedAt")
                .and_then(Value::as_str)
        })
        .filter_map(podutil::parse_time)
        .max()
        .or_else(|| object::meta_str(pod, "deletionTimestamp").and_then(podutil::parse_time))
}

/// The controller.
pub struct JobController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
}

impl JobController {
    /// A controller working from the cache.
    pub fn new(api: Api, informer: Arc<Informer>, recorder: Recorder) -> Arc<Self> {
        Arc::new(JobController {
            api,
            informer,
            recorder,
            source: Source::component("job-controller"),
        })
    }

    async fn remove_finalizer(&self, pod: &Value) -> Result<(), ApiError> {
        let Some(t) = writes::target_of(&self.api, Kind::Pod, pod) else {
            return Ok(());
        };
        let written = writes::update_same_uid(
            &self.api,
            &t,
            Part::Object,
            CONTROLLER_MANAGER,
            object::uid(pod),
            |cur| {
                if !has_finalizer(cur) {
                    return Err(writes::conflict(&t, cur, "the finalizer is already gone"));
                }
                Ok(podutil::without_finalizer(cur, TRACKING_FINALIZER))
            },
        )
        .await;
        match written {
            Ok(_) => Ok(()),
            Err(e) if e.code == 404 || e.code == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }

    async fn delete_pod(&self, job: &Value, pod: &Value) -> Result<(), ApiError> {
        let Some(t) = writes::target_of(&self.api, Kind::Pod, pod) else {
            return Ok(());
        };
        if writes::delete_same_uid(&self.api, &t, object::uid(pod), None).await? {
            self.recorder.normal(
                job,
                "SuccessfulDelete",
                format!("Deleted pod: {}", object::name(pod)),
                &self.source,
            );
        }
        Ok(())
    }

    /// Reconciles one Job (or releases one orphaned pod).
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        if let Some(pod_key) = key.strip_prefix(ORPHAN_PREFIX) {
            if let Some(pod) = self.informer.get_key(pod_key)
                && has_finalizer(&pod)
                && podutil::controller_ref(&pod).is_none()
            {
                self.remove_finalizer(&pod).await?;
            }
            return Ok(None);
        }
        let Some(job) = self.informer.get_key(&key) else {
            self.release_orphans(&key, None).await?;
            return Ok(None);
        };
        self.release_orphans(&key, Some(object::uid(&job))).await?;
        self.sync_job(job).await
    }

    /// Removes the tracking finalizer from finished pods of a Job that is
    /// gone (or was replaced by one of the same name).
    async fn release_orphans(&self, key: &str, current_uid: Option<&str>) -> Result<(), ApiError> {
        let rest = key.trim_start_matches(Kind::Job.prefix());
        let Some((ns, name)) = rest.split_once('/') else {
            return Ok(());
        };
        for pod in self.informer.list(Kind::Pod, Some(ns)) {
            let Some(r) = podutil::controller_ref(&pod) else {
                continue;
            };
            let of_job = r.get("kind").and_then(Value::as_str) == Some("Job")
                && r.get("name").and_then(Value::as_str) == Some(name);
            let stale = current_uid.is_none_or(|u| r.get("uid").and_then(Value::as_str) != Some(u));
            if of_job && stale && has_finalizer(&pod) {
                self.remove_finalizer(&pod).await?;
            }
        }
        Ok(())
    }

    async fn sync_job(&self, job: Arc<Value>) -> Result<Option<Duration>, ApiError> {
        let now = podutil::now();
        let now_s = rfc3339(now);
        let pods = self.informer.controlled_by(Kind::Pod, object::uid(&job));
        let old_status = job.get("status").cloned().unwrap_or_else(|| json!({}));
        let mut status = old_status.clone();
        let indexed = podutil::str_at(&job, "/spec/completionMode") == "Indexed";
        let completions = int_at(&job, "/spec/completions");
        let parallelism = int_at(&job, "/spec/parallelism").unwrap_or(1).max(0);
        let backoff_limit = int_at(&job, "/spec/backoffLimit").unwrap_or(6);
        let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let finished =
            podutil::condition_true(&job, "Complete") || podutil::condition_true(&job, "Failed");

        let Tally {
            succeeded,
            failed,
            uncounted_ok,
            uncounted_failed,
            completed,
            last_failure,
            active,
            terminating,
            ready,
            restarts,
        } = tally(&job, &pods, &old_status, indexed);
        let failed_total = failed + uncounted_failed.len() as i64 + restarts;
        let succeeded_total = succeeded + uncounted_ok.len() as i64;
        if status.get("startTime").is_none() && !suspended && !finished {
            status["startTime"] = json!(now_s);
        }

        let mut conditions = podutil::conditions_of(&job);
        let has = |conds: &[Value], ty: &str| {
            conds.iter().any(|c| {
                c.get("type").and_then(Value::as_str) == Some(ty)
                    && c.get("status").and_then(Value::as_str) == Some("True")
            })
        };
        let mut again: Option<Duration> = None;
        let mut events: Vec<(bool, String, String)> = Vec::new();
        if !finished {
            // Interim conditions: the job's fate is decided.
            if !has(&conditions, "FailureTarget") && !has(&conditions, "SuccessCriteriaMet") {
                let fate = Fate {
                    completions,
                    indexed,
                    completed: completed.len() as i64,
                    succeeded_total,
                    failed_total,
                    backoff_limit,
                    no_active: active.is_empty(),
                    suspended,
                };
                again = decide_fate(&job, &status, &fate, &mut conditions, now, &now_s);
            }
            let target = conditions
                .iter()
                .find(|c| {
                    matches!(
                        c.get("type").and_then(Value::as_str),
                        Some("FailureTarget" | "SuccessCriteriaMet")
                    ) && c.get("status").and_then(Value::as_str) == Some("True")
                })
                .cloned();
            if let Some(t) = target {
                // Stop what still runs, then finish once every pod is counted.
                for p in &active {
                    self.delete_pod(&job, p).await?;
                }
                let all_counted = uncounted_ok.is_empty() && uncounted_failed.is_empty();
                if all_counted && terminating == 0 && active.is_empty() {
                    events.push(finish(&t, &mut conditions, &mut status, &now_s));
                }
            } else if suspended {
                for p in &active {
                    self.delete_pod(&job, p).await?;
                }
                if !has(&conditions, "Suspended") {
                    events.push(set_suspended(&mut conditions, true, &now_s));
                }
                if let Some(o) = status.as_object_mut() {
                    o.remove("startTime");
                }
            } else {
                if has(&conditions, "Suspended") {
                    events.push(set_suspended(&mut conditions, false, &now_s));
                }
                again = self
                    .manage(
                        &job,
                        &active,
                        completions,
                        parallelism,
                        indexed,
                        &completed,
                        succeeded_total,
                        failed_total,
                        last_failure,
                        now,
                    )
                    .await?
                    .map_or(again, |d| podutil::sooner(again, d));
            }
        }

        let counts = Counts {
            succeeded,
            failed,
            active: active.len() as i64,
            ready,
            terminating,
        };
        fill_status(
            &mut status,
            &counts,
            &uncounted_ok,
            &uncounted_failed,
            indexed.then_some(&completed),
            &conditions,
        );
        type Status = k8s_openapi::api::batch::v1::JobStatus;
        if !writes::update_status::<Status>(&self.api, Kind::Job, &job, &status).await? {
            return Ok(None);
        }
        for (warning, reason, message) in events {
            self.recorder
                .event(&job, None, warning, &reason, message, &self.source);
        }
        // Counted (listed as uncounted): the finalizers can go now.
        for p in &pods {
            let uid = object::uid(p);
            if has_finalizer(p)
                && (uncounted_ok.iter().any(|u| u == uid)
                    || uncounted_failed.iter().any(|u| u == uid))
            {
                self.remove_finalizer(p).await?;
            }
        }
        Ok(again)
    }

    /// Creates or deletes pods so that the right number run.
    #[allow(clippy::too_many_arguments)]
    async fn manage(
        &self,
        job: &Value,
        active: &[Arc<Value>],
        completions: Option<i64>,
        parallelism: i64,
        indexed: bool,
        completed: &BTreeSet<i64>,
        succeeded: i64,
        failures: i64,
        last_failure: Option<jiff::Timestamp>,
        now: jiff::Timestamp,
    ) -> Result<Option<Duration>, ApiError> {
        let want = match completions {
            Some(c) if indexed => parallelism.min(c - completed.len() as i64),
            Some(c) => parallelism.min(c - succeeded),
            None => {
                if succeeded > 0 {
                    active.len() as i64
                } else {
                    parallelism
                }
            }
        }
        .max(0);
        let have = active.len() as i64;
        if have > want {
            let mut extra: Vec<&Arc<Value>> = active.iter().collect();
            extra.sort_by_key(|p| std::cmp::Reverse(podutil::creation_key(p)));
            for p in extra.into_iter().take((have - want) as usize) {
                self.delete_pod(job, p).await?;
            }
            return Ok(None);
        }
        if have == want {
            return Ok(None);
        }
        if failures > 0
            && let Some(last) = last_failure
        {
            let exp = (failures - 1).clamp(0, 16) as u32;
            let backoff = POD_BACKOFF_INITIAL
                .saturating_mul(1u32 << exp)
                .min(POD_BACKOFF_MAX);
            let at = podutil::after(last, backoff);
            if at > now {
                return Ok(Some(podutil::until(at, now) + Duration::from_millis(10)));
            }
        }
        let Some(rt) = self.api.catalog.get("", "v1", "pods") else {
            return Ok(None);
        };
        let ns = object::namespace(job);
        let template = job
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null);
        let owner = podutil::new_controller_ref(job, "batch/v1", "Job");
        let mut indexes: Vec<Option<i64>> = Vec::new();
        if indexed {
            let running: HashSet<i64> = active.iter().filter_map(|p| completion_index(p)).collect();
            let total = completions.unwrap_or(0);
            indexes = (0..total)
                .filter(|i| !completed.contains(i) && !running.contains(i))
                .take((want - have) as usize)
                .map(Some)
                .collect();
        } else {
            indexes.resize((want - have) as usize, None);
        }
        let opts = podutil::writer(CONTROLLER_MANAGER);
        for index in indexes {
            let mut pod = podutil::pod_from_template(&template, ns, owner.clone());
            let mut finalizers = object::finalizers(&pod);
            finalizers.push(TRACKING_FINALIZER.to_string());
            object::set_finalizers(&mut pod, &finalizers);
            match index {
                Some(i) => {
                    pod["metadata"]["generateName"] = json!(format!("{}-{i}-", object::name(job)));
                    if !pod["metadata"]
                        .get("annotations")
                        .is_some_and(Value::is_object)
                    {
                        pod["metadata"]["annotations"] = json!({});
                    }
                    pod["metadata"]["annotations"][COMPLETION_INDEX] = json!(i.to_string());
                    if !pod["metadata"].get("labels").is_some_and(Value::is_object) {
                        pod["metadata"]["labels"] = json!({});
                    }
                    pod["metadata"]["labels"][COMPLETION_INDEX] = json!(i.to_string());
                    pod["spec"]["hostname"] = json!(format!("{}-{i}", object::name(job)));
                }
                None => {
                    pod["metadata"]["generateName"] = json!(format!("{}-", object::name(job)));
                }
            }
            match self.api.create(&rt, Some(ns), pod, &opts).await {
                Ok(w) => self.recorder.normal(
                    job,
                    "SuccessfulCreate",
                    format!("Created pod: {}", object::name(&w.object)),
                    &self.source,
                ),
                Err(e) => {
                    self.recorder.warning(
                        job,
                        "FailedCreate",
                        format!("Error creating: {}", e.message),
                        &self.source,
                    );
                    return Err(e);
                }
            }
        }
        Ok(None)
    }
}

/// What the pods of a job add up to.
struct Tally {
    /// Finished and counted (finalizer removed) as succeeded.
    succeeded: i64,
    /// Finished and counted as failed.
    failed: i64,
    /// Succeeded pods listed as uncounted (finalizer still on).
    uncounted_ok: Vec<String>,
    /// Failed pods listed as uncounted.
    uncounted_failed: Vec<String>,
    /// Completed indexes (Indexed jobs).
    completed: BTreeSet<i64>,
    /// When the latest pod failed.
    last_failure: Option<jiff::Timestamp>,
    /// Pods still running or pending.
    active: Vec<Arc<Value>>,
    /// Pods being deleted that have not finished.
    terminating: i64,
    /// Active pods that are ready.
    ready: i64,
    /// Container restarts of active pods (restartPolicy OnFailure).
    restarts: i64,
}

/// Counts a job's pods. Finished pods are counted once: first listed as
/// uncounted, then their finalizer removed, then added to the counts.
fn tally(job: &Value, pods: &[Arc<Value>], old_status: &Value, indexed: bool) -> Tally {
    let mut succeeded = old_status
        .get("succeeded")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut failed = old_status
        .get("failed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut uncounted_ok = uid_list(old_status, "succeeded");
    let mut uncounted_failed = uid_list(old_status, "failed");
    let with_finalizer: HashSet<String> = pods
        .iter()
        .filter(|p| has_finalizer(p))
        .map(|p| object::uid(p).to_string())
        .collect();
    let mut completed = parse_indexes(podutil::str_at(old_status, "/completedIndexes"));
    uncounted_ok.retain(|u| {
        if with_finalizer.contains(u) {
            return true;
        }
        succeeded += 1;
        false
    });
    uncounted_failed.retain(|u| {
        if with_finalizer.contains(u) {
            return true;
        }
        failed += 1;
        false
    });
    let mut last_failure: Option<jiff::Timestamp> = None;
    for p in pods {
        let uid = object::uid(p).to_string();
        let done_ok = podutil::phase(p) == "Succeeded";
        // Deleted pods count as failed (podReplacementPolicy
        // TerminatingOrFailed), as they may never reach a phase.
        let done_failed = podutil::phase(p) == "Failed" || (object::is_deleting(p) && !done_ok);
        if done_failed {
            last_failure = last_failure.max(finished_at(p));
        }
        if done_ok
            && indexed
            && let Some(i) = completion_index(p)
        {
            completed.insert(i);
        }
        if !has_finalizer(p) || uncounted_ok.contains(&uid) || uncounted_failed.contains(&uid) {
            continue;
        }
        if done_ok {
            uncounted_ok.push(uid);
        } else if done_failed {
            uncounted_failed.push(uid);
        }
    }
    let active: Vec<Arc<Value>> = pods
        .iter()
        .filter(|p| podutil::is_active(p))
        .cloned()
        .collect();
    let terminating = pods
        .iter()
        .filter(|p| object::is_deleting(p) && !podutil::is_terminal(p))
        .count() as i64;
    let ready = active.iter().filter(|p| podutil::is_ready(p)).count() as i64;
    let restarts: i64 = if podutil::str_at(job, "/spec/template/spec/restartPolicy") == "OnFailure"
    {
        active.iter().map(|p| podutil::restart_count(p)).sum()
    } else {
        0
    };
    Tally {
        succeeded,
        failed,
        uncounted_ok,
        uncounted_failed,
        completed,
        last_failure,
        active,
        terminating,
        ready,
        restarts,
    }
}

/// What decides a running job's fate.
struct Fate {
    completions: Option<i64>,
    indexed: bool,
    completed: i64,
    succeeded_total: i64,
    failed_total: i64,
    backoff_limit: i64,
    no_active: bool,
    suspended: bool,
}

/// Adds the interim condition (SuccessCriteriaMet or FailureTarget) once
/// the job's fate is decided; returns when to look again for a deadline
/// still ahead.
fn decide_fate(
    job: &Value,
    status: &Value,
    fate: &Fate,
    conditions: &mut Vec<Value>,
    now: jiff::Timestamp,
    now_s: &str,
) -> Option<Duration> {
    let deadline = int_at(job, "/spec/activeDeadlineSeconds").and_then(|secs| {
        let start = status
            .get("startTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time)?;
        Some(podutil::after(
            start,
            Duration::from_secs(secs.max(0) as u64),
        ))
    });
    let complete_now = match fate.completions {
        Some(c) if fate.indexed => fate.completed >= c,
        Some(c) => fate.succeeded_total >= c,
        None => fate.succeeded_total > 0 && fate.no_active,
    };
    if complete_now {
        conditions.push(job_condition(
            "SuccessCriteriaMet",
            "CompletionsReached",
            "Reached expected number of succeeded pods",
            now_s,
        ));
    } else if fate.failed_total > fate.backoff_limit {
        conditions.push(job_condition(
            "FailureTarget",
            "BackoffLimitExceeded",
            "Job has reached the specified backoff limit",
            now_s,
        ));
    } else if let Some(d) = deadline {
        if d <= now {
            conditions.push(job_condition(
                "FailureTarget",
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
                now_s,
            ));
        } else if !fate.suspended {
            return Some(podutil::until(d, now));
        }
    }
    None
}

/// Turns the interim condition `target` into the final one (Complete or
/// Failed); returns the event to post: (warning, reason, message).
fn finish(
    target: &Value,
    conditions: &mut Vec<Value>,
    status: &mut Value,
    now_s: &str,
) -> (bool, String, String) {
    let success = target.get("type").and_then(Value::as_str) == Some("SuccessCriteriaMet");
    let text = |k: &str| {
        target
            .get(k)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (reason, message) = (text("reason"), text("message"));
    if success {
        conditions.push(job_condition("Complete", &reason, &message, now_s));
        status["completionTime"] = json!(now_s);
        (false, "Completed".into(), "Job completed".into())
    } else {
        conditions.push(job_condition("Failed", &reason, &message, now_s));
        (true, reason, message)
    }
}

/// Sets the Suspended condition (true on suspension, false on resumption);
/// returns the event to post.
fn set_suspended(
    conditions: &mut Vec<Value>,
    suspended: bool,
    now_s: &str,
) -> (bool, String, String) {
    conditions.retain(|c| c.get("type").and_then(Value::as_str) != Some("Suspended"));
    if suspended {
        conditions.push(job_condition(
            "Suspended",
            "JobSuspended",
            "Job suspended",
            now_s,
        ));
        (false, "Suspended".into(), "Job suspended".into())
    } else {
        conditions.push(json!({
            "type": "Suspended", "status": "False", "lastProbeTime": now_s,
            "lastTransitionTime": now_s, "reason": "JobResumed", "message": "Job resumed",
        }));
        (false, "Resumed".into(), "Job resumed".into())
    }
}

/// The counts a job's status reports.
struct Counts {
    succeeded: i64,
    failed: i64,
    active: i64,
    ready: i64,
    terminating: i64,
}

/// Writes the counts, uncounted pods, completed indexes and conditions
/// into `status`, leaving out zero counts as kube does.
fn fill_status(
    status: &mut Value,
    counts: &Counts,
    uncounted_ok: &[String],
    uncounted_failed: &[String],
    completed: Option<&BTreeSet<i64>>,
    conditions: &[Value],
) {
    status["succeeded"] = json!(counts.succeeded);
    status["failed"] = json!(counts.failed);
    status["active"] = json!(counts.active);
    status["ready"] = json!(counts.ready);
    status["terminating"] = json!(counts.terminating);
    let mut uncounted = json!({});
    if !uncounted_ok.is_empty() {
        uncounted["succeeded"] = json!(uncounted_ok);
    }
    if !uncounted_failed.is_empty() {
        uncounted["failed"] = json!(uncounted_failed);
    }
    status["uncountedTerminatedPods"] = uncounted;
    if let Some(completed) = completed.filter(|c| !c.is_empty()) {
        status["completedIndexes"] = json!(format_indexes(completed));
    }
    if !conditions.is_empty() {
        status["conditions"] = json!(conditions);
    }
    for k in ["succeeded", "failed", "active"] {
        if status.get(k).and_then(Value::as_i64) == Some(0)
            && let Some(o) = status.as_object_mut()
        {
            o.remove(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn completed_indexes_round_trip() {
        let set = parse_indexes("0-2,4,6-7");
        assert_eq!(set.len(), 6);
        assert_eq!(format_indexes(&set), "0-2,4,6-7");
        assert_eq!(format_indexes(&BTreeSet::new()), "");
    }
}
