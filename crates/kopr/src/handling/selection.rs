//! What of a resource the operator watches and how hard it works on it: server-side label
//! and field selectors on the resource's watch (only the objects selected are listed, sent
//! and kept), a limit on how many of its objects are handled at once, and reconciles
//! triggered from outside the cluster (a stream of keys, as kube-runtime's
//! `reconcile_all_on` and controller-runtime's `source.Channel`); and how owned and watched
//! kinds are watched ([`WatchOptions`]: selectors, metadata only, [`Predicate`]s).

use std::sync::{Arc, Mutex};

use futures::stream::{BoxStream, Stream, StreamExt};
use serde::de::DeserializeOwned;

use crate::handling::reconcile::Key;
use crate::handling::resource::Resource;

/// The selectors of a resource's watch, as the API server takes them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Selectors {
    /// A label selector (`app=web,tier!=cache`).
    pub(crate) labels: Option<String>,
    /// A field selector (`spec.nodeName=node-1`).
    pub(crate) fields: Option<String>,
}

/// Streams of keys to reconcile, taken once when the operator starts.
pub(crate) type Triggers = Arc<Mutex<Vec<BoxStream<'static, Key>>>>;

impl<K: DeserializeOwned + Send + Sync + 'static> Resource<K> {
    /// Watches only the objects whose labels match `selector` (Kubernetes' label selector
    /// syntax: `app=web`, `tier in (web,api)`, `!canary`). The API server filters, so objects
    /// left out are never sent to the operator nor kept in its memory; an object whose labels
    /// stop matching is seen as deleted (its delete handlers do not run: the object still
    /// exists).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// let pods = kopr::Resource::<Pod>::new().label_selector("app.kubernetes.io/managed-by=my-operator");
    /// ```
    ///
    /// # Errors
    /// A selector the API server refuses makes the watch fail and retry with backoff, logged
    /// with the server's message.
    pub fn label_selector(mut self, selector: impl Into<String>) -> Self {
        self.spec_mut().selectors.labels = Some(selector.into());
        self
    }

    /// Watches only the objects whose fields match `selector` (the fields the kind supports:
    /// `metadata.name`, `metadata.namespace`, and per kind, e.g. a Pod's `spec.nodeName` and
    /// `status.phase`), filtered by the API server as with
    /// [`label_selector`](Self::label_selector).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// let running = kopr::Resource::<Pod>::new().field_selector("status.phase=Running");
    /// ```
    ///
    /// # Errors
    /// As [`label_selector`](Self::label_selector): a field the kind does not support is the
    /// API server's 400, logged, and the watch retries.
    pub fn field_selector(mut self, selector: impl Into<String>) -> Self {
        self.spec_mut().selectors.fields = Some(selector.into());
        self
    }

    /// Watches only the objects' metadata (`PartialObjectMetadata` requests, as
    /// controller-runtime's `OnlyMetadata`): handlers get objects with only `apiVersion`,
    /// `kind` and `metadata`, and neither the wire nor the operator's memory carries their
    /// spec or status. For handlers that need only names, labels, annotations, owners or
    /// finalizers, on kinds with many large objects (pods, secrets).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn labelled(ctx: Context<Pod>) -> HandlerResult {
    ///     // ctx.object.spec is None: only the metadata came.
    ///     tracing::info!("{} has labels {:?}", ctx.name(), ctx.object.metadata.labels);
    ///     Ok(())
    /// }
    ///
    /// let pods = Resource::<Pod>::new().metadata_only().on_create(labelled);
    /// ```
    ///
    /// # Caveats
    /// `K` must deserialize from metadata alone (k8s-openapi kinds do; a custom resource
    /// whose `spec` is required does not, and each object is reported as one that cannot be
    /// handled: use [`DynamicObject`](kube::api::DynamicObject) or
    /// [`PartialObjectMeta<K>`](kube::core::PartialObjectMeta)). An update cause is a change
    /// of labels or annotations only, as nothing else is seen.
    pub fn metadata_only(mut self) -> Self {
        self.spec_mut().metadata_only = true;
        self
    }

    /// Handles at most `workers` objects of this resource at the same time (within the
    /// operator's [`workers`](crate::Operator::workers)), as controller-runtime's
    /// `MaxConcurrentReconciles`: a slow resource then leaves workers to the others.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let config_maps = kopr::Resource::<ConfigMap>::new().workers(4);
    /// ```
    pub fn workers(mut self, workers: usize) -> Self {
        self.spec_mut().workers = Some(workers.max(1));
        self
    }

    /// Starts at most `per_second` cycles of this resource's objects a second (bursts of up to
    /// `per_second` start at once), as controller-runtime's rate limiter on its queue: a
    /// resource whose handlers call a rate-limited API keeps within its quota.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let config_maps = kopr::Resource::<ConfigMap>::new().rate_limit(10);
    /// ```
    pub fn rate_limit(mut self, per_second: u32) -> Self {
        self.spec_mut().rate_limit = Some(per_second.max(1));
        self
    }

    /// Reconciles the object of each key `keys` yields, whenever it yields one: a trigger from
    /// outside the cluster (a message queue, a timer of your own, a webhook), as
    /// controller-runtime's `source.Channel`. Keys of objects the operator does not know (not
    /// listed yet, deleted, in another shard) are skipped. Needs
    /// [`reconcile`](Self::reconcile).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::reconcile::{Action, Key};
    ///
    /// let (sender, receiver) = tokio::sync::mpsc::channel::<Key>(16);
    /// let config_maps = kopr::Resource::<ConfigMap>::new()
    ///     .reconcile(|_ctx: kopr::Context<ConfigMap>| async { Ok(Action::await_change()) })
    ///     .reconcile_on(futures::stream::unfold(receiver, |mut keys| async move {
    ///         keys.recv().await.map(|key| (key, keys))
    ///     }));
    /// // Later: sender.send(Key::namespaced("default", "settings")).await
    /// # drop(sender);
    /// ```
    pub fn reconcile_on(mut self, keys: impl Stream<Item = Key> + Send + 'static) -> Self {
        if let Ok(mut triggers) = self.spec_mut().triggers.lock() {
            triggers.push(keys.boxed());
        }
        self
    }
}

/// How an owned or watched kind is watched ([`Resource::owns_with`],
/// [`Resource::watches_with`]): server-side selectors, metadata only, and predicates that
/// decide which changes trigger a reconcile.
///
/// ```
/// use k8s_openapi::api::core::v1::{ConfigMap, Pod};
/// use kopr::reconcile::{Action, Key};
/// use kopr::selection::{Predicate, WatchOptions};
///
/// let config_maps = kopr::Resource::<ConfigMap>::new()
///     .reconcile(|_ctx: kopr::Context<ConfigMap>| async { Ok(Action::await_change()) })
///     // Only the operator's children, and only when their labels change.
///     .owns_with::<ConfigMap>(
///         WatchOptions::new()
///             .labels("app.kubernetes.io/managed-by=my-operator")
///             .predicate(Predicate::LabelsChanged),
///     )
///     // Pods' metadata only: enough to map them by a label, at a fraction of the memory.
///     .watches_with::<Pod>(WatchOptions::new().metadata_only(), |pod: &Pod| {
///         let labels = pod.metadata.labels.clone().unwrap_or_default();
///         let namespace = pod.metadata.namespace.clone().unwrap_or_default();
///         labels.get("config").map(|name| Key::namespaced(namespace, name.clone())).into_iter().collect()
///     });
/// ```
///
/// # Caveats
/// A kind's watch is shared by every resource of the operator that owns or watches it, so
/// they must give it the same selectors and `metadata_only`
/// ([`run_until`](crate::Operator::run_until) says otherwise with
/// [`Error::Config`](crate::Error::Config)); predicates are each relation's own. With
/// `metadata_only`, [`Context::owned`](crate::Context::owned) and mappers see objects with
/// only `apiVersion`, `kind` and `metadata`.
#[derive(Clone, Default)]
pub struct WatchOptions {
    pub(crate) selectors: Selectors,
    pub(crate) metadata_only: bool,
    pub(crate) predicates: Vec<Predicate>,
}

impl std::fmt::Debug for WatchOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchOptions")
            .field("selectors", &self.selectors)
            .field("metadata_only", &self.metadata_only)
            .field("predicates", &self.predicates.len())
            .finish()
    }
}

impl WatchOptions {
    /// Everything of the kind, every change (as [`Resource::owns`] and [`Resource::watches`]).
    ///
    /// ```
    /// let all = kopr::selection::WatchOptions::new();
    /// ```
    pub fn new() -> WatchOptions {
        WatchOptions::default()
    }

    /// Only objects whose labels match `selector`, filtered by the API server.
    ///
    /// ```
    /// let mine = kopr::selection::WatchOptions::new().labels("app=web");
    /// ```
    pub fn labels(mut self, selector: impl Into<String>) -> WatchOptions {
        self.selectors.labels = Some(selector.into());
        self
    }

    /// Only objects whose fields match `selector`, filtered by the API server.
    ///
    /// ```
    /// let running = kopr::selection::WatchOptions::new().fields("status.phase=Running");
    /// ```
    pub fn fields(mut self, selector: impl Into<String>) -> WatchOptions {
        self.selectors.fields = Some(selector.into());
        self
    }

    /// Watches only the objects' metadata (`PartialObjectMetadata`), as controller-runtime's
    /// `OnlyMetadata`: the API server sends, and the operator keeps, no spec or status.
    ///
    /// ```
    /// let light = kopr::selection::WatchOptions::new().metadata_only();
    /// ```
    pub fn metadata_only(mut self) -> WatchOptions {
        self.metadata_only = true;
        self
    }

    /// Triggers reconciles only for changes that `predicate` lets through (every predicate
    /// given must); deletions always trigger.
    ///
    /// ```
    /// use kopr::selection::{Predicate, WatchOptions};
    /// let spec_changes = WatchOptions::new().predicate(Predicate::GenerationChanged);
    /// ```
    pub fn predicate(mut self, predicate: Predicate) -> WatchOptions {
        self.predicates.push(predicate);
        self
    }
}

/// Which changes of an owned or watched object trigger a reconcile, as controller-runtime's
/// predicates. A new object (or one first seen after a restart) passes the `…Changed`
/// predicates; deletions always trigger.
#[derive(Clone)]
pub enum Predicate {
    /// `metadata.generation` changed: spec changes, not status ones.
    GenerationChanged,
    /// `metadata.labels` changed.
    LabelsChanged,
    /// `metadata.annotations` changed.
    AnnotationsChanged,
    /// The function holds for the object as it is now.
    Custom(Arc<dyn Fn(&serde_json::Value) -> bool + Send + Sync>),
}

impl Predicate {
    /// A predicate of the object as it is now (its JSON form).
    ///
    /// ```
    /// use kopr::selection::Predicate;
    /// let ready = Predicate::custom(|pod| pod["status"]["phase"] == "Running");
    /// ```
    pub fn custom(check: impl Fn(&serde_json::Value) -> bool + Send + Sync + 'static) -> Self {
        Predicate::Custom(Arc::new(check))
    }
}

/// What the `…Changed` predicates compare of an object: its generation and hashes of its
/// labels and annotations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Digest {
    generation: Option<i64>,
    labels: u64,
    annotations: u64,
}

impl Digest {
    pub(crate) fn of(body: &serde_json::Value) -> Digest {
        let hash = |pointer: &str| {
            use std::hash::{Hash, Hasher};
            let mut hasher = std::collections::hash_map::DefaultHasher::new();
            body.pointer(pointer)
                .map(|v| v.to_string())
                .unwrap_or_default()
                .hash(&mut hasher);
            hasher.finish()
        };
        Digest {
            generation: body
                .pointer("/metadata/generation")
                .and_then(serde_json::Value::as_i64),
            labels: hash("/metadata/labels"),
            annotations: hash("/metadata/annotations"),
        }
    }
}

/// Whether a change from `old` (unknown for a new object) to `new` passes every predicate.
pub(crate) fn passes(
    predicates: &[Predicate],
    old: Option<&Digest>,
    new: &serde_json::Value,
) -> bool {
    let now = Digest::of(new);
    predicates.iter().all(|predicate| match predicate {
        Predicate::GenerationChanged => old.is_none_or(|o| o.generation != now.generation),
        Predicate::LabelsChanged => old.is_none_or(|o| o.labels != now.labels),
        Predicate::AnnotationsChanged => old.is_none_or(|o| o.annotations != now.annotations),
        Predicate::Custom(check) => {
            // The author's function: a panic in it lets the change through.
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check(new))).unwrap_or(true)
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn predicates_compare_what_they_name() {
        let before =
            json!({"metadata": {"generation": 1, "labels": {"a": "1"}}, "status": {"x": 1}});
        let status_only =
            json!({"metadata": {"generation": 1, "labels": {"a": "1"}}, "status": {"x": 2}});
        let relabelled = json!({"metadata": {"generation": 1, "labels": {"a": "2"}}});
        let respecced = json!({"metadata": {"generation": 2, "labels": {"a": "1"}}});
        let old = Digest::of(&before);
        let generation = [Predicate::GenerationChanged];
        let labels = [Predicate::LabelsChanged];
        assert!(!passes(&generation, Some(&old), &status_only));
        assert!(passes(&generation, Some(&old), &respecced));
        assert!(!passes(&labels, Some(&old), &respecced));
        assert!(passes(&labels, Some(&old), &relabelled));
        assert!(
            passes(&generation, None, &status_only),
            "a new object passes"
        );
        let custom = [Predicate::custom(|o| o["status"]["x"] == 2)];
        assert!(passes(&custom, Some(&old), &status_only));
        assert!(!passes(&custom, Some(&old), &before));
        let both = [Predicate::GenerationChanged, Predicate::LabelsChanged];
        assert!(
            !passes(&both, Some(&old), &relabelled),
            "every predicate must pass"
        );
        let panics = [Predicate::custom(|_| panic!("author's bug"))];
        assert!(passes(&panics, Some(&old), &before));
    }
}
