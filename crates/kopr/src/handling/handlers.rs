//! Handler registration: what runs, on which cause, with which id, filters and retry limits.
//!
//! The public builders ([`Handler`], [`Timer`], [`Daemon`]) are typed by the resource; they are
//! erased into [`HandlerSpec`]s that the reactor runs without knowing the type.

use std::any::Any;
use std::future::Future;
use std::marker::PhantomData;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use serde::Serialize;
use serde_json::Value;

use crate::handling::context::{Context, RawContext};
use crate::handling::errors::HandlerError;
use crate::handling::filters::{Filtered, Filters};

/// What a cause handler's failures mean when they are neither permanent nor temporary
/// errors. Timers and daemons do not use it: they retry such errors after their backoff.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, ErrorsMode, Handler, HandlerResult};
///
/// async fn best_effort(ctx: Context<ConfigMap>) -> HandlerResult {
///     // A parse error here is logged, and the handler counts as done.
///     let _level: u8 = ctx.object.data.iter().flatten().count().to_string().parse()?;
///     Ok(())
/// }
///
/// let handler = Handler::new(best_effort).errors(ErrorsMode::Ignored);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ErrorsMode {
    /// Retry with the handler's backoff (the default).
    #[default]
    Temporary,
    /// Treat every failure as permanent.
    Permanent,
    /// Log the failure and consider the handler done.
    Ignored,
}

/// Retry limits of one handler, as set by [`Handler`]'s builder methods.
///
/// ```
/// let options = kopr::handlers::HandlerOptions::default();
/// assert_eq!(options.backoff, std::time::Duration::from_secs(60));
/// assert_eq!((options.retries, options.timeout), (None, None));
/// ```
#[derive(Debug, Clone)]
pub struct HandlerOptions {
    /// Give up after this many failed attempts.
    pub retries: Option<u32>,
    /// Give up when this much time has passed since the first attempt.
    pub timeout: Option<Duration>,
    /// The delay before retrying an ordinary error.
    pub backoff: Duration,
    /// How ordinary errors are treated.
    pub errors: ErrorsMode,
}

impl Default for HandlerOptions {
    fn default() -> Self {
        HandlerOptions {
            retries: None,
            timeout: None,
            backoff: Duration::from_secs(60),
            errors: ErrorsMode::Temporary,
        }
    }
}

/// The erased handler function: takes the context, returns the JSON result.
pub(crate) type HandlerFn =
    Arc<dyn Fn(RawContext) -> BoxFuture<'static, Result<Value, HandlerError>> + Send + Sync>;

/// When a change handler runs.
#[derive(Debug, Clone, PartialEq)]
pub enum Trigger {
    /// The object was created (or seen for the first time without a diff base).
    Create,
    /// The object's essence changed.
    Update,
    /// The object is being deleted; `optional` handlers add no finalizer.
    Delete {
        /// Whether the handler may be skipped when the object goes away without a finalizer.
        optional: bool,
    },
    /// The operator started and found the object; `deleted` also resumes objects being deleted.
    Resume {
        /// Also run for objects already marked for deletion.
        deleted: bool,
    },
    /// A field changed (on creation or update); path segments.
    Field(Vec<String>),
    /// Every raw watch event, with no persistence.
    Event,
    /// The resource's level-triggered reconcile ([`crate::reconcile`]).
    Reconcile,
}

/// An erased change or event handler.
#[derive(Clone)]
pub struct HandlerSpec {
    pub(crate) id: String,
    pub(crate) trigger: Trigger,
    pub(crate) filters: Filters,
    pub(crate) options: HandlerOptions,
    pub(crate) func: HandlerFn,
}

impl std::fmt::Debug for HandlerSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandlerSpec")
            .field("id", &self.id)
            .field("trigger", &self.trigger)
            .finish_non_exhaustive()
    }
}

/// Makes a handler function erased over the resource type.
fn erase<K, F, Fut, R>(func: F) -> HandlerFn
where
    K: Send + Sync + 'static,
    F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
    R: Serialize + Send + 'static,
{
    Arc::new(move |raw: RawContext| {
        let typed: Option<Arc<K>> = raw.typed.clone().downcast::<K>().ok();
        match typed {
            Some(object) => {
                let future = func(Context::from_raw(object, raw));
                Box::pin(async move {
                    let value = future.await?;
                    Ok(serde_json::to_value(value).unwrap_or(Value::Null))
                })
            }
            None => Box::pin(async {
                Err(HandlerError::permanent(
                    "the object does not have the handler's type",
                ))
            }),
        }
    })
}

/// Derives a handler id from the function's type name: its path without the crate, with `::`
/// turned into `.`; closures get their registration position appended.
pub(crate) fn default_id<F>(position: usize) -> String {
    let full = std::any::type_name::<F>();
    let path = full.split_once("::").map_or(full, |(_, rest)| rest);
    let mut id = path.replace("{{closure}}", "closure").replace("::", ".");
    if id.contains("closure") {
        id = format!("{id}{position}");
    }
    sanitize_id(&id)
}

/// The FNV-1a hash of `text`, which shortened ids and record names end with (stable across
/// versions: records on objects are found by it).
pub(crate) fn fnv1a(text: &str) -> u64 {
    use std::hash::Hasher;
    let mut hasher = fnv::FnvHasher::default();
    hasher.write(text.as_bytes());
    hasher.finish()
}

/// Makes `id` usable as the name part of an annotation key: at most 63 characters from
/// `[A-Za-z0-9._-]`, starting and ending with an alphanumeric character.
pub(crate) fn sanitize_id(id: &str) -> String {
    let cleaned: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '-'
            }
        })
        .collect();
    let trimmed = cleaned.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    if trimmed.len() <= 63 {
        return if trimmed.is_empty() {
            "handler".into()
        } else {
            trimmed.to_owned()
        };
    }
    // Keep the distinctive tail and make the cut unique with a hash of the whole id.
    let hash = fnv1a(id);
    let tail = &trimmed[trimmed.len() - 54..];
    let tail = tail.trim_start_matches(|c: char| !c.is_ascii_alphanumeric());
    format!("{:08x}-{tail}", hash as u32)
}

impl<K> Context<K> {
    /// Registers a subhandler of this cause handler, as Kopf's `@kopf.subhandler`: `handler`
    /// (a function or a [`Handler`](crate::Handler) with its retries, backoff and timeout)
    /// runs after this handler returns, within the same cause, with its own progress record
    /// under the id `<this handler's id>/<id>`. This handler is called again (and registers its
    /// subhandlers again) until they are all done, and is done itself once they all succeeded;
    /// one that fails for good fails it. Those that succeeded do not run again, across
    /// restarts too.
    ///
    /// Only cause handlers (create, update, resume, field, delete) and their subhandlers have
    /// subhandlers; elsewhere the call is ignored with a warning, as is a second subhandler
    /// with the same id.
    ///
    /// ```no_run
    /// # use kopr::{Context, HandlerResult};
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// async fn created(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     for key in ctx.object.data.iter().flatten().map(|(k, _)| k.clone()) {
    ///         let id = key.clone();
    ///         ctx.subhandler(&id, move |ctx: Context<ConfigMap>| {
    ///             let key = key.clone();
    ///             async move {
    ///                 tracing::info!("{key} of {}", ctx.name());
    ///                 Ok(())
    ///             }
    ///         });
    ///     }
    ///     Ok(())
    /// }
    /// ```
    pub fn subhandler<M>(&self, id: &str, handler: impl IntoHandler<K, M>)
    where
        K: Send + Sync + 'static,
    {
        let raw = self.raw();
        let Some(registered) = &raw.subhandlers else {
            tracing::warn!(handler = %raw.handler_id, subhandler = id, "subhandlers only run under cause handlers; ignored");
            return;
        };
        let mut spec = handler.into_handler().into_spec(Trigger::Event, 0);
        spec.id = format!("{}/{}", raw.handler_id, sanitize_id(id));
        let mut registered = registered.lock().unwrap_or_else(|p| p.into_inner());
        let taken = registered
            .iter()
            .filter_map(|s| s.downcast_ref::<HandlerSpec>())
            .any(|s| s.id == spec.id);
        if taken {
            tracing::warn!(subhandler = %spec.id, "a second subhandler with this id; ignored");
            return;
        }
        registered.push(Box::new(spec));
    }
}

/// The subhandlers a cause handler registered, in order.
pub(crate) fn registered(registered: &crate::handling::context::Registered) -> Vec<HandlerSpec> {
    let mut registered = registered.lock().unwrap_or_else(|p| p.into_inner());
    std::mem::take(&mut *registered)
        .into_iter()
        .filter_map(|spec| spec.downcast::<HandlerSpec>().ok().map(|spec| *spec))
        .collect()
}

/// A change handler under construction: the function, its id, limits and filters.
///
/// A bare async function can be registered as a handler; wrap it in a `Handler` to give it an
/// id, retry limits, a backoff, an [`ErrorsMode`] or filters ([`Filtered`]).
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::apps::v1::Deployment;
/// use kopr::{Context, Filtered, Handler, HandlerResult, Resource};
///
/// async fn scaled(ctx: Context<Deployment>) -> HandlerResult {
///     tracing::info!("replicas: {:?} -> {:?}", ctx.old_value(), ctx.new_value());
///     Ok(())
/// }
///
/// let deployments = Resource::<Deployment>::new().on_field(
///     "spec.replicas",
///     Handler::new(scaled)
///         .id("scaled")
///         .retries(3)
///         .backoff(Duration::from_secs(10))
///         .label_matches("team", "payments"),
/// );
/// ```
///
/// # Caveats
/// The id names the handler's progress record (`<name>.kopr.dev/<id>`) and result
/// (`status.<id>`) on every object. Renaming a function (or moving it to another module)
/// changes the derived id: progress recorded under the old id is then not found, so a cause
/// in flight starts over for that handler. Give handlers a fixed [`id`](Self::id) when that
/// matters.
pub struct Handler<K> {
    pub(crate) id: Option<String>,
    pub(crate) default_id: fn(usize) -> String,
    pub(crate) filters: Filters,
    pub(crate) options: HandlerOptions,
    pub(crate) func: HandlerFn,
    pub(crate) optional: bool,
    pub(crate) resume_deleted: bool,
    _resource: PhantomData<fn() -> K>,
}

impl<K: Send + Sync + 'static> Handler<K> {
    /// A handler running `func`, an async function taking a [`Context`] and returning a
    /// [`HandlerResult`](crate::HandlerResult) of anything serializable.
    pub fn new<F, Fut, R>(func: F) -> Self
    where
        F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
        R: Serialize + Send + 'static,
    {
        Handler {
            id: None,
            default_id: default_id::<F>,
            filters: Filters::default(),
            options: HandlerOptions::default(),
            func: erase(func),
            optional: false,
            resume_deleted: false,
            _resource: PhantomData,
        }
    }

    /// Overrides the id derived from the function's path. Characters other than
    /// `[A-Za-z0-9._-]` become `-`, and an id longer than 63 characters is shortened with a
    /// hash, so that it fits an annotation name.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// Gives up after `retries` failed attempts: the handler is then marked failed, as after
    /// a permanent error. Every failure counts, temporary errors included.
    pub fn retries(mut self, retries: u32) -> Self {
        self.options.retries = Some(retries);
        self
    }

    /// Gives up when `timeout` has passed since the first attempt: an attempt still running
    /// then is cancelled, and a failure whose retry would start later than that marks the
    /// handler failed, as a permanent error does. Applies to cause handlers (and their
    /// subhandlers); timers and daemons are not bounded by it.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.options.timeout = Some(timeout);
        self
    }

    /// Waits `backoff` before retrying an ordinary error (default 60 s).
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.options.backoff = backoff;
        self
    }

    /// Chooses how ordinary errors are treated.
    pub fn errors(mut self, mode: ErrorsMode) -> Self {
        self.options.errors = mode;
        self
    }

    /// For delete handlers: do not add a finalizer for this handler; it runs only if the object
    /// is still seen while being deleted.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, Handler, HandlerResult, Resource};
    ///
    /// async fn forget(ctx: Context<ConfigMap>) -> HandlerResult {
    ///     tracing::info!("{} is going", ctx.name());
    ///     Ok(())
    /// }
    ///
    /// let config_maps = Resource::<ConfigMap>::new().on_delete(Handler::new(forget).optional());
    /// ```
    ///
    /// # Caveats
    /// Without a finalizer the object may be gone before kopr sees its deletion (or while the
    /// operator is down): the handler then does not run at all. It runs at most once, best
    /// effort.
    pub fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

    /// For resume handlers: also run for objects already being deleted.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use kopr::{Context, Handler, HandlerResult, Resource};
    /// async fn resumed(_: Context<ConfigMap>) -> HandlerResult { Ok(()) }
    /// let config_maps = Resource::<ConfigMap>::new().on_resume(Handler::new(resumed).deleted());
    /// ```
    pub fn deleted(mut self) -> Self {
        self.resume_deleted = true;
        self
    }

    pub(crate) fn into_spec(self, trigger: Trigger, position: usize) -> HandlerSpec {
        let trigger = match trigger {
            Trigger::Delete { .. } => Trigger::Delete {
                optional: self.optional,
            },
            Trigger::Resume { .. } => Trigger::Resume {
                deleted: self.resume_deleted,
            },
            other => other,
        };
        HandlerSpec {
            id: sanitize_id(&self.id.unwrap_or_else(|| (self.default_id)(position))),
            trigger,
            filters: self.filters,
            options: self.options,
            func: self.func,
        }
    }
}

impl<K> Filtered for Handler<K> {
    fn filters_mut(&mut self) -> &mut Filters {
        &mut self.filters
    }
}

/// Anything that can be registered as a handler: a [`Handler`] or a bare async function
/// (or closure) taking a [`Context`] and returning a
/// [`HandlerResult`](crate::HandlerResult) of anything serializable.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, Handler, HandlerResult, Resource};
///
/// async fn named(_: Context<ConfigMap>) -> HandlerResult<u32> {
///     Ok(42)
/// }
///
/// let config_maps = Resource::<ConfigMap>::new()
///     .on_create(named)
///     .on_update(Handler::new(named).id("named-on-update"))
///     .on_resume(|ctx: Context<ConfigMap>| async move {
///         tracing::info!("resumed {}", ctx.name());
///         Ok(())
///     });
/// ```
pub trait IntoHandler<K, Marker> {
    /// Converts into a handler.
    fn into_handler(self) -> Handler<K>;
}

/// Marker for [`IntoHandler`] implemented by functions.
pub struct FunctionMarker;
/// Marker for [`IntoHandler`] implemented by [`Handler`].
pub struct HandlerMarker;

impl<K> IntoHandler<K, HandlerMarker> for Handler<K> {
    fn into_handler(self) -> Handler<K> {
        self
    }
}

impl<K, F, Fut, R> IntoHandler<K, (FunctionMarker, R)> for F
where
    K: Send + Sync + 'static,
    F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
    R: Serialize + Send + 'static,
{
    fn into_handler(self) -> Handler<K> {
        Handler::new(self)
    }
}

/// A periodic handler: runs every `interval` for each matching object.
///
/// A timer starts for an object as soon as the object matches its filters (at once, or after
/// [`initial_delay`](Self::initial_delay)) and stops when the object is deleted, stops
/// matching, or the operator stops. Its `Ok` value is stored under `status.<id>` and its
/// [`patch`](crate::Context::patch) applied after each run.
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, Filtered, HandlerResult, Resource, Timer};
///
/// async fn check(ctx: Context<ConfigMap>) -> HandlerResult {
///     ctx.patch().status("checked", true);
///     Ok(())
/// }
///
/// let config_maps = Resource::<ConfigMap>::new().timer(
///     Timer::every(Duration::from_secs(60), check)
///         .id("check")
///         .idle(Duration::from_secs(30))
///         .sharp()
///         .annotation_matches("example.com/checked", kopr::Matcher::Present),
/// );
/// ```
///
/// # Guarantees
/// One run at a time per timer and object, on the newest body the operator has. While any
/// timer applies to an object, kopr keeps its finalizer on it, so the timer is stopped (and
/// awaited) before delete handlers run and the object goes.
///
/// # Caveats
/// - Runs are not persisted: after a restart, a timer starts again as for a new object.
/// - After a failure the next run waits the handler's [`backoff`](Self::backoff), which is
///   60 s unless set (not the interval); a [`HandlerError::temporary`](crate::HandlerError::temporary) waits
///   its own delay, and a [`HandlerError::permanent`](crate::HandlerError::permanent) a full interval. A
///   failed run does not stop the timer.
/// - When the timer stops, a run in progress sees [`Context::cancelled`] fire and has 5 s to
///   return before it is aborted.
pub struct Timer<K> {
    pub(crate) handler: Handler<K>,
    pub(crate) interval: Duration,
    pub(crate) idle: Option<Duration>,
    pub(crate) initial_delay: Option<Duration>,
    pub(crate) sharp: bool,
}

impl<K: Send + Sync + 'static> Timer<K> {
    /// Runs `func` every `interval`.
    pub fn every<F, Fut, R>(interval: Duration, func: F) -> Self
    where
        F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
        R: Serialize + Send + 'static,
    {
        Timer {
            handler: Handler::new(func),
            interval,
            idle: None,
            initial_delay: None,
            sharp: false,
        }
    }

    /// Overrides the derived id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.handler = self.handler.id(id);
        self
    }

    /// Runs only once the object has not changed for `idle`.
    pub fn idle(mut self, idle: Duration) -> Self {
        self.idle = Some(idle);
        self
    }

    /// Waits `delay` before the first run (by default the first run is immediate, then one
    /// interval between runs).
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = Some(delay);
        self
    }

    /// Keeps a fixed schedule (start-to-start) instead of waiting a full interval after each
    /// run finishes.
    pub fn sharp(mut self) -> Self {
        self.sharp = true;
        self
    }

    /// Waits `backoff` before the next run after an ordinary error (one neither temporary
    /// nor permanent). Without it that wait is the handlers' default backoff, 60 s, whatever
    /// the interval.
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.handler = self.handler.backoff(backoff);
        self
    }
}

impl<K> Filtered for Timer<K> {
    fn filters_mut(&mut self) -> &mut Filters {
        &mut self.handler.filters
    }
}

/// A long-running task per matching object.
///
/// The task gets [`Context::cancelled`] which fires when the object is deleted, stops matching,
/// or the operator stops. An `Err` return restarts it after the backoff; `Ok` ends it for good.
///
/// ```
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, Daemon, HandlerResult, Resource};
///
/// async fn follow(ctx: Context<ConfigMap>) -> HandlerResult {
///     let mut ticks = tokio::time::interval(Duration::from_secs(10));
///     loop {
///         tokio::select! {
///             () = ctx.cancelled() => return Ok(()),
///             _ = ticks.tick() => tracing::info!("{} is still here", ctx.name()),
///         }
///     }
/// }
///
/// let config_maps = Resource::<ConfigMap>::new().daemon(
///     Daemon::new(follow)
///         .initial_delay(Duration::from_secs(5))
///         .cancellation_timeout(Duration::from_secs(10)),
/// );
/// ```
///
/// # Guarantees
/// At most one instance per daemon and object. While any daemon applies to an object, kopr
/// keeps its finalizer on it: on deletion the daemon is cancelled and awaited (up to its
/// [`cancellation_timeout`](Self::cancellation_timeout)) before delete handlers run.
///
/// # Caveats
/// - The daemon sees the object as it was when it (re)started: `ctx.object` is not updated
///   while it runs. Read the current object through [`Context::client`] when it matters.
/// - A [`HandlerError::permanent`](crate::HandlerError::permanent) ends it for good, as `Ok` does; other errors
///   restart it after the backoff (5 s unless set), [`Context::retry`] counting restarts.
/// - A daemon that ignores cancellation is aborted after its cancellation timeout (at its
///   next `.await`).
pub struct Daemon<K> {
    pub(crate) handler: Handler<K>,
    pub(crate) initial_delay: Option<Duration>,
    pub(crate) cancellation_timeout: Duration,
}

impl<K: Send + Sync + 'static> Daemon<K> {
    /// A daemon running `func`.
    pub fn new<F, Fut, R>(func: F) -> Self
    where
        F: Fn(Context<K>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, HandlerError>> + Send + 'static,
        R: Serialize + Send + 'static,
    {
        Daemon {
            handler: Handler::new(func).backoff(Duration::from_secs(5)),
            initial_delay: None,
            cancellation_timeout: Duration::from_secs(30),
        }
    }

    /// Overrides the derived id.
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.handler = self.handler.id(id);
        self
    }

    /// Waits `delay` before starting.
    pub fn initial_delay(mut self, delay: Duration) -> Self {
        self.initial_delay = Some(delay);
        self
    }

    /// The delay before restarting after an error (default 5 s).
    pub fn backoff(mut self, backoff: Duration) -> Self {
        self.handler = self.handler.backoff(backoff);
        self
    }

    /// How long to wait for the daemon to exit after cancellation before abandoning it
    /// (default 30 s).
    pub fn cancellation_timeout(mut self, timeout: Duration) -> Self {
        self.cancellation_timeout = timeout;
        self
    }
}

impl<K> Filtered for Daemon<K> {
    fn filters_mut(&mut self) -> &mut Filters {
        &mut self.handler.filters
    }
}

/// An erased timer.
#[derive(Clone)]
pub(crate) struct TimerSpec {
    pub(crate) handler: HandlerSpec,
    pub(crate) interval: Duration,
    pub(crate) idle: Option<Duration>,
    pub(crate) initial_delay: Option<Duration>,
    pub(crate) sharp: bool,
}

/// An erased daemon.
#[derive(Clone)]
pub(crate) struct DaemonSpec {
    pub(crate) handler: HandlerSpec,
    pub(crate) initial_delay: Option<Duration>,
    pub(crate) cancellation_timeout: Duration,
}

/// Turns a JSON object into the typed value handlers receive, or explains why it cannot.
pub(crate) type ParseFn =
    Arc<dyn Fn(&Value) -> Result<Arc<dyn Any + Send + Sync>, String> + Send + Sync>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_annotation_safe() {
        assert_eq!(sanitize_id("handlers.create_fn"), "handlers.create_fn");
        assert_eq!(sanitize_id("a b/c"), "a-b-c");
        let long = "x".repeat(100);
        let id = sanitize_id(&long);
        assert!(id.len() <= 63, "{id}");
        assert_ne!(sanitize_id(&"y".repeat(100)), id);
        assert_eq!(sanitize_id("--"), "handler");
    }

    async fn sample(_: Context<Value>) -> Result<(), HandlerError> {
        Ok(())
    }

    #[test]
    fn default_ids_come_from_the_function_path() {
        let handler = Handler::<Value>::new(sample).into_spec(Trigger::Create, 0);
        assert_eq!(handler.id, "handling.handlers.tests.sample");
        let closure = Handler::<Value>::new(|_ctx: Context<Value>| async { Ok(()) })
            .into_spec(Trigger::Create, 3);
        assert!(closure.id.ends_with("closure3"), "{}", closure.id);
    }
}
