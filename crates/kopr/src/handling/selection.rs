//! What of a resource the operator watches and how hard it works on it: server-side label
//! and field selectors on the resource's watch (only the objects selected are listed, sent
//! and kept), a limit on how many of its objects are handled at once, and reconciles
//! triggered from outside the cluster (a stream of keys, as kube-runtime's
//! `reconcile_all_on` and controller-runtime's `source.Channel`).

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
