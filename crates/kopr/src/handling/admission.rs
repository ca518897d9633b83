//! Admission handlers: check or change an object before the API server stores it, as Kopf's
//! `@kopf.on.validate` / `@kopf.on.mutate` and controller-runtime's webhooks do. The operator
//! serves them over HTTPS ([`crate::webhooks`]) and registers them with the API server, which
//! calls them for every matching write.
//!
//! ```no_run
//! use kopr::{Denial, Operator, Resource, Review};
//! use kube::api::DynamicObject;
//!
//! async fn check(review: Review<DynamicObject>) -> Result<(), Denial> {
//!     let name = review.name.as_str();
//!     if name.starts_with("tmp-") {
//!         return Err(Denial::new("temporary names are not allowed"));
//!     }
//!     review.warn("checked by the operator");
//!     Ok(())
//! }
//!
//! async fn label(review: Review<DynamicObject>) -> Result<(), Denial> {
//!     review.patch().label("checked", Some("yes"));
//!     Ok(())
//! }
//!
//! let operator = Operator::new().resource(
//!     Resource::dynamic("example.com", "v1", "greetings")
//!         .on_validate("check", check)
//!         .on_mutate("label", label),
//! );
//! # let _ = operator;
//! ```

use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::handling::filters::{FilterInput, Filtered, Filters};
use crate::handling::patch::Patch;

/// The operation an admission request is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// A new object.
    Create,
    /// A changed object (also a write of a subresource).
    Update,
    /// A deletion (there is no new object, only the old one).
    Delete,
    /// A connection to a subresource (`pods/exec` and the like).
    Connect,
}

impl Operation {
    /// The operation as Kubernetes names it in webhook rules.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }

    fn parse(text: &str) -> Option<Operation> {
        Some(match text {
            "CREATE" => Operation::Create,
            "UPDATE" => Operation::Update,
            "DELETE" => Operation::Delete,
            "CONNECT" => Operation::Connect,
            _ => return None,
        })
    }
}

/// A refusal: the write fails with `message` (and `code`, 403 unless set), which the client
/// sees as `admission webhook "<name>" denied the request: <message>`.
///
/// ```
/// use kopr::Denial;
/// let denial = Denial::new("spec.size must be at most 10").code(422);
/// assert_eq!((denial.code, Denial::new("no").code), (422, 403));
/// assert_eq!(Denial::new("no").code(200).code, 400); // at least 400
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denial {
    /// Why.
    pub message: String,
    /// The HTTP status the client gets (403 by default).
    pub code: u16,
}

impl Denial {
    /// A refusal with `message` and code 403.
    pub fn new(message: impl Into<String>) -> Denial {
        Denial {
            message: message.into(),
            code: 403,
        }
    }

    /// The HTTP status the client gets (at least 400).
    pub fn code(mut self, code: u16) -> Denial {
        self.code = code.max(400);
        self
    }
}

/// What an admission handler returns: `Ok(())` to admit, a [`Denial`] to refuse.
pub type AdmissionResult = Result<(), Denial>;

/// One admission request, as a handler sees it.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::admission::Operation;
/// use kopr::{AdmissionResult, Denial, Review};
///
/// async fn immutable_mode(review: Review<ConfigMap>) -> AdmissionResult {
///     let mode = |c: &Option<ConfigMap>| c.as_ref()?.data.as_ref()?.get("mode").cloned();
///     if review.operation == Operation::Update && mode(&review.old) != mode(&review.object) {
///         if review.groups.iter().any(|g| g == "system:masters") {
///             review.warn("data.mode changed by an administrator");
///             return Ok(());
///         }
///         return Err(Denial::new("data.mode cannot change"));
///     }
///     Ok(())
/// }
/// ```
///
/// # Caveats
/// `object` and `old` are `None` when the body does not parse as `K`; [`body`](Self::body)
/// and [`old_body`](Self::old_body) always have the JSON.
pub struct Review<K> {
    /// What is being done.
    pub operation: Operation,
    /// The object as it would be stored (`None` on deletion or when it does not parse as `K`).
    pub object: Option<K>,
    /// The object as stored now, on updates and deletions.
    pub old: Option<K>,
    /// The object's name (empty when the server is to generate it).
    pub name: String,
    /// The object's namespace, if namespaced.
    pub namespace: Option<String>,
    /// The subresource written, if any (`status`, `scale`, ...).
    pub subresource: Option<String>,
    /// Who is writing.
    pub username: String,
    /// The writer's groups.
    pub groups: Vec<String>,
    /// A dry run: the write will not be stored, so the handler must have no side effects.
    pub dry_run: bool,
    body: Value,
    old_body: Value,
    patch: Patch,
    warnings: Arc<Mutex<Vec<String>>>,
}

impl<K> Review<K> {
    /// The new object as JSON (`null` on deletion).
    pub fn body(&self) -> &Value {
        &self.body
    }

    /// The old object as JSON (`null` on creation).
    pub fn old_body(&self) -> &Value {
        &self.old_body
    }

    /// The changes a mutating handler makes to the object (ignored for validating handlers).
    pub fn patch(&self) -> &Patch {
        &self.patch
    }

    /// A warning for the client (kubectl prints it as `Warning: <text>`), admitted or not.
    pub fn warn(&self, text: impl Into<String>) {
        if let Ok(mut warnings) = self.warnings.lock() {
            warnings.push(text.into());
        }
    }
}

/// An admission request before it is typed: the AdmissionReview's `request`.
pub(crate) struct Incoming {
    pub request: Value,
}

/// What a handler made of a request.
#[derive(Debug, Default)]
pub(crate) struct Verdict {
    pub denial: Option<Denial>,
    /// The merge patch a mutating handler built.
    pub patch: Value,
    pub warnings: Vec<String>,
}

type AdmitFn = Arc<dyn Fn(Incoming) -> BoxFuture<'static, Verdict> + Send + Sync>;

/// A registered admission handler, erased over the object type.
#[derive(Clone)]
pub struct AdmissionSpec {
    pub(crate) id: String,
    pub(crate) mutating: bool,
    pub(crate) call: AdmitFn,
    /// The operations it is registered for.
    pub(crate) operations: Vec<Operation>,
    /// The subresource it is registered for (`None`: the resource itself).
    pub(crate) subresource: Option<String>,
    /// Which objects it is called for; the others are admitted without it.
    pub(crate) filters: Filters,
}

impl AdmissionSpec {
    /// Whether the handler applies to this request (its filters, on the new object, or the old
    /// one on deletion).
    pub(crate) fn applies(&self, request: &Value) -> bool {
        if self.filters.is_empty() {
            return true;
        }
        let (new, old) = (&request["object"], &request["oldObject"]);
        let new = (!new.is_null()).then_some(new);
        let old = (!old.is_null()).then_some(old);
        let Some(body) = new.or(old) else {
            return true;
        };
        let diff = crate::handling::diff::diff(old, new);
        self.filters.matches(&FilterInput {
            body,
            old,
            new,
            diff: &diff,
        })
    }
}

/// An admission handler with options: the operations and subresource it is registered for,
/// and filters (labels, annotations, fields, `when`) choosing the objects it is called for, as
/// Kopf's `@kopf.on.validate(..., operation=, subresource=, labels=, field=, value=, when=)`.
/// Objects the filters leave out are admitted without calling it.
///
/// ```no_run
/// use kopr::admission::{Admission, Operation};
/// use kopr::{Denial, Filtered, Resource, Review};
/// use kube::api::DynamicObject;
///
/// async fn frozen(_: Review<DynamicObject>) -> Result<(), Denial> {
///     Err(Denial::new("this object is frozen"))
/// }
///
/// let resource = Resource::dynamic("example.com", "v1", "greetings").admission(
///     Admission::validate("frozen", frozen)
///         .operations([Operation::Update, Operation::Delete])
///         .label_matches("frozen", "yes"),
/// );
/// # let _ = resource;
/// ```
pub struct Admission<K> {
    spec: AdmissionSpec,
    _kind: std::marker::PhantomData<fn() -> K>,
}

impl<K: DeserializeOwned + Send + 'static> Admission<K> {
    /// A validating handler (see [`Resource::on_validate`](crate::Resource::on_validate)).
    pub fn validate<F, Fut>(id: &str, handler: F) -> Admission<K>
    where
        F: Fn(Review<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResult> + Send + 'static,
    {
        Admission {
            spec: AdmissionSpec::new(id, false, handler),
            _kind: std::marker::PhantomData,
        }
    }

    /// A mutating handler (see [`Resource::on_mutate`](crate::Resource::on_mutate)).
    pub fn mutate<F, Fut>(id: &str, handler: F) -> Admission<K>
    where
        F: Fn(Review<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResult> + Send + 'static,
    {
        Admission {
            spec: AdmissionSpec::new(id, true, handler),
            _kind: std::marker::PhantomData,
        }
    }
}

impl<K> Admission<K> {
    /// Registers the handler for these operations only (default: create, update, delete).
    pub fn operations(mut self, operations: impl IntoIterator<Item = Operation>) -> Self {
        self.spec.operations = operations.into_iter().collect();
        self
    }

    /// Registers the handler for writes of this subresource (`status`, `scale`) instead of
    /// the resource itself.
    ///
    /// ```
    /// use k8s_openapi::api::apps::v1::Deployment;
    /// use kopr::admission::Admission;
    /// use kopr::{AdmissionResult, Denial, Resource, Review};
    ///
    /// async fn at_most_ten(review: Review<Deployment>) -> AdmissionResult {
    ///     let replicas = review.body()["spec"]["replicas"].as_i64().unwrap_or(0);
    ///     if replicas > 10 { Err(Denial::new("at most 10 replicas")) } else { Ok(()) }
    /// }
    ///
    /// let deployments = Resource::<Deployment>::new()
    ///     .admission(Admission::validate("scale-limit", at_most_ten).subresource("scale"));
    /// ```
    pub fn subresource(mut self, subresource: &str) -> Self {
        self.spec.subresource = Some(subresource.to_string());
        self
    }

    pub(crate) fn into_spec(self) -> AdmissionSpec {
        self.spec
    }
}

impl<K> Filtered for Admission<K> {
    fn filters_mut(&mut self) -> &mut Filters {
        &mut self.spec.filters
    }
}

impl std::fmt::Debug for AdmissionSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AdmissionSpec")
            .field("id", &self.id)
            .field("mutating", &self.mutating)
            .finish_non_exhaustive()
    }
}

fn parsed<K: DeserializeOwned>(value: &Value) -> Option<K> {
    // Deserializing from a borrowed value copies only what the type keeps.
    (!value.is_null())
        .then(|| K::deserialize(value).ok())
        .flatten()
}

impl AdmissionSpec {
    /// Erases `handler` into a spec.
    pub(crate) fn new<K, F, Fut>(id: &str, mutating: bool, handler: F) -> AdmissionSpec
    where
        K: DeserializeOwned + Send + 'static,
        F: Fn(Review<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = AdmissionResult> + Send + 'static,
    {
        let handler = Arc::new(handler);
        let call: AdmitFn = Arc::new(move |incoming: Incoming| {
            let handler = handler.clone();
            Box::pin(async move {
                let request = incoming.request;
                let text = |key: &str| request[key].as_str().unwrap_or_default().to_string();
                let warnings = Arc::new(Mutex::new(Vec::new()));
                let patch = Patch::new();
                let review = Review {
                    operation: Operation::parse(request["operation"].as_str().unwrap_or(""))
                        .unwrap_or(Operation::Update),
                    object: parsed(&request["object"]),
                    old: parsed(&request["oldObject"]),
                    name: text("name"),
                    namespace: request["namespace"].as_str().map(str::to_string),
                    subresource: request["subResource"].as_str().map(str::to_string),
                    username: request["userInfo"]["username"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    groups: strings(&request["userInfo"]["groups"]),
                    dry_run: request["dryRun"].as_bool().unwrap_or(false),
                    body: request["object"].clone(),
                    old_body: request["oldObject"].clone(),
                    patch: patch.clone(),
                    warnings: warnings.clone(),
                };
                let result = handler(review).await;
                let warnings = warnings.lock().map(|w| w.clone()).unwrap_or_default();
                let unserializable = patch.error().map(|error| {
                    Denial::new(format!(
                        "the admission patch could not be serialized: {error}"
                    ))
                    .code(500)
                });
                Verdict {
                    denial: result.err().or(unserializable),
                    patch: patch.to_value(),
                    warnings,
                }
            })
        });
        AdmissionSpec {
            id: id.to_string(),
            mutating,
            call,
            operations: vec![Operation::Create, Operation::Update, Operation::Delete],
            subresource: None,
            filters: Filters::default(),
        }
    }
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}
