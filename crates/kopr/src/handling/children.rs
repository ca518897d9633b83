//! Owned children: the shared cache of the children a resource [owns](crate::Resource::owns)
//! (objects whose controller owner reference points at one of its objects), read by
//! [`Context::owned`](crate::Context::owned), and server-side apply of a desired child
//! ([`Context::apply`](crate::Context::apply)).
//!
//! One cache per child kind serves every owner kind, fed by one watch of that kind (the
//! reactor's). Only children whose controller is an object of an owner kind are kept, each as
//! compact JSON text (without `managedFields` and kubectl's last-applied annotation) with its
//! identity, resourceVersion and owner: a few hundred bytes for a ConfigMap, not the several
//! KiB of a parsed object. Reads parse the owner's children when asked.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kube::api::ApiResource;
use serde_json::Value;

use crate::kits::adopt::{AdoptError, AdoptOptions, Owner, adopt_value};

/// kubectl's copy of the last applied manifest: as large as the object, and of no use to a
/// reconcile.
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// A child's identity: its namespace (if namespaced) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct ChildId {
    pub(crate) namespace: Option<Arc<str>>,
    pub(crate) name: Arc<str>,
}

impl ChildId {
    pub(crate) fn of(body: &Value) -> Option<ChildId> {
        let meta = body.get("metadata")?;
        Some(ChildId {
            namespace: meta
                .get("namespace")
                .and_then(Value::as_str)
                .filter(|ns| !ns.is_empty())
                .map(Arc::from),
            name: Arc::from(meta.get("name")?.as_str()?),
        })
    }
}

/// An owner's identity: its kind (`group/Kind`), namespace (if namespaced) and name.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct OwnerId {
    pub(crate) kind: Arc<str>,
    pub(crate) namespace: Option<Arc<str>>,
    pub(crate) name: Arc<str>,
}

/// The `group/Kind` naming an owner kind, from an `apiVersion` and a kind.
pub(crate) fn group_kind(api_version: &str, kind: &str) -> String {
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    format!("{group}/{kind}")
}

/// One cached child.
struct Child {
    uid: Uid,
    resource_version: Option<u64>,
    owner: OwnerId,
    /// The body without what the entry and the cache hold (identity, version, kind).
    text: Box<str>,
}

/// A uid: 16 bytes when it is a UUID (as servers make them), else its text.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Uid {
    Uuid(u128),
    Text(Box<str>),
}

impl Uid {
    fn of(text: &str) -> Uid {
        let hex: String = text.chars().filter(|c| *c != '-').collect();
        let canonical = text.len() == 36 && hex.len() == 32;
        match u128::from_str_radix(&hex, 16) {
            Ok(value) if canonical && Uid::Uuid(value).to_string() == text => Uid::Uuid(value),
            _ => Uid::Text(Box::from(text)),
        }
    }
}

impl std::fmt::Display for Uid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Uid::Uuid(value) => {
                let hex = format!("{value:032x}");
                write!(
                    f,
                    "{}-{}-{}-{}-{}",
                    &hex[..8],
                    &hex[8..12],
                    &hex[12..16],
                    &hex[16..20],
                    &hex[20..]
                )
            }
            Uid::Text(text) => f.write_str(text),
        }
    }
}

/// An owner kind whose children are kept.
struct OwnerKind {
    kind: Arc<str>,
    namespaced: bool,
}

#[derive(Default)]
struct State {
    /// The kind's `apiVersion` and `kind`, as its children say (left out of their text).
    type_meta: Option<(Box<str>, Box<str>)>,
    /// Namespaces, shared by every identity that names them.
    namespaces: HashSet<Arc<str>>,
    owner_kinds: Vec<OwnerKind>,
    children: HashMap<ChildId, Child>,
    by_owner: HashMap<OwnerId, BTreeSet<ChildId>>,
    /// Children being applied, with the owners their watch events would have triggered
    /// meanwhile (and those events' resourceVersions).
    applying: HashMap<ChildId, Applying>,
}

#[derive(Default)]
struct Applying {
    count: u32,
    held: Vec<(Option<u64>, Vec<OwnerId>)>,
}

/// Triggers the reconciles of owners (installed by the reactor).
pub(crate) type TriggerFn = Box<dyn Fn(&[OwnerId]) + Send + Sync>;

/// The cached children of one kind, by owner.
pub(crate) struct ChildCache {
    state: RwLock<State>,
    trigger: std::sync::OnceLock<TriggerFn>,
}

impl ChildCache {
    pub(crate) fn new() -> ChildCache {
        ChildCache {
            state: RwLock::new(State::default()),
            trigger: std::sync::OnceLock::new(),
        }
    }

    /// Sets how owners' reconciles are triggered by what [`end_apply`](Self::end_apply)
    /// releases.
    pub(crate) fn on_trigger(&self, trigger: TriggerFn) {
        let _ = self.trigger.set(trigger);
    }

    /// An apply of child `id` starts: until it ends, the child's watch events trigger no one.
    /// Returns the child as cached before.
    pub(crate) fn begin_apply(&self, id: &ChildId) -> Option<Value> {
        let mut state = self.write();
        state.applying.entry(id.clone()).or_default().count += 1;
        let child = state.children.get(id)?;
        unpack(&state, id, child)
    }

    /// An apply of child `id` ended with `written` (the server's answer), or failed: takes the
    /// answer in, and triggers what the watch events that came meanwhile would have, except
    /// the event of this very write.
    pub(crate) fn end_apply(&self, id: &ChildId, written: Option<&Value>) {
        let released: Vec<OwnerId> = {
            let mut state = self.write();
            if let Some(written) = written {
                take_in(&mut state, written);
            }
            let Some(applying) = state.applying.get_mut(id) else {
                return;
            };
            applying.count = applying.count.saturating_sub(1);
            if applying.count > 0 {
                return;
            }
            let held = state
                .applying
                .remove(id)
                .map(|a| a.held)
                .unwrap_or_default();
            let ours = written.and_then(resource_version);
            let mut owners: Vec<OwnerId> = Vec::new();
            for (version, triggered) in held {
                if version.is_none() || version != ours {
                    owners.extend(triggered);
                }
            }
            owners.sort();
            owners.dedup();
            owners
        };
        if let Some(trigger) = self.trigger.get()
            && !released.is_empty()
        {
            trigger(&released);
        }
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, State> {
        self.state.read().unwrap_or_else(|p| p.into_inner())
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, State> {
        self.state.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Keeps the children of `kind` (`group/Kind`) from now on; `false` when it already was.
    pub(crate) fn add_owner_kind(&self, kind: &str, namespaced: bool) -> bool {
        let mut state = self.write();
        if state.owner_kinds.iter().any(|k| &*k.kind == kind) {
            return false;
        }
        state.owner_kinds.push(OwnerKind {
            kind: Arc::from(kind),
            namespaced,
        });
        true
    }

    /// How many children are kept.
    pub(crate) fn len(&self) -> usize {
        self.read().children.len()
    }

    /// Takes in a child as a watch event shows it. Returns the owners whose children changed
    /// (the old and the new controller), or nothing when the body is not newer than the one
    /// kept, or while the child is being applied (those owners wait for the apply's end).
    pub(crate) fn observe(&self, body: &Value) -> Vec<OwnerId> {
        let mut state = self.write();
        let owners = take_in(&mut state, body);
        if let Some(applying) = ChildId::of(body).and_then(|id| state.applying.get_mut(&id)) {
            applying.held.push((resource_version(body), owners));
            return Vec::new();
        }
        owners
    }

    /// Forgets a deleted child; returns its owner.
    pub(crate) fn forget(&self, body: &Value) -> Vec<OwnerId> {
        let Some(id) = ChildId::of(body) else {
            return Vec::new();
        };
        let mut state = self.write();
        let cached = remove(&mut state, &id);
        let owner = cached.or_else(|| controller(&state, body, id.namespace.as_ref()));
        owner.into_iter().collect()
    }

    /// After a relist: forgets the children in scope that the listing did not return, and
    /// returns their owners.
    pub(crate) fn forget_unlisted(
        &self,
        listed: &HashSet<ChildId>,
        in_scope: impl Fn(&ChildId) -> bool,
    ) -> Vec<OwnerId> {
        let mut state = self.write();
        let gone: Vec<ChildId> = state
            .children
            .keys()
            .filter(|id| in_scope(id) && !listed.contains(*id))
            .cloned()
            .collect();
        gone.iter()
            .filter_map(|id| remove(&mut state, id))
            .collect()
    }

    /// The children of `owner`, as JSON, ordered by namespace and name.
    pub(crate) fn owned_by(&self, owner: &OwnerId) -> Vec<Value> {
        let state = self.read();
        let Some(ids) = state.by_owner.get(owner) else {
            return Vec::new();
        };
        ids.iter()
            .filter_map(|id| unpack(&state, id, state.children.get(id)?))
            .collect()
    }
}

/// Takes in a child; returns the owners whose children changed.
fn take_in(state: &mut State, body: &Value) -> Vec<OwnerId> {
    let Some(mut id) = ChildId::of(body) else {
        return Vec::new();
    };
    id.namespace = id.namespace.map(|ns| intern(state, ns));
    let owner = controller(state, body, id.namespace.as_ref());
    let version = resource_version(body);
    let uid = Uid::of(
        body.pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or_default(),
    );
    if let Some(kept) = state.children.get(&id)
        && kept.uid == uid
        && let (Some(new), Some(old)) = (version, kept.resource_version)
        && new <= old
    {
        return Vec::new();
    }
    if state.type_meta.is_none() {
        let field = |name: &str| body.get(name).and_then(Value::as_str).map(Box::from);
        state.type_meta = field("apiVersion").zip(field("kind"));
    }
    let mut owners = Vec::new();
    if let Some(old) = remove(state, &id) {
        owners.push(old);
    }
    if let Some(owner) = owner {
        // One copy of the owner's identity for all its children.
        let owner = match state.by_owner.get_key_value(&owner) {
            Some((kept, _)) => kept.clone(),
            None => owner,
        };
        state
            .by_owner
            .entry(owner.clone())
            .or_default()
            .insert(id.clone());
        state.children.insert(
            id,
            Child {
                uid,
                resource_version: version,
                owner: owner.clone(),
                text: pack(body),
            },
        );
        if !owners.contains(&owner) {
            owners.push(owner);
        }
    }
    owners
}

/// The shared copy of a namespace's name.
fn intern(state: &mut State, namespace: Arc<str>) -> Arc<str> {
    if let Some(kept) = state.namespaces.get(&namespace) {
        return kept.clone();
    }
    state.namespaces.insert(namespace.clone());
    namespace
}

/// Removes a child; returns the owner it had.
fn remove(state: &mut State, id: &ChildId) -> Option<OwnerId> {
    let child = state.children.remove(id)?;
    if let Some(ids) = state.by_owner.get_mut(&child.owner) {
        ids.remove(id);
        if ids.is_empty() {
            state.by_owner.remove(&child.owner);
        }
    }
    Some(child.owner)
}

/// The child's controller among the owner kinds, if any.
fn controller(state: &State, body: &Value, namespace: Option<&Arc<str>>) -> Option<OwnerId> {
    let references = body.pointer("/metadata/ownerReferences")?.as_array()?;
    let reference = references
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))?;
    let field = |name: &str| reference.get(name).and_then(Value::as_str);
    let kind = group_kind(field("apiVersion")?, field("kind")?);
    let owner_kind = state.owner_kinds.iter().find(|k| *k.kind == *kind)?;
    let namespace = match owner_kind.namespaced {
        true => Some(namespace?.clone()),
        false => None,
    };
    Some(OwnerId {
        kind: owner_kind.kind.clone(),
        namespace,
        name: Arc::from(field("name")?),
    })
}

/// The numeric resourceVersion, when the server uses numbers (etcd and kopr-apiserver do).
fn resource_version(body: &Value) -> Option<u64> {
    body.pointer("/metadata/resourceVersion")?
        .as_str()?
        .parse()
        .ok()
}

/// The child as kept: compact JSON without what no reconcile reads (`managedFields`,
/// kubectl's last-applied annotation) and without what the entry holds (apiVersion, kind,
/// name, namespace, uid, resourceVersion; [`unpack`] puts them back).
fn pack(body: &Value) -> Box<str> {
    let mut body = body.clone();
    if let Some(root) = body.as_object_mut() {
        root.remove("apiVersion");
        root.remove("kind");
    }
    if let Some(meta) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for key in [
            "managedFields",
            "name",
            "namespace",
            "uid",
            "resourceVersion",
        ] {
            meta.remove(key);
        }
        if let Some(annotations) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            annotations.remove(LAST_APPLIED);
            if annotations.is_empty() {
                meta.remove("annotations");
            }
        }
    }
    serde_json::to_string(&body).unwrap_or_default().into()
}

/// A kept child as JSON again, with what [`pack`] left out.
fn unpack(state: &State, id: &ChildId, child: &Child) -> Option<Value> {
    let mut body: Value = serde_json::from_str(&child.text).ok()?;
    let root = body.as_object_mut()?;
    if let Some((api_version, kind)) = &state.type_meta {
        root.insert("apiVersion".into(), Value::from(&**api_version));
        root.insert("kind".into(), Value::from(&**kind));
    }
    let meta = root
        .entry("metadata")
        .or_insert_with(|| Value::Object(serde_json::Map::new()))
        .as_object_mut()?;
    meta.insert("name".into(), Value::from(&*id.name));
    if let Some(namespace) = &id.namespace {
        meta.insert("namespace".into(), Value::from(&**namespace));
    }
    meta.insert("uid".into(), Value::from(child.uid.to_string()));
    if let Some(version) = child.resource_version {
        meta.insert("resourceVersion".into(), Value::from(version.to_string()));
    }
    Some(body)
}

/// Every child cache of an operator by child kind, and how children are applied (kept in the
/// operator's memo, where contexts find it).
#[derive(Default)]
pub(crate) struct Children {
    caches: HashMap<String, Arc<ChildCache>>,
    /// The field manager of [`Context::apply`](crate::Context::apply).
    pub(crate) field_manager: String,
}

/// The key of a kind, as resources are labelled in metrics: `group/version/plural`
/// (`version/plural` for the core group).
pub(crate) fn kind_key(api_resource: &ApiResource) -> String {
    let ar = api_resource;
    match ar.group.as_str() {
        "" => format!("{}/{}", ar.version, ar.plural),
        group => format!("{group}/{}/{}", ar.version, ar.plural),
    }
}

impl Children {
    pub(crate) fn new(field_manager: &str) -> Children {
        Children {
            caches: HashMap::new(),
            field_manager: field_manager.to_owned(),
        }
    }

    /// The cache of a child kind, made on first use.
    pub(crate) fn cache(&mut self, api_resource: &ApiResource) -> Arc<ChildCache> {
        self.caches
            .entry(kind_key(api_resource))
            .or_insert_with(|| Arc::new(ChildCache::new()))
            .clone()
    }

    /// The cache of a child kind, if some resource owns it.
    pub(crate) fn get(&self, api_resource: &ApiResource) -> Option<&Arc<ChildCache>> {
        self.caches.get(&kind_key(api_resource))
    }
}

/// The owner identity of an object as its children's owner references name it.
pub(crate) fn owner_id_of(body: &Value) -> Option<OwnerId> {
    let field = |pointer: &str| body.pointer(pointer).and_then(Value::as_str);
    Some(OwnerId {
        kind: Arc::from(group_kind(field("/apiVersion")?, field("/kind")?)),
        namespace: field("/metadata/namespace")
            .filter(|ns| !ns.is_empty())
            .map(Arc::from),
        name: Arc::from(field("/metadata/name")?),
    })
}

/// How [`Context::apply`](crate::Context::apply) applies a child.
///
/// ```no_run
/// # async fn reconcile(ctx: kopr::Context<k8s_openapi::api::core::v1::ConfigMap>, child: k8s_openapi::api::core::v1::Secret) -> kopr::HandlerResult {
/// use kopr::children::{ApplyError, ApplyOptions};
/// // Leave fields another manager owns alone: a conflict is an error instead.
/// match ctx.apply_with(&child, ApplyOptions { force: false }).await {
///     Ok(applied) if applied.created => ctx.info("Created", "the Secret was created"),
///     Ok(_) => {}
///     Err(ApplyError::Api(kube::Error::Api(status))) if status.code == 409 => {
///         ctx.warn("Conflict", &status.message);
///     }
///     Err(error) => return Err(error.into()),
/// }
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ApplyOptions {
    /// Take over fields another manager owns (server-side apply's `force`); on by default, as
    /// a controller owns its children's desired state.
    pub force: bool,
}

impl Default for ApplyOptions {
    fn default() -> Self {
        ApplyOptions { force: true }
    }
}

/// A child as the server has it after an apply.
#[derive(Debug, Clone)]
pub struct Applied<C> {
    /// The child, as the server returned it.
    pub object: C,
    /// Whether the apply changed the child, compared with the child as last seen: anything
    /// but its status and its metadata, and of the metadata its owner references and the
    /// labels and annotations the apply sets. `false` when it already was as desired (a change
    /// someone else made to the metadata meanwhile does not count).
    pub changed: bool,
    /// Whether no child of that name was seen before (for an owned kind: none was cached).
    pub created: bool,
}

/// Why a child could not be applied.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    /// The child could not be made the object's child.
    #[error(transparent)]
    Adopt(#[from] AdoptError),
    /// The child has no `metadata.name` (server-side apply needs one).
    #[error("a child to apply needs metadata.name")]
    NoName,
    /// The child or the server's answer is not the JSON its type expects.
    #[error("the child's JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// The API server refused the apply or could not be reached.
    #[error(transparent)]
    Api(#[from] kube::Error),
}

/// A desired child made ready to apply: adopted by `owner` (a controller owner reference,
/// the owner's labels, its namespace for a namespaced child), with `apiVersion` and `kind`.
pub(crate) fn prepare(
    child: &mut Value,
    owner: &Value,
    api_resource: &ApiResource,
    namespaced: bool,
) -> Result<ChildId, ApplyError> {
    let owner = Owner::from_value(owner)?;
    let options = AdoptOptions {
        harmonize_name: false,
        set_namespace: namespaced,
        ..AdoptOptions::default()
    };
    adopt_value(child, &owner, &options)?;
    if let Some(root) = child.as_object_mut() {
        root.entry("apiVersion")
            .or_insert_with(|| Value::String(api_resource.api_version.clone()));
        root.entry("kind")
            .or_insert_with(|| Value::String(api_resource.kind.clone()));
    }
    let id = ChildId::of(child).ok_or(ApplyError::NoName)?;
    if id.name.is_empty() {
        return Err(ApplyError::NoName);
    }
    Ok(id)
}

/// Applies `child` as a child of `owner`: adopted (see [`prepare`]), sent with server-side
/// apply under the operator's field manager, and taken into the cache of its kind (when one is
/// kept), so the watch event of this very write triggers nothing. Returns the server's child
/// and whether anything changed: compared with the cached child, or, for a kind no resource
/// owns, with the child read before the apply.
pub(crate) async fn apply_value(
    client: &kube::Client,
    children: Option<&Children>,
    owner: &Value,
    mut child: Value,
    api_resource: &ApiResource,
    namespaced: bool,
    options: ApplyOptions,
) -> Result<Applied<Value>, ApplyError> {
    use kube::api::{Api, DynamicObject, Patch, PatchParams};
    let id = prepare(&mut child, owner, api_resource, namespaced)?;
    let api: Api<DynamicObject> = match id.namespace.as_deref() {
        Some(namespace) if namespaced => {
            Api::namespaced_with(client.clone(), namespace, api_resource)
        }
        _ => Api::all_with(client.clone(), api_resource),
    };
    let cache = children.and_then(|c| c.get(api_resource));
    let before = match cache {
        Some(cache) => cache.begin_apply(&id),
        None => api.get_opt(&id.name).await?.map(without_managed_fields),
    };
    let manager = children.map_or("kopr", |c| c.field_manager.as_str());
    let mut params = PatchParams::apply(manager);
    params.force = options.force;
    let result = api.patch(&id.name, &params, &Patch::Apply(&child)).await;
    let applied = result.map(without_managed_fields);
    if let Some(cache) = cache {
        cache.end_apply(&id, applied.as_ref().ok());
    }
    let applied = applied?;
    let changed = before
        .as_ref()
        .is_none_or(|before| comparable(before, &child) != comparable(&applied, &child));
    Ok(Applied {
        object: applied,
        changed,
        created: before.is_none(),
    })
}

/// A child as the server sent it, without `managedFields`.
fn without_managed_fields(mut object: kube::api::DynamicObject) -> Value {
    object.metadata.managed_fields = None;
    serde_json::to_value(object).unwrap_or(Value::Null)
}

/// What an apply of `desired` may change: the child without its status, and of its metadata
/// only the owner references and the labels and annotations `desired` sets. So what others
/// change meanwhile in the metadata (a controller's revision annotation, say) does not count.
fn comparable(child: &Value, desired: &Value) -> Value {
    let mut child = child.clone();
    let Some(root) = child.as_object_mut() else {
        return child;
    };
    root.remove("status");
    let meta = root.remove("metadata").unwrap_or(Value::Null);
    let mut kept = serde_json::Map::new();
    for map in ["labels", "annotations"] {
        let wanted = desired
            .pointer(&format!("/metadata/{map}"))
            .and_then(Value::as_object);
        if let (Some(wanted), Some(actual)) = (wanted, meta.get(map).and_then(Value::as_object)) {
            let values: serde_json::Map<String, Value> = wanted
                .keys()
                .filter_map(|k| Some((k.clone(), actual.get(k)?.clone())))
                .collect();
            kept.insert(map.to_owned(), Value::Object(values));
        }
    }
    if let Some(references) = meta.get("ownerReferences") {
        kept.insert("ownerReferences".to_owned(), references.clone());
    }
    root.insert("metadata".to_owned(), Value::Object(kept));
    child
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn child(name: &str, rv: &str, owner: Option<&str>) -> Value {
        let references = owner.map(|owner| {
            json!([{"apiVersion": "example.com/v1", "kind": "Widget", "name": owner,
                    "uid": "o", "controller": true}])
        });
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "namespace": "ns", "uid": format!("u-{name}"),
                            "resourceVersion": rv, "ownerReferences": references,
                            "managedFields": [{"manager": "x"}],
                            "annotations": {LAST_APPLIED: "{...}"}},
               "data": {"k": rv}})
    }

    fn widget(name: &str) -> OwnerId {
        OwnerId {
            kind: Arc::from("example.com/Widget"),
            namespace: Some(Arc::from("ns")),
            name: Arc::from(name),
        }
    }

    #[test]
    fn children_are_kept_by_owner_and_changes_name_the_owners() {
        let cache = ChildCache::new();
        assert!(cache.add_owner_kind("example.com/Widget", true));
        assert!(!cache.add_owner_kind("example.com/Widget", true));
        assert_eq!(
            cache.observe(&child("a", "1", Some("w1"))),
            vec![widget("w1")]
        );
        assert_eq!(
            cache.observe(&child("a", "1", Some("w1"))),
            vec![],
            "same version"
        );
        assert!(
            cache.observe(&child("x", "2", None)).is_empty(),
            "not controlled"
        );
        assert_eq!(cache.len(), 1);
        let kept = cache.owned_by(&widget("w1"));
        assert_eq!(kept.len(), 1);
        assert!(kept[0].pointer("/metadata/managedFields").is_none());
        assert!(kept[0].pointer("/metadata/annotations").is_none());
        // Handed to another owner: both hear of it.
        assert_eq!(
            cache.observe(&child("a", "3", Some("w2"))),
            vec![widget("w1"), widget("w2")]
        );
        assert!(cache.owned_by(&widget("w1")).is_empty());
        assert_eq!(cache.owned_by(&widget("w2"))[0]["data"]["k"], "3");
        assert_eq!(
            cache.forget(&child("a", "4", Some("w2"))),
            vec![widget("w2")]
        );
        assert_eq!(cache.len(), 0);
        cache.observe(&child("b", "5", Some("w1")));
        let gone = cache.forget_unlisted(&HashSet::new(), |_| true);
        assert_eq!(gone, vec![widget("w1")]);
    }

    #[test]
    fn a_kept_child_reads_back_whole() {
        let cache = ChildCache::new();
        cache.add_owner_kind("example.com/Widget", true);
        let mut body = child("a", "4", Some("w1"));
        body["metadata"]["uid"] = json!("2ca3ab40-9142-4bc6-8370-ac5dc1ad0443");
        cache.observe(&body);
        let mut other = child("b", "5", Some("w1"));
        other["metadata"]["uid"] = json!("not-a-uuid");
        cache.observe(&other);
        let kept = cache.owned_by(&widget("w1"));
        let strip = |mut v: Value| {
            let meta = v["metadata"]
                .as_object_mut()
                .unwrap_or_else(|| panic!("meta"));
            meta.remove("managedFields");
            meta.remove("annotations");
            v
        };
        assert_eq!(kept, vec![strip(body), strip(other)]);
        assert_eq!(
            Uid::of("2CA3AB40-9142-4BC6-8370-AC5DC1AD0443").to_string(),
            "2CA3AB40-9142-4BC6-8370-AC5DC1AD0443"
        );
    }

    #[test]
    fn watch_events_during_an_apply_trigger_only_when_they_are_not_its_own_write() {
        let cache = ChildCache::new();
        cache.add_owner_kind("example.com/Widget", true);
        let released = Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = released.clone();
        cache.on_trigger(Box::new(move |owners| {
            sink.lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend(owners.to_vec())
        }));
        let id = ChildId::of(&child("a", "1", None)).unwrap_or_else(|| panic!("id"));
        assert!(cache.begin_apply(&id).is_none(), "nothing cached yet");
        // The apply's own write comes back through the watch before its answer.
        assert!(cache.observe(&child("a", "7", Some("w1"))).is_empty());
        cache.end_apply(&id, Some(&child("a", "7", Some("w1"))));
        assert!(
            released
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_empty()
        );
        // Someone else's write during the next apply is released at its end.
        assert!(cache.begin_apply(&id).is_some());
        assert!(cache.observe(&child("a", "8", Some("w1"))).is_empty());
        cache.end_apply(&id, Some(&child("a", "9", Some("w1"))));
        assert_eq!(
            *released.lock().unwrap_or_else(|p| p.into_inner()),
            vec![widget("w1")]
        );
        assert_eq!(
            cache.observe(&child("a", "9", Some("w1"))),
            vec![],
            "already taken in"
        );
    }

    #[test]
    fn an_apply_changed_what_it_sets_not_what_others_set_meanwhile() {
        let desired = json!({"metadata": {"name": "d", "labels": {"app": "x"}},
                             "spec": {"replicas": 2}});
        let before = json!({"metadata": {"name": "d", "resourceVersion": "1",
                                         "labels": {"app": "x"}},
                            "spec": {"replicas": 2, "paused": false}, "status": {"ready": 1}});
        let mut theirs = before.clone();
        theirs["metadata"]["annotations"] = json!({"revision": "2"});
        theirs["metadata"]["resourceVersion"] = json!("5");
        theirs["status"]["ready"] = json!(2);
        assert_eq!(comparable(&before, &desired), comparable(&theirs, &desired));
        let mut ours = before.clone();
        ours["spec"]["replicas"] = json!(3);
        assert_ne!(comparable(&before, &desired), comparable(&ours, &desired));
        let mut relabelled = before.clone();
        relabelled["metadata"]["labels"]["app"] = json!("y");
        assert_ne!(
            comparable(&before, &desired),
            comparable(&relabelled, &desired)
        );
    }

    #[test]
    fn a_child_is_prepared_with_its_owner_reference_and_namespace() {
        let owner = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                           "metadata": {"name": "w", "namespace": "ns", "uid": "u1"}});
        let mut desired = json!({"metadata": {"name": "c"}, "data": {}});
        let ar = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        let id = prepare(&mut desired, &owner, &ar, true).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(id.namespace.as_deref(), Some("ns"));
        assert_eq!(desired["kind"], "ConfigMap");
        assert_eq!(desired["apiVersion"], "v1");
        assert_eq!(
            desired["metadata"]["ownerReferences"][0]["controller"],
            true
        );
        let mut unnamed = json!({"metadata": {}});
        assert!(matches!(
            prepare(&mut unnamed, &owner, &ar, true),
            Err(ApplyError::NoName)
        ));
    }
}
