//! kopr-apiserver-core: the request chain of kopr's embedded, single-process,
//! Kubernetes-compatible API server, with SQLite storage, and the kinds it serves. Users
//! depend on `kopr-apiserver`, which adds the controllers.
//!
//! Real clients (kubectl, kube-rs, the Python client) talk to it over HTTPS
//! with a bearer token, exactly as to kube-apiserver 1.32.
//!
//! # Design
//! 1. Layers: http → authn → authz → admission → registry → storage, each
//!    stage importing only downward (`xtask/layers.txt`, checked in CI).
//! 2. A kind is a value, not a branch: a [`KindDef`](resources::kind::KindDef)
//!    gives its names, scope, subresources, strategy, decoding, validation,
//!    defaulting, table printer, field selectors, quota evaluator and role.
//! 3. The stages find a kind through the [`resources::Catalog`] (by path, or
//!    by role for the server's own verbs) and never name one; a custom
//!    resource answers the same questions from its CRD (`resources::rules`).
//! 4. A new built-in kind is one `KindDef` in its API group's module under
//!    [`kinds`]; the rules it points at live beside the others of their kind.
//!
//! A request passes the stages of kube-apiserver's chain, each a module that
//! imports only the ones below it (the table is `xtask/layers.txt`, checked by
//! `cargo run -p xtask -- layering`, which also lists the upward edges still to
//! be cut):
//!
//! - [`http`]: routing, content negotiation, decoding every body (PATCH
//!   included) and rendering responses, discovery documents among them;
//!   [`audit`] records each request as it passes;
//!   [`openapi`] builds the OpenAPI documents it serves;
//! - [`authn`]: who the request comes from (a client certificate of the
//!   cluster CA, admin token, token file, service-account tokens, or
//!   anonymous);
//! - [`impersonation`]: whom it acts as (`Impersonate-*` headers);
//! - [`authz`]: whether that user may do what it asks (`system:masters`,
//!   then RBAC);
//! - [`admission`]: decoding into the kind's schema, mutating plugins
//!   (defaulting), validating plugins (validation): the stage the registry
//!   hands every new object state to;
//! - [`registry`]: the verbs, composed from each kind's
//!   [`Strategy`](resources::Strategy) as kube's generic store is;
//! - [`storage`]: SQLite, the in-memory current state and the history;
//! - watch: in [`registry`] (filtering, bookmarks) over [`storage`]'s events.
//!
//! Beside the chain: [`reviews`] (access and token reviews, TokenRequest:
//! resources computed per request), [`resources`] (the catalog of served kinds, each with
//! its strategy), [`kinds`] (the built-in kinds), [`crd`]
//! (CustomResourceDefinitions), [`patch`], [`validation`], [`cron`] (schedules), [`defaults`],
//! [`table`], [`schemas`], [`x509`] (certificates and requests as Go reads
//! and writes them, the CA's signing), [`callout`] (calling admission and
//! conversion webhooks). What runs beside the server comes in through
//! [`hooks`] (kube-apiserver's post-start hooks) and [`node_runtime`] (its kubelet
//! connection): the `kopr-controllers` crate provides the controllers and the simulated
//! kubelet, and `kopr-apiserver` wires them in.
//!
//! ```no_run
//! # async fn run() -> Result<(), kopr_apiserver_core::ServerError> {
//! // The request chain alone: no controller runs, no kubelet answers.
//! let config = kopr_apiserver_core::Config::ephemeral();
//! let server = kopr_apiserver_core::ApiServer::start(config).await?;
//! println!("serving at {}", server.url());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

pub mod admission;
pub mod audit;
pub mod authn;
pub mod authz;
pub mod bootstrap;
pub mod callout;
pub mod crd;
pub mod cron;
pub mod datadir;
pub mod defaults;
pub mod gofmt;
pub mod gojson;
pub mod hooks;
pub mod http;
pub mod identity;
pub mod impersonation;
pub mod kinds;
pub mod merge;
pub mod metrics;
pub mod node_runtime;
pub mod object;
pub mod openapi;
pub mod patch;
pub mod pki;
pub mod protobuf;
pub mod quantity;
pub mod quota;
pub mod registry;
pub mod resources;
pub mod reviews;
pub mod schemas;
pub mod selectors;
pub mod server;
pub mod status;
pub mod storage;
pub mod table;
pub mod typed;
pub mod validation;
pub mod version;
pub mod x509;

pub use server::{ApiServer, Config, ServerError};
