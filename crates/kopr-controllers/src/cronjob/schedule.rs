//! The CronJob controller's time arithmetic, as kube's (1.32): which
//! scheduled time is due (the most recent one not yet run, counting the
//! missed ones roughly, as kube does), when to look again (the next
//! scheduled time plus 100 ms), the schedule string with the time zone
//! folded in, and the Job made for a scheduled time
//! (`<cronjob>-<minutes since the epoch>`, with the
//! `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation).

use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use crate::cron::{LocationError, Schedule, load_location};
use crate::podutil::{self, new_controller_ref};

/// Why a CronJob's missed schedules cannot be counted (kube's
/// `mostRecentScheduleTime`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MissedSchedulesError {
    /// A schedule firing more than once a second.
    #[error("time difference between two schedules is less than 1 second")]
    TooFrequent,
}
use crate::object;

/// The annotation with a Job's scheduled time (RFC 3339, in the CronJob's
/// time zone).
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// Padding added to every wake-up, against clock skew.
const NEXT_SCHEDULE_DELTA: Duration = Duration::from_millis(100);

/// More missed times than this are "too many".
const MANY_MISSED: i64 = 100;

/// How many scheduled times passed without a Job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missed {
    /// None.
    None,
    /// Some (up to 100).
    Few,
    /// More than 100.
    Many,
}

/// What `most_recent_schedule_time` finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Recent {
    /// The last schedule time, or the CronJob's creation (or the starting
    /// deadline, when later and asked for).
    pub earliest: Timestamp,
    /// The latest scheduled time after `earliest` and not after now.
    pub most_recent: Option<Timestamp>,
    /// How many were missed.
    pub missed: Missed,
}

fn time_at(obj: &Value, pointer: &str) -> Option<Timestamp> {
    podutil::at(obj, pointer)
        .and_then(Value::as_str)
        .and_then(podutil::parse_time)
}

/// `spec.startingDeadlineSeconds`.
pub fn starting_deadline(cj: &Value) -> Option<i64> {
    podutil::int_at(cj, "/spec/startingDeadlineSeconds")
}

fn minus_secs(t: Timestamp, secs: i64) -> Timestamp {
    t.checked_sub(SignedDuration::from_secs(secs))
        .unwrap_or(if secs > 0 {
            Timestamp::MIN
        } else {
            Timestamp::MAX
        })
}

/// `t` plus whole seconds (saturating).
pub fn plus_secs(t: Timestamp, secs: i64) -> Timestamp {
    minus_secs(t, secs.saturating_neg())
}

/// The most recent scheduled time that should have run by `now`
/// (`mostRecentScheduleTime`); an error for a schedule whose times are
/// not a second apart (one that never fires).
pub fn most_recent_schedule_time(
    cj: &Value,
    now: Timestamp,
    schedule: &Schedule,
    include_deadline: bool,
) -> Result<Recent, MissedSchedulesError> {
    let mut earliest = time_at(cj, "/status/lastScheduleTime")
        .or_else(|| time_at(cj, "/metadata/creationTimestamp"))
        .unwrap_or(now);
    if include_deadline && let Some(secs) = starting_deadline(cj) {
        let deadline = minus_secs(now, secs);
        if deadline > earliest {
            earliest = deadline;
        }
    }
    let none = Recent {
        earliest,
        most_recent: None,
        missed: Missed::None,
    };
    let Some(t1) = schedule.next(earliest) else {
        return Err(MissedSchedulesError::TooFrequent);
    };
    if now < t1 {
        return Ok(none);
    }
    let t2 = schedule.next(t1);
    if let Some(t2) = t2
        && now < t2
    {
        return Ok(Recent {
            most_recent: Some(t1),
            ..none
        });
    }
    let between = t2.map_or(0, |t2| t2.duration_since(t1).as_secs());
    if between < 1 {
        return Err(MissedSchedulesError::TooFrequent);
    }
    // A rough count of the missed times, then the exact latest one from a
    // point a little before it.
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / between + 1;
    let potential_earliest = plus_secs(t1, (missed - 2).saturating_mul(between));
    let mut most_recent = None;
    let mut t = schedule.next(potential_earliest);
    while let Some(at) = t
        && at <= now
    {
        most_recent = Some(at);
        t = schedule.next(at);
    }
    Ok(Recent {
        earliest,
        most_recent,
        missed: if missed > MANY_MISSED {
            Missed::Many
        } else if missed > 0 {
            Missed::Few
        } else {
            Missed::None
        },
    })
}

/// How long until the next scheduled time after the last one that was
/// due, plus 100 ms (`nextScheduleTimeDuration`); None when the schedule
/// never fires again.
pub fn next_schedule_time_duration(
    cj: &Value,
    now: Timestamp,
    schedule: &Schedule,
) -> Option<Duration> {
    let from = match most_recent_schedule_time(cj, now, schedule, false) {
        Err(_) => now,
        Ok(Recent {
            most_recent: Some(t),
            ..
        }) => t,
        Ok(Recent {
            earliest,
            missed: Missed::None,
            ..
        }) => earliest,
        Ok(_) => now,
    };
    let next = schedule.next(from)?;
    Some(podutil::until(next, now) + NEXT_SCHEDULE_DELTA)
}

/// The scheduled time to run now, if any, and whether too many were
/// missed (`nextScheduleTime`).
pub fn next_schedule_time(
    cj: &Value,
    now: Timestamp,
    schedule: &Schedule,
) -> Result<Option<(Timestamp, bool)>, MissedSchedulesError> {
    let recent = most_recent_schedule_time(cj, now, schedule, true)?;
    Ok(recent
        .most_recent
        .filter(|t| *t <= now)
        .map(|t| (t, recent.missed == Missed::Many)))
}

/// The schedule with `spec.timeZone` folded in as a `TZ=` prefix
/// (`formatSchedule`), and whether the schedule names a zone itself
/// (which kube warns about).
pub fn format_schedule(cj: &Value) -> (String, bool) {
    let schedule = podutil::str_at(cj, "/spec/schedule");
    if schedule.contains("TZ") {
        return (schedule.to_string(), true);
    }
    match podutil::at(cj, "/spec/timeZone").and_then(Value::as_str) {
        Some(tz) if load_location(tz).is_ok() => (format!("TZ={tz} {schedule}"), false),
        _ => (schedule.to_string(), false),
    }
}

/// The name of the Job for a scheduled time: minutes since the epoch.
pub fn job_name(cron_job: &str, scheduled: Timestamp) -> String {
    format!("{cron_job}-{}", scheduled.as_second() / 60)
}

/// Go's `t.In(zone).Format(time.RFC3339)`.
pub fn rfc3339_in(t: Timestamp, zone: &jiff::tz::TimeZone) -> String {
    let offset = zone.to_offset(t).seconds();
    let wall = t.to_zoned(zone.clone()).datetime();
    let suffix = if offset == 0 {
        "Z".to_string()
    } else {
        let sign = if offset < 0 { '-' } else { '+' };
        let abs = offset.unsigned_abs();
        format!("{sign}{:02}:{:02}", abs / 3600, abs / 60 % 60)
    };
    format!("{}{suffix}", wall.strftime("%Y-%m-%dT%H:%M:%S"))
}

/// Go's `t.UTC().Format(time.RFC1123Z)`.
pub fn rfc1123z(t: Timestamp) -> String {
    t.strftime("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// The Job a CronJob runs at a scheduled time (`getJobFromTemplate2`):
/// the template's labels, annotations and spec, the scheduled-time
/// annotation and a controller reference to the CronJob. An error when the
/// time zone is unknown.
pub fn job_from_template(cj: &Value, scheduled: Timestamp) -> Result<Value, LocationError> {
    let template = podutil::at(cj, "/spec/jobTemplate").unwrap_or(&Value::Null);
    let copy = |k: &str| {
        template
            .pointer(&format!("/metadata/{k}"))
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let labels = copy("labels");
    let mut annotations: Map<String, Value> = copy("annotations");
    let zone = load_location(podutil::str_at(cj, "/spec/timeZone"))?;
    annotations.insert(
        SCHEDULED_TIMESTAMP.into(),
        json!(rfc3339_in(scheduled, &zone)),
    );
    let mut meta = json!({
        "name": job_name(object::name(cj), scheduled),
        "annotations": annotations,
        "ownerReferences": [new_controller_ref(cj, "batch/v1", "CronJob")],
    });
    if !labels.is_empty() {
        meta["labels"] = Value::Object(labels);
    }
    Ok(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    }))
}
