//! The resources an operator serves and the handlers registered for each.
//!
//! A [`Resource`] is typed (any `kube::Resource`, including `#[derive(CustomResource)]` types and
//! k8s-openapi kinds) or dynamic (group/version/plural, or a kind or short name looked up through
//! discovery, served as `DynamicObject`). Either way it is erased into a [`ResourceSpec`].

use crate::runtime::discovery::Target;
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{ApiResource, DynamicObject};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::handling::admission::{AdmissionResult, AdmissionSpec, Review};
use crate::handling::handlers::{
    Daemon, DaemonSpec, HandlerSpec, IntoHandler, ParseFn, Timer, TimerSpec, Trigger,
};
use crate::handling::reconcile::{IntoReconcile, Key, ReconcileSpec, RelatedSpec, Relation};

/// A resource with its handlers, erased over the object type.
#[derive(Clone)]
pub struct ResourceSpec {
    pub(crate) target: Target,
    pub(crate) handlers: Vec<HandlerSpec>,
    pub(crate) timers: Vec<TimerSpec>,
    pub(crate) daemons: Vec<DaemonSpec>,
    pub(crate) crd: Option<CustomResourceDefinition>,
    pub(crate) parse: ParseFn,
    pub(crate) admission: Vec<AdmissionSpec>,
    pub(crate) indices: Vec<std::sync::Arc<dyn crate::handling::index::Indexer>>,
    pub(crate) reconcile: Option<ReconcileSpec>,
    pub(crate) related: Vec<RelatedSpec>,
}

impl std::fmt::Debug for ResourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceSpec")
            .field("target", &self.target)
            .field("handlers", &self.handlers)
            .finish_non_exhaustive()
    }
}

/// A resource and its handlers, built in the order they are to run.
pub struct Resource<K> {
    spec: ResourceSpec,
    _resource: PhantomData<fn() -> K>,
}

fn parser<K: DeserializeOwned + Send + Sync + 'static>() -> ParseFn {
    Arc::new(|body: &Value| {
        // Deserializing from a borrowed value copies only what the type keeps.
        serde_path_to_error::deserialize::<_, K>(body)
            .map(|object| Arc::new(object) as Arc<dyn Any + Send + Sync>)
            .map_err(|error| {
                let path = error.path().to_string();
                if path == "." {
                    error.into_inner().to_string()
                } else {
                    format!("{path}: {}", error.into_inner())
                }
            })
    })
}

impl<K> Resource<K>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
{
    /// A typed resource: a k8s-openapi kind or a `#[derive(CustomResource)]` type.
    pub fn new() -> Self {
        Resource::with_target(Target::Known(ApiResource::erase::<K>(&())))
    }

    /// A typed custom resource whose CRD the operator can print (`crd` command) and install.
    pub fn custom() -> Self
    where
        K: kube::CustomResourceExt,
    {
        let mut resource = Resource::new();
        resource.spec.crd = Some(K::crd());
        resource
    }
}

impl<K> Default for Resource<K>
where
    K: kube::Resource<DynamicType = ()> + DeserializeOwned + Send + Sync + 'static,
{
    fn default() -> Self {
        Resource::new()
    }
}

impl Resource<DynamicObject> {
    /// A dynamic resource named as Kopf names them: group, version and plural
    /// (group `""` for the core API).
    pub fn dynamic(group: &str, version: &str, plural: &str) -> Self {
        let api_version = if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        };
        Resource::with_target(Target::Known(ApiResource {
            group: group.to_owned(),
            version: version.to_owned(),
            api_version,
            kind: String::new(),
            plural: plural.to_owned(),
        }))
    }

    /// A dynamic resource found through discovery by kind, plural, singular or short name
    /// (optionally qualified with the group, as in `greetings.example.com`).
    pub fn lookup(name: &str) -> Self {
        Resource::with_target(Target::Lookup(name.to_owned()))
    }
}

impl<K: DeserializeOwned + Send + Sync + 'static> Resource<K> {
    fn with_target(target: Target) -> Self {
        Resource {
            spec: ResourceSpec {
                target,
                handlers: Vec::new(),
                timers: Vec::new(),
                daemons: Vec::new(),
                crd: None,
                parse: parser::<K>(),
                admission: Vec::new(),
                indices: Vec::new(),
                reconcile: None,
                related: Vec::new(),
            },
            _resource: PhantomData,
        }
    }

    fn position(&self) -> usize {
        self.spec.handlers.len() + self.spec.timers.len() + self.spec.daemons.len()
    }

    /// Reconciles every object with `reconcile`, level-triggered, as kubebuilder's
    /// `Reconcile` (see [`crate::reconcile`] for when it runs and what it guarantees). It
    /// returns an [`Action`](crate::reconcile::Action): requeue after a delay, or await a
    /// change. One reconcile per resource; it may share the resource with cause handlers.
    ///
    /// ```
    /// use kopr::reconcile::Action;
    /// use k8s_openapi::api::{apps::v1::Deployment, core::v1::ConfigMap};
    /// let resource = kopr::Resource::<ConfigMap>::new()
    ///     .reconcile(|_ctx: kopr::Context<ConfigMap>| async { Ok(Action::await_change()) })
    ///     .owns::<Deployment>();
    /// ```
    pub fn reconcile<M>(mut self, reconcile: impl IntoReconcile<K, M>) -> Self
    where
        K: DeserializeOwned,
    {
        let position = self.position();
        self.spec.reconcile = Some(reconcile.into_reconcile().into_spec(position));
        self
    }

    /// Reconciles an object when one of its children of kind `C` (an object whose controller
    /// owner reference points at it) is added, changed or deleted, and keeps those children in
    /// a cache that [`Context::owned`](crate::Context::owned) reads. One watch of `C` serves
    /// every resource that owns or watches it. Needs [`reconcile`](Self::reconcile).
    pub fn owns<C>(mut self) -> Self
    where
        C: kube::Resource<DynamicType = ()>,
        C::Scope: 'static,
    {
        self.spec.related.push(RelatedSpec::of::<C>(Relation::Owns));
        self
    }

    /// Reconciles the objects that `mapper` names whenever an object of kind `C` is added,
    /// changed or deleted (say, the objects referring to a changed Secret). On a change, the
    /// objects it named before are reconciled too (as controller-runtime maps the old and the
    /// new object), and so are they when it goes missing in a relist. Objects of `C` are not
    /// cached, only their versions and what they were mapped to. Needs
    /// [`reconcile`](Self::reconcile).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// use kopr::reconcile::{Action, Key};
    /// let resource = kopr::Resource::<ConfigMap>::new()
    ///     .reconcile(|_ctx: kopr::Context<ConfigMap>| async { Ok(Action::await_change()) })
    ///     .watches(|secret: &Secret| {
    ///         // The ConfigMap of the same name uses the Secret.
    ///         let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    ///         let name = secret.metadata.name.clone().unwrap_or_default();
    ///         vec![Key::namespaced(namespace, name)]
    ///     });
    /// ```
    pub fn watches<C>(mut self, mapper: impl Fn(&C) -> Vec<Key> + Send + Sync + 'static) -> Self
    where
        C: kube::Resource<DynamicType = ()> + DeserializeOwned,
        C::Scope: 'static,
    {
        let mapper = std::sync::Arc::new(move |body: &Value| match C::deserialize(body) {
            Ok(object) => mapper(&object),
            Err(error) => {
                tracing::debug!(%error, "a watched object does not parse; not mapped");
                Vec::new()
            }
        });
        self.spec
            .related
            .push(RelatedSpec::of::<C>(Relation::Watches(mapper)));
        self
    }

    /// The reconcile model's cleanup: runs `handler` when an object is being deleted, and a
    /// finalizer keeps the object until it succeeds (retried with the handler's backoff, its
    /// progress kept on the object). It is a delete handler ([`on_delete`](Self::on_delete))
    /// by another name.
    pub fn cleanup<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.on_delete(handler)
    }

    fn register<M>(mut self, trigger: Trigger, handler: impl IntoHandler<K, M>) -> Self {
        let position = self.position();
        let spec = handler.into_handler().into_spec(trigger, position);
        self.spec.handlers.push(spec);
        self
    }

    /// Runs `handler` when an object is created.
    pub fn on_create<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Create, handler)
    }

    /// Runs `handler` when an object's essence (spec, labels, annotations...) changes.
    pub fn on_update<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Update, handler)
    }

    /// Runs `handler` when an object is deleted. A finalizer keeps the object until it succeeds,
    /// unless the handler is marked [`optional`](crate::Handler::optional).
    pub fn on_delete<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Delete { optional: false }, handler)
    }

    /// Runs `handler` for every existing object when the operator starts.
    pub fn on_resume<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Resume { deleted: false }, handler)
    }

    /// Runs `handler` when the field at the dotted `path` changes (including on creation); the
    /// context's old, new and diff are relative to that field.
    pub fn on_field<M>(self, path: &str, handler: impl IntoHandler<K, M>) -> Self {
        self.register(
            Trigger::Field(crate::handling::diff::parse_path(path)),
            handler,
        )
    }

    /// Keeps the index `name` of this resource's objects (as Kopf's `@kopf.index`): `pairs`
    /// maps each object to zero or more `(key, value)` pairs, and handlers of any resource
    /// read them with [`Context::index`](crate::Context::index). See [`crate::index`].
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// let pods = kopr::Resource::<Pod>::new().index("pods-by-node", |pod: &Pod| {
    ///     let node = pod.spec.as_ref().and_then(|s| s.node_name.clone());
    ///     node.map(|node| (node, pod.metadata.name.clone().unwrap_or_default()))
    ///         .into_iter()
    ///         .collect()
    /// });
    /// ```
    pub fn index<V: Clone + Send + Sync + 'static>(
        mut self,
        name: &str,
        pairs: impl Fn(&K) -> Vec<(String, V)> + Send + Sync + 'static,
    ) -> Self {
        let indexer = crate::handling::index::Typed::<K, V>::new(name, pairs);
        self.spec.indices.push(std::sync::Arc::new(indexer));
        self
    }

    /// Runs `handler` on every raw watch event, without persistence; errors are logged and
    /// ignored.
    ///
    /// # Guarantees
    /// The events of one object reach its event handlers in the order the watch delivered
    /// them, one event at a time (each event's handlers in the order they were registered);
    /// different objects' events are handled concurrently. They run beside the object's cause
    /// handlers, not between them. With sharding, only the replica owning the object's shard
    /// runs them, and a shard is handed over only once its queued events are done.
    pub fn on_event<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Event, handler)
    }

    /// Checks every write of an object before the API server stores it: `handler` admits it
    /// (`Ok(())`) or refuses it with a [`Denial`](crate::Denial). Served by the operator's
    /// webhook server ([`Operator::webhooks`](crate::Operator::webhooks)); `dev` registers it
    /// with the embedded server by itself.
    pub fn on_validate<F, Fut>(mut self, id: &str, handler: F) -> Self
    where
        F: Fn(Review<K>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = AdmissionResult> + Send + 'static,
    {
        self.spec
            .admission
            .push(AdmissionSpec::new(id, false, handler));
        self
    }

    /// Changes every written object before the API server validates and stores it: what
    /// `handler` sets through [`Review::patch`] is sent back as a JSON patch. It may also
    /// refuse the write.
    pub fn on_mutate<F, Fut>(mut self, id: &str, handler: F) -> Self
    where
        F: Fn(Review<K>) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = AdmissionResult> + Send + 'static,
    {
        self.spec
            .admission
            .push(AdmissionSpec::new(id, true, handler));
        self
    }

    /// Adds an admission handler with options ([`Admission`](crate::admission::Admission):
    /// operations, subresource, filters).
    pub fn admission(mut self, admission: crate::admission::Admission<K>) -> Self {
        self.spec.admission.push(admission.into_spec());
        self
    }

    /// Adds a timer.
    pub fn timer(mut self, timer: Timer<K>) -> Self {
        let position = self.position();
        let Timer {
            handler,
            interval,
            idle,
            initial_delay,
            sharp,
        } = timer;
        self.spec.timers.push(TimerSpec {
            handler: handler.into_spec(Trigger::Event, position),
            interval,
            idle,
            initial_delay,
            sharp,
        });
        self
    }

    /// Adds a daemon.
    pub fn daemon(mut self, daemon: Daemon<K>) -> Self {
        let position = self.position();
        let Daemon {
            handler,
            initial_delay,
            cancellation_timeout,
        } = daemon;
        self.spec.daemons.push(DaemonSpec {
            handler: handler.into_spec(Trigger::Event, position),
            initial_delay,
            cancellation_timeout,
        });
        self
    }

    /// The erased specification.
    pub fn into_spec(self) -> ResourceSpec {
        self.spec
    }
}
