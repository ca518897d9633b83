//! The resource registry: which resources are served, under which
//! group/version, with which kind, scope, verbs, names and subresources.
//!
//! Built-in resources are registered at start-up from their [`kind::KindDef`]s
//! (the values are in `crate::kinds`);
//! custom resources are added and removed as CRDs come and go.

pub mod kind;
mod rules;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use crate::quota::Evaluator;

/// The rules one kind follows through create, update and delete, as
/// kube-apiserver's REST strategies (`RESTCreateStrategy`,
/// `RESTUpdateStrategy`, `RESTDeleteStrategy`) give them. Every
/// [`ResourceType`] carries one, chosen where the kind is registered; the
/// registry's verbs ask it and never compare group or resource names.
///
/// Every method defaults to the generic behaviour of kube's registry with no
/// per-kind rules; the strategies in `registry::strategy` override them.
pub trait Strategy: std::fmt::Debug + Send + Sync {
    /// Whether the kind keeps `metadata.generation`, bumped on spec changes.
    fn tracks_generation(&self) -> bool {
        false
    }

    /// Whether PUT of a missing object creates it.
    fn allows_create_on_update(&self) -> bool {
        false
    }

    /// Whether the kind takes strategic merge patches (custom resources do
    /// not: they have no Go struct tags to merge by).
    fn accepts_strategic_merge_patch(&self) -> bool {
        true
    }

    /// What of the status a client sent on create the kind keeps, for kinds
    /// with a status subresource: none by default, as kube resets it; Nodes
    /// keep theirs (less `status.config`).
    fn status_sent_on_create(&self, _sent: serde_json::Value) -> Option<serde_json::Value> {
        None
    }

    /// The state a new object starts in beyond the generic resets, e.g. a
    /// pod's initial status.
    fn prepare_for_create(&self, _obj: &mut serde_json::Map<String, serde_json::Value>) {}

    /// What a new object records of the user creating it (a
    /// CertificateSigningRequest's requester), after `prepare_for_create`.
    fn record_requester(
        &self,
        _obj: &mut serde_json::Map<String, serde_json::Value>,
        _user: &crate::identity::UserInfo,
    ) {
    }

    /// The kind's own part of preparing an update of `subresource`, before
    /// the generic rules; `true` when it prepared the whole update itself.
    fn prepare_for_update(
        &self,
        _new: &mut serde_json::Value,
        _old: &serde_json::Value,
        _subresource: Option<&str>,
    ) -> bool {
        false
    }

    /// Decodes a new object state into the kind's schema, dropping unknown
    /// fields and returning their paths.
    ///
    /// # Errors
    /// A Status for bodies that cannot be the kind at all.
    fn normalize(
        &self,
        _rt: &ResourceType,
        _obj: &mut serde_json::Value,
    ) -> Result<Vec<String>, crate::status::ApiError> {
        Ok(Vec::new())
    }

    /// Fills in the kind's defaults.
    fn default(&self, _rt: &ResourceType, _obj: &mut serde_json::Value) {}

    /// Validates a new state (`old` on updates).
    fn validate(
        &self,
        _rt: &ResourceType,
        _obj: &serde_json::Value,
        _old: Option<&serde_json::Value>,
    ) -> Vec<crate::validation::FieldError> {
        Vec::new()
    }

    /// Validates an update through `subresource` when the kind checks that
    /// subresource by rules of its own (kube's per-subresource strategies,
    /// e.g. a pod's `ephemeralcontainers`); `None` means the kind's usual
    /// validation applies.
    fn validate_subresource_update(
        &self,
        _rt: &ResourceType,
        _subresource: &str,
        _obj: &serde_json::Value,
        _old: &serde_json::Value,
    ) -> Option<Vec<crate::validation::FieldError>> {
        None
    }

    /// Whether a create assigns cluster IPs and node ports (Services).
    fn allocates_service_addresses(&self) -> bool {
        false
    }

    /// Whether DELETE answers with the deleted object rather than a Status.
    fn returns_deleted_object(&self) -> bool {
        false
    }

    /// Whether a delete that names no propagation orphans the dependents
    /// (batch/v1 Jobs, for backwards compatibility).
    fn orphans_dependents_by_default(&self) -> bool {
        false
    }

    /// A finalizer every deletion adds (a CRD waits for its custom
    /// resources to go).
    fn deletion_finalizer(&self) -> Option<&'static str> {
        None
    }

    /// Whether the object named `name` may never be deleted.
    fn undeletable(&self, _name: &str) -> bool {
        false
    }

    /// Whether `spec.finalizers` hold a deleted object, cleared through a
    /// `finalize` subresource (Namespaces).
    fn has_spec_finalizers(&self) -> bool {
        false
    }

    /// Whether the objects are namespaces themselves: admission sees a
    /// namespace's own name as the request's namespace, and its own labels
    /// for namespace selectors (Namespaces).
    fn is_namespace(&self) -> bool {
        false
    }

    /// The kind's own marks on an object whose deletion starts, after
    /// `deletionTimestamp` is set (a Namespace turns Terminating).
    fn mark_deleting(&self, _obj: &mut serde_json::Value) {}

    /// Whether deletion waits a grace period (Pods).
    fn graceful_deletion(&self) -> bool {
        false
    }

    /// Field renames from the served version (left) to the stored one
    /// (right), for kinds sharing storage with another version.
    fn field_renames(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }

    /// Converts an object as this resource serves it into the stored
    /// version's form (after [`Strategy::field_renames`]), for kinds
    /// stored in another version.
    fn stored_of_view(&self, _obj: &mut serde_json::Map<String, serde_json::Value>) {}

    /// Converts a stored object into the form this resource serves
    /// (after the renames are undone).
    fn view_of_stored(&self, _obj: &mut serde_json::Map<String, serde_json::Value>) {}
}

/// The strategy of a resource registered without one: the generic rules
/// and nothing per kind (no decoding, defaulting or validation).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoStrategy;

impl Strategy for NoStrategy {}

/// A resource computed per request instead of stored: a `create` whose
/// answer is the request with its status filled in (kube's review APIs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Computed {
    /// `authorization.k8s.io` SelfSubjectAccessReview.
    SelfSubjectAccessReview,
    /// `authorization.k8s.io` SubjectAccessReview and LocalSubjectAccessReview.
    SubjectAccessReview,
    /// `authorization.k8s.io` SelfSubjectRulesReview.
    SelfSubjectRulesReview,
    /// `authentication.k8s.io` SelfSubjectReview.
    SelfSubjectReview,
    /// `authentication.k8s.io` TokenReview.
    TokenReview,
    /// Core Binding (and the pod `binding` subresource): assigns a pod to
    /// a node.
    Binding,
    /// Core ComponentStatus: the health of the control plane's parts,
    /// read with `get` and `list`.
    ComponentStatus,
}

/// One served resource in one group/version.
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// API group; empty for the core group.
    pub group: String,
    /// API version, e.g. `v1`.
    pub version: String,
    /// Plural resource name used in URLs.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Kind of one object.
    pub kind: String,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
    /// Short names, e.g. `cm`.
    pub short_names: Vec<String>,
    /// Categories, e.g. `all`.
    pub categories: Vec<String>,
    /// The subresources served (`status`, `scale`, a pod's `log`, …).
    pub subresources: kind::Subs,
    /// The verbs, when the resource serves fewer than the usual eight.
    pub only_verbs: Option<&'static [&'static str]>,
    /// For resources computed per request: which; `None` for stored ones.
    pub computed: Option<Computed>,
    /// The storage identity: resources sharing it share objects (e.g.
    /// core and events.k8s.io events), written as `group/plural`.
    pub storage: String,
    /// The `apiVersion` objects are stored in.
    pub storage_api_version: String,
    /// For custom resources: the schema, rules and columns of this version.
    pub custom: Option<crate::crd::CustomInfo>,
    /// The kind's rules through create, update and delete.
    pub strategy: Arc<dyn Strategy>,
    /// The definition of a built-in kind (its decoding, validation, …);
    /// `None` for custom resources.
    pub def: Option<&'static kind::KindDef>,
}

impl ResourceType {
    /// Creates a resource description with defaults for the optional parts.
    pub fn new(
        group: &str,
        version: &str,
        plural: &str,
        singular: &str,
        kind: &str,
        namespaced: bool,
    ) -> Self {
        ResourceType {
            group: group.to_string(),
            version: version.to_string(),
            plural: plural.to_string(),
            singular: singular.to_string(),
            kind: kind.to_string(),
            namespaced,
            short_names: Vec::new(),
            categories: Vec::new(),
            subresources: kind::Subs::EMPTY,
            only_verbs: None,
            computed: None,
            storage: format!(
                "{}/{}",
                if group.is_empty() { "core" } else { group },
                plural
            ),
            storage_api_version: if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            },
            custom: None,
            strategy: Arc::new(NoStrategy),
            def: None,
        }
    }

    /// Where the kind keeps its replicas and selector (its `scale`
    /// subresource): the CRD's paths, else `.spec.replicas` and
    /// `.status.replicas`.
    pub fn scale_paths(&self) -> crate::crd::ScalePaths {
        match self.custom.as_ref().and_then(|c| c.scale.clone()) {
            Some(p) => p,
            None => crate::crd::ScalePaths {
                spec_replicas: ".spec.replicas".into(),
                status_replicas: ".status.replicas".into(),
                label_selector: None,
            },
        }
    }

    /// Sets the kind's strategy.
    pub fn strategy(mut self, strategy: impl Strategy + 'static) -> Self {
        self.strategy = Arc::new(strategy);
        self
    }

    /// Sets short names.
    pub fn short(mut self, names: &[&str]) -> Self {
        self.short_names = names.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Sets categories.
    pub fn categories(mut self, cats: &[&str]) -> Self {
        self.categories = cats.iter().map(|s| s.to_string()).collect();
        self
    }

    /// Serves the subresource `sub`.
    pub fn with(mut self, sub: kind::Sub) -> Self {
        self.subresources.insert(sub);
        self
    }

    /// Serves only these verbs (discovery's names: `get`, `list`,
    /// `create`, ...); the others are refused with 405.
    pub fn only_verbs(mut self, verbs: &'static [&'static str]) -> Self {
        self.only_verbs = Some(verbs);
        self
    }

    /// Computes the resource per request: `create` is its only verb.
    pub fn computed(mut self, computed: Computed) -> Self {
        self.computed = Some(computed);
        self
    }

    /// The verbs the resource serves, as discovery lists them.
    pub fn verbs(&self) -> &'static [&'static str] {
        if let Some(verbs) = self.only_verbs {
            verbs
        } else if self.computed.is_some() {
            &["create"]
        } else {
            &[
                "create",
                "delete",
                "deletecollection",
                "get",
                "list",
                "patch",
                "update",
                "watch",
            ]
        }
    }

    /// Shares storage with another resource (`group/plural`), whose objects
    /// are stored as `api_version`.
    pub fn stored_as(mut self, storage: &str, api_version: &str) -> Self {
        self.storage = storage.to_string();
        self.storage_api_version = api_version.to_string();
        self
    }

    /// `group/version`, or `version` for the core group.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the resource serves the subresource `sub`.
    pub fn serves(&self, sub: kind::Sub) -> bool {
        self.subresources.contains(sub)
    }

    /// The field selectors of a built-in kind (`metadata.name` and
    /// `metadata.namespace` alone for kinds without their own).
    pub fn field_labels(&self) -> &'static crate::selectors::FieldLabels {
        self.def
            .and_then(|d| d.fields)
            .unwrap_or(&crate::selectors::DEFAULT_FIELDS)
    }

    /// The key prefix of all objects of this resource (all namespaces).
    pub fn key_prefix(&self) -> String {
        format!("/{}/", self.storage)
    }

    /// The key prefix of the objects in one namespace (or all, if None).
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("/{}/{}/", self.storage, ns),
            _ => self.key_prefix(),
        }
    }

    /// The storage key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("/{}/{}/{}", self.storage, ns, name),
            _ => format!("/{}/{}", self.storage, name),
        }
    }

    /// How resource quotas measure its objects: as its kind says, or by
    /// their count.
    pub fn evaluator(&self) -> Evaluator {
        match self.def.and_then(|d| d.quota) {
            Some(measured) => Evaluator::from(measured),
            None => Evaluator::count(&self.group, &self.plural),
        }
    }

    /// The resource reference used in error messages.
    pub fn reference(&self) -> crate::status::ResourceRef<'_> {
        crate::status::ResourceRef {
            group: &self.group,
            resource: &self.plural,
        }
    }
}

/// The catalog of served resources; shared and updated as CRDs change.
#[derive(Clone, Default)]
pub struct Catalog {
    inner: Arc<RwLock<CatalogInner>>,
}

#[derive(Default)]
struct CatalogInner {
    by_path: HashMap<(String, String, String), Arc<ResourceType>>,
    ordered: Vec<Arc<ResourceType>>,
}

impl Catalog {
    /// Adds or replaces a served resource.
    pub fn register(&self, rt: ResourceType) {
        let rt = Arc::new(rt);
        if let Ok(mut inner) = self.inner.write() {
            let k = (rt.group.clone(), rt.version.clone(), rt.plural.clone());
            inner.ordered.retain(|r| {
                (r.group.as_str(), r.version.as_str(), r.plural.as_str())
                    != (k.0.as_str(), k.1.as_str(), k.2.as_str())
            });
            inner.ordered.push(rt.clone());
            inner.by_path.insert(k, rt);
        }
    }

    /// Removes every version of a resource of a group.
    pub fn unregister(&self, group: &str, plural: &str) {
        if let Ok(mut inner) = self.inner.write() {
            inner
                .ordered
                .retain(|r| !(r.group == group && r.plural == plural));
            inner
                .by_path
                .retain(|k, _| !(k.0 == group && k.2 == plural));
        }
    }

    /// Looks up a resource by group, version and plural.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        let inner = self.inner.read().ok()?;
        inner
            .by_path
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Looks up the resource playing a role for the server's own verbs.
    pub fn known(&self, known: kind::Known) -> Option<Arc<ResourceType>> {
        let inner = self.inner.read().ok()?;
        inner
            .ordered
            .iter()
            .find(|r| r.def.is_some_and(|d| d.known == Some(known)))
            .cloned()
    }

    /// The quota evaluator of a resource (by group and plural): its kind's,
    /// or one counting its objects.
    pub fn evaluator(&self, group: &str, plural: &str) -> Evaluator {
        let found = self.inner.read().ok().and_then(|inner| {
            inner
                .ordered
                .iter()
                .find(|r| r.group == group && r.plural == plural)
                .cloned()
        });
        found.map_or_else(|| Evaluator::count(group, plural), |rt| rt.evaluator())
    }

    /// The resource a quota evaluator measures.
    pub fn measured_by(&self, evaluator: &Evaluator) -> Option<Arc<ResourceType>> {
        let inner = self.inner.read().ok()?;
        let found = inner.ordered.iter().find(|r| match evaluator {
            Evaluator::Count { group, plural } => r.group == *group && r.plural == *plural,
            measured => r.def.and_then(|d| d.quota).map(Evaluator::from).as_ref() == Some(measured),
        });
        found.cloned()
    }

    /// Looks up the resource serving a kind in a group/version.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<ResourceType>> {
        let inner = self.inner.read().ok()?;
        inner
            .ordered
            .iter()
            .find(|r| r.group == group && r.version == version && r.kind == kind)
            .cloned()
    }

    /// The first resource registered with a storage identity.
    pub fn by_storage(&self, storage: &str) -> Option<Arc<ResourceType>> {
        let inner = self.inner.read().ok()?;
        inner.ordered.iter().find(|r| r.storage == storage).cloned()
    }

    /// All served resources, in registration order.
    pub fn all(&self) -> Vec<Arc<ResourceType>> {
        self.inner
            .read()
            .map(|i| i.ordered.clone())
            .unwrap_or_default()
    }

    /// Whether any resource is served in a group/version.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        self.inner
            .read()
            .map(|i| {
                i.ordered
                    .iter()
                    .any(|r| r.group == group && r.version == version)
            })
            .unwrap_or(false)
    }

    /// Groups in registration order, each with its versions in registration
    /// order (the first is the preferred version).
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = Vec::new();
        for r in self.all() {
            match out.iter_mut().find(|(g, _)| *g == r.group) {
                Some((_, versions)) => {
                    if !versions.contains(&r.version) {
                        versions.push(r.version.clone());
                    }
                }
                None => out.push((r.group.clone(), vec![r.version.clone()])),
            }
        }
        out
    }
}
