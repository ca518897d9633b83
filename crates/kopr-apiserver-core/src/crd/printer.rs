//! Table output of custom resources: `Name` first, then the version's
//! `additionalPrinterColumns` (typed cells, dates as ages, missing values
//! empty), or `Name` and `Age` when it has none.

use jsonpath_rust::JsonPath;
use serde_json::{Value, json};

use super::{CustomVersion, PrinterColumn};
use crate::table::{IncludeObject, human_duration, partial_object_metadata};

fn default_columns() -> Vec<PrinterColumn> {
    vec![PrinterColumn {
        name: "Age".into(),
        column_type: "date".into(),
        format: String::new(),
        description: "CreationTimestamp is a timestamp representing the server time when this object was created."
            .into(),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

fn columns(custom: &CustomVersion) -> Vec<PrinterColumn> {
    if custom.columns.is_empty() {
        default_columns()
    } else {
        custom.columns.clone()
    }
}

/// Evaluates a kubectl-style JSONPath (`.spec.x`, `{.spec.x}`) on an object.
pub fn evaluate<'a>(obj: &'a Value, path: &str) -> Vec<&'a Value> {
    let inner = path.trim().trim_start_matches('{').trim_end_matches('}');
    let query = if inner.starts_with('$') {
        inner.to_string()
    } else {
        format!("${inner}")
    };
    obj.query(&query).unwrap_or_default()
}

fn cell(column: &PrinterColumn, obj: &Value, now: jiff::Timestamp) -> Value {
    let found = evaluate(obj, &column.json_path);
    let Some(first) = found.first() else {
        return Value::Null;
    };
    match column.column_type.as_str() {
        "date" => match first
            .as_str()
            .and_then(|s| s.parse::<jiff::Timestamp>().ok())
        {
            Some(t) => {
                let nanos = now.duration_since(t).as_nanos();
                json!(human_duration(i64::try_from(nanos).unwrap_or(i64::MAX)))
            }
            None => Value::Null,
        },
        "integer" => first.as_i64().map(Value::from).unwrap_or(Value::Null),
        "number" => first.as_f64().map(Value::from).unwrap_or(Value::Null),
        "boolean" => first.as_bool().map(Value::from).unwrap_or(Value::Null),
        _ => {
            if found.len() > 1 {
                let parts: Vec<String> = found.iter().map(|v| plain(v)).collect();
                json!(parts.join(","))
            } else {
                json!(plain(first))
            }
        }
    }
}

fn plain(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A meta.k8s.io/v1 Table of custom resources.
pub fn table(
    custom: &CustomVersion,
    objects: &[Value],
    include: IncludeObject,
    headers: bool,
    list_meta: Value,
    now: jiff::Timestamp,
) -> Value {
    let cols = columns(custom);
    let mut defs = vec![json!({
        "name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": 0
    })];
    for c in &cols {
        defs.push(json!({"name": c.name, "type": c.column_type, "format": c.format, "description": c.description, "priority": c.priority}));
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let mut cells = vec![json!(crate::object::name(o))];
            cells.extend(cols.iter().map(|c| cell(c, o, now)));
            let object = match include {
                IncludeObject::None => Value::Null,
                IncludeObject::Metadata => partial_object_metadata(o),
                IncludeObject::Object => o.clone(),
            };
            json!({"cells": cells, "object": object})
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": if headers { Value::from(defs) } else { Value::Null },
        "rows": rows,
    })
}
