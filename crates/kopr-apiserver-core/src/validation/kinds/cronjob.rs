//! Validation of batch/v1 CronJobs (`ValidateCronJob{Create,Update}`):
//! schedule (parsed as kube's cron library parses it), time zone,
//! concurrency policy, history limits, and the job template's spec.

#[allow(unused_imports)]
use super::*;
use crate::cron::{load_location, parse_standard};

/// The character rules kube applies to each `/`-separated part of a time
/// zone name (`^[A-Za-z\.\-_0-9+]{1,14}$`, not `.`/`..`, no leading `-`).
fn zone_part_ok(part: &str) -> bool {
    (1..=14).contains(&part.len())
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
        && part != "."
        && part != ".."
        && !part.starts_with('-')
}

/// `validateTimeZone`.
fn time_zone(ck: &mut Checker, tz: &str) {
    let p = "spec.timeZone";
    if tz.is_empty() {
        ck.push(FieldError::invalid(
            p,
            tz,
            "timeZone must be nil or non-empty string",
        ));
        return;
    }
    if !tz.split('/').all(zone_part_ok) {
        ck.push(FieldError::invalid(
            p,
            tz,
            format!("unknown time zone {tz}"),
        ));
        return;
    }
    if tz.eq_ignore_ascii_case("Local") {
        ck.push(FieldError::invalid(
            p,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = load_location(tz) {
        ck.push(FieldError::invalid(p, tz, e.to_string()));
    }
}

/// `validateScheduleFormat`.
fn schedule(ck: &mut Checker, spec: &Obj, old_spec: Option<&Obj>) {
    let p = "spec.schedule";
    let s = ck.string(spec, "schedule", "spec");
    if s.is_empty() {
        ck.push(FieldError::required(p, ""));
        return;
    }
    let allow_tz = old_spec
        .and_then(|o| o.get("schedule"))
        .and_then(Value::as_str)
        .is_some_and(|o| o.contains("TZ"));
    if let Err(e) = parse_standard(s) {
        ck.push(FieldError::invalid(p, s, e.to_string()));
    }
    let has_tz_field = !matches!(spec.get("timeZone"), None | Some(Value::Null));
    if s.contains("TZ") {
        if allow_tz && has_tz_field {
            ck.push(FieldError::invalid(
                p,
                s,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz {
            ck.push(FieldError::invalid(
                p,
                s,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
}

/// kube's `validateJobSpec` for a job template's spec at `path`.
fn job_template_spec(ck: &mut Checker, spec: &Obj, path: &str) {
    for f in ["parallelism", "completions"] {
        nonneg_i32(ck, spec, f, path);
    }
    nonneg(ck, spec, "activeDeadlineSeconds", path);
    nonneg_i32(ck, spec, "backoffLimit", path);
    nonneg_i32(ck, spec, "ttlSecondsAfterFinished", path);
    let per_index = ck.i32(spec, "backoffLimitPerIndex", path);
    nonneg_i32(ck, spec, "backoffLimitPerIndex", path);
    let max_failed = ck.i32(spec, "maxFailedIndexes", path);
    if max_failed.is_some() {
        nonneg_i32(ck, spec, "maxFailedIndexes", path);
        if per_index.is_none() {
            ck.push(FieldError::required(
                child(path, "backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    let mode = ck.str(spec, "completionMode", path);
    let completions = ck.i32(spec, "completions", path);
    let parallelism = ck.i32(spec, "parallelism", path);
    if let Some(m) = mode {
        if m != "NonIndexed" && m != "Indexed" {
            ck.push(FieldError::not_supported(
                child(path, "completionMode"),
                m,
                &["NonIndexed", "Indexed"],
            ));
        }
        if m == "Indexed" {
            if completions.is_none() {
                ck.push(FieldError::required(
                    child(path, "completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(p) = parallelism
                && p > 100_000
            {
                ck.push(FieldError::invalid(
                    child(path, "parallelism"),
                    p,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            if let (Some(c), Some(mf)) = (completions, max_failed)
                && mf > c
            {
                ck.push(FieldError::invalid(
                    child(path, "maxFailedIndexes"),
                    mf,
                    "must be less than or equal to completions",
                ));
            }
            if let Some(mf) = max_failed
                && mf > 100_000
            {
                ck.push(FieldError::invalid(
                    child(path, "maxFailedIndexes"),
                    mf,
                    "must be less than or equal to 100000",
                ));
            }
        }
    }
    let indexed = mode == Some("Indexed");
    if !indexed {
        if let Some(b) = per_index {
            ck.push(FieldError::invalid(
                child(path, "backoffLimitPerIndex"),
                b,
                "requires indexed completion mode",
            ));
        }
        if let Some(mf) = max_failed {
            ck.push(FieldError::invalid(
                child(path, "maxFailedIndexes"),
                mf,
                "requires indexed completion mode",
            ));
        }
    }
    let has_pfp = ck.obj(spec, "podFailurePolicy", path).is_some();
    if let Some(p) = ck.str(spec, "podReplacementPolicy", path) {
        let pp = child(path, "podReplacementPolicy");
        if has_pfp {
            if p != "Failed" {
                ck.push(FieldError::not_supported(pp, p, &["Failed"]));
            }
        } else if p != "Failed" && p != "TerminatingOrFailed" {
            ck.push(FieldError::not_supported(
                pp,
                p,
                &["Failed", "TerminatingOrFailed"],
            ));
        }
    }
    let tp = child(path, "template");
    let tmpl = sub(ck, spec, "template", path);
    validate_pod_template_spec(ck, tmpl, &tp);
    let rp = tmpl
        .get("spec")
        .and_then(|s| s.get("restartPolicy"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let rpp = child(&child(&tp, "spec"), "restartPolicy");
    match rp {
        "" | "Always" => ck.push(FieldError::required(
            rpp,
            "valid values: \"OnFailure\", \"Never\"",
        )),
        "OnFailure" if has_pfp => ck.push(FieldError::invalid(
            rpp,
            rp,
            "only \"Never\" is supported when podFailurePolicy is specified",
        )),
        "OnFailure" | "Never" => {}
        other => ck.push(FieldError::not_supported(
            rpp,
            other,
            &["OnFailure", "Never"],
        )),
    }
}

/// CronJob (`ValidateCronJobCreate` / `ValidateCronJobUpdate`).
pub(crate) fn cron_job(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let old_spec = old.and_then(|o| o.get("spec")).and_then(Value::as_object);
    schedule(ck, spec, old_spec);
    nonneg(ck, spec, "startingDeadlineSeconds", sp);
    let tz = ck.str(spec, "timeZone", sp);
    let old_tz = old_spec
        .and_then(|o| o.get("timeZone"))
        .and_then(Value::as_str);
    if let Some(tz) = tz
        && (old.is_none() || old_tz != Some(tz))
    {
        time_zone(ck, tz);
    }
    let cp = ck.string(spec, "concurrencyPolicy", sp);
    match cp {
        "Allow" | "Forbid" | "Replace" => {}
        "" => ck.push(FieldError::required("spec.concurrencyPolicy", "")),
        other => ck.push(FieldError::not_supported(
            "spec.concurrencyPolicy",
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let jt = sub(ck, spec, "jobTemplate", sp);
    let jsp = "spec.jobTemplate.spec";
    let js = sub(ck, jt, "spec", "spec.jobTemplate");
    job_template_spec(ck, js, jsp);
    if let Some(sel) = ck.obj(js, "selector", jsp) {
        ck.push(FieldError::invalid(
            child(jsp, "selector"),
            selector_repr(Some(sel)),
            "`selector` will be auto-generated",
        ));
    }
    if ck.bool(js, "manualSelector", jsp) == Some(true) {
        ck.push(FieldError::not_supported(
            child(jsp, "manualSelector"),
            true,
            &["nil", "false"],
        ));
    }
    nonneg_i32(ck, spec, "successfulJobsHistoryLimit", sp);
    nonneg_i32(ck, spec, "failedJobsHistoryLimit", sp);
    if old.is_none() {
        let name = root
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("");
        if name.len() > 52 {
            ck.push(FieldError::invalid(
                "metadata.name",
                name,
                "must be no more than 52 characters",
            ));
        }
    }
}
