//! The request as admission matches it ([`Attributes`]) and the matching
//! shared by webhooks and policies, in kube's order: a `namespaceSelector`,
//! an `objectSelector`, `rules` (operation, group, version, resource with
//! subresource, scope). `matchConditions` come last (see
//! [`super::expressions`]). Also the `request` that CEL expressions and
//! AdmissionReviews see.

use serde_json::{Map, Value, json};

use std::sync::Arc;

use crate::callout::Caller;
use crate::identity::UserInfo;
use crate::registry::{AdmissionRequest, convert};
use crate::resources::{Catalog, ResourceType};
use crate::selectors::{LabelSelector, SelectorError};
use crate::status::ApiError;
use crate::storage::Store;

/// One rule: the operations and resources it matches.
#[derive(Debug, Clone, Default)]
pub(crate) struct Rule {
    pub operations: Vec<String>,
    pub groups: Vec<String>,
    pub versions: Vec<String>,
    pub resources: Vec<String>,
    /// `resourceNames` (policies only; empty matches every name).
    pub names: Vec<String>,
    /// `Cluster`, `Namespaced` or `*` (the default).
    pub scope: String,
}

impl Rule {
    /// A rule as stored (`RuleWithOperations` or `NamedRuleWithOperations`).
    pub fn from_value(r: &Value) -> Rule {
        let strings = crate::object::string_list;
        Rule {
            operations: strings(&r["operations"]),
            groups: strings(&r["apiGroups"]),
            versions: strings(&r["apiVersions"]),
            resources: strings(&r["resources"]),
            names: strings(&r["resourceNames"]),
            scope: r["scope"].as_str().unwrap_or("*").to_string(),
        }
    }

    /// Every rule of a stored list.
    pub fn list(rules: &Value) -> Vec<Rule> {
        rules
            .as_array()
            .map(|rules| rules.iter().map(Rule::from_value).collect())
            .unwrap_or_default()
    }
}

/// A stored selector (unset is `{}`, everything, as kube defaults it);
/// `Err` for one that does not parse.
pub(crate) fn selector(v: &Value) -> Result<LabelSelector, SelectorError> {
    let v = if v.is_null() {
        &Value::Object(Default::default())
    } else {
        v
    };
    LabelSelector::from_label_selector_value(v)
}

/// The request as matching sees it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Attributes<'a> {
    pub group: &'a str,
    pub version: &'a str,
    pub kind: &'a str,
    /// The plural resource.
    pub resource: &'a str,
    /// The subresource, or empty.
    pub subresource: &'a str,
    /// `CREATE`, `UPDATE` or `DELETE`.
    pub operation: &'static str,
    pub name: &'a str,
    /// The object's namespace; a Namespace's own name; empty when
    /// cluster-scoped.
    pub namespace: &'a str,
    /// The objects are Namespaces.
    pub is_namespace: bool,
    pub object: Option<&'a Value>,
    pub old: Option<&'a Value>,
    /// When matched through an equivalent resource: the resource the
    /// request addressed (group, version, kind, plural).
    pub requested: Option<(&'a str, &'a str, &'a str, &'a str)>,
}

/// The admission configuration kinds that webhooks and policies never see
/// (kube exempts them so that a broken webhook or policy cannot lock its
/// own configuration).
const EXEMPT_KINDS: [&str; 6] = [
    "ValidatingWebhookConfiguration",
    "MutatingWebhookConfiguration",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
    "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding",
];

/// Whether the request writes an admission configuration.
pub(crate) fn exempt(request: &AdmissionRequest<'_>) -> bool {
    request.rt.group == "admissionregistration.k8s.io"
        && EXEMPT_KINDS.contains(&request.rt.kind.as_str())
}

impl<'a> Attributes<'a> {
    /// The attributes of `request`, with `object` (`None` on a deletion).
    pub fn of(request: &'a AdmissionRequest<'a>, object: Option<&'a Value>) -> Attributes<'a> {
        let rt = request.rt;
        Attributes {
            group: &rt.group,
            version: &rt.version,
            kind: &rt.kind,
            resource: &rt.plural,
            subresource: request.subresource.unwrap_or(""),
            operation: request.operation.as_str(),
            name: request.name,
            namespace: request.namespace,
            is_namespace: rt.strategy.is_namespace(),
            object,
            old: request.old,
            requested: None,
        }
    }
}

/// The request seen through an equivalent resource (one sharing its
/// storage: another version of a CRD, `events.k8s.io/v1` Events for core
/// Events), its objects converted, as kube's `matchPolicy: Equivalent`
/// presents it.
pub(crate) struct Equivalent {
    pub rt: Arc<ResourceType>,
    pub object: Option<Value>,
    pub old: Option<Value>,
}

impl Equivalent {
    /// The resources equivalent to `rt`, other than itself.
    pub fn of(catalog: &Catalog, rt: &ResourceType) -> Vec<Arc<ResourceType>> {
        catalog
            .all()
            .into_iter()
            .filter(|other| {
                other.storage == rt.storage
                    && (other.group != rt.group || other.version != rt.version)
            })
            .collect()
    }

    /// `attrs` converted to `to`.
    pub fn convert(from: &ResourceType, to: Arc<ResourceType>, attrs: &Attributes<'_>) -> Self {
        let convert = |obj: &Value| -> Value {
            let stored = convert::to_storage(from, obj.clone(), &from.storage_api_version);
            convert::to_view(&to, &Arc::new(stored)).as_ref().clone()
        };
        Equivalent {
            object: attrs.object.map(convert),
            old: attrs.old.map(convert),
            rt: to,
        }
    }

    /// The attributes as the equivalent resource gives them.
    pub fn attributes<'a>(&'a self, original: &Attributes<'a>) -> Attributes<'a> {
        Attributes {
            group: &self.rt.group,
            version: &self.rt.version,
            kind: &self.rt.kind,
            resource: &self.rt.plural,
            object: self.object.as_ref(),
            old: self.old.as_ref(),
            requested: Some((
                original.group,
                original.version,
                original.kind,
                original.resource,
            )),
            ..*original
        }
    }

    /// An object of the equivalent resource, converted back to `to` (the
    /// requested resource).
    pub fn back(&self, to: &ResourceType, obj: &Value) -> Value {
        let stored = convert::to_storage(&self.rt, obj.clone(), &self.rt.storage_api_version);
        convert::to_view(to, &Arc::new(stored)).as_ref().clone()
    }

    /// For a custom resource whose CRD converts by webhook: the objects of `attrs` converted
    /// by it (the conversion above only rewrites `apiVersion`).
    ///
    /// # Errors
    /// The webhook's failure, as the registry reports it.
    pub async fn by_webhook(
        mut self,
        caller: &Caller,
        attrs: &Attributes<'_>,
    ) -> Result<Self, ApiError> {
        let Some(hook) = self.rt.custom.as_ref().and_then(|c| c.conversion.clone()) else {
            return Ok(self);
        };
        let desired = self.rt.api_version();
        for (slot, original) in [(&mut self.object, attrs.object), (&mut self.old, attrs.old)] {
            if let Some(original) = original {
                let converted = hook
                    .convert(caller, &desired, &[Arc::new(original.clone())], None)
                    .await
                    .map_err(|e| convert::conversion_failed(&e))?;
                *slot = converted.into_iter().next().map(Arc::unwrap_or_clone);
            }
        }
        Ok(self)
    }

    /// [`Equivalent::back`], through the CRD's conversion webhook when it has one.
    ///
    /// # Errors
    /// The webhook's failure, as the registry reports it.
    pub async fn back_by_webhook(
        &self,
        caller: &Caller,
        to: &ResourceType,
        obj: &Value,
    ) -> Result<Value, ApiError> {
        let Some(hook) = to.custom.as_ref().and_then(|c| c.conversion.as_ref()) else {
            return Ok(self.back(to, obj));
        };
        let converted = hook
            .convert(caller, &to.api_version(), &[Arc::new(obj.clone())], None)
            .await
            .map_err(|e| convert::conversion_failed(&e))?;
        Ok(converted
            .into_iter()
            .next()
            .map(Arc::unwrap_or_clone)
            .unwrap_or(Value::Null))
    }
}

/// The `userInfo` of a request (the server itself, when no user).
pub(crate) fn user_info(user: Option<&UserInfo>) -> Value {
    let Some(user) = user else {
        return json!({"username": "system:apiserver", "groups": ["system:masters"]});
    };
    let mut info = Map::new();
    info.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        info.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        info.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        info.insert("extra".into(), json!(user.extra));
    }
    Value::Object(info)
}

/// The `options` kube sends with each operation.
fn options(operation: &str) -> Value {
    let kind = match operation {
        "CREATE" => "CreateOptions",
        "UPDATE" => "UpdateOptions",
        _ => "DeleteOptions",
    };
    json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"})
}

/// The `request` of an AdmissionReview without its objects (what CEL
/// expressions see as `request`, where `uid` is empty).
pub(crate) fn request_fields(
    uid: &str,
    attrs: &Attributes<'_>,
    user: Option<&UserInfo>,
    dry_run: bool,
) -> Map<String, Value> {
    let mut request = Map::new();
    let kind = json!({"group": attrs.group, "version": attrs.version, "kind": attrs.kind});
    let resource =
        json!({"group": attrs.group, "version": attrs.version, "resource": attrs.resource});
    let (request_kind, request_resource) = match attrs.requested {
        Some((group, version, kind, resource)) => (
            json!({"group": group, "version": version, "kind": kind}),
            json!({"group": group, "version": version, "resource": resource}),
        ),
        None => (kind.clone(), resource.clone()),
    };
    request.insert("uid".into(), json!(uid));
    request.insert("kind".into(), kind);
    request.insert("resource".into(), resource);
    if !attrs.subresource.is_empty() {
        request.insert("subResource".into(), json!(attrs.subresource));
    }
    request.insert("requestKind".into(), request_kind);
    request.insert("requestResource".into(), request_resource);
    if !attrs.subresource.is_empty() {
        request.insert("requestSubResource".into(), json!(attrs.subresource));
    }
    if !attrs.name.is_empty() {
        request.insert("name".into(), json!(attrs.name));
    }
    if !attrs.namespace.is_empty() {
        request.insert("namespace".into(), json!(attrs.namespace));
    }
    request.insert("operation".into(), json!(attrs.operation));
    request.insert("userInfo".into(), user_info(user));
    request.insert("dryRun".into(), json!(dry_run));
    request.insert("options".into(), options(attrs.operation));
    request
}

fn listed(list: &[String], value: &str) -> bool {
    list.iter().any(|x| x == "*" || x == value)
}

/// `res/sub` entries: `*` is every resource without subresource, `*/*`
/// everything, `pods/*` pods and all its subresources, `*/status` every
/// status subresource.
fn resource_listed(list: &[String], resource: &str, subresource: &str) -> bool {
    list.iter().any(|entry| {
        let (res, sub) = entry.split_once('/').unwrap_or((entry, ""));
        (res == "*" || res == resource) && (sub == "*" || sub == subresource)
    })
}

fn scope_matches(scope: &str, attrs: &Attributes<'_>) -> bool {
    let cluster = attrs.is_namespace || attrs.namespace.is_empty();
    match scope {
        "Cluster" => cluster,
        "Namespaced" => !cluster,
        _ => true,
    }
}

fn rule_matches(rule: &Rule, attrs: &Attributes<'_>) -> bool {
    (rule.names.is_empty() || rule.names.iter().any(|n| n == attrs.name))
        && listed(&rule.operations, attrs.operation)
        && listed(&rule.groups, attrs.group)
        && listed(&rule.versions, attrs.version)
        && resource_listed(&rule.resources, attrs.resource, attrs.subresource)
        && scope_matches(&rule.scope, attrs)
}

/// The first equivalent resource of the request's that one of `rules`
/// matches, rule by rule as kube tries them, with the objects converted.
pub(crate) fn equivalent_match(
    catalog: &Catalog,
    rules: &[Rule],
    rt: &ResourceType,
    attrs: &Attributes<'_>,
) -> Option<Equivalent> {
    let equivalents = Equivalent::of(catalog, rt);
    for rule in rules {
        for other in &equivalents {
            let seen = Attributes {
                group: &other.group,
                version: &other.version,
                kind: &other.kind,
                resource: &other.plural,
                ..*attrs
            };
            if rule_matches(rule, &seen) {
                return Some(Equivalent::convert(rt, other.clone(), attrs));
            }
        }
    }
    None
}

/// Whether any of `rules` matches.
pub(crate) fn rules_match(rules: &[Rule], attrs: &Attributes<'_>) -> bool {
    rules.iter().any(|r| rule_matches(r, attrs))
}

fn labels(object: Option<&Value>) -> Option<&Map<String, Value>> {
    object?.pointer("/metadata/labels")?.as_object()
}

/// `objectSelector`: the new or the old object's labels match (an empty
/// selector matches everything).
pub(crate) fn object_selector_matches(
    selector: &Result<LabelSelector, SelectorError>,
    attrs: &Attributes<'_>,
) -> Result<bool, SelectorError> {
    let selector = selector.as_ref().map_err(Clone::clone)?;
    if selector.is_everything() {
        return Ok(true);
    }
    let matches = |o: Option<&Value>| {
        o.is_some_and(|o| o.get("metadata").is_some()) && selector.matches(labels(o))
    };
    Ok(matches(attrs.object) || matches(attrs.old))
}

/// Whether `selector` (a `namespaceSelector`) selects the request's
/// namespace: always for cluster-scoped objects; a Namespace by its own new
/// labels; anything else by its stored Namespace's (404 if there is none).
///
/// # Errors
/// A selector that does not parse (500); a namespace that does not exist.
pub(crate) fn namespace_selected(
    store: &Store,
    selector: &Result<LabelSelector, SelectorError>,
    attrs: &Attributes<'_>,
) -> Result<bool, ApiError> {
    let selector = selector.as_ref().map_err(ApiError::internal)?;
    if selector.is_everything() {
        return Ok(true);
    }
    match namespace_labels(attrs) {
        NamespaceLabels::Any => Ok(true),
        NamespaceLabels::Own(labels) => Ok(selector.matches(labels)),
        NamespaceLabels::Stored(name) => {
            let namespace = namespace_object(store, name)?;
            Ok(selector.matches(labels(Some(&namespace))))
        }
    }
}

/// The stored Namespace `name`.
///
/// # Errors
/// 404 when there is none.
pub(crate) fn namespace_object(store: &Store, name: &str) -> Result<Value, ApiError> {
    let stored = store
        .current(&format!("/core/namespaces/{name}"))
        .ok_or_else(|| {
            ApiError::not_found(
                crate::status::ResourceRef {
                    group: "",
                    resource: "namespaces",
                },
                name,
            )
        })?;
    Ok(stored.object.as_ref().clone())
}

/// Whose labels `namespaceSelector` is matched against.
enum NamespaceLabels<'a> {
    /// Cluster-scoped: every selector matches.
    Any,
    /// A Namespace written: its own new labels.
    Own(Option<&'a Map<String, Value>>),
    /// The stored Namespace of this name.
    Stored(&'a str),
}

/// Which labels the `namespaceSelector` of a request is matched against.
fn namespace_labels<'a>(attrs: &Attributes<'a>) -> NamespaceLabels<'a> {
    if attrs.is_namespace {
        if attrs.subresource.is_empty() && attrs.operation != "DELETE" {
            return NamespaceLabels::Own(labels(attrs.object));
        }
        return NamespaceLabels::Stored(attrs.namespace);
    }
    if attrs.namespace.is_empty() {
        return NamespaceLabels::Any;
    }
    NamespaceLabels::Stored(attrs.namespace)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn resources_and_subresources_match_as_kube_splits_them() {
        assert!(resource_listed(&list(&["*"]), "pods", ""));
        assert!(!resource_listed(&list(&["*"]), "pods", "status"));
        assert!(resource_listed(&list(&["*/*"]), "pods", "status"));
        assert!(resource_listed(&list(&["pods/*"]), "pods", "exec"));
        assert!(resource_listed(&list(&["pods/*"]), "pods", ""));
        assert!(resource_listed(
            &list(&["*/status"]),
            "deployments",
            "status"
        ));
        assert!(!resource_listed(&list(&["*/status"]), "deployments", ""));
        assert!(!resource_listed(&list(&["pods"]), "pods", "status"));
    }

    #[test]
    fn namespaces_count_as_cluster_scoped() {
        let attrs = |namespace, is_namespace| Attributes {
            group: "",
            version: "v1",
            kind: "X",
            resource: "x",
            subresource: "",
            operation: "CREATE",
            name: "n",
            namespace,
            is_namespace,
            object: None,
            old: None,
            requested: None,
        };
        assert!(scope_matches("Cluster", &attrs("team", true)));
        assert!(!scope_matches("Namespaced", &attrs("team", true)));
        assert!(scope_matches("Namespaced", &attrs("team", false)));
        assert!(scope_matches("Cluster", &attrs("", false)));
        assert!(scope_matches("*", &attrs("", false)));
    }
}
