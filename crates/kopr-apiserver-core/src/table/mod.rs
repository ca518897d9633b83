//! Server-side Table printing: the `meta.k8s.io/v1` `Table` kube-apiserver
//! returns for `Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, with
//! the columns and cells of kube-apiserver 1.32's built-in printers, or the
//! default "Name / Created At" columns for any other resource.
//!
//! - [`columns`]: column definitions per printer;
//! - [`docs`]: the API field documentation the newer printers' columns carry;
//! - [`cells`]: row cells per printer;
//! - [`quantity`]: `resource.Quantity` canonical text for cells;
//! - [`age`]: `HumanDuration` and timestamp formatting.

mod age;
mod cells;
mod columns;
mod docs;
mod quantity;

use jiff::Timestamp;
use serde_json::{Map, Value, json};

pub use age::human_duration;
pub use columns::Kind as Printer;

/// What each table row carries in `object` (the `includeObject` parameter).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `object` is null.
    None,
    /// `object` is a `PartialObjectMetadata` (the default).
    #[default]
    Metadata,
    /// `object` is the full object.
    Object,
}

/// An `includeObject` query value that is none of kube's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized includeObject value: {}", crate::gofmt::quote(.0))]
pub struct UnknownIncludeObject(pub String);

impl IncludeObject {
    /// Parses the `includeObject` query value; empty means `Metadata`.
    ///
    /// # Errors
    /// An unknown value (its message is kube's BadRequest message).
    pub fn parse(s: &str) -> Result<Self, UnknownIncludeObject> {
        match s {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(UnknownIncludeObject(other.to_string())),
        }
    }
}

/// Column definitions of a kind's printer, as kube-apiserver's printers give
/// them, or the default columns (Name, Created At) for [`Printer::Default`].
pub fn column_definitions(printer: Printer) -> Vec<Value> {
    columns::columns(printer)
}

/// The cells of one row for one object, matching [`column_definitions`]
/// (including the priority-1 "wide" columns, as the server always sends them).
pub fn row_cells(printer: Printer, obj: &Value, now: Timestamp) -> Vec<Value> {
    cells::cells(printer, obj, now)
}

/// One table row: `{"cells": [...], "conditions"?: [...], "object": ...}`.
pub fn table_row(
    printer: Printer,
    obj: &Value,
    include_object: IncludeObject,
    now: Timestamp,
) -> Value {
    let mut row = Map::new();
    row.insert(
        "cells".into(),
        Value::Array(cells::cells(printer, obj, now)),
    );
    if let Some(c) = cells::conditions(printer, obj) {
        row.insert("conditions".into(), c);
    }
    row.insert("object".into(), row_object(obj, include_object));
    Value::Object(row)
}

/// The row object for an include policy.
fn row_object(obj: &Value, include_object: IncludeObject) -> Value {
    match include_object {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => partial_object_metadata(obj),
    }
}

/// `meta.AsPartialObjectMetadata` for `meta.k8s.io/v1`: the object's metadata,
/// with `creationTimestamp` null when unset (as Go serializes a zero time).
pub fn partial_object_metadata(obj: &Value) -> Value {
    let mut meta = obj
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    meta.entry("creationTimestamp").or_insert(Value::Null);
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": meta,
    })
}

/// A full Table object:
/// `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{...},"columnDefinitions":[...],"rows":[...]}`.
///
/// `list_meta` is the list's metadata (`resourceVersion`, `continue`,
/// `remainingItemCount`), or `{"resourceVersion": ...}` of a single object
/// (null becomes `{}`). Like kube's default convertor, a table of an unknown
/// kind with no objects has `"rows": null`.
pub fn table(
    printer: Printer,
    objects: &[Value],
    include_object: IncludeObject,
    list_meta: Value,
    now: Timestamp,
) -> Value {
    table_with_headers(printer, objects, include_object, true, list_meta, now)
}

/// Like [`table`], but `headers == false` gives `"columnDefinitions": null`,
/// as kube-apiserver sends in every watch event after the first one.
pub fn table_with_headers(
    printer: Printer,
    objects: &[Value],
    include_object: IncludeObject,
    headers: bool,
    list_meta: Value,
    now: Timestamp,
) -> Value {
    let rows: Vec<Value> = cells::list_order(printer, objects)
        .into_iter()
        .map(|o| table_row(printer, o, include_object, now))
        .collect();
    let rows = if rows.is_empty() && printer == Printer::Default {
        Value::Null
    } else {
        Value::Array(rows)
    };
    let columns = if headers {
        Value::Array(columns::columns(printer))
    } else {
        Value::Null
    };
    let metadata = match list_meta {
        Value::Null => json!({}),
        other => other,
    };
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": metadata,
        "columnDefinitions": columns,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests;
