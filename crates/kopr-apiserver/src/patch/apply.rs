//! Server-side apply and managed-fields tracking, following
//! sigs.k8s.io/structured-merge-diff as used by kube-apiserver 1.32.
//!
//! * [`server_side_apply`] merges an applied configuration
//!   (`application/apply-patch+yaml`, already decoded by the caller) into the
//!   live object, records the applier's ownership in `metadata.managedFields`,
//!   removes fields the applier owned before but no longer specifies (unless
//!   another manager owns them) and reports conflicts with other managers.
//! * [`update_managed_fields`] records ownership for every other write
//!   (create, update, patch): the writer's `Update` entry gains the fields it
//!   changed and other managers lose them.
//!
//! Caller responsibilities (kube-apiserver does these outside the field
//! manager): a missing `fieldManager` on apply is a 422, see
//! [`field_manager_required_status`]; `force` on a non-apply patch is a 422;
//! the name in the body must match the URL; resetting `status` (or `spec` on
//! the status subresource) is the strategy's job, and the matching paths should
//! be passed as `ignored_fields`.
//!
//! Not modelled: conversion between API versions (all managers are assumed to
//! use the served version), unions, the `last-applied-configuration`
//! annotation hand-off between client- and server-side apply, and the
//! distinction between struct fields and map keys in a granular map (an
//! entry of a `map[string]Object` is recorded like a struct field).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::schema::{ListStrategy, MergeSchema};
use crate::gofmt::quote as go_quote;

/// Maximum number of `Update` entries kept before the oldest are merged into
/// `ancient-changes` buckets.
const MAX_UPDATE_MANAGERS: usize = 10;
const ANCIENT_CHANGES: &str = "ancient-changes";

// ---------------------------------------------------------------------------
// Field paths and sets
// ---------------------------------------------------------------------------

/// One step of a field path.
#[derive(Debug, Clone)]
pub enum PathElement {
    /// A field of an object (`f:name`, shown as `.name`).
    Field(String),
    /// A list-map item, by its key fields sorted by name (`k:{...}`).
    Key(Vec<(String, Value)>),
    /// A set item, by value (`v:...`).
    Value(Value),
    /// A list item by position (`i:N`); only found in decoded sets.
    Index(usize),
}

fn value_rank(v: &Value) -> u8 {
    match v {
        Value::Number(_) => 0,
        Value::String(_) => 1,
        Value::Bool(_) => 2,
        Value::Array(_) => 3,
        Value::Object(_) => 4,
        Value::Null => 5,
    }
}

/// Total order on JSON values, numbers compared numerically.
fn cmp_values(a: &Value, b: &Value) -> Ordering {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(x), Some(y)) = (x.as_i64(), y.as_i64()) {
                x.cmp(&y)
            } else if let (Some(x), Some(y)) = (x.as_u64(), y.as_u64()) {
                x.cmp(&y)
            } else {
                let (x, y) = (x.as_f64().unwrap_or(0.0), y.as_f64().unwrap_or(0.0));
                x.total_cmp(&y)
            }
        }
        (Value::String(x), Value::String(y)) => x.cmp(y),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::Array(x), Value::Array(y)) => {
            for (p, q) in x.iter().zip(y.iter()) {
                let c = cmp_values(p, q);
                if c != Ordering::Equal {
                    return c;
                }
            }
            x.len().cmp(&y.len())
        }
        (Value::Object(x), Value::Object(y)) => {
            let xs: BTreeMap<&String, &Value> = x.iter().collect();
            let ys: BTreeMap<&String, &Value> = y.iter().collect();
            for ((kx, vx), (ky, vy)) in xs.iter().zip(ys.iter()) {
                let c = kx.cmp(ky).then_with(|| cmp_values(vx, vy));
                if c != Ordering::Equal {
                    return c;
                }
            }
            xs.len().cmp(&ys.len())
        }
        _ => value_rank(a).cmp(&value_rank(b)),
    }
}

impl Ord for PathElement {
    fn cmp(&self, other: &Self) -> Ordering {
        use PathElement::*;
        fn rank(p: &PathElement) -> u8 {
            match p {
                Field(_) => 0,
                Key(_) => 1,
                Value(_) => 2,
                Index(_) => 3,
            }
        }
        match (self, other) {
            (Field(a), Field(b)) => a.cmp(b),
            (Key(a), Key(b)) => {
                for ((na, va), (nb, vb)) in a.iter().zip(b.iter()) {
                    let c = na.cmp(nb).then_with(|| cmp_values(va, vb));
                    if c != Ordering::Equal {
                        return c;
                    }
                }
                a.len().cmp(&b.len())
            }
            (Value(a), Value(b)) => cmp_values(a, b),
            (Index(a), Index(b)) => a.cmp(b),
            _ => rank(self).cmp(&rank(other)),
        }
    }
}

impl PartialOrd for PathElement {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for PathElement {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for PathElement {}

/// Human-readable value as structured-merge-diff prints it in paths.
fn value_to_string(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => go_quote(s),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(value_to_string).collect::<Vec<_>>().join(",")
        ),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| format!("{k}={}", value_to_string(v)))
            .collect::<Vec<_>>()
            .join(""),
    }
}

impl std::fmt::Display for PathElement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PathElement::Field(n) => write!(f, ".{n}"),
            PathElement::Key(kv) => {
                let parts: Vec<String> = kv
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_to_string(v)))
                    .collect();
                write!(f, "[{}]", parts.join(","))
            }
            PathElement::Value(v) => write!(f, "[={}]", value_to_string(v)),
            PathElement::Index(i) => write!(f, "[{i}]"),
        }
    }
}

impl PathElement {
    /// The `fieldsV1` key of this element (`f:`, `k:`, `v:` or `i:`).
    pub fn to_fields_key(&self) -> String {
        match self {
            PathElement::Field(n) => format!("f:{n}"),
            PathElement::Key(kv) => {
                let m: Map<String, Value> = kv.iter().cloned().collect();
                format!("k:{}", Value::Object(m))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key.
    pub fn from_fields_key(s: &str) -> Result<PathElement, String> {
        let Some((prefix, rest)) = s.split_once(':') else {
            return Err(format!("unknown path element type in {s:?}"));
        };
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) => {
                    let mut kv: Vec<(String, Value)> = m.into_iter().collect();
                    kv.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(PathElement::Key(kv))
                }
                _ => Err(format!("invalid key in {s:?}")),
            },
            "v" => serde_json::from_str::<Value>(rest)
                .map(PathElement::Value)
                .map_err(|e| format!("invalid value in {s:?}: {e}")),
            "i" => rest
                .parse::<usize>()
                .map(PathElement::Index)
                .map_err(|e| format!("invalid index in {s:?}: {e}")),
            _ => Err(format!("unknown path element type in {s:?}")),
        }
    }
}

/// Formats a field path as kube does in conflict messages (`.spec.x[name="a"]`).
pub fn path_to_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of field paths (structured-merge-diff `fieldpath.Set`): paths that
/// are members at this level plus child sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// Whether the set contains no path.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// Adds a path.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the exact path is in the set.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    fn cleaned(mut self) -> FieldSet {
        self.children.retain(|_, c| !c.is_empty());
        self
    }

    /// Paths in either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            let merged = match out.children.get(pe) {
                Some(mine) => mine.union(child),
                None => child.clone(),
            };
            out.children.insert(pe.clone(), merged);
        }
        out.cleaned()
    }

    /// Paths in `self` but not in `other` (exact paths, not prefixes).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .map(|(pe, c)| match other.children.get(pe) {
                Some(o) => (pe.clone(), c.difference(o)),
                None => (pe.clone(), c.clone()),
            })
            .collect();
        FieldSet { members, children }.cleaned()
    }

    /// Paths in both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter_map(|(pe, c)| {
                other
                    .children
                    .get(pe)
                    .map(|o| (pe.clone(), c.intersection(o)))
            })
            .collect();
        FieldSet { members, children }.cleaned()
    }

    /// Paths in `self` that are neither in `other` nor below a member of it.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let children = self
            .children
            .iter()
            .filter(|(pe, _)| !other.members.contains(pe))
            .map(|(pe, c)| match other.children.get(pe) {
                Some(o) => (pe.clone(), c.recursive_difference(o)),
                None => (pe.clone(), c.clone()),
            })
            .collect();
        FieldSet { members, children }.cleaned()
    }

    /// All paths, members of a level before its children, in order.
    pub fn paths(&self) -> Vec<Vec<PathElement>> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Vec<PathElement>>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(p);
        }
        for (pe, c) in &self.children {
            prefix.push(pe.clone());
            c.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// Encodes as `fieldsV1` JSON (`{"f:data":{".":{},"f:key":{}}}`).
    pub fn to_fields_v1(&self) -> Value {
        let mut obj = Map::new();
        for m in &self.members {
            if self.children.get(m).is_none_or(FieldSet::is_empty) {
                obj.insert(m.to_fields_key(), Value::Object(Map::new()));
            }
        }
        for (pe, c) in &self.children {
            if c.is_empty() {
                continue;
            }
            let mut inner = match c.to_fields_v1() {
                Value::Object(m) => m,
                _ => Map::new(),
            };
            if self.members.contains(pe) {
                inner.insert(".".to_string(), Value::Object(Map::new()));
            }
            obj.insert(pe.to_fields_key(), Value::Object(inner));
        }
        Value::Object(obj)
    }

    /// Decodes `fieldsV1` JSON.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, String> {
        let Value::Object(obj) = v else {
            return Err("fieldsV1 must be an object".to_string());
        };
        let mut set = FieldSet::default();
        for (k, child) in obj {
            if k == "." {
                continue;
            }
            let pe = PathElement::from_fields_key(k)?;
            let Value::Object(inner) = child else {
                return Err(format!("expected an object for {k:?}"));
            };
            if inner.is_empty() || inner.contains_key(".") {
                set.members.insert(pe.clone());
            }
            if inner.keys().any(|k| k != ".") {
                let c = FieldSet::from_fields_v1(child)?;
                if !c.is_empty() {
                    set.children.insert(pe, c);
                }
            }
        }
        Ok(set)
    }

    fn from_plain_paths(paths: &[&[&str]]) -> FieldSet {
        let mut set = FieldSet::default();
        for p in paths {
            let pes: Vec<PathElement> = p
                .iter()
                .map(|s| PathElement::Field((*s).to_string()))
                .collect();
            set.insert(&pes);
        }
        set
    }
}

// ---------------------------------------------------------------------------
// Schema-aware walks over values
// ---------------------------------------------------------------------------

struct Walker<'s> {
    schema: &'s dyn MergeSchema,
    spath: Vec<String>,
}

impl Walker<'_> {
    fn sp(&self) -> Vec<&str> {
        self.spath.iter().map(String::as_str).collect()
    }

    fn strategy(&self) -> ListStrategy {
        self.schema.list_strategy(&self.sp())
    }

    fn map_atomic(&self) -> bool {
        self.schema.map_is_atomic(&self.sp())
    }

    fn path_str(&self) -> String {
        self.spath.iter().map(|s| format!(".{s}")).collect()
    }

    /// Whether a value is a leaf of the field tree at the current path.
    fn is_leaf(&self, v: &Value) -> bool {
        match v {
            Value::Object(m) => m.is_empty() || self.map_atomic(),
            Value::Array(a) => a.is_empty() || self.strategy() == ListStrategy::Atomic,
            _ => true,
        }
    }

    /// Path element of a list item at the current (list) path.
    fn item_pe(
        &self,
        strategy: &ListStrategy,
        index: usize,
        item: &Value,
    ) -> Result<PathElement, String> {
        match strategy {
            ListStrategy::Atomic => Ok(PathElement::Index(index)),
            ListStrategy::Set => match item {
                Value::Array(_) | Value::Object(_) => Err(format!(
                    "{}: element {index}: expected a scalar set element",
                    self.path_str()
                )),
                v => Ok(PathElement::Value(v.clone())),
            },
            ListStrategy::Map { keys } => {
                let Value::Object(m) = item else {
                    return Err(format!(
                        "{}: element {index}: associative list with keys has an element that is not a map",
                        self.path_str()
                    ));
                };
                let mut kv = Vec::with_capacity(keys.len());
                for key in keys {
                    match m.get(key) {
                        Some(v) => kv.push((key.clone(), v.clone())),
                        None => match self.schema.key_default(&self.sp(), key) {
                            Some(d) => kv.push((key.clone(), d)),
                            None => {
                                return Err(format!(
                                    "{}: element {index}: associative list with keys has an element that omits key field {} (and doesn't have default value)",
                                    self.path_str(),
                                    go_quote(key)
                                ));
                            }
                        },
                    }
                }
                kv.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(PathElement::Key(kv))
            }
        }
    }

    /// Items of a non-atomic list with their path elements. With `strict`,
    /// duplicates are an error (applied configurations); otherwise the first
    /// occurrence wins for lookups.
    fn items<'v>(
        &self,
        strategy: &ListStrategy,
        list: &'v [Value],
        strict: bool,
    ) -> Result<Vec<(PathElement, &'v Value)>, String> {
        let mut out = Vec::with_capacity(list.len());
        let mut seen = BTreeSet::new();
        for (i, item) in list.iter().enumerate() {
            let pe = self.item_pe(strategy, i, item)?;
            if strict && !seen.insert(pe.clone()) {
                return Err(format!(
                    "{}: duplicate entries for key {pe}",
                    self.path_str()
                ));
            }
            out.push((pe, item));
        }
        Ok(out)
    }

    /// Collects the field set of `v` (the paths a configuration specifies).
    fn field_set(
        &mut self,
        v: &Value,
        prefix: &mut Vec<PathElement>,
        set: &mut FieldSet,
        strict: bool,
    ) -> Result<(), String> {
        match v {
            Value::Object(m) if !self.is_leaf(v) => {
                for (k, child) in m {
                    prefix.push(PathElement::Field(k.clone()));
                    self.spath.push(k.clone());
                    let res = if self.is_leaf(child) {
                        set.insert(prefix);
                        Ok(())
                    } else {
                        self.field_set(child, prefix, set, strict)
                    };
                    self.spath.pop();
                    prefix.pop();
                    res?;
                }
            }
            Value::Array(a) if !self.is_leaf(v) => {
                let strategy = self.strategy();
                for (pe, item) in self.items(&strategy, a, strict)? {
                    prefix.push(pe);
                    set.insert(prefix);
                    let res = if item.is_object() && !self.is_leaf(item) {
                        self.field_set(item, prefix, set, strict)
                    } else {
                        Ok(())
                    };
                    prefix.pop();
                    res?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Merges an applied configuration value over a live value.
    fn merge(&mut self, live: Option<&Value>, config: &Value) -> Result<Value, String> {
        match config {
            Value::Object(cm) if !self.map_atomic() => {
                let mut out = match live {
                    Some(Value::Object(lm)) => lm.clone(),
                    _ => Map::new(),
                };
                for (k, cv) in cm {
                    if cv.is_null() {
                        out.remove(k);
                        continue;
                    }
                    self.spath.push(k.clone());
                    let merged = self.merge(out.get(k), cv);
                    self.spath.pop();
                    out.insert(k.clone(), merged?);
                }
                Ok(Value::Object(out))
            }
            Value::Array(ca) => {
                let strategy = self.strategy();
                if strategy == ListStrategy::Atomic {
                    return Ok(config.clone());
                }
                let empty = Vec::new();
                let la = match live {
                    Some(Value::Array(la)) => la,
                    _ => &empty,
                };
                self.merge_lists(&strategy, la, ca).map(Value::Array)
            }
            _ => Ok(config.clone()),
        }
    }

    /// Merges list items by path element, keeping live-only items in place
    /// and shared items in the applied order.
    fn merge_lists(
        &mut self,
        strategy: &ListStrategy,
        la: &[Value],
        ca: &[Value],
    ) -> Result<Vec<Value>, String> {
        let lhs = self.items(strategy, la, false)?;
        let rhs = self.items(strategy, ca, true)?;
        let mut observed_l: BTreeMap<&PathElement, &Value> = BTreeMap::new();
        for (pe, v) in &lhs {
            observed_l.entry(pe).or_insert(v);
        }
        let observed_r: BTreeMap<&PathElement, &Value> =
            rhs.iter().map(|(pe, v)| (pe, *v)).collect();
        let shared: Vec<&PathElement> = rhs
            .iter()
            .map(|(pe, _)| pe)
            .filter(|pe| observed_l.contains_key(pe))
            .collect();
        let mut shared_idx = 0;
        let mut merged_r: BTreeSet<&PathElement> = BTreeSet::new();
        let mut out = Vec::with_capacity(la.len() + ca.len());
        let (mut li, mut ri) = (0, 0);
        while li < lhs.len() || ri < rhs.len() {
            if let (Some((lpe, _)), Some((rpe, _))) = (lhs.get(li), rhs.get(ri)) {
                if lpe == rpe {
                    merged_r.insert(lpe);
                    let l = observed_l.get(lpe).copied();
                    let r = observed_r.get(rpe).copied().unwrap_or(&Value::Null);
                    out.push(self.merge_item(l, r)?);
                    li += 1;
                    ri += 1;
                    if shared.get(shared_idx) == Some(&lpe) {
                        shared_idx += 1;
                    }
                    continue;
                }
                if observed_r.contains_key(lpe)
                    && shared.get(shared_idx).is_some_and(|next| *next != lpe)
                {
                    li += 1;
                    continue;
                }
            }
            if let Some((lpe, litem)) = lhs.get(li) {
                if !observed_r.contains_key(lpe) {
                    out.push((*litem).clone());
                    li += 1;
                    continue;
                } else if merged_r.contains(lpe) {
                    li += 1;
                    continue;
                }
            }
            if let Some((rpe, ritem)) = rhs.get(ri) {
                merged_r.insert(rpe);
                let l = observed_l.get(rpe).copied();
                out.push(self.merge_item(l, ritem)?);
                ri += 1;
                if shared.get(shared_idx) == Some(&rpe) {
                    shared_idx += 1;
                }
            }
        }
        Ok(out)
    }

    fn merge_item(&mut self, live: Option<&Value>, config: &Value) -> Result<Value, String> {
        match config {
            Value::Object(_) => self.merge(live, config),
            _ => Ok(config.clone()),
        }
    }

    /// Compares two values, recording added/modified/removed paths.
    fn compare(
        &mut self,
        l: Option<&Value>,
        r: Option<&Value>,
        prefix: &mut Vec<PathElement>,
        cmp: &mut Comparison,
    ) -> Result<(), String> {
        match (l, r) {
            (None, None) => Ok(()),
            (None, Some(rv)) => {
                cmp.added.insert(prefix);
                self.compare_children(None, Some(rv), prefix, cmp)
            }
            (Some(lv), None) => {
                cmp.removed.insert(prefix);
                self.compare_children(Some(lv), None, prefix, cmp)
            }
            (Some(lv), Some(rv)) => {
                let both_containers = match (lv, rv) {
                    (Value::Object(_) | Value::Null, Value::Object(_))
                    | (Value::Object(_), Value::Null) => {
                        !(self.map_atomic() || (self.is_leaf(lv) && self.is_leaf(rv)))
                    }
                    (Value::Array(_) | Value::Null, Value::Array(_))
                    | (Value::Array(_), Value::Null) => {
                        self.strategy() != ListStrategy::Atomic
                            && !(self.is_leaf(lv) && self.is_leaf(rv))
                    }
                    _ => false,
                };
                if both_containers {
                    self.compare_children(Some(lv), Some(rv), prefix, cmp)
                } else {
                    if lv != rv {
                        cmp.modified.insert(prefix);
                    }
                    Ok(())
                }
            }
        }
    }

    fn compare_children(
        &mut self,
        l: Option<&Value>,
        r: Option<&Value>,
        prefix: &mut Vec<PathElement>,
        cmp: &mut Comparison,
    ) -> Result<(), String> {
        let shape = r.filter(|v| !v.is_null()).or(l);
        match shape {
            Some(Value::Object(_)) if !self.map_atomic() => {
                let empty = Map::new();
                let lm = l.and_then(Value::as_object).unwrap_or(&empty);
                let rm = r.and_then(Value::as_object).unwrap_or(&empty);
                let keys: BTreeSet<&String> = lm.keys().chain(rm.keys()).collect();
                for k in keys {
                    prefix.push(PathElement::Field(k.clone()));
                    self.spath.push(k.clone());
                    let res = self.compare(lm.get(k), rm.get(k), prefix, cmp);
                    self.spath.pop();
                    prefix.pop();
                    res?;
                }
                Ok(())
            }
            Some(Value::Array(_)) => {
                let strategy = self.strategy();
                if strategy == ListStrategy::Atomic {
                    return Ok(());
                }
                let empty = Vec::new();
                let la = l.and_then(Value::as_array).unwrap_or(&empty);
                let ra = r.and_then(Value::as_array).unwrap_or(&empty);
                let lhs = self.items(&strategy, la, false)?;
                let rhs = self.items(&strategy, ra, false)?;
                let mut lm: BTreeMap<PathElement, &Value> = BTreeMap::new();
                for (pe, v) in lhs {
                    lm.entry(pe).or_insert(v);
                }
                let mut rm: BTreeMap<PathElement, &Value> = BTreeMap::new();
                for (pe, v) in rhs {
                    rm.entry(pe).or_insert(v);
                }
                let pes: BTreeSet<PathElement> = lm.keys().chain(rm.keys()).cloned().collect();
                for pe in pes {
                    let (li, ri) = (lm.get(&pe).copied(), rm.get(&pe).copied());
                    prefix.push(pe);
                    let res = self.compare(li, ri, prefix, cmp);
                    prefix.pop();
                    res?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Removes the paths of `set` from `v`. Containers emptied by the removal
    /// are dropped by the caller (kube's typed round trip omits them).
    fn remove(&mut self, v: &Value, set: &FieldSet) -> Value {
        match v {
            Value::Object(m) if !self.map_atomic() => {
                let mut out = Map::new();
                for (k, child) in m {
                    let pe = PathElement::Field(k.clone());
                    if set.members.contains(&pe) {
                        continue;
                    }
                    match set.children.get(&pe) {
                        Some(sub) => {
                            self.spath.push(k.clone());
                            let nv = self.remove(child, sub);
                            self.spath.pop();
                            if !became_empty(child, &nv) {
                                out.insert(k.clone(), nv);
                            }
                        }
                        None => {
                            out.insert(k.clone(), child.clone());
                        }
                    }
                }
                Value::Object(out)
            }
            Value::Array(a) => {
                let strategy = self.strategy();
                if strategy == ListStrategy::Atomic {
                    return v.clone();
                }
                let mut out = Vec::with_capacity(a.len());
                for (i, item) in a.iter().enumerate() {
                    let Ok(pe) = self.item_pe(&strategy, i, item) else {
                        out.push(item.clone());
                        continue;
                    };
                    if set.members.contains(&pe) {
                        continue;
                    }
                    match set.children.get(&pe) {
                        Some(sub) => out.push(self.remove(item, sub)),
                        None => out.push(item.clone()),
                    }
                }
                Value::Array(out)
            }
            _ => v.clone(),
        }
    }
}

fn became_empty(before: &Value, after: &Value) -> bool {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => !b.is_empty() && a.is_empty(),
        (Value::Array(b), Value::Array(a)) => !b.is_empty() && a.is_empty(),
        _ => false,
    }
}

#[derive(Debug, Default)]
struct Comparison {
    added: FieldSet,
    modified: FieldSet,
    removed: FieldSet,
}

impl Comparison {
    fn filter(self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

fn field_set_of(schema: &dyn MergeSchema, v: &Value, strict: bool) -> Result<FieldSet, String> {
    let mut w = Walker {
        schema,
        spath: Vec::new(),
    };
    let mut set = FieldSet::default();
    w.field_set(v, &mut Vec::new(), &mut set, strict)?;
    Ok(set)
}

fn compare_objects(schema: &dyn MergeSchema, l: &Value, r: &Value) -> Result<Comparison, String> {
    let mut w = Walker {
        schema,
        spath: Vec::new(),
    };
    let mut cmp = Comparison::default();
    w.compare(Some(l), Some(r), &mut Vec::new(), &mut cmp)?;
    Ok(cmp)
}

/// The fields of `last_applied` (kubectl's last-applied configuration) that
/// still hold their values in `live`, formatted as conflicts name them: what
/// kube lets `kubectl apply --server-side` take over from client-side apply.
pub fn fields_still_applied(
    schema: &dyn MergeSchema,
    last_applied: &Value,
    live: &Value,
) -> Result<Vec<String>, String> {
    let set = field_set_of(schema, last_applied, false)?;
    let cmp = compare_objects(schema, last_applied, live)?;
    let kept = set
        .difference(&cmp.modified)
        .difference(&cmp.added)
        .difference(&cmp.removed);
    Ok(kept.paths().iter().map(|p| path_to_string(p)).collect())
}

fn remove_paths(schema: &dyn MergeSchema, v: &Value, set: &FieldSet) -> Value {
    if set.is_empty() {
        return v.clone();
    }
    let mut w = Walker {
        schema,
        spath: Vec::new(),
    };
    w.remove(v, set)
}

// ---------------------------------------------------------------------------
// Managers and managedFields
// ---------------------------------------------------------------------------

/// Operation of a managedFields entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Operation {
    /// Server-side apply.
    Apply,
    /// Any other write.
    Update,
}

impl Operation {
    /// Wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }
}

/// Identity of a field manager as kube keys it (Apply entries ignore the
/// API version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManagerInfo {
    /// `manager` name.
    pub manager: String,
    /// `operation`.
    pub operation: Operation,
    /// `apiVersion` (empty for appliers, which are not keyed by version).
    pub api_version: String,
    /// `subresource`, empty for the main resource.
    pub subresource: String,
}

impl ManagerInfo {
    /// kube's manager identifier: the JSON of the entry's identity fields.
    fn identifier(&self) -> String {
        let mut s = String::from("{");
        let mut parts = Vec::new();
        if !self.manager.is_empty() {
            parts.push(format!(
                "\"manager\":{}",
                Value::String(self.manager.clone())
            ));
        }
        parts.push(format!("\"operation\":\"{}\"", self.operation.as_str()));
        if !self.api_version.is_empty() {
            parts.push(format!(
                "\"apiVersion\":{}",
                Value::String(self.api_version.clone())
            ));
        }
        if !self.subresource.is_empty() {
            parts.push(format!(
                "\"subresource\":{}",
                Value::String(self.subresource.clone())
            ));
        }
        s.push_str(&parts.join(","));
        s.push('}');
        s
    }

    /// How kube names the manager in conflict messages:
    /// `"name"`, `"name" with subresource "status"`, `... using v1`.
    pub fn display(&self) -> String {
        let mut s = go_quote(&self.manager);
        if !self.subresource.is_empty() {
            s = format!("{s} with subresource {}", go_quote(&self.subresource));
        }
        if self.operation == Operation::Update {
            s = format!("{s} using {}", self.api_version);
        }
        s
    }
}

#[derive(Debug, Clone)]
struct Entry {
    info: ManagerInfo,
    api_version: String,
    set: FieldSet,
    time: Option<String>,
}

/// Managers keyed by identifier.
type Managers = BTreeMap<String, Entry>;

fn decode_managed_fields(v: Option<&Value>) -> Result<Managers, String> {
    let mut out = Managers::new();
    let list = match v {
        None | Some(Value::Null) => return Ok(out),
        Some(Value::Array(a)) => a,
        Some(_) => return Err("managedFields must be a list".to_string()),
    };
    for (i, e) in list.iter().enumerate() {
        let Value::Object(e) = e else {
            return Err(format!("managed fields entry {i} is not an object"));
        };
        let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let operation = match s("operation").as_str() {
            "Apply" => Operation::Apply,
            "Update" => Operation::Update,
            _ => return Err("operation must be `Apply` or `Update`".to_string()),
        };
        let api_version = s("apiVersion");
        if api_version.is_empty() {
            return Err("apiVersion must not be empty".to_string());
        }
        match s("fieldsType").as_str() {
            "FieldsV1" => {}
            "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
            other => {
                return Err(format!(
                    "invalid fieldsType {other:?} in managed fields entry {i}"
                ));
            }
        }
        let set = match e.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(f) => {
                FieldSet::from_fields_v1(f).map_err(|err| format!("error decoding set: {err}"))?
            }
        };
        let info = ManagerInfo {
            manager: s("manager"),
            operation,
            api_version: if operation == Operation::Apply {
                String::new()
            } else {
                api_version.clone()
            },
            subresource: s("subresource"),
        };
        let time = e.get("time").and_then(Value::as_str).map(str::to_string);
        out.insert(
            info.identifier(),
            Entry {
                info,
                api_version,
                set,
                time,
            },
        );
    }
    Ok(out)
}

fn encode_managed_fields(managers: &Managers) -> Option<Value> {
    let mut entries: Vec<&Entry> = managers.values().filter(|e| !e.set.is_empty()).collect();
    if entries.is_empty() {
        return None;
    }
    entries.sort_by(|p, q| {
        p.info
            .operation
            .cmp(&q.info.operation)
            .then_with(|| p.time.cmp(&q.time))
            .then_with(|| p.info.manager.cmp(&q.info.manager))
            .then_with(|| p.api_version.cmp(&q.api_version))
            .then_with(|| p.info.subresource.cmp(&q.info.subresource))
    });
    let list = entries
        .into_iter()
        .map(|e| {
            let mut m = Map::new();
            if !e.info.manager.is_empty() {
                m.insert("manager".into(), Value::String(e.info.manager.clone()));
            }
            m.insert(
                "operation".into(),
                Value::String(e.info.operation.as_str().into()),
            );
            m.insert("apiVersion".into(), Value::String(e.api_version.clone()));
            if let Some(t) = &e.time {
                m.insert("time".into(), Value::String(t.clone()));
            }
            m.insert("fieldsType".into(), Value::String("FieldsV1".into()));
            m.insert("fieldsV1".into(), e.set.to_fields_v1());
            if !e.info.subresource.is_empty() {
                m.insert(
                    "subresource".into(),
                    Value::String(e.info.subresource.clone()),
                );
            }
            Value::Object(m)
        })
        .collect();
    Some(Value::Array(list))
}

fn set_managed_fields(obj: &mut Value, managers: &Managers) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match encode_managed_fields(managers) {
        Some(list) => {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if let Value::Object(meta) = meta {
                meta.insert("managedFields".into(), list);
            }
        }
        None => {
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.remove("managedFields");
            }
        }
    }
}

fn take_managed_fields(obj: &mut Value) -> Option<Value> {
    obj.get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("managedFields"))
}

/// Fields kube never records ownership of (apiVersion, kind, and the
/// server-owned parts of metadata), built once.
fn strip_set() -> &'static FieldSet {
    static STRIP: std::sync::LazyLock<FieldSet> = std::sync::LazyLock::new(|| {
        FieldSet::from_plain_paths(&[
            &["apiVersion"],
            &["kind"],
            &["metadata"],
            &["metadata", "name"],
            &["metadata", "namespace"],
            &["metadata", "creationTimestamp"],
            &["metadata", "selfLink"],
            &["metadata", "uid"],
            &["metadata", "clusterName"],
            &["metadata", "generation"],
            &["metadata", "managedFields"],
            &["metadata", "resourceVersion"],
        ])
    });
    &STRIP
}

/// Structured-merge-diff's update step: other managers lose ownership of what
/// changed (conflicts unless `force`) and of what was removed.
fn update_others(
    managers: &mut Managers,
    workflow: &str,
    cmp: &Comparison,
    force: bool,
) -> Result<(), Conflicts> {
    if cmp.removed.is_empty() && managers.keys().all(|id| id == workflow) {
        // Nobody else owns anything (as on every create): nothing to take away.
        return Ok(());
    }
    let changed = cmp.modified.union(&cmp.added);
    let mut conflicts: Vec<(String, FieldSet)> = Vec::new();
    for (id, entry) in managers.iter() {
        if id == workflow {
            continue;
        }
        let c = entry.set.intersection(&changed);
        if !c.is_empty() {
            conflicts.push((id.clone(), c));
        }
    }
    if !force && !conflicts.is_empty() {
        let mut list = Vec::new();
        for (id, set) in &conflicts {
            let Some(entry) = managers.get(id) else {
                continue;
            };
            for p in set.paths() {
                list.push(Conflict {
                    manager: entry.info.clone(),
                    field: path_to_string(&p),
                });
            }
        }
        return Err(Conflicts(list));
    }
    for (id, set) in conflicts {
        if let Some(e) = managers.get_mut(&id) {
            e.set = e.set.difference(&set);
        }
    }
    if !cmp.removed.is_empty() {
        for (id, e) in managers.iter_mut() {
            if id != workflow {
                e.set = e.set.difference(&cmp.removed);
            }
        }
    }
    managers.retain(|_, e| !e.set.is_empty());
    Ok(())
}

/// Merges the oldest `Update` entries into `ancient-changes` buckets so at
/// most [`MAX_UPDATE_MANAGERS`] remain.
fn cap_update_managers(managers: &mut Managers) {
    let mut updaters: Vec<(Option<String>, String)> = managers
        .iter()
        .filter(|(_, e)| e.info.operation == Operation::Update)
        .map(|(id, e)| (e.time.clone(), id.clone()))
        .collect();
    if updaters.len() <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort();
    let mut length = updaters.len();
    let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
    for (time, id) in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(entry) = managers.get(&id).cloned() else {
            continue;
        };
        let version = entry.api_version.clone();
        let bucket_info = ManagerInfo {
            manager: ANCIENT_CHANGES.to_string(),
            operation: Operation::Update,
            api_version: version.clone(),
            subresource: String::new(),
        };
        let bucket = bucket_info.identifier();
        match first_of_version.get(&version) {
            Some(first) => {
                if !managers.contains_key(&bucket)
                    && let Some(first_entry) = managers.remove(first)
                {
                    managers.insert(
                        bucket.clone(),
                        Entry {
                            info: bucket_info.clone(),
                            ..first_entry
                        },
                    );
                }
                let base = managers
                    .get(&bucket)
                    .map(|e| e.set.clone())
                    .unwrap_or_default();
                managers.remove(&id);
                managers.insert(
                    bucket,
                    Entry {
                        info: bucket_info,
                        api_version: version,
                        set: entry.set.union(&base),
                        time,
                    },
                );
                length -= 1;
            }
            None => {
                first_of_version.insert(version, id);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/// One field a different manager owns with a different value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflict {
    /// The manager owning the field.
    pub manager: ManagerInfo,
    /// The field path, e.g. `.data.key` or `.spec.containers[name="c"].image`.
    pub field: String,
}

/// All conflicts of an apply request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conflicts(pub Vec<Conflict>);

impl Conflicts {
    /// kube-apiserver's message: `Apply failed with 1 conflict: conflict with
    /// "mgr" using v1: .data.key`, or for several conflicts one
    /// `conflicts with "mgr":` block per manager (sorted) with `- path` lines.
    pub fn message(&self) -> String {
        if let [only] = self.0.as_slice() {
            return format!(
                "Apply failed with 1 conflict: conflict with {}: {}",
                only.manager.display(),
                only.field
            );
        }
        let mut groups: BTreeMap<String, (&ManagerInfo, Vec<&str>)> = BTreeMap::new();
        for c in &self.0 {
            groups
                .entry(c.manager.identifier())
                .or_insert_with(|| (&c.manager, Vec::new()))
                .1
                .push(&c.field);
        }
        let mut lines = Vec::new();
        for (info, paths) in groups.values() {
            lines.push(format!("conflicts with {}:", info.display()));
            for p in paths {
                lines.push(format!("- {p}"));
            }
        }
        format!(
            "Apply failed with {} conflicts: {}",
            self.0.len(),
            lines.join("\n")
        )
    }

    /// `details.causes` entries: `{"reason":"FieldManagerConflict",
    /// "message":"conflict with \"mgr\" using v1","field":".data.key"}`.
    pub fn causes(&self) -> Vec<Value> {
        self.0
            .iter()
            .map(|c| {
                json!({
                    "reason": "FieldManagerConflict",
                    "message": format!("conflict with {}", c.manager.display()),
                    "field": c.field,
                })
            })
            .collect()
    }

    /// The full `Status` object kube returns (HTTP 409, reason Conflict).
    pub fn to_status(&self) -> Value {
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message(),
            "reason": "Conflict",
            "details": {"causes": self.causes()},
            "code": 409,
        })
    }
}

/// Errors of server-side apply and managed-fields bookkeeping.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    /// Fields owned by other managers would change (HTTP 409).
    #[error("{}", .0.message())]
    Conflict(Conflicts),
    /// The request is malformed (HTTP 400, reason BadRequest).
    #[error("{0}")]
    BadRequest(String),
    /// kube answers these with HTTP 500 and an empty reason.
    #[error("{0}")]
    Internal(String),
}

impl ApplyError {
    /// The conflicts, when this is a conflict error.
    pub fn conflicts(&self) -> Option<&[Conflict]> {
        match self {
            ApplyError::Conflict(c) => Some(&c.0),
            _ => None,
        }
    }

    /// HTTP status code.
    pub fn status_code(&self) -> u16 {
        match self {
            ApplyError::Conflict(_) => 409,
            ApplyError::BadRequest(_) => 400,
            ApplyError::Internal(_) => 500,
        }
    }

    /// The `Status` object kube returns.
    pub fn to_status(&self) -> Value {
        match self {
            ApplyError::Conflict(c) => c.to_status(),
            ApplyError::BadRequest(m) => json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": m, "reason": "BadRequest", "code": 400,
            }),
            ApplyError::Internal(m) => json!({
                "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": m, "code": 500,
            }),
        }
    }
}

/// The 422 `Status` kube-apiserver returns for an apply patch without
/// `fieldManager`.
pub fn field_manager_required_status() -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        "reason": "Invalid",
        "details": {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{
            "reason": "FieldValueRequired",
            "message": "Required value: is required for apply patch",
            "field": "fieldManager"}]},
        "code": 422,
    })
}

/// The manager name kube derives when a non-apply request has no
/// `fieldManager`: the user agent up to the first `/`, printable characters
/// only, at most 128 bytes.
pub fn manager_from_user_agent(user_agent: &str) -> String {
    let head = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in head.chars() {
        if c.is_control() {
            continue;
        }
        if out.len() >= 128 {
            break;
        }
        out.push(c);
    }
    out
}

// ---------------------------------------------------------------------------
// Public entry points
// ---------------------------------------------------------------------------

/// A server-side apply request.
#[derive(Debug, Clone, Copy)]
pub struct ApplyRequest<'a> {
    /// The stored object, `None` when apply creates it.
    pub live: Option<&'a Value>,
    /// The applied configuration (decoded apply-patch body).
    pub applied: &'a Value,
    /// `fieldManager` (the caller rejects empty ones with
    /// [`field_manager_required_status`]).
    pub manager: &'a str,
    /// `force=true`: take ownership instead of failing on conflicts.
    pub force: bool,
    /// The served apiVersion, e.g. `v1` or `apps/v1`.
    pub api_version: &'a str,
    /// The served kind; the applied object must match it (an empty string
    /// skips the kind check).
    pub kind: &'a str,
    /// Subresource (`status`), if the apply targets one.
    pub subresource: Option<&'a str>,
    /// RFC3339 time for `managedFields[].time`.
    pub now: &'a str,
    /// Paths reset by the strategy (e.g. `["status"]` on the main resource);
    /// never owned and never compared.
    pub ignored_fields: &'a [&'a [&'a str]],
}

fn gvk_string(obj: &Map<String, Value>) -> String {
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    format!("{group}/{version}, Kind={kind}")
}

fn object_desc(obj: &Map<String, Value>) -> String {
    let meta = obj.get("metadata");
    let get = |k: &str| {
        meta.and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    format!("{}/{}; {}", get("namespace"), get("name"), gvk_string(obj))
}

/// Applies `req.applied` over `req.live` as kube-apiserver's server-side
/// apply does and returns the resulting object, with
/// `metadata.managedFields` updated. A no-op apply returns the live object
/// (managed fields may still change; the time is not bumped).
pub fn server_side_apply(
    req: ApplyRequest<'_>,
    schema: &dyn MergeSchema,
) -> Result<Value, ApplyError> {
    let Value::Object(applied) = req.applied else {
        return Err(ApplyError::BadRequest(
            "error decoding YAML: the applied configuration must be an object".to_string(),
        ));
    };
    let applied_api = applied
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    let applied_kind = applied.get("kind").and_then(Value::as_str).unwrap_or("");
    if applied_api != req.api_version || (!req.kind.is_empty() && applied_kind != req.kind) {
        return Err(ApplyError::BadRequest(format!(
            "invalid object type: {}",
            gvk_string(applied)
        )));
    }
    if applied
        .get("metadata")
        .and_then(|m| m.get("managedFields"))
        .is_some_and(|m| !m.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".to_string(),
        ));
    }
    let mut live = match req.live {
        None => Value::Object(Map::new()),
        Some(v @ Value::Object(_)) => v.clone(),
        Some(_) => {
            return Err(ApplyError::Internal(
                "couldn't get accessor: live object is not an object".into(),
            ));
        }
    };
    let mut managers = decode_managed_fields(take_managed_fields(&mut live).as_ref())
        .map_err(|e| ApplyError::Internal(format!("failed to decode managed fields: {e}")))?;

    let manager = if req.manager.is_empty() {
        "unknown"
    } else {
        req.manager
    };
    let info = ManagerInfo {
        manager: manager.to_string(),
        operation: Operation::Apply,
        api_version: String::new(),
        subresource: req.subresource.unwrap_or("").to_string(),
    };
    let id = info.identifier();
    let ignored = FieldSet::from_plain_paths(req.ignored_fields);
    let live_obj = live.as_object().cloned().unwrap_or_default();

    let typed_err = |what: &str, obj: &Map<String, Value>, e: String| {
        ApplyError::Internal(format!(
            "failed to create typed {what} object ({}): {e}",
            object_desc(obj)
        ))
    };
    let config_set = field_set_of(schema, req.applied, true)
        .map_err(|e| typed_err("patch", applied, e))?
        .recursive_difference(&ignored);
    let mut walker = Walker {
        schema,
        spath: Vec::new(),
    };
    let merged = walker
        .merge(Some(&live), req.applied)
        .map_err(|e| typed_err("live", &live_obj, e))?;

    let previous = managers.get(&id).cloned();
    let last_set = previous
        .as_ref()
        .map(|e| e.set.recursive_difference(&ignored));
    managers.insert(
        id.clone(),
        Entry {
            info,
            api_version: req.api_version.to_string(),
            set: config_set,
            time: previous.and_then(|e| e.time),
        },
    );

    let new_obj = match last_set {
        Some(last) if !last.is_empty() => prune(schema, &merged, &managers, &last)
            .map_err(|e| ApplyError::Internal(format!("failed to prune fields: {e}")))?,
        _ => merged,
    };

    let cmp = compare_objects(schema, &live, &new_obj)
        .map_err(|e| ApplyError::Internal(format!("failed to compare objects: {e}")))?
        .filter(&ignored);
    update_others(&mut managers, &id, &cmp, req.force).map_err(ApplyError::Conflict)?;

    let strip = strip_set();
    if let Some(e) = managers.get_mut(&id) {
        e.set = e.set.difference(strip);
    }
    let changed = new_obj != live;
    if changed && let Some(e) = managers.get_mut(&id) {
        e.time = Some(req.now.to_string());
    }
    managers.retain(|_, e| !e.set.is_empty());
    let mut out = if changed { new_obj } else { live };
    set_managed_fields(&mut out, &managers);
    Ok(out)
}

/// Removes what the applier owned last time and no longer specifies, unless
/// some manager (including the applier's new configuration) owns it.
fn prune(
    schema: &dyn MergeSchema,
    merged: &Value,
    managers: &Managers,
    last: &FieldSet,
) -> Result<Value, String> {
    let pruned = remove_paths(schema, merged, last);
    let managed = managers
        .values()
        .fold(FieldSet::default(), |acc, e| acc.union(&e.set));
    let merged_set = field_set_of(schema, merged, false)?;
    let pruned_set = field_set_of(schema, &pruned, false)?;
    let pruned = remove_paths(
        schema,
        merged,
        &merged_set.difference(&pruned_set.union(&managed)),
    );
    let pruned_set = field_set_of(schema, &pruned, false)?;
    Ok(remove_paths(
        schema,
        merged,
        &merged_set.difference(&pruned_set).intersection(last),
    ))
}

/// A non-apply write (create, update, patch) whose managed fields to record.
#[derive(Debug, Clone, Copy)]
pub struct UpdateRequest<'a> {
    /// The stored object before the write, `None` on create.
    pub old: Option<&'a Value>,
    /// `fieldManager`, or [`manager_from_user_agent`] when absent.
    pub manager: &'a str,
    /// Subresource written (`status`, `scale`), if any. On subresources the
    /// client's managedFields are ignored.
    pub subresource: Option<&'a str>,
    /// The served apiVersion, e.g. `v1`.
    pub api_version: &'a str,
    /// RFC3339 time for `managedFields[].time`.
    pub now: &'a str,
    /// Paths reset by the strategy (e.g. `["status"]`), never owned.
    pub ignored_fields: &'a [&'a [&'a str]],
}

fn is_reset_managed_fields(v: &Value) -> bool {
    match v {
        Value::Array(a) if a.is_empty() => true,
        Value::Array(a) if a.len() == 1 => a[0].as_object().is_some_and(|m| m.is_empty()),
        _ => false,
    }
}

/// Records an `Update` entry for a non-apply write, as kube-apiserver does:
/// the writer gains ownership of every field it added or changed (other
/// managers lose it, never a conflict), every manager loses fields that were
/// removed, and entries left empty disappear. A client may replace
/// `metadata.managedFields` wholesale; `[]` or `[{}]` clears them. `new` is
/// updated in place. Like kube's `UpdateNoErrors`, this never fails: if the
/// objects cannot be compared, the old object's managedFields are kept.
pub fn update_managed_fields(req: UpdateRequest<'_>, new: &mut Value, schema: &dyn MergeSchema) {
    if !new.is_object() {
        return;
    }
    let mut old = match req.old {
        Some(v @ Value::Object(_)) => v.clone(),
        _ => {
            // Creating: the typed empty object kube compares against has the
            // top-level structs (metadata, spec, status) present.
            let mut base = Map::new();
            if let Value::Object(m) = &*new {
                for k in ["metadata", "spec", "status"] {
                    if m.get(k).is_some_and(Value::is_object) {
                        base.insert(k.to_string(), Value::Object(Map::new()));
                    }
                }
            }
            Value::Object(base)
        }
    };
    let old_managed = take_managed_fields(&mut old);
    let new_managed = take_managed_fields(new);
    let from_old = || decode_managed_fields(old_managed.as_ref()).unwrap_or_default();
    let mut managers = if req.subresource.is_some() {
        from_old()
    } else {
        match &new_managed {
            Some(v) if is_reset_managed_fields(v) => Managers::new(),
            Some(v) => match decode_managed_fields(Some(v)) {
                Ok(m) if !m.is_empty() => m,
                _ => from_old(),
            },
            None => from_old(),
        }
    };

    let ignored = FieldSet::from_plain_paths(req.ignored_fields);
    let cmp = match compare_objects(schema, &old, new) {
        Ok(c) if ignored.is_empty() => c,
        Ok(c) => c.filter(&ignored),
        Err(_) => {
            if let (Some(list), Some(meta)) = (
                old_managed,
                new.get_mut("metadata").and_then(Value::as_object_mut),
            ) {
                meta.insert("managedFields".into(), list);
            }
            return;
        }
    };
    let workflow = "current-operation";
    // Never fails with force.
    let _ = update_others(&mut managers, workflow, &cmp, true);

    // On creation nothing is modified: take the added set as it is, without copies.
    let op_set = if cmp.modified.is_empty() {
        cmp.added
    } else {
        cmp.modified.union(&cmp.added)
    };
    let op_set = if ignored.is_empty() {
        op_set
    } else {
        op_set.recursive_difference(&ignored)
    };
    let op_set = op_set.difference(strip_set());
    if !op_set.is_empty() {
        let info = ManagerInfo {
            manager: if req.manager.is_empty() {
                "unknown"
            } else {
                req.manager
            }
            .to_string(),
            operation: Operation::Update,
            api_version: req.api_version.to_string(),
            subresource: req.subresource.unwrap_or("").to_string(),
        };
        let id = info.identifier();
        let set = match managers.get(&id) {
            Some(prev) => op_set.union(&prev.set),
            None => op_set,
        };
        managers.insert(
            id,
            Entry {
                info,
                api_version: req.api_version.to_string(),
                set,
                time: Some(req.now.to_string()),
            },
        );
    }
    cap_update_managers(&mut managers);
    set_managed_fields(new, &managers);
}

#[cfg(test)]
mod tests {
    use super::super::schema::apply_schema;
    use super::*;

    const T1: &str = "2024-01-01T00:00:00Z";
    const T2: &str = "2024-01-01T00:00:05Z";

    fn apply(
        live: Option<&Value>,
        applied: Value,
        manager: &str,
        force: bool,
    ) -> Result<Value, ApplyError> {
        let api = applied["apiVersion"].as_str().unwrap_or("v1").to_string();
        let kind = applied["kind"].as_str().unwrap_or("ConfigMap").to_string();
        let group = api
            .split_once('/')
            .map(|(g, _)| g)
            .unwrap_or("")
            .to_string();
        let schema = apply_schema(&group, &kind);
        server_side_apply(
            ApplyRequest {
                live,
                applied: &applied,
                manager,
                force,
                api_version: &api,
                kind: &kind,
                subresource: None,
                now: T2,
                ignored_fields: &[],
            },
            &schema,
        )
    }

    fn update(old: Option<&Value>, new: &mut Value, manager: &str, now: &str) {
        let schema = apply_schema("", "ConfigMap");
        update_managed_fields(
            UpdateRequest {
                old,
                manager,
                subresource: None,
                api_version: "v1",
                now,
                ignored_fields: &[],
            },
            new,
            &schema,
        );
    }

    fn cm(data: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"}, "data": data})
    }

    fn entries(obj: &Value) -> Vec<Value> {
        obj["metadata"]["managedFields"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn apply_creates_and_records_ownership() {
        let mut applied = cm(json!({"key": "v"}));
        applied["metadata"]["labels"] = json!({"app": "x"});
        let out = apply(None, applied, "kubectl", false).unwrap();
        assert_eq!(out["data"], json!({"key": "v"}));
        assert_eq!(
            entries(&out),
            vec![json!({
                "manager": "kubectl", "operation": "Apply", "apiVersion": "v1", "time": T2,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {"f:key": {}}, "f:metadata": {"f:labels": {"f:app": {}}}}
            })]
        );
    }

    #[test]
    fn apply_removes_fields_no_longer_specified() {
        let v1 = apply(None, cm(json!({"a": "1", "b": "2"})), "m", false).unwrap();
        let v2 = apply(Some(&v1), cm(json!({"a": "1"})), "m", false).unwrap();
        assert_eq!(v2["data"], json!({"a": "1"}));
        assert_eq!(entries(&v2)[0]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
        // Dropping everything removes the emptied map.
        let v3 = apply(
            Some(&v2),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            "m",
            false,
        )
        .unwrap();
        assert!(v3.get("data").is_none(), "{v3}");
        assert!(v3["metadata"].get("managedFields").is_none());
    }

    #[test]
    fn shared_ownership_keeps_field() {
        let v1 = apply(None, cm(json!({"a": "1"})), "m1", false).unwrap();
        let v2 = apply(Some(&v1), cm(json!({"a": "1"})), "m2", false).unwrap();
        assert_eq!(entries(&v2).len(), 2);
        let v3 = apply(
            Some(&v2),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            "m1",
            false,
        )
        .unwrap();
        assert_eq!(v3["data"], json!({"a": "1"}));
        let e = entries(&v3);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0]["manager"], "m2");
    }

    #[test]
    fn conflict_with_updater_and_force() {
        let mut created = cm(json!({"key": "old"}));
        update(None, &mut created, "kubectl-client-side-apply", T1);
        assert_eq!(
            entries(&created)[0]["fieldsV1"],
            json!({"f:data": {".": {}, "f:key": {}}})
        );
        let err = apply(Some(&created), cm(json!({"key": "new"})), "kubectl", false).unwrap_err();
        assert_eq!(err.status_code(), 409);
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using v1: .data.key"
        );
        let status = err.to_status();
        assert_eq!(status["reason"], "Conflict");
        assert_eq!(status["code"], 409);
        assert_eq!(
            status["details"]["causes"],
            json!([{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl-client-side-apply\" using v1", "field": ".data.key"}])
        );
        // Same value: no conflict, shared ownership.
        let ok = apply(Some(&created), cm(json!({"key": "old"})), "kubectl", false).unwrap();
        assert_eq!(entries(&ok).len(), 2);
        // Force moves ownership.
        let forced = apply(Some(&created), cm(json!({"key": "new"})), "kubectl", true).unwrap();
        assert_eq!(forced["data"]["key"], "new");
        let e = entries(&forced);
        assert_eq!(e[0]["manager"], "kubectl");
        assert_eq!(e[0]["fieldsV1"], json!({"f:data": {"f:key": {}}}));
        // The updater keeps only `.data` itself.
        assert_eq!(e[1]["manager"], "kubectl-client-side-apply");
        assert_eq!(e[1]["fieldsV1"], json!({"f:data": {}}));
    }

    #[test]
    fn multiple_conflicts_message() {
        let v1 = apply(None, cm(json!({"a": "1", "b": "1"})), "alpha", false).unwrap();
        let mut v2 = v1.clone();
        v2["data"]["c"] = json!("1");
        update(Some(&v1), &mut v2, "beta", T1);
        let err = apply(
            Some(&v2),
            cm(json!({"a": "2", "b": "2", "c": "2"})),
            "gamma",
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 3 conflicts: conflicts with \"alpha\":\n- .data.a\n- .data.b\nconflicts with \"beta\" using v1:\n- .data.c"
        );
        assert_eq!(err.conflicts().map(<[Conflict]>::len), Some(3));
        assert_eq!(
            err.conflicts()
                .and_then(|c| c.first())
                .map(|c| c.field.as_str()),
            Some(".data.a")
        );
    }

    #[test]
    fn subresource_manager_display() {
        let info = ManagerInfo {
            manager: "kubelet".into(),
            operation: Operation::Update,
            api_version: "v1".into(),
            subresource: "status".into(),
        };
        assert_eq!(
            info.display(),
            "\"kubelet\" with subresource \"status\" using v1"
        );
        assert_eq!(
            info.identifier(),
            r#"{"manager":"kubelet","operation":"Update","apiVersion":"v1","subresource":"status"}"#
        );
    }

    #[test]
    fn list_maps_and_sets_encoding() {
        let applied = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "finalizers": ["x"]},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"spec": {"containers": [
                {"name": "c1", "image": "nginx", "ports": [{"containerPort": 80}]}]}}}});
        let out = apply(None, applied, "kubectl", false).unwrap();
        assert_eq!(
            entries(&out)[0]["fieldsV1"],
            json!({
                "f:metadata": {"f:finalizers": {"v:\"x\"": {}}},
                "f:spec": {"f:selector": {}, "f:template": {"f:spec": {"f:containers": {
                    "k:{\"name\":\"c1\"}": {".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {"k:{\"containerPort\":80,\"protocol\":\"TCP\"}": {".": {}, "f:containerPort": {}}}}
                }}}}
            })
        );
        // Round trip of the encoding.
        let f = &entries(&out)[0]["fieldsV1"];
        assert_eq!(&FieldSet::from_fields_v1(f).unwrap().to_fields_v1(), f);
    }

    #[test]
    fn containers_merge_and_prune_by_key() {
        let dep = |containers: Value| {
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
                   "spec": {"template": {"spec": {"containers": containers}}}})
        };
        let v1 = apply(
            None,
            dep(json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}])),
            "m",
            false,
        )
        .unwrap();
        // Another manager adds a container.
        let v2 = apply(
            Some(&v1),
            dep(json!([{"name": "z", "image": "z"}])),
            "other",
            false,
        )
        .unwrap();
        assert_eq!(
            v2["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "z", "image": "z"}])
        );
        // m drops b: b goes, z (owned by other) stays.
        let v3 = apply(
            Some(&v2),
            dep(json!([{"name": "a", "image": "a2"}])),
            "m",
            false,
        )
        .unwrap();
        assert_eq!(
            v3["spec"]["template"]["spec"]["containers"],
            json!([{"name": "a", "image": "a2"}, {"name": "z", "image": "z"}])
        );
        let err = apply(
            Some(&v3),
            dep(json!([{"name": "a", "image": "x"}])),
            "other",
            false,
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "Apply failed with 1 conflict: conflict with \"m\": .spec.template.spec.containers[name=\"a\"].image"
        );
    }

    #[test]
    fn owner_references_items_are_atomic() {
        let applied = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "ownerReferences": [{"uid": "u1", "name": "o", "kind": "K", "apiVersion": "v1"}]}});
        let out = apply(None, applied, "m", false).unwrap();
        assert_eq!(
            entries(&out)[0]["fieldsV1"],
            json!({"f:metadata": {"f:ownerReferences": {"k:{\"uid\":\"u1\"}": {}}}})
        );
    }

    #[test]
    fn apply_validation_errors() {
        let mut bad = cm(json!({}));
        bad["metadata"]["managedFields"] = json!([]);
        let err = apply(None, bad, "m", false).unwrap_err();
        assert_eq!(
            err,
            ApplyError::BadRequest("metadata.managedFields must be nil".into())
        );
        let schema = apply_schema("", "ConfigMap");
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}});
        let err = server_side_apply(
            ApplyRequest {
                live: None,
                applied: &secret,
                manager: "m",
                force: false,
                api_version: "v1",
                kind: "ConfigMap",
                subresource: None,
                now: T1,
                ignored_fields: &[],
            },
            &schema,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), "invalid object type: /v1, Kind=Secret");
        assert_eq!(err.status_code(), 400);
        let dup = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"name": "a"}, {"name": "a"}]}}}});
        let err = apply(None, dup, "m", false).unwrap_err();
        assert_eq!(err.status_code(), 500);
        assert!(
            err.to_string()
                .contains("duplicate entries for key [name=\"a\"]"),
            "{err}"
        );
        let nokey = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
            "spec": {"template": {"spec": {"containers": [{"image": "a"}]}}}});
        let err = apply(None, nokey, "m", false).unwrap_err();
        assert!(
            err.to_string().contains("omits key field \"name\""),
            "{err}"
        );
    }

    #[test]
    fn noop_apply_keeps_time() {
        let v1 = apply(None, cm(json!({"a": "1"})), "m", false).unwrap();
        let mut live = v1.clone();
        live["metadata"]["managedFields"][0]["time"] = json!(T1);
        let v2 = apply(Some(&live), cm(json!({"a": "1"})), "m", false).unwrap();
        assert_eq!(v2, live);
    }

    #[test]
    fn update_tracks_changes_and_removals() {
        let mut created = cm(json!({"a": "1"}));
        created["metadata"]["labels"] = json!({"x": "y"});
        update(None, &mut created, "creator", T1);
        assert_eq!(
            entries(&created),
            vec![
                json!({"manager": "creator", "operation": "Update", "apiVersion": "v1", "time": T1,
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}}, "f:metadata": {"f:labels": {".": {}, "f:x": {}}}}})
            ]
        );
        // Another writer changes data.a and removes the labels.
        let mut next = created.clone();
        next["data"]["a"] = json!("2");
        next["metadata"].as_object_mut().unwrap().remove("labels");
        next["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        update(Some(&created), &mut next, "editor", T2);
        let e = entries(&next);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0]["manager"], "creator");
        assert_eq!(e[0]["fieldsV1"], json!({"f:data": {}}));
        assert_eq!(e[1]["manager"], "editor");
        assert_eq!(e[1]["fieldsV1"], json!({"f:data": {"f:a": {}}}));
        // A write that changes only server-owned metadata records nothing.
        let mut same = next.clone();
        same["metadata"]["resourceVersion"] = json!("5");
        update(Some(&next), &mut same, "third", T2);
        assert_eq!(entries(&same).len(), 2);
    }

    #[test]
    fn update_can_reset_managed_fields() {
        let mut created = cm(json!({"a": "1"}));
        update(None, &mut created, "creator", T1);
        let mut next = created.clone();
        next["metadata"]["managedFields"] = json!([{}]);
        update(Some(&created), &mut next, "editor", T2);
        assert!(next["metadata"].get("managedFields").is_none(), "{next}");
    }

    #[test]
    fn cap_update_managers_merges_oldest() {
        let mut obj = cm(json!({}));
        update(None, &mut obj, "m0", T1);
        for i in 0..12 {
            let mut next = obj.clone();
            next["data"][format!("k{i}")] = json!("v");
            next["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("managedFields");
            update(
                Some(&obj),
                &mut next,
                &format!("m{i:02}"),
                &format!("2024-01-01T00:00:{i:02}Z"),
            );
            obj = next;
        }
        let e = entries(&obj);
        assert_eq!(e.len(), 10);
        assert!(e.iter().any(|x| x["manager"] == "ancient-changes"));
    }

    #[test]
    fn fields_v1_decoding_errors() {
        assert!(FieldSet::from_fields_v1(&json!({"x:y": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:notjson": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "managedFields": [{"manager": "m", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]}});
        let err = apply(Some(&live), cm(json!({})), "m", false).unwrap_err();
        assert_eq!(
            err.to_string(),
            "failed to decode managed fields: operation must be `Apply` or `Update`"
        );
    }

    #[test]
    fn user_agent_prefix() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.32.0 (linux/amd64)"),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent(""), "");
    }

    #[test]
    fn no_panics_on_odd_inputs() {
        let odd = [
            json!(null),
            json!(1),
            json!([]),
            json!({"apiVersion": "v1", "kind": "ConfigMap"}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": 1, "data": [1, [2]]}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"finalizers": [{"a": 1}, [1]], "ownerReferences": [1, {"x": 1}]}}),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"managedFields": [{"operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:finalizers": {"v:1": {}, "i:0": {}}}}}], "finalizers": [1, 1]}}),
        ];
        for live in &odd {
            for applied in &odd {
                let _ = apply(Some(live), applied.clone(), "m", false);
                let _ = apply(Some(live), applied.clone(), "m", true);
                let mut n = applied.clone();
                update(Some(live), &mut n, "u", T1);
                let mut n = live.clone();
                let schema = apply_schema("", "ConfigMap");
                update_managed_fields(
                    UpdateRequest {
                        old: Some(applied),
                        manager: "",
                        subresource: Some("status"),
                        api_version: "v1",
                        now: T1,
                        ignored_fields: &[&["status"]],
                    },
                    &mut n,
                    &schema,
                );
            }
        }
    }
}
