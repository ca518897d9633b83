//! Watching a resource with kube-runtime's watcher: relists after 410s, backs off on errors,
//! renews the watch every `watch_timeout`, and restarts a stream that stays silent for too long
//! (a dead connection), so events are never silently lost. With sharding, only events of owned
//! shards pass, a shard gained makes every stream list again, and shards lost have their slots
//! dropped.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher::Event;
use serde_json::Value;

use super::follow::to_value;
use super::invoke::{Call, invoke};
use super::{ObjectKey, ResourceRuntime};
use crate::handling::context::Reason;
use crate::handling::diff::Diff;
use crate::handling::handlers::Trigger;

/// Watches every namespace the operator serves for this resource until shutdown.
pub(crate) async fn watch_resource(runtime: Arc<ResourceRuntime>) {
    let patterns = &runtime.shared.settings.namespaces;
    let mut streams = Vec::new();
    if let Some(filter) = &runtime.shared.shards {
        let mut changes = filter.subscribe();
        let runtime = runtime.clone();
        streams.push(tokio::spawn(async move {
            let shutdown = runtime.shared.shutdown.clone();
            loop {
                tokio::select! {
                    () = shutdown.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                runtime.evict_unowned().await;
            }
        }));
    }
    match patterns.exact_names() {
        Some(names) if runtime.resolved.namespaced => {
            for namespace in names {
                let api = runtime.api(Some(&namespace));
                let scope = Some(namespace);
                streams.push(tokio::spawn(watch_stream(runtime.clone(), api, scope)));
            }
        }
        _ => {
            let api = runtime.api(None);
            streams.push(tokio::spawn(watch_stream(runtime.clone(), api, None)));
        }
    }
    for stream in streams {
        let _ = stream.await;
    }
}

/// Whether the object is for this replica's handlers: in a served namespace and, with
/// sharding, in an owned shard.
fn served(runtime: &ResourceRuntime, body: &Value) -> bool {
    in_namespaces(runtime, body)
        && runtime.shared.shards.as_ref().is_none_or(|filter| {
            let meta = body.get("metadata");
            let field = |name: &str| meta.and_then(|m| m.get(name)).and_then(Value::as_str);
            field("name").is_some_and(|name| filter.owns(field("namespace"), name))
        })
}

/// Whether the object is in a namespace the operator serves (always, cluster-scoped).
fn in_namespaces(runtime: &ResourceRuntime, body: &Value) -> bool {
    if !runtime.resolved.namespaced {
        return true;
    }
    let namespace = body
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    runtime.shared.settings.namespaces.matches(namespace)
}

async fn watch_stream(
    runtime: Arc<ResourceRuntime>,
    api: Api<DynamicObject>,
    scope: Option<String>,
) {
    let mut listed_once = false;
    let mut listing: Option<HashSet<ObjectKey>> = None;
    let mut indexed: Option<HashSet<String>> = None;
    // Shards gained make the stream list again: their objects were filtered out so far.
    let relists = match &runtime.shared.shards {
        Some(filter) => super::follow::bumps(filter.subscribe(), |change| change.gains),
        None => futures::stream::pending().boxed(),
    };
    let followed = super::follow::Followed {
        api,
        kind: runtime.api_resource().kind.clone(),
        label: runtime.label.clone(),
        selectors: runtime.spec.selectors.clone(),
        metadata_only: runtime.spec.metadata_only.then(|| {
            (
                runtime.meta_api(scope.as_deref()),
                runtime.api_resource().clone(),
            )
        }),
    };
    let shared = runtime.shared.clone();
    super::follow::follow(&shared, followed, relists, |event| match event {
        Event::Init => {
            listing = Some(HashSet::new());
            indexed = Some(HashSet::new());
        }
        Event::InitApply(object) => {
            let body = to_value(object);
            index(&runtime, &body, indexed.as_mut());
            if !served(&runtime, &body) {
                return;
            }
            if let (Some(listed), Some(key)) = (listing.as_mut(), ObjectKey::of(&body)) {
                listed.insert(key);
            }
            let event = event_for_handlers(&runtime, &body, "ADDED");
            runtime.enqueue(body, true);
            run_event_handlers(&runtime, event);
        }
        Event::InitDone => {
            if !listed_once {
                listed_once = true;
                runtime.shared.health.listed();
            }
            if let Some(indexed) = indexed.take() {
                forget_unlisted(&runtime, &indexed, scope.as_deref());
            }
            if let Some(listed) = listing.take() {
                let scope = scope.clone();
                runtime.forget_missing(&listed, |key| {
                    scope.is_none() || key.namespace() == scope.as_deref()
                });
            }
        }
        Event::Apply(object) => {
            let body = to_value(object);
            index(&runtime, &body, None);
            if served(&runtime, &body) {
                let event = event_for_handlers(&runtime, &body, "MODIFIED");
                runtime.enqueue(body, false);
                run_event_handlers(&runtime, event);
            }
        }
        Event::Delete(object) => {
            let body = to_value(object);
            if in_namespaces(&runtime, &body)
                && let Some(key) = ObjectKey::of(&body)
            {
                let object = key.to_string();
                for indexer in &runtime.spec.indices {
                    indexer.forget(&object);
                }
                count_indexed(&runtime);
            }
            if served(&runtime, &body) {
                let event = event_for_handlers(&runtime, &body, "DELETED");
                runtime.enqueue_deleted(body);
                run_event_handlers(&runtime, event);
            }
        }
    })
    .await;
}

/// Updates the resource's indices with an object of a served namespace (whatever its shard),
/// before any handler sees its event; records it in `listed` during a relist.
fn index(runtime: &ResourceRuntime, body: &Value, listed: Option<&mut HashSet<String>>) {
    if runtime.spec.indices.is_empty() || !in_namespaces(runtime, body) {
        return;
    }
    let Some(key) = ObjectKey::of(body) else {
        return;
    };
    let object = key.to_string();
    for indexer in &runtime.spec.indices {
        indexer.apply(&object, body);
    }
    count_indexed(runtime);
    if let Some(listed) = listed {
        listed.insert(object);
    }
}

/// After a relist of `scope` (a namespace, or everything), forgets the indexed objects of that
/// scope that the listing did not return.
fn forget_unlisted(runtime: &ResourceRuntime, listed: &HashSet<String>, scope: Option<&str>) {
    let prefix = scope.map(|namespace| format!("{namespace}/"));
    let keep = |object: &str| {
        listed.contains(object) || prefix.as_deref().is_some_and(|p| !object.starts_with(p))
    };
    for indexer in &runtime.spec.indices {
        indexer.retain(&keep);
    }
    count_indexed(runtime);
}

/// Sets `kopr_index_objects` of the resource's indices.
fn count_indexed(runtime: &ResourceRuntime) {
    let metrics = crate::runtime::metrics::global();
    for indexer in &runtime.spec.indices {
        let labels = crate::runtime::metrics::IndexLabels {
            index: indexer.name().to_string(),
        };
        let objects = i64::try_from(indexer.objects()).unwrap_or(i64::MAX);
        metrics.index_objects.get_or_create(&labels).set(objects);
    }
}

/// The watch event of `body` for the object's `on_event` handlers that match it, if any.
fn event_for_handlers(
    runtime: &ResourceRuntime,
    body: &Value,
    event_type: &'static str,
) -> Option<(ObjectKey, super::QueuedEvent)> {
    let no_diff = Diff::default();
    // Events carry no old state: `when` predicates see the body with no old/new and no diff.
    let input = crate::handling::filters::FilterInput {
        body,
        old: None,
        new: None,
        diff: &no_diff,
    };
    let handlers: Vec<_> = runtime
        .spec
        .handlers
        .iter()
        .filter(|h| h.trigger == Trigger::Event && h.filters.matches(&input))
        .cloned()
        .collect();
    if handlers.is_empty() {
        return None;
    }
    let key = ObjectKey::of(body)?;
    let event = super::QueuedEvent {
        body: Arc::new(body.clone()),
        event_type,
        handlers,
    };
    Some((key, event))
}

/// Queues a raw watch event for the object's `on_event` handlers, which run in the
/// background in event order, one event at a time per object; errors are logged only. Called
/// after the event reached the object's slot, so a handler sees its event only once the
/// object's cycle for it is due.
fn run_event_handlers(
    runtime: &Arc<ResourceRuntime>,
    event: Option<(ObjectKey, super::QueuedEvent)>,
) {
    let Some((key, event)) = event else {
        return;
    };
    if !runtime.queue_event(&key, event) {
        return;
    }
    // No worker drains this object's events yet: start one.
    let runtime = runtime.clone();
    runtime.shared.tasks.clone().spawn(async move {
        while let Some(event) = runtime.next_event(&key) {
            run_event(&runtime, &key, event).await;
        }
    });
}

/// Runs one event's handlers, in order.
async fn run_event(runtime: &Arc<ResourceRuntime>, key: &ObjectKey, event: super::QueuedEvent) {
    let Ok(typed) = (runtime.spec.parse)(&event.body) else {
        return;
    };
    for handler in &event.handlers {
        let call = Call {
            handler,
            reason: Reason::Event,
            diff: Diff::default(),
            old: None,
            new: None,
            event_type: Some(event.event_type),
            retry: 0,
            started: jiff::Timestamp::now(),
            cancel: runtime.shared.shutdown.child_token(),
            subhandlers: None,
        };
        let (result, _) = invoke(runtime, key, &event.body, &typed, call).await;
        if let Err(error) = result {
            tracing::warn!(object = %key, handler = %handler.id, %error, "event handler failed (ignored)");
        }
    }
}
