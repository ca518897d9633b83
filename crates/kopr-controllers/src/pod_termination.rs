//! Finishes graceful pod deletion when the grace period runs out, standing
//! in for the kubelet that would confirm the containers stopped. On a
//! simulated node the simulated kubelet confirms it (usually at once, since
//! simulated containers stop on SIGTERM); this stays as a fallback there,
//! a little after the deadline so that the kubelet's own SIGKILL lands first.

use std::collections::HashSet;
use std::sync::{Mutex, OnceLock};
use std::time::Duration;

use serde_json::Value;

use crate::object;
use crate::registry::{Api, DeleteOptions, Target};
use crate::storage::{EventType, WatchEvent};

fn scheduled() -> &'static Mutex<HashSet<String>> {
    static SET: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

/// How long after the deadline a pod on a simulated node is removed if its
/// kubelet has not confirmed the deletion.
const KUBELET_SLACK: Duration = Duration::from_secs(5);

async fn on_simulated_node(api: &Api, node: &str) -> bool {
    if node.is_empty() {
        return false;
    }
    let Some(rt) = api.catalog.get("", "v1", "nodes") else {
        return false;
    };
    let t = Target {
        rt,
        namespace: None,
        name: Some(node.to_string()),
    };
    api.get(&t)
        .await
        .is_ok_and(|n| super::nodes::is_simulated(&n))
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
    let node = ev
        .object
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    tokio::spawn(async move {
        let slack = if on_simulated_node(&api, &node).await {
            KUBELET_SLACK
        } else {
            Duration::ZERO
        };
        tokio::time::sleep(deadline + slack).await;
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
