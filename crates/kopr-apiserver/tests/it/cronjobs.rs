//! CronJobs on the embedded cluster through kube-rs: the CronJob controller
//! starts Jobs at their scheduled times (the Job controller and the
//! simulated kubelet run them), keeps the CronJob's status, applies the
//! concurrency policy and the history limits, and posts kube's Events.
//!
//! Schedules are minute-granular, so no test waits for a scheduled time: as
//! kube's own tests do, they put `status.lastScheduleTime` in the past, so
//! that a run is due at once. The schedules are daily, so that no further
//! run falls due while a test runs (unless it straddles midnight).

use crate::common;

use std::future::ready;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::Event;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::{Value, json};

const NS: &str = "default";
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

fn json_of<T: serde::Serialize>(v: &T) -> Value {
    serde_json::to_value(v).unwrap()
}

/// A CronJob running daily at midnight; `extra` is merged into its spec,
/// and `job_spec` into its jobTemplate's spec.
fn cron_job(name: &str, extra: Value, job_spec: Value) -> CronJob {
    let mut cj = json!({
        "metadata": {"name": name},
        "spec": {
            "schedule": "0 0 * * *",
            "jobTemplate": {
                "metadata": {"labels": {"cron": name}},
                "spec": {
                    "backoffLimit": 0,
                    "template": {"spec": {
                        "restartPolicy": "Never",
                        "containers": [{"name": "c", "image": "busybox"}],
                    }},
                },
            },
        },
    });
    merge(&mut cj["spec"], extra);
    merge(&mut cj["spec"]["jobTemplate"]["spec"], job_spec);
    serde_json::from_value(cj).unwrap()
}

fn merge(into: &mut Value, from: Value) {
    if let (Some(into), Value::Object(from)) = (into.as_object_mut(), from) {
        into.extend(from);
    }
}

/// Midnight (UTC) `days` days ago, as RFC 3339.
fn days_ago(days: i64) -> String {
    let now = jiff::Timestamp::now().as_second();
    let t = (now - now.rem_euclid(86_400)) - days * 86_400;
    jiff::Timestamp::from_second(t).unwrap().to_string()
}

async fn patch_status(cjs: &Api<CronJob>, name: &str, status: Value) {
    cjs.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": status })),
    )
    .await
    .unwrap();
}

async fn patch_spec(cjs: &Api<CronJob>, name: &str, spec: Value) {
    cjs.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": spec })),
    )
    .await
    .unwrap();
}

/// Waits until the CronJob satisfies `check`; returns it as JSON.
async fn cron_job_where(
    cjs: &Api<CronJob>,
    name: &str,
    what: &str,
    check: impl Fn(&Value) -> bool,
) -> Value {
    let cond = |cj: Option<&CronJob>| cj.is_some_and(|cj| check(&json_of(cj)));
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(cjs.clone(), name, cond),
    )
    .await
    .unwrap_or_else(|_| panic!("{name}: {what}: not reached"))
    .unwrap();
    json_of(&cjs.get(name).await.unwrap())
}

/// Waits for an Event about `object` with `reason`.
async fn event(client: &kube::Client, object: &str, reason: &str) -> Event {
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let mut stream = watcher(events, watcher::Config::default())
        .applied_objects()
        .try_filter(|e| {
            ready(
                e.involved_object.name.as_deref() == Some(object)
                    && e.reason.as_deref() == Some(reason),
            )
        })
        .boxed();
    let found = stream.try_next();
    tokio::time::timeout(Duration::from_secs(30), found)
        .await
        .unwrap_or_else(|_| panic!("no {reason} event about {object}"))
        .unwrap()
        .unwrap_or_else(|| panic!("the event watch of {object} ended"))
}

async fn wait_deleted(jobs: &Api<Job>, name: &str) {
    let Ok(job) = jobs.get(name).await else {
        return;
    };
    let uid = job.metadata.uid.unwrap_or_default();
    tokio::time::timeout(
        Duration::from_secs(30),
        await_condition(jobs.clone(), name, conditions::is_deleted(&uid)),
    )
    .await
    .unwrap_or_else(|_| panic!("job {name} is not deleted"))
    .unwrap();
}

/// The names of the Jobs a CronJob controls.
async fn jobs_of(jobs: &Api<Job>, cj: &Value) -> Vec<String> {
    let uid = cj["metadata"]["uid"].as_str().unwrap_or("");
    let mut names: Vec<String> = jobs
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .iter()
        .filter(|j| {
            j.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.controller == Some(true) && r.uid == uid)
        })
        .filter_map(|j| j.metadata.name.clone())
        .collect();
    names.sort();
    names
}

/// A Job of the CronJob, made by hand (as a controller that crashed after
/// creating it would leave it).
async fn own_job(jobs: &Api<Job>, cj: &Value, name: &str, job_spec: Value) -> Value {
    let mut spec = json!({
        "backoffLimit": 0,
        "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}],
        }},
    });
    merge(&mut spec, job_spec);
    let job: Job = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "CronJob",
            "name": cj["metadata"]["name"], "uid": cj["metadata"]["uid"],
            "controller": true, "blockOwnerDeletion": true,
        }]},
        "spec": spec,
    }))
    .unwrap();
    json_of(&jobs.create(&PostParams::default(), &job).await.unwrap())
}

fn active_names(cj: &Value) -> Vec<String> {
    cj["status"]["active"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str().map(str::to_string))
        .collect()
}

#[tokio::test]
async fn a_due_run_starts_a_job_and_the_status_follows_it() {
    let f = common::start().await;
    let cjs: Api<CronJob> = Api::namespaced(f.client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(f.client.clone(), NS);
    cjs.create(
        &PostParams::default(),
        &cron_job(
            "tick",
            json!({"timeZone": "Asia/Kolkata", "suspend": true}),
            json!({}),
        ),
    )
    .await
    .unwrap();
    // Two hundred missed days: too many, but the latest still runs.
    let long_ago = days_ago(200);
    patch_status(&cjs, "tick", json!({"lastScheduleTime": long_ago})).await;
    patch_spec(&cjs, "tick", json!({"suspend": false})).await;

    let cj = cron_job_where(&cjs, "tick", "a run recorded", |cj| {
        cj["status"]["lastScheduleTime"]
            .as_str()
            .is_some_and(|t| t != long_ago)
    })
    .await;
    let scheduled: jiff::Timestamp = cj["status"]["lastScheduleTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let name = format!("tick-{}", scheduled.as_second() / 60);
    let job = json_of(&jobs.get(&name).await.unwrap());
    // The scheduled time, in the CronJob's zone (+05:30).
    let local = scheduled
        .to_zoned(jiff::tz::TimeZone::get("Asia/Kolkata").unwrap())
        .strftime("%Y-%m-%dT%H:%M:%S+05:30")
        .to_string();
    assert_eq!(job["metadata"]["annotations"][SCHEDULED], local);
    assert!(
        local.ends_with("T00:00:00+05:30"),
        "midnight in Kolkata: {local}"
    );
    assert_eq!(job["metadata"]["labels"]["cron"], "tick");
    let owner = &job["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "CronJob");
    assert_eq!(owner["name"], "tick");
    assert_eq!(owner["uid"], cj["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);

    let created = event(&f.client, "tick", "SuccessfulCreate").await;
    assert_eq!(
        created.message.as_deref(),
        Some(&*format!("Created job {name}"))
    );
    assert_eq!(
        created.source.and_then(|s| s.component).as_deref(),
        Some("cronjob-controller")
    );
    let many = event(&f.client, "tick", "TooManyMissedTimes").await;
    assert_eq!(many.type_.as_deref(), Some("Warning"));
    assert_eq!(
        many.message.as_deref(),
        Some(
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
        )
    );

    // The Job completes: it leaves the active list, and its completion
    // time becomes the last successful time.
    let cj = cron_job_where(&cjs, "tick", "the run completed", |cj| {
        cj["status"]["active"].is_null() && cj["status"]["lastSuccessfulTime"].is_string()
    })
    .await;
    let job = json_of(&jobs.get(&name).await.unwrap());
    assert_eq!(
        cj["status"]["lastSuccessfulTime"],
        job["status"]["completionTime"]
    );
    let saw = event(&f.client, "tick", "SawCompletedJob").await;
    assert_eq!(
        saw.message.as_deref(),
        Some(&*format!("Saw completed job: {name}, condition: Complete"))
    );
}

#[tokio::test]
async fn forbid_skips_a_run_while_a_job_is_active() {
    let f = common::start().await;
    let cjs: Api<CronJob> = Api::namespaced(f.client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(f.client.clone(), NS);
    let spec = json!({"concurrencyPolicy": "Forbid", "suspend": true});
    let cj = json_of(
        &cjs.create(
            &PostParams::default(),
            &cron_job("lock", spec, json!({"suspend": true})),
        )
        .await
        .unwrap(),
    );
    // A Job that never finishes (suspended) is active.
    let old = own_job(&jobs, &cj, "lock-old", json!({"suspend": true})).await;
    let reference = json!({"kind": "Job", "namespace": NS, "name": "lock-old",
        "uid": old["metadata"]["uid"], "apiVersion": "batch/v1"});
    patch_status(
        &cjs,
        "lock",
        json!({"active": [reference], "lastScheduleTime": days_ago(5)}),
    )
    .await;
    patch_spec(&cjs, "lock", json!({"suspend": false})).await;

    let skipped = event(&f.client, "lock", "JobAlreadyActive").await;
    assert_eq!(skipped.type_.as_deref(), Some("Normal"));
    assert_eq!(
        skipped.message.as_deref(),
        Some(
            "Not starting job because prior execution is running and concurrency policy is Forbid"
        )
    );
    let cj = json_of(&cjs.get("lock").await.unwrap());
    assert_eq!(jobs_of(&jobs, &cj).await, ["lock-old"]);
    assert_eq!(active_names(&cj), ["lock-old"]);
}

#[tokio::test]
async fn replace_deletes_the_active_job_for_the_new_run() {
    let f = common::start().await;
    let cjs: Api<CronJob> = Api::namespaced(f.client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(f.client.clone(), NS);
    let spec = json!({"concurrencyPolicy": "Replace", "suspend": true});
    let cj = json_of(
        &cjs.create(
            &PostParams::default(),
            &cron_job("swap", spec, json!({"suspend": true})),
        )
        .await
        .unwrap(),
    );
    let old = own_job(&jobs, &cj, "swap-old", json!({"suspend": true})).await;
    let reference = json!({"kind": "Job", "namespace": NS, "name": "swap-old",
        "uid": old["metadata"]["uid"], "apiVersion": "batch/v1"});
    patch_status(
        &cjs,
        "swap",
        json!({"active": [reference], "lastScheduleTime": days_ago(5)}),
    )
    .await;
    patch_spec(&cjs, "swap", json!({"suspend": false})).await;

    let cj = cron_job_where(&cjs, "swap", "the old job replaced", |cj| {
        let active = active_names(cj);
        active.len() == 1 && active[0] != "swap-old"
    })
    .await;
    let new = active_names(&cj).remove(0);
    let scheduled: jiff::Timestamp = cj["status"]["lastScheduleTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(new, format!("swap-{}", scheduled.as_second() / 60));
    wait_deleted(&jobs, "swap-old").await;
    assert_eq!(jobs_of(&jobs, &cj).await, std::slice::from_ref(&new));
    let deleted = event(&f.client, "swap", "SuccessfulDelete").await;
    assert_eq!(deleted.message.as_deref(), Some("Deleted job swap-old"));
    let created = event(&f.client, "swap", "SuccessfulCreate").await;
    assert_eq!(
        created.message.as_deref(),
        Some(&*format!("Created job {new}"))
    );
}

#[tokio::test]
async fn finished_jobs_beyond_the_history_limits_are_deleted() {
    let f = common::start().await;
    let cjs: Api<CronJob> = Api::namespaced(f.client.clone(), NS);
    let jobs: Api<Job> = Api::namespaced(f.client.clone(), NS);
    let spec =
        json!({"suspend": true, "successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1});
    let cj = json_of(
        &cjs.create(&PostParams::default(), &cron_job("keep", spec, json!({})))
            .await
            .unwrap(),
    );
    let failing = json!({"template": {"spec": {
        "restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox:fail"}],
    }}});
    for name in ["keep-ok-1", "keep-ok-2", "keep-ok-3"] {
        own_job(&jobs, &cj, name, json!({})).await;
    }
    for name in ["keep-bad-1", "keep-bad-2"] {
        own_job(&jobs, &cj, name, failing.clone()).await;
    }
    // The oldest finished ones go, one of each kind stays.
    for name in ["keep-ok-1", "keep-ok-2", "keep-bad-1"] {
        wait_deleted(&jobs, name).await;
    }
    let cj = cron_job_where(&cjs, "keep", "a success recorded", |cj| {
        cj["status"]["lastSuccessfulTime"].is_string()
    })
    .await;
    assert_eq!(jobs_of(&jobs, &cj).await, ["keep-bad-2", "keep-ok-3"]);
    let deleted = event(&f.client, "keep", "SuccessfulDelete").await;
    assert!(
        deleted
            .message
            .as_deref()
            .is_some_and(|m| m.starts_with("Deleted job keep-")),
        "{deleted:?}"
    );
    // Jobs it did not start are noticed while they run.
    let unexpected = event(&f.client, "keep", "UnexpectedJob").await;
    assert_eq!(unexpected.type_.as_deref(), Some("Warning"));
    assert!(
        unexpected.message.as_deref().is_some_and(
            |m| m.starts_with("Saw a job that the controller did not create or forgot: keep-")
        ),
        "{unexpected:?}"
    );
}
