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
use crate::handling::conversion::Conversions;
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
    pub(crate) conversions: Option<Conversions>,
    pub(crate) parse: ParseFn,
    pub(crate) admission: Vec<AdmissionSpec>,
    pub(crate) indices: Vec<std::sync::Arc<dyn crate::handling::index::Indexer>>,
    pub(crate) reconcile: Option<ReconcileSpec>,
    pub(crate) related: Vec<RelatedSpec>,
    pub(crate) selectors: crate::handling::selection::Selectors,
    pub(crate) workers: Option<usize>,
    pub(crate) rate_limit: Option<u32>,
    pub(crate) metadata_only: bool,
    pub(crate) triggers: crate::handling::selection::Triggers,
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
///
/// `K` is the type handlers receive: a k8s-openapi kind, a `#[derive(CustomResource)]` type,
/// or [`DynamicObject`] for a kind known only by name. Register the resource on an
/// [`Operator`](crate::Operator) with [`Operator::resource`](crate::Operator::resource).
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, HandlerResult, Operator, Resource, Timer};
///
/// async fn created(ctx: Context<ConfigMap>) -> HandlerResult {
///     ctx.info("Seen", "a new ConfigMap");
///     Ok(())
/// }
///
/// async fn data_changed(ctx: Context<ConfigMap>) -> HandlerResult {
///     for item in ctx.diff().iter() {
///         tracing::info!("{item}");
///     }
///     Ok(())
/// }
///
/// async fn deleted(_: Context<ConfigMap>) -> HandlerResult {
///     Ok(())
/// }
///
/// async fn audit(_: Context<ConfigMap>) -> HandlerResult {
///     Ok(())
/// }
///
/// let operator = Operator::new().resource(
///     Resource::<ConfigMap>::new()
///         .on_create(created)
///         .on_field("data", data_changed)
///         .on_delete(deleted)
///         .timer(Timer::every(Duration::from_secs(3600), audit)),
/// );
/// ```
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
    ///
    /// ```
    /// let deployments = kopr::Resource::<k8s_openapi::api::apps::v1::Deployment>::new();
    /// ```
    pub fn new() -> Self {
        Resource::with_target(Target::Known(ApiResource::erase::<K>(&())))
    }

    /// A typed custom resource whose CRD the operator can print (`crd` command) and install
    /// ([`Operator::install_crds`](crate::Operator::install_crds), `dev`).
    ///
    /// ```
    /// use kube::CustomResource;
    /// use schemars::JsonSchema;
    /// use serde::{Deserialize, Serialize};
    ///
    /// #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    /// #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
    /// pub struct GreetingSpec {
    ///     pub message: String,
    /// }
    ///
    /// let operator = kopr::Operator::new().resource(kopr::Resource::<Greeting>::custom());
    /// assert_eq!(operator.crds()[0].metadata.name.as_deref(), Some("greetings.example.com"));
    /// ```
    pub fn custom() -> Self
    where
        K: kube::CustomResourceExt,
    {
        let mut resource = Resource::new();
        resource.spec.crd = Some(K::crd());
        resource
    }

    /// Serves the custom resource at another version `S` too. `K`, the type handlers
    /// receive, is the hub: the storage version, which every other version converts to and
    /// from with `TryFrom` (controller-runtime's Hub/Convertible; `From` will do). The CRD
    /// printed and installed lists every version, `K`'s marked `storage`, with
    /// `spec.conversion` naming the operator's webhook server, which converts the objects
    /// the API server sends ([`Webhooks`](crate::webhooks::Webhooks); `dev` and
    /// [`TestCluster`](crate::testing::TestCluster) serve it locally and register its CA).
    ///
    /// Fields `S` cannot express survive a trip through it: see
    /// [`conversion`](crate::conversion). A conversion error is answered to the API server
    /// as a failure with its message (clients see a 500 that names it), logged and counted
    /// in `kopr_conversion_failures_total`.
    ///
    /// ```
    /// mod v1 {
    ///     use kube::CustomResource;
    ///     use schemars::JsonSchema;
    ///     use serde::{Deserialize, Serialize};
    ///
    ///     #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    ///     #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
    ///     pub struct GreetingSpec {
    ///         pub message: String,
    ///     }
    /// }
    /// mod v2 {
    ///     use kube::CustomResource;
    ///     use schemars::JsonSchema;
    ///     use serde::{Deserialize, Serialize};
    ///
    ///     #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    ///     #[kube(group = "example.com", version = "v2", kind = "Greeting", namespaced)]
    ///     pub struct GreetingSpec {
    ///         pub messages: Vec<String>,
    ///     }
    /// }
    /// impl From<v1::Greeting> for v2::Greeting {
    ///     fn from(old: v1::Greeting) -> Self {
    ///         let spec = v2::GreetingSpec { messages: vec![old.spec.message] };
    ///         v2::Greeting { metadata: old.metadata, spec }
    ///     }
    /// }
    /// impl TryFrom<v2::Greeting> for v1::Greeting {
    ///     type Error = String;
    ///     fn try_from(new: v2::Greeting) -> Result<Self, String> {
    ///         let message = new.spec.messages.first().cloned().ok_or("no message")?;
    ///         Ok(v1::Greeting { metadata: new.metadata, spec: v1::GreetingSpec { message } })
    ///     }
    /// }
    ///
    /// let greetings = kopr::Resource::<v2::Greeting>::custom().version::<v1::Greeting>();
    /// let operator = kopr::Operator::new().resource(greetings);
    /// let crd = &operator.crds()[0];
    /// let versions: Vec<(&str, bool)> =
    ///     crd.spec.versions.iter().map(|v| (v.name.as_str(), v.storage)).collect();
    /// assert_eq!(versions, [("v2", true), ("v1", false)]);
    /// ```
    pub fn version<S>(mut self) -> Self
    where
        K: kube::CustomResourceExt + TryFrom<S> + serde::Serialize,
        S: kube::CustomResourceExt + TryFrom<K> + serde::Serialize + DeserializeOwned + 'static,
        <K as TryFrom<S>>::Error: std::fmt::Display,
        <S as TryFrom<K>>::Error: std::fmt::Display,
    {
        let spoke = S::crd();
        let Some(version) = spoke.spec.versions.into_iter().next() else {
            return self;
        };
        let crd = self.spec.crd.get_or_insert_with(K::crd);
        crd.spec.versions.retain(|v| v.name != version.name);
        crd.spec.versions.push(k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinitionVersion {
            storage: false,
            ..version.clone()
        });
        self.spec
            .conversions
            .get_or_insert_with(Conversions::of::<K>)
            .add::<K, S>(&version.name);
        self
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
    /// (group `""` for the core API). Handlers get a [`DynamicObject`].
    ///
    /// ```
    /// use kopr::{Context, HandlerResult, Resource};
    /// use kube::api::DynamicObject;
    ///
    /// async fn created(ctx: Context<DynamicObject>) -> HandlerResult {
    ///     let message = ctx.spec()["message"].as_str().unwrap_or_default();
    ///     tracing::info!("{} says {message}", ctx.name());
    ///     Ok(())
    /// }
    ///
    /// let greetings = Resource::dynamic("example.com", "v1", "greetings").on_create(created);
    /// let services = Resource::dynamic("", "v1", "services");
    /// ```
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
    ///
    /// ```
    /// let greetings = kopr::Resource::lookup("greetings.example.com");
    /// let deployments = kopr::Resource::lookup("deploy");
    /// ```
    ///
    /// # Caveats
    /// The name is resolved when the operator starts; until the API server serves a matching
    /// resource (say, its CRD is not installed yet), the operator logs a warning and keeps
    /// asking. [`Manifests`](crate::manifests::Manifests) derives its RBAC without a server:
    /// a group-qualified name is taken as `plural.group`, and a bare kind or short name
    /// (`deploy`) is granted by that lowercased name in every group, which matches no real
    /// plural. Prefer [`dynamic`](Self::dynamic) or a typed resource for deployed operators.
    pub fn lookup(name: &str) -> Self {
        Resource::with_target(Target::Lookup(name.to_owned()))
    }
}

impl<K: DeserializeOwned + Send + Sync + 'static> Resource<K> {
    pub(crate) fn spec_mut(&mut self) -> &mut ResourceSpec {
        &mut self.spec
    }

    fn with_target(target: Target) -> Self {
        Resource {
            spec: ResourceSpec {
                target,
                handlers: Vec::new(),
                timers: Vec::new(),
                daemons: Vec::new(),
                crd: None,
                conversions: None,
                parse: parser::<K>(),
                admission: Vec::new(),
                indices: Vec::new(),
                reconcile: None,
                related: Vec::new(),
                selectors: Default::default(),
                workers: None,
                rate_limit: None,
                metadata_only: false,
                triggers: Default::default(),
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
    ///
    /// ```
    /// use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
    /// use k8s_openapi::api::core::v1::Service;
    /// use kopr::reconcile::Action;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn reconcile(ctx: Context<Deployment>) -> HandlerResult<Action> {
    ///     let replica_sets = ctx.owned::<ReplicaSet>()?;
    ///     tracing::info!("{} owns {} ReplicaSets", ctx.name(), replica_sets.len());
    ///     Ok(Action::await_change())
    /// }
    ///
    /// let deployments = Resource::<Deployment>::new()
    ///     .reconcile(reconcile)
    ///     .owns::<ReplicaSet>()
    ///     .owns::<Service>();
    /// ```
    ///
    /// # Caveats
    /// Only children with a *controller* owner reference count (as [`Context::apply`](crate::Context::apply)
    /// and [`adopt`](fn@crate::adopt) set it). The manifests grant the operator `create`, `get`,
    /// `list`, `watch`, `patch` and `delete` on owned kinds.
    pub fn owns<C>(self) -> Self
    where
        C: kube::Resource<DynamicType = ()>,
        C::Scope: 'static,
    {
        self.owns_with::<C>(crate::handling::selection::WatchOptions::new())
    }

    /// [`owns`](Self::owns), watching the children as `options` say: server-side selectors,
    /// metadata only, predicates on which changes trigger (see
    /// [`WatchOptions`](crate::selection::WatchOptions)).
    ///
    /// ```
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kopr::selection::{Predicate, WatchOptions};
    /// let deployments = kopr::Resource::<Deployment>::new()
    ///     .reconcile(|_ctx: kopr::Context<Deployment>| async { Ok(kopr::reconcile::Action::await_change()) })
    ///     .owns_with::<k8s_openapi::api::apps::v1::ReplicaSet>(
    ///         WatchOptions::new().predicate(Predicate::GenerationChanged),
    ///     );
    /// ```
    pub fn owns_with<C>(mut self, options: crate::handling::selection::WatchOptions) -> Self
    where
        C: kube::Resource<DynamicType = ()>,
        C::Scope: 'static,
    {
        self.spec
            .related
            .push(RelatedSpec::of::<C>(Relation::Owns, options));
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
    pub fn watches<C>(self, mapper: impl Fn(&C) -> Vec<Key> + Send + Sync + 'static) -> Self
    where
        C: kube::Resource<DynamicType = ()> + DeserializeOwned,
        C::Scope: 'static,
    {
        self.watches_with(crate::handling::selection::WatchOptions::new(), mapper)
    }

    /// [`watches`](Self::watches), watching the objects as `options` say (see
    /// [`WatchOptions`](crate::selection::WatchOptions)).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// use kopr::reconcile::{Action, Key};
    /// use kopr::selection::WatchOptions;
    /// let resource = kopr::Resource::<ConfigMap>::new()
    ///     .reconcile(|_ctx: kopr::Context<ConfigMap>| async { Ok(Action::await_change()) })
    ///     .watches_with(WatchOptions::new().labels("app=web").metadata_only(), |secret: &Secret| {
    ///         let namespace = secret.metadata.namespace.clone().unwrap_or_default();
    ///         vec![Key::namespaced(namespace, "web")]
    ///     });
    /// ```
    pub fn watches_with<C>(
        mut self,
        options: crate::handling::selection::WatchOptions,
        mapper: impl Fn(&C) -> Vec<Key> + Send + Sync + 'static,
    ) -> Self
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
            .push(RelatedSpec::of::<C>(Relation::Watches(mapper), options));
        self
    }

    fn register<M>(mut self, trigger: Trigger, handler: impl IntoHandler<K, M>) -> Self {
        let position = self.position();
        let spec = handler.into_handler().into_spec(trigger, position);
        self.spec.handlers.push(spec);
        self
    }

    /// Runs `handler` when an object is created: when kopr sees it without a diff base (the
    /// essence of its last handled state), which is also the case for objects that existed
    /// before the operator first ran.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn created(ctx: Context<ConfigMap>) -> HandlerResult<String> {
    ///     // Stored under status.<handler id>.
    ///     Ok(format!("created in {}", ctx.namespace().unwrap_or("?")))
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_create(created);
    /// ```
    ///
    /// # Guarantees
    /// Once the handler succeeded (or failed for good), it does not run again for this object
    /// while the operator lives; a crash before its outcome was written runs it again (see
    /// [`Operator`](crate::Operator#guarantees)).
    pub fn on_create<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Create, handler)
    }

    /// Runs `handler` when an object's essence (spec, labels, annotations...) changes. The
    /// context's [`old`](crate::Context::old), [`new`](crate::Context::new) and
    /// [`diff`](crate::Context::diff) are the essences before and after.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn updated(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     for change in ctx.diff().iter() {
    ///         tracing::info!("{change}"); // e.g. `change data.level: "info" -> "debug"`
    ///     }
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_update(updated);
    /// ```
    ///
    /// # Caveats
    /// Status changes are not updates, nor are kopr's own annotations or kubectl's
    /// `last-applied-configuration`. Changes made while a cause is being handled are coalesced:
    /// the handler sees the difference from the last handled state to the newest one.
    pub fn on_update<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Update, handler)
    }

    /// Runs `handler` when an object is deleted. A finalizer keeps the object until it succeeds,
    /// unless the handler is marked [`optional`](crate::Handler::optional).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn deleted(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     tracing::info!("{} deleted", ctx.name());
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_delete(deleted);
    /// ```
    ///
    /// # Guarantees
    /// the operator's finalizer (`<name>.kopr.dev/finalizer`) is added to every object this handler's
    /// filters match, and released only once every delete handler finished (succeeded, or
    /// failed for good); timers and daemons are stopped before delete handlers run. Each delete
    /// handler's outcome and progress record are written before the release, so one that
    /// succeeded does not run again, across a crash of the operator too.
    ///
    /// # Caveats
    /// - A delete handler that keeps failing with retryable errors keeps the object: bound it
    ///   with [`retries`](crate::Handler::retries) or [`timeout`](crate::Handler::timeout).
    /// - Across a crash it may run twice if the crash cut it off (mid-way, or after it returned
    ///   but before its outcome was written); it should tolerate that.
    /// - Objects created before the handler was registered get the finalizer when kopr next
    ///   handles them; one deleted before that goes without the handler.
    pub fn on_delete<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Delete { optional: false }, handler)
    }

    /// Runs `handler` for every existing object when the operator starts (and, with sharding,
    /// when this replica takes over an object's shard). New objects are created, never
    /// resumed; objects being deleted are resumed only by handlers marked
    /// [`deleted`](crate::Handler::deleted).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn resumed(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     tracing::info!("picking up {} again", ctx.name());
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_resume(resumed);
    /// ```
    pub fn on_resume<M>(self, handler: impl IntoHandler<K, M>) -> Self {
        self.register(Trigger::Resume { deleted: false }, handler)
    }

    /// Runs `handler` when the field at the dotted `path` changes (including on creation); the
    /// context's old, new and diff are relative to that field.
    ///
    /// ```
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn image_changed(ctx: Context<Deployment>) -> HandlerResult {
    ///     // `old` is None on creation.
    ///     tracing::info!("containers: {:?} -> {:?}", ctx.old_value(), ctx.new_value());
    ///     Ok(())
    /// }
    ///
    /// let deployments =
    ///     Resource::<Deployment>::new().on_field("spec.template.spec.containers", image_changed);
    /// ```
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
    /// ```
    /// use k8s_openapi::api::core::v1::Pod;
    /// use kopr::{Context, HandlerResult, Resource};
    ///
    /// async fn seen(ctx: Context<Pod>) -> HandlerResult {
    ///     let phase = ctx.object.status.as_ref().and_then(|s| s.phase.clone());
    ///     tracing::info!("{:?} {}: {phase:?}", ctx.event_type(), ctx.name());
    ///     Ok(())
    /// }
    ///
    /// let pods = Resource::<Pod>::new().on_event(seen);
    /// ```
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
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{AdmissionResult, Denial, Resource, Review};
    ///
    /// async fn small(review: Review<ConfigMap>) -> AdmissionResult {
    ///     let keys = review.object.as_ref().and_then(|c| c.data.as_ref()).map_or(0, |d| d.len());
    ///     if keys > 100 {
    ///         return Err(Denial::new("at most 100 keys").code(422));
    ///     }
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_validate("small", small);
    /// ```
    ///
    /// # Caveats
    /// Admission handlers run on every replica (standbys and all shards too), and for dry
    /// runs ([`Review::dry_run`]): they should have no side effects. A handler that panics or
    /// overruns the timeout answers by the [failure policy](crate::webhooks::FailurePolicy).
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
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{AdmissionResult, Resource, Review};
    ///
    /// async fn stamp(review: Review<ConfigMap>) -> AdmissionResult {
    ///     review.patch().annotation("example.com/written-by", Some(review.username.as_str()));
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_mutate("stamp", stamp);
    /// ```
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
    /// operations, subresource, filters); see [`Admission`](crate::admission::Admission) for an
    /// example.
    pub fn admission(mut self, admission: crate::admission::Admission<K>) -> Self {
        self.spec.admission.push(admission.into_spec());
        self
    }

    /// Adds a timer (see [`Timer`] for when it runs).
    ///
    /// ```
    /// use std::time::Duration;
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, HandlerResult, Resource, Timer};
    ///
    /// async fn tick(ctx: Context<ConfigMap>) -> HandlerResult<u32> {
    ///     Ok(ctx.retry())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().timer(Timer::every(Duration::from_secs(30), tick));
    /// ```
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

    /// Adds a daemon (see [`Daemon`] for its lifecycle).
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, Daemon, HandlerResult, Resource};
    ///
    /// async fn watch_over(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     ctx.cancelled().await;
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().daemon(Daemon::new(watch_over));
    /// ```
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

    /// The erased specification ([`Operator::resource`](crate::Operator::resource) calls it;
    /// operators rarely need it).
    pub fn into_spec(self) -> ResourceSpec {
        self.spec
    }
}
