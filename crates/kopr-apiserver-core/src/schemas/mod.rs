//! OpenAPI v3 component schemas of the served kinds, named and shaped as
//! kube-apiserver publishes them: generated once from k8s-openapi's
//! `schemars` implementations, then touched up (group-version-kind and
//! list/patch extensions, int-or-string and quantity shapes, list kinds).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::LazyLock;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use schemars::generate::SchemaSettings;
use serde_json::{Value, json};

use crate::resources::ResourceType;
use crate::resources::kind::schema_of;

mod extensions;

use extensions::apply_extensions;

const REF_PREFIX: &str = "#/components/schemas/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const JSON_ANY: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON";

/// The OpenAPI component name of a kind, as kube-apiserver names it: e.g.
/// `io.k8s.api.core.v1.ConfigMap`, `io.k8s.api.apps.v1.Deployment`,
/// `io.k8s.api.rbac.v1.Role`; for groups that are not built in (custom
/// resources) the reversed-domain form kube uses for CRDs, e.g. group
/// `example.com` gives `com.example.v1.Greeting`.
pub fn schema_name(group: &str, version: &str, kind: &str) -> String {
    match builtin_package(group) {
        Some(package) => format!("{package}.{version}.{kind}"),
        None => {
            let reversed: Vec<&str> = group.split('.').filter(|s| !s.is_empty()).rev().collect();
            format!("{}.{version}.{kind}", reversed.join("."))
        }
    }
}

/// The Go package prefix kube-apiserver uses in schema names for a built-in
/// group, or `None` for a group that is not built in.
fn builtin_package(group: &str) -> Option<String> {
    let short = match group {
        "" => "core",
        "apiextensions.k8s.io" => {
            return Some("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions".into());
        }
        "apiregistration.k8s.io" => {
            return Some("io.k8s.kube-aggregator.pkg.apis.apiregistration".into());
        }
        "internal.apiserver.k8s.io" => "apiserverinternal",
        "apps" | "batch" | "autoscaling" | "policy" => group,
        "admissionregistration.k8s.io"
        | "authentication.k8s.io"
        | "authorization.k8s.io"
        | "certificates.k8s.io"
        | "coordination.k8s.io"
        | "discovery.k8s.io"
        | "events.k8s.io"
        | "flowcontrol.apiserver.k8s.io"
        | "networking.k8s.io"
        | "node.k8s.io"
        | "rbac.authorization.k8s.io"
        | "resource.k8s.io"
        | "scheduling.k8s.io"
        | "storage.k8s.io"
        | "storagemigration.k8s.io" => group.split('.').next().unwrap_or(group),
        _ => return None,
    };
    Some(format!("io.k8s.api.{short}"))
}

/// The component schemas needed to describe a kind: its own schema (and,
/// for built-in kinds, its list kind) plus every schema they reference,
/// transitively, as `(name, schema)` pairs. Kinds without a built-in schema
/// get one permissive object schema carrying the group-version-kind
/// extension, plus the `ObjectMeta` schemas its `metadata` refers to.
pub fn schemas_for(rt: &ResourceType) -> Vec<(String, Value)> {
    let all = &*ALL;
    let name = schema_name(&rt.group, &rt.version, &rt.kind);
    if let Some(names) = all.closures.get(&name) {
        return names
            .iter()
            .filter_map(|n| all.defs.get(n).map(|s| (n.clone(), s.clone())))
            .collect();
    }
    let mut out = vec![(name, permissive(rt, all.defs.contains_key(OBJECT_META)))];
    if all.defs.contains_key(OBJECT_META) {
        out.extend(
            closure(&all.defs, &[OBJECT_META.to_string()])
                .into_iter()
                .filter_map(|n| all.defs.get(&n).map(|s| (n, s.clone()))),
        );
    }
    out
}

/// The list schema (`<Kind>List`) of a kind without a built-in one, such
/// as a custom resource, whose own schema is `kind_schema`.
pub fn list_schema_for(rt: &ResourceType, kind_schema: &Value) -> Value {
    let name = schema_name(&rt.group, &rt.version, &rt.kind);
    list_schema(&rt.group, &rt.version, &rt.kind, &name, kind_schema)
}

/// The schemas operations refer to beside the kinds' own: Status,
/// DeleteOptions, autoscaling/v1 Scale and ListMeta, with everything they
/// reference.
pub fn operation_schemas() -> Vec<(String, Value)> {
    let all = &*ALL;
    let roots: Vec<String> = [
        "io.k8s.apimachinery.pkg.apis.meta.v1.Status",
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "io.k8s.api.autoscaling.v1.Scale",
        LIST_META,
    ]
    .into_iter()
    .filter(|n| all.defs.contains_key(*n))
    .map(String::from)
    .collect();
    closure(&all.defs, &roots)
        .into_iter()
        .filter_map(|n| all.defs.get(&n).map(|s| (n, s.clone())))
        .collect()
}

/// A permissive schema for a kind without a built-in schema.
fn permissive(rt: &ResourceType, with_meta: bool) -> Value {
    let api_version = if rt.group.is_empty() {
        rt.version.clone()
    } else {
        format!("{}/{}", rt.group, rt.version)
    };
    let mut schema = json!({
        "description": format!("{} of {api_version}.", rt.kind),
        "type": "object",
        "properties": {
            "apiVersion": {"description": "APIVersion defines the versioned schema of this representation of an object.", "type": "string"},
            "kind": {"description": "Kind is a string value representing the REST resource this object represents.", "type": "string"},
        },
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-group-version-kind": [gvk(&rt.group, &rt.version, &rt.kind)],
    });
    if with_meta {
        schema["properties"]["metadata"] = json!({
            "allOf": [{"$ref": format!("{REF_PREFIX}{OBJECT_META}")}],
            "description": "Standard object's metadata.",
        });
    }
    schema
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "kind": kind, "version": version})
}

/// One built-in kind: where it lives, whether it has a list kind, and how to
/// put its schema into a generator.
#[derive(Clone, Copy)]
struct Builtin {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    list: bool,
    add: crate::resources::kind::SchemaFn,
}

/// The built-in kinds with generated schemas: each kind whose [`KindDef`] gives one,
/// and the subresource bodies.
///
/// [`KindDef`]: crate::resources::kind::KindDef
static BUILTINS: LazyLock<Vec<Builtin>> = LazyLock::new(|| {
    crate::kinds::all()
        .into_iter()
        .filter_map(|def| {
            Some(Builtin {
                group: def.group,
                version: def.version,
                kind: def.kind,
                list: true,
                add: def.schema?,
            })
        })
        .chain(crate::kinds::bodies().map(|body| Builtin {
            group: body.group,
            version: body.version,
            kind: body.kind,
            list: false,
            add: body.schema,
        }))
        .collect()
});

/// Every generated schema, and for each built-in kind the names of the
/// schemas describing it.
struct All {
    defs: BTreeMap<String, Value>,
    closures: HashMap<String, Vec<String>>,
}

static ALL: LazyLock<All> = LazyLock::new(build);

fn build() -> All {
    // Generation runs k8s-openapi's and schemars' code; should it ever
    // panic, serve permissive schemas rather than take the server down.
    let defs = std::panic::catch_unwind(generate).unwrap_or_default();
    let mut closures = HashMap::new();
    for b in BUILTINS.iter() {
        let name = schema_name(b.group, b.version, b.kind);
        if !defs.contains_key(&name) {
            continue;
        }
        let mut roots = vec![name.clone()];
        if b.list {
            roots.push(format!("{name}List"));
        }
        closures.insert(name, closure(&defs, &roots));
    }
    All { defs, closures }
}

/// Generates, renames and touches up the schemas of all built-in kinds.
fn generate() -> BTreeMap<String, Value> {
    let mut g = SchemaSettings::openapi3().into_generator();
    for b in BUILTINS.iter() {
        (b.add)(&mut g);
    }
    schema_of::<meta::ObjectMeta>(&mut g);
    schema_of::<meta::ListMeta>(&mut g);
    schema_of::<meta::Status>(&mut g);
    schema_of::<meta::DeleteOptions>(&mut g);
    let mut defs: BTreeMap<String, Value> = g
        .take_definitions(true)
        .into_iter()
        .map(|(name, schema)| (kube_name(&name), schema))
        .collect();
    for schema in defs.values_mut() {
        rewrite_refs(schema);
    }
    fix_special_types(&mut defs);
    apply_extensions(&mut defs);
    for b in BUILTINS.iter() {
        let name = schema_name(b.group, b.version, b.kind);
        let Some(schema) = defs.get_mut(&name) else {
            continue;
        };
        set_gvk(schema, b.group, b.version, b.kind);
        if b.list {
            let list = list_schema(b.group, b.version, b.kind, &name, schema);
            defs.insert(format!("{name}List"), list);
        }
    }
    defs
}

/// The kube name of a definition. k8s-openapi already names its schemas
/// after the Go packages (`io.k8s.api.core.v1.ConfigMap`); this only strips
/// a path prefix, should a schemars version ever add one.
fn kube_name(name: &str) -> String {
    let name = name.rsplit('/').next().unwrap_or(name);
    name.replace("~1", "/").replace("~0", "~")
}

/// Points every `$ref` at `#/components/schemas/<kube name>`.
fn rewrite_refs(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get_mut("$ref") {
                let target = r
                    .strip_prefix(REF_PREFIX)
                    .or_else(|| r.strip_prefix("#/$defs/"))
                    .or_else(|| r.strip_prefix("#/definitions/"))
                    .unwrap_or(r.as_str());
                *r = format!("{REF_PREFIX}{}", kube_name(target));
            }
            for child in m.values_mut() {
                rewrite_refs(child);
            }
        }
        Value::Array(a) => a.iter_mut().for_each(rewrite_refs),
        _ => {}
    }
}

/// Gives the types kube-apiserver publishes with special shapes in OpenAPI
/// v3 those shapes: int-or-string and quantity as `oneOf` unions, and
/// arbitrary JSON without a type.
fn fix_special_types(defs: &mut BTreeMap<String, Value>) {
    if let Some(Value::Object(m)) = defs.get_mut(INT_OR_STRING) {
        m.remove("x-kubernetes-int-or-string");
        m.insert("format".into(), json!("int-or-string"));
        m.insert(
            "oneOf".into(),
            json!([{"type": "integer"}, {"type": "string"}]),
        );
    }
    if let Some(Value::Object(m)) = defs.get_mut(QUANTITY) {
        m.remove("x-kubernetes-int-or-string");
        m.insert(
            "oneOf".into(),
            json!([{"type": "string"}, {"type": "number"}]),
        );
    }
    if let Some(Value::Object(m)) = defs.get_mut(JSON_ANY) {
        m.remove("type");
    }
}

/// Adds the group-version-kind extension to a top-level kind and drops
/// `metadata` from its required fields (k8s-openapi marks it required for
/// Rust's sake; kube does not).
fn set_gvk(schema: &mut Value, group: &str, version: &str, kind: &str) {
    let Value::Object(m) = schema else { return };
    m.insert(
        "x-kubernetes-group-version-kind".into(),
        json!([gvk(group, version, kind)]),
    );
    let mut drop_required = false;
    if let Some(Value::Array(req)) = m.get_mut("required") {
        req.retain(|r| r != "metadata");
        drop_required = req.is_empty();
    }
    if drop_required {
        m.remove("required");
    }
}

/// The schema of a kind's list kind (`<Kind>List`), built from the kind's
/// own generated schema.
fn list_schema(group: &str, version: &str, kind: &str, name: &str, kind_schema: &Value) -> Value {
    let prop = |p: &str| {
        kind_schema
            .pointer(&format!("/properties/{p}"))
            .cloned()
            .unwrap_or_else(|| json!({"type": "string"}))
    };
    json!({
        "description": format!("{kind}List is a list of {kind} objects."),
        "type": "object",
        "properties": {
            "apiVersion": prop("apiVersion"),
            "items": {
                "description": format!("List of {kind} objects."),
                "type": "array",
                "items": {"$ref": format!("{REF_PREFIX}{name}")},
            },
            "kind": prop("kind"),
            "metadata": {
                "allOf": [{"$ref": format!("{REF_PREFIX}{LIST_META}")}],
                "description": "Standard list metadata.",
            },
        },
        "required": ["items"],
        "x-kubernetes-group-version-kind": [gvk(group, version, &format!("{kind}List"))],
    })
}

/// The names of `roots` and of every schema they reference, transitively,
/// in breadth-first order. References to unknown names are skipped.
fn closure(defs: &BTreeMap<String, Value>, roots: &[String]) -> Vec<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut order = Vec::new();
    let mut queue: std::collections::VecDeque<String> = roots.iter().cloned().collect();
    while let Some(name) = queue.pop_front() {
        if seen.contains(&name) {
            continue;
        }
        let Some(schema) = defs.get(&name) else {
            continue;
        };
        seen.insert(name.clone());
        order.push(name);
        let mut refs = Vec::new();
        collect_refs(schema, &mut refs);
        queue.extend(refs.into_iter().filter(|r| !seen.contains(r)));
    }
    order
}

/// The component names a schema refers to.
fn collect_refs(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            if let Some(Value::String(r)) = m.get("$ref")
                && let Some(name) = r.strip_prefix(REF_PREFIX)
            {
                out.push(name.to_string());
            }
            m.values().for_each(|c| collect_refs(c, out));
        }
        Value::Array(a) => a.iter().for_each(|c| collect_refs(c, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
