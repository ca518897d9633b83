//! Schema-aware walks over values: the field set of an object, comparisons,
//! merging an applied configuration, removing paths.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Schema-aware walks over values
// ---------------------------------------------------------------------------

/// A walk's schema and its schema path, whose segments borrow the walked value's keys.
pub(super) struct Walker<'s, 'v> {
    pub(super) schema: &'s dyn MergeSchema,
    pub(super) spath: Vec<&'v str>,
    /// Compares as if neither side had `metadata.managedFields` (which ownership never
    /// covers), so an object need not be copied to take them out first.
    pub(super) skip_managed_fields: bool,
}

impl<'v> Walker<'_, 'v> {
    pub(super) fn sp(&self) -> &[&'v str] {
        &self.spath
    }

    pub(super) fn strategy(&self) -> ListStrategy {
        self.schema.list_strategy(self.sp())
    }

    pub(super) fn map_atomic(&self) -> bool {
        self.schema.map_is_atomic(self.sp())
    }

    pub(super) fn path_str(&self) -> String {
        self.spath.iter().map(|s| format!(".{s}")).collect()
    }

    /// Whether a value is a leaf of the field tree at the current path.
    pub(super) fn is_leaf(&self, v: &Value) -> bool {
        match v {
            Value::Object(m) => m.is_empty() || self.map_atomic(),
            Value::Array(a) => a.is_empty() || self.strategy() == ListStrategy::Atomic,
            _ => true,
        }
    }

    /// Path element of a list item at the current (list) path.
    pub(super) fn item_pe(
        &self,
        strategy: &ListStrategy,
        index: usize,
        item: &Value,
    ) -> Result<PathElement, WalkError> {
        match strategy {
            ListStrategy::Atomic => Ok(PathElement::Index(index)),
            ListStrategy::Set => match item {
                Value::Array(_) | Value::Object(_) => Err(WalkError::NotScalar {
                    path: self.path_str(),
                    index,
                }),
                v => Ok(PathElement::Value(v.clone())),
            },
            ListStrategy::Map { keys } => {
                let Value::Object(m) = item else {
                    return Err(WalkError::NotMap {
                        path: self.path_str(),
                        index,
                    });
                };
                let mut kv = Vec::with_capacity(keys.len());
                for key in keys {
                    match m.get(key) {
                        Some(v) => kv.push((key.clone(), v.clone())),
                        None => match self.schema.key_default(self.sp(), key) {
                            Some(d) => kv.push((key.clone(), d)),
                            None => {
                                return Err(WalkError::MissingKey {
                                    path: self.path_str(),
                                    index,
                                    key: go_quote(key),
                                });
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
    pub(super) fn items<'l>(
        &self,
        strategy: &ListStrategy,
        list: &'l [Value],
        strict: bool,
    ) -> Result<Vec<(PathElement, &'l Value)>, WalkError> {
        let mut out = Vec::with_capacity(list.len());
        let mut seen = BTreeSet::new();
        for (i, item) in list.iter().enumerate() {
            let pe = self.item_pe(strategy, i, item)?;
            if strict && !seen.insert(pe.clone()) {
                return Err(WalkError::Duplicate {
                    path: self.path_str(),
                    key: pe.to_string(),
                });
            }
            out.push((pe, item));
        }
        Ok(out)
    }

    /// Collects the field set of `v` (the paths a configuration specifies).
    pub(super) fn field_set(
        &mut self,
        v: &'v Value,
        prefix: &mut Vec<PathElement>,
        set: &mut FieldSet,
        strict: bool,
    ) -> Result<(), WalkError> {
        match v {
            Value::Object(m) if !self.is_leaf(v) => {
                for (k, child) in m {
                    prefix.push(PathElement::Field(k.clone()));
                    self.spath.push(k);
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
    pub(super) fn merge(
        &mut self,
        live: Option<&Value>,
        config: &'v Value,
    ) -> Result<Value, WalkError> {
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
                    self.spath.push(k);
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
    pub(super) fn merge_lists(
        &mut self,
        strategy: &ListStrategy,
        la: &[Value],
        ca: &'v [Value],
    ) -> Result<Vec<Value>, WalkError> {
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

    pub(super) fn merge_item(
        &mut self,
        live: Option<&Value>,
        config: &'v Value,
    ) -> Result<Value, WalkError> {
        match config {
            Value::Object(_) => self.merge(live, config),
            _ => Ok(config.clone()),
        }
    }

    /// Compares two values, recording added/modified/removed paths. The path so far borrows
    /// the walked keys, and is copied only for the paths recorded.
    pub(super) fn compare(
        &mut self,
        l: Option<&'v Value>,
        r: Option<&'v Value>,
        prefix: &mut Vec<PathRef<'v>>,
        cmp: &mut Comparison,
    ) -> Result<(), WalkError> {
        match (l, r) {
            (None, None) => Ok(()),
            (None, Some(rv)) => {
                cmp.added.insert_refs(prefix);
                self.compare_children(None, Some(rv), prefix, cmp)
            }
            (Some(lv), None) => {
                cmp.removed.insert_refs(prefix);
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
                        cmp.modified.insert_refs(prefix);
                    }
                    Ok(())
                }
            }
        }
    }

    pub(super) fn compare_children(
        &mut self,
        l: Option<&'v Value>,
        r: Option<&'v Value>,
        prefix: &mut Vec<PathRef<'v>>,
        cmp: &mut Comparison,
    ) -> Result<(), WalkError> {
        let shape = r.filter(|v| !v.is_null()).or(l);
        match shape {
            Some(Value::Object(_)) if !self.map_atomic() => {
                let lm = l.and_then(Value::as_object);
                let rm = r.and_then(Value::as_object);
                // Both maps iterate in key order: the union of their keys, merged in order.
                let mut left = lm.into_iter().flat_map(|m| m.keys()).peekable();
                let mut right = rm.into_iter().flat_map(|m| m.keys()).peekable();
                loop {
                    let order = match (left.peek(), right.peek()) {
                        (None, None) => break,
                        (Some(a), Some(b)) => a.cmp(b),
                        (Some(_), None) => Ordering::Less,
                        (None, Some(_)) => Ordering::Greater,
                    };
                    if order == Ordering::Equal {
                        right.next();
                    }
                    let next = if order == Ordering::Greater {
                        right.next()
                    } else {
                        left.next()
                    };
                    let Some(k): Option<&'v String> = next else {
                        break;
                    };
                    if self.skip_managed_fields
                        && k == "managedFields"
                        && self.spath == ["metadata"]
                    {
                        continue;
                    }
                    prefix.push(PathRef::Field(k));
                    self.spath.push(k);
                    let res = self.compare(
                        lm.and_then(|m| m.get(k)),
                        rm.and_then(|m| m.get(k)),
                        prefix,
                        cmp,
                    );
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
                let la: &'v [Value] = l.and_then(Value::as_array).map_or(&[], Vec::as_slice);
                let ra: &'v [Value] = r.and_then(Value::as_array).map_or(&[], Vec::as_slice);
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
                    prefix.push(PathRef::Element(pe));
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
    pub(super) fn remove(&mut self, v: &'v Value, set: &FieldSet) -> Value {
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
                            self.spath.push(k);
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

pub(super) fn became_empty(before: &Value, after: &Value) -> bool {
    match (before, after) {
        (Value::Object(b), Value::Object(a)) => !b.is_empty() && a.is_empty(),
        (Value::Array(b), Value::Array(a)) => !b.is_empty() && a.is_empty(),
        _ => false,
    }
}

#[derive(Debug, Default)]
pub(super) struct Comparison {
    pub(super) added: FieldSet,
    pub(super) modified: FieldSet,
    pub(super) removed: FieldSet,
}

impl Comparison {
    pub(super) fn filter(self, ignored: &FieldSet) -> Comparison {
        Comparison {
            added: self.added.recursive_difference(ignored),
            modified: self.modified.recursive_difference(ignored),
            removed: self.removed.recursive_difference(ignored),
        }
    }
}

pub(super) fn field_set_of(
    schema: &dyn MergeSchema,
    v: &Value,
    strict: bool,
) -> Result<FieldSet, WalkError> {
    let mut w = Walker {
        schema,
        spath: Vec::new(),
        skip_managed_fields: false,
    };
    let mut set = FieldSet::default();
    w.field_set(v, &mut Vec::new(), &mut set, strict)?;
    Ok(set)
}

pub(super) fn compare_objects(
    schema: &dyn MergeSchema,
    l: &Value,
    r: &Value,
) -> Result<Comparison, WalkError> {
    compare_objects_without_managed_fields(schema, l, r, false)
}

/// [`compare_objects`], leaving out `metadata.managedFields` on both sides when `skip`.
pub(super) fn compare_objects_without_managed_fields(
    schema: &dyn MergeSchema,
    l: &Value,
    r: &Value,
    skip: bool,
) -> Result<Comparison, WalkError> {
    let mut w = Walker {
        schema,
        spath: Vec::new(),
        skip_managed_fields: skip,
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
) -> Result<Vec<String>, WalkError> {
    let set = field_set_of(schema, last_applied, false)?;
    let cmp = compare_objects(schema, last_applied, live)?;
    let kept = set
        .difference(&cmp.modified)
        .difference(&cmp.added)
        .difference(&cmp.removed);
    Ok(kept.paths().iter().map(|p| path_to_string(p)).collect())
}

pub(super) fn remove_paths(schema: &dyn MergeSchema, v: &Value, set: &FieldSet) -> Value {
    if set.is_empty() {
        return v.clone();
    }
    let mut w = Walker {
        schema,
        spath: Vec::new(),
        skip_managed_fields: false,
    };
    w.remove(v, set)
}

/// The `fieldsV1` of a creation's `Update` entry, built straight from the new object: what
/// comparing it with the empty typed object (top-level `metadata`, `spec` and `status`
/// present) records as added or modified, less `ignored` (and everything below its
/// members) and the never-owned [`strip_set`], encoded as [`FieldSet::to_fields_v1`] would
/// encode that set. An object the comparison refuses (a list item without its key) is an
/// error, as the comparison's.
pub(super) fn created_fields_v1(
    schema: &dyn MergeSchema,
    new: &Value,
    ignored: &FieldSet,
) -> Result<Map<String, Value>, WalkError> {
    let mut w = Walker {
        schema,
        spath: Vec::new(),
        skip_managed_fields: false,
    };
    let Value::Object(root) = new else {
        return Ok(Map::new());
    };
    let strip = Some(strip_set());
    let ignored = Some(ignored);
    let mut out = Map::new();
    for (k, child) in root {
        let pe = PathElement::Field(k.clone());
        let (strip_below, ignored_below) = (below(strip, &pe), below(ignored, &pe));
        w.spath.push(k);
        if ignored.is_some_and(|i| i.members.contains(&pe)) {
            // Left out, yet walked: the comparison refuses what it cannot walk there too.
            let walked = w.added_entry(child, false, None, None);
            w.spath.pop();
            walked?;
            continue;
        }
        let typed_top = matches!(k.as_str(), "metadata" | "spec" | "status") && child.is_object();
        let entry = if typed_top {
            // Present in the empty typed object: itself recorded only when it differs as a
            // whole (an atomic map with content); otherwise its fields, as added.
            if w.map_atomic() || w.is_leaf(child) {
                let member = child.as_object().is_some_and(|m| !m.is_empty())
                    && !strip.is_some_and(|s| s.members.contains(&pe));
                member.then(|| Value::Object(Map::new()))
            } else {
                let mut inner = Map::new();
                w.added_children(child, strip_below, ignored_below, &mut inner)?;
                (!inner.is_empty()).then_some(Value::Object(inner))
            }
        } else {
            let member = !strip.is_some_and(|s| s.members.contains(&pe));
            w.added_entry(child, member, strip_below, ignored_below)?
        };
        w.spath.pop();
        if let Some(entry) = entry {
            out.insert(pe.to_fields_key(), entry);
        }
    }
    Ok(out)
}

/// The child set of `set` under `pe`, if any.
fn below<'s>(set: Option<&'s FieldSet>, pe: &PathElement) -> Option<&'s FieldSet> {
    set.and_then(|s| s.children.get(pe))
}

impl<'v> Walker<'_, 'v> {
    /// The `fieldsV1` entry of an added value (at the current schema path): `{}` for a member
    /// without children, its children (with `"."` when it is a member itself) otherwise, or
    /// nothing when neither is left.
    fn added_entry(
        &mut self,
        v: &'v Value,
        member: bool,
        strip: Option<&FieldSet>,
        ignored: Option<&FieldSet>,
    ) -> Result<Option<Value>, WalkError> {
        let mut inner = Map::new();
        self.added_children(v, strip, ignored, &mut inner)?;
        if inner.is_empty() {
            return Ok(member.then(|| Value::Object(Map::new())));
        }
        if member {
            inner.insert(".".to_string(), Value::Object(Map::new()));
        }
        Ok(Some(Value::Object(inner)))
    }

    /// The entries of an added value's children, as [`Walker::compare_children`] records them
    /// with nothing on the left.
    fn added_children(
        &mut self,
        v: &'v Value,
        strip: Option<&FieldSet>,
        ignored: Option<&FieldSet>,
        out: &mut Map<String, Value>,
    ) -> Result<(), WalkError> {
        match v {
            Value::Object(m) if !self.map_atomic() => {
                for (k, child) in m {
                    if strip.is_none() && ignored.is_none() {
                        // Nothing left out below here: no path element to look up.
                        self.spath.push(k);
                        let entry = self.added_entry(child, true, None, None);
                        self.spath.pop();
                        if let Some(entry) = entry? {
                            let mut key = String::with_capacity(k.len() + 2);
                            key.push_str("f:");
                            key.push_str(k);
                            out.insert(key, entry);
                        }
                        continue;
                    }
                    let pe = PathElement::Field(k.clone());
                    let left_out = ignored.is_some_and(|i| i.members.contains(&pe));
                    let member = !strip.is_some_and(|s| s.members.contains(&pe));
                    self.spath.push(k);
                    let entry =
                        self.added_entry(child, member, below(strip, &pe), below(ignored, &pe));
                    self.spath.pop();
                    if let Some(entry) = entry?
                        && !left_out
                    {
                        out.insert(pe.to_fields_key(), entry);
                    }
                }
                Ok(())
            }
            Value::Array(items) => {
                let strategy = self.strategy();
                if strategy == ListStrategy::Atomic {
                    return Ok(());
                }
                // The first of equal items stands for them, as in the comparison.
                let mut seen: BTreeSet<PathElement> = BTreeSet::new();
                for (pe, item) in self.items(&strategy, items, false)? {
                    if !seen.insert(pe.clone()) {
                        continue;
                    }
                    let left_out = ignored.is_some_and(|i| i.members.contains(&pe));
                    let member = !strip.is_some_and(|s| s.members.contains(&pe));
                    if let Some(entry) =
                        self.added_entry(item, member, below(strip, &pe), below(ignored, &pe))?
                        && !left_out
                    {
                        out.insert(pe.to_fields_key(), entry);
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
