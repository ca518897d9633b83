//! The operations of one resource in an OpenAPI v3 document: the routes
//! kube-apiserver registers for it (collection, item, `status`, `scale`),
//! each with kube's operation id and tag, query parameters, request and
//! response media types and `x-kubernetes-group-version-kind`.
//!
//! Custom resources follow apiextensions-apiserver's builder: their PATCH
//! operations consume only JSON patch, merge patch and apply patch (never
//! strategic merge patch, which kubectl would otherwise send), and they
//! consume and produce JSON and YAML only.

use serde_json::{Map, Value, json};

use crate::resources::ResourceType;
use crate::resources::kind::Sub;

/// `#/components/schemas/` references used by the operations.
pub const PATCH_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
/// The Status schema.
pub const STATUS_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
/// The DeleteOptions schema.
pub const DELETE_OPTIONS_SCHEMA: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
/// The autoscaling/v1 Scale schema.
pub const SCALE_SCHEMA: &str = "io.k8s.api.autoscaling.v1.Scale";

const JSON: &str = "application/json";
const YAML: &str = "application/yaml";
const PROTOBUF: &str = "application/vnd.kubernetes.protobuf";
const JSON_WATCH: &str = "application/json;stream=watch";
const PROTOBUF_WATCH: &str = "application/vnd.kubernetes.protobuf;stream=watch";
const JSON_PATCH: &str = "application/json-patch+json";
const MERGE_PATCH: &str = "application/merge-patch+json";
const STRATEGIC_PATCH: &str = "application/strategic-merge-patch+json";
const APPLY_PATCH: &str = "application/apply-patch+yaml";

/// The verbs of kube's route table, as they name operations.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    List,
    Create,
    DeleteCollection,
    Read,
    Replace,
    Delete,
    Patch,
}

impl Verb {
    /// The verb as it begins a route's operation name.
    fn operation(self) -> &'static str {
        match self {
            Verb::List => "list",
            Verb::Create => "create",
            Verb::DeleteCollection => "deletecollection",
            Verb::Read => "read",
            Verb::Replace => "replace",
            Verb::Delete => "delete",
            Verb::Patch => "patch",
        }
    }

    /// The `x-kubernetes-action`.
    fn action(self) -> &'static str {
        match self {
            Verb::List => "list",
            Verb::Create => "post",
            Verb::DeleteCollection => "deletecollection",
            Verb::Read => "get",
            Verb::Replace => "put",
            Verb::Delete => "delete",
            Verb::Patch => "patch",
        }
    }

    /// The HTTP method, as an OpenAPI path item key.
    fn method(self) -> &'static str {
        match self {
            Verb::List | Verb::Read => "get",
            Verb::Create => "post",
            Verb::DeleteCollection | Verb::Delete => "delete",
            Verb::Replace => "put",
            Verb::Patch => "patch",
        }
    }
}

/// What an operation returns.
#[derive(Clone, Copy)]
enum Returns {
    Object,
    List,
    Status,
    Scale,
}

/// One route: a verb on a path of the resource.
struct Route {
    verb: Verb,
    /// `status` or `scale`.
    subresource: Option<&'static str>,
    /// The cluster-wide list of a namespaced resource.
    all_namespaces: bool,
    returns: Returns,
}

/// Everything an operation of `rt` needs to know about the resource.
pub struct Resource<'a> {
    rt: &'a ResourceType,
    custom: bool,
    /// The schema name of the kind.
    schema: String,
    /// The schema name of its list kind.
    list_schema: String,
    /// Whether DELETE answers with the object rather than a Status.
    delete_returns_object: bool,
}

impl<'a> Resource<'a> {
    /// Describes `rt`, whose kind's schema is named `schema`.
    pub fn new(rt: &'a ResourceType, schema: String, delete_returns_object: bool) -> Self {
        let list_schema = format!("{schema}List");
        Resource {
            rt,
            custom: rt.custom.is_some(),
            schema,
            list_schema,
            delete_returns_object,
        }
    }

    /// The path items of the resource: `(path, item)` pairs.
    pub fn paths(&self, base: &str) -> Vec<(String, Value)> {
        let rt = self.rt;
        let collection = if rt.namespaced {
            format!("{base}/namespaces/{{namespace}}/{}", rt.plural)
        } else {
            format!("{base}/{}", rt.plural)
        };
        let item = format!("{collection}/{{name}}");
        let route = |verb, returns| Route {
            verb,
            subresource: None,
            all_namespaces: false,
            returns,
        };
        let delete_returns = if self.delete_returns_object && !self.custom {
            Returns::Object
        } else {
            Returns::Status
        };
        let mut out = Vec::new();
        if rt.namespaced {
            let all = Route {
                all_namespaces: true,
                ..route(Verb::List, Returns::List)
            };
            out.push((
                format!("{base}/{}", rt.plural),
                self.path_item(&[all], false, false),
            ));
        }
        out.push((
            collection.clone(),
            self.path_item(
                &[
                    route(Verb::List, Returns::List),
                    route(Verb::Create, Returns::Object),
                    route(Verb::DeleteCollection, Returns::Status),
                ],
                rt.namespaced,
                false,
            ),
        ));
        out.push((
            item.clone(),
            self.path_item(
                &[
                    route(Verb::Read, Returns::Object),
                    route(Verb::Replace, Returns::Object),
                    route(Verb::Delete, delete_returns),
                    route(Verb::Patch, Returns::Object),
                ],
                rt.namespaced,
                true,
            ),
        ));
        for (sub, served, returns) in [
            ("status", rt.serves(Sub::Status), Returns::Object),
            ("scale", rt.serves(Sub::Scale), Returns::Scale),
        ] {
            if !served {
                continue;
            }
            let routes: Vec<Route> = [Verb::Read, Verb::Replace, Verb::Patch]
                .into_iter()
                .map(|verb| Route {
                    subresource: Some(sub),
                    ..route(verb, returns)
                })
                .collect();
            out.push((
                format!("{item}/{sub}"),
                self.path_item(&routes, rt.namespaced, true),
            ));
        }
        out
    }

    /// A path item: its operations, and the parameters common to them.
    fn path_item(&self, routes: &[Route], namespaced: bool, named: bool) -> Value {
        let mut item = Map::new();
        for r in routes {
            item.insert(r.verb.method().into(), self.operation(r));
        }
        let mut params = Vec::new();
        if named {
            params.push(json!({"name": "name", "in": "path", "description": format!("name of the {}", self.rt.kind), "required": true, "schema": {"type": "string", "uniqueItems": true}}));
        }
        if namespaced {
            params.push(json!({"name": "namespace", "in": "path", "description": "object name and auth scope, such as for teams and projects", "required": true, "schema": {"type": "string", "uniqueItems": true}}));
        }
        params.push(query(
            "pretty",
            "string",
            "If 'true', then the output is pretty printed.",
        ));
        item.insert("parameters".into(), Value::Array(params));
        Value::Object(item)
    }

    fn operation(&self, r: &Route) -> Value {
        let rt = self.rt;
        let (id, tag) = operation_id(
            &rt.group,
            &rt.version,
            &self.route_operation(r),
            r.verb.operation(),
        );
        let mut op = Map::new();
        op.insert("tags".into(), json!([tag]));
        op.insert("description".into(), json!(self.description(r)));
        op.insert("operationId".into(), json!(id));
        let params = self.parameters(r.verb);
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        if let Some(body) = self.request_body(r) {
            op.insert("requestBody".into(), body);
        }
        op.insert("responses".into(), self.responses(r));
        op.insert("x-kubernetes-action".into(), json!(r.verb.action()));
        let sub_kind = match r.returns {
            Returns::Scale if !self.custom => Sub::Scale.kind(),
            _ => None,
        };
        let (group, version, kind) =
            sub_kind.unwrap_or((rt.group.as_str(), rt.version.as_str(), rt.kind.as_str()));
        op.insert(
            "x-kubernetes-group-version-kind".into(),
            json!({"group": group, "version": version, "kind": kind}),
        );
        Value::Object(op)
    }

    /// The route's operation name before the group and version are woven
    /// in, e.g. `patchNamespacedGreetingStatus`.
    fn route_operation(&self, r: &Route) -> String {
        let scope = if self.rt.namespaced && !r.all_namespaces {
            "Namespaced"
        } else {
            ""
        };
        let sub = r.subresource.map(capitalized).unwrap_or_default();
        let all = if r.all_namespaces {
            "ForAllNamespaces"
        } else {
            ""
        };
        format!("{}{scope}{}{sub}{all}", r.verb.operation(), self.rt.kind)
    }

    fn description(&self, r: &Route) -> String {
        let kind = &self.rt.kind;
        let sub = r
            .subresource
            .map(|s| format!(" {s} of"))
            .unwrap_or_default();
        match r.verb {
            Verb::List => format!("list objects of kind {kind}"),
            Verb::Create => format!("create{sub} {}{kind}", article(kind)),
            Verb::DeleteCollection => format!("delete collection of {kind}"),
            Verb::Read => format!("read{sub} the specified {kind}"),
            Verb::Replace => format!("replace{sub} the specified {kind}"),
            Verb::Delete => format!("delete {}{kind}", article(kind)),
            Verb::Patch => format!("partially update{sub} the specified {kind}"),
        }
    }

    /// The query parameters of the verb's options (`GetOptions`,
    /// `ListOptions`, `CreateOptions`, `UpdateOptions`, `PatchOptions`,
    /// `DeleteOptions`).
    fn parameters(&self, verb: Verb) -> Vec<Value> {
        let write = [
            (
                "dryRun",
                "string",
                "When present, indicates that modifications should not be persisted. The only valid value is All.",
            ),
            (
                "fieldManager",
                "string",
                "The name of the actor or entity making these changes.",
            ),
            (
                "fieldValidation",
                "string",
                "How to treat unknown or duplicate fields in the request: Ignore, Warn (the default) or Strict.",
            ),
        ];
        let list = [
            (
                "allowWatchBookmarks",
                "boolean",
                "Requests watch events of type BOOKMARK.",
            ),
            (
                "continue",
                "string",
                "The continue token of a previous paginated list.",
            ),
            (
                "fieldSelector",
                "string",
                "Restricts the returned objects by their fields.",
            ),
            (
                "labelSelector",
                "string",
                "Restricts the returned objects by their labels.",
            ),
            (
                "limit",
                "integer",
                "The maximum number of objects to return in one page.",
            ),
            (
                "resourceVersion",
                "string",
                "Which resourceVersion the result must be at least as new as (with resourceVersionMatch, how to interpret it).",
            ),
            (
                "resourceVersionMatch",
                "string",
                "How resourceVersion applies to a list: Exact or NotOlderThan.",
            ),
            (
                "sendInitialEvents",
                "boolean",
                "With watch, starts the stream with synthetic ADDED events for the current objects.",
            ),
            (
                "timeoutSeconds",
                "integer",
                "Timeout for the list or watch call.",
            ),
            (
                "watch",
                "boolean",
                "Watch for changes to the described resources.",
            ),
        ];
        let delete = [
            (
                "dryRun",
                "string",
                "When present, indicates that modifications should not be persisted. The only valid value is All.",
            ),
            (
                "gracePeriodSeconds",
                "integer",
                "The duration in seconds before the object should be deleted.",
            ),
            (
                "ignoreStoreReadErrorWithClusterBreakingPotential",
                "boolean",
                "Deletes a corrupt object that cannot be read from storage.",
            ),
            (
                "orphanDependents",
                "boolean",
                "Deprecated: use propagationPolicy.",
            ),
            (
                "propagationPolicy",
                "string",
                "Whether and how garbage collection is performed: Orphan, Background or Foreground.",
            ),
        ];
        let mut out: Vec<(&str, &str, &str)> = Vec::new();
        match verb {
            Verb::List => out.extend(list),
            Verb::DeleteCollection => {
                if !self.custom {
                    out.extend(delete);
                }
                out.extend(list);
            }
            Verb::Read => {
                if self.custom {
                    out.push((
                        "resourceVersion",
                        "string",
                        "The resourceVersion to serve the object at.",
                    ));
                }
            }
            Verb::Create | Verb::Replace => out.extend(write),
            Verb::Patch => {
                out.extend(write);
                if !self.custom {
                    out.push((
                        "force",
                        "boolean",
                        "Forces an apply request to take over conflicting fields.",
                    ));
                }
            }
            Verb::Delete => out.extend(delete),
        }
        out.sort_by(|a, b| a.0.cmp(b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        out.into_iter().map(|(n, t, d)| query(n, t, d)).collect()
    }

    /// The media types a verb's request body may come in.
    fn consumes(&self, verb: Verb) -> Vec<&'static str> {
        match (verb, self.custom) {
            (Verb::Patch, true) => vec![JSON_PATCH, MERGE_PATCH, APPLY_PATCH],
            (Verb::Patch, false) => vec![JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH, APPLY_PATCH],
            (_, true) => vec![JSON, YAML],
            (_, false) => vec!["*/*"],
        }
    }

    /// The media types a verb answers in.
    fn produces(&self, verb: Verb) -> Vec<&'static str> {
        match (verb, self.custom) {
            (_, true) => vec![JSON, YAML],
            (Verb::List, false) => vec![JSON, YAML, PROTOBUF, JSON_WATCH, PROTOBUF_WATCH],
            (_, false) => vec![JSON, YAML, PROTOBUF],
        }
    }

    fn request_body(&self, r: &Route) -> Option<Value> {
        let (schema, required) = match (r.verb, r.returns) {
            (Verb::Patch, _) => (PATCH_SCHEMA, true),
            (Verb::Create | Verb::Replace, Returns::Scale) => (SCALE_SCHEMA, true),
            (Verb::Create | Verb::Replace, _) => (self.schema.as_str(), true),
            (Verb::Delete | Verb::DeleteCollection, _) => (DELETE_OPTIONS_SCHEMA, false),
            _ => return None,
        };
        let content: Map<String, Value> = self
            .consumes(r.verb)
            .into_iter()
            .map(|t| (t.to_string(), json!({"schema": reference(schema)})))
            .collect();
        Some(json!({"content": content, "required": required}))
    }

    fn responses(&self, r: &Route) -> Value {
        let schema = match r.returns {
            Returns::Object => self.schema.as_str(),
            Returns::List => self.list_schema.as_str(),
            Returns::Status => STATUS_SCHEMA,
            Returns::Scale => SCALE_SCHEMA,
        };
        let content: Map<String, Value> = self
            .produces(r.verb)
            .into_iter()
            .map(|t| (t.to_string(), json!({"schema": reference(schema)})))
            .collect();
        let codes: &[(&str, &str)] = match (r.verb, self.custom) {
            (Verb::Create, _) => &[("200", "OK"), ("201", "Created"), ("202", "Accepted")],
            (Verb::Replace, _) => &[("200", "OK"), ("201", "Created")],
            (Verb::Delete, _) => &[("200", "OK"), ("202", "Accepted")],
            (Verb::Patch, false) => &[("200", "OK"), ("201", "Created")],
            _ => &[("200", "OK")],
        };
        let mut out = Map::new();
        for (code, text) in codes {
            out.insert(
                (*code).into(),
                json!({"description": text, "content": content}),
            );
        }
        out.insert("401".into(), json!({"description": "Unauthorized"}));
        Value::Object(out)
    }
}

fn reference(schema: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{schema}")})
}

fn query(name: &str, kind: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": kind, "uniqueItems": true}})
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    match c.next() {
        Some(f) => f.to_uppercase().chain(c).collect(),
        None => String::new(),
    }
}

/// `a ` or `an `, as kube words "create a Pod" and "delete an Ingress".
fn article(noun: &str) -> &'static str {
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => "an ",
        _ => "a ",
    }
}

/// An identifier from `s`: letters, `_` and (not first) digits kept, each
/// run of anything else dropped and the next kept letter upper-cased.
fn identifier(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_ascii_digit()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// kube's operation id and tag for a route: the verb, then the group
/// (without `.k8s.io`; `core` for the core group) and version, then the rest
/// of the route's operation name, e.g. `patchExampleComV1NamespacedGreeting`
/// and `exampleCom_v1`.
fn operation_id(group: &str, version: &str, operation: &str, verb: &str) -> (String, String) {
    // kube finds the shortest known verb the operation starts with, so
    // `deletecollection…` becomes `delete` + `Collection…`.
    let prefix = if verb == "deletecollection" {
        "delete"
    } else {
        verb
    };
    let rest = operation.strip_prefix(prefix).unwrap_or(operation);
    let group = if group.is_empty() {
        "core"
    } else {
        group.strip_suffix(".k8s.io").unwrap_or(group)
    };
    let id = format!(
        "{prefix}{}{}{}",
        identifier(group, true),
        identifier(version, true),
        identifier(rest, true)
    );
    let tag = format!(
        "{}_{}",
        identifier(group, false),
        identifier(version, false)
    );
    (id, tag)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_follow_kube() {
        assert_eq!(
            operation_id("", "v1", "readNamespacedPod", "read"),
            ("readCoreV1NamespacedPod".into(), "core_v1".into())
        );
        assert_eq!(
            operation_id(
                "",
                "v1",
                "deletecollectionNamespacedPod",
                "deletecollection"
            ),
            (
                "deleteCoreV1CollectionNamespacedPod".into(),
                "core_v1".into()
            )
        );
        assert_eq!(
            operation_id("rbac.authorization.k8s.io", "v1", "listClusterRole", "list"),
            (
                "listRbacAuthorizationV1ClusterRole".into(),
                "rbacAuthorization_v1".into()
            )
        );
        assert_eq!(
            operation_id(
                "example.com",
                "v1",
                "patchNamespacedGreetingStatus",
                "patch"
            ),
            (
                "patchExampleComV1NamespacedGreetingStatus".into(),
                "exampleCom_v1".into()
            )
        );
        assert_eq!(article("Ingress"), "an ");
        assert_eq!(article("Pod"), "a ");
    }
}
