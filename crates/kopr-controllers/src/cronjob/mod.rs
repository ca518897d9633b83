//! The CronJob controller, as kube-controller-manager's (v2, 1.32): at each
//! scheduled time (in `spec.timeZone`, or a `TZ=`/`CRON_TZ=` prefix, else
//! UTC) it creates the Job `<cronjob>-<minutes since the epoch>` from
//! `spec.jobTemplate`, honouring `suspend`, `startingDeadlineSeconds` and
//! `concurrencyPolicy` (Allow, Forbid, Replace); it keeps `status.active`,
//! `lastScheduleTime` and `lastSuccessfulTime`, deletes finished Jobs past
//! the history limits, and posts kube's Events. Nothing polls: each
//! CronJob's key is queued again for its next scheduled time (a timer per
//! key in the work queue), and Job changes wake the CronJob that controls
//! them.

mod schedule;
#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::informer::{Change, Informer, Kind};
use super::podutil::{self, CONTROLLER_MANAGER};
use super::recorder::{Recorder, Source};
use super::workqueue::WorkQueue;
use super::writes;
use crate::gofmt::quote as go_quote;
use crate::object;
use crate::registry::{Api, DeleteOptions, Propagation};
use crate::status::ApiError;

use schedule::{
    format_schedule, job_from_template, job_name, next_schedule_time, next_schedule_time_duration,
    plus_secs, rfc1123z, starting_deadline,
};

/// The controller.
pub struct CronJobController {
    api: Api,
    informer: Arc<Informer>,
    recorder: Recorder,
    source: Source,
    queue: Arc<WorkQueue>,
    clock: fn() -> jiff::Timestamp,
}

/// `Complete` or `Failed`, when a Job has finished.
fn finished_condition(job: &Value) -> Option<&str> {
    podutil::at(job, "/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .filter(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        .filter_map(|c| c.get("type").and_then(Value::as_str))
        .find(|t| matches!(*t, "Complete" | "Failed"))
}

fn active_refs(cj: &Value) -> Vec<Value> {
    podutil::at(cj, "/status/active")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

fn ref_str<'a>(r: &'a Value, k: &str) -> &'a str {
    r.get(k).and_then(Value::as_str).unwrap_or("")
}

fn in_active_list(cj: &Value, uid: &str) -> bool {
    active_refs(cj).iter().any(|r| ref_str(r, "uid") == uid)
}

fn in_active_list_by_name(cj: &Value, namespace: &str, name: &str) -> bool {
    active_refs(cj)
        .iter()
        .any(|r| ref_str(r, "name") == name && ref_str(r, "namespace") == namespace)
}

/// Sets a status field (None removes it, as Go's `omitempty` drops an
/// empty list).
fn set_status_field(cj: &mut Value, field: &str, value: Option<Value>) {
    let Some(obj) = cj.as_object_mut() else {
        return;
    };
    let status = obj.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    if let Some(status) = status.as_object_mut() {
        match value {
            Some(v) => status.insert(field.to_string(), v),
            None => status.remove(field),
        };
    }
}

fn set_active(cj: &mut Value, refs: Vec<Value>) {
    let value = (!refs.is_empty()).then_some(Value::Array(refs));
    set_status_field(cj, "active", value);
}

fn delete_from_active_list(cj: &mut Value, uid: &str) {
    let mut refs = active_refs(cj);
    refs.retain(|r| ref_str(r, "uid") != uid);
    set_active(cj, refs);
}

/// An ObjectReference to a Job, as `ref.GetReference` makes it.
fn job_reference(job: &Value) -> Value {
    json!({
        "kind": "Job",
        "namespace": object::namespace(job),
        "name": object::name(job),
        "uid": object::uid(job),
        "apiVersion": "batch/v1",
        "resourceVersion": object::meta_str(job, "resourceVersion").unwrap_or(""),
    })
}

/// When a Job started, for ordering (unstarted Jobs last, then by name).
fn by_start_time(a: &Arc<Value>, b: &Arc<Value>) -> std::cmp::Ordering {
    let start = |j: &Value| {
        podutil::at(j, "/status/startTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time)
    };
    match (start(a), start(b)) {
        (Some(x), Some(y)) if x != y => x.cmp(&y),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        _ => object::name(a).cmp(object::name(b)),
    }
}

impl CronJobController {
    /// A controller working from the cache, queueing keys on `queue`.
    pub fn new(
        api: Api,
        informer: Arc<Informer>,
        recorder: Recorder,
        queue: Arc<WorkQueue>,
    ) -> Arc<Self> {
        Arc::new(CronJobController {
            api,
            informer,
            recorder,
            source: Source::component("cronjob-controller"),
            queue,
            clock: podutil::now,
        })
    }

    fn warn(&self, cj: &Value, reason: &str, message: String) {
        self.recorder.warning(cj, reason, message, &self.source);
    }

    fn normal(&self, cj: &Value, reason: &str, message: String) {
        self.recorder.normal(cj, reason, message, &self.source);
    }

    /// The key of the CronJob a Job's controller reference names, if that
    /// CronJob exists with that uid.
    fn owner_key(&self, job: &Value) -> Option<String> {
        let r = podutil::controller_ref(job)?;
        if ref_str(r, "kind") != "CronJob" {
            return None;
        }
        let ns = object::namespace(job);
        let cj = self.informer.get(Kind::CronJob, ns, ref_str(r, "name"))?;
        (object::uid(&cj) == ref_str(r, "uid")).then(|| Kind::CronJob.key(ns, object::name(&cj)))
    }

    /// Queues the CronJobs a cache change concerns, as kube's informer
    /// handlers do: a CronJob added or deleted now; one whose schedule or
    /// time zone changed at its next scheduled time; other changes now;
    /// a Job's changes wake its controlling CronJob (old and new).
    pub fn observe(&self, ch: &Change) {
        match ch.kind {
            Kind::CronJob => match (ch.old.as_deref(), ch.new.as_deref()) {
                (Some(old), Some(new)) => self.cron_job_updated(&ch.key, old, new),
                _ => self.queue.add(ch.key.clone()),
            },
            Kind::Job => {
                for job in ch.old.iter().chain(ch.new.iter()) {
                    if let Some(key) = self.owner_key(job) {
                        self.queue.add(key);
                    }
                }
            }
            _ => {}
        }
    }

    fn cron_job_updated(&self, key: &str, old: &Value, new: &Value) {
        let changed = |p: &str| podutil::at(old, p) != podutil::at(new, p);
        if !changed("/spec/schedule") && !changed("/spec/timeZone") {
            self.queue.add(key.to_string());
            return;
        }
        let (spec, _) = format_schedule(new);
        match crate::cron::parse_standard(&spec) {
            Ok(sched) => {
                if let Some(d) = next_schedule_time_duration(new, (self.clock)(), &sched) {
                    self.queue.add_after(key.to_string(), d);
                }
            }
            Err(_) => self.warn(
                new,
                "UnParseableCronJobSchedule",
                format!(
                    "unparseable schedule for cronjob: {}",
                    podutil::str_at(new, "/spec/schedule")
                ),
            ),
        }
    }

    /// Reconciles one CronJob; returns when to look at it again.
    pub async fn sync(&self, key: String) -> Result<Option<Duration>, ApiError> {
        let Some(cj) = self.informer.get_key(&key) else {
            return Ok(None);
        };
        let ns = object::namespace(&cj).to_string();
        let name = object::name(&cj).to_string();
        // Every Job whose controller reference names the CronJob, even one
        // whose labels no longer match the template.
        let jobs: Vec<Arc<Value>> = self
            .informer
            .list(Kind::Job, Some(&ns))
            .into_iter()
            .filter(|j| podutil::controller_ref(j).is_some_and(|r| ref_str(r, "name") == name))
            .collect();
        let mut work = (*cj).clone();
        let mut update = self.cleanup_finished_jobs(&mut work, &jobs).await;
        let now = (self.clock)();
        let synced = self.sync_cron_job(&mut work, &jobs, now, &mut update).await;
        if let Err(e) = &synced {
            tracing::debug!(cronjob = %key, error = %e, "reconciling the cronjob failed");
        }
        if update {
            self.write_status(&work).await?;
        }
        synced
    }

    /// Writes the CronJob's status as a client's PUT of `status` does,
    /// conditional on the resourceVersion the controller read.
    async fn write_status(&self, cj: &Value) -> Result<(), ApiError> {
        let Some(t) = writes::target_of(&self.api, Kind::CronJob, cj) else {
            return Ok(());
        };
        let opts = podutil::writer(CONTROLLER_MANAGER);
        let written = self.api.update(&t, Some("status"), cj.clone(), &opts).await;
        writes::unless_gone(written).map(|_| ())
    }

    async fn get_live(&self, kind: Kind, ns: &str, name: &str) -> Result<Arc<Value>, ApiError> {
        match writes::target(&self.api, kind, ns, name) {
            Some(t) => self.api.get(&t).await,
            None => Err(ApiError::internal(format!("{kind:?} is not served"))),
        }
    }

    /// Deletes a Job (dependents in the background) and drops it from the
    /// active list; false (after a FailedDelete event) when that fails.
    async fn delete_job(&self, cj: &mut Value, job: &Value) -> bool {
        let deleted = match writes::target_of(&self.api, Kind::Job, job) {
            Some(t) => {
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..DeleteOptions::default()
                };
                self.api.delete(&t, &opts).await.map(|_| ())
            }
            None => Err(ApiError::internal("jobs are not served")),
        };
        if let Err(e) = deleted {
            self.warn(cj, "FailedDelete", format!("Deleted job: {}", e.message));
            tracing::warn!(job = object::name(job), error = %e, "deleting a cronjob's job failed");
            return false;
        }
        delete_from_active_list(cj, object::uid(job));
        self.normal(
            cj,
            "SuccessfulDelete",
            format!("Deleted job {}", object::name(job)),
        );
        true
    }

    /// Deletes the oldest finished Jobs beyond the history limits; returns
    /// whether the status changed.
    async fn cleanup_finished_jobs(&self, cj: &mut Value, jobs: &[Arc<Value>]) -> bool {
        let successful_limit = podutil::int_at(cj, "/spec/successfulJobsHistoryLimit");
        let failed_limit = podutil::int_at(cj, "/spec/failedJobsHistoryLimit");
        if successful_limit.is_none() && failed_limit.is_none() {
            return false;
        }
        let mut successful = Vec::new();
        let mut failed = Vec::new();
        for job in jobs {
            match finished_condition(job) {
                Some("Complete") => successful.push(job.clone()),
                Some("Failed") => failed.push(job.clone()),
                _ => {}
            }
        }
        let mut update = false;
        for (mut list, limit) in [(successful, successful_limit), (failed, failed_limit)] {
            let Some(limit) = limit else { continue };
            let excess = list.len() as i64 - limit;
            if excess <= 0 {
                continue;
            }
            list.sort_by(by_start_time);
            for job in list.iter().take(excess as usize) {
                if self.delete_job(cj, job).await {
                    update = true;
                }
            }
        }
        update
    }

    /// `syncCronJob`: reconciles the active list with the Jobs, then starts
    /// the Job that is due, if any. Sets `update` when the status changed;
    /// returns when to look again.
    async fn sync_cron_job(
        &self,
        cj: &mut Value,
        jobs: &[Arc<Value>],
        now: jiff::Timestamp,
        update: &mut bool,
    ) -> Result<Option<Duration>, ApiError> {
        let ns = object::namespace(cj).to_string();
        let name = object::name(cj).to_string();
        let mut children: HashSet<String> = HashSet::new();
        for job in jobs {
            let uid = object::uid(job);
            children.insert(uid.to_string());
            let found = in_active_list(cj, uid);
            let finished = finished_condition(job);
            match finished {
                None if !found => {
                    // Perhaps our own status update is not in the cache yet.
                    let fresh = self.get_live(Kind::CronJob, &ns, &name).await?;
                    if in_active_list(&fresh, uid) {
                        *cj = (*fresh).clone();
                        continue;
                    }
                    self.warn(
                        cj,
                        "UnexpectedJob",
                        format!(
                            "Saw a job that the controller did not create or forgot: {}",
                            object::name(job)
                        ),
                    );
                }
                None => {}
                Some(condition) => {
                    if found {
                        delete_from_active_list(cj, uid);
                        self.normal(
                            cj,
                            "SawCompletedJob",
                            format!(
                                "Saw completed job: {}, condition: {condition}",
                                object::name(job)
                            ),
                        );
                        *update = true;
                    }
                    if condition == "Complete" {
                        self.note_success(cj, job, update);
                    }
                }
            }
        }

        // Active Jobs that are gone (asked of the server, not the cache).
        for r in active_refs(cj) {
            if children.contains(ref_str(&r, "uid")) {
                continue;
            }
            match self
                .get_live(Kind::Job, ref_str(&r, "namespace"), ref_str(&r, "name"))
                .await
            {
                Err(e) if e.code == 404 => {
                    self.normal(
                        cj,
                        "MissingJob",
                        format!("Active job went missing: {}", ref_str(&r, "name")),
                    );
                    delete_from_active_list(cj, ref_str(&r, "uid"));
                    *update = true;
                }
                Err(e) => return Err(e),
                Ok(_) => {}
            }
        }

        if object::is_deleting(cj) {
            return Ok(None);
        }
        if let Some(tz) = podutil::at(cj, "/spec/timeZone").and_then(Value::as_str)
            && let Err(e) = crate::cron::load_location(tz)
        {
            self.warn(
                cj,
                "UnknownTimeZone",
                format!("invalid timeZone: {}: {e}", go_quote(tz)),
            );
            return Ok(None);
        }
        if podutil::at(cj, "/spec/suspend").and_then(Value::as_bool) == Some(true) {
            return Ok(None);
        }
        let raw_schedule = podutil::str_at(cj, "/spec/schedule").to_string();
        let (spec, zone_in_schedule) = format_schedule(cj);
        if zone_in_schedule {
            self.warn(
                cj,
                "UnsupportedSchedule",
                format!(
                    "CRON_TZ or TZ used in schedule {} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                    go_quote(&raw_schedule)
                ),
            );
        }
        let sched = match crate::cron::parse_standard(&spec) {
            Ok(s) => s,
            Err(e) => {
                self.warn(
                    cj,
                    "UnparseableSchedule",
                    format!("unparseable schedule: {} : {e}", go_quote(&raw_schedule)),
                );
                return Ok(None);
            }
        };
        let (scheduled, too_many) = match next_schedule_time(cj, now, &sched) {
            Err(e) => {
                self.warn(
                    cj,
                    "InvalidSchedule",
                    format!("invalid schedule: {raw_schedule} : {e}"),
                );
                return Ok(None);
            }
            Ok(None) => return Ok(next_schedule_time_duration(cj, now, &sched)),
            Ok(Some(due)) => due,
        };
        if too_many {
            self.warn(
                cj,
                "TooManyMissedTimes",
                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".into(),
            );
        }
        let next = || next_schedule_time_duration(cj, now, &sched);
        if let Some(secs) = starting_deadline(cj)
            && plus_secs(scheduled, secs) < now
        {
            self.warn(
                cj,
                "MissSchedule",
                format!(
                    "Missed scheduled time to start a job: {}",
                    rfc1123z(scheduled)
                ),
            );
            return Ok(next());
        }
        let last_scheduled = podutil::at(cj, "/status/lastScheduleTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time);
        if in_active_list_by_name(cj, &ns, &job_name(&name, scheduled))
            || last_scheduled == Some(scheduled)
        {
            return Ok(next());
        }
        let policy = podutil::str_at(cj, "/spec/concurrencyPolicy");
        if policy == "Forbid" && !active_refs(cj).is_empty() {
            self.normal(
                cj,
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is Forbid".into(),
            );
            return Ok(next());
        }
        if policy == "Replace" {
            for r in active_refs(cj) {
                let (jns, jname) = (ref_str(&r, "namespace"), ref_str(&r, "name"));
                let job = match self.get_live(Kind::Job, jns, jname).await {
                    Ok(j) => j,
                    Err(e) => {
                        self.warn(cj, "FailedGet", format!("Get job: {}", e.message));
                        return Err(e);
                    }
                };
                if !self.delete_job(cj, &job).await {
                    return Err(ApiError::internal(format!(
                        "could not replace job {jns}/{jname}"
                    )));
                }
                *update = true;
            }
        }
        let created = self.create_job(cj, scheduled).await?;
        let Some(job) = created else {
            return Ok(None);
        };
        let mut refs = active_refs(cj);
        refs.push(job_reference(&job));
        set_active(cj, refs);
        let at = json!(podutil::rfc3339(scheduled));
        set_status_field(cj, "lastScheduleTime", Some(at));
        *update = true;
        Ok(next_schedule_time_duration(cj, now, &sched))
    }

    /// Creates the Job for a scheduled time. Returns the Job to add to the
    /// active list: the new one, or one of ours that exists already but is
    /// not listed; None when there is nothing to add.
    async fn create_job(
        &self,
        cj: &Value,
        scheduled: jiff::Timestamp,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        let body = job_from_template(cj, scheduled).map_err(ApiError::internal)?;
        let Some(rt) = self.api.catalog.get("batch", "v1", "jobs") else {
            return Ok(None);
        };
        let ns = object::namespace(cj);
        let opts = podutil::writer(CONTROLLER_MANAGER);
        match self.api.create(&rt, Some(ns), body.clone(), &opts).await {
            Ok(w) => {
                self.normal(
                    cj,
                    "SuccessfulCreate",
                    format!("Created job {}", object::name(&w.object)),
                );
                Ok(Some(w.object))
            }
            Err(e) if e.causes.iter().any(|c| c.reason == "NamespaceTerminating") => Err(e),
            Err(e) if e.reason == "AlreadyExists" => {
                let job = self.get_live(Kind::Job, ns, object::name(&body)).await?;
                // Someone else's Job of that name, or ours and listed.
                if podutil::controller_uid(&job) != Some(object::uid(cj))
                    || in_active_list(cj, object::uid(&job))
                {
                    return Ok(None);
                }
                tracing::info!(job = object::name(&job), "job already exists");
                Ok(Some(job))
            }
            Err(e) => {
                self.warn(
                    cj,
                    "FailedCreate",
                    format!("Error creating job: {}", e.message),
                );
                Err(e)
            }
        }
    }

    /// Moves `lastSuccessfulTime` up to a completed Job's completion time.
    fn note_success(&self, cj: &mut Value, job: &Value, update: &mut bool) {
        let completion = podutil::at(job, "/status/completionTime")
            .and_then(Value::as_str)
            .map(str::to_string);
        let last = podutil::at(cj, "/status/lastSuccessfulTime")
            .and_then(Value::as_str)
            .and_then(podutil::parse_time);
        let Some(completion) = completion else {
            if last.is_none() {
                // kube copies the (absent) completion time: nothing to write.
                *update = true;
            }
            return;
        };
        let later = podutil::parse_time(&completion).is_some_and(|c| last.is_none_or(|l| c > l));
        if later {
            set_status_field(cj, "lastSuccessfulTime", Some(json!(completion)));
            *update = true;
        }
    }
}
