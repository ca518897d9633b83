//! The reconcile model, as kubebuilder's `Reconcile` and kube-rs's `Controller`: one
//! level-triggered function per object that reads the object (and its children) and makes the
//! world match, registered with [`Resource::reconcile`](crate::Resource::reconcile) beside or
//! instead of Kopf-style cause handlers.
//!
//! # When it runs
//! - for every object when the operator starts (once the watches of its children listed);
//! - on any change of the object (spec, metadata or status), or only on some changes with
//!   [`Reconcile::generation_changes`] or [`Reconcile::changes_when`];
//! - when a child it [owns](crate::Resource::owns) (a controller owner reference points at
//!   it) is added, changed or deleted;
//! - when an object of a [watched](crate::Resource::watches) kind changes and the mapper names
//!   it;
//! - after the delay of [`Action::requeue`], and after an error with a per-object backoff
//!   (0.5 s doubling up to [`Operator::max_error_backoff`](crate::Operator::max_error_backoff), reset by a
//!   success; a [`HandlerError::temporary`](crate::HandlerError::temporary) gives its own delay, a
//!   [`HandlerError::permanent`](crate::HandlerError::permanent) waits for the next change).
//!
//! Writes the reconcile makes through [`Context::patch`](crate::Context::patch) are sent after
//! it returns, and do not trigger it again; nor do children it applies with
//! [`Context::apply`](crate::Context::apply). Changes made by anyone else do.
//!
//! # Guarantees
//! - At most one reconcile runs per object at a time; triggers that arrive meanwhile coalesce
//!   into one more run, on the newest object.
//! - Reconciles and cause handlers of one object never run at the same time: a cycle runs the
//!   cause handlers that are due first (create, update, resume, field), one per cycle, and
//!   the reconcile once none is left. While a cause handler waits for a retry, the reconcile
//!   waits too. A deleting object gets no reconcile: its delete handlers (and
//!   [`cleanup`](crate::Resource::cleanup)) run, and the finalizer keeps it until they succeed.
//! - A reconcile never sees its children's cache older than the first full listing.
//!
//! ```no_run
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kopr::reconcile::Action;
//! use kopr::{Context, HandlerResult, Operator, Resource};
//! use kube::CustomResource;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! pub struct GreetingSpec {
//!     pub message: String,
//! }
//!
//! async fn reconcile(ctx: Context<Greeting>) -> HandlerResult<Action> {
//!     let child = ConfigMap {
//!         metadata: kube::api::ObjectMeta {
//!             name: Some(ctx.name().to_owned()),
//!             ..Default::default()
//!         },
//!         data: Some([("message".to_owned(), ctx.object.spec.message.clone())].into()),
//!         ..Default::default()
//!     };
//!     let applied = ctx.apply(&child).await?;
//!     ctx.patch().set("status.applied", applied.changed);
//!     Ok(Action::requeue(Duration::from_secs(300)))
//! }
//!
//! # async fn run() {
//! Operator::new().resource(
//!     Resource::<Greeting>::custom()
//!         .reconcile(reconcile)
//!         .owns::<ConfigMap>(),
//! );
//! # }
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::handling::context::Context;
use crate::handling::errors::HandlerError;
use crate::handling::filters::{Filtered, Filters};
use crate::handling::handlers::{Handler, HandlerSpec, Trigger};

/// What a reconcile asks for next: [`requeue`](Self::requeue) after a delay, or
/// [`await_change`](Self::await_change).
///
/// # Caveats
/// A requeue is kept in memory only: after a restart, every object is reconciled once
/// anyway, and requeues are asked again from there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct Action {
    /// Milliseconds until the next run, if one is asked for.
    requeue_after_ms: Option<u64>,
}

impl Action {
    /// Runs the reconcile again after `after` (sooner if something changes).
    ///
    /// ```
    /// let action = kopr::reconcile::Action::requeue(std::time::Duration::from_secs(30));
    /// assert_eq!(action.requeue_after(), Some(std::time::Duration::from_secs(30)));
    /// ```
    pub fn requeue(after: Duration) -> Action {
        Action {
            requeue_after_ms: Some(u64::try_from(after.as_millis()).unwrap_or(u64::MAX)),
        }
    }

    /// Runs the reconcile again only when something changes.
    ///
    /// ```
    /// assert_eq!(kopr::reconcile::Action::await_change().requeue_after(), None);
    /// ```
    pub fn await_change() -> Action {
        Action::default()
    }

    /// The delay of a requeue, or `None` to wait for a change.
    pub fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after_ms.map(Duration::from_millis)
    }
}

/// An object to reconcile, named by a [watches](crate::Resource::watches) mapper: its
/// namespace (`None` for cluster-scoped objects) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    /// The namespace, for namespaced objects.
    pub namespace: Option<String>,
    /// The name.
    pub name: String,
}

impl Key {
    /// A namespaced object.
    ///
    /// ```
    /// let key = kopr::reconcile::Key::namespaced("team-a", "web");
    /// assert_eq!(key.to_string(), "team-a/web");
    /// ```
    pub fn namespaced(namespace: impl Into<String>, name: impl Into<String>) -> Key {
        Key {
            namespace: Some(namespace.into()),
            name: name.into(),
        }
    }

    /// A cluster-scoped object.
    ///
    /// ```
    /// assert_eq!(kopr::reconcile::Key::cluster("node-1").to_string(), "node-1");
    /// ```
    pub fn cluster(name: impl Into<String>) -> Key {
        Key {
            namespace: None,
            name: name.into(),
        }
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.namespace {
            Some(namespace) => write!(f, "{namespace}/{}", self.name),
            None => f.write_str(&self.name),
        }
    }
}

/// Which changes of the object itself trigger the reconcile (children, watched objects,
/// requeues and errors trigger it whatever this says).
#[derive(Clone, Default)]
pub(crate) enum Changes {
    /// Any change: a new resourceVersion.
    #[default]
    Any,
    /// A new `metadata.generation` (the spec changed; status and metadata changes are not).
    Generation,
    /// The predicate says so, given the old and the new body.
    When(ChangePredicate),
}

/// Whether a change from the old body to the new one matters.
pub(crate) type ChangePredicate = Arc<dyn Fn(&Value, &Value) -> bool + Send + Sync>;

/// A reconcile function under construction: the function, its id, filters and which changes
/// of the object trigger it.
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kopr::reconcile::{Action, Reconcile};
/// use kopr::{Context, Filtered, HandlerResult, Resource};
///
/// async fn reconcile(ctx: Context<Deployment>) -> HandlerResult<Action> {
///     let ready = ctx.object.status.as_ref().and_then(|s| s.ready_replicas).unwrap_or(0);
///     ctx.patch().annotation("example.com/ready", Some(&ready.to_string()));
///     Ok(Action::requeue(Duration::from_secs(60)))
/// }
///
/// let deployments = Resource::<Deployment>::new().reconcile(
///     Reconcile::new(reconcile)
///         .id("ready-replicas")
///         .timeout(Duration::from_secs(30))
///         .label_matches("example.com/watched", "yes"),
/// );
/// ```
pub struct Reconcile<K> {
    handler: Handler<K>,
    changes: Changes,
}

impl<K: serde::de::DeserializeOwned + Send + Sync + 'static> Reconcile<K> {
    /// A reconcile running `func`, an async function taking a [`Context`] and returning an
    /// [`Action`]. Its id is derived from the function's path, as handlers' are.
    ///
    /// ```
    /// use kopr::reconcile::{Action, Reconcile};
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// let reconcile = Reconcile::new(|_ctx: kopr::Context<ConfigMap>| async {
    ///     Ok(Action::await_change())
    /// })
    /// .id("config")
    /// .generation_changes();
    /// let resource = kopr::Resource::<ConfigMap>::new().reconcile(reconcile);
    /// ```
    pub fn new<F, Fut>(func: F) -> Self
    where
        F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Action, HandlerError>> + Send + 'static,
    {
        Reconcile {
            handler: Handler::new(func),
            changes: Changes::Any,
        }
    }

    /// Overrides the id derived from the function's path (it names the reconcile in logs,
    /// events and metrics).
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.handler = self.handler.id(id);
        self
    }

    /// Bounds each run: one that takes longer is cancelled and counts as an error.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.handler = self.handler.timeout(timeout);
        self
    }

    /// Runs on changes of the object only when its `metadata.generation` changed (the spec,
    /// for resources with a status subresource), as controller-runtime's
    /// `GenerationChangedPredicate`: status and metadata changes do not trigger it.
    pub fn generation_changes(mut self) -> Self {
        self.changes = Changes::Generation;
        self
    }

    /// Runs on changes of the object only when `changed(old, new)` says so.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::reconcile::{Action, Reconcile};
    /// let reconcile = Reconcile::new(|_ctx: kopr::Context<ConfigMap>| async {
    ///     Ok(Action::await_change())
    /// })
    /// .changes_when(|old: &ConfigMap, new: &ConfigMap| old.data != new.data);
    /// ```
    pub fn changes_when(
        mut self,
        changed: impl Fn(&K, &K) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.changes = Changes::When(Arc::new(move |old: &Value, new: &Value| {
            match (K::deserialize(old), K::deserialize(new)) {
                (Ok(old), Ok(new)) => changed(&old, &new),
                // An object that does not parse is reported by the cycle; let it run.
                _ => true,
            }
        }));
        self
    }

    pub(crate) fn into_spec(self, position: usize) -> ReconcileSpec {
        ReconcileSpec {
            handler: self.handler.into_spec(Trigger::Reconcile, position),
            changes: self.changes,
        }
    }
}

impl<K> Filtered for Reconcile<K> {
    fn filters_mut(&mut self) -> &mut Filters {
        self.handler.filters_mut()
    }
}

/// Anything that can be registered as a reconcile: a [`Reconcile`] or a bare async function
/// returning a [`HandlerResult`](crate::HandlerResult) of an [`Action`] (see
/// [`Resource::reconcile`](crate::Resource::reconcile)).
pub trait IntoReconcile<K, Marker> {
    /// Converts into a reconcile.
    fn into_reconcile(self) -> Reconcile<K>;
}

/// Marker for [`IntoReconcile`] implemented by functions.
pub struct FunctionMarker;
/// Marker for [`IntoReconcile`] implemented by [`Reconcile`].
pub struct ReconcileMarker;

impl<K> IntoReconcile<K, ReconcileMarker> for Reconcile<K> {
    fn into_reconcile(self) -> Reconcile<K> {
        self
    }
}

impl<K, F, Fut> IntoReconcile<K, FunctionMarker> for F
where
    K: serde::de::DeserializeOwned + Send + Sync + 'static,
    F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Action, HandlerError>> + Send + 'static,
{
    fn into_reconcile(self) -> Reconcile<K> {
        Reconcile::new(self)
    }
}

/// An erased reconcile: the handler (whose JSON result is the [`Action`]) and its change
/// filter.
#[derive(Clone)]
pub(crate) struct ReconcileSpec {
    pub(crate) handler: HandlerSpec,
    pub(crate) changes: Changes,
}

impl ReconcileSpec {
    /// Whether a change of the object from `old` (read only when needed) to `new` triggers
    /// the reconcile.
    pub(crate) fn triggered_by(&self, old: impl FnOnce() -> Arc<Value>, new: &Value) -> bool {
        if matches!(self.changes, Changes::Any) {
            return true;
        }
        let old = old();
        let old = &*old;
        match &self.changes {
            Changes::Any => true,
            Changes::Generation => {
                let generation = |body: &Value| body.pointer("/metadata/generation").cloned();
                generation(old) != generation(new)
            }
            Changes::When(changed) => changed(old, new),
        }
    }
}

/// A kind related to a resource's objects: children it owns, or objects it watches.
#[derive(Clone)]
pub(crate) struct RelatedSpec {
    pub(crate) api_resource: kube::api::ApiResource,
    pub(crate) namespaced: bool,
    pub(crate) relation: Relation,
    /// How the kind is watched, and which of its changes trigger.
    pub(crate) options: crate::handling::selection::WatchOptions,
}

/// How a related object's change reaches the objects to reconcile.
#[derive(Clone)]
pub(crate) enum Relation {
    /// Through its controller owner reference.
    Owns,
    /// Through a mapper from the changed object to keys.
    Watches(MapFn),
}

/// Maps a related object (JSON) to the keys of the objects to reconcile.
pub(crate) type MapFn = Arc<dyn Fn(&Value) -> Vec<Key> + Send + Sync>;

impl RelatedSpec {
    /// The spec of kind `C`, whose scope comes from its type.
    pub(crate) fn of<C>(
        relation: Relation,
        options: crate::handling::selection::WatchOptions,
    ) -> RelatedSpec
    where
        C: kube::Resource<DynamicType = ()>,
        C::Scope: 'static,
    {
        use std::any::TypeId;
        RelatedSpec {
            api_resource: kube::api::ApiResource::erase::<C>(&()),
            namespaced: TypeId::of::<C::Scope>()
                == TypeId::of::<k8s_openapi::NamespaceResourceScope>(),
            relation,
            options,
        }
    }
}

/// Reads a reconcile's [`Action`] from its handler's JSON result (`null` waits for a change).
pub(crate) fn action_of(value: Value) -> Action {
    serde_json::from_value(value).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn actions_round_trip_through_json() {
        let requeue = Action::requeue(Duration::from_millis(1500));
        let value = serde_json::to_value(requeue).unwrap_or_default();
        assert_eq!(action_of(value), requeue);
        assert_eq!(action_of(Value::Null), Action::await_change());
    }

    #[test]
    fn generation_changes_ignore_status() {
        let spec = Reconcile::new(|_: Context<Value>| async { Ok(Action::await_change()) })
            .generation_changes()
            .into_spec(0);
        let old = json!({"metadata": {"generation": 1}, "status": {"a": 1}});
        let status = json!({"metadata": {"generation": 1}, "status": {"a": 2}});
        let spec_change = json!({"metadata": {"generation": 2}});
        let old = Arc::new(old);
        assert!(!spec.triggered_by(|| old.clone(), &status));
        assert!(spec.triggered_by(|| old.clone(), &spec_change));
    }
}
