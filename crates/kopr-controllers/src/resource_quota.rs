//! The resource quota controller, as kube-controller-manager's: keeps each
//! ResourceQuota's `status.hard` equal to its `spec.hard` and its
//! `status.used` equal to what the namespace's objects use (per the
//! evaluators of [`crate::quota`]). Admission charges new objects as it
//! admits them; this controller counts from scratch when a quota is created
//! or its limits change, and gives usage back (replenishment) when an
//! object is deleted or stops using resources (a pod that ended, a service
//! whose type changed, a claim resized). Like kube's, it also recounts every
//! namespace with quotas every five minutes (`--resource-quota-sync-period`),
//! which corrects a charge for a create that failed after admission.

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::podutil;
use super::workqueue::WorkQueue;
use super::writes;
use crate::quota::{self, Evaluator, list};
use crate::registry::{Api, Target};
use crate::status::ApiError;
use crate::storage::{EventType, WatchEvent};

/// kube's default full resync of quotas.
const RESYNC: Duration = Duration::from_secs(300);

const QUOTAS: &str = "/core/resourcequotas/";

/// Starts the controller; it stops with `stop`.
pub fn spawn(api: Api, stop: CancellationToken) {
    let queue = WorkQueue::new("resourcequota", stop.clone());
    let events = api.store.subscribe();
    {
        let api = api.clone();
        queue.run(1, move |namespace| {
            let api = api.clone();
            async move {
                let any = sync(&api, &namespace).await?;
                Ok(any.then_some(RESYNC))
            }
        });
    }
    for ns in namespaces_with_quotas(&api) {
        queue.add(ns);
    }
    tokio::spawn(watch(api, queue, events, stop));
}

fn namespaces_with_quotas(api: &Api) -> Vec<String> {
    let mut out: Vec<String> = api
        .store
        .current_objects(QUOTAS)
        .iter()
        .filter_map(|q| q["metadata"]["namespace"].as_str().map(str::to_string))
        .collect();
    out.dedup();
    out
}

async fn watch(
    api: Api,
    queue: Arc<WorkQueue>,
    mut events: broadcast::Receiver<Arc<WatchEvent>>,
    stop: CancellationToken,
) {
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = events.recv() => r,
        };
        match received {
            Ok(ev) => {
                if let Some(ns) = namespace_to_sync(&api, &ev) {
                    queue.add(ns);
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => {
                for ns in namespaces_with_quotas(&api) {
                    queue.add(ns);
                }
            }
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// The namespace whose quotas `ev` calls for recounting, if any.
fn namespace_to_sync(api: &Api, ev: &WatchEvent) -> Option<String> {
    let parts: Vec<&str> = ev.key.trim_start_matches('/').split('/').collect();
    let [group, plural, ns, _name] = parts.as_slice() else {
        return None;
    };
    if ev.key.starts_with(QUOTAS) {
        // A new quota, or new limits; not the usage admission writes.
        let spec_hard = &ev.object["spec"]["hard"];
        let changed = match (&ev.event_type, &ev.previous) {
            (EventType::Deleted, _) => false,
            (_, Some(prev)) => prev["spec"]["hard"] != *spec_hard,
            (_, None) => true,
        };
        let stale = ev.event_type != EventType::Deleted
            && !list::equals(
                &list::from_json(Some(spec_hard)),
                &list::from_json(ev.object["status"].get("hard")),
            );
        return (changed || stale).then(|| ns.to_string());
    }
    if api
        .store
        .current_objects(&format!("{QUOTAS}{ns}/"))
        .is_empty()
    {
        return None;
    }
    let group = if *group == "core" { "" } else { group };
    let evaluator = api.catalog.evaluator(group, plural);
    let now = podutil::now();
    let replenish = match (&ev.event_type, &ev.previous) {
        (EventType::Deleted, _) => true,
        (EventType::Modified, Some(prev)) => !list::equals(
            &evaluator.usage(prev, now),
            &evaluator.usage(&ev.object, now),
        ),
        _ => false,
    };
    replenish.then(|| ns.to_string())
}

/// Recounts every quota of `namespace`; whether it has any.
async fn sync(api: &Api, namespace: &str) -> Result<bool, ApiError> {
    let Some(rt) = api.catalog.get("", "v1", "resourcequotas") else {
        return Ok(false);
    };
    let quotas = api.store.current_objects(&format!("{QUOTAS}{namespace}/"));
    let any = !quotas.is_empty();
    let of = |group: &str, plural: &str| api.catalog.evaluator(group, plural);
    let objects = |e: &Evaluator| {
        api.catalog
            .measured_by(e)
            .map(|rt| api.store.current_objects(&rt.list_prefix(Some(namespace))))
            .unwrap_or_default()
    };
    for q in quotas {
        let hard = list::from_json(q["spec"].get("hard"));
        let used = quota::usage_of(&q, &hard, &of, &objects, podutil::now());
        let same = list::equals(&hard, &list::from_json(q["status"].get("hard")))
            && list::equals(&used, &list::from_json(q["status"].get("used")));
        if same {
            continue;
        }
        let target = Target {
            rt: rt.clone(),
            namespace: Some(namespace.to_string()),
            name: Some(q["metadata"]["name"].as_str().unwrap_or("").to_string()),
        };
        let status = json!({"hard": list::to_json(&hard), "used": list::to_json(&used)});
        // Written only over the quota as read: a charge admission made
        // meanwhile makes this a conflict, and the namespace is counted again.
        writes::replace_status_seen(api, &target, &q, &status).await?;
    }
    Ok(any)
}
