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
//! The module layout follows Kopf's separation of concerns: what handlers see
//! ([`context`], [`diff`], [`patch`], [`errors`]), how they are registered ([`handlers`],
//! [`filters`], [`resource`], [`operator`]), what is kept on objects ([`progress`],
//! [`storage`]), the reactor that watches and runs cycles, and kits ([`adopt`], [`events`],
//! [`testing`]).

#![warn(missing_docs)]

pub mod adopt;
pub mod apply;
pub mod cli;
pub mod context;
pub mod diff;
pub mod discovery;
pub mod errors;
pub mod events;
pub mod filters;
pub mod handlers;
pub mod logging;
pub mod manifests;
pub mod namespaces;
pub mod operator;
pub mod patch;
pub mod progress;
mod reactor;
pub mod resource;
pub mod storage;
#[cfg(feature = "embedded")]
pub mod testing;

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
