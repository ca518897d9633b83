//! Rendering objects as a meta.k8s.io/v1 Table, for clients that ask for
//! one (`kubectl get`), with kube-apiserver's `includeObject` rules.

use std::sync::Arc;

use serde_json::Value;

use super::query::Query;
use crate::status::ApiError;
use crate::table;

/// Parses `includeObject` as kube-apiserver does.
pub fn include_object(query: &Query) -> Result<table::IncludeObject, ApiError> {
    match query.include_object.as_deref() {
        None | Some("") => Ok(table::IncludeObject::Metadata),
        Some(v) => table::IncludeObject::parse(v).map_err(|_| {
            ApiError::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: \"{v}\": must be 'Metadata', 'Object', 'None', or empty"
            ))
        }),
    }
}

/// Renders objects as a meta.k8s.io/v1 Table.
pub fn render(
    rt: &crate::resources::ResourceType,
    items: &[Arc<Value>],
    query: &Query,
    list_meta: Value,
    headers: bool,
) -> Result<Value, ApiError> {
    let include = include_object(query)?;
    let objects: Vec<Value> = items.iter().map(|o| (**o).clone()).collect();
    Ok(rt.table(
        &objects,
        include,
        headers,
        list_meta,
        jiff::Timestamp::now(),
    ))
}
