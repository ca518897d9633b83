//! Watching a resource with kube-runtime's watcher: relists after 410s, backs off on errors,
//! renews the watch every `watch_timeout`, and restarts a stream that stays silent for too long
//! (a dead connection), so events are never silently lost. With sharding, only events of owned
//! shards pass, a shard gained makes every stream list again, and shards lost have their slots
//! dropped.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};
use serde_json::Value;

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
    let settings = &runtime.shared.settings;
    let timeout_secs = u32::try_from(settings.watch_timeout.as_secs())
        .unwrap_or(u32::MAX)
        .max(1);
    // kube's watcher yields nothing for bookmarks or renewals, so an idle resource is silent
    // too; a stream silent for five watch periods is renewed with a relist (cheap, rare), which
    // also recovers a connection that died without closing on a client with no read timeout.
    let silence_limit = settings.watch_timeout * 5;
    let shutdown = runtime.shared.shutdown.clone();
    let kind = runtime.api_resource().kind.clone();
    let metrics = crate::runtime::metrics::global();
    let labels = crate::runtime::metrics::ResourceLabels {
        resource: runtime.label.clone(),
    };
    let mut listed_once = false;
    let mut shard_changes = runtime.shared.shards.as_ref().map(|f| f.subscribe());
    'restart: loop {
        // Shards gained from here on make the stream list again; earlier ones are in this list.
        let mut gains = shard_changes
            .as_mut()
            .map_or(0, |changes| changes.borrow_and_update().gains);
        metrics.watch_starts.get_or_create(&labels).inc();
        let config = watcher::Config::default().timeout(timeout_secs);
        let stream = watcher::watcher(api.clone(), config).backoff(WatchBackoff {
            failures: 0,
            max: settings.max_transient_backoff,
        });
        futures::pin_mut!(stream);
        let mut listing: Option<HashSet<ObjectKey>> = None;
        let mut indexed: Option<HashSet<String>> = None;
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => return,
                () = next_gain(&mut shard_changes, &mut gains) => {
                    tracing::debug!(%kind, "shards gained; listing again");
                    continue 'restart;
                }
                next = tokio::time::timeout(silence_limit, stream.next()) => next,
            };
            let item = match next {
                Err(_) => {
                    tracing::debug!(%kind, "no events for {silence_limit:?}; renewing the watch");
                    continue 'restart;
                }
                Ok(None) => {
                    tracing::warn!(%kind, "watch stream ended; restarting it");
                    continue 'restart;
                }
                Ok(Some(item)) => item,
            };
            match item {
                Ok(Event::Init) => {
                    listing = Some(HashSet::new());
                    indexed = Some(HashSet::new());
                }
                Ok(Event::InitApply(object)) => {
                    let body = to_value(object);
                    index(&runtime, &body, indexed.as_mut());
                    if !served(&runtime, &body) {
                        continue;
                    }
                    if let (Some(listed), Some(key)) = (listing.as_mut(), ObjectKey::of(&body)) {
                        listed.insert(key);
                    }
                    run_event_handlers(&runtime, &body, "ADDED");
                    runtime.enqueue(body, true);
                }
                Ok(Event::InitDone) => {
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
                            scope.is_none() || key.namespace == scope
                        });
                    }
                }
                Ok(Event::Apply(object)) => {
                    let body = to_value(object);
                    index(&runtime, &body, None);
                    if served(&runtime, &body) {
                        run_event_handlers(&runtime, &body, "MODIFIED");
                        runtime.enqueue(body, false);
                    }
                }
                Ok(Event::Delete(object)) => {
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
                        run_event_handlers(&runtime, &body, "DELETED");
                        runtime.enqueue_deleted(body);
                    }
                }
                Err(error) => {
                    metrics.watch_errors.get_or_create(&labels).inc();
                    match crate::errors::rbac_hint(&error.to_string()) {
                        Some(hint) => {
                            tracing::warn!(%kind, %error, %hint, "watch failed; retrying with backoff")
                        }
                        None => {
                            tracing::warn!(%kind, %error, "watch failed; retrying with backoff")
                        }
                    }
                }
            }
        }
    }
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

/// Waits until shards were gained since `seen` (never, without sharding).
async fn next_gain(
    changes: &mut Option<tokio::sync::watch::Receiver<crate::runtime::shards::Change>>,
    seen: &mut u64,
) {
    let Some(changes) = changes else {
        return std::future::pending().await;
    };
    loop {
        if changes.changed().await.is_err() {
            return std::future::pending().await;
        }
        let gains = changes.borrow_and_update().gains;
        if gains != *seen {
            *seen = gains;
            return;
        }
    }
}

/// The watch's backoff after a failed list or watch request: the reactor's short transient
/// backoff (0.1 s doubling up to `max_transient_backoff`, jittered), reset by any event.
struct WatchBackoff {
    failures: u32,
    max: std::time::Duration,
}

impl Iterator for WatchBackoff {
    type Item = std::time::Duration;

    fn next(&mut self) -> Option<Self::Item> {
        self.failures = self.failures.saturating_add(1);
        Some(super::transient_backoff(self.failures, self.max))
    }
}

impl kube::runtime::utils::Backoff for WatchBackoff {
    fn reset(&mut self) {
        self.failures = 0;
    }
}

/// The object as handlers see it: JSON without `metadata.managedFields` (server bookkeeping
/// that no handler needs and that would double the memory kept per object).
fn to_value(mut object: DynamicObject) -> Value {
    object.metadata.managed_fields = None;
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// Queues a raw watch event for the object's `on_event` handlers, which run in the
/// background in event order, one event at a time per object; errors are logged only.
fn run_event_handlers(runtime: &Arc<ResourceRuntime>, body: &Value, event_type: &'static str) {
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
        return;
    }
    let Some(key) = ObjectKey::of(body) else {
        return;
    };
    let event = super::QueuedEvent {
        body: Arc::new(body.clone()),
        event_type,
        handlers,
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
        };
        let (result, _) = invoke(runtime, key, &event.body, &typed, call).await;
        if let Err(error) = result {
            tracing::warn!(object = %key, handler = %handler.id, %error, "event handler failed (ignored)");
        }
    }
}
