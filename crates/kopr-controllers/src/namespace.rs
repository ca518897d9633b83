//! Namespace deletion: once a namespace is terminating, delete everything in
//! it, then clear its `kubernetes` finalizer so it can go.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use serde_json::{Value, json};

use crate::object;
use crate::registry::{Api, DeleteOptions, ListOptions, Propagation, Target, WriteOptions};
use crate::storage::{EventType, WatchEvent};

/// Namespaces with a deletion worker running.
fn in_progress() -> &'static Mutex<HashSet<String>> {
    static SET: OnceLock<Mutex<HashSet<String>>> = OnceLock::new();
    SET.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Starts deletion workers for namespaces already terminating.
pub async fn resync(api: &Api) {
    let Some(rt) = api.catalog.get("", "v1", "namespaces") else {
        return;
    };
    if let Ok(list) = api.list(&rt, None, &ListOptions::default()).await {
        for ns in list.items {
            if object::is_deleting(&ns) {
                start(api, object::name(&ns).to_string());
            }
        }
    }
}

/// Reacts to a namespace entering deletion.
pub fn observe(api: &Api, ev: &WatchEvent) {
    if ev.event_type == EventType::Modified
        && ev.key.starts_with("/core/namespaces/")
        && object::is_deleting(&ev.object)
    {
        start(api, object::name(&ev.object).to_string());
    }
}

fn start(api: &Api, name: String) {
    // Keyed by server too: several servers can run in one process.
    let slot = format!("{}/{name}", api.store.instance_id());
    let Ok(mut set) = in_progress().lock() else {
        return;
    };
    if !set.insert(slot.clone()) {
        return;
    }
    let api = api.clone();
    tokio::spawn(async move {
        if let Err(e) = empty_namespace(&api, &name).await {
            tracing::warn!(namespace = name, error = %e, "namespace deletion failed");
        }
        if let Ok(mut set) = in_progress().lock() {
            set.remove(&slot);
        }
    });
}

async fn empty_namespace(api: &Api, name: &str) -> Result<(), crate::status::ApiError> {
    let mut delay = Duration::from_millis(20);
    loop {
        let mut remaining = 0usize;
        let mut seen_storage = HashSet::new();
        for rt in api.catalog.all() {
            if !rt.namespaced || !seen_storage.insert(rt.storage.clone()) {
                continue;
            }
            let rt = Arc::clone(&rt);
            let list = api.list(&rt, Some(name), &ListOptions::default()).await?;
            for item in &list.items {
                remaining += 1;
                if object::is_deleting(item) {
                    continue;
                }
                let t = Target {
                    rt: rt.clone(),
                    namespace: Some(name.to_string()),
                    name: Some(object::name(item).to_string()),
                };
                let opts = DeleteOptions {
                    propagation: Some(Propagation::Background),
                    ..DeleteOptions::default()
                };
                match api.delete(&t, &opts).await {
                    Ok(_) => {}
                    Err(e) if e.code == 404 => {}
                    Err(e) => tracing::debug!(error = %e, "deleting namespace content"),
                }
            }
        }
        if remaining == 0 {
            break;
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_millis(500));
    }
    finalize(api, name).await
}

/// Removes the `kubernetes` finalizer (the `/finalize` subresource).
async fn finalize(api: &Api, name: &str) -> Result<(), crate::status::ApiError> {
    let Some(rt) = api.catalog.get("", "v1", "namespaces") else {
        return Ok(());
    };
    let t = Target {
        rt,
        namespace: None,
        name: Some(name.to_string()),
    };
    let current = match api.get(&t).await {
        Ok(c) => c,
        Err(e) if e.code == 404 => return Ok(()),
        Err(e) => return Err(e),
    };
    let mut body = (*current).clone();
    let kept: Vec<Value> = body
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter(|f| f.as_str() != Some("kubernetes"))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    body["spec"]["finalizers"] = json!(kept);
    let opts = WriteOptions {
        field_manager: "namespace-controller".into(),
        ..WriteOptions::default()
    };
    match api.update(&t, Some("finalize"), body, &opts).await {
        Ok(_) => Ok(()),
        Err(e) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
