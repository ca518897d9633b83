//! # The kopr guide: from a first handler to production
//!
//! This page walks through an operator's life in the order you meet it: a first handler, the
//! model kopr runs handlers under, the reconcile model, testing, deployment, the runtime
//! features a production deployment turns on, serving a custom resource at several
//! versions, and the operator's identity, conditions, metrics and what it watches. Every
//! example compiles (they are doctests);
//! those that need a cluster are marked `no_run`. The examples share one custom resource:
//!
//! ```
//! use kube::CustomResource;
//! use schemars::JsonSchema;
//! use serde::{Deserialize, Serialize};
//!
//! /// A greeting: the operator says `message` and reports back in the status.
//! #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! #[kube(status = "GreetingStatus")]
//! pub struct GreetingSpec {
//!     pub message: String,
//! }
//!
//! /// kopr writes handler results (and, with `Storage::Status`, its bookkeeping) beside these
//! /// fields, so the status schema keeps unknown fields.
//! #[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
//! #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
//! pub struct GreetingStatus {
//!     pub greet: Option<String>,
//! }
//! ```
//!
//! # Caveats
//! Handler results go to `status.<handler id>` through the `/status` subresource. A CRD
//! whose status schema does not keep unknown fields (or that has no status at all) makes the
//! API server prune them: give the status `x-kubernetes-preserve-unknown-fields`, as above,
//! or turn [`Operator::store_results`](crate::Operator::store_results) off.
//!
//! # 1. A first handler
//!
//! A handler is an async function taking a [`Context`](crate::Context) and returning a
//! [`HandlerResult`](crate::HandlerResult). It is registered on a [`Resource`](crate::Resource)
//! for a cause ([`on_create`](crate::Resource::on_create), [`on_update`](crate::Resource::on_update),
//! [`on_delete`](crate::Resource::on_delete), ...), and the resource on an
//! [`Operator`](crate::Operator):
//!
//! ```no_run
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # pub struct GreetingSpec { pub message: String }
//! use kopr::{Context, HandlerResult, Operator, Resource};
//!
//! async fn greet(ctx: Context<Greeting>) -> HandlerResult<String> {
//!     tracing::info!("{} says {}", ctx.name(), ctx.object.spec.message);
//!     // The value is stored under `status.<handler id>`; the id is derived from the
//!     // function's path (`greet` in a binary's main.rs) unless set with `Handler::id`.
//!     Ok(format!("said {}", ctx.object.spec.message))
//! }
//!
//! async fn farewell(ctx: Context<Greeting>) -> HandlerResult {
//!     ctx.info("Farewell", "goodbye");
//!     Ok(())
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     Operator::new()
//!         .resource(
//!             Resource::<Greeting>::custom()
//!                 .on_create(greet)
//!                 .on_update(greet)
//!                 .on_delete(farewell),
//!         )
//!         .main()
//!         .await
//! }
//! ```
//!
//! [`Operator::main`](crate::Operator::main) gives the binary its command line
//! ([`crate::cli`]):
//!
//! - `my-operator dev` starts an embedded API server (kept in `.kopr/`), installs the CRDs,
//!   applies the manifests given with `--apply samples/`, and runs the operator against it
//!   as its own ServiceAccount under the ClusterRole `manifests` would deploy; `--kubeconfig`
//!   or `--context` use a real cluster instead;
//! - `my-operator run` runs it against a cluster (`KUBECONFIG`, `~/.kube/config` or the
//!   in-cluster account), electing a leader unless `--standalone`;
//! - `my-operator crd` and `my-operator manifests` print what to deploy (section 5).
//!
//! [`Resource::custom`](crate::Resource::custom) is for `#[derive(CustomResource)]` types
//! (their CRD is printed by `crd` and installed by `dev`); [`Resource::new`](crate::Resource::new)
//! serves a k8s-openapi kind, and [`Resource::dynamic`](crate::Resource::dynamic) or
//! [`Resource::lookup`](crate::Resource::lookup) a kind known only by name, as
//! [`DynamicObject`](kube::api::DynamicObject).
//!
//! # 2. The cause model
//!
//! ## Causes and the diff base
//! For every object, kopr keeps its *essence* (everything but `apiVersion`, `kind`,
//! `metadata` and `status`, plus the labels and the annotations that are not bookkeeping) as
//! it was last fully handled: the *diff base*, in the annotation
//! `<name>.kopr.dev/last-handled-configuration` (or under `status.kopr` with
//! [`Storage::Status`](crate::Storage::Status)). Comparing the current essence with it gives
//! the cause:
//!
//! - no diff base: **create** ([`on_create`](crate::Resource::on_create));
//! - a different essence: **update** ([`on_update`](crate::Resource::on_update)), and a
//!   **field** handler ([`on_field`](crate::Resource::on_field)) when its field is part of the
//!   [`Diff`](crate::Diff) (field handlers also run on creation);
//! - the operator started and found the object: **resume**
//!   ([`on_resume`](crate::Resource::on_resume));
//! - a `deletionTimestamp`: **delete** ([`on_delete`](crate::Resource::on_delete)).
//!
//! A status change alone is no cause, nor is kopr's own bookkeeping. Once every handler due
//! for a cause is done, the new diff base is written; until then the cause stays pending,
//! across restarts too.
//!
//! ## One handler per cycle, progress on the object
//! An object is handled by one worker at a time, in *cycles*: each runs one due handler, then
//! writes its outcome in one patch (the handler's own [`patch`](crate::Context::patch), its
//! result under `status.<handler id>`, and its *progress record*, the annotation
//! `<name>.kopr.dev/<handler id>` with attempts, retries and the time of the next attempt) before the
//! next handler of that object starts. Each cycle picks the first due handler in
//! registration order; one waiting for its retry does not hold back those after it.
//! [`Operator`](crate::Operator#guarantees) lists what this guarantees: a handler that
//! succeeded does not run again for its cause, and across a crash a handler may run again
//! (at least once), so handlers should be idempotent.
//!
//! ## Errors and retries
//! What a handler returns decides what happens next ([`crate::errors`]):
//!
//! - `Ok(value)`: done; `value` is stored under `status.<handler id>` unless it is `()`
//!   (or [`Operator::store_results`](crate::Operator::store_results) is off);
//! - [`HandlerError::temporary`](crate::HandlerError::temporary): retried after its delay;
//! - [`HandlerError::permanent`](crate::HandlerError::permanent): the handler is marked failed
//!   and not retried for this cause;
//! - any other error (`?` on a `std::error::Error`): retried after the handler's
//!   [`backoff`](crate::Handler::backoff) (60 s by default), or per its
//!   [`ErrorsMode`](crate::ErrorsMode).
//!
//! [`Handler`](crate::Handler) bounds the retries
//! ([`retries`](crate::Handler::retries), [`timeout`](crate::Handler::timeout)). Each
//! failure that is retried or final is logged and posted as a Warning Event on the object
//! (`HandlerRetrying`, `HandlerFailed`).
//!
//! ```
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # pub struct GreetingSpec { pub message: String }
//! use std::time::Duration;
//! use kopr::{Context, Handler, HandlerError, HandlerResult, Resource};
//!
//! async fn announce(ctx: Context<Greeting>) -> HandlerResult {
//!     if ctx.object.spec.message.is_empty() {
//!         // Retrying cannot help: fail for good, with a Warning Event saying why.
//!         return Err(HandlerError::permanent("spec.message is empty"));
//!     }
//!     if ctx.retry() < 2 {
//!         // Not ready yet: try again in 10 s.
//!         return Err(HandlerError::temporary("the audience is not seated", Duration::from_secs(10)));
//!     }
//!     Ok(())
//! }
//!
//! let greetings = Resource::<Greeting>::custom().on_create(
//!     Handler::new(announce)
//!         .retries(5)
//!         .timeout(Duration::from_secs(600))
//!         .backoff(Duration::from_secs(15)),
//! );
//! ```
//!
//! ## Finalizers
//! kopr adds the operator's finalizer, `<name>.kopr.dev/finalizer` (see
//! [`Identity`](crate::Identity)), to an object that a non-optional delete
//! handler, a timer or a daemon applies to, so the object stays until they are done: on
//! deletion, timers and daemons are stopped first, then the delete handlers run (retried as
//! any handler), and the finalizer is released once they all finished. Each delete handler's
//! outcome and progress record are written before the release, so an operator that crashes
//! in between does not run a delete handler that succeeded again after its restart; only one
//! the crash cut off runs again. A delete handler marked
//! [`optional`](crate::Handler::optional) adds no finalizer and runs only if kopr sees the
//! object while it is being deleted.
//!
//! ## Subhandlers, filters, timers, daemons and events
//! - [`Context::subhandler`](crate::Context::subhandler) splits one cause handler into steps
//!   with their own progress (Kopf's sub-handlers);
//! - filters ([`Filtered`](crate::Filtered)) choose the objects and changes a handler, timer
//!   or daemon applies to, by label, annotation, field, old or new value, or a predicate;
//! - a [`Timer`](crate::Timer) runs periodically for each matching object, a
//!   [`Daemon`](crate::Daemon) keeps a task running per object until it is deleted or stops
//!   matching ([`Context::cancelled`](crate::Context::cancelled));
//! - [`on_event`](crate::Resource::on_event) sees every raw watch event, with no persistence;
//! - [`Context::info`](crate::Context::info), [`warn`](crate::Context::warn) and
//!   [`exception`](crate::Context::exception) post Kubernetes Events about the object;
//! - [`Operator::memo`](crate::Operator::memo) shares state with every handler, and
//!   [`Operator::on_startup`](crate::Operator::on_startup) prepares it before watching
//!   starts; [`Resource::index`](crate::Resource::index) keeps in-memory indices of objects.
//!
//! ```
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # pub struct GreetingSpec { pub message: String }
//! use std::time::Duration;
//! use kopr::{Context, Daemon, Filtered, HandlerResult, Resource, Timer};
//!
//! async fn message_changed(ctx: Context<Greeting>) -> HandlerResult {
//!     // For a field handler, old and new are the field's values.
//!     tracing::info!("message: {:?} -> {:?}", ctx.old_value(), ctx.new_value());
//!     Ok(())
//! }
//!
//! async fn refresh(ctx: Context<Greeting>) -> HandlerResult {
//!     ctx.patch().status("refreshed", jiff::Timestamp::now().to_string());
//!     Ok(())
//! }
//!
//! async fn watch_over(ctx: Context<Greeting>) -> HandlerResult {
//!     // Runs until the object is deleted, stops matching, or the operator stops.
//!     ctx.cancelled().await;
//!     Ok(())
//! }
//!
//! let greetings = Resource::<Greeting>::custom()
//!     .on_field("spec.message", message_changed)
//!     .timer(Timer::every(Duration::from_secs(300), refresh).label_matches("refresh", "yes"))
//!     .daemon(Daemon::new(watch_over));
//! ```
//!
//! # 3. The reconcile model
//!
//! Instead of (or beside) cause handlers, a resource may have one level-triggered
//! [`reconcile`](crate::Resource::reconcile), as kubebuilder's `Reconcile`: it runs on any
//! change of the object, of a child it [`owns`](crate::Resource::owns), or of an object it
//! [`watches`](crate::Resource::watches), reads the world, applies what it wants with
//! [`Context::apply`](crate::Context::apply) (server-side apply with a controller owner
//! reference), and returns an [`Action`](crate::reconcile::Action): requeue after a delay, or
//! await the next change. Cleanup on deletion is a delete handler,
//! [`on_delete`](crate::Resource::on_delete), which keeps its finalizer until it succeeds. [`crate::reconcile`] says when it runs and what it
//! guarantees.
//!
//! ```no_run
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # pub struct GreetingSpec { pub message: String }
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kopr::reconcile::Action;
//! use kopr::{Context, HandlerResult, Operator, Resource};
//!
//! async fn reconcile(ctx: Context<Greeting>) -> HandlerResult<Action> {
//!     let wanted = ConfigMap {
//!         metadata: kube::api::ObjectMeta {
//!             name: Some(format!("{}-message", ctx.name())),
//!             ..Default::default()
//!         },
//!         data: Some([("message".to_owned(), ctx.object.spec.message.clone())].into()),
//!         ..Default::default()
//!     };
//!     ctx.apply(&wanted).await?;
//!     let children = ctx.owned::<ConfigMap>()?.len();
//!     ctx.patch().status("children", children);
//!     Ok(Action::requeue(Duration::from_secs(600)))
//! }
//!
//! async fn goodbye(ctx: Context<Greeting>) -> HandlerResult {
//!     // The ConfigMap goes with its owner (garbage collection); anything else is ours to undo.
//!     tracing::info!("{} is going", ctx.name());
//!     Ok(())
//! }
//!
//! let operator = Operator::new().resource(
//!     Resource::<Greeting>::custom()
//!         .reconcile(reconcile)
//!         .owns::<ConfigMap>()
//!         .on_delete(goodbye),
//! );
//! ```
//!
//! # 4. Testing
//!
//! With the `embedded` feature (on by default), [`crate::testing`] runs operators against an
//! in-process API server, no cluster needed: [`TestCluster`](crate::testing::TestCluster)
//! starts one, installs CRDs, runs the operator in the background (stopped gracefully, or
//! killed like a crashed process), and waits for objects to reach a state. A test is an
//! ordinary `#[tokio::test]`:
//!
//! ```no_run
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # #[kube(status = "GreetingStatus")]
//! # pub struct GreetingSpec { pub message: String }
//! # #[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
//! # #[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
//! # pub struct GreetingStatus { pub greet: Option<String> }
//! # async fn greet(ctx: kopr::Context<Greeting>) -> kopr::HandlerResult<String> {
//! #     Ok(ctx.object.spec.message.clone())
//! # }
//! use std::time::Duration;
//! use kopr::testing::{TestCluster, wait_for};
//! use kopr::{Handler, Operator, Resource};
//! use kube::api::{Api, PostParams};
//! use kube::CustomResourceExt;
//!
//! // #[tokio::test]
//! async fn greets() -> Result<(), kopr::Error> {
//!     let cluster = TestCluster::start().await?;
//!     cluster.install_crd(&Greeting::crd()).await?;
//!     let greetings = Resource::<Greeting>::custom().on_create(Handler::new(greet).id("greet"));
//!     let running = cluster.run(Operator::new().resource(greetings));
//!
//!     let greetings: Api<Greeting> = Api::namespaced(cluster.client(), "default");
//!     let hello = Greeting::new("hello", GreetingSpec { message: "hi".into() });
//!     greetings.create(&PostParams::default(), &hello).await?;
//!
//!     // The handler's result lands in status.greet.
//!     wait_for(&greetings, "hello", Duration::from_secs(10), |greeting| {
//!         greeting
//!             .and_then(|g| g.status.as_ref()?.greet.as_deref())
//!             .is_some_and(|said| said == "hi")
//!     })
//!     .await?;
//!     running.stop().await
//! }
//! ```
//!
//! [`TestCluster::run_as_service_account`](crate::testing::TestCluster::run_as_service_account)
//! runs the operator under the RBAC its [`Manifests`](crate::manifests::Manifests) generate,
//! so a missing rule fails the test as it would fail in the cluster;
//! [`RunningOperator::kill`](crate::testing::RunningOperator::kill) tests what a crash leaves
//! behind; [`FaultProxy`](crate::testing::FaultProxy) injects API failures; and
//! [`capture_logs`](crate::testing::capture_logs) waits for log lines. Pure parts (filters,
//! patches, diffs, adoption, manifests) test without any server.
//!
//! # 5. Deployment
//!
//! `my-operator manifests` prints everything to deploy, derived from the registered
//! resources by [`Manifests`](crate::manifests::Manifests): the CRDs, a ServiceAccount, a
//! least-privilege ClusterRole (the verbs kopr needs on each served kind and its status,
//! Events, owned and watched kinds, webhook configurations), a Role for the Leases, a
//! metrics Service and a Deployment of two replicas with health probes.
//! `kubectl apply -f <(my-operator manifests --image registry/my-operator:1.0 --namespace ops)`
//! deploys it. What kopr cannot see in the handlers (children created through the client,
//! kinds only read) is declared on the `Manifests`, given to the command line with
//! [`App::manifests`](crate::cli::App::manifests):
//!
//! ```
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # pub struct GreetingSpec { pub message: String }
//! # async fn greet(_: kopr::Context<Greeting>) -> kopr::HandlerResult { Ok(()) }
//! use k8s_openapi::api::core::v1::{ConfigMap, Pod};
//! use kopr::manifests::Manifests;
//! use kopr::{Operator, Resource};
//!
//! let operator = Operator::new().resource(Resource::<Greeting>::custom().on_create(greet));
//! let manifests = Manifests::new("greeting")
//!     .namespace("greeting-system")
//!     .image("registry.example.com/greeting:1.0")
//!     .child::<ConfigMap>()
//!     .reads::<Pod>();
//! let yaml = manifests.render(&operator)?;
//! assert!(yaml.contains("kind: CustomResourceDefinition"));
//! assert!(yaml.contains("kind: ClusterRole"));
//! assert!(yaml.contains("kind: Deployment"));
//! # Ok::<(), kopr::Error>(())
//! ```
//!
//! The operator binary with its manifests and options of its own:
//!
//! ```no_run
//! use kopr::cli::App;
//! use kopr::manifests::Manifests;
//! use kopr::Operator;
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     App::new(|_: &kopr::cli::NoArgs| Operator::new() /* .resource(...) */)
//!         .name("greeting")
//!         .manifests(Manifests::new("greeting").installs_crds())
//!         .main()
//!         .await
//! }
//! ```
//!
//! `run` does not install CRDs: apply them with the manifests, or install them from a
//! startup handler with [`Operator::install_crds`](crate::Operator::install_crds) (and
//! declare [`Manifests::installs_crds`](crate::manifests::Manifests::installs_crds) for the
//! RBAC it needs).
//!
//! # 6. The production runtime
//!
//! - **Leader election.** `run` elects a leader through a Lease named after the operator
//!   ([`crate::leader`]): the Deployment's second replica stands by, watching nothing, and
//!   takes over within the lease duration. `--standalone` turns it off.
//! - **Sharding.** `run --shards` (and `manifests --shards N`) splits objects over every
//!   replica by a hash of their namespace and name instead ([`crate::shards`]), never
//!   handling an object on two replicas at once.
//! - **Health and metrics.** `--health-listen` serves `/healthz` and `/readyz`,
//!   `--metrics-listen` serves `/metrics` ([`crate::endpoints`], [`crate::metrics`]); the
//!   generated Deployment probes them.
//! - **Admission webhooks.** [`on_validate`](crate::Resource::on_validate) and
//!   [`on_mutate`](crate::Resource::on_mutate) handlers are served over HTTPS by every replica
//!   and registered with the API server ([`crate::webhooks`]); the manifests add their Service
//!   and, if asked, cert-manager certificates. The same server converts custom resources
//!   between versions (section 7).
//! - **Scope and capacity.** `--namespace` patterns ([`NamespacePatterns`](crate::NamespacePatterns)),
//!   `--workers` (objects handled at once), [`Operator::storage`](crate::Operator::storage)
//!   (annotations or status), and the [`Operator`](crate::Operator) builder for timeouts and backoffs.
//! - **Shutdown.** On SIGTERM the operator stops watching and cancels timers and daemons,
//!   lets running handlers finish within [`Operator::shutdown_timeout`](crate::Operator::shutdown_timeout), runs
//!   [`on_cleanup`](crate::Operator::on_cleanup) handlers and releases its Lease.
//!
//! The same, configured in code rather than by flags:
//!
//! ```no_run
//! use std::time::Duration;
//! use kopr::leader::LeaderElection;
//! use kopr::webhooks::Webhooks;
//! use kopr::{NamespacePatterns, Operator, Storage};
//!
//! # async fn run(client: kube::Client) -> Result<(), kopr::Error> {
//! let operator = Operator::new()
//!     // .resource(...)
//!     .leader_election(LeaderElection::new("greeting").namespace("greeting-system"))
//!     .health_listen("0.0.0.0:8081".parse().unwrap())
//!     .metrics_listen("0.0.0.0:8080".parse().unwrap())
//!     .webhooks(Webhooks::listen("0.0.0.0:9443".parse().unwrap())
//!         .service("greeting-system", "greeting-webhooks"))
//!     .namespaces(NamespacePatterns::parse(["team-*", "!team-scratch"]).unwrap())
//!     .workers(16)
//!     .storage(Storage::Status)
//!     .shutdown_timeout(Duration::from_secs(60));
//! operator.run_until(client, kopr::cli::shutdown_signal()).await
//! # }
//! ```
//!
//! # 7. CRD versions and conversion
//!
//! A custom resource's API evolves: a new version changes its fields, and clients of the old
//! one keep working. Declare each version as its own `#[derive(CustomResource)]` type and
//! register the newest as the resource, with the others through
//! [`Resource::version`](crate::Resource::version). That type is the *hub*: the storage
//! version, the one every handler receives, whichever version a client wrote. Each other
//! version converts to and from it with `From`/`TryFrom`, as controller-runtime's
//! Hub/Convertible. The Book operator (`examples/book`) serves `v1` (one `author`) and `v2`
//! (`authors`):
//!
//! ```
//! mod v1 {
//!     use kube::CustomResource;
//!     use schemars::JsonSchema;
//!     use serde::{Deserialize, Serialize};
//!     #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//!     #[kube(group = "example.com", version = "v1", kind = "Book", namespaced)]
//!     pub struct BookSpec { pub author: String, pub title: String }
//! }
//! mod v2 {
//!     use kube::CustomResource;
//!     use schemars::JsonSchema;
//!     use serde::{Deserialize, Serialize};
//!     #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//!     #[kube(group = "example.com", version = "v2", kind = "Book", namespaced)]
//!     pub struct BookSpec { pub authors: Vec<String>, pub title: String }
//! }
//!
//! impl From<v1::Book> for v2::Book {
//!     fn from(b: v1::Book) -> Self {
//!         let spec = v2::BookSpec { authors: vec![b.spec.author], title: b.spec.title };
//!         v2::Book { metadata: b.metadata, spec }
//!     }
//! }
//!
//! impl TryFrom<v2::Book> for v1::Book {
//!     type Error = String;
//!     fn try_from(b: v2::Book) -> Result<Self, String> {
//!         let author = b.spec.authors.first().cloned().ok_or("no author, which v1 needs")?;
//!         Ok(v1::Book { metadata: b.metadata, spec: v1::BookSpec { author, title: b.spec.title } })
//!     }
//! }
//!
//! let operator = kopr::Operator::new()
//!     .resource(kopr::Resource::<v2::Book>::custom().version::<v1::Book>());
//! let crd = &operator.crds()[0];
//! assert_eq!(crd.spec.versions.len(), 2);
//! assert_eq!(crd.spec.conversion.as_ref().map(|c| c.strategy.as_str()), Some("Webhook"));
//! ```
//!
//! What the operator then does:
//!
//! - **The CRD** printed by `crd` and `manifests` and installed by `dev` lists every version,
//!   the hub's marked `storage`, with `spec.conversion` naming the operator's webhook server:
//!   its Service in the manifests (with cert-manager's `inject-ca-from` when the manifests use
//!   cert-manager), a loopback URL in `dev` and [`TestCluster`](crate::testing::TestCluster).
//! - **The conversion webhook** is served at `/convert/<crd name>` by the same HTTPS server,
//!   certificate and Service as the admission handlers ([`crate::webhooks`]). At start it
//!   registers its CA as the CRD's conversion `caBundle`, as it does for admission; `dev`
//!   applies its manifests only once that is done
//!   ([`Operator::webhooks_ready`](crate::Operator::webhooks_ready),
//!   [`RunningOperator::webhooks_ready`](crate::testing::RunningOperator::webhooks_ready) in
//!   tests).
//! - **Errors.** A `TryFrom` error fails the conversion: the API server answers the client
//!   with a 500 that quotes it (`conversion webhook for example.com/v2, Kind=Book failed: no
//!   author, which v1 needs`). It is logged and counted in `kopr_conversion_failures_total`.
//!   While no replica answers, reads and writes at a version other than the stored one fail
//!   the same way (with the connection error); nothing is stored half-converted.
//! - **Fields a version cannot express** survive a trip through it. A `v2` Book with two
//!   authors read at `v1` shows the first; the framework keeps the hub's fields in the
//!   annotation [`STASH_ANNOTATION`](crate::conversion::STASH_ANNOTATION) of the `v1`
//!   object, and when it comes back (a merge patch, an edit in `kubectl edit`), every part
//!   the client left alone is taken from it: the patched title and both authors. A part the
//!   client changed (the `author`) is its own conversion's (one author). Write conversions
//!   that are exact where the versions overlap; the stash covers the rest.
//!
//! kube-apiserver converts objects through the webhook on every read and write at another
//! version than the stored one: keep conversions fast and free of I/O. Once every stored
//! object has been rewritten at the new storage version, the old one can stop being served;
//! `status.storedVersions` on the CRD says which versions objects may still be stored at.
//!
//! # 8. Identity, conditions, observability and what is watched
//!
//! - **Identity.** [`Operator::name`](crate::Operator::name) (the command line uses the
//!   program's name) names the operator's finalizer (`<name>.kopr.dev/finalizer`), the domain
//!   of its annotations, its field manager and its Events' `reportingController`, so two
//!   operators on one kind never collide ([`Identity`](crate::Identity) overrides any of them).
//!   Objects written under kopr's earlier fixed `kopr.dev/` names are read and moved.
//! - **Conditions.** [`conditions::set`](crate::conditions::set) keeps `status.conditions` as
//!   Kubernetes does: keyed by type, `lastTransitionTime` changed only with the status,
//!   `observedGeneration` recorded.
//! - **Metrics and probes.** [`metrics::register`](crate::metrics::register) adds the
//!   author's metrics to `/metrics`; [`readiness_check`](crate::Operator::readiness_check)
//!   and [`liveness_check`](crate::Operator::liveness_check) add checks to `/readyz` and
//!   `/healthz`.
//! - **What is watched.** [`label_selector`](crate::Resource::label_selector) and
//!   [`field_selector`](crate::Resource::field_selector) let the API server filter a
//!   resource's objects; [`owns_with`](crate::Resource::owns_with) and
//!   [`watches_with`](crate::Resource::watches_with) take
//!   [`WatchOptions`](crate::selection::WatchOptions): selectors, metadata only, predicates.
//!   [`workers`](crate::Resource::workers) caps one resource's objects in flight, and
//!   [`reconcile_on`](crate::Resource::reconcile_on) reconciles keys from a channel.
//!
//! ```
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "PodSet", namespaced)]
//! # pub struct PodSetSpec { pub replicas: u32 }
//! use k8s_openapi::api::core::v1::Pod;
//! use kopr::metrics::prometheus_client::metrics::counter::Counter;
//! use kopr::reconcile::{Action, Key};
//! use kopr::selection::{Predicate, WatchOptions};
//! use kopr::{Context, HandlerResult, Operator, Resource, conditions};
//!
//! async fn reconcile(ctx: Context<PodSet>) -> HandlerResult<Action> {
//!     let pods = ctx.owned::<Pod>()?;
//!     let mut list = Vec::new(); // in a real operator: the conditions read from the status
//!     let ready = conditions::Update::new("Ready", !pods.is_empty())
//!         .reason(if pods.is_empty() { "NoPods" } else { "PodsRunning" })
//!         .observed_generation(ctx.object.metadata.generation);
//!     conditions::set(&mut list, ready);
//!     ctx.patch().status("conditions", list);
//!     Ok(Action::await_change())
//! }
//!
//! let reconciled: Counter =
//!     kopr::metrics::register("guide_reconciles", "Reconciles", Counter::default()).unwrap();
//! let operator = Operator::new()
//!     .name("pod-keeper")
//!     .readiness_check("always", || Ok::<(), String>(()))
//!     .resource(
//!         Resource::<PodSet>::custom()
//!             .label_selector("team=a")
//!             .workers(8)
//!             .reconcile(reconcile)
//!             .owns_with::<Pod>(
//!                 WatchOptions::new().metadata_only().predicate(Predicate::LabelsChanged),
//!             ),
//!     );
//! # let _ = (reconciled, Key::namespaced("a", "b"));
//! ```
