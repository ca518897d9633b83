//! The generic registry: the verbs on any resource, with kube-apiserver's
//! semantics, independent of HTTP. Request handlers and the in-process
//! controllers (garbage collector, namespace lifecycle) both go through it.

pub mod admit;
mod binding;
pub mod convert;
mod delete;
pub mod eviction;
pub mod patching;
mod read;
pub mod scale;
mod service_ip;
pub mod strategy;
mod watch;
mod write;

use std::sync::Arc;

use serde_json::Value;

pub use admit::{Admission, AdmissionRequest, BoxFuture, Operation, invalid_object, invalid_of};
pub use binding::Bind;
pub use delete::{DeleteOptions, DeleteOutcome, Propagation};
pub use eviction::Evict;
pub use read::{ListOptions, ListParams, ListResult, RvMatch, invalid_list_options};
pub use watch::{WatchItem, WatchOptions, WatchStream, bookmark_object};
pub use write::{FieldValidation, WriteOptions, Written};

use crate::callout::Caller;
use crate::resources::{Catalog, ResourceType};
use crate::status::ApiError;
use crate::storage::{StorageError, Store};

/// The registry: the store, the catalog of served resources and the
/// admission stage every write goes through.
#[derive(Clone)]
pub struct Api {
    /// Object storage.
    pub store: Store,
    /// Served resources.
    pub catalog: Catalog,
    /// Mutating and validating admission of every new object state.
    pub admission: Arc<dyn Admission>,
    /// Calls CRD conversion webhooks.
    pub caller: Arc<Caller>,
}

/// A list body, serialized without copying its items.
#[derive(Debug)]
pub struct ListBody {
    /// `<Kind>List`
    pub kind: String,
    /// The list's apiVersion.
    pub api_version: String,
    /// ListMeta.
    pub metadata: Value,
    /// The objects.
    pub items: Vec<Arc<Value>>,
}

impl serde::Serialize for ListBody {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        crate::gojson::List {
            kind: &self.kind,
            api_version: &self.api_version,
            metadata: &self.metadata,
            items: &self.items,
        }
        .serialize(s)
    }
}

impl ListBody {
    /// The list of a resource from one page of results.
    pub fn new(rt: &ResourceType, page: ListResult) -> ListBody {
        ListBody {
            kind: format!("{}List", rt.kind),
            api_version: rt.api_version(),
            metadata: page.list_meta(),
            items: page.items,
        }
    }
}

impl From<StorageError> for ApiError {
    fn from(e: StorageError) -> Self {
        if matches!(e, StorageError::TooLarge) {
            // kube-apiserver relays etcd's refusal as an unknown error: 500, no reason.
            return ApiError::new(500, "", e.to_string());
        }
        tracing::error!(error = %e, "storage failure");
        ApiError::internal(e)
    }
}

/// Where a request points: a resource, and optionally a namespace and name.
#[derive(Debug, Clone)]
pub struct Target {
    /// The resource.
    pub rt: Arc<ResourceType>,
    /// Namespace (namespaced resources only).
    pub namespace: Option<String>,
    /// Object name.
    pub name: Option<String>,
}

impl Target {
    /// The storage key of the named object.
    pub fn key(&self) -> Result<String, ApiError> {
        let name = self
            .name
            .as_deref()
            .ok_or_else(ApiError::method_not_allowed)?;
        if self.rt.namespaced && self.namespace.is_none() {
            return Err(ApiError::path_not_found());
        }
        Ok(self.rt.key(self.namespace.as_deref(), name))
    }

    /// The object name, or "".
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

impl Api {
    /// Creates a registry over a store and catalog, whose writes go
    /// through `admission`.
    pub fn new(store: Store, catalog: Catalog, admission: Arc<dyn Admission>) -> Api {
        Api {
            caller: Arc::new(Caller::new(store.clone())),
            store,
            catalog,
            admission,
        }
    }
}
