//! # kopr: Kopf's operator model for Rust, and kubebuilder's
//!
//! Two models, which may share a resource:
//!
//! - **cause handlers**, as Kopf's: write handlers for creation, update, deletion, a field,
//!   timers and daemons; kopr watches, works out what changed, runs the right handlers, and
//!   does the rest: retries with state persisted on the object, finalizers, events, children
//!   adopted into the owner's lifecycle;
//! - **a reconcile**, as kubebuilder's `Reconcile` ([`reconcile`]): one level-triggered
//!   function per object, run on any change of it, of a child it [owns](Resource::owns) or
//!   of a [watched](Resource::watches) object, which applies the children it wants
//!   ([`Context::apply`]) and returns [`Action::requeue`](reconcile::Action::requeue) or
//!   [`Action::await_change`](reconcile::Action::await_change).
//!
//! One object is handled by one worker at a time: the cause handlers that are due first, one
//! per cycle, then the reconcile. Built on kube-rs (`watcher`, `Api`) and k8s-openapi.
//!
//! Cause handlers:
//!
//! ```no_run
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
//! async fn greeted(ctx: Context<Greeting>) -> HandlerResult<String> {
//!     tracing::info!("Greeting: {}", ctx.object.spec.message);
//!     Ok(format!("said {}", ctx.object.spec.message))
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     Operator::new()
//!         .resource(Resource::<Greeting>::custom().on_create(greeted))
//!         .main()
//!         .await
//! }
//! ```
//!
//! The same Greeting on the reconcile model, keeping a ConfigMap with its message:
//!
//! ```no_run
//! # use kube::CustomResource;
//! # use schemars::JsonSchema;
//! # use serde::{Deserialize, Serialize};
//! # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
//! # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
//! # pub struct GreetingSpec { pub message: String }
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kopr::reconcile::Action;
//! use kopr::{Context, HandlerResult, Operator, Resource};
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
//!     // Server-side apply with the owner reference: a hand edit is put back by the next run,
//!     // which the ConfigMap's change triggers.
//!     ctx.apply(&child).await?;
//!     Ok(Action::await_change())
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     Operator::new()
//!         .resource(
//!             Resource::<Greeting>::custom()
//!                 .reconcile(reconcile)
//!                 .owns::<ConfigMap>(),
//!         )
//!         .main()
//!         .await
//! }
//! ```
//!
//! # Where to go next
//!
//! The [`guide`] walks through an operator from start to production:
//!
//! 1. [a first handler](guide#1-a-first-handler) and the command line it gets
//!    ([`Operator::main`], [`cli`]);
//! 2. [the cause model](guide#2-the-cause-model): causes and the diff base, one handler per
//!    cycle with progress kept on the object, errors and retries ([`errors`]), finalizers,
//!    subhandlers, [`filters`], [`Timer`]s and [`Daemon`]s;
//! 3. [the reconcile model](guide#3-the-reconcile-model) ([`reconcile`], [`Context::apply`],
//!    [`Resource::owns`]);
//! 4. [testing](guide#4-testing) against an in-process API server ([`testing`]);
//! 5. [deployment](guide#5-deployment): the CRDs, RBAC and Deployment that `manifests`
//!    prints ([`manifests`]);
//! 6. [the production runtime](guide#6-the-production-runtime): [`leader`] election,
//!    [`shards`], health and [`metrics`] endpoints, admission [`webhooks`].
//!
//! What a user touches most: [`Operator`] (resources, startup and cleanup, shared state,
//! settings, the run loop), [`Resource`] (which handlers run for which causes), [`Handler`],
//! [`Timer`], [`Daemon`] and [`Filtered`] (how they run and on which objects), [`Context`]
//! (what a handler sees and does), [`HandlerResult`] and [`HandlerError`] (what it returns),
//! [`Patch`] (how it changes its object).
//!
//! The source is in folders by layer, as Kopf separates its cogs, core and kits; each
//! module keeps its public path (`kopr::context`, `kopr::testing`, ...):
//!
//! - `handling/`, the author's surface: [`resource`], [`handlers`], [`filters`] (how handlers
//!   are registered), [`reconcile`] (the reconcile model), [`context`], [`diff`] (what they
//!   see), [`errors`] (what they return), [`patch`] (how they change their object),
//!   [`children`] (owned children's cache, server-side apply), [`index`] (indices);
//! - [`operator`]: the operator built from resources, and its lifecycle;
//! - `reactor/`: watching, per-object slots and workers, cause detection, one handler per
//!   cycle (invoke, outcome, progress, posting), outcomes kept until they land, timers and
//!   daemons, patching;
//! - `persistence/`: what is kept on objects: [`progress`] records, the diff base and the
//!   finalizer ([`storage`]);
//! - `runtime/`: [`client`] (the API client), [`discovery`], [`namespaces`], [`events`],
//!   [`logging`], [`leader`] (leader election), [`shards`] (sharding over active replicas),
//!   [`endpoints`] and [`metrics`] (health, readiness and metrics), [`webhooks`];
//! - `kits/`: [`adopt`](mod@adopt), [`apply`], [`cli`], [`manifests`], [`service_account`]
//!   and [`testing`].

#![warn(missing_docs)]

/// The cargo features this build of kopr has (`embedded`: the in-process
/// API server, `dev` and [`testing`]). Benchmarks report it, so a figure says
/// which build it measured.
///
/// ```
/// assert!(kopr::FEATURES.iter().all(|f| *f == "embedded"));
/// ```
pub const FEATURES: &[&str] = if cfg!(feature = "embedded") {
    &["embedded"]
} else {
    &[]
};

pub mod guide;
mod handling;
mod kits;
pub mod operator;
mod persistence;
mod reactor;
mod runtime;

pub use handling::{
    admission, children, context, conversion, diff, errors, filters, handlers, index, patch,
    reconcile, resource, selection,
};
#[cfg(feature = "embedded")]
pub use kits::testing;
pub use kits::{adopt, apply, cli, conditions, manifests, service_account};
pub use persistence::{identity, progress, storage};
pub use runtime::{
    client, discovery, endpoints, events, leader, logging, metrics, namespaces, shards, webhooks,
};

pub use admission::{AdmissionResult, Denial, Review};
pub use adopt::{AdoptOptions, Owner, adopt};
pub use context::{Context, Memo, Reason};
pub use diff::{Diff, DiffItem, DiffOp};
pub use errors::{Error, HandlerError, HandlerResult, LookupError};
pub use events::{exception, info, warn};
pub use filters::{FilterInput, Filtered, Matcher};
pub use handlers::{Daemon, ErrorsMode, Handler, Timer};
pub use identity::Identity;
pub use namespaces::NamespacePatterns;
pub use operator::{Lifecycle, Operator};
pub use patch::Patch;
pub use resource::Resource;
pub use storage::Storage;

pub use k8s_openapi;
pub use kube;
