//! Field paths and field sets: structured-merge-diff's path elements, sets of
//! paths and their `fieldsV1` encoding.

#[allow(unused_imports)]
use super::*;

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

pub(super) fn value_rank(v: &Value) -> u8 {
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
pub(super) fn cmp_values(a: &Value, b: &Value) -> Ordering {
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
pub(super) fn value_to_string(v: &Value) -> String {
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
            PathElement::Field(n) => {
                let mut key = String::with_capacity(n.len() + 2);
                key.push_str("f:");
                key.push_str(n);
                key
            }
            PathElement::Key(kv) => {
                let m: Map<String, Value> = kv.iter().cloned().collect();
                format!("k:{}", Value::Object(m))
            }
            PathElement::Value(v) => format!("v:{v}"),
            PathElement::Index(i) => format!("i:{i}"),
        }
    }

    /// Parses a `fieldsV1` key.
    pub fn from_fields_key(s: &str) -> Result<PathElement, FieldsError> {
        let Some((prefix, rest)) = s.split_once(':') else {
            return Err(FieldsError::UnknownElement(s.to_string()));
        };
        match prefix {
            "f" => Ok(PathElement::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest) {
                Ok(Value::Object(m)) => {
                    let mut kv: Vec<(String, Value)> = m.into_iter().collect();
                    kv.sort_by(|a, b| a.0.cmp(&b.0));
                    Ok(PathElement::Key(kv))
                }
                _ => Err(FieldsError::Key(s.to_string())),
            },
            "v" => serde_json::from_str::<Value>(rest)
                .map(PathElement::Value)
                .map_err(|e| FieldsError::Value(s.to_string(), e.to_string())),
            "i" => rest
                .parse::<usize>()
                .map(PathElement::Index)
                .map_err(|e| FieldsError::Index(s.to_string(), e.to_string())),
            _ => Err(FieldsError::UnknownElement(s.to_string())),
        }
    }
}

/// Formats a field path as kube does in conflict messages (`.spec.x[name="a"]`).
pub fn path_to_string(path: &[PathElement]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// One step of a path being walked: a field borrowed from the walked value's keys, or an
/// owned element (list items). Copied into a [`PathElement`] only for a path recorded.
#[derive(Debug)]
pub(super) enum PathRef<'v> {
    /// A field of an object, by the walked key.
    Field(&'v str),
    /// Any other element.
    Element(PathElement),
}

impl PathRef<'_> {
    fn to_element(&self) -> PathElement {
        match self {
            PathRef::Field(name) => PathElement::Field((*name).to_string()),
            PathRef::Element(pe) => pe.clone(),
        }
    }
}

/// A set of field paths (structured-merge-diff `fieldpath.Set`): paths that
/// are members at this level plus child sets.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet {
    pub(super) members: BTreeSet<PathElement>,
    pub(super) children: BTreeMap<PathElement, FieldSet>,
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
                if !self.members.contains(last) {
                    self.members.insert(last.clone());
                }
            }
            [first, rest @ ..] => match self.children.get_mut(first) {
                Some(child) => child.insert(rest),
                None => {
                    let mut child = FieldSet::default();
                    child.insert(rest);
                    self.children.insert(first.clone(), child);
                }
            },
        }
    }

    /// Adds a path being walked ([`PathRef`]s).
    pub(super) fn insert_refs(&mut self, path: &[PathRef<'_>]) {
        let owned: Vec<PathElement> = path.iter().map(PathRef::to_element).collect();
        self.insert(&owned);
    }

    /// Whether the exact path is in the set.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    pub(super) fn cleaned(mut self) -> FieldSet {
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

    /// Removes the paths of `other` in place: what [`FieldSet::difference`] returns,
    /// without copying what stays.
    pub fn subtract(&mut self, other: &FieldSet) {
        if !other.members.is_empty() {
            self.members.retain(|m| !other.members.contains(m));
        }
        for (pe, o) in &other.children {
            if let Some(c) = self.children.get_mut(pe) {
                c.subtract(o);
            }
        }
        self.children.retain(|_, c| !c.is_empty());
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

    pub(super) fn collect_paths(
        &self,
        prefix: &mut Vec<PathElement>,
        out: &mut Vec<Vec<PathElement>>,
    ) {
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

    /// Whether some path of the set is a member of `fields` (`fieldsV1` JSON as
    /// [`FieldSet::from_fields_v1`] reads it), without decoding it. Keys are looked up by
    /// their canonical text, so `fields` must be canonical and free of floats.
    pub(super) fn meets_fields_v1(&self, fields: &Map<String, Value>) -> bool {
        self.members
            .iter()
            .any(|m| fields.get(&m.to_fields_key()).is_some_and(is_member))
            || self.children.iter().any(|(pe, c)| {
                matches!(fields.get(&pe.to_fields_key()), Some(Value::Object(inner)) if c.meets_fields_v1(inner))
            })
    }

    /// Whether every path of the set is a member of `fields`, on the same terms as
    /// [`FieldSet::meets_fields_v1`].
    pub(super) fn within_fields_v1(&self, fields: &Map<String, Value>) -> bool {
        self.members
            .iter()
            .all(|m| fields.get(&m.to_fields_key()).is_some_and(is_member))
            && self
                .children
                .iter()
                .all(|(pe, c)| match fields.get(&pe.to_fields_key()) {
                    Some(Value::Object(inner)) => c.within_fields_v1(inner),
                    _ => c.is_empty(),
                })
    }

    /// Decodes `fieldsV1` JSON.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, FieldsError> {
        let Value::Object(obj) = v else {
            return Err(FieldsError::NotObject);
        };
        let mut set = FieldSet::default();
        for (k, child) in obj {
            if k == "." {
                continue;
            }
            let pe = PathElement::from_fields_key(k)?;
            let Value::Object(inner) = child else {
                return Err(FieldsError::MemberNotObject(k.clone()));
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

    pub(super) fn from_plain_paths(paths: &[&[&str]]) -> FieldSet {
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

/// Whether a `fieldsV1` value marks its key as a member: `{}`, or an object holding `"."`.
fn is_member(v: &Value) -> bool {
    matches!(v, Value::Object(inner) if inner.is_empty() || inner.contains_key("."))
}
