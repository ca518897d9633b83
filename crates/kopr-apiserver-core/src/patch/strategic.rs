//! Strategic merge patch (`application/strategic-merge-patch+json`), with the
//! semantics kube-apiserver applies server side
//! (k8s.io/apimachinery/pkg/util/strategicpatch, "MergeParallelList" and
//! "IgnoreUnmatchedNulls" mode):
//!
//! * `null` deletes a field; maps merge recursively; scalars replace.
//! * Lists with a merge strategy merge: lists of objects by merge key, lists of
//!   primitives as sets; other lists are replaced wholesale.
//! * Directives: `$patch: replace|delete` on maps, `$patch: delete|replace` as
//!   list items, `$setElementOrder/<field>`, `$retainKeys`,
//!   `$deleteFromPrimitiveList/<field>`.
//! * New items and list order follow kube's ordering rules (patch order and
//!   live order interleaved, `$setElementOrder` taking precedence).
//!
//! Deliberate, documented deviations where kube would store garbage that its
//! typed decoding later drops: values added where the original had no field
//! are cleaned of directives and nulls; unknown `$`-prefixed keys are dropped;
//! `$deleteFromPrimitiveList` on a missing list is a no-op and always deletes
//! by value. Strategic merge patch is not allowed on custom resources (kube
//! answers 415); that check belongs to the caller, which also picks the
//! schema (the built-in kinds': `crate::merge::strategic_schema`).

use serde_json::{Map, Value};

use super::schema::{ListStrategy, MergeSchema};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PREFIX: &str = "$deleteFromPrimitiveList";
const ORDER_PREFIX: &str = "$setElementOrder";
const GO_MAP: &str = "map[string]interface {}";
const GO_SLICE: &str = "[]interface {}";

/// Errors of strategic merge patch, with kube-apiserver's messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// The patch body is valid JSON but not an object.
    #[error("json: cannot unmarshal {0} into Go value of type map[string]interface {{}}")]
    NotAnObject(&'static str),
    /// The original document is not an object.
    #[error("invalid JSON document")]
    BadJsonDoc,
    /// A list contains lists.
    #[error("lists of lists are not supported")]
    NoListOfLists,
    /// Malformed `$deleteFromPrimitiveList` directive.
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,
    /// Malformed `$retainKeys` directive, or patch keys missing from it.
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,
    /// Malformed `$setElementOrder` directive.
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,
    /// Unknown `$patch` value.
    #[error("unknown patch type: {directive} in map: {map}")]
    BadPatchType {
        /// The directive value, Go-formatted.
        directive: String,
        /// The map containing it, Go-formatted.
        map: String,
    },
    /// A list item lacks the declared merge key.
    #[error("map: {map} does not contain declared merge key: {key}")]
    NoMergeKey {
        /// The item, Go-formatted (`map[k:v ...]`).
        map: String,
        /// The merge key.
        key: String,
    },
    /// A value has the wrong JSON type.
    #[error("expected a {expected}, but received a {actual}")]
    BadArgType {
        /// Go type name expected.
        expected: &'static str,
        /// Go type name received.
        actual: &'static str,
    },
    /// Any other failure; kube reports these as 500 with the message.
    #[error("{0}")]
    Other(String),
}

impl PatchError {
    /// HTTP status code kube-apiserver answers with for this error.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::NotAnObject(_)
            | PatchError::BadJsonDoc
            | PatchError::BadPatchFormatForPrimitiveList
            | PatchError::BadPatchFormatForRetainKeys
            | PatchError::BadPatchFormatForSetElementOrderList => 400,
            PatchError::NoListOfLists => 422,
            _ => 500,
        }
    }

    /// Status `reason` kube-apiserver uses ("" is StatusReasonUnknown).
    pub fn reason(&self) -> &'static str {
        match self.status_code() {
            400 => "BadRequest",
            422 => "Invalid",
            _ => "",
        }
    }

    /// Status `message` kube-apiserver uses. For 422 kube replaces the text
    /// with a generic sentence.
    pub fn status_message(&self) -> String {
        if self.status_code() == 422 {
            "the server rejected our request due to an error in our request".to_string()
        } else {
            self.to_string()
        }
    }
}

/// Applies a strategic merge patch to `original` using `schema` for list
/// semantics (e.g. `crate::merge::strategic_schema`). A `null` patch is a
/// no-op, as in kube.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: &dyn MergeSchema,
) -> Result<Value, PatchError> {
    let patch = match patch {
        Value::Null => return Ok(original.clone()),
        Value::Object(m) => m,
        other => return Err(PatchError::NotAnObject(json_word(other))),
    };
    let original = match original {
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return Err(PatchError::BadJsonDoc),
    };
    let mut path = Vec::new();
    merge_map(original, patch, schema, &mut path).map(Value::Object)
}

/// Go-ish JSON kinds; ints and floats are distinct types in kube's decoder.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Bool,
    Int,
    Float,
    Str,
    Array,
    Object,
}

fn kind_of(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Null,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) if n.is_f64() => Kind::Float,
        Value::Number(_) => Kind::Int,
        Value::String(_) => Kind::Str,
        Value::Array(_) => Kind::Array,
        Value::Object(_) => Kind::Object,
    }
}

fn json_word(v: &Value) -> &'static str {
    match v {
        Value::Null | Value::Object(_) => "object",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
    }
}

/// Go type name of a decoded JSON value.
fn go_type(v: &Value) -> &'static str {
    match kind_of(v) {
        Kind::Null => "<nil>",
        Kind::Bool => "bool",
        Kind::Int => "int64",
        Kind::Float => "float64",
        Kind::Str => "string",
        Kind::Array => GO_SLICE,
        Kind::Object => GO_MAP,
    }
}

/// Formats a value like Go's `%v` on decoded JSON.
pub(crate) fn go_fmt(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => s.clone(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_fmt).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .into_iter()
                .map(|k| format!("{}:{}", k, m.get(k).map(go_fmt).unwrap_or_default()))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

fn go_fmt_map(m: &Map<String, Value>) -> String {
    go_fmt(&Value::Object(m.clone()))
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    PatchError::NoMergeKey {
        map: go_fmt_map(m),
        key: key.to_string(),
    }
}

fn bad_arg(expected: &'static str, actual: &Value) -> PatchError {
    PatchError::BadArgType {
        expected,
        actual: go_type(actual),
    }
}

fn extract_key<'a>(s: &'a str, prefix: &str) -> Result<&'a str, PatchError> {
    match s.split_once('/') {
        Some((p, rest)) if p == prefix => Ok(rest),
        _ if prefix == DELETE_PREFIX => Err(PatchError::BadPatchFormatForPrimitiveList),
        _ => Err(PatchError::BadPatchFormatForSetElementOrderList),
    }
}

fn strategy_at(schema: &dyn MergeSchema, path: &[String]) -> ListStrategy {
    let p: Vec<&str> = path.iter().map(String::as_str).collect();
    schema.list_strategy(&p)
}

/// The merge key SMP uses (first key), or "" for sets and atomic lists.
fn merge_key_of(strategy: &ListStrategy) -> &str {
    match strategy {
        ListStrategy::Map { keys } => keys.first().map(String::as_str).unwrap_or(""),
        _ => "",
    }
}

fn merge_map(
    mut original: Map<String, Value>,
    patch: &Map<String, Value>,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                let mut rest = patch.clone();
                rest.remove(DIRECTIVE);
                merge_map(Map::new(), &rest, schema, path)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::BadPatchType {
                directive: go_fmt(directive),
                map: go_fmt_map(patch),
            }),
        };
    }
    let mut patch = patch.clone();

    // $retainKeys: clear original keys not listed; every patch key must be listed.
    if let Some(retain) = patch.remove(RETAIN_KEYS) {
        let list = retain
            .as_array()
            .ok_or(PatchError::BadPatchFormatForRetainKeys)?;
        let listed = |k: &str| list.iter().any(|x| x.as_str() == Some(k));
        for (k, v) in &patch {
            if v.is_null() || k.starts_with(DELETE_PREFIX) || k.starts_with(ORDER_PREFIX) {
                continue;
            }
            if !listed(k) {
                return Err(PatchError::BadPatchFormatForRetainKeys);
            }
        }
        original.retain(|k, _| listed(k));
    }

    // $setElementOrder/<field>: merge the field's list and impose the order.
    let order_keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(ORDER_PREFIX))
        .cloned()
        .collect();
    for key in order_keys {
        let Some(order_value) = patch.remove(&key) else {
            continue;
        };
        let Value::Array(order) = &order_value else {
            return Err(bad_arg(GO_SLICE, &order_value));
        };
        let field = extract_key(&key, ORDER_PREFIX)?.to_string();
        let orig_list = match original.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg(GO_SLICE, other)),
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(a)) => Some(a.clone()),
            Some(other) => return Err(bad_arg(GO_SLICE, other)),
        };
        path.push(field.clone());
        let strategy = strategy_at(schema, path);
        let elem_kind = slice_element_kind(&[
            orig_list.as_deref().unwrap_or(&[]),
            patch_list.as_deref().unwrap_or(&[]),
        ])?;
        let merge_key = if elem_kind == Some(Kind::Object) {
            merge_key_of(&strategy).to_string()
        } else {
            String::new()
        };
        validate_patch_with_order(patch_list.as_deref().unwrap_or(&[]), order, &merge_key)?;
        let orig_for_order = orig_list.clone().unwrap_or_default();
        let merged = match (orig_list, patch_list) {
            (Some(o), None) => o,
            (None, Some(p)) => fresh_list(p, &strategy, schema, path)?,
            (Some(o), Some(p)) => merge_list_handler(o, p, &strategy, schema, path)?,
            (None, None) => {
                path.pop();
                continue;
            }
        };
        let result = match elem_kind {
            Some(kind) => {
                let (in_order, server_only) = partition(merged, order, &merge_key)?;
                normalize_element_order(
                    in_order,
                    server_only,
                    order,
                    &orig_for_order,
                    &merge_key,
                    kind,
                )?
            }
            None => merged,
        };
        path.pop();
        original.insert(field.clone(), Value::Array(result));
        patch.remove(&field);
    }

    for (key, patch_value) in patch {
        let (field, is_delete_list) = if key.starts_with(DELETE_PREFIX) {
            (extract_key(&key, DELETE_PREFIX)?.to_string(), true)
        } else {
            (key, false)
        };
        if !is_delete_list && field.starts_with('$') {
            // Unknown directive: kube's typed decoding drops it.
            continue;
        }
        if patch_value.is_null() {
            original.remove(&field);
            continue;
        }
        path.push(field.clone());
        let new_value = match original.remove(&field) {
            None if is_delete_list => None,
            None => Some(fresh_value(patch_value, schema, path)?),
            Some(current) if is_delete_list => match (current, patch_value) {
                (Value::Array(cur), Value::Array(del)) => {
                    slice_element_kind(&[&cur, &del])?;
                    Some(Value::Array(
                        cur.into_iter().filter(|v| !del.contains(v)).collect(),
                    ))
                }
                _ => return Err(PatchError::BadPatchFormatForPrimitiveList),
            },
            Some(current) => Some(merge_value(current, patch_value, schema, path)?),
        };
        path.pop();
        if let Some(v) = new_value {
            original.insert(field, v);
        }
    }
    Ok(original)
}

/// Merges one patch value into the current value of a field.
fn merge_value(
    current: Value,
    patch_value: Value,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<Value, PatchError> {
    if kind_of(&current) != kind_of(&patch_value) {
        return fresh_value(patch_value, schema, path);
    }
    match (current, patch_value) {
        (Value::Object(cur), Value::Object(p)) => {
            merge_map(cur, &p, schema, path).map(Value::Object)
        }
        (Value::Array(cur), Value::Array(p)) => {
            let strategy = strategy_at(schema, path);
            merge_list_handler(cur, p, &strategy, schema, path).map(Value::Array)
        }
        (_, p) => Ok(p),
    }
}

/// A patch value for a field the original lacks: applied to an empty value so
/// that directives and nulls do not leak into the stored object.
fn fresh_value(
    patch_value: Value,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<Value, PatchError> {
    match patch_value {
        Value::Object(p) => merge_map(Map::new(), &p, schema, path).map(Value::Object),
        Value::Array(p) => {
            let strategy = strategy_at(schema, path);
            fresh_list(p, &strategy, schema, path).map(Value::Array)
        }
        other => Ok(other),
    }
}

fn fresh_list(
    patch: Vec<Value>,
    strategy: &ListStrategy,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, PatchError> {
    if !matches!(strategy, ListStrategy::Map { .. }) {
        return Ok(patch);
    }
    let mut out = Vec::with_capacity(patch.len());
    for item in patch {
        match item {
            Value::Object(m) if m.contains_key(DIRECTIVE) => {}
            Value::Object(m) => out.push(Value::Object(merge_map(Map::new(), &m, schema, path)?)),
            other => out.push(other),
        }
    }
    Ok(out)
}

fn merge_list_handler(
    original: Vec<Value>,
    patch: Vec<Value>,
    strategy: &ListStrategy,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, PatchError> {
    match strategy {
        ListStrategy::Atomic => Ok(patch),
        ListStrategy::Set | ListStrategy::Map { .. } => {
            let key = merge_key_of(strategy).to_string();
            merge_list(original, patch, &key, schema, path)
        }
    }
}

/// Element kind shared by all elements of the lists, `None` when empty.
fn slice_element_kind(lists: &[&[Value]]) -> Result<Option<Kind>, PatchError> {
    let mut prev: Option<Kind> = None;
    for list in lists {
        for v in list.iter() {
            let k = kind_of(v);
            match prev {
                None => {
                    if k == Kind::Array {
                        return Err(PatchError::NoListOfLists);
                    }
                    prev = Some(k);
                }
                Some(p) if p != k => {
                    let all: Vec<Value> = lists.iter().map(|l| Value::Array(l.to_vec())).collect();
                    return Err(PatchError::Other(format!(
                        "list element types are not identical: {}",
                        go_fmt(&Value::Array(all))
                    )));
                }
                Some(_) => {}
            }
        }
    }
    Ok(prev)
}

fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let Some(kind) = slice_element_kind(&[&original, &patch])? else {
        return Ok(original);
    };
    if kind != Kind::Object {
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (in_patch, server_only): (Vec<Value>, Vec<Value>) =
            merged.into_iter().partition(|v| patch.contains(v));
        return normalize_element_order(in_patch, server_only, &patch, &original, "", kind);
    }
    if merge_key.is_empty() {
        return Err(PatchError::Other(
            "cannot merge lists without merge key for type map".to_string(),
        ));
    }
    let (original, patch) = apply_special_elements(original, patch, merge_key, schema, path)?;
    let mut merged = original.clone();
    for item in &patch {
        let Value::Object(item_map) = item else {
            return Err(bad_arg(GO_MAP, item));
        };
        let key_value = item_map
            .get(merge_key)
            .ok_or_else(|| no_merge_key(item_map, merge_key))?;
        match find_by_key(&merged, merge_key, key_value)? {
            Some(i) => {
                let current = std::mem::take(&mut merged[i]);
                let current = match current {
                    Value::Object(m) => m,
                    _ => Map::new(),
                };
                merged[i] = Value::Object(merge_map(current, item_map, schema, path)?);
            }
            None => merged.push(Value::Object(merge_map(
                Map::new(),
                item_map,
                schema,
                path,
            )?)),
        }
    }
    let (in_patch, server_only) = partition(merged, &patch, merge_key)?;
    normalize_element_order(in_patch, server_only, &patch, &original, merge_key, kind)
}

/// Handles `$patch` list items: deletions by merge key and `replace`.
/// Returns the updated original and the patch without special items.
fn apply_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    schema: &dyn MergeSchema,
    path: &mut Vec<String>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        let Value::Object(m) = &item else {
            return Err(bad_arg(GO_MAP, &item));
        };
        let Some(directive) = m.get(DIRECTIVE) else {
            plain.push(item);
            continue;
        };
        match directive.as_str() {
            Some("delete") => {
                let key_value = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
                while let Some(i) = find_by_key(&original, merge_key, key_value)? {
                    original.remove(i);
                }
            }
            Some("replace") => replace = true,
            Some("merge") => {
                return Err(PatchError::Other(
                    "merging lists cannot yet be specified in the patch".to_string(),
                ));
            }
            _ => {
                return Err(PatchError::BadPatchType {
                    directive: go_fmt(directive),
                    map: go_fmt_map(m),
                });
            }
        }
    }
    if replace {
        let mut cleaned = Vec::with_capacity(plain.len());
        for item in plain {
            match item {
                Value::Object(m) => {
                    cleaned.push(Value::Object(merge_map(Map::new(), &m, schema, path)?))
                }
                other => cleaned.push(other),
            }
        }
        return Ok((cleaned, Vec::new()));
    }
    Ok((original, plain))
}

fn find_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>, PatchError> {
    for (i, item) in list.iter().enumerate() {
        let Value::Object(m) = item else {
            return Err(PatchError::Other(format!(
                "value for key {i} is not a map."
            )));
        };
        if m.get(key) == Some(value) {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// Splits `merged` into items present in `by` and the rest.
fn partition(
    merged: Vec<Value>,
    by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut rest = Vec::new();
    for item in merged {
        let found = if merge_key.is_empty() {
            by.contains(&item)
        } else {
            let Value::Object(m) = &item else {
                return Err(bad_arg(GO_MAP, &item));
            };
            let kv = m.get(merge_key).ok_or_else(|| no_merge_key(m, merge_key))?;
            find_by_key(by, merge_key, kv)?.is_some()
        };
        if found {
            present.push(item);
        } else {
            rest.push(item);
        }
    }
    Ok((present, rest))
}

/// Position of `item` in `list`, comparing merge-key values for objects.
fn index_in(list: &[Value], item: &Value, merge_key: &str, kind: Kind) -> Option<usize> {
    if kind == Kind::Object {
        let want = item.as_object().and_then(|m| m.get(merge_key));
        list.iter()
            .position(|v| v.as_object().and_then(|m| m.get(merge_key)) == want)
    } else {
        list.iter().position(|v| v == item)
    }
}

fn validate_merge_keys(merge_key: &str, list: &[Value]) -> Result<(), PatchError> {
    for item in list {
        let Value::Object(m) = item else {
            return Err(bad_arg(GO_MAP, item));
        };
        if !m.contains_key(merge_key) {
            return Err(no_merge_key(m, merge_key));
        }
    }
    Ok(())
}

/// Sorts `to_sort` by position in `order` (stable; unknown items last), with
/// `$patch: delete` items moved to the end.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let (keep, deleted): (Vec<Value>, Vec<Value>) = if kind == Kind::Object {
        validate_merge_keys(merge_key, &to_sort)?;
        validate_merge_keys(merge_key, order)?;
        to_sort
            .into_iter()
            .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"))
    } else {
        (to_sort, Vec::new())
    };
    let mut indexed: Vec<(usize, Value)> = keep
        .into_iter()
        .map(|v| {
            (
                index_in(order, &v, merge_key, kind).unwrap_or(usize::MAX),
                v,
            )
        })
        .collect();
    indexed.sort_by_key(|(i, _)| *i);
    let mut out: Vec<Value> = indexed.into_iter().map(|(_, v)| v).collect();
    out.extend(deleted);
    Ok(out)
}

fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: Kind,
) -> Result<Vec<Value>, PatchError> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    // Insert server-only items among the patch items, keeping both relative
    // orders; a server item goes first only when both are known to the live
    // list and it precedes the patch item there.
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                match (
                    index_in(server_order, l, merge_key, kind),
                    index_in(server_order, r, merge_key, kind),
                ) {
                    (Some(li), Some(ri)) => li < ri,
                    _ => false,
                }
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some(v) = next {
            out.push(v);
        }
    }
    Ok(out)
}

fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool, PatchError> {
    if merge_key.is_empty() {
        return Ok(left == right);
    }
    let Value::Object(l) = left else {
        return Err(bad_arg(GO_MAP, left));
    };
    let Value::Object(r) = right else {
        return Err(bad_arg(GO_MAP, right));
    };
    let lv = l.get(merge_key).ok_or_else(|| no_merge_key(l, merge_key))?;
    let rv = r.get(merge_key).ok_or_else(|| no_merge_key(r, merge_key))?;
    Ok(lv == rv)
}

/// Checks that the patch list's relative order agrees with `$setElementOrder`
/// and that its items are a subset of it.
fn validate_patch_with_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: &str,
) -> Result<(), PatchError> {
    if order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let mut non_delete: Vec<&Value> = Vec::with_capacity(patch_list.len());
    for item in patch_list {
        if !merge_key.is_empty() {
            let Value::Object(m) = item else {
                return Err(bad_arg(GO_MAP, item));
            };
            if m.get(DIRECTIVE).and_then(Value::as_str) == Some("delete") {
                continue;
            }
        }
        non_delete.push(item);
    }
    let (mut pi, mut oi) = (0, 0);
    while pi < non_delete.len() && oi < order.len() {
        if non_delete[pi]
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE))
        {
            pi += 1;
            continue;
        }
        if merge_key_value_equal(non_delete[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < non_delete.len() && oi >= order.len() {
        return Err(PatchError::Other(format!(
            "The order in patch list:\n{}\n doesn't match {} list:\n{}\n",
            go_fmt(&Value::Array(patch_list.to_vec())),
            ORDER_PREFIX,
            go_fmt(&Value::Array(order.to_vec()))
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::schema::ListStrategy;
    use super::*;
    use crate::merge::strategic_schema;
    use serde_json::json;

    fn smp(group: &str, kind: &str, original: Value, patch: Value) -> Result<Value, PatchError> {
        let api_version = if group.is_empty() {
            "v1".to_string()
        } else {
            format!("{group}/v1")
        };
        let schema = strategic_schema(&api_version, kind);
        strategic_merge_patch(&original, &patch, &schema)
    }

    fn deploy(containers: Value) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
               "spec": {"template": {"spec": {"containers": containers}}}})
    }

    fn containers(v: &Value) -> &Value {
        &v["spec"]["template"]["spec"]["containers"]
    }

    #[test]
    fn maps_merge_and_null_deletes() {
        let orig = json!({"metadata": {"name": "c", "labels": {"a": "1", "b": "2"}}, "data": {"k": "v", "x": "y"}});
        let patch = json!({"metadata": {"labels": {"a": null, "c": "3"}}, "data": {"x": null, "n": "m"}, "nothere": null});
        let out = smp("", "ConfigMap", orig, patch).unwrap();
        assert_eq!(
            out,
            json!({"metadata": {"name": "c", "labels": {"b": "2", "c": "3"}}, "data": {"k": "v", "n": "m"}})
        );
    }

    #[test]
    fn null_and_non_object_patches() {
        let orig = json!({"data": {"a": "b"}});
        assert_eq!(
            smp("", "ConfigMap", orig.clone(), Value::Null).unwrap(),
            orig
        );
        let err = smp("", "ConfigMap", orig.clone(), json!([1])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
        assert_eq!(err.status_code(), 400);
        assert_eq!(
            smp("", "ConfigMap", orig, json!("x")).unwrap_err(),
            PatchError::NotAnObject("string")
        );
    }

    #[test]
    fn containers_merge_by_name() {
        let orig = deploy(json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:1"}]));
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:2"}]}}}});
        let out = smp("apps", "Deployment", orig, patch).unwrap();
        assert_eq!(
            containers(&out),
            &json!([{"name": "a", "image": "a:1"}, {"name": "b", "image": "b:2"}])
        );
    }

    #[test]
    fn new_item_without_order_goes_first_like_kube() {
        let orig = deploy(json!([{"name": "a"}, {"name": "b"}]));
        let patch =
            json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "c"}]}}}});
        let out = smp("apps", "Deployment", orig, patch).unwrap();
        assert_eq!(
            containers(&out),
            &json!([{"name": "c", "image": "c"}, {"name": "a"}, {"name": "b"}])
        );
    }

    #[test]
    fn set_element_order_places_items() {
        let orig = deploy(json!([{"name": "a"}, {"name": "b"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}, {"name": "c"}],
            "containers": [{"name": "c", "image": "c"}]}}}});
        let out = smp("apps", "Deployment", orig, patch).unwrap();
        assert_eq!(
            containers(&out),
            &json!([{"name": "a"}, {"name": "b"}, {"name": "c", "image": "c"}])
        );
        // Reordering only.
        let orig = deploy(json!([{"name": "a"}, {"name": "b"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "b"}, {"name": "a"}]}}}});
        let out = smp("apps", "Deployment", orig, patch).unwrap();
        assert_eq!(containers(&out), &json!([{"name": "b"}, {"name": "a"}]));
    }

    #[test]
    fn set_element_order_mismatch_is_error() {
        let orig = deploy(json!([{"name": "a"}]));
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}],
            "containers": [{"name": "z"}]}}}});
        let err = smp("apps", "Deployment", orig, patch).unwrap_err();
        assert!(
            err.to_string().starts_with("The order in patch list:"),
            "{err}"
        );
    }

    #[test]
    fn list_item_directives() {
        let orig = deploy(json!([{"name": "a"}, {"name": "b"}]));
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"name": "a", "$patch": "delete"}]}}}});
        let out = smp("apps", "Deployment", orig.clone(), patch).unwrap();
        assert_eq!(containers(&out), &json!([{"name": "b"}]));

        let patch = json!({"spec": {"template": {"spec": {"containers": [{"$patch": "replace"}, {"name": "z", "x": null}]}}}});
        let out = smp("apps", "Deployment", orig.clone(), patch).unwrap();
        assert_eq!(containers(&out), &json!([{"name": "z"}]));

        let patch = json!({"spec": {"template": {"spec": {"containers": [{"$patch": "merge"}]}}}});
        let err = smp("apps", "Deployment", orig.clone(), patch).unwrap_err();
        assert_eq!(
            err.to_string(),
            "merging lists cannot yet be specified in the patch"
        );

        let patch = json!({"spec": {"template": {"spec": {"containers": [{"$patch": "bogus", "name": "a"}]}}}});
        let err = smp("apps", "Deployment", orig, patch).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown patch type: bogus in map: map[$patch:bogus name:a]"
        );
    }

    #[test]
    fn map_directives() {
        let orig = json!({"metadata": {"labels": {"a": "1", "b": "2"}}});
        let out = smp(
            "",
            "ConfigMap",
            orig.clone(),
            json!({"metadata": {"labels": {"$patch": "replace", "c": "3"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {"c": "3"}}}));
        let out = smp(
            "",
            "ConfigMap",
            orig.clone(),
            json!({"metadata": {"labels": {"$patch": "delete"}}}),
        )
        .unwrap();
        assert_eq!(out, json!({"metadata": {"labels": {}}}));
        let err = smp(
            "",
            "ConfigMap",
            orig,
            json!({"metadata": {"labels": {"$patch": "merge"}}}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown patch type: merge in map: map[$patch:merge]"
        );
        assert_eq!(err.status_code(), 500);
    }

    #[test]
    fn missing_merge_key() {
        let orig = deploy(json!([{"name": "a"}]));
        let patch = json!({"spec": {"template": {"spec": {"containers": [{"image": "nginx"}]}}}});
        let err = smp("apps", "Deployment", orig, patch).unwrap_err();
        assert_eq!(
            err.to_string(),
            "map: map[image:nginx] does not contain declared merge key: name"
        );
    }

    #[test]
    fn finalizers_set_merge_and_delete_list() {
        let orig = json!({"metadata": {"finalizers": ["a", "b"]}});
        let out = smp(
            "",
            "ConfigMap",
            orig.clone(),
            json!({"metadata": {"finalizers": ["b", "c"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b", "c"]));
        let out = smp(
            "",
            "ConfigMap",
            orig.clone(),
            json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["b"]));
        let out = smp(
            "",
            "ConfigMap",
            orig,
            json!({"metadata": {"$setElementOrder/finalizers": ["c", "b", "a"], "finalizers": ["c"]}}),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["c", "b", "a"]));
        let err = smp(
            "",
            "ConfigMap",
            json!({}),
            json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
        )
        .unwrap_err();
        assert_eq!(err, PatchError::BadPatchFormatForPrimitiveList);
    }

    #[test]
    fn atomic_lists_replace() {
        let orig = json!({"spec": {"tolerations": [{"key": "a"}], "containers": [{"name": "c", "args": ["1", "2"]}]}});
        let patch = json!({"spec": {"tolerations": [{"key": "b"}], "containers": [{"name": "c", "args": ["3"]}]}});
        let out = smp("", "Pod", orig, patch).unwrap();
        assert_eq!(out["spec"]["tolerations"], json!([{"key": "b"}]));
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "c", "args": ["3"]}])
        );
    }

    #[test]
    fn retain_keys_clears_other_fields() {
        let orig = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let patch = json!({"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": null}}});
        let out = smp("apps", "Deployment", orig.clone(), patch).unwrap();
        assert_eq!(out, json!({"spec": {"strategy": {"type": "Recreate"}}}));
        let bad = json!({"spec": {"strategy": {"$retainKeys": ["type"], "other": 1}}});
        assert_eq!(
            smp("apps", "Deployment", orig.clone(), bad).unwrap_err(),
            PatchError::BadPatchFormatForRetainKeys
        );
        let bad = json!({"spec": {"strategy": {"$retainKeys": "type"}}});
        assert_eq!(
            smp("apps", "Deployment", orig, bad)
                .unwrap_err()
                .status_code(),
            400
        );
    }

    #[test]
    fn volumes_retain_keys_in_list_items() {
        let orig = json!({"spec": {"volumes": [{"name": "v", "emptyDir": {}}]}});
        let patch = json!({"spec": {"volumes": [{"name": "v", "$retainKeys": ["name", "hostPath"], "hostPath": {"path": "/x"}}]}});
        let out = smp("", "Pod", orig, patch).unwrap();
        assert_eq!(
            out["spec"]["volumes"],
            json!([{"name": "v", "hostPath": {"path": "/x"}}])
        );
    }

    #[test]
    fn new_fields_are_cleaned_of_directives() {
        let orig = json!({"metadata": {"name": "p"}, "spec": {}});
        let patch = json!({"spec": {"containers": [{"name": "a", "image": "x", "env": null}, {"name": "b", "$patch": "delete"}]}});
        let out = smp("", "Pod", orig, patch).unwrap();
        assert_eq!(
            out["spec"]["containers"],
            json!([{"name": "a", "image": "x"}])
        );
    }

    #[test]
    fn lists_of_lists_and_mixed_types() {
        let orig = json!({"metadata": {"finalizers": [["a"]]}});
        let err = smp(
            "",
            "ConfigMap",
            orig,
            json!({"metadata": {"finalizers": [["b"]]}}),
        )
        .unwrap_err();
        assert_eq!(err, PatchError::NoListOfLists);
        assert_eq!(err.status_code(), 422);
        let orig = json!({"metadata": {"finalizers": ["a"]}});
        let err = smp(
            "",
            "ConfigMap",
            orig,
            json!({"metadata": {"finalizers": [1]}}),
        )
        .unwrap_err();
        assert!(
            err.to_string()
                .starts_with("list element types are not identical")
        );
    }

    #[test]
    fn type_change_replaces() {
        let orig = json!({"data": {"a": "b"}});
        let out = smp("", "ConfigMap", orig, json!({"data": "x"})).unwrap();
        assert_eq!(out, json!({"data": "x"}));
    }

    #[test]
    fn service_ports_merge_on_port() {
        let orig = json!({"spec": {"ports": [{"port": 80, "name": "http"}, {"port": 443, "name": "https"}]}});
        let patch = json!({"spec": {"ports": [{"port": 443, "targetPort": 8443}]}});
        let out = smp("", "Service", orig, patch).unwrap();
        assert_eq!(
            out["spec"]["ports"],
            json!([{"port": 80, "name": "http"}, {"port": 443, "name": "https", "targetPort": 8443}])
        );
    }

    #[test]
    fn closure_schema_and_no_panics() {
        let schema = |p: &[&str]| {
            if p.last() == Some(&"items") {
                ListStrategy::map(&["id"])
            } else {
                ListStrategy::Set
            }
        };
        let values = [
            json!(null),
            json!(1),
            json!("s"),
            json!([]),
            json!({}),
            json!([1, "a", null]),
            json!([[1]]),
            json!({"$patch": 1}),
            json!({"$retainKeys": [1, null], "a": 1}),
            json!({"$setElementOrder/items": [1], "items": [{"id": 1}]}),
            json!({"$setElementOrder/items": [{"id": 2}], "items": [{"id": 1}]}),
            json!({"$setElementOrder/x": "a"}),
            json!({"$setElementOrder": []}),
            json!({"$deleteFromPrimitiveList/items": [{"id": 1}]}),
            json!({"items": [{"id": 1, "$patch": "delete"}, {"$patch": "replace"}, 3]}),
            json!({"items": [{"id": {"a": 1}}, {"id": [1]}]}),
            json!({"a": {"b": {"$patch": "replace", "c": null}}, "items": null}),
            json!({"items": [1, 2, 2], "x": [{"a": 1}, {"a": 1}]}),
        ];
        for o in &values {
            for p in &values {
                let orig = json!({"items": o.clone(), "x": o.clone(), "a": o.clone()});
                let _ = strategic_merge_patch(&orig, p, &schema);
                let _ = strategic_merge_patch(o, p, &schema);
                let wrapped = json!({"items": p.clone(), "x": p.clone(), "a": p.clone()});
                let _ = strategic_merge_patch(&orig, &wrapped, &schema);
            }
        }
    }
}
