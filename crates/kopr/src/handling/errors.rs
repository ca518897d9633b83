//! Errors: what handlers return to steer retries, and what the framework itself reports.
//!
//! A handler returns a [`HandlerResult`]; its error side decides what happens next:
//!
//! | returned | cause handlers | reconcile | timers | daemons |
//! |---|---|---|---|---|
//! | `Ok` | done | [`Action`](crate::reconcile::Action) decides | next run after the interval | ends for good |
//! | [`HandlerError::temporary`] | retried after its delay | retried after its delay | next run after its delay | restarted after its delay |
//! | [`HandlerError::permanent`] | failed, not retried for this cause | waits for the next change | next run after the interval | ends for good |
//! | any other error | per the handler's [`ErrorsMode`](crate::ErrorsMode): retried after its backoff (60 s) by default | retried with a per-object backoff (0.5 s doubling) | next run after the handler's backoff (60 s) | restarted after the backoff (5 s) |
//!
//! Retries of cause handlers are bounded by [`Handler::retries`](crate::Handler::retries)
//! and [`Handler::timeout`](crate::Handler::timeout); their progress is kept on the object,
//! so a delay outlives a restart.
//!
//! ```
//! use std::time::Duration;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use kopr::{Context, HandlerError, HandlerResult};
//!
//! async fn handler(ctx: Context<ConfigMap>) -> HandlerResult {
//!     let data = ctx.object.data.clone().unwrap_or_default();
//!     // A parse error is an ordinary error: retried after the handler's backoff.
//!     let replicas: u32 = data.get("replicas").map_or("1", String::as_str).parse()?;
//!     if replicas > 10 {
//!         return Err(HandlerError::permanent("at most 10 replicas"));
//!     }
//!     if !data.contains_key("ready") {
//!         return Err(HandlerError::temporary("not ready yet", Duration::from_secs(5)));
//!     }
//!     Ok(())
//! }
//! ```

use std::time::Duration;

/// The error side of a handler's result.
///
/// Any `std::error::Error` converts into it with `?` (an ordinary error: retried per the
/// handler's [`ErrorsMode`](crate::ErrorsMode)); [`HandlerError::permanent`] and
/// [`HandlerError::temporary`] say that a failure is final or when to try again. Like
/// `anyhow::Error`, this type deliberately does not implement `std::error::Error` itself, so
/// that the blanket conversion can exist.
///
/// ```
/// use std::time::Duration;
/// use kopr::HandlerError;
///
/// let parsed: Result<u32, HandlerError> = "x".parse::<u32>().map_err(HandlerError::from);
/// assert!(matches!(parsed, Err(HandlerError::Other(_))));
///
/// let later = HandlerError::temporary("busy", Duration::from_secs(5));
/// assert_eq!(later.to_string(), "busy");
/// let never = HandlerError::permanent("invalid spec");
/// assert!(matches!(never, HandlerError::Permanent(_)));
/// let other = HandlerError::message("the bucket API said no");
/// assert!(matches!(other, HandlerError::Other(_)));
/// ```
#[derive(Debug)]
pub enum HandlerError {
    /// Do not retry.
    Permanent(String),
    /// Retry after the given delay.
    Temporary(String, Duration),
    /// Any other error: retried with the handler's backoff (or per its errors mode).
    Other(Box<dyn std::error::Error + Send + Sync>),
}

impl HandlerError {
    /// A permanent failure with this message.
    pub fn permanent(message: impl Into<String>) -> Self {
        HandlerError::Permanent(message.into())
    }

    /// A temporary failure retried after `delay`.
    pub fn temporary(message: impl Into<String>, delay: Duration) -> Self {
        HandlerError::Temporary(message.into(), delay)
    }

    /// An arbitrary failure given as a message.
    pub fn message(message: impl Into<String>) -> Self {
        HandlerError::Other(message.into().into())
    }

    /// The human-readable message of the failure; a Kubernetes 403 gets a
    /// hint naming the RBAC rule the operator lacks (see [`rbac_hint`]).
    pub fn to_message(&self) -> String {
        let text = match self {
            HandlerError::Permanent(m) | HandlerError::Temporary(m, _) => m.clone(),
            HandlerError::Other(e) => e.to_string(),
        };
        match rbac_hint(&text) {
            Some(hint) => format!("{text} ({hint})"),
            None => text,
        }
    }
}

impl std::fmt::Display for HandlerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.to_message())
    }
}

impl<E: std::error::Error + Send + Sync + 'static> From<E> for HandlerError {
    fn from(error: E) -> Self {
        HandlerError::Other(Box::new(error))
    }
}

/// A hint for an error text holding kube-apiserver's RBAC denial (`User
/// "…" cannot list resource "secrets" in API group "" …`): the rule the
/// operator's ClusterRole lacks, and where kopr's [`Manifests`] takes it.
///
/// ```
/// let denied = r#"secrets is forbidden: User "system:serviceaccount:op:op" cannot list resource "secrets" in API group "" in the namespace "team""#;
/// assert_eq!(
///     kopr::errors::rbac_hint(denied).as_deref(),
///     Some(r#"hint: the operator's RBAC lacks {apiGroups: [""], resources: ["secrets"], verbs: ["list"]}; declare the kind in its Manifests (reads::<K>() or child::<K>())"#)
/// );
/// assert_eq!(kopr::errors::rbac_hint("connection refused"), None);
/// ```
///
/// [`Manifests`]: crate::manifests::Manifests
pub fn rbac_hint(text: &str) -> Option<String> {
    let rest = &text[text.find("\" cannot ")? + "\" cannot ".len()..];
    let (verb, rest) = rest.split_once(" resource \"")?;
    let (resource, rest) = rest.split_once('"')?;
    let rest = rest.strip_prefix(" in API group \"")?;
    let (group, _) = rest.split_once('"')?;
    if verb.contains(' ') {
        return None;
    }
    Some(format!(
        "hint: the operator's RBAC lacks {{apiGroups: [{group:?}], resources: [{resource:?}], verbs: [{verb:?}]}}; declare the kind in its Manifests (reads::<K>() or child::<K>())"
    ))
}

/// What handlers return: a value stored in `status.<handler-id>` (unless it serializes to
/// `null`, as `()` does), or a [`HandlerError`].
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, HandlerResult};
///
/// #[derive(serde::Serialize)]
/// struct Summary {
///     keys: usize,
/// }
///
/// // Stored as `status.<id>: {keys: N}`.
/// async fn summarize(ctx: Context<ConfigMap>) -> HandlerResult<Summary> {
///     Ok(Summary { keys: ctx.object.data.as_ref().map_or(0, |d| d.len()) })
/// }
/// ```
pub type HandlerResult<T = ()> = Result<T, HandlerError>;

/// Errors of the framework itself: configuration mistakes and API failures, as
/// [`Operator::run_until`](crate::Operator::run_until), the [`testing`](crate::testing) kit
/// and the kits return them.
///
/// ```no_run
/// # async fn run(operator: kopr::Operator, client: kube::Client) {
/// match operator.run_until(client, kopr::cli::shutdown_signal()).await {
///     Ok(()) => {}
///     // Another replica may hold the objects now: exit, and start again as a candidate.
///     Err(kopr::Error::LeadershipLost(_)) => std::process::exit(1),
///     Err(error) => eprintln!("{}", kopr::errors::chain(&error)),
/// }
/// # }
/// ```
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The Kubernetes API answered with an error or could not be reached.
    #[error("kubernetes API: {0}")]
    Kube(Box<kube::Error>),
    /// The operator was configured inconsistently (duplicate handler ids, bad patterns...).
    #[error("configuration: {0}")]
    Config(String),
    /// A resource could not be found through discovery.
    #[error("resource {0} is not served by the API server")]
    UnknownResource(String),
    /// A startup handler failed permanently.
    #[error("startup handler {id} failed: {message}")]
    Startup {
        /// The handler's id.
        id: String,
        /// Its failure.
        message: String,
    },
    /// Reading the client configuration failed.
    #[error("client configuration: {0}")]
    ClientConfig(String),
    /// Serializing or deserializing failed.
    #[error("serialization: {0}")]
    Json(#[from] serde_json::Error),
    /// Input or output failed.
    #[error("I/O: {0}")]
    Io(#[from] std::io::Error),
    /// This replica could not renew its Lease in time and stopped handling (the process
    /// should exit and start again as a candidate).
    #[error("{0} lost its Lease (leader election or shard membership) and stopped handling")]
    LeadershipLost(String),
}

/// An error with its causes, `outer: inner: innermost`, as one line (kube's connection errors
/// say only `client error (Connect)` at the top).
///
/// ```
/// let io = std::io::Error::other("connection refused");
/// let error = kopr::Error::from(io);
/// assert_eq!(kopr::errors::chain(&error), "I/O: connection refused");
/// ```
pub fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let more = cause.to_string();
        if !text.contains(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        source = cause.source();
    }
    text
}

impl From<kube::Error> for Error {
    fn from(error: kube::Error) -> Self {
        Error::Kube(Box::new(error))
    }
}

/// What [`Context::index`](crate::Context::index) and [`Context::owned`](crate::Context::owned)
/// answer when they cannot give what was asked: a mistake in the operator, said plainly rather
/// than an empty result. Converts into a [`HandlerError`] with `?`.
///
/// ```
/// let error = kopr::LookupError::NotOwned { kind: "ConfigMap".into() };
/// assert_eq!(
///     error.to_string(),
///     "ConfigMap is not owned by this operator's resources: declare it with Resource::owns"
/// );
/// ```
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LookupError {
    /// No index has this name.
    #[error("no index is named {name:?} (the operator's indices: {known})")]
    UnknownIndex {
        /// The name asked for.
        name: String,
        /// The names registered, comma-separated.
        known: String,
    },
    /// The index holds values of another type.
    #[error("the index {name:?} holds values of type {actual}, not {asked}")]
    IndexType {
        /// The index's name.
        name: String,
        /// Its value type.
        actual: &'static str,
        /// The type asked for.
        asked: &'static str,
    },
    /// No resource of the operator owns this kind, so no cache of it is kept.
    #[error("{kind} is not owned by this operator's resources: declare it with Resource::owns")]
    NotOwned {
        /// The kind asked for.
        kind: String,
    },
    /// An owned child does not deserialize as the type asked for.
    #[error("the owned {kind} {name} cannot be read as {type_name}: {message}")]
    Undecodable {
        /// Its kind.
        kind: String,
        /// Its `namespace/name`.
        name: String,
        /// The Rust type asked for.
        type_name: &'static str,
        /// serde's message.
        message: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classify(result: Result<(), HandlerError>) -> HandlerError {
        match result {
            Err(e) => e,
            Ok(()) => HandlerError::message("ok"),
        }
    }

    #[test]
    fn question_mark_keeps_the_kind_of_failure() {
        let permanent = classify((|| {
            Err(HandlerError::permanent("bad spec"))?;
            Ok(())
        })());
        assert!(matches!(permanent, HandlerError::Permanent(m) if m == "bad spec"));
        let temporary = classify((|| {
            Err(HandlerError::temporary("later", Duration::from_secs(3)))?;
            Ok(())
        })());
        assert!(
            matches!(temporary, HandlerError::Temporary(m, d) if m == "later" && d == Duration::from_secs(3))
        );
        let other = classify((|| {
            "x".parse::<u32>()?;
            Ok(())
        })());
        assert!(matches!(other, HandlerError::Other(_)));
        assert_eq!(other.to_message(), "invalid digit found in string");
    }
}
