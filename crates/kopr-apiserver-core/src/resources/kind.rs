//! What the server knows about one built-in kind, as one value: a
//! [`KindDef`] gives its names, scope and subresources, the strategy its
//! writes follow and the Go type it decodes as. The values are in
//! `crate::kinds`, one module per API group; the catalog serves each as a
//! [`ResourceType`].

use std::sync::Arc;

use serde_json::Value;

use super::{Computed, ResourceType, Strategy};
use crate::defaults::DefaultFn;
use crate::quota::evaluators::Measured;
use crate::selectors::FieldLabels;
use crate::status::ApiError;
use crate::table::Printer;
use crate::validation::kinds::ValidateFn;

/// Whether a kind's objects live in a namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// Objects live in a namespace.
    Namespaced,
    /// Objects are cluster-wide.
    Cluster,
}

/// A subresource a kind serves beside its objects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sub {
    /// `status`: the status written apart from the rest.
    Status,
    /// `scale`: replicas and selector as an `autoscaling/v1` Scale.
    Scale,
    /// `log`: a pod's container logs.
    Log,
    /// `token`: a service account's TokenRequest.
    Token,
    /// `binding`: a pod assigned to a node.
    Binding,
    /// `eviction`: a pod evicted under its disruption budgets.
    Eviction,
    /// `approval`: a CertificateSigningRequest's approval conditions.
    Approval,
    /// `ephemeralcontainers`: a pod's debug containers.
    EphemeralContainers,
    /// `exec`: a command run in a pod's container (streamed).
    Exec,
    /// `attach`: a pod's container's streams.
    Attach,
    /// `portforward`: connections to a pod's ports.
    PortForward,
    /// `proxy`: requests passed to a node's kubelet.
    Proxy,
}

impl Sub {
    const fn bit(self) -> u16 {
        1 << (self as u16)
    }

    /// Every subresource, in declaration order.
    pub const ALL: [Sub; 12] = [
        Sub::Status,
        Sub::Scale,
        Sub::Log,
        Sub::Token,
        Sub::Binding,
        Sub::Eviction,
        Sub::Approval,
        Sub::EphemeralContainers,
        Sub::Exec,
        Sub::Attach,
        Sub::PortForward,
        Sub::Proxy,
    ];

    /// The subresource's name in a path (`pods/NAME/eviction`).
    ///
    /// ```
    /// use kopr_apiserver_core::resources::kind::Sub;
    /// assert_eq!(Sub::named(Sub::PortForward.name()), Some(Sub::PortForward));
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Sub::Status => "status",
            Sub::Scale => "scale",
            Sub::Log => "log",
            Sub::Token => "token",
            Sub::Binding => "binding",
            Sub::Eviction => "eviction",
            Sub::Approval => "approval",
            Sub::EphemeralContainers => "ephemeralcontainers",
            Sub::Exec => "exec",
            Sub::Attach => "attach",
            Sub::PortForward => "portforward",
            Sub::Proxy => "proxy",
        }
    }

    /// The subresource a path names, if it is one of these.
    pub fn named(name: &str) -> Option<Sub> {
        Sub::ALL.into_iter().find(|sub| sub.name() == name)
    }

    /// The verbs discovery lists for the subresource. The streaming ones and the node
    /// proxy list their connect methods as verbs, as kube does.
    pub const fn verbs(self) -> &'static [&'static str] {
        match self {
            Sub::Status | Sub::Scale | Sub::Approval | Sub::EphemeralContainers => {
                &["get", "patch", "update"]
            }
            Sub::Log => &["get"],
            Sub::Token | Sub::Binding | Sub::Eviction => &["create"],
            Sub::Exec | Sub::Attach | Sub::PortForward => &["create", "get"],
            Sub::Proxy => &["create", "delete", "get", "patch", "update"],
        }
    }

    /// The group, version and kind of the subresource's body, or `None` when it is the
    /// parent's own kind.
    pub const fn kind(self) -> Option<(&'static str, &'static str, &'static str)> {
        match self {
            Sub::Status | Sub::Approval | Sub::EphemeralContainers => None,
            Sub::Scale => Some(("autoscaling", "v1", "Scale")),
            Sub::Log => Some(("", "v1", "Pod")),
            Sub::Token => Some(("authentication.k8s.io", "v1", "TokenRequest")),
            Sub::Binding => Some(("", "v1", "Binding")),
            Sub::Eviction => Some(("policy", "v1", "Eviction")),
            Sub::Exec => Some(("", "v1", "PodExecOptions")),
            Sub::Attach => Some(("", "v1", "PodAttachOptions")),
            Sub::PortForward => Some(("", "v1", "PodPortForwardOptions")),
            Sub::Proxy => Some(("", "v1", "NodeProxyOptions")),
        }
    }
}

/// A kind the server's own verbs reach by its role, not its names: binding and
/// eviction write pods, eviction reads disruption budgets, bootstrap creates
/// namespaces, services and service accounts, the node proxy finds nodes.
/// A kind's definition says which role it plays ([`KindDef::known`]); its
/// group, version and plural stay there alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Known {
    /// Pods (core/v1).
    Pods,
    /// Nodes (core/v1).
    Nodes,
    /// Namespaces (core/v1).
    Namespaces,
    /// Services (core/v1).
    Services,
    /// Service accounts (core/v1).
    ServiceAccounts,
    /// Pod disruption budgets (policy/v1).
    DisruptionBudgets,
    /// API services of the aggregation layer (apiregistration.k8s.io/v1).
    ApiServices,
}

/// A set of subresources.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Subs(u16);

impl Subs {
    /// No subresource.
    pub const EMPTY: Subs = Subs(0);

    /// Adds `sub`.
    pub fn insert(&mut self, sub: Sub) {
        self.0 |= sub.bit();
    }

    /// Removes `sub`.
    pub fn remove(&mut self, sub: Sub) {
        self.0 &= !sub.bit();
    }

    /// Whether `sub` is in the set.
    pub fn contains(self, sub: Sub) -> bool {
        self.0 & sub.bit() != 0
    }
}

/// Decodes an object as its Go type's twin and encodes it back, returning the
/// paths of the fields the type does not have (dropped).
pub type Decode = fn(&ResourceType, &mut Value) -> Result<Vec<String>, ApiError>;

/// One built-in kind in one group version: everything the server knows about it.
///
/// ```
/// use kopr_apiserver_core::resources::kind::{KindDef, Scope, Sub};
/// static LEASES: KindDef = KindDef::new("coordination.k8s.io", "v1", "leases", "Lease", Scope::Namespaced)
///     .subresources(&[Sub::Status]);
/// assert_eq!(LEASES.resource_type().plural, "leases");
/// ```
#[derive(Debug, Clone, Copy)]
pub struct KindDef {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Version served.
    pub version: &'static str,
    /// Resource name (plural).
    pub plural: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Namespaced or cluster-wide.
    pub scope: Scope,
    /// Short names (`kubectl get po`).
    pub short_names: &'static [&'static str],
    /// Categories (`kubectl get all`).
    pub categories: &'static [&'static str],
    /// Subresources served.
    pub subresources: &'static [Sub],
    /// The strategy its writes follow; none for computed kinds.
    pub strategy: Option<fn() -> Arc<dyn Strategy>>,
    /// How its objects decode; none for computed kinds.
    pub decode: Option<Decode>,
    /// Where it is stored, when it shares another resource's storage:
    /// `(storage, api_version)`.
    pub stored_as: Option<(&'static str, &'static str)>,
    /// A kind computed per request instead of stored.
    pub computed: Option<Computed>,
    /// The only verbs served, when not all.
    pub only_verbs: Option<&'static [&'static str]>,
    /// Its validation (kube's `Validate<Kind>` and `Validate<Kind>Update`).
    pub validate: Option<ValidateFn>,
    /// Its defaulting (kube's `SetDefaults_<Kind>`).
    pub default: Option<DefaultFn>,
    /// Its table printer (columns, cells); none for kube's default table
    /// (Name, Created At).
    pub printer: Option<Printer>,
    /// Its field selectors; none for `metadata.name` and `metadata.namespace`
    /// alone.
    pub fields: Option<&'static FieldLabels>,
    /// Puts its OpenAPI schema (and those it refers to) into a generator; none for a kind
    /// published with a permissive schema.
    pub schema: Option<SchemaFn>,
    /// The role the server's own verbs look it up by, if any.
    pub known: Option<Known>,
    /// How a resource quota measures it, when by more than its count.
    pub quota: Option<Measured>,
}

/// A subresource's request body that is no kind of its own (an Eviction, a
/// Binding, a Scale): published in OpenAPI beside the kinds, without a list.
#[derive(Debug, Clone, Copy)]
pub struct BodyDef {
    /// API group (`""` for core).
    pub group: &'static str,
    /// Version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// Puts its OpenAPI schema into a generator.
    pub schema: SchemaFn,
}

/// Adds a kind's OpenAPI schema to a generator.
pub type SchemaFn = fn(&mut schemars::SchemaGenerator);

/// The [`SchemaFn`] of a k8s-openapi type.
pub fn schema_of<T: schemars::JsonSchema>(generator: &mut schemars::SchemaGenerator) {
    let _ = generator.subschema_for::<T>();
}

impl KindDef {
    /// A kind with no short names, categories or subresources yet.
    pub const fn new(
        group: &'static str,
        version: &'static str,
        plural: &'static str,
        kind: &'static str,
        scope: Scope,
    ) -> KindDef {
        KindDef {
            group,
            version,
            plural,
            kind,
            scope,
            short_names: &[],
            categories: &[],
            subresources: &[],
            strategy: None,
            decode: None,
            stored_as: None,
            computed: None,
            only_verbs: None,
            validate: None,
            default: None,
            printer: None,
            fields: None,
            schema: None,
            known: None,
            quota: None,
        }
    }

    /// With short names.
    pub const fn short(self, short_names: &'static [&'static str]) -> KindDef {
        KindDef {
            short_names,
            ..self
        }
    }

    /// In categories.
    pub const fn categories(self, categories: &'static [&'static str]) -> KindDef {
        KindDef { categories, ..self }
    }

    /// With subresources.
    pub const fn subresources(self, subresources: &'static [Sub]) -> KindDef {
        KindDef {
            subresources,
            ..self
        }
    }

    /// Stored, its writes following `strategy` and its objects decoded by `decode`.
    pub const fn stored(self, strategy: fn() -> Arc<dyn Strategy>, decode: Decode) -> KindDef {
        KindDef {
            strategy: Some(strategy),
            decode: Some(decode),
            ..self
        }
    }

    /// Sharing the storage of another resource, kept as `api_version`.
    pub const fn stored_as(self, storage: &'static str, api_version: &'static str) -> KindDef {
        KindDef {
            stored_as: Some((storage, api_version)),
            ..self
        }
    }

    /// Computed per request.
    pub const fn computed(self, computed: Computed) -> KindDef {
        KindDef {
            computed: Some(computed),
            ..self
        }
    }

    /// Serving only `verbs`.
    pub const fn only_verbs(self, verbs: &'static [&'static str]) -> KindDef {
        KindDef {
            only_verbs: Some(verbs),
            ..self
        }
    }

    /// Validated by `validate`.
    pub const fn validate(self, validate: ValidateFn) -> KindDef {
        KindDef {
            validate: Some(validate),
            ..self
        }
    }

    /// Defaulted by `default`.
    pub const fn default(self, default: DefaultFn) -> KindDef {
        KindDef {
            default: Some(default),
            ..self
        }
    }

    /// Printed as `printer` prints it.
    pub const fn printer(self, printer: Printer) -> KindDef {
        KindDef {
            printer: Some(printer),
            ..self
        }
    }

    /// The table printer of its objects.
    pub fn table_printer(&self) -> Printer {
        self.printer.unwrap_or(Printer::Default)
    }

    /// Selectable by `fields`.
    pub const fn fields(self, fields: &'static FieldLabels) -> KindDef {
        KindDef {
            fields: Some(fields),
            ..self
        }
    }

    /// Published in OpenAPI with the schema `schema` adds (e.g. [`schema_of`] its type).
    pub const fn schema(self, schema: SchemaFn) -> KindDef {
        KindDef {
            schema: Some(schema),
            ..self
        }
    }

    /// Looked up by the server's own verbs as `known`.
    pub const fn known(self, known: Known) -> KindDef {
        KindDef {
            known: Some(known),
            ..self
        }
    }

    /// Measured by resource quotas as `measured` says.
    pub const fn quota(self, measured: Measured) -> KindDef {
        KindDef {
            quota: Some(measured),
            ..self
        }
    }

    /// Whether it serves `sub`.
    pub fn has(&self, sub: Sub) -> bool {
        self.subresources.contains(&sub)
    }

    /// The resource the catalog serves for it.
    pub fn resource_type(&'static self) -> ResourceType {
        let mut rt = ResourceType::new(
            self.group,
            self.version,
            self.plural,
            &self.kind.to_ascii_lowercase(),
            self.kind,
            self.scope == Scope::Namespaced,
        )
        .short(self.short_names)
        .categories(self.categories);
        for sub in self.subresources {
            rt.subresources.insert(*sub);
        }
        if let Some((storage, api_version)) = self.stored_as {
            rt = rt.stored_as(storage, api_version);
        }
        if let Some(computed) = self.computed {
            rt = rt.computed(computed);
        }
        if let Some(verbs) = self.only_verbs {
            rt = rt.only_verbs(verbs);
        }
        if let Some(strategy) = self.strategy {
            rt.strategy = strategy();
        }
        rt.def = Some(self);
        rt
    }
}
