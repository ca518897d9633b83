//! Finishes graceful pod deletion when the grace period runs out, standing
//! in for the kubelet that would confirm the containers stopped.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::object;
use crate::registry::{Api, DeleteOptions};
use crate::storage::{EventType, WatchEvent};

fn scheduled() -> &'static Mutex<HashSet<String>> {
    static SET: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Schedules the final delete of a pod in graceful deletion.
pub fn observe(api: &Api, ev: &WatchEvent) {
    if ev.event_type == EventType::Deleted
        || !ev.key.starts_with("/core/pods/")
        || !object::is_deleting(&ev.object)
    {
        return;
    }
    let grace = object::meta(&ev.object)
        .and_then(|m| m.get("deletionGracePeriodSeconds"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    if grace <= 0 {
        return;
    }
    let deadline = object::meta_str(&ev.object, "deletionTimestamp")
        .and_then(|t| t.parse::<jiff::Timestamp>().ok())
        .map(|t| t.duration_since(jiff::Timestamp::now()))
        .and_then(|d| Duration::try_from(d).ok())
        .unwrap_or_default();
    let uid = object::uid(&ev.object).to_string();
    let Ok(mut set) = scheduled().lock() else {
        return;
    };
    if !set.insert(uid.clone()) {
        return;
    }
    let Some(target) = super::target_of_key(api, &ev.key) else {
        return;
    };
    let api = api.clone();
    tokio::spawn(async move {
        tokio::time::sleep(deadline).await;
        let opts = DeleteOptions {
            grace_period_seconds: Some(0),
            precondition_uid: Some(uid.clone()),
            ..DeleteOptions::default()
        };
        if let Err(e) = api.delete(&target, &opts).await
            && e.code != 404
            && e.code != 409
        {
            tracing::debug!(error = %e, "finishing a graceful pod deletion failed");
        }
        if let Ok(mut set) = scheduled().lock() {
            set.remove(&uid);
        }
    });
}
