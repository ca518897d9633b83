//! One robust watch of one API, shared by the watches of served resources and of their
//! related kinds: kube-runtime's watcher renewed every `watch_timeout`, relisting after a 410,
//! backing off on errors, and restarted with a fresh listing after a long silence (a dead
//! connection), when the stream ends, or when its owner asks for one (shards gained, a new
//! owner kind), so that events are never silently lost.

use futures::StreamExt;
use futures::stream::BoxStream;
use kube::api::{Api, DynamicObject};
use kube::runtime::WatchStreamExt;
use kube::runtime::watcher::{self, Event};

use super::Shared;

/// The API of a kind's objects' metadata (`PartialObjectMetadata` requests).
pub(crate) type MetaApi = Api<kube::core::PartialObjectMeta<DynamicObject>>;

/// What a followed watch is: its API, the kind named in logs and its metrics label.
pub(crate) struct Followed {
    pub(crate) api: Api<DynamicObject>,
    pub(crate) kind: String,
    pub(crate) label: String,
    /// Server-side selectors of the watch.
    pub(crate) selectors: crate::handling::selection::Selectors,
    /// Watch metadata only, through this API, as objects of this kind.
    pub(crate) metadata_only: Option<(MetaApi, kube::api::ApiResource)>,
}

/// A stream that yields whenever a value's counter moves on: a request to list again.
pub(crate) fn bumps<T: Send + Sync + 'static>(
    receiver: tokio::sync::watch::Receiver<T>,
    counter: fn(&T) -> u64,
) -> BoxStream<'static, ()> {
    let mut receiver = receiver;
    let seen = counter(&receiver.borrow_and_update());
    futures::stream::unfold(
        (receiver, seen),
        move |(mut receiver, mut seen)| async move {
            loop {
                receiver.changed().await.ok()?;
                let now = counter(&receiver.borrow_and_update());
                if now != seen {
                    seen = now;
                    return Some(((), (receiver, seen)));
                }
            }
        },
    )
    .boxed()
}

/// Follows `followed` until shutdown, handing every event to `on` in order. A restart (for
/// whatever reason) begins with `Event::Init` and a full listing, so `on` can tell what went
/// missing.
pub(crate) async fn follow(
    shared: &Shared,
    followed: Followed,
    mut relists: BoxStream<'static, ()>,
    mut on: impl FnMut(Event<DynamicObject>),
) {
    let settings = &shared.settings;
    let timeout_secs = u32::try_from(settings.watch_timeout.as_secs())
        .unwrap_or(u32::MAX)
        .max(1);
    // kube's watcher yields nothing for bookmarks or renewals, so an idle resource is silent
    // too; a stream silent for five watch periods is renewed with a relist (cheap, rare), which
    // also recovers a connection that died without closing on a client with no read timeout.
    let silence_limit = settings.watch_timeout * 5;
    let shutdown = shared.shutdown.clone();
    let kind = &followed.kind;
    let metrics = crate::runtime::metrics::global();
    let labels = crate::runtime::metrics::ResourceLabels {
        resource: followed.label.clone(),
    };
    'restart: loop {
        // Requests made before this listing are answered by it.
        while let Some(Some(())) = futures::FutureExt::now_or_never(relists.next()) {}
        metrics.watch_starts.get_or_create(&labels).inc();
        let mut config = watcher::Config::default().timeout(timeout_secs);
        if let Some(labels) = &followed.selectors.labels {
            config = config.labels(labels);
        }
        if let Some(fields) = &followed.selectors.fields {
            config = config.fields(fields);
        }
        let backoff = WatchBackoff {
            failures: 0,
            max: settings.max_transient_backoff,
        };
        let stream = match &followed.metadata_only {
            Some((api, kind)) => {
                let kind = kind.clone();
                watcher::watcher(api.clone(), config)
                    .backoff(backoff)
                    .map(move |item| item.map(|event| as_dynamic(event, &kind)))
                    .boxed()
            }
            None => watcher::watcher(followed.api.clone(), config)
                .backoff(backoff)
                .boxed(),
        };
        futures::pin_mut!(stream);
        loop {
            let next = tokio::select! {
                () = shutdown.cancelled() => return,
                asked = relists.next() => {
                    if asked.is_none() {
                        relists = futures::stream::pending().boxed();
                    }
                    tracing::debug!(%kind, "listing again");
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
                Ok(event) => on(event),
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

/// A metadata-only event as an event of the kind's objects: `apiVersion` and `kind` of the
/// kind (the server says `meta.k8s.io/v1 PartialObjectMetadata`), so typed readers accept it.
fn as_dynamic(
    event: Event<kube::core::PartialObjectMeta<DynamicObject>>,
    kind: &kube::api::ApiResource,
) -> Event<DynamicObject> {
    let object = |meta: kube::core::PartialObjectMeta<DynamicObject>| {
        let mut object = DynamicObject::new("", kind);
        object.metadata = meta.metadata;
        object
    };
    match event {
        Event::Apply(meta) => Event::Apply(object(meta)),
        Event::Delete(meta) => Event::Delete(object(meta)),
        Event::InitApply(meta) => Event::InitApply(object(meta)),
        Event::Init => Event::Init,
        Event::InitDone => Event::InitDone,
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
pub(crate) fn to_value(mut object: DynamicObject) -> serde_json::Value {
    object.metadata.managed_fields = None;
    serde_json::to_value(object).unwrap_or(serde_json::Value::Null)
}
