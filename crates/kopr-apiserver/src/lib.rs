//! kopr-apiserver: an embedded, single-process, Kubernetes-compatible API
//! server with SQLite storage.
//!
//! Real clients (kubectl, kube-rs, the Python client) talk to it over HTTPS
//! with a bearer token, exactly as to kube-apiserver 1.32.
//!
//! ```no_run
//! # async fn run() -> Result<(), kopr_apiserver::ServerError> {
//! let server = kopr_apiserver::ApiServer::start(kopr_apiserver::Config::ephemeral()).await?;
//! println!("serving at {}", server.url());
//! server.shutdown().await;
//! # Ok(())
//! # }
//! ```

pub mod bootstrap;
pub mod builtin;
pub mod controllers;
pub mod crd;
pub mod defaults;
pub mod discovery;
pub mod gofmt;
pub mod http;
pub mod metrics;
pub mod object;
pub mod openapi;
pub mod patch;
pub mod pki;
pub mod protobuf;
pub mod registry;
pub mod resources;
pub mod schemas;
pub mod selectors;
pub mod server;
pub mod status;
pub mod storage;
pub mod table;
pub mod typed;
pub mod validation;
pub mod version;

pub use server::{ApiServer, Config, ServerError};
