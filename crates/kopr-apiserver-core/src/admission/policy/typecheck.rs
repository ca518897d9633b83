//! Type checking of a policy's expressions, for its status
//! (`status.typeChecking.expressionWarnings`): every field that a
//! validation's `expression` or `messageExpression` selects from `object`,
//! `oldObject` or `params` is looked up in the OpenAPI schema of each kind
//! the policy matches (at most 10, without wildcards or subresources) and
//! of its paramKind. A field the schema does not declare is reported as
//! cel-go reports it: `undefined field 'x'` with its position.
//!
//! This covers field references, the mistake type checking finds most; it
//! does not check the types of operators and functions, which the CEL
//! library kopr uses cannot infer.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::common::ast::{EntryExpr, Expr};
use kube_cel::cel::parser::{Expression, Parser};
use serde_json::{Value, json};

use crate::resources::{Catalog, ResourceType};

/// The most kinds one policy is checked against, as in kube.
const MAX_KINDS: usize = 10;
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// A kind's schema with the definitions its `$ref`s name.
struct Schema {
    root: Value,
    defs: HashMap<String, Value>,
}

/// What a field selection finds in a schema.
enum Lookup<'a> {
    Field(&'a Value),
    /// The schema does not say (preserved unknown fields, no schema).
    Unknown,
    Undefined,
}

impl Schema {
    fn of(rt: &ResourceType) -> Schema {
        let defs: HashMap<String, Value> = crate::schemas::schemas_for(rt).into_iter().collect();
        let root = match &rt.custom {
            Some(custom) => {
                let mut root = custom.openapi.clone();
                if let Some(props) = root.get_mut("properties").and_then(Value::as_object_mut) {
                    props.insert(
                        "metadata".into(),
                        json!({"$ref": format!("#/components/schemas/{OBJECT_META}")}),
                    );
                }
                root
            }
            None => {
                let name = crate::schemas::schema_name(&rt.group, &rt.version, &rt.kind);
                defs.get(&name).cloned().unwrap_or(Value::Null)
            }
        };
        Schema { root, defs }
    }

    /// Follows `$ref` (also inside a one-element `allOf`).
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        for _ in 0..16 {
            let reference = schema["$ref"].as_str().or_else(|| {
                schema["allOf"]
                    .as_array()
                    .filter(|a| a.len() == 1)
                    .and_then(|a| a[0]["$ref"].as_str())
            });
            let Some(name) = reference.and_then(|r| r.rsplit('/').next()) else {
                return schema;
            };
            match self.defs.get(name) {
                Some(next) => schema = next,
                None => return schema,
            }
        }
        schema
    }

    fn field<'a>(&'a self, schema: &'a Value, name: &str) -> Lookup<'a> {
        let schema = self.resolve(schema);
        if let Some(field) = schema["properties"].get(name) {
            return Lookup::Field(field);
        }
        if schema["x-kubernetes-preserve-unknown-fields"] == true {
            return Lookup::Unknown;
        }
        match &schema["additionalProperties"] {
            Value::Object(_) => return Lookup::Field(&schema["additionalProperties"]),
            Value::Bool(true) => return Lookup::Unknown,
            _ => {}
        }
        if schema["properties"].is_object() {
            Lookup::Undefined
        } else {
            Lookup::Unknown
        }
    }

    /// The first field of `path` the schema does not declare.
    fn undefined(&self, path: &[String]) -> Option<usize> {
        let mut at = &self.root;
        for (i, name) in path.iter().enumerate() {
            match self.field(at, name) {
                Lookup::Field(next) => at = next,
                Lookup::Unknown => return None,
                Lookup::Undefined => return Some(i),
            }
        }
        None
    }
}

/// `root.a.b.c` as root and fields, if `expr` is such a chain.
fn chain(expr: &Expression) -> Option<(String, Vec<String>)> {
    match &expr.expr {
        Expr::Ident(name) => Some((name.clone(), Vec::new())),
        Expr::Select(select) => {
            let (root, mut fields) = chain(&select.operand)?;
            fields.push(select.field.clone());
            Some((root, fields))
        }
        _ => None,
    }
}

/// Every undefined field selection in `expr`: the text before the field
/// and the field.
fn visit(
    expr: &Expression,
    schemas: &HashMap<&str, &Schema>,
    shadowed: &[String],
    found: &mut Vec<(String, String)>,
) {
    let mut recurse = |e: &Expression, more: &[String]| {
        let mut inner = shadowed.to_vec();
        inner.extend_from_slice(more);
        visit(e, schemas, &inner, found);
    };
    match &expr.expr {
        Expr::Select(select) => {
            if let Some((root, fields)) = chain(expr) {
                if let Some(schema) = schemas.get(root.as_str())
                    && !shadowed.contains(&root)
                    && let Some(i) = schema.undefined(&fields)
                {
                    let before: Vec<&str> = std::iter::once(root.as_str())
                        .chain(fields[..i].iter().map(String::as_str))
                        .collect();
                    found.push((before.join("."), fields[i].clone()));
                }
                return;
            }
            recurse(&select.operand, &[]);
        }
        Expr::Call(call) => {
            if let Some(target) = &call.target {
                recurse(target, &[]);
            }
            for arg in &call.args {
                recurse(arg, &[]);
            }
        }
        Expr::Comprehension(c) => {
            let mut vars = vec![c.iter_var.clone(), c.accu_var.clone()];
            vars.extend(c.iter_var2.clone());
            recurse(&c.iter_range, &[]);
            recurse(&c.accu_init, &[]);
            for e in [&c.loop_cond, &c.loop_step, &c.result] {
                recurse(e, &vars);
            }
        }
        Expr::List(list) => list.elements.iter().for_each(|e| recurse(e, &[])),
        Expr::Map(map) => {
            for entry in &map.entries {
                if let EntryExpr::MapEntry(e) = &entry.expr {
                    recurse(&e.key, &[]);
                    recurse(&e.value, &[]);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    recurse(&f.value, &[]);
                }
            }
        }
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// cel-go's report of one undefined field: position, source line, caret.
fn report(source: &str, before: &str, field: &str) -> String {
    let needle = format!("{before}.{field}");
    let at = source
        .find(&needle)
        .map(|i| i + before.len())
        .or_else(|| source.find(&format!(".{field}")))
        .unwrap_or(0);
    let line_start = source[..at].rfind('\n').map_or(0, |i| i + 1);
    let line_no = source[..at].matches('\n').count() + 1;
    let line = source[line_start..].lines().next().unwrap_or("");
    let column = source[line_start..at].chars().count();
    format!(
        "ERROR: <input>:{line_no}:{}: undefined field '{field}'\n | {line}\n | {}^",
        column + 1,
        ".".repeat(column)
    )
}

/// The errors of `source` against `schemas`, cel-go's way (`None`: none).
fn check(source: &str, schemas: &HashMap<&str, &Schema>) -> Option<String> {
    let parsed = Parser::new().parse(source).ok()?;
    let mut found = Vec::new();
    visit(&parsed, schemas, &[], &mut found);
    found.dedup();
    (!found.is_empty()).then(|| {
        found
            .iter()
            .map(|(before, field)| report(source, before, field))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

fn gvk(rt: &ResourceType) -> String {
    format!("{}/{}, Kind={}", rt.group, rt.version, rt.kind)
}

/// The kinds a policy's `matchConstraints.resourceRules` name exactly.
fn matched_kinds(policy: &Value, catalog: &Catalog) -> Vec<Arc<ResourceType>> {
    let mut kinds: Vec<Arc<ResourceType>> = Vec::new();
    let rules = policy
        .pointer("/spec/matchConstraints/resourceRules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for rule in &rules {
        let list = |k: &str| crate::object::string_list(&rule[k]);
        for group in list("apiGroups") {
            for version in list("apiVersions") {
                for resource in list("resources") {
                    if [&group, &version, &resource]
                        .iter()
                        .any(|s| s.contains('*'))
                        || resource.contains('/')
                    {
                        continue;
                    }
                    if let Some(rt) = catalog.get(&group, &version, &resource)
                        && !kinds.iter().any(|k| Arc::ptr_eq(k, &rt))
                        && kinds.len() < MAX_KINDS
                    {
                        kinds.push(rt);
                    }
                }
            }
        }
    }
    kinds
}

/// `status.typeChecking.expressionWarnings` of a stored policy.
pub fn expression_warnings(policy: &Value, catalog: &Catalog) -> Vec<Value> {
    let kinds: Vec<(String, Schema)> = matched_kinds(policy, catalog)
        .iter()
        .map(|rt| (gvk(rt), Schema::of(rt)))
        .collect();
    if kinds.is_empty() {
        return Vec::new();
    }
    let params = policy
        .pointer("/spec/paramKind")
        .and_then(|p| {
            let api_version = p["apiVersion"].as_str()?;
            let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
            catalog.by_kind(group, version, p["kind"].as_str()?)
        })
        .map(|rt| Schema::of(&rt));
    let mut warnings = Vec::new();
    let validations = policy
        .pointer("/spec/validations")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for (i, validation) in validations.iter().enumerate() {
        for key in ["expression", "messageExpression"] {
            let Some(source) = validation[key].as_str() else {
                continue;
            };
            let per_kind: Vec<String> = kinds
                .iter()
                .filter_map(|(gvk, schema)| {
                    let mut schemas: HashMap<&str, &Schema> =
                        HashMap::from([("object", schema), ("oldObject", schema)]);
                    if let Some(params) = &params {
                        schemas.insert("params", params);
                    }
                    check(source, &schemas).map(|e| format!("{gvk}: {e}\n"))
                })
                .collect();
            if !per_kind.is_empty() {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{key}"),
                    "warning": per_kind.join("\n"),
                }));
            }
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn catalog() -> Catalog {
        let catalog = Catalog::default();
        crate::kinds::register(&catalog);
        catalog
    }

    fn policy(expression: &str) -> Value {
        json!({"spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "validations": [{"expression": expression}]}})
    }

    #[test]
    fn undefined_fields_are_reported_as_cel_go_does() {
        let warnings = expression_warnings(&policy("object.replicas > 1"), &catalog());
        assert_eq!(
            warnings,
            [json!({"fieldRef": "spec.validations[0].expression",
                    "warning": "apps/v1, Kind=Deployment: ERROR: <input>:1:7: undefined field 'replicas'\n | object.replicas > 1\n | ......^\n"})]
        );
    }

    #[test]
    fn declared_fields_maps_and_shadowed_variables_pass() {
        for ok in [
            "object.spec.replicas <= int(params.data.max)",
            "object.metadata.labels.anything == 'x'",
            "object.spec.template.spec.containers.all(c, c.whatever != '')",
            "has(object.spec.selector.matchLabels)",
            "oldObject == null || oldObject.spec.paused",
        ] {
            assert_eq!(
                expression_warnings(&policy(ok), &catalog()),
                Vec::<Value>::new(),
                "{ok}"
            );
        }
        let warnings = expression_warnings(&policy("params.spec.max > 1"), &catalog());
        assert!(
            warnings[0]["warning"]
                .as_str()
                .is_some_and(|w| w.contains("undefined field 'spec'")),
            "{warnings:?}"
        );
    }

    #[test]
    fn wildcards_are_not_checked() {
        let mut p = policy("object.nothing");
        p["spec"]["matchConstraints"]["resourceRules"][0]["resources"] = json!(["*"]);
        assert!(expression_warnings(&p, &catalog()).is_empty());
    }
}
