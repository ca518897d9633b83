//! Row cells of the workload printers added for issue 17: daemon sets,
//! controller revisions, cron jobs and pod disruption budgets.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::age::since;
use super::{age, arr, containers, get, int, name, present, text};
use crate::selectors::{format_label_selector, format_labels};

pub(super) fn daemon_set(obj: &Value, now: Timestamp) -> Vec<Value> {
    let (names, images) = containers(obj, &["spec", "template", "spec"]);
    let status = |k: &str| json!(int(obj, &["status", k]));
    vec![
        json!(name(obj)),
        status("desiredNumberScheduled"),
        status("currentNumberScheduled"),
        status("numberReady"),
        status("updatedNumberScheduled"),
        status("numberAvailable"),
        json!(format_labels(
            get(obj, &["spec", "template", "spec", "nodeSelector"]).and_then(Value::as_object)
        )),
        age(obj, now),
        json!(names),
        json!(images),
        json!(format_label_selector(get(obj, &["spec", "selector"]))),
    ]
}

/// `printBoolPtr`: "True", "False", or `<unset>`.
fn bool_ptr(v: Option<&Value>) -> &'static str {
    match v.and_then(Value::as_bool) {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    }
}

pub(super) fn cron_job(obj: &Value, now: Timestamp) -> Vec<Value> {
    let template = ["spec", "jobTemplate", "spec", "template", "spec"];
    let (names, images) = containers(obj, &template);
    let last = if present(obj, &["status", "lastScheduleTime"]) {
        since(get(obj, &["status", "lastScheduleTime"]), now)
    } else {
        "<none>".to_string()
    };
    let time_zone = get(obj, &["spec", "timeZone"])
        .and_then(Value::as_str)
        .unwrap_or("<none>");
    vec![
        json!(name(obj)),
        json!(text(obj, &["spec", "schedule"])),
        json!(time_zone),
        json!(bool_ptr(get(obj, &["spec", "suspend"]))),
        json!(arr(obj, &["status", "active"]).len()),
        json!(last),
        age(obj, now),
        json!(names),
        json!(images),
        json!(format_label_selector(get(
            obj,
            &["spec", "jobTemplate", "spec", "selector"]
        ))),
    ]
}

/// An IntOrString as `IntOrString.String()` prints it, or "N/A" when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "N/A".to_string(),
    }
}

pub(super) fn pod_disruption_budget(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(int_or_string(get(obj, &["spec", "minAvailable"]))),
        json!(int_or_string(get(obj, &["spec", "maxUnavailable"]))),
        json!(int(obj, &["status", "disruptionsAllowed"])),
        age(obj, now),
    ]
}

/// The controlling owner as `kind.group/name` (lower case), or `<none>`.
fn controller_name(obj: &Value) -> String {
    let Some(owner) = arr(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| get(r, &["controller"]).and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".to_string();
    };
    let api_version = text(owner, &["apiVersion"]);
    let group = api_version.split_once('/').map_or("", |(g, _)| g);
    let kind = text(owner, &["kind"]);
    let owner_name = text(owner, &["name"]);
    if group.is_empty() && kind.is_empty() {
        return owner_name;
    }
    let group_kind = if group.is_empty() {
        kind
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{owner_name}", group_kind.to_lowercase())
}

pub(super) fn controller_revision(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(controller_name(obj)),
        json!(int(obj, &["revision"])),
        age(obj, now),
    ]
}
