//! The reactor: watches each resource, keeps one slot per object, and runs the object's cycles
//! serially while different objects run concurrently under a worker limit.
//!
//! Events arriving while an object is being handled are coalesced into the slot's latest body
//! and handled right after, never lost. Stale events (older than a body the operator already
//! has, e.g. from its own patch) are dropped by resourceVersion.

mod background;
mod cycle;
mod execution;
mod follow;
mod invoke;
mod key;
mod landing;
mod latest;
mod outcome;
mod pace;
mod patching;
mod posting;
mod progression;
mod reconciling;
pub(crate) mod related;
mod slot;
mod watching;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::handling::context::Memo;
use crate::handling::resource::ResourceSpec;
use crate::persistence::storage::Storage;
use crate::runtime::discovery::Resolved;
use crate::runtime::events::EventRecorder;
use crate::runtime::namespaces::NamespacePatterns;
use latest::Latest;

pub(crate) use key::ObjectKey;
pub(crate) use slot::Slot;
pub(crate) use watching::watch_resource;

/// Operator-wide settings, each set by one builder method of [`Operator`](crate::Operator)
/// ([`name`](crate::Operator::name), [`workers`](crate::Operator::workers),
/// [`storage`](crate::Operator::storage), [`shutdown_timeout`](crate::Operator::shutdown_timeout), …).
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The namespaces served (ignored for cluster-scoped resources).
    pub(crate) namespaces: NamespacePatterns,
    /// How many objects are handled at the same time.
    pub(crate) workers: usize,
    /// Where progress and the diff base are kept.
    pub(crate) storage: Storage,
    /// Server-side timeout of each watch request; the watch is renewed after it.
    pub(crate) watch_timeout: Duration,
    /// How long running handlers may take to finish when the operator stops.
    pub(crate) shutdown_timeout: Duration,
    /// The longest per-object backoff after API errors that are not transient (403, 422, …):
    /// 0.5 s doubling up to this.
    pub(crate) max_error_backoff: Duration,
    /// The longest per-object backoff after transient API errors (connection failures, 409,
    /// 429, 5xx): 0.1 s doubling up to this, or the server's `Retry-After` when longer.
    pub(crate) max_transient_backoff: Duration,
    /// Post a Normal event when a handler succeeds (off by default: one more request per
    /// handled object; failures are always posted as Warning events).
    pub(crate) success_events: bool,
    /// Store each handler's `Ok` value under `status.<handler-id>`, as Kopf does (on by default).
    pub(crate) store_results: bool,
    /// Who the operator is: its name and the finalizer, annotation domain, field manager and
    /// Events component derived from it (`kopr` unless set; the command line sets its
    /// program's name).
    pub(crate) identity: crate::Identity,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            namespaces: NamespacePatterns::all(),
            workers: 64,
            storage: Storage::Annotations,
            watch_timeout: Duration::from_secs(60),
            shutdown_timeout: Duration::from_secs(30),
            max_error_backoff: Duration::from_secs(60),
            max_transient_backoff: Duration::from_secs(5),
            success_events: false,
            store_results: true,
            identity: crate::Identity::default(),
        }
    }
}

/// What every resource runtime shares.
pub(crate) struct Shared {
    pub(crate) client: kube::Client,
    pub(crate) events: EventRecorder,
    pub(crate) memo: Memo,
    pub(crate) settings: Settings,
    pub(crate) shutdown: CancellationToken,
    pub(crate) workers: Arc<Semaphore>,
    pub(crate) tasks: TaskTracker,
    /// What the health probes report.
    pub(crate) health: Arc<crate::runtime::endpoints::Health>,
    /// With sharding, the shards this replica owns: only their objects are handled.
    pub(crate) shards: Option<Arc<crate::runtime::shards::ShardFilter>>,
    /// The watches of owned and watched kinds.
    pub(crate) related: related::Related,
}

/// What a worker does next for its object.
enum Job {
    /// Run a cycle on this body (`true`: the object is gone).
    Cycle(Latest, bool),
    /// Nothing is pending: the worker ends.
    Idle,
    /// The object's shard is no longer owned: drop the slot.
    Evict,
}

/// One served resource: its spec, how it is served, and the per-object slots.
pub(crate) struct ResourceRuntime {
    pub(crate) shared: Arc<Shared>,
    pub(crate) spec: ResourceSpec,
    pub(crate) resolved: Resolved,
    /// The resource's metrics label: `group/version/plural`.
    pub(crate) label: String,
    /// The resource's own limit on objects handled at once, within the operator's.
    limit: Option<Arc<Semaphore>>,
    /// The resource's rate limit on cycles started.
    pace: Option<pace::Pace>,
    slots: Mutex<HashMap<ObjectKey, Slot>>,
    /// Raw events waiting for their object's `on_event` handlers; an object is here while a
    /// task drains its events, one at a time, in order.
    events: Mutex<HashMap<ObjectKey, std::collections::VecDeque<QueuedEvent>>>,
    /// What the reconcile waits for before it first runs: the related kinds' caches listed.
    synced: std::sync::OnceLock<Vec<related::Synced>>,
    /// Set once they are.
    all_synced: std::sync::atomic::AtomicBool,
}

/// A raw watch event waiting for the `on_event` handlers that matched it.
pub(crate) struct QueuedEvent {
    pub(crate) body: Arc<Value>,
    pub(crate) event_type: &'static str,
    pub(crate) handlers: Vec<crate::handling::handlers::HandlerSpec>,
}

impl ResourceRuntime {
    /// The merge patch storing a handler's result, unless results are not stored or there is
    /// nothing to store.
    pub(crate) fn result_patch(&self, handler_id: &str, result: Value) -> Option<Value> {
        (self.shared.settings.store_results && !result.is_null())
            .then(|| serde_json::json!({ "status": { handler_id: result } }))
    }

    pub(crate) fn new(shared: Arc<Shared>, spec: ResourceSpec, resolved: Resolved) -> Arc<Self> {
        let ar = &resolved.api_resource;
        let label = if ar.group.is_empty() {
            format!("{}/{}", ar.version, ar.plural)
        } else {
            format!("{}/{}/{}", ar.group, ar.version, ar.plural)
        };
        let limit = spec.workers.map(|n| Arc::new(Semaphore::new(n)));
        let pace = spec.rate_limit.map(pace::Pace::new);
        let runtime = Arc::new(ResourceRuntime {
            shared,
            limit,
            pace,
            spec,
            resolved,
            label,
            slots: Mutex::new(HashMap::new()),
            events: Mutex::new(HashMap::new()),
            synced: std::sync::OnceLock::new(),
            all_synced: std::sync::atomic::AtomicBool::new(false),
        });
        if let Some(filter) = &runtime.shared.shards {
            // The coordinator hands a shard over only once no slot of it is left.
            let weak = Arc::downgrade(&runtime);
            filter.register(Box::new(move |visit| {
                let Some(runtime) = weak.upgrade() else {
                    return false;
                };
                for key in runtime.slots().keys() {
                    visit(key.namespace(), key.name());
                }
                for key in runtime.queued_events().keys() {
                    visit(key.namespace(), key.name());
                }
                true
            }));
        }
        let weak = Arc::downgrade(&runtime);
        crate::runtime::metrics::global().count_slots(Box::new(move || {
            let runtime = weak.upgrade()?;
            let count = i64::try_from(runtime.slots().len()).unwrap_or(i64::MAX);
            Some((runtime.label.clone(), count))
        }));
        runtime
    }

    fn gauge(
        &self,
        family: &prometheus_client::metrics::family::Family<
            crate::runtime::metrics::ResourceLabels,
            prometheus_client::metrics::gauge::Gauge,
        >,
    ) -> crate::runtime::metrics::Raised {
        let labels = crate::runtime::metrics::ResourceLabels {
            resource: self.label.clone(),
        };
        crate::runtime::metrics::Raised::new(family.get_or_create(&labels).clone())
    }

    pub(crate) fn slots(&self) -> MutexGuard<'_, HashMap<ObjectKey, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queued_events(
        &self,
    ) -> MutexGuard<'_, HashMap<ObjectKey, std::collections::VecDeque<QueuedEvent>>> {
        self.events.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Queues an event for the object's `on_event` handlers; `true` when no task drains the
    /// object's events yet (the caller starts one).
    pub(crate) fn queue_event(&self, key: &ObjectKey, event: QueuedEvent) -> bool {
        let mut events = self.queued_events();
        match events.get_mut(key) {
            Some(queue) => {
                queue.push_back(event);
                false
            }
            None => {
                events.insert(key.clone(), std::collections::VecDeque::from([event]));
                true
            }
        }
    }

    /// The object's next queued event, or `None` (and the object leaves the queue) when there
    /// is none, the operator stops, or the object's shard went to another replica.
    pub(crate) fn next_event(&self, key: &ObjectKey) -> Option<QueuedEvent> {
        let mut events = self.queued_events();
        let queue = events.get_mut(key)?;
        let next = if self.shared.shutdown.is_cancelled() || !self.owns(key) {
            None
        } else {
            queue.pop_front()
        };
        if next.is_none() {
            events.remove(key);
        }
        next
    }

    /// Whether this replica handles the object (always, without sharding).
    pub(crate) fn owns(&self, key: &ObjectKey) -> bool {
        self.shared
            .shards
            .as_ref()
            .is_none_or(|filter| filter.owns(key.namespace(), key.name()))
    }

    /// Drops the idle slots of objects whose shard this replica no longer owns, after stopping
    /// their timers and daemons. Slots with a cycle in flight are dropped by their worker when
    /// it ends, and slots with an outcome still to land once it landed.
    pub(crate) async fn evict_unowned(self: &Arc<Self>) {
        let idle: Vec<ObjectKey> = self
            .slots()
            .iter()
            .filter(|(key, slot)| {
                !slot.running && (!slot.has_landing() || slot.deleted) && !self.owns(key)
            })
            .map(|(key, _)| key.clone())
            .collect();
        for key in idle {
            {
                // Claimed, so that no worker starts while its background tasks stop.
                let mut slots = self.slots();
                match slots.get_mut(&key) {
                    Some(slot) if !slot.running => slot.running = true,
                    _ => continue,
                }
            }
            background::stop_all(self, &key).await;
            self.drop_or_resume(&key);
        }
    }

    /// After its background tasks stopped: removes an unowned slot, or hands an owned-again
    /// one back to the workers.
    fn drop_or_resume(self: &Arc<Self>, key: &ObjectKey) {
        let mut slots = self.slots();
        if !self.owns(key) {
            slots.remove(key);
        } else if let Some(slot) = slots.get_mut(key) {
            slot.running = false;
            if slot.pending {
                self.mark_pending(key.clone(), slot);
            }
        }
    }

    pub(crate) fn api_resource(&self) -> &ApiResource {
        &self.resolved.api_resource
    }

    /// The API for objects in `namespace` (or cluster-scoped ones).
    pub(crate) fn api(&self, namespace: Option<&str>) -> Api<DynamicObject> {
        let client = self.shared.client.clone();
        match namespace {
            Some(ns) if self.resolved.namespaced => {
                Api::namespaced_with(client, ns, self.api_resource())
            }
            _ => Api::all_with(client, self.api_resource()),
        }
    }

    /// The API of the resource's objects' metadata, in `namespace` or all.
    pub(crate) fn meta_api(&self, namespace: Option<&str>) -> follow::MetaApi {
        let client = self.shared.client.clone();
        match namespace {
            Some(ns) if self.resolved.namespaced => {
                Api::namespaced_with(client, ns, self.api_resource())
            }
            _ => Api::all_with(client, self.api_resource()),
        }
    }

    /// Whether any handler, timer or daemon could ever apply to this object.
    fn concerns(&self, body: &Value) -> bool {
        let spec = &self.spec;
        spec.handlers.iter().any(|h| h.filters.matches_object(body))
            || spec
                .timers
                .iter()
                .any(|t| t.handler.filters.matches_object(body))
            || spec
                .daemons
                .iter()
                .any(|d| d.handler.filters.matches_object(body))
            || spec
                .reconcile
                .as_ref()
                .is_some_and(|r| r.handler.filters.matches_object(body))
            || crate::persistence::storage::has_finalizer(&self.shared.settings.identity, body)
    }

    /// Watches the related kinds (owned children, watched objects) of this resource, and
    /// follows the streams of keys it reconciles on.
    pub(crate) fn subscribe_related(self: &Arc<Self>) {
        related::follow_triggers(&self.shared, self);
        let synced = related::subscribe(&self.shared, self);
        let _ = self.synced.set(synced);
    }

    /// Waits until the related kinds' watches listed what the reconcile may read.
    pub(crate) async fn wait_synced(&self) {
        use std::sync::atomic::Ordering;
        if self.all_synced.load(Ordering::Acquire) {
            return;
        }
        let synced = self.synced.get().cloned().unwrap_or_default();
        for mut one in synced {
            one.wait(&self.shared.shutdown).await;
        }
        if !self.shared.shutdown.is_cancelled() {
            self.all_synced.store(true, Ordering::Release);
        }
    }

    /// Makes the object's reconcile due now if the change from `old` to `new` triggers it.
    pub(crate) fn reconcile_due(&self, key: &ObjectKey, old: &Value, new: &Value) {
        let Some(reconcile) = &self.spec.reconcile else {
            return;
        };
        if reconcile.triggered_by(|| Arc::new(old.clone()), new)
            && let Some(slot) = self.slots().get_mut(key)
        {
            let version = latest::resource_version(new).unwrap_or(u64::MAX);
            let extra = slot.extra_mut();
            extra.reconcile_change = extra.reconcile_change.max(Some(version));
        }
    }

    /// The reconcile's own write landed as `written`, with no one else's change in it: the
    /// watch events up to it that came in during the run made the reconcile due for nothing.
    pub(crate) fn forget_own_change(&self, key: &ObjectKey, written: &Value) {
        let Some(version) = latest::resource_version(written) else {
            return;
        };
        if let Some(slot) = self.slots().get_mut(key)
            && slot.reconcile_change().is_some_and(|seen| seen <= version)
        {
            if let Some(extra) = slot.extra_if_any() {
                extra.reconcile_change = None;
            }
            // Nothing else came in for it: no cycle is owed for that event.
            if slot.reconcile_at().is_none() && !slot.deleted {
                slot.pending = false;
            }
        }
    }

    /// Makes the object's reconcile due now (a child or a watched object changed).
    pub(crate) fn trigger(self: &Arc<Self>, key: &ObjectKey) {
        let mut slots = self.slots();
        if !self.owns(key) {
            return;
        }
        let Some(slot) = slots.get_mut(key) else {
            return;
        };
        if slot.latest.is_none() || slot.deleted || slot.gone {
            return;
        }
        slot.extra_mut().reconcile_at = Some(Instant::now());
        self.mark_pending(key.clone(), slot);
    }

    /// Records a new body for an object and makes sure a worker will handle it.
    pub(crate) fn enqueue(self: &Arc<Self>, body: Value, listed: bool) {
        let Some(key) = ObjectKey::of(&body) else {
            return;
        };
        let mut slots = self.slots();
        // Checked under the slots' lock: a shard's handover looks for its slots under it too.
        if !self.owns(&key) || (!slots.contains_key(&key) && !self.concerns(&body)) {
            return;
        }
        let slot = slots
            .entry(key.clone())
            .or_insert_with(|| Slot::new(listed));
        if let Some(reconcile) = &self.spec.reconcile {
            let due = match &slot.latest {
                None => true,
                Some(latest) if latest.is_newer_or_same_as(&body) => false,
                Some(latest) if !latest.has_uid(latest::uid(&body)) => true,
                Some(latest) => {
                    reconcile.triggered_by(|| latest.body(&key, self.api_resource()), &body)
                }
            };
            if due {
                let version = latest::resource_version(&body).unwrap_or(u64::MAX);
                let extra = slot.extra_mut();
                extra.reconcile_change = extra.reconcile_change.max(Some(version));
            }
        }
        if let Some(latest) = &slot.latest {
            if latest.is_newer_or_same_as(&body) {
                return;
            }
            let same_object = latest.has_uid(latest::uid(&body));
            if slot.gone && same_object {
                // A late event of an object already known to be gone.
                return;
            }
            if !same_object {
                slot.gone = false;
                // The same name now belongs to a new object: forget the old one's state.
                slot.optional_deletes_done = false;
                if let Some(extra) = slot.extra_if_any() {
                    extra.memory_diff_base = None;
                    extra.reported_parse_error = None;
                    extra.landing = None;
                }
            }
        }
        slot.latest = Some(match slot.body_channel() {
            Some(channel) => {
                // Idle timers count from the last change of the essence, not of status or
                // bookkeeping.
                let body = Arc::new(body);
                let changed = slot.latest.as_ref().is_none_or(|old| {
                    crate::persistence::storage::essence(
                        &self.shared.settings.identity,
                        &old.body(&key, self.api_resource()),
                    ) != crate::persistence::storage::essence(&self.shared.settings.identity, &body)
                });
                if changed {
                    channel.send_replace((body.clone(), Instant::now()));
                } else {
                    channel.send_modify(|(latest, _)| *latest = body.clone());
                }
                Latest::parsed(body)
            }
            None => Latest::packed(&body),
        });
        slot.deleted = false;
        self.mark_pending(key, slot);
    }

    /// Records that an object is gone from the server.
    pub(crate) fn enqueue_deleted(self: &Arc<Self>, body: Value) {
        let Some(key) = ObjectKey::of(&body) else {
            return;
        };
        let mut slots = self.slots();
        if !self.owns(&key) {
            return;
        }
        let Some(slot) = slots.get_mut(&key) else {
            return;
        };
        if slot.gone {
            // Already handled as deleted; its tombstone can go now.
            if !slot.running {
                slots.remove(&key);
            } else {
                slot.gone = false;
            }
            return;
        }
        slot.latest = Some(Latest::packed(&body));
        slot.deleted = true;
        self.mark_pending(key, slot);
    }

    /// Treats objects in `scope` that a relist did not return as deleted.
    pub(crate) fn forget_missing(
        self: &Arc<Self>,
        listed: &std::collections::HashSet<ObjectKey>,
        in_scope: impl Fn(&ObjectKey) -> bool,
    ) {
        // Tombstones of objects the listing does not show are no longer needed.
        self.slots().retain(|key, slot| {
            !slot.gone || slot.running || !in_scope(key) || listed.contains(key)
        });
        let missing: Vec<Value> = self
            .slots()
            .iter()
            .filter(|(key, slot)| {
                in_scope(key) && self.owns(key) && !listed.contains(key) && !slot.deleted
            })
            .filter_map(|(key, slot)| {
                let latest = slot.latest.as_ref()?;
                Some(Value::clone(&latest.body(key, self.api_resource())))
            })
            .collect();
        for body in missing {
            self.enqueue_deleted(body);
        }
    }

    fn mark_pending(self: &Arc<Self>, key: ObjectKey, slot: &mut Slot) {
        slot.pending = true;
        if !slot.running {
            slot.running = true;
            let runtime = self.clone();
            let busy = crate::runtime::memory::Busy::start();
            self.shared.tasks.spawn(async move {
                runtime.work(key).await;
                drop(busy);
            });
        }
    }

    /// Makes the object's next cycle run after `delay` (keeping an earlier wake-up if any).
    pub(crate) fn wake_after(self: &Arc<Self>, key: &ObjectKey, delay: Duration) {
        let at = Instant::now() + delay;
        {
            let mut slots = self.slots();
            let Some(slot) = slots.get_mut(key) else {
                return;
            };
            if slot
                .wake_at()
                .is_some_and(|existing| existing <= at && existing > Instant::now())
            {
                return;
            }
            slot.extra_mut().wake_at = Some(at);
        }
        let runtime = self.clone();
        let key = key.clone();
        let shutdown = self.shared.shutdown.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = shutdown.cancelled() => {}
                () = tokio::time::sleep_until(at) => {
                    let mut slots = runtime.slots();
                    if let Some(slot) = slots.get_mut(&key)
                        && slot.wake_at() == Some(at)
                    {
                        if let Some(extra) = slot.extra_if_any() {
                            extra.wake_at = None;
                        }
                        runtime.mark_pending(key, slot);
                    }
                }
            }
        });
    }

    /// The worker: runs cycles for one object until nothing is pending.
    async fn work(self: Arc<Self>, key: ObjectKey) {
        loop {
            if self.shared.shutdown.is_cancelled() {
                self.release(&key);
                return;
            }
            let metrics = crate::runtime::metrics::global();
            let waiting = self.gauge(&metrics.objects_waiting);
            // A start is reserved only when a cycle is pending: the last pass of a worker finds
            // nothing to do and must not spend (or wait for) one.
            let pending = || self.slots().get(&key).is_some_and(|slot| slot.pending);
            if let Some(pace) = self.pace.as_ref().filter(|_| pending()) {
                let wait = pace.reserve(tokio::time::Instant::now());
                if !wait.is_zero() {
                    tokio::select! {
                        () = self.shared.shutdown.cancelled() => {
                            self.release(&key);
                            return;
                        }
                        () = tokio::time::sleep(wait) => {}
                    }
                }
            }
            // The resource's own limit first, so that its objects waiting for it hold none of
            // the operator's workers.
            let own_permit = match &self.limit {
                Some(limit) => match limit.clone().acquire_owned().await {
                    Ok(permit) => Some(permit),
                    Err(_) => {
                        self.release(&key);
                        return;
                    }
                },
                None => None,
            };
            let Ok(permit) = self.shared.workers.clone().acquire_owned().await else {
                self.release(&key);
                return;
            };
            drop(waiting);
            let job = {
                let mut slots = self.slots();
                let Some(slot) = slots.get_mut(&key) else {
                    return;
                };
                if !self.owns(&key) && (!slot.has_landing() || slot.deleted) {
                    // Its shard went to another replica: no cycle starts (an outcome still to
                    // land lands first), and the slot goes.
                    slot.pending = false;
                    Job::Evict
                } else {
                    match (&slot.latest, slot.pending) {
                        (Some(latest), true) => {
                            slot.pending = false;
                            Job::Cycle(latest.clone(), slot.deleted)
                        }
                        _ => {
                            // Checked and released under one lock, so no event slips in between.
                            slot.running = false;
                            slot.tidy();
                            if slot.deleted && !slot.has_background() {
                                if slot.gone {
                                    // Kept as a tombstone: only the identity.
                                    slot.latest = slot
                                        .latest
                                        .as_ref()
                                        .map(|l| l.skeleton(&key, self.api_resource()));
                                } else {
                                    slots.remove(&key);
                                }
                            }
                            Job::Idle
                        }
                    }
                }
            };
            let (latest, deleted) = match job {
                Job::Cycle(latest, deleted) => (latest, deleted),
                Job::Idle => return,
                Job::Evict => {
                    drop(permit);
                    drop(own_permit);
                    background::stop_all(&self, &key).await;
                    self.drop_or_resume(&key);
                    return;
                }
            };
            // Parsed outside the lock.
            let body = latest.body(&key, self.api_resource());
            // Boxed, so that a worker waiting for its turn is small: with thousands of objects
            // queued, an inline cycle future would make every waiting task as large as a
            // running one.
            let in_flight = self.gauge(&metrics.objects_in_flight);
            let outcome = Box::pin(cycle::run(&self, &key, body, deleted)).await;
            crate::runtime::memory::cycled();
            drop(in_flight);
            drop(permit);
            self.settle(&key, outcome);
        }
    }

    /// Marks the worker as gone (on shutdown).
    fn release(&self, key: &ObjectKey) {
        if let Some(slot) = self.slots().get_mut(key) {
            slot.running = false;
        }
    }

    fn settle(self: &Arc<Self>, key: &ObjectKey, outcome: outcome::Outcome) {
        tracing::debug!(object = %key, outcome = outcome.name(), "cycle finished");
        // Only a cycle that left nothing to do may start the reconcile right away: any other
        // runs again (or waits for a retry) by itself.
        let at_rest = matches!(
            outcome,
            outcome::Outcome::Done | outcome::Outcome::Handled(_)
        );
        self.settle_outcome(key, outcome);
        if self.spec.reconcile.is_some() {
            self.schedule_reconcile(key, at_rest);
        }
    }

    /// Makes sure a due reconcile runs: in the next cycle when it is due now (and `now` allows
    /// it), or at its time.
    fn schedule_reconcile(self: &Arc<Self>, key: &ObjectKey, now: bool) {
        let at = {
            let mut slots = self.slots();
            let Some(slot) = slots.get_mut(key) else {
                return;
            };
            let at = match (slot.reconcile_change(), slot.reconcile_at()) {
                (Some(_), _) => Instant::now(),
                (None, Some(at)) => at,
                (None, None) => return,
            };
            if at <= Instant::now() {
                if now && !slot.deleted {
                    slot.pending = true;
                }
                return;
            }
            at
        };
        self.wake_after(key, at.saturating_duration_since(Instant::now()));
    }

    fn settle_outcome(self: &Arc<Self>, key: &ObjectKey, outcome: outcome::Outcome) {
        match outcome {
            outcome::Outcome::Done => {
                self.reset_failures(key);
                self.shrink(key);
            }
            outcome::Outcome::Gone => {
                // As the DELETED event will: the next cycle sees the object gone.
                self.reset_failures(key);
                if let Some(slot) = self.slots().get_mut(key) {
                    slot.deleted = true;
                    slot.gone = true;
                    slot.pending = true;
                    if let Some(extra) = slot.extra_if_any() {
                        extra.wake_at = None;
                    }
                }
            }
            outcome::Outcome::Continue(body) => self.keep(key, body, true),
            outcome::Outcome::Handled(body) => {
                self.keep(key, body, false);
                self.shrink(key);
            }
            outcome::Outcome::WakeAfter(delay) => {
                self.reset_failures(key);
                self.wake_after(key, delay);
            }
            outcome::Outcome::Failed(error) => {
                let failures = {
                    let mut slots = self.slots();
                    let Some(slot) = slots.get_mut(key) else {
                        return;
                    };
                    slot.failures = slot.failures.saturating_add(1);
                    slot.failures
                };
                let settings = &self.shared.settings;
                let delay = if error.is_transient() {
                    transient_backoff(failures, settings.max_transient_backoff)
                        .max(error.retry_after().unwrap_or_default())
                } else {
                    error_backoff(failures, settings.max_error_backoff)
                };
                tracing::warn!(object = %key, %error, retry_in = ?delay, "cycle failed; will retry");
                self.wake_after(key, delay);
            }
        }
    }

    /// Keeps `body` (a patch response) as the newest body unless a newer one arrived meanwhile;
    /// with `again`, another cycle runs on it.
    fn keep(&self, key: &ObjectKey, body: Value, again: bool) {
        self.reset_failures(key);
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(key) else {
            return;
        };
        let newer = slot
            .latest
            .as_ref()
            .is_none_or(|l| !l.is_newer_or_same_as(&body));
        if newer {
            slot.latest = Some(match slot.body_channel() {
                Some(channel) => {
                    let body = Arc::new(body);
                    channel.send_modify(|(latest, _)| *latest = body.clone());
                    Latest::parsed(body)
                }
                // A reconcile reads the body at rest, so it is kept (packed).
                None if again || self.spec.reconcile.is_some() => Latest::packed(&body),
                // Going to rest right away (`shrink` keeps only the identity, read straight
                // from the parsed body): packing it in full first would be wasted.
                None => Latest::parsed(Arc::new(body)),
            });
        }
        if again {
            slot.pending = true;
        }
    }

    /// Between events, an object at rest needs only its identity and resourceVersion (to tell
    /// stale events apart); the body goes until the next event brings a new one. Objects with a
    /// pending cycle or a scheduled wake-up keep theirs.
    fn shrink(&self, key: &ObjectKey) {
        let mut slots = self.slots();
        let Some(slot) = slots.get_mut(key) else {
            return;
        };
        // Timers and daemons share the body through their channel: nothing to save there. A
        // reconcile may be triggered by a child at any time, and reads the body then.
        if slot.pending
            || slot.wake_at().is_some()
            || slot.deleted
            || slot.body_channel().is_some()
            || self.spec.reconcile.is_some()
        {
            return;
        }
        if let Some(latest) = &slot.latest {
            slot.latest = Some(latest.skeleton(key, self.api_resource()));
        }
    }

    fn reset_failures(&self, key: &ObjectKey) {
        if let Some(slot) = self.slots().get_mut(key) {
            slot.failures = 0;
        }
    }
}

/// Exponential per-object backoff for API errors that are not transient: 0.5 s doubling up to
/// `max`, with ±20 % jitter so that many objects failing together do not retry in lockstep.
fn error_backoff(failures: u32, max: Duration) -> Duration {
    let base =
        Duration::from_millis(500).saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    let capped = base.min(max);
    let jitter = rand::random_range(0.8..1.2);
    capped.mul_f64(jitter)
}

/// Exponential per-object backoff for transient API errors: 0.1 s doubling up to `max`, with
/// jitter between half and the whole of it, so a burst of failures spreads out.
fn transient_backoff(failures: u32, max: Duration) -> Duration {
    let base =
        Duration::from_millis(100).saturating_mul(1u32 << failures.saturating_sub(1).min(16));
    base.min(max).mul_f64(rand::random_range(0.5..=1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transient_backoff_is_short_and_capped() {
        let max = Duration::from_secs(5);
        assert!(transient_backoff(1, max) <= Duration::from_millis(100));
        assert!(transient_backoff(1, max) >= Duration::from_millis(50));
        assert!(transient_backoff(30, max) <= max);
        assert!(transient_backoff(30, max) >= max / 2);
    }

    #[test]
    fn error_backoff_grows_and_caps() {
        let max = Duration::from_secs(10);
        let first = error_backoff(1, max);
        assert!(first >= Duration::from_millis(400) && first <= Duration::from_millis(600));
        assert!(error_backoff(4, max) > error_backoff(1, max));
        assert!(error_backoff(40, max) <= Duration::from_secs(12));
    }
}
