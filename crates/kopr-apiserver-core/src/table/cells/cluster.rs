//! Row cells of the cluster-level printers added for issue 17: certificate
//! signing requests, priority classes, runtime classes, API priority and
//! fairness (flow schemas, priority levels) and kube-aggregator's APIServices.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::super::age::human_duration;
use super::{age, arr, get, int, name, or_none, text};

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// `extractCSRStatus`: Denied, Approved or Pending, then ",Failed" and
/// ",Issued" (a certificate is present).
fn csr_condition(obj: &Value) -> String {
    let conditions = arr(obj, &["status", "conditions"]);
    let has = |ty: &str| conditions.iter().any(|c| text(c, &["type"]) == ty);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(obj, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    status
}

pub(super) fn certificate_signing_request(obj: &Value, now: Timestamp) -> Vec<Value> {
    let duration = get(obj, &["spec", "expirationSeconds"])
        .and_then(Value::as_i64)
        .map_or_else(
            || "<none>".to_string(),
            |s| human_duration(s.saturating_mul(NANOS_PER_SEC)),
        );
    vec![
        json!(name(obj)),
        age(obj, now),
        json!(or_none(text(obj, &["spec", "signerName"]))),
        json!(text(obj, &["spec", "username"])),
        json!(duration),
        json!(csr_condition(obj)),
    ]
}

pub(super) fn priority_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(int(obj, &["value"])),
        json!(
            get(obj, &["globalDefault"])
                .and_then(Value::as_bool)
                .unwrap_or(false)
        ),
        age(obj, now),
        json!(text(obj, &["preemptionPolicy"])),
    ]
}

pub(super) fn runtime_class(obj: &Value, now: Timestamp) -> Vec<Value> {
    vec![
        json!(name(obj)),
        json!(text(obj, &["handler"])),
        age(obj, now),
    ]
}

pub(super) fn flow_schema(obj: &Value, now: Timestamp) -> Vec<Value> {
    let distinguisher = match get(obj, &["spec", "distinguisherMethod"]) {
        Some(d) if !d.is_null() => text(d, &["type"]),
        _ => "<none>".to_string(),
    };
    let missing = arr(obj, &["status", "conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Dangling")
        .map_or_else(|| "?".to_string(), |c| text(c, &["status"]));
    vec![
        json!(name(obj)),
        json!(text(obj, &["spec", "priorityLevelConfiguration", "name"])),
        json!(matching_precedence(obj)),
        json!(distinguisher),
        age(obj, now),
        json!(missing),
    ]
}

/// `spec.matchingPrecedence`, which the API defaults (from 0) to 1000.
pub(super) fn matching_precedence(obj: &Value) -> i64 {
    match int(obj, &["spec", "matchingPrecedence"]) {
        0 => 1000,
        p => p,
    }
}

/// An int32 field the API defaults when zero.
fn defaulted(obj: &Value, key: &str, default: i64) -> Value {
    match int(obj, &[key]) {
        0 => json!(default),
        n => json!(n),
    }
}

pub(super) fn priority_level(obj: &Value, now: Timestamp) -> Vec<Value> {
    let none = || json!("<none>");
    let (shares, queues, hand_size, queue_length) = match get(obj, &["spec", "limited"]) {
        Some(limited) if !limited.is_null() => {
            // v1 defaults an unset nominalConcurrencyShares to 30.
            let shares = get(limited, &["nominalConcurrencyShares"])
                .and_then(Value::as_i64)
                .unwrap_or(30);
            match get(limited, &["limitResponse", "queuing"]) {
                Some(q) if !q.is_null() => (
                    json!(shares),
                    defaulted(q, "queues", 64),
                    defaulted(q, "handSize", 8),
                    defaulted(q, "queueLengthLimit", 50),
                ),
                _ => (json!(shares), none(), none(), none()),
            }
        }
        _ => (none(), none(), none(), none()),
    };
    vec![
        json!(name(obj)),
        json!(text(obj, &["spec", "type"])),
        shares,
        queues,
        hand_size,
        queue_length,
        age(obj, now),
    ]
}

pub(super) fn api_service(obj: &Value, now: Timestamp) -> Vec<Value> {
    let service = match get(obj, &["spec", "service"]) {
        Some(s) if !s.is_null() => format!("{}/{}", text(s, &["namespace"]), text(s, &["name"])),
        _ => "Local".to_string(),
    };
    let available = match arr(obj, &["status", "conditions"])
        .iter()
        .find(|c| text(c, &["type"]) == "Available")
    {
        None => "Unknown".to_string(),
        Some(c) => {
            let status = text(c, &["status"]);
            let reason = text(c, &["reason"]);
            if status == "True" || reason.is_empty() {
                status
            } else {
                format!("{status} ({reason})")
            }
        }
    };
    vec![
        json!(name(obj)),
        json!(service),
        json!(available),
        age(obj, now),
    ]
}
