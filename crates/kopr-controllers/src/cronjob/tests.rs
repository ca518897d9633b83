//! Unit tests of the CronJob controller's schedule arithmetic and Job
//! making, with the clock passed in (as kube's controller tests do).

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::schedule::*;
use super::{by_start_time, delete_from_active_list, finished_condition, in_active_list_by_name};
use crate::cron::parse_standard;

fn ts(s: &str) -> jiff::Timestamp {
    s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
}

fn cron_job(schedule: &str, created: &str, last: Option<&str>, deadline: Option<i64>) -> Value {
    let mut cj = json!({
        "apiVersion": "batch/v1",
        "kind": "CronJob",
        "metadata": {"name": "pi", "namespace": "ns", "uid": "cj-uid", "creationTimestamp": created},
        "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {}}}},
        "status": {},
    });
    if let Some(l) = last {
        cj["status"]["lastScheduleTime"] = json!(l);
    }
    if let Some(d) = deadline {
        cj["spec"]["startingDeadlineSeconds"] = json!(d);
    }
    cj
}

fn recent(cj: &Value, now: &str, with_deadline: bool) -> Result<Recent, String> {
    let sched = parse_standard(podutil_schedule(cj)).unwrap_or_else(|e| panic!("{e}"));
    most_recent_schedule_time(cj, ts(now), &sched, with_deadline).map_err(|e| e.to_string())
}

fn podutil_schedule(cj: &Value) -> &str {
    cj["spec"]["schedule"].as_str().unwrap_or("")
}

#[test]
fn the_most_recent_scheduled_time() {
    let at = |s: &str| Some(ts(s));
    // Created after the last whole minute: nothing due yet.
    let cj = cron_job("* * * * *", "2024-03-05T10:00:30Z", None, None);
    let r = recent(&cj, "2024-03-05T10:00:45Z", true).unwrap();
    assert_eq!((r.most_recent, r.missed), (None, Missed::None));
    assert_eq!(r.earliest, ts("2024-03-05T10:00:30Z"));
    // One due.
    let r = recent(&cj, "2024-03-05T10:01:10Z", true).unwrap();
    assert_eq!(
        (r.most_recent, r.missed),
        (at("2024-03-05T10:01:00Z"), Missed::None)
    );
    // A few missed since the last schedule time: the latest one.
    let cj = cron_job(
        "* * * * *",
        "2024-03-05T09:00:00Z",
        Some("2024-03-05T10:00:00Z"),
        None,
    );
    let r = recent(&cj, "2024-03-05T10:05:30Z", true).unwrap();
    assert_eq!(
        (r.most_recent, r.missed),
        (at("2024-03-05T10:05:00Z"), Missed::Few)
    );
    // Hours of minutes missed: too many, still the latest.
    let cj = cron_job(
        "* * * * *",
        "2024-03-05T06:00:00Z",
        Some("2024-03-05T07:00:00Z"),
        None,
    );
    let r = recent(&cj, "2024-03-05T10:05:30Z", true).unwrap();
    assert_eq!(
        (r.most_recent, r.missed),
        (at("2024-03-05T10:05:00Z"), Missed::Many)
    );
    // A starting deadline bounds how far back to look.
    let cj = cron_job(
        "* * * * *",
        "2024-03-05T06:00:00Z",
        Some("2024-03-05T07:00:00Z"),
        Some(10),
    );
    let r = recent(&cj, "2024-03-05T10:05:05Z", true).unwrap();
    assert_eq!(
        (r.most_recent, r.missed),
        (at("2024-03-05T10:05:00Z"), Missed::None)
    );
    let r = recent(&cj, "2024-03-05T10:05:05Z", false).unwrap();
    assert_eq!(r.missed, Missed::Many);
    // Irregular gaps (every 4 hours from 06:30 to 16:30 on weekdays).
    let cj = cron_job(
        "30 6-16/4 * * 1-5",
        "2024-03-01T00:00:00Z",
        Some("2024-03-04T06:30:00Z"),
        None,
    );
    let r = recent(&cj, "2024-03-04T17:00:00Z", true).unwrap();
    assert_eq!(
        (r.most_recent, r.missed),
        (at("2024-03-04T14:30:00Z"), Missed::Few)
    );
    // @every counts from the creation time.
    let cj = cron_job("@every 1h", "2024-03-05T10:00:00Z", None, None);
    let r = recent(&cj, "2024-03-05T12:30:00Z", true).unwrap();
    assert_eq!(
        (r.most_recent, r.missed),
        (at("2024-03-05T12:00:00Z"), Missed::Few)
    );
    // A schedule that never fires.
    let cj = cron_job("59 23 31 2 *", "2024-03-05T10:00:00Z", None, None);
    assert_eq!(
        recent(&cj, "2024-03-05T12:30:00Z", true),
        Err("time difference between two schedules is less than 1 second".into())
    );
}

#[test]
fn when_to_look_again() {
    let sched = parse_standard("* * * * *").unwrap();
    let cj = cron_job(
        "* * * * *",
        "2024-03-05T09:00:00Z",
        Some("2024-03-05T10:00:00Z"),
        None,
    );
    let d = next_schedule_time_duration(&cj, ts("2024-03-05T10:00:20Z"), &sched);
    assert_eq!(d, Some(Duration::from_millis(40_100)));
    let d = next_schedule_time_duration(&cj, ts("2024-03-05T10:05:30Z"), &sched);
    assert_eq!(d, Some(Duration::from_millis(30_100)));
    let never = parse_standard("59 23 31 2 *").unwrap();
    assert_eq!(
        next_schedule_time_duration(&cj, ts("2024-03-05T10:05:30Z"), &never),
        None
    );

    assert_eq!(
        next_schedule_time(&cj, ts("2024-03-05T10:00:20Z"), &sched),
        Ok(None)
    );
    assert_eq!(
        next_schedule_time(&cj, ts("2024-03-05T10:02:20Z"), &sched),
        Ok(Some((ts("2024-03-05T10:02:00Z"), false)))
    );
}

#[test]
fn schedules_with_time_zones() {
    let mut cj = cron_job("0 9 * * *", "2024-01-01T00:00:00Z", None, None);
    assert_eq!(format_schedule(&cj), ("0 9 * * *".to_string(), false));
    cj["spec"]["timeZone"] = json!("Europe/Berlin");
    assert_eq!(
        format_schedule(&cj),
        ("TZ=Europe/Berlin 0 9 * * *".to_string(), false)
    );
    cj["spec"]["timeZone"] = json!("Mars/Base");
    assert_eq!(format_schedule(&cj), ("0 9 * * *".to_string(), false));
    let cj = cron_job(
        "CRON_TZ=Asia/Tokyo 0 9 * * *",
        "2024-01-01T00:00:00Z",
        None,
        None,
    );
    assert_eq!(
        format_schedule(&cj),
        ("CRON_TZ=Asia/Tokyo 0 9 * * *".to_string(), true)
    );
}

#[test]
fn jobs_made_from_the_template() {
    assert_eq!(job_name("pi", ts("2024-03-05T10:08:00Z")), "pi-28493888");
    assert_eq!(
        rfc1123z(ts("2024-03-05T10:08:00Z")),
        "Tue, 05 Mar 2024 10:08:00 +0000"
    );
    let berlin = crate::cron::load_location("Europe/Berlin").unwrap();
    let london = crate::cron::load_location("Europe/London").unwrap();
    assert_eq!(
        rfc3339_in(ts("2024-01-10T08:00:00Z"), &berlin),
        "2024-01-10T09:00:00+01:00"
    );
    assert_eq!(
        rfc3339_in(ts("2024-01-10T08:00:00Z"), &london),
        "2024-01-10T08:00:00Z"
    );

    let mut cj = cron_job("* * * * *", "2024-03-05T09:00:00Z", None, None);
    cj["spec"]["timeZone"] = json!("Europe/Berlin");
    cj["spec"]["jobTemplate"] = json!({
        "metadata": {"labels": {"app": "pi"}, "annotations": {"note": "x"}, "creationTimestamp": null},
        "spec": {"backoffLimit": 2, "template": {"spec": {"restartPolicy": "Never"}}},
    });
    let job = job_from_template(&cj, ts("2024-03-05T10:08:00Z")).unwrap();
    assert_eq!(
        job,
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": "pi-28493888",
                "labels": {"app": "pi"},
                "annotations": {
                    "note": "x",
                    SCHEDULED_TIMESTAMP: "2024-03-05T11:08:00+01:00",
                },
                "ownerReferences": [{
                    "apiVersion": "batch/v1", "kind": "CronJob", "name": "pi", "uid": "cj-uid",
                    "controller": true, "blockOwnerDeletion": true,
                }],
            },
            "spec": {"backoffLimit": 2, "template": {"spec": {"restartPolicy": "Never"}}},
        })
    );
}

#[test]
fn active_lists_and_finished_jobs() {
    let mut cj = json!({"status": {"active": [
        {"kind": "Job", "namespace": "ns", "name": "a", "uid": "u1"},
        {"kind": "Job", "namespace": "ns", "name": "b", "uid": "u2"},
    ]}});
    assert!(in_active_list_by_name(&cj, "ns", "b"));
    delete_from_active_list(&mut cj, "u2");
    assert!(!in_active_list_by_name(&cj, "ns", "b"));
    delete_from_active_list(&mut cj, "u1");
    assert_eq!(cj, json!({"status": {}}));

    let job = |name: &str, start: Option<&str>, cond: Option<(&str, &str)>| {
        let mut j = json!({"metadata": {"name": name}, "status": {}});
        if let Some(s) = start {
            j["status"]["startTime"] = json!(s);
        }
        if let Some((ty, st)) = cond {
            j["status"]["conditions"] = json!([
                {"type": "SuccessCriteriaMet", "status": "True"},
                {"type": ty, "status": st},
            ]);
        }
        Arc::new(j)
    };
    assert_eq!(
        finished_condition(&job("a", None, Some(("Complete", "True")))),
        Some("Complete")
    );
    assert_eq!(
        finished_condition(&job("a", None, Some(("Failed", "True")))),
        Some("Failed")
    );
    assert_eq!(
        finished_condition(&job("a", None, Some(("Failed", "False")))),
        None
    );
    let mut jobs = [
        job("c", None, None),
        job("b", Some("2024-03-05T10:00:00Z"), None),
        job("a", Some("2024-03-05T10:00:00Z"), None),
        job("d", Some("2024-03-05T09:00:00Z"), None),
        job("0", None, None),
    ];
    jobs.sort_by(by_start_time);
    let names: Vec<&str> = jobs
        .iter()
        .map(|j| j["metadata"]["name"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(names, ["d", "a", "b", "0", "c"]);
}
