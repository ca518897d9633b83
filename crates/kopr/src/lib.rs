//! # kopr: Kopf's operator model for Rust
//!
//! Write handlers; kopr watches, works out what changed, runs the right handlers, and does the
//! rest: retries with state persisted on the object, finalizers, events, children adopted into
//! the owner's lifecycle, timers and daemons. It is built on kube-rs (`watcher`, `Api`) and
//! k8s-openapi.
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
//! The source is in folders by layer, as Kopf separates its cogs, core and kits; each
//! module keeps its public path (`kopr::context`, `kopr::testing`, ...):
//!
//! - `handling/`, the author's surface: [`resource`], [`handlers`], [`filters`] (how handlers
//!   are registered), [`context`], [`diff`] (what they see), [`errors`] (what they return),
//!   [`patch`] (how they change their object);
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

mod handling;
mod kits;
pub mod operator;
mod persistence;
mod reactor;
mod runtime;

pub use handling::{
    admission, children, context, diff, errors, filters, handlers, index, patch, reconcile,
    resource,
};
#[cfg(feature = "embedded")]
pub use kits::testing;
pub use kits::{adopt, apply, cli, manifests, service_account};
pub use persistence::{progress, storage};
pub use runtime::{
    client, discovery, endpoints, events, leader, logging, metrics, namespaces, shards, webhooks,
};

pub use admission::{AdmissionResult, Denial, Review};
pub use adopt::{AdoptOptions, Owner, adopt};
pub use context::{Context, Memo, Reason};
pub use diff::{Diff, DiffItem, DiffOp};
pub use errors::{Error, HandlerError, HandlerResult, PermanentError, TemporaryError};
pub use events::{exception, info, warn};
pub use filters::{FilterInput, Filtered, Matcher};
pub use handlers::{Daemon, ErrorsMode, Handler, Timer};
pub use namespaces::NamespacePatterns;
pub use operator::{Lifecycle, Operator};
pub use patch::Patch;
pub use reactor::Settings;
pub use resource::Resource;
pub use storage::Storage;

pub use k8s_openapi;
pub use kube;
