//! The operator: resources with their handlers, operator-level startup and cleanup handlers,
//! shared state, settings, and the run loop.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, Patch, PatchParams};
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::handling::context::Memo;
use crate::handling::errors::{Error, HandlerError};
use crate::handling::handlers::Trigger;
use crate::handling::resource::{Resource, ResourceSpec};
use crate::reactor::{ResourceRuntime, Settings, Shared, watch_resource};
use crate::runtime::events::EventRecorder;

mod settings;

/// What startup and cleanup handlers receive.
///
/// ```no_run
/// use kopr::{HandlerResult, Lifecycle, Operator};
///
/// struct Greeter(String);
///
/// async fn announce(lifecycle: Lifecycle) -> HandlerResult {
///     let version = lifecycle.client.apiserver_version().await?;
///     let greeter = lifecycle.memo::<Greeter>().expect("given below");
///     tracing::info!("{} on Kubernetes {}.{}", greeter.0, version.major, version.minor);
///     Ok(())
/// }
///
/// let operator = Operator::new().memo(Greeter("hello".into())).on_startup(announce);
/// ```
#[derive(Clone)]
pub struct Lifecycle {
    /// The Kubernetes client.
    pub client: kube::Client,
    memo: Memo,
    crds: Arc<Vec<CustomResourceDefinition>>,
    field_manager: Arc<str>,
}

impl Lifecycle {
    /// Shared operator state of type `T`.
    pub fn memo<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.memo.get::<T>()
    }

    /// Installs the operator's CRDs and waits until they are established, as
    /// [`Operator::install_crds`] does: for an operator that registers its CRDs when it
    /// starts, from a startup handler.
    ///
    /// ```
    /// use kopr::{HandlerResult, Lifecycle, Operator};
    ///
    /// async fn register(lifecycle: Lifecycle) -> HandlerResult {
    ///     lifecycle.install_crds().await?;
    ///     Ok(())
    /// }
    ///
    /// let operator = Operator::new().on_startup(register);
    /// ```
    ///
    /// # Errors
    /// As [`Operator::install_crds`].
    pub async fn install_crds(&self) -> Result<(), Error> {
        install_crds(&self.client, &self.crds, &self.field_manager).await
    }
}

/// Applies `crds` (server-side, forcing `field_manager`'s ownership) and waits until each is
/// established.
async fn install_crds(
    client: &kube::Client,
    crds: &[CustomResourceDefinition],
    field_manager: &str,
) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    let params = PatchParams::apply(field_manager).force();
    for crd in crds {
        let name = crd.metadata.name.clone().unwrap_or_default();
        api.patch(&name, &params, &Patch::Apply(crd)).await?;
        let established = kube::runtime::conditions::is_crd_established();
        let wait = kube::runtime::wait::await_condition(api.clone(), &name, established);
        tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .map_err(|_| Error::Config(format!("CRD {name} was not established within 30 s")))?
            .map_err(|e| Error::Config(format!("waiting for CRD {name}: {e}")))?;
    }
    Ok(())
}

type LifecycleFn =
    Arc<dyn Fn(Lifecycle) -> BoxFuture<'static, Result<(), HandlerError>> + Send + Sync>;

/// An operator: register resources and handlers, then [`run_until`](Operator::run_until) or
/// [`main`](Operator::main).
///
/// ```no_run
/// use kopr::{Context, HandlerResult, Operator, Resource};
/// use kube::api::DynamicObject;
///
/// async fn created(ctx: Context<DynamicObject>) -> HandlerResult<String> {
///     Ok(format!("hello {}", ctx.name()))
/// }
///
/// # async fn run() -> std::process::ExitCode {
/// Operator::new()
///     .resource(Resource::dynamic("example.com", "v1", "greetings").on_create(created))
///     .main()
///     .await
/// # }
/// ```
///
/// # Guarantees
/// - **One handler at a time per object**, each handler's outcome (its patch, result, progress
///   record, and, when the cause is done, the diff base or the release of kopr's finalizer)
///   written before the next handler of that object starts.
/// - **No re-run while the operator lives.** When writing an outcome fails (connection reset,
///   5xx, 429 past the client's retries, the answer lost after the server applied it), the
///   outcome is kept and sent again (what is left of it, on the newest body; the finalizer's
///   guarded patch rebuilt on a fresh read) before the object is judged anew. So a handler that
///   succeeded is not run again for its cause, and an outcome half written (its `/status` part
///   but not the object's) is completed, never taken for a new cause. A handler runs again only
///   when its own result asks for it (an error to retry).
/// - **At least once across a crash.** A process killed mid-way loses what it had not written:
///   the attempts in flight (at most [`workers`](Operator::workers), 64 by default, one per
///   object) and outcomes not yet landed run again after the restart; a handler whose outcome
///   landed does not. Fewer workers shrink that window. Delete handlers are no exception: each
///   one's outcome and progress record land before kopr's finalizer is released, so one whose
///   success was written never runs again, even when the crash came before the release; one
///   cut off by the crash does, so they should tolerate a second run.
/// - **Nothing lost.** Events arriving while an object is handled are coalesced into its newest
///   body and handled after; API failures are retried with a per-object backoff (see
///   [`Operator::max_error_backoff`]) until the write lands or the object is gone.
pub struct Operator {
    pub(crate) resources: Vec<ResourceSpec>,
    startup: Vec<(String, LifecycleFn)>,
    cleanup: Vec<(String, LifecycleFn)>,
    memo: Memo,
    pub(crate) settings: Settings,
    pub(crate) webhooks: Option<crate::webhooks::Webhooks>,
    pub(crate) leader: Option<crate::leader::LeaderElection>,
    pub(crate) sharding: Option<crate::shards::Sharding>,
    health_listen: Option<std::net::SocketAddr>,
    checks: crate::runtime::endpoints::Checks,
    metrics_listen: Option<std::net::SocketAddr>,
    /// True once the webhook server serves and what it registers is registered.
    webhooks_ready: Arc<tokio::sync::watch::Sender<bool>>,
}

impl Default for Operator {
    fn default() -> Self {
        Operator::new()
    }
}

impl Operator {
    /// An operator with no resources and default settings (all namespaces, 64 workers,
    /// annotation storage).
    ///
    /// ```
    /// let operator = kopr::Operator::new();
    /// assert!(operator.crds().is_empty());
    /// ```
    pub fn new() -> Self {
        Operator {
            resources: Vec::new(),
            startup: Vec::new(),
            cleanup: Vec::new(),
            memo: Memo::default(),
            settings: Settings::default(),
            webhooks: None,
            leader: None,
            sharding: None,
            health_listen: None,
            checks: crate::runtime::endpoints::Checks::default(),
            metrics_listen: None,
            webhooks_ready: Arc::new(tokio::sync::watch::Sender::new(false)),
        }
    }

    /// Resolves once the operator's webhook server serves and its admission configurations
    /// and CRD conversions are registered, or at once for an operator without webhooks. What
    /// `dev` waits for before it applies manifests: a Book written at another version before
    /// then would meet a conversion webhook the API server cannot reach yet.
    ///
    /// ```no_run
    /// # async fn run(operator: kopr::Operator, client: kube::Client) {
    /// let ready = operator.webhooks_ready();
    /// tokio::spawn(operator.run_until(client, std::future::pending()));
    /// ready.await;
    /// # }
    /// ```
    pub fn webhooks_ready(&self) -> impl std::future::Future<Output = ()> + Send + 'static {
        let mut ready = self.webhooks_ready.subscribe();
        let needed = self.serves_webhooks() && self.webhooks.is_some();
        async move {
            if needed {
                let _ = ready.wait_for(|r| *r).await;
            }
        }
    }

    /// Serves `/healthz` and `/readyz` on `listen` (see [`crate::endpoints`]): the operator's
    /// liveness (Kopf's `--liveness`) and readiness probes. The command line's
    /// `--health-listen` sets it.
    ///
    /// ```
    /// let operator = kopr::Operator::new()
    ///     .health_listen("0.0.0.0:8081".parse().unwrap())
    ///     .metrics_listen("0.0.0.0:8080".parse().unwrap());
    /// ```
    pub fn health_listen(mut self, listen: std::net::SocketAddr) -> Self {
        self.health_listen = Some(listen);
        self
    }

    /// Adds a liveness check, served on `/healthz` beside kopr's own (the process is not
    /// wedged), as controller-runtime's `AddHealthzCheck`: while `check` returns an error the
    /// probe answers 500 with `[-]<name> failed: <error>`, and the kubelet restarts the pod.
    /// `check` runs on each probe, so it must be quick and must not block.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use std::sync::atomic::{AtomicBool, Ordering};
    /// let wedged = Arc::new(AtomicBool::new(false));
    /// let flag = wedged.clone();
    /// let operator = kopr::Operator::new().liveness_check("worker-loop", move || {
    ///     if flag.load(Ordering::Relaxed) { Err("the worker loop stopped") } else { Ok(()) }
    /// });
    /// ```
    pub fn liveness_check<E: std::fmt::Display>(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), E> + Send + Sync + 'static,
    ) -> Self {
        self.checks
            .liveness
            .push(crate::runtime::endpoints::Check::new(name, check));
        self
    }

    /// Adds a readiness check, served on `/readyz` beside kopr's own (every watched resource
    /// listed), as controller-runtime's `AddReadyzCheck` and Kopf's `on.probe`: while `check`
    /// returns an error the probe answers 503 with `[-]<name> failed: <error>`. `check` runs
    /// on each probe, so it must be quick and must not block.
    ///
    /// ```
    /// let operator = kopr::Operator::new().readiness_check("config", || {
    ///     std::env::var("CONSUMER_IMAGE").map(|_| ()).map_err(|_| "CONSUMER_IMAGE is not set")
    /// });
    /// ```
    pub fn readiness_check<E: std::fmt::Display>(
        mut self,
        name: impl Into<String>,
        check: impl Fn() -> Result<(), E> + Send + Sync + 'static,
    ) -> Self {
        self.checks
            .readiness
            .push(crate::runtime::endpoints::Check::new(name, check));
        self
    }

    /// Serves `/metrics` on `listen`, in the OpenMetrics text format (see
    /// [`crate::metrics`]). The command line's `--metrics-listen` sets it.
    pub fn metrics_listen(mut self, listen: std::net::SocketAddr) -> Self {
        self.metrics_listen = Some(listen);
        self
    }

    /// Handles objects only while this replica leads ([`LeaderElection`]): of several
    /// replicas, one handles objects and the others stand by, watching nothing. Admission
    /// handlers are served by every replica.
    ///
    /// ```
    /// use kopr::leader::LeaderElection;
    /// let operator = kopr::Operator::new()
    ///     .leader_election(LeaderElection::new("my-operator").namespace("operators"));
    /// ```
    ///
    /// # Caveats
    /// The command line's `run` and `dev` elect a leader by default (named after the
    /// program); set this only to change the Lease, or build the operator for
    /// [`run_until`](Self::run_until) yourself. When leadership is lost,
    /// [`run_until`](Self::run_until) returns [`Error::LeadershipLost`] and the process should
    /// exit.
    ///
    /// [`LeaderElection`]: crate::leader::LeaderElection
    pub fn leader_election(mut self, election: crate::leader::LeaderElection) -> Self {
        self.leader = Some(election);
        self
    }

    /// Splits objects over every running replica ([`Sharding`]): each replica handles the
    /// objects of the virtual shards it owns, and shards move between replicas as they join,
    /// leave or die, never handled by two at once. Excludes
    /// [`leader_election`](Self::leader_election). Admission handlers are served by every
    /// replica.
    ///
    /// ```no_run
    /// use kopr::leader::LeaderElection;
    /// use kopr::shards::Sharding;
    /// let operator = kopr::Operator::new()
    ///     .sharding(Sharding::new(LeaderElection::new("my-operator").namespace("operators")));
    /// ```
    ///
    /// [`Sharding`]: crate::shards::Sharding
    pub fn sharding(mut self, sharding: crate::shards::Sharding) -> Self {
        self.sharding = Some(sharding);
        self
    }

    /// Serves the resources' admission handlers (`on_validate`, `on_mutate`) with these
    /// settings, and registers them with the API server unless told not to. Without this,
    /// admission handlers are served only by `dev`, which sets [`Webhooks::local`].
    ///
    /// ```
    /// use kopr::webhooks::{FailurePolicy, Webhooks};
    /// let operator = kopr::Operator::new().webhooks(
    ///     Webhooks::listen("0.0.0.0:9443".parse().unwrap())
    ///         .service("operators", "my-operator-webhooks")
    ///         .failure_policy(FailurePolicy::Ignore),
    /// );
    /// ```
    ///
    /// [`Webhooks::local`]: crate::webhooks::Webhooks::local
    pub fn webhooks(mut self, webhooks: crate::webhooks::Webhooks) -> Self {
        self.webhooks = Some(webhooks);
        self
    }

    /// Whether any resource has admission handlers.
    pub fn has_admission_handlers(&self) -> bool {
        self.resources.iter().any(|r| !r.admission.is_empty())
    }

    /// Whether any custom resource is served at several versions
    /// ([`Resource::version`]), converted by the operator's webhook server.
    pub fn has_conversions(&self) -> bool {
        self.resources.iter().any(|r| r.conversions.is_some())
    }

    /// Whether the operator serves webhooks: admission handlers or conversions.
    pub fn serves_webhooks(&self) -> bool {
        self.has_admission_handlers() || self.has_conversions()
    }

    /// Serves a resource with its handlers. Resources are watched concurrently, each as soon
    /// as the API server serves it.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::{ConfigMap, Secret};
    /// use kopr::{Context, HandlerResult, Operator, Resource};
    ///
    /// async fn seen(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     tracing::info!("{}", ctx.name());
    ///     Ok(())
    /// }
    ///
    /// let operator = Operator::new()
    ///     .resource(Resource::<ConfigMap>::new().on_create(seen))
    ///     .resource(Resource::<Secret>::new().index("secrets", |s: &Secret| {
    ///         vec![(s.metadata.name.clone().unwrap_or_default(), ())]
    ///     }));
    /// ```
    ///
    /// # Caveats
    /// Configuration mistakes (two handlers of one cause, or two timers or daemons, of a
    /// resource with the same id; `owns` or `watches` without a `reconcile`; two indices with
    /// the same name) are reported when the operator starts, as [`Error::Config`].
    pub fn resource<K: DeserializeOwned + Send + Sync + 'static>(
        mut self,
        resource: Resource<K>,
    ) -> Self {
        self.resources.push(resource.into_spec());
        self
    }

    /// Runs `handler` before watching begins; watching starts only once every startup handler
    /// succeeded. Temporary errors are retried, permanent ones stop the operator.
    ///
    /// ```no_run
    /// use kopr::{Lifecycle, Operator, Resource};
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
    /// # pub struct GreetingSpec { pub message: String }
    ///
    /// fn operator() -> Operator {
    ///     let operator = Operator::new().resource(Resource::<Greeting>::custom());
    ///     let crds = operator.crds();
    ///     // Installs the CRDs before watching (declare `Manifests::installs_crds` for RBAC).
    ///     operator.on_startup(move |lifecycle: Lifecycle| {
    ///         let crds = crds.clone();
    ///         async move {
    ///             let api: kube::Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
    ///                 kube::Api::all(lifecycle.client.clone());
    ///             for crd in &crds {
    ///                 let name = crd.metadata.name.clone().unwrap_or_default();
    ///                 let params = kube::api::PatchParams::apply("my-operator").force();
    ///                 api.patch(&name, &params, &kube::api::Patch::Apply(crd)).await?;
    ///             }
    ///             Ok(())
    ///         }
    ///     })
    /// }
    /// ```
    pub fn on_startup<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Lifecycle) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let id = crate::handling::handlers::default_id::<F>(self.startup.len());
        self.startup
            .push((id, Arc::new(move |l| Box::pin(handler(l)))));
        self
    }

    /// Runs `handler` when the operator stops, after handlers finished and daemons exited.
    /// Failures are logged, not retried.
    ///
    /// ```
    /// use kopr::{HandlerResult, Lifecycle, Operator};
    ///
    /// async fn goodbye(_: Lifecycle) -> HandlerResult {
    ///     tracing::info!("flushing caches");
    ///     Ok(())
    /// }
    ///
    /// let operator = Operator::new().on_cleanup(goodbye);
    /// ```
    ///
    /// # Caveats
    /// Not run when the process is killed, nor when the replica lost its Lease (the operator
    /// then returns [`Error::LeadershipLost`] without running them).
    pub fn on_cleanup<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(Lifecycle) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), HandlerError>> + Send + 'static,
    {
        let id = crate::handling::handlers::default_id::<F>(self.cleanup.len());
        self.cleanup
            .push((id, Arc::new(move |l| Box::pin(handler(l)))));
        self
    }

    /// Shares `value` with every handler ([`Context::memo`](crate::Context::memo)), one value
    /// per type (a second value of the same type replaces the first). See [`Memo`] for an
    /// example.
    pub fn memo<T: Send + Sync + 'static>(mut self, value: T) -> Self {
        self.memo.insert(value);
        self
    }

    /// The CRDs of the typed custom resources registered with [`Resource::custom`] (the `crd`
    /// command prints them).
    ///
    /// ```
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
    /// # pub struct GreetingSpec { pub message: String }
    /// use kopr::{Operator, Resource};
    /// let operator = Operator::new().resource(Resource::<Greeting>::custom());
    /// let yaml = kopr::manifests::to_yaml(&operator.crds())?;
    /// assert!(yaml.contains("name: greetings.example.com"));
    /// # Ok::<(), kopr::Error>(())
    /// ```
    pub fn crds(&self) -> Vec<CustomResourceDefinition> {
        self.resources
            .iter()
            .filter_map(|r| {
                let mut crd = r.crd.clone()?;
                if let Some(conversions) = &r.conversions {
                    let client = self
                        .webhooks
                        .as_ref()
                        .and_then(|w| w.conversion_client(&conversions.crd));
                    crate::conversion::set_conversion(&mut crd, client);
                }
                Some(crd)
            })
            .collect()
    }

    /// Creates or updates the operator's CRDs on the server (server-side apply) and waits until
    /// each is established.
    ///
    /// ```no_run
    /// # async fn install(operator: kopr::Operator) -> Result<(), kopr::Error> {
    /// let client = kube::Client::try_default().await?;
    /// operator.install_crds(&client).await?;
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`Error::Kube`] when the server refuses a CRD (or the operator lacks `create` and
    /// `patch` on CustomResourceDefinitions), [`Error::Config`] when one is not established
    /// within 30 s.
    pub async fn install_crds(&self, client: &kube::Client) -> Result<(), Error> {
        install_crds(client, &self.crds(), self.settings.identity.field_manager()).await
    }

    fn check(&self) -> Result<(), Error> {
        self.settings
            .identity
            .check()
            .map_err(|e| Error::Config(e.to_string()))?;
        let mut indices: Vec<&str> = self
            .resources
            .iter()
            .flat_map(|r| r.indices.iter().map(|i| i.name()))
            .collect();
        indices.sort_unstable();
        if let Some(pair) = indices.windows(2).find(|w| w[0] == w[1]) {
            return Err(Error::Config(format!(
                "two indices share the name '{}'",
                pair[0]
            )));
        }
        // One watch per related kind: every relation to it must watch it alike.
        let mut watched: std::collections::HashMap<
            String,
            (&crate::handling::selection::Selectors, bool),
        > = std::collections::HashMap::new();
        for related in self.resources.iter().flat_map(|r| &r.related) {
            let key = crate::handling::children::kind_key(&related.api_resource);
            let options = (&related.options.selectors, related.options.metadata_only);
            if let Some(first) = watched.insert(key.clone(), options)
                && first != options
            {
                return Err(Error::Config(format!(
                    "{key} is owned or watched with different selectors or metadata_only; one watch serves every resource related to a kind, so give them the same WatchOptions (predicates may differ)"
                )));
            }
        }
        for resource in &self.resources {
            if !resource.related.is_empty() && resource.reconcile.is_none() {
                return Err(Error::Config(format!(
                    "{} owns or watches other kinds but has no reconcile; add .reconcile(...)",
                    resource.target
                )));
            }
            let mut seen: Vec<(String, std::mem::Discriminant<Trigger>)> = Vec::new();
            for handler in &resource.handlers {
                let entry = (handler.id.clone(), std::mem::discriminant(&handler.trigger));
                if seen.contains(&entry) {
                    return Err(Error::Config(format!(
                        "two handlers of {} share the id '{}'; give one of them another with .id()",
                        resource.target, handler.id
                    )));
                }
                seen.push(entry);
            }
            let mut others: Vec<&str> = resource
                .timers
                .iter()
                .map(|t| t.handler.id.as_str())
                .chain(resource.daemons.iter().map(|d| d.handler.id.as_str()))
                .collect();
            others.sort_unstable();
            if let Some(pair) = others.windows(2).find(|w| w[0] == w[1]) {
                return Err(Error::Config(format!(
                    "two timers or daemons of {} share the id '{}'",
                    resource.target, pair[0]
                )));
            }
        }
        Ok(())
    }

    /// Runs the operator until `shutdown` completes: runs startup handlers, watches every
    /// resource, and on shutdown stops watching, lets running handlers finish (within
    /// [`Operator::shutdown_timeout`]), cancels daemons and runs cleanup handlers.
    ///
    /// [`main`](Self::main) builds the client and the shutdown signal from the command line;
    /// `run_until` is for programs that do it themselves (or run several operators).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), kopr::Error> {
    /// let client = kopr::cli::client_from(None, None).await?;
    /// kopr::Operator::new()
    ///     // .resource(...)
    ///     .run_until(client, kopr::cli::shutdown_signal())
    ///     .await
    /// # }
    /// ```
    ///
    /// # Errors
    /// - [`Error::Config`]: an inconsistent configuration (duplicate handler ids or index
    ///   names, `owns`/`watches` without `reconcile`), found before anything starts;
    /// - [`Error::Startup`]: a startup handler failed permanently;
    /// - [`Error::Io`]: a health, metrics or webhook listener could not bind;
    /// - [`Error::Kube`] / [`Error::Config`]: the webhook server could not start or register;
    /// - [`Error::LeadershipLost`]: this replica lost its Lease (leader election or shard
    ///   membership) and stopped handling; the process should exit and start again.
    ///
    /// API failures while handling objects are not errors of `run_until`: they are retried
    /// per object.
    pub async fn run_until(
        mut self,
        client: kube::Client,
        shutdown: impl Future<Output = ()>,
    ) -> Result<(), Error> {
        self.check()?;
        let mut indices = crate::handling::index::Indices::default();
        for indexer in self.resources.iter().flat_map(|r| &r.indices) {
            indices.insert(indexer.as_ref());
        }
        self.memo.insert(indices);
        let mut children =
            crate::handling::children::Children::new(self.settings.identity.field_manager());
        for resource in &self.resources {
            for related in &resource.related {
                if matches!(related.relation, crate::reconcile::Relation::Owns) {
                    children.cache(&related.api_resource);
                }
            }
        }
        self.memo.insert(children);
        let token = CancellationToken::new();
        let lifecycle = Lifecycle {
            client: client.clone(),
            memo: self.memo.clone(),
            crds: Arc::new(self.crds()),
            field_manager: self.settings.identity.field_manager().into(),
        };
        let events = EventRecorder::start(client.clone(), self.settings.identity.component());
        let tasks = TaskTracker::new();
        let health = crate::endpoints::Health::new(self.resources.len(), self.checks.clone());
        health.beat_until(token.clone());
        if let Some(listen) = self.health_listen {
            let address =
                crate::endpoints::serve(listen, Some(health.clone()), false, token.clone()).await?;
            tracing::info!(%address, "serving /healthz and /readyz");
        }
        if let Some(listen) = self.metrics_listen {
            let address = crate::endpoints::serve(listen, None, true, token.clone()).await?;
            tracing::info!(%address, "serving /metrics");
        }
        let leader_gauge = &crate::metrics::global().leader;
        // Sharding and leader election both fence the reactor: objects are handled only
        // within the renew deadline of the last renewal (a leader owns the one shard of all).
        let filter = (self.sharding.is_some() || self.leader.is_some())
            .then(crate::runtime::shards::ShardFilter::new);
        let mut membership = crate::runtime::membership::Membership::new(
            &client,
            self.leader.as_ref(),
            self.sharding.as_ref(),
            filter.as_ref(),
        )?;
        let shared = Arc::new(Shared {
            shards: filter,
            health: health.clone(),
            client: client.clone(),
            events,
            memo: self.memo.clone(),
            workers: Arc::new(Semaphore::new(self.settings.workers)),
            settings: self.settings.clone(),
            shutdown: token.clone(),
            tasks: tasks.clone(),
            related: crate::reactor::related::Related::default(),
        });
        tokio::pin!(shutdown);
        let startup = run_startup(&self.startup, &lifecycle);
        tokio::select! {
            result = startup => if let Err(error) = result {
                token.cancel();
                return Err(error);
            },
            () = &mut shutdown => {
                token.cancel();
                return Ok(());
            }
        }
        // After startup, which may install the CRDs the handlers are registered for.
        if let Some(settings) = &self.webhooks
            && self.serves_webhooks()
        {
            let server =
                Arc::new(start_webhooks(&client, &self.resources, settings, token.clone()).await?);
            if settings.registers() {
                server.register(&client, settings).await?;
            }
        }
        self.webhooks_ready.send_replace(true);
        health.standing_by(membership.stands_by());
        tokio::select! {
            () = membership.join() => {}
            () = &mut shutdown => {
                token.cancel();
                self.run_cleanup(&lifecycle).await;
                // Stopped while joining: a member Lease already written (the join's first
                // round may still have been running) is let go now, not left to expire
                // with shards assigned to it.
                membership.leave();
                membership.release().await;
                return Ok(());
            }
        }
        health.standing_by(false);
        leader_gauge.inc();
        for spec in std::mem::take(&mut self.resources) {
            let shared = shared.clone();
            tasks.spawn(serve(shared, spec));
        }
        tracing::info!("operator started");
        let forever = CancellationToken::new();
        let lost = tokio::select! {
            held = membership.hold(&forever) => !held,
            () = &mut shutdown => false,
        };
        tracing::info!("operator stopping");
        leader_gauge.dec();
        membership.leave();
        token.cancel();
        tasks.close();
        let lost = if lost {
            // A replica that lost its Lease stops before another may take its objects over.
            let margin = membership.margin().unwrap_or_default();
            if tokio::time::timeout(margin, tasks.wait()).await.is_err() {
                tracing::warn!("handlers did not finish within {margin:?}; stopping anyway");
            }
            true
        } else {
            // Renewing meanwhile: no other replica takes over while handlers finish.
            let grace = self.settings.shutdown_timeout;
            let finished = tokio::time::timeout(grace, tasks.wait());
            tokio::select! {
                finished = finished => {
                    if finished.is_err() {
                        tracing::warn!("handlers did not finish within {grace:?}; stopping anyway");
                    }
                    false
                }
                held = membership.hold(&forever) => {
                    let margin = membership.margin().unwrap_or_default();
                    let _ = tokio::time::timeout(margin, tasks.wait()).await;
                    !held
                }
            }
        };
        if lost {
            let identity = membership.identity().unwrap_or_default();
            return Err(Error::LeadershipLost(identity));
        }
        self.run_cleanup(&lifecycle).await;
        membership.release().await;
        tracing::info!("operator stopped");
        Ok(())
    }

    async fn run_cleanup(&self, lifecycle: &Lifecycle) {
        for (id, handler) in &self.cleanup {
            if let Err(error) = handler(lifecycle.clone()).await {
                tracing::warn!(handler = %id, %error, "cleanup handler failed");
            }
        }
    }
}

/// Starts the webhook server for every resource's admission handlers.
async fn start_webhooks(
    client: &kube::Client,
    resources: &[ResourceSpec],
    settings: &crate::webhooks::Webhooks,
    shutdown: CancellationToken,
) -> Result<crate::webhooks::WebhookServer, Error> {
    let mut served = Vec::new();
    for resource in resources.iter().filter(|r| !r.admission.is_empty()) {
        let Some(resolved) = resolve_soon(client, &resource.target).await? else {
            tracing::warn!(resource = %resource.target, "not served by the API server; its admission handlers are not registered");
            continue;
        };
        for spec in &resource.admission {
            served.push(crate::webhooks::Served {
                spec: spec.clone(),
                resource: resolved.api_resource.clone(),
            });
        }
    }
    let conversions = resources
        .iter()
        .filter_map(|r| r.conversions.clone())
        .collect();
    crate::webhooks::WebhookServer::start(settings, served, conversions, shutdown).await
}

/// Resolves a resource, waiting up to 30 s for it to be served: discovery may lag a moment
/// behind the `Established` condition of a CRD that a startup handler just installed.
async fn resolve_soon(
    client: &kube::Client,
    target: &crate::runtime::discovery::Target,
) -> Result<Option<crate::runtime::discovery::Resolved>, Error> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    let mut delay = Duration::from_millis(50);
    loop {
        if let Some(resolved) = crate::runtime::discovery::resolve(client, target).await? {
            return Ok(Some(resolved));
        }
        if tokio::time::Instant::now() + delay > deadline {
            return Ok(None);
        }
        tokio::time::sleep(delay).await;
        delay = (delay * 2).min(Duration::from_secs(2));
    }
}

async fn run_startup(
    handlers: &[(String, LifecycleFn)],
    lifecycle: &Lifecycle,
) -> Result<(), Error> {
    for (id, handler) in handlers {
        loop {
            match handler(lifecycle.clone()).await {
                Ok(()) => break,
                Err(HandlerError::Permanent(message)) => {
                    return Err(Error::Startup {
                        id: id.clone(),
                        message,
                    });
                }
                Err(error) => {
                    let delay = match &error {
                        HandlerError::Temporary(_, delay) => *delay,
                        _ => Duration::from_secs(5),
                    };
                    tracing::warn!(handler = %id, %error, "startup handler failed; retrying in {delay:?}");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }
    Ok(())
}

/// Finds the resource through discovery (waiting for its CRD if needed), then watches it.
async fn serve(shared: Arc<Shared>, spec: ResourceSpec) {
    let mut delay = Duration::from_millis(500);
    let mut announced = false;
    let resolved = loop {
        match crate::runtime::discovery::resolve(&shared.client, &spec.target).await {
            Ok(Some(resolved)) => break resolved,
            Ok(None) if !announced => {
                tracing::warn!(resource = %spec.target, "not served yet; waiting for it (is its CRD installed?)");
                announced = true;
            }
            Ok(None) => {}
            Err(error) => {
                tracing::warn!(
                    resource = %spec.target,
                    error = %crate::handling::errors::chain(&error),
                    "cannot ask the API server which resources it serves; retrying"
                )
            }
        }
        tokio::select! {
            () = shared.shutdown.cancelled() => return,
            () = tokio::time::sleep(delay) => {}
        }
        delay = (delay * 2).min(Duration::from_secs(5));
    };
    tracing::info!(
        resource = %spec.target,
        kind = %resolved.api_resource.kind,
        namespaced = resolved.namespaced,
        "watching"
    );
    let runtime = ResourceRuntime::new(shared, spec, resolved);
    runtime.subscribe_related();
    watch_resource(runtime).await;
}
