//! What a handler receives: the typed object, the cause, the diff, retry bookkeeping, a patch
//! builder, the client, shared operator state, and a span carrying the object's identity.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use jiff::Timestamp;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::handling::diff::Diff;
use crate::handling::errors::LookupError;
use crate::handling::patch::Patch;
use crate::runtime::events::{EventRecorder, EventType};

/// Why a handler runs.
///
/// ```
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, HandlerResult, Reason};
///
/// async fn created_or_resumed(ctx: Context<ConfigMap>) -> HandlerResult {
///     if ctx.reason() == Reason::Resume {
///         tracing::info!("the operator restarted; {} was already there", ctx.name());
///     }
///     Ok(())
/// }
/// assert_eq!(Reason::Create.to_string(), "create");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The object is new to the operator (no diff base yet).
    Create,
    /// The object's essence changed since it was last handled.
    Update,
    /// The object is being deleted.
    Delete,
    /// The operator (re)started and found the object.
    Resume,
    /// A timer fired.
    Timer,
    /// A daemon runs.
    Daemon,
    /// A raw watch event.
    Event,
    /// A level-triggered reconcile ([`crate::reconcile`]).
    Reconcile,
}

impl Reason {
    /// The lowercase name, as in logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Create => "create",
            Reason::Update => "update",
            Reason::Delete => "delete",
            Reason::Resume => "resume",
            Reason::Timer => "timer",
            Reason::Daemon => "daemon",
            Reason::Event => "event",
            Reason::Reconcile => "reconcile",
        }
    }
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Operator-wide shared state, looked up by type. Put a `Mutex` inside for mutable state.
///
/// Values are given with [`Operator::memo`](crate::Operator::memo) (one per type) and read
/// with [`Context::memo`] or [`Lifecycle::memo`](crate::Lifecycle::memo).
///
/// ```
/// use std::sync::Mutex;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, HandlerResult, Operator, Resource};
///
/// #[derive(Default)]
/// struct Seen(Mutex<u64>);
///
/// async fn count(ctx: Context<ConfigMap>) -> HandlerResult<u64> {
///     let seen = ctx.memo::<Seen>().expect("given to the operator");
///     let mut seen = seen.0.lock().unwrap();
///     *seen += 1;
///     Ok(*seen)
/// }
///
/// let operator = Operator::new()
///     .memo(Seen::default())
///     .resource(Resource::<ConfigMap>::new().on_create(count));
/// ```
#[derive(Clone, Default)]
pub struct Memo {
    values: Arc<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

impl Memo {
    pub(crate) fn insert<T: Send + Sync + 'static>(&mut self, value: T) {
        Arc::make_mut(&mut self.values).insert(TypeId::of::<T>(), Arc::new(value));
    }

    /// The value of type `T`, if the operator was given one.
    pub fn get<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.values
            .get(&TypeId::of::<T>())?
            .clone()
            .downcast::<T>()
            .ok()
    }
}

impl std::fmt::Debug for Memo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Memo({} values)", self.values.len())
    }
}

/// Where a running cause handler's subhandlers are registered: erased handler specs
/// ([`Context::subhandler`] is in `handlers`, which knows them).
pub(crate) type Registered = Arc<std::sync::Mutex<Vec<Box<dyn Any + Send + Sync>>>>;

/// The type-erased context the reactor builds for every handler call.
#[derive(Clone)]
pub(crate) struct RawContext {
    pub(crate) typed: Arc<dyn Any + Send + Sync>,
    pub(crate) body: Arc<Value>,
    pub(crate) reason: Reason,
    pub(crate) diff: Diff,
    pub(crate) old: Option<Value>,
    pub(crate) new: Option<Value>,
    pub(crate) handler_id: String,
    pub(crate) event_type: Option<&'static str>,
    pub(crate) retry: u32,
    pub(crate) started: Timestamp,
    pub(crate) patch: Patch,
    pub(crate) client: kube::Client,
    pub(crate) span: tracing::Span,
    pub(crate) cancel: CancellationToken,
    pub(crate) memo: Memo,
    pub(crate) events: EventRecorder,
    pub(crate) subhandlers: Option<Registered>,
}

/// Everything a handler gets about one call.
///
/// The typed object is [`object`](Self::object); the JSON body, the cause, the diff, the
/// retry count, a [`Patch`] to change the object, the client, shared state, indices, owned
/// children and Kubernetes Events are methods.
///
/// ```no_run
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::{Context, HandlerError, HandlerResult};
///
/// async fn handle(ctx: Context<ConfigMap>) -> HandlerResult<usize> {
///     let _span = ctx.span().enter(); // already entered by kopr; shown for completeness
///     let keys = ctx.object.data.as_ref().map_or(0, |d| d.len());
///     tracing::info!(
///         "{} {}/{} (uid {}), attempt {} for {:?}",
///         ctx.reason(),
///         ctx.namespace().unwrap_or_default(),
///         ctx.name(),
///         ctx.uid(),
///         ctx.retry() + 1,
///         ctx.runtime(),
///     );
///     if ctx.metadata()["labels"]["frozen"] == "yes" {
///         return Err(HandlerError::permanent("frozen"));
///     }
///     // Written at the end of the cycle, with kopr's own bookkeeping.
///     ctx.patch().status("keys", keys).label("seen", Some("yes"));
///     ctx.info("Counted", &format!("{keys} keys"));
///     Ok(keys)
/// }
/// ```
pub struct Context<K> {
    /// The object, deserialized into the handler's type.
    pub object: Arc<K>,
    raw: RawContext,
}

impl<K> Context<K> {
    pub(crate) fn from_raw(object: Arc<K>, raw: RawContext) -> Self {
        Context { object, raw }
    }

    /// The object as JSON.
    pub fn body(&self) -> &Value {
        &self.raw.body
    }

    /// `metadata` of the object.
    pub fn metadata(&self) -> &Value {
        self.raw.body.get("metadata").unwrap_or(&Value::Null)
    }

    /// `spec` of the object (`null` when absent).
    pub fn spec(&self) -> &Value {
        self.raw.body.get("spec").unwrap_or(&Value::Null)
    }

    /// `status` of the object (`null` when absent).
    pub fn status(&self) -> &Value {
        self.raw.body.get("status").unwrap_or(&Value::Null)
    }

    /// The object's name.
    pub fn name(&self) -> &str {
        self.metadata()
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// The object's namespace, for namespaced objects.
    pub fn namespace(&self) -> Option<&str> {
        self.metadata().get("namespace").and_then(Value::as_str)
    }

    /// The object's uid.
    pub fn uid(&self) -> &str {
        self.metadata()
            .get("uid")
            .and_then(Value::as_str)
            .unwrap_or_default()
    }

    /// Why the handler runs.
    pub fn reason(&self) -> Reason {
        self.raw.reason
    }

    /// What changed: relative to the handler's field for field handlers. Empty for resume,
    /// delete, timer, daemon and event handlers.
    ///
    /// ```no_run
    /// # async fn updated(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) {
    /// use kopr::DiffOp;
    /// for item in ctx.diff().iter().filter(|item| item.op == DiffOp::Remove) {
    ///     tracing::info!("removed {}", item.path.join("."));
    /// }
    /// # }
    /// ```
    pub fn diff(&self) -> &Diff {
        &self.raw.diff
    }

    /// The old value (of the field, or of the essence), on updates: Kopf's `old`.
    ///
    /// ```no_run
    /// # async fn updated(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) {
    /// tracing::info!("{:?} -> {:?}", ctx.old_value(), ctx.new_value());
    /// # }
    /// ```
    pub fn old_value(&self) -> Option<&Value> {
        self.raw.old.as_ref()
    }

    /// The new value (of the field, or of the essence): Kopf's `new`.
    pub fn new_value(&self) -> Option<&Value> {
        self.raw.new.as_ref()
    }

    /// The handler's id.
    pub fn handler_id(&self) -> &str {
        &self.raw.handler_id
    }

    /// For `on_event` handlers: the watch event type (`ADDED`, `MODIFIED` or `DELETED`).
    pub fn event_type(&self) -> Option<&str> {
        self.raw.event_type
    }

    /// How many attempts failed before this one (for daemons: how many restarts).
    pub fn retry(&self) -> u32 {
        self.raw.retry
    }

    /// When the first attempt for this cause started.
    pub fn started(&self) -> Timestamp {
        self.raw.started
    }

    /// Time since the first attempt started.
    pub fn runtime(&self) -> Duration {
        let elapsed = Timestamp::now().duration_since(self.raw.started);
        Duration::try_from(elapsed).unwrap_or_default()
    }

    /// The patch applied at the end of the cycle, together with kopr's own bookkeeping.
    ///
    /// ```no_run
    /// # async fn handler(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// ctx.patch()
    ///     .status("phase", "Ready")
    ///     .annotation("example.com/handled", Some("yes"))
    ///     .set("data.handled-by", "kopr");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Guarantees
    /// The patch is sent with the handler's outcome (its progress record and result), as at
    /// most one JSON merge patch for the object and one for its `/status` subresource, even
    /// when the handler fails; a failed write is sent again before the object is handled
    /// anew.
    ///
    /// # Caveats
    /// The handler's `ctx.object` does not show the patch: it is the body the cycle started
    /// with. A merge patch replaces lists as a whole.
    pub fn patch(&self) -> &Patch {
        &self.raw.patch
    }

    /// The Kubernetes client, for any other request.
    ///
    /// ```no_run
    /// # async fn handler(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// use k8s_openapi::api::core::v1::Secret;
    /// let secrets: kube::Api<Secret> =
    ///     kube::Api::namespaced(ctx.client().clone(), ctx.namespace().unwrap_or("default"));
    /// let _credentials = secrets.get_opt("credentials").await?;
    /// # Ok(())
    /// # }
    /// ```
    pub fn client(&self) -> &kube::Client {
        &self.raw.client
    }

    /// The tracing span carrying the object's identity (entered while the handler runs).
    pub fn span(&self) -> &tracing::Span {
        &self.raw.span
    }

    /// Resolves when the handler is to stop: the operator stops, and for timers and daemons
    /// also when the object is deleted or stops matching. Long handlers select on it to stop
    /// in time.
    ///
    /// ```no_run
    /// # async fn daemon(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// loop {
    ///     tokio::select! {
    ///         () = ctx.cancelled() => break,
    ///         () = tokio::time::sleep(std::time::Duration::from_secs(5)) => {}
    ///     }
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn cancelled(&self) {
        self.raw.cancel.cancelled().await;
    }

    /// Whether the handler is to stop (see [`Context::cancelled`]).
    ///
    /// ```no_run
    /// # async fn daemon(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// while !ctx.is_cancelled() {
    ///     // one step of work
    /// #   break;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_cancelled(&self) -> bool {
        self.raw.cancel.is_cancelled()
    }

    /// The token behind [`Context::cancelled`], for code that takes a
    /// [`CancellationToken`] (a child token for a task the handler spawns).
    ///
    /// ```no_run
    /// # async fn daemon(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// let stop = ctx.cancellation_token().child_token();
    /// tokio::spawn(async move { stop.cancelled().await });
    /// # Ok(())
    /// # }
    /// ```
    pub fn cancellation_token(&self) -> &CancellationToken {
        &self.raw.cancel
    }

    /// Shared operator state of type `T` (see [`Operator::memo`](crate::Operator::memo) and
    /// the example on [`Memo`]); `None` when the operator was given no value of that type.
    pub fn memo<T: Send + Sync + 'static>(&self) -> Option<Arc<T>> {
        self.raw.memo.get::<T>()
    }

    /// The index `name` (registered with [`Resource::index`](crate::Resource::index)) whose
    /// values are of type `V`.
    ///
    /// ```no_run
    /// # async fn handler(ctx: kopr::Context<k8s_openapi::api::core::v1::Node>) -> kopr::HandlerResult {
    /// // Registered as `Resource::<Pod>::new().index("pods-by-node", ...)` with String values.
    /// let pods = ctx.index::<String>("pods-by-node")?.get(ctx.name());
    /// tracing::info!("{} runs {} pods", ctx.name(), pods.len());
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`LookupError::UnknownIndex`] for a name no resource registered,
    /// [`LookupError::IndexType`] when its values are of another type.
    pub fn index<V: Send + Sync + 'static>(
        &self,
        name: &str,
    ) -> Result<Arc<crate::handling::index::Index<V>>, LookupError> {
        match self.raw.memo.get::<crate::handling::index::Indices>() {
            Some(indices) => indices.get::<V>(name),
            None => Err(LookupError::UnknownIndex {
                name: name.to_owned(),
                known: String::new(),
            }),
        }
    }

    /// The children of kind `C` that this object controls (a controller owner reference
    /// points at it), ordered by namespace and name, from the cache that
    /// [`Resource::owns`](crate::Resource::owns) keeps: no request is made.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::apps::v1::Deployment;
    /// # async fn reconcile(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// let ready: i32 = ctx
    ///     .owned::<Deployment>()?
    ///     .iter()
    ///     .filter_map(|d| d.status.as_ref()?.ready_replicas)
    ///     .sum();
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// [`LookupError::NotOwned`] when no resource of the operator owns `C`;
    /// [`LookupError::Undecodable`] naming a child that does not deserialize as `C`.
    pub fn owned<C>(&self) -> Result<Vec<C>, LookupError>
    where
        C: kube::Resource<DynamicType = ()> + serde::de::DeserializeOwned,
    {
        use crate::handling::children::{Children, owner_id_of};
        let api_resource = kube::api::ApiResource::erase::<C>(&());
        let not_owned = || LookupError::NotOwned {
            kind: api_resource.kind.clone(),
        };
        let children = self.raw.memo.get::<Children>().ok_or_else(not_owned)?;
        let cache = children.get(&api_resource).ok_or_else(not_owned)?;
        let Some(owner) = owner_id_of(&self.raw.body) else {
            return Ok(Vec::new());
        };
        cache
            .owned_by(&owner)
            .into_iter()
            .map(|body| {
                C::deserialize(&body).map_err(|error| LookupError::Undecodable {
                    kind: api_resource.kind.clone(),
                    name: format!(
                        "{}/{}",
                        body.pointer("/metadata/namespace")
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default(),
                        body.pointer("/metadata/name")
                            .and_then(serde_json::Value::as_str)
                            .unwrap_or_default()
                    ),
                    type_name: std::any::type_name::<C>(),
                    message: error.to_string(),
                })
            })
            .collect()
    }

    /// Applies `child` as a child of this object with server-side apply, forcing ownership of
    /// its fields: a controller owner reference, the object's labels and (for a namespaced
    /// child) its namespace are added as [`kopr::adopt`](fn@crate::adopt) does, and the apply is
    /// made under the operator's field manager ([`Identity::field_manager`](crate::Identity::field_manager)).
    /// Fields the operator applied before and leaves out now are removed; a field someone
    /// changed by hand is put back. So drift repair is "apply again".
    ///
    /// [`Applied::changed`](crate::children::Applied) says whether anything changed. It
    /// compares with the child as cached for an owned kind, otherwise as read before the apply
    /// (one more request).
    ///
    /// # Errors
    /// [`ApplyError`](crate::children::ApplyError) when the child has no name, cannot be
    /// adopted (another controller owns it), or the server refuses it.
    ///
    /// ```no_run
    /// # use k8s_openapi::api::core::v1::ConfigMap;
    /// # async fn reconcile(ctx: kopr::Context<ConfigMap>) -> kopr::HandlerResult<()> {
    /// let child = ConfigMap {
    ///     metadata: kube::api::ObjectMeta { name: Some("settings".into()), ..Default::default() },
    ///     data: Some([("level".to_owned(), "debug".to_owned())].into()),
    ///     ..Default::default()
    /// };
    /// if ctx.apply(&child).await?.changed {
    ///     ctx.info("ChildUpdated", "settings applied");
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub async fn apply<C>(
        &self,
        child: &C,
    ) -> Result<crate::children::Applied<C>, crate::children::ApplyError>
    where
        C: kube::Resource<DynamicType = ()> + serde::Serialize + serde::de::DeserializeOwned,
        C::Scope: 'static,
    {
        self.apply_with(child, crate::children::ApplyOptions::default())
            .await
    }

    /// [`apply`](Self::apply) with options (say, without forcing).
    ///
    /// # Errors
    /// As [`apply`](Self::apply); without `force`, also a conflict (409) when another manager
    /// owns a field the child sets.
    pub async fn apply_with<C>(
        &self,
        child: &C,
        options: crate::children::ApplyOptions,
    ) -> Result<crate::children::Applied<C>, crate::children::ApplyError>
    where
        C: kube::Resource<DynamicType = ()> + serde::Serialize + serde::de::DeserializeOwned,
        C::Scope: 'static,
    {
        let api_resource = kube::api::ApiResource::erase::<C>(&());
        let namespaced =
            TypeId::of::<C::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        let value = serde_json::to_value(child)?;
        let applied = self
            .apply_value(value, &api_resource, namespaced, options)
            .await?;
        Ok(crate::children::Applied {
            object: C::deserialize(applied.object)?,
            changed: applied.changed,
            created: applied.created,
        })
    }

    /// [`apply_with`](Self::apply_with) for a child known only at run time: its API resource
    /// and whether it is namespaced.
    ///
    /// # Errors
    /// As [`apply_with`](Self::apply_with).
    pub async fn apply_dynamic(
        &self,
        child: &kube::api::DynamicObject,
        api_resource: &kube::api::ApiResource,
        namespaced: bool,
        options: crate::children::ApplyOptions,
    ) -> Result<crate::children::Applied<kube::api::DynamicObject>, crate::children::ApplyError>
    {
        let value = serde_json::to_value(child)?;
        let applied = self
            .apply_value(value, api_resource, namespaced, options)
            .await?;
        Ok(crate::children::Applied {
            object: serde_json::from_value(applied.object)?,
            changed: applied.changed,
            created: applied.created,
        })
    }

    async fn apply_value(
        &self,
        child: Value,
        api_resource: &kube::api::ApiResource,
        namespaced: bool,
        options: crate::children::ApplyOptions,
    ) -> Result<crate::children::Applied<Value>, crate::children::ApplyError> {
        let children = self.raw.memo.get::<crate::handling::children::Children>();
        crate::handling::children::apply_value(
            &self.raw.client,
            children.as_deref(),
            &self.raw.body,
            child,
            api_resource,
            namespaced,
            options,
        )
        .await
    }

    pub(crate) fn raw(&self) -> &RawContext {
        &self.raw
    }

    /// Posts a Normal event about the object (in the background).
    ///
    /// ```no_run
    /// # async fn handler(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>) -> kopr::HandlerResult {
    /// ctx.info("Provisioned", "the bucket is ready");
    /// if let Err(error) = "x".parse::<u8>() {
    ///     ctx.exception("BadSetting", &error);
    /// }
    /// ctx.warn("Deprecated", "spec.size is deprecated; use spec.capacity");
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Caveats
    /// Events are best effort: queued and posted in the background (dropped when 4,096 wait
    /// already), with messages cut to 1,024 bytes.
    pub fn info(&self, reason: &str, message: &str) {
        self.raw
            .events
            .post(&self.raw.body, EventType::Normal, reason, message);
    }

    /// Posts a Warning event about the object.
    pub fn warn(&self, reason: &str, message: &str) {
        self.raw
            .events
            .post(&self.raw.body, EventType::Warning, reason, message);
    }

    /// Posts a Warning event describing `error`.
    pub fn exception(&self, reason: &str, error: &dyn std::fmt::Display) {
        self.raw.events.post(
            &self.raw.body,
            EventType::Warning,
            reason,
            &error.to_string(),
        );
    }
}
