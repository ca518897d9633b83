//! The watches of related kinds: children that resources [own](crate::Resource::owns) and
//! objects they [watch](crate::Resource::watches). One watch per kind serves every resource
//! related to it; it keeps the kind's [child cache](crate::handling::children) and turns each
//! change into a reconcile trigger for the objects concerned.
//!
//! The first listing of a kind triggers nothing (every object reconciles at start anyway, once
//! that listing is in the cache); later events trigger only when the object is new to the
//! watch or has a newer resourceVersion, so a relist after a silence triggers nothing for
//! what did not change. A child gone missing in a relist triggers its owner.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use kube::api::{Api, ApiResource, DynamicObject};
use kube::runtime::watcher::Event;
use serde_json::Value;
use tokio::sync::watch;

use super::follow::{Followed, bumps, follow, to_value};
use super::{ObjectKey, ResourceRuntime, Shared};
use crate::handling::children::{ChildCache, ChildId, Children, OwnerId, group_kind, kind_key};
use crate::handling::reconcile::{MapFn, Relation};
use crate::handling::selection::{Digest, Predicate, Selectors, passes};

/// The predicates of one relation (an owner kind, a watcher).
type Predicates = Arc<[Predicate]>;
/// A resource owning the kind: its owner kind, its runtime, its predicates.
type Owner = (Arc<str>, Weak<ResourceRuntime>, Predicates);
/// A resource watching the kind: its mapper, its runtime, its predicates.
type Watcher = (MapFn, Weak<ResourceRuntime>, Predicates);

/// How far each stream of a kind's watch got: listings started and completed.
#[derive(Debug, Clone, Copy, Default)]
struct Listings {
    started: u64,
    done: u64,
}

/// What a reconcile waits for before it first runs: every stream of a kind's watch completed
/// a listing numbered at least `needed`.
#[derive(Clone)]
pub(crate) struct Synced {
    listings: watch::Receiver<Vec<Listings>>,
    needed: Vec<u64>,
}

impl Synced {
    /// Waits until the listings are in (or the operator stops).
    pub(crate) async fn wait(&mut self, shutdown: &tokio_util::sync::CancellationToken) {
        let needed = self.needed.clone();
        let ready = move |listings: &Vec<Listings>| {
            listings
                .iter()
                .zip(&needed)
                .all(|(listing, needed)| listing.done >= *needed)
        };
        tokio::select! {
            _ = self.listings.wait_for(ready) => {}
            () = shutdown.cancelled() => {}
        }
    }
}

/// One related kind's watch and who listens to it.
struct KindWatch {
    api_resource: ApiResource,
    namespaced: bool,
    /// The namespaces watched one by one, or `[None]` for one watch of all.
    scopes: Vec<Option<String>>,
    cache: Option<Arc<ChildCache>>,
    /// The watch's server-side selectors and whether it is of metadata only.
    selectors: Selectors,
    metadata_only: bool,
    owners: Mutex<Vec<Owner>>,
    watchers: Mutex<Vec<Watcher>>,
    /// What the `…Changed` predicates compare, by object, once some relation has predicates.
    digests: Mutex<HashMap<ObjectKey, Digest>>,
    predicated: std::sync::atomic::AtomicBool,
    /// What is known of each object, when some resource watches the kind: to trigger only on
    /// real changes after a relist, and to reach the objects it was mapped to before (an
    /// update maps the old object and the new one, as controller-runtime's map handlers do;
    /// an object gone missing in a relist is mapped from what it was).
    seen: Mutex<HashMap<ObjectKey, Seen>>,
    listings: watch::Sender<Vec<Listings>>,
    relist: watch::Sender<u64>,
    started: std::sync::atomic::AtomicBool,
}

/// A watched object as last seen: its version and the objects it was mapped to (watcher,
/// key).
struct Seen {
    version: Option<u64>,
    mapped: Vec<(usize, ObjectKey)>,
}

/// Every related kind's watch, by kind.
#[derive(Default)]
pub(crate) struct Related {
    kinds: Mutex<HashMap<String, Arc<KindWatch>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|p| p.into_inner())
}

/// Registers `runtime`'s owned and watched kinds, starting the kinds' watches that are not
/// running yet, and returns what its reconciles wait for.
pub(crate) fn subscribe(shared: &Arc<Shared>, runtime: &Arc<ResourceRuntime>) -> Vec<Synced> {
    let children = shared.memo.get::<Children>();
    let owner_kind = group_kind(
        &runtime.api_resource().api_version,
        &runtime.api_resource().kind,
    );
    let mut synced = Vec::new();
    for spec in &runtime.spec.related {
        let key = kind_key(&spec.api_resource);
        let (kind, created) = {
            let mut kinds = lock(&shared.related.kinds);
            let created = !kinds.contains_key(&key);
            let kind = kinds
                .entry(key)
                .or_insert_with(|| {
                    let scopes = match shared.settings.namespaces.exact_names() {
                        Some(names) if spec.namespaced => names.into_iter().map(Some).collect(),
                        _ => vec![None],
                    };
                    let streams = scopes.len();
                    Arc::new(KindWatch {
                        api_resource: spec.api_resource.clone(),
                        namespaced: spec.namespaced,
                        scopes,
                        cache: children
                            .as_ref()
                            .and_then(|c| c.get(&spec.api_resource).cloned()),
                        selectors: spec.options.selectors.clone(),
                        metadata_only: spec.options.metadata_only,
                        owners: Mutex::new(Vec::new()),
                        watchers: Mutex::new(Vec::new()),
                        digests: Mutex::new(HashMap::new()),
                        predicated: std::sync::atomic::AtomicBool::new(false),
                        seen: Mutex::new(HashMap::new()),
                        listings: watch::Sender::new(vec![Listings::default(); streams]),
                        relist: watch::Sender::new(0),
                        started: std::sync::atomic::AtomicBool::new(false),
                    })
                })
                .clone();
            (kind, created)
        };
        if let Some(cache) = kind.cache.as_ref().filter(|_| created) {
            // What applies release: watch events of children that came in during an apply.
            let weak = Arc::downgrade(&kind);
            cache.on_trigger(Box::new(move |owners| {
                if let Some(kind) = weak.upgrade() {
                    kind.trigger_owners(owners);
                }
            }));
        }
        let predicates: Predicates = spec.options.predicates.clone().into();
        if !predicates.is_empty() {
            kind.predicated
                .store(true, std::sync::atomic::Ordering::SeqCst);
        }
        match &spec.relation {
            Relation::Owns => {
                let Some(cache) = &kind.cache else {
                    continue;
                };
                let running = kind.started.load(std::sync::atomic::Ordering::SeqCst);
                let added = cache.add_owner_kind(&owner_kind, runtime.resolved.namespaced);
                lock(&kind.owners).push((
                    Arc::from(owner_kind.as_str()),
                    Arc::downgrade(runtime),
                    predicates,
                ));
                // Children of a new owner kind were skipped so far: list again.
                if added && running {
                    kind.relist.send_modify(|n| *n += 1);
                }
                let needed = kind
                    .listings
                    .borrow()
                    .iter()
                    .map(|l| l.started + 1)
                    .collect();
                synced.push(Synced {
                    listings: kind.listings.subscribe(),
                    needed,
                });
            }
            Relation::Watches(mapper) => {
                lock(&kind.watchers).push((mapper.clone(), Arc::downgrade(runtime), predicates));
            }
        }
        if !kind.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            tracing::info!(kind = %kind.api_resource.kind, "watching a related kind");
            for (stream, scope) in kind.scopes.iter().enumerate() {
                let task = watch_kind(shared.clone(), kind.clone(), stream, scope.clone());
                shared.tasks.spawn(task);
            }
        }
    }
    synced
}

/// Follows the streams of keys the resource reconciles on
/// ([`Resource::reconcile_on`](crate::Resource::reconcile_on)) until shutdown or their end.
pub(crate) fn follow_triggers(shared: &Arc<Shared>, runtime: &Arc<ResourceRuntime>) {
    let streams = std::mem::take(&mut *lock(&runtime.spec.triggers));
    for mut keys in streams {
        let weak = Arc::downgrade(runtime);
        let shutdown = shared.shutdown.clone();
        shared.tasks.spawn(async move {
            loop {
                let key = tokio::select! {
                    () = shutdown.cancelled() => return,
                    key = futures::StreamExt::next(&mut keys) => key,
                };
                let (Some(key), Some(runtime)) = (key, weak.upgrade()) else {
                    return;
                };
                runtime.trigger(&ObjectKey::new(key.namespace.as_deref(), &key.name));
            }
        });
    }
}

/// Follows one stream (a namespace, or all) of a related kind until shutdown.
async fn watch_kind(
    shared: Arc<Shared>,
    kind: Arc<KindWatch>,
    stream: usize,
    scope: Option<String>,
) {
    let client = shared.client.clone();
    let ar = &kind.api_resource;
    let (api, meta): (Api<DynamicObject>, super::follow::MetaApi) = match &scope {
        Some(namespace) => (
            Api::namespaced_with(client.clone(), namespace, ar),
            Api::namespaced_with(client, namespace, ar),
        ),
        None => (Api::all_with(client.clone(), ar), Api::all_with(client, ar)),
    };
    let followed = Followed {
        api,
        kind: kind.api_resource.kind.clone(),
        label: kind_key(&kind.api_resource),
        selectors: kind.selectors.clone(),
        metadata_only: kind
            .metadata_only
            .then(|| (meta, kind.api_resource.clone())),
    };
    let relists = bumps(kind.relist.subscribe(), |n| *n);
    let mut listing: Option<HashSet<ObjectKey>> = None;
    let mut first = true;
    follow(&shared, followed, relists, |event| match event {
        Event::Init => {
            listing = Some(HashSet::new());
            kind.listings.send_modify(|l| l[stream].started += 1);
        }
        Event::InitApply(object) => {
            let body = to_value(object);
            if !kind.in_namespaces(&shared, &body) {
                return;
            }
            if let (Some(listed), Some(key)) = (listing.as_mut(), ObjectKey::of(&body)) {
                listed.insert(key);
            }
            kind.changed(&body, first);
        }
        Event::InitDone => {
            if let Some(listed) = listing.take() {
                kind.forget_unlisted(&listed, scope.as_deref(), first);
            }
            first = false;
            kind.listings
                .send_modify(|l| l[stream].done = l[stream].started);
        }
        Event::Apply(object) => {
            let body = to_value(object);
            if kind.in_namespaces(&shared, &body) {
                kind.changed(&body, false);
            }
        }
        Event::Delete(object) => {
            let body = to_value(object);
            if kind.in_namespaces(&shared, &body) {
                kind.deleted(&body);
            }
        }
    })
    .await;
}

impl KindWatch {
    fn in_namespaces(&self, shared: &Shared, body: &Value) -> bool {
        !self.namespaced || {
            let namespace = body
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            shared.settings.namespaces.matches(namespace)
        }
    }

    /// An object added or changed: updates the cache and, unless `quiet`, triggers the
    /// objects concerned.
    fn changed(&self, body: &Value, quiet: bool) {
        // What the object was, for the predicates: unknown for a new one.
        let old = if self.predicated.load(std::sync::atomic::Ordering::SeqCst) {
            ObjectKey::of(body).and_then(|key| lock(&self.digests).insert(key, Digest::of(body)))
        } else {
            None
        };
        let passing = |predicates: &Predicates| passes(predicates, old.as_ref(), body);
        if let Some(cache) = &self.cache {
            let owners = cache.observe(body);
            self.trigger_owners_if(if quiet { &[] } else { &owners }, &passing);
        }
        let watchers = lock(&self.watchers).clone();
        let Some(key) = ObjectKey::of(body).filter(|_| !watchers.is_empty()) else {
            return;
        };
        let version = super::latest::resource_version(body);
        let known = lock(&self.seen)
            .get(&key)
            .is_some_and(|seen| seen.version.is_some() && seen.version >= version);
        if known {
            return;
        }
        let mapped = map_all(&watchers, body);
        let seen = Seen {
            version,
            mapped: mapped.clone(),
        };
        let before = lock(&self.seen).insert(key, seen);
        if !quiet {
            let before = before.map(|seen| seen.mapped).unwrap_or_default();
            let keys = mapped
                .into_iter()
                .chain(before)
                .filter(|(index, _)| watchers.get(*index).is_some_and(|w| passing(&w.2)));
            trigger_keys(&watchers, keys);
        }
    }

    /// An object deleted: forgets it and triggers the objects concerned.
    fn deleted(&self, body: &Value) {
        if let Some(key) = ObjectKey::of(body) {
            lock(&self.digests).remove(&key);
        }
        if let Some(cache) = &self.cache {
            let owners = cache.forget(body);
            self.trigger_owners(&owners);
        }
        let watchers = lock(&self.watchers).clone();
        let Some(key) = ObjectKey::of(body).filter(|_| !watchers.is_empty()) else {
            return;
        };
        let before = lock(&self.seen).remove(&key);
        let before = before.map(|seen| seen.mapped).unwrap_or_default();
        trigger_keys(
            &watchers,
            map_all(&watchers, body).into_iter().chain(before),
        );
    }

    /// After a relist of `scope`: children missing from it are gone.
    fn forget_unlisted(&self, listed: &HashSet<ObjectKey>, scope: Option<&str>, quiet: bool) {
        let in_scope = |namespace: Option<&str>| scope.is_none() || namespace == scope;
        if let Some(cache) = &self.cache {
            let listed: HashSet<ChildId> = listed
                .iter()
                .map(|key| ChildId {
                    namespace: key.namespace().map(Arc::from),
                    name: Arc::from(key.name()),
                })
                .collect();
            let owners = cache.forget_unlisted(&listed, |id| in_scope(id.namespace.as_deref()));
            self.trigger_owners(if quiet { &[] } else { &owners });
        }
        lock(&self.digests).retain(|key, _| !in_scope(key.namespace()) || listed.contains(key));
        let mut gone = Vec::new();
        lock(&self.seen).retain(|key, seen| {
            let keep = !in_scope(key.namespace()) || listed.contains(key);
            if !keep {
                gone.append(&mut seen.mapped);
            }
            keep
        });
        if !quiet && !gone.is_empty() {
            let watchers = lock(&self.watchers).clone();
            trigger_keys(&watchers, gone);
        }
    }

    fn trigger_owners(&self, owners: &[OwnerId]) {
        self.trigger_owners_if(owners, &|_| true);
    }

    /// Triggers the owners whose relation's predicates `passing` lets through.
    fn trigger_owners_if(&self, owners: &[OwnerId], passing: &dyn Fn(&Predicates) -> bool) {
        if let Some(cache) = &self.cache {
            let labels = crate::runtime::metrics::ResourceLabels {
                resource: kind_key(&self.api_resource),
            };
            let count = i64::try_from(cache.len()).unwrap_or(i64::MAX);
            let metrics = crate::runtime::metrics::global();
            metrics.children_cached.get_or_create(&labels).set(count);
        }
        if owners.is_empty() {
            return;
        }
        let runtimes = lock(&self.owners).clone();
        for owner in owners {
            let key = ObjectKey::new(owner.namespace.as_deref(), &owner.name);
            for (kind, runtime, predicates) in &runtimes {
                if *kind == owner.kind
                    && passing(predicates)
                    && let Some(runtime) = runtime.upgrade()
                {
                    runtime.trigger(&key);
                }
            }
        }
    }
}

/// The objects the watchers' mappers name for `body`, as (watcher, key).
fn map_all(watchers: &[Watcher], body: &Value) -> Vec<(usize, ObjectKey)> {
    let mut mapped = Vec::new();
    for (index, (mapper, _, _)) in watchers.iter().enumerate() {
        // The author's mapper: a panic in it loses this mapping, not the kind's watch.
        let keys = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| mapper(body)))
            .unwrap_or_else(|_| {
                tracing::error!("a watches() mapper panicked; the object is not mapped");
                Vec::new()
            });
        for key in keys {
            let key = ObjectKey::new(key.namespace.as_deref(), &key.name);
            mapped.push((index, key));
        }
    }
    mapped
}

/// Triggers each (watcher, key) once.
fn trigger_keys(watchers: &[Watcher], keys: impl IntoIterator<Item = (usize, ObjectKey)>) {
    let mut keys: Vec<(usize, ObjectKey)> = keys.into_iter().collect();
    keys.sort();
    keys.dedup();
    for (index, key) in keys {
        if let Some(runtime) = watchers.get(index).and_then(|(_, w, _)| w.upgrade()) {
            runtime.trigger(&key);
        }
    }
}
