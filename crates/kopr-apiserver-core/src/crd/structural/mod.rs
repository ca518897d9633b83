//! Per-object machinery of a custom resource version's schema, like
//! apiextensions-apiserver's `pkg/apiserver/schema` packages.
//!
//! [`Structural`] is parsed once from a version's `openAPIV3Schema` (a
//! JSONSchemaProps as JSON) and then answers, for each object:
//!
//! - pruning of unknown fields ([`Structural::prune`], `pruning/algorithm.go`),
//! - dropping of non-nullable nulls ([`Structural::drop_nulls`],
//!   `defaulting/prunenulls.go`),
//! - structural defaulting ([`Structural::apply_defaults`],
//!   `defaulting/algorithm.go`; defaults are pruned at parse time like
//!   `PruneDefaults`),
//! - validation ([`Structural::validate`]): kube-openapi's schema validator
//!   with apiextensions' conversion to field errors, then embedded-resource
//!   ObjectMeta/TypeMeta checks (`objectmeta/validation.go`) and list-type
//!   set/map uniqueness (`listtype/validation.go`), in that order,
//! - server-side apply list/map semantics and sub-schema lookup.
//!
//! Parsing is lenient: non-structural or malformed input never panics, it
//! only loses the malformed keywords (CRD validation rejects such schemas
//! elsewhere). Recursion over schemas and objects is depth-limited.

mod formats;
mod ratchet;
pub use ratchet::ratchet;
mod validate;

use crate::patch::schema::ListStrategy;
use regex::Regex;
use serde_json::Value;
use std::collections::BTreeMap;

/// Maximum schema nesting parsed; deeper sub-schemas are treated as empty.
const MAX_SCHEMA_DEPTH: usize = 64;
/// Maximum object nesting visited by prune/default/validate.
pub(crate) const MAX_VALUE_DEPTH: usize = 256;

/// `additionalProperties` of a schema node.
#[derive(Debug, Clone)]
pub(crate) enum Additional {
    /// `additionalProperties: true|false`.
    Bool(bool),
    /// `additionalProperties: {schema}`.
    Schema(Box<Structural>),
}

/// A compiled `pattern`: the source, and the regex or its compile error.
#[derive(Debug, Clone)]
pub(crate) struct Pattern {
    pub(crate) source: String,
    pub(crate) re: Result<Regex, PatternError>,
}

/// A `pattern` the regex engine refuses; the message is the engine's reason alone (the
/// last `error:` line of its report).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{}", reason(.0))]
pub(crate) struct PatternError(regex::Error);

fn reason(e: &regex::Error) -> String {
    let s = e.to_string();
    s.lines()
        .rfind(|l| l.starts_with("error:"))
        .map(|l| l.trim_start_matches("error:").trim().to_string())
        .unwrap_or(s)
}

/// A parsed structural schema (from a JSONSchemaProps value).
///
/// Besides the structural part (properties, items, additionalProperties,
/// extensions, default) it keeps the value validations, including those
/// nested in `allOf`/`anyOf`/`oneOf`/`not`, for [`Structural::validate`].
#[derive(Debug, Clone, Default)]
pub struct Structural {
    /// `type` as kube-openapi sees it (`["integer","string"]` for
    /// x-kubernetes-int-or-string).
    pub(crate) types: Vec<String>,
    /// The declared `type` (empty when absent).
    pub(crate) declared_type: String,
    pub(crate) nullable: bool,
    /// `format` after apiextensions' StripUnsupportedFormatsPostProcess.
    pub(crate) format: String,
    /// The `format` as declared.
    pub(crate) raw_format: String,
    /// The pruned `default`.
    pub(crate) default: Option<Value>,
    pub(crate) properties: BTreeMap<String, Structural>,
    pub(crate) additional: Option<Additional>,
    pub(crate) items: Option<Box<Structural>>,
    pub(crate) pattern_properties: Vec<(String, Option<Regex>, Structural)>,
    pub(crate) preserve_unknown: bool,
    pub(crate) embedded: bool,
    pub(crate) int_or_string: bool,
    pub(crate) list_type: Option<String>,
    pub(crate) list_map_keys: Vec<String>,
    pub(crate) map_type: Option<String>,
    pub(crate) maximum: Option<f64>,
    pub(crate) exclusive_maximum: bool,
    pub(crate) minimum: Option<f64>,
    pub(crate) exclusive_minimum: bool,
    pub(crate) max_length: Option<i64>,
    pub(crate) min_length: Option<i64>,
    pub(crate) pattern: Option<Pattern>,
    pub(crate) max_items: Option<i64>,
    pub(crate) min_items: Option<i64>,
    pub(crate) unique_items: bool,
    pub(crate) multiple_of: Option<f64>,
    pub(crate) enum_values: Option<Vec<Value>>,
    pub(crate) max_properties: Option<i64>,
    pub(crate) min_properties: Option<i64>,
    pub(crate) required: Vec<String>,
    pub(crate) all_of: Vec<Structural>,
    pub(crate) one_of: Vec<Structural>,
    pub(crate) any_of: Vec<Structural>,
    pub(crate) not: Option<Box<Structural>>,
    /// Whether this node or one below it (through properties, additionalProperties and
    /// items) is an x-kubernetes-embedded-resource: the embedded-resource walk of
    /// [`Structural::validate`] stops where this is false.
    pub(crate) walk_embedded: bool,
    /// Whether this node or one below it is a `set` or `map` list: the list-type walk of
    /// [`Structural::validate`] stops where this is false.
    pub(crate) walk_list_types: bool,
}

/// Formats apiextensions 1.32 lets kube-openapi validate on strings
/// (normalized: dashes removed); every other string format is ignored.
const SUPPORTED_STRING_FORMATS: &[&str] = &[
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
];

fn int_of(v: Option<&Value>) -> Option<i64> {
    let v = v?;
    if let Some(i) = v.as_i64() {
        return Some(i);
    }
    if let Some(u) = v.as_u64() {
        return Some(i64::try_from(u).unwrap_or(i64::MAX));
    }
    let f = v.as_f64()?;
    if f.is_finite() && f.fract() == 0.0 {
        // Saturating conversion.
        Some(f as i64)
    } else {
        None
    }
}

fn bool_of(v: Option<&Value>) -> bool {
    v.and_then(Value::as_bool).unwrap_or(false)
}

fn string_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

/// Compiles a Go RE2 pattern with the `regex` crate, translating the
/// Perl classes that are ASCII-only in Go (`\d`, `\s`, `\w` and negations,
/// `\b`) into their ASCII forms.
pub(crate) fn compile_go_regex(pattern: &str) -> Result<Regex, PatternError> {
    let translated = translate_go_regex(pattern);
    regex::RegexBuilder::new(&translated)
        .size_limit(1 << 22)
        .dfa_size_limit(1 << 22)
        .nest_limit(250)
        .build()
        .map_err(PatternError)
}

fn translate_go_regex(p: &str) -> String {
    let mut out = String::with_capacity(p.len() + 8);
    let mut in_class = false;
    let mut chars = p.chars().peekable();
    let mut class_start = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let Some(n) = chars.next() else {
                    out.push('\\');
                    break;
                };
                let rep = if in_class {
                    match n {
                        'd' => Some("0-9"),
                        's' => Some("\\t\\n\\f\\r "),
                        'w' => Some("0-9A-Za-z_"),
                        _ => None,
                    }
                } else {
                    match n {
                        'd' => Some("[0-9]"),
                        'D' => Some("[^0-9]"),
                        's' => Some("[\\t\\n\\f\\r ]"),
                        'S' => Some("[^\\t\\n\\f\\r ]"),
                        'w' => Some("[0-9A-Za-z_]"),
                        'W' => Some("[^0-9A-Za-z_]"),
                        'b' => Some("(?-u:\\b)"),
                        'B' => Some("(?-u:\\B)"),
                        _ => None,
                    }
                };
                match rep {
                    Some(r) => out.push_str(r),
                    None => {
                        out.push('\\');
                        out.push(n);
                    }
                }
                class_start = false;
            }
            '[' if !in_class => {
                in_class = true;
                class_start = true;
                out.push('[');
                if chars.peek() == Some(&'^') {
                    chars.next();
                    out.push('^');
                }
                continue;
            }
            ']' if in_class && !class_start => {
                in_class = false;
                out.push(']');
            }
            '[' if in_class && chars.peek() == Some(&':') => {
                // POSIX class like [:alpha:]; copy through to the closing ":]".
                out.push('[');
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' {
                        break;
                    }
                }
                class_start = false;
            }
            '[' if in_class => {
                // A literal '[' inside a class must be escaped for `regex`.
                out.push_str("\\[");
                class_start = false;
            }
            c => {
                out.push(c);
                class_start = false;
            }
        }
    }
    out
}

impl Structural {
    /// Parses openAPIV3Schema. Non-structural input must not panic (CRD
    /// validation happens elsewhere; here be lenient).
    pub fn from_value(schema: &Value) -> Structural {
        let mut s = Self::parse(schema, 0);
        s.prune_defaults(false);
        s.mark_walks();
        s
    }

    /// Sets [`Structural::walk_embedded`] and [`Structural::walk_list_types`] over the tree
    /// the validation walks follow.
    fn mark_walks(&mut self) {
        let mut embedded = self.embedded;
        let mut list_types = matches!(self.list_type.as_deref(), Some("set" | "map"));
        let mut below = |s: &mut Structural| {
            s.mark_walks();
            embedded |= s.walk_embedded;
            list_types |= s.walk_list_types;
        };
        for p in self.properties.values_mut() {
            below(p);
        }
        if let Some(Additional::Schema(a)) = &mut self.additional {
            below(a);
        }
        if let Some(it) = &mut self.items {
            below(it);
        }
        self.walk_embedded = embedded;
        self.walk_list_types = list_types;
    }

    fn parse(v: &Value, depth: usize) -> Structural {
        let mut s = Structural::default();
        let Some(m) = v.as_object() else {
            return s;
        };
        if depth > MAX_SCHEMA_DEPTH {
            return s;
        }
        let sub = |v: &Value| Self::parse(v, depth + 1);
        let subs = |v: Option<&Value>| -> Vec<Structural> {
            v.and_then(Value::as_array)
                .map(|a| a.iter().map(|x| Self::parse(x, depth + 1)).collect())
                .unwrap_or_default()
        };
        s.declared_type = string_of(m.get("type")).unwrap_or_default();
        if !s.declared_type.is_empty() {
            s.types = vec![s.declared_type.clone()];
        }
        s.int_or_string = bool_of(m.get("x-kubernetes-int-or-string"));
        if s.int_or_string {
            s.types = vec!["integer".to_string(), "string".to_string()];
        }
        s.nullable = bool_of(m.get("nullable"));
        s.raw_format = string_of(m.get("format")).unwrap_or_default();
        s.format = strip_unsupported_format(&s.declared_type, &s.raw_format);
        s.default = m.get("default").cloned();
        if let Some(Value::Object(props)) = m.get("properties") {
            for (k, pv) in props {
                s.properties.insert(k.clone(), sub(pv));
            }
        }
        s.additional = match m.get("additionalProperties") {
            Some(Value::Bool(b)) => Some(Additional::Bool(*b)),
            Some(o @ Value::Object(_)) => Some(Additional::Schema(Box::new(sub(o)))),
            _ => None,
        };
        if let Some(it @ Value::Object(_)) = m.get("items") {
            s.items = Some(Box::new(sub(it)));
        }
        if let Some(Value::Object(pp)) = m.get("patternProperties") {
            for (k, pv) in pp {
                s.pattern_properties
                    .push((k.clone(), compile_go_regex(k).ok(), sub(pv)));
            }
        }
        s.preserve_unknown = bool_of(m.get("x-kubernetes-preserve-unknown-fields"));
        s.embedded = bool_of(m.get("x-kubernetes-embedded-resource"));
        s.list_type = string_of(m.get("x-kubernetes-list-type"));
        s.list_map_keys = m
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        s.map_type = string_of(m.get("x-kubernetes-map-type"));
        s.maximum = m.get("maximum").and_then(Value::as_f64);
        s.exclusive_maximum = bool_of(m.get("exclusiveMaximum"));
        s.minimum = m.get("minimum").and_then(Value::as_f64);
        s.exclusive_minimum = bool_of(m.get("exclusiveMinimum"));
        s.max_length = int_of(m.get("maxLength"));
        s.min_length = int_of(m.get("minLength"));
        s.pattern = string_of(m.get("pattern"))
            .filter(|p| !p.is_empty())
            .map(|p| Pattern {
                re: compile_go_regex(&p),
                source: p,
            });
        s.max_items = int_of(m.get("maxItems"));
        s.min_items = int_of(m.get("minItems"));
        s.unique_items = bool_of(m.get("uniqueItems"));
        s.multiple_of = m.get("multipleOf").and_then(Value::as_f64);
        s.enum_values = m.get("enum").and_then(Value::as_array).cloned();
        s.max_properties = int_of(m.get("maxProperties"));
        s.min_properties = int_of(m.get("minProperties"));
        s.required = m
            .get("required")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        s.all_of = subs(m.get("allOf"));
        s.one_of = subs(m.get("oneOf"));
        s.any_of = subs(m.get("anyOf"));
        if let Some(n @ Value::Object(_)) = m.get("not") {
            s.not = Some(Box::new(sub(n)));
        }
        s
    }

    /// `PruneDefaults`: prunes each default as if it were placed in an
    /// object at its position. `meta_of_embedded` marks a property
    /// apiVersion/kind/metadata of an embedded resource (never pruned).
    fn prune_defaults(&mut self, meta_of_embedded: bool) {
        if !meta_of_embedded && let Some(mut d) = self.default.take() {
            let mut sink = Pruner::disabled();
            sink.prune(&mut d, Some(self), 0);
            self.default = Some(d);
        }
        if let Some(Additional::Schema(a)) = &mut self.additional {
            a.prune_defaults(false);
        }
        if let Some(it) = &mut self.items {
            it.prune_defaults(false);
        }
        let embedded = self.embedded;
        for (k, p) in self.properties.iter_mut() {
            p.prune_defaults(embedded && is_meta_field(k));
        }
    }

    fn additional_schema(&self) -> Option<&Structural> {
        match &self.additional {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema of field `k` of an object: a property, else the
    /// additionalProperties schema.
    fn field_schema(&self, k: &str) -> Option<&Structural> {
        self.properties.get(k).or_else(|| self.additional_schema())
    }

    /// Pruning as apiextensions-apiserver does it: removes fields not in the
    /// schema, unless x-kubernetes-preserve-unknown-fields; keeps
    /// apiVersion/kind/metadata at the root and inside
    /// x-kubernetes-embedded-resource objects. Returns the dropped paths in
    /// kube's format (`spec.foo`, `spec.items[0].bar`), sorted, for
    /// fieldValidation warnings and strict errors.
    pub fn prune(&self, obj: &mut Value) -> Vec<String> {
        let mut p = Pruner {
            record: true,
            root: true,
            parent: String::new(),
            pruned: Vec::new(),
        };
        p.prune(obj, Some(self), 0);
        p.pruned.sort();
        p.pruned
    }

    /// Drops nulls for fields that are neither nullable nor defaulted (as the
    /// apiextensions pipeline does before defaulting).
    pub fn drop_nulls(&self, obj: &mut Value) {
        drop_nulls(obj, Some(self), 0);
    }

    /// Applies `default`s (structural defaulting: on missing fields and on
    /// non-nullable nulls; recursing, also inside arrays and
    /// additionalProperties). Defaults were pruned when parsing.
    pub fn apply_defaults(&self, obj: &mut Value) {
        apply_defaults(obj, self, 0);
    }

    /// Validation with kube-openapi semantics and messages as converted by
    /// apiextensions-apiserver, followed by embedded-resource and list-type
    /// checks. Root ObjectMeta is not validated here.
    pub fn validate(&self, obj: &Value) -> Vec<crate::validation::FieldError> {
        let mut errs = validate::openapi_errors(self, obj);
        errs.extend(validate::embedded_errors(self, obj));
        errs.extend(validate::list_type_errors(self, obj));
        errs
    }

    /// Steps into field `seg`; list paths carry no indices, so an array
    /// node is first stepped through to its items.
    fn step(&self, seg: &str) -> Option<&Structural> {
        let mut cur = self;
        for _ in 0..MAX_SCHEMA_DEPTH {
            if let Some(p) = cur.properties.get(seg) {
                return Some(p);
            }
            if let Some(a) = cur.additional_schema() {
                return Some(a);
            }
            match &cur.items {
                Some(it) => cur = it,
                None => return None,
            }
        }
        None
    }

    /// The sub-schema at a path (field names, list items implied), if any.
    pub fn at(&self, path: &[&str]) -> Option<&Structural> {
        let mut cur = self;
        for seg in path {
            cur = cur.step(seg)?;
        }
        Some(cur)
    }

    /// The SSA list strategy of the list at `path`
    /// (x-kubernetes-list-type atomic/set/map + list-map-keys; default atomic).
    pub fn list_strategy(&self, path: &[&str]) -> ListStrategy {
        match self.at(path) {
            Some(s) => ListStrategy::from_openapi(s.list_type.as_deref(), &s.list_map_keys),
            None => ListStrategy::Atomic,
        }
    }

    /// Whether the object at `path` (for list items: the list's path) is
    /// atomic for SSA (`x-kubernetes-map-type: atomic`).
    pub fn map_is_atomic(&self, path: &[&str]) -> bool {
        let Some(mut s) = self.at(path) else {
            return false;
        };
        for _ in 0..MAX_SCHEMA_DEPTH {
            if s.map_type.as_deref() == Some("atomic") {
                return true;
            }
            match &s.items {
                Some(it) => s = it,
                None => return false,
            }
        }
        false
    }

    /// The declared `type` (`""` when absent).
    pub fn type_name(&self) -> &str {
        &self.declared_type
    }

    /// The declared `format` (`""` when absent).
    pub fn format_name(&self) -> &str {
        &self.raw_format
    }

    /// The (pruned) `default`, if any.
    pub fn default_value(&self) -> Option<&Value> {
        self.default.as_ref()
    }

    /// Whether x-kubernetes-int-or-string is set.
    pub fn is_int_or_string(&self) -> bool {
        self.int_or_string
    }

    /// Whether x-kubernetes-preserve-unknown-fields is set.
    pub fn preserves_unknown_fields(&self) -> bool {
        self.preserve_unknown
    }

    /// Whether x-kubernetes-embedded-resource is set.
    pub fn is_embedded_resource(&self) -> bool {
        self.embedded
    }

    /// Whether `nullable` is set.
    pub fn is_nullable(&self) -> bool {
        self.nullable
    }
}

/// StripUnsupportedFormatsPostProcess at 1.32.
fn strip_unsupported_format(ty: &str, format: &str) -> String {
    if format.is_empty() {
        return String::new();
    }
    let keep = match ty {
        "" | "string" => SUPPORTED_STRING_FORMATS.contains(&format.replace('-', "").as_str()),
        "integer" => format == "int32" || format == "int64",
        "number" => format == "float" || format == "double",
        _ => false,
    };
    if keep {
        format.to_string()
    } else {
        String::new()
    }
}

fn is_meta_field(k: &str) -> bool {
    matches!(k, "apiVersion" | "kind" | "metadata")
}

/// The pruning walk (`pruning.prune` / `skipPrune`) with path recording.
struct Pruner {
    record: bool,
    /// Whether the top-level value is a resource root (treated as an
    /// embedded resource: its apiVersion/kind/metadata are kept).
    root: bool,
    parent: String,
    pruned: Vec<String>,
}

impl Pruner {
    fn disabled() -> Pruner {
        Pruner {
            record: false,
            root: false,
            parent: String::new(),
            pruned: Vec::new(),
        }
    }

    fn embedded(&self, s: &Structural, depth: usize) -> bool {
        s.embedded || (self.root && depth == 0)
    }

    fn record_key(&mut self, k: &str) {
        if !self.record {
            return;
        }
        if self.parent.is_empty() {
            self.pruned.push(k.to_string());
        } else {
            self.pruned.push(format!("{}.{k}", self.parent));
        }
    }

    fn push_key(&mut self, k: &str) -> usize {
        let l = self.parent.len();
        if self.record {
            if !self.parent.is_empty() {
                self.parent.push('.');
            }
            self.parent.push_str(k);
        }
        l
    }

    fn push_index(&mut self, i: usize) -> usize {
        let l = self.parent.len();
        if self.record {
            use std::fmt::Write as _;
            let _ = write!(self.parent, "[{i}]");
        }
        l
    }

    fn prune(&mut self, x: &mut Value, s: Option<&Structural>, depth: usize) {
        if depth > MAX_VALUE_DEPTH {
            return;
        }
        if let Some(s) = s
            && s.preserve_unknown
        {
            self.skip_prune(x, s, depth);
            return;
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    for k in m.keys() {
                        self.record_key(k);
                    }
                    m.clear();
                    return;
                };
                let embedded = self.embedded(s, depth);
                let mut dropped = Vec::new();
                for (k, v) in m.iter_mut() {
                    if embedded && is_meta_field(k) {
                        continue;
                    }
                    let sub = match (s.properties.get(k), &s.additional) {
                        (Some(p), _) => Some(Some(p)),
                        (None, Some(Additional::Schema(a))) => Some(Some(a.as_ref())),
                        (None, Some(Additional::Bool(_))) => Some(None),
                        (None, None) => None,
                    };
                    match sub {
                        Some(sub) => {
                            let l = self.push_key(k);
                            self.prune(v, sub, depth + 1);
                            self.parent.truncate(l);
                        }
                        None => {
                            if !is_meta_field(k) || !self.parent.is_empty() {
                                self.record_key(k);
                            }
                            dropped.push(k.clone());
                        }
                    }
                }
                for k in dropped {
                    m.remove(&k);
                }
            }
            Value::Array(a) => {
                let items = s.and_then(|s| s.items.as_deref());
                for (i, v) in a.iter_mut().enumerate() {
                    let l = self.push_index(i);
                    self.prune(v, items, depth + 1);
                    self.parent.truncate(l);
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: &Structural, depth: usize) {
        let embedded = self.embedded(s, depth);
        match x {
            Value::Object(m) => {
                for (k, v) in m.iter_mut() {
                    if embedded && is_meta_field(k) {
                        continue;
                    }
                    let sub = if let Some(p) = s.properties.get(k) {
                        Some(Some(p))
                    } else {
                        match &s.additional {
                            Some(Additional::Schema(a)) => Some(Some(a.as_ref())),
                            Some(Additional::Bool(_)) => Some(None),
                            None => None,
                        }
                    };
                    if let Some(sub) = sub {
                        let l = self.push_key(k);
                        self.prune(v, sub, depth + 1);
                        self.parent.truncate(l);
                    }
                }
            }
            Value::Array(a) => {
                let items = s.items.as_deref();
                for (i, v) in a.iter_mut().enumerate() {
                    let l = self.push_index(i);
                    self.prune(v, items, depth + 1);
                    self.parent.truncate(l);
                }
            }
            _ => {}
        }
    }
}

fn drop_nulls(x: &mut Value, s: Option<&Structural>, depth: usize) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    // Only a schema drops a null: below a value without one there is nothing to do.
    let Some(s) = s else {
        return;
    };
    match x {
        Value::Object(m) => m.retain(|k, v| {
            let schema = s.field_schema(k);
            if v.is_null() {
                return !schema.is_some_and(|sc| !sc.nullable && sc.default.is_none());
            }
            if v.is_object() || v.is_array() {
                drop_nulls(v, schema, depth + 1);
            }
            true
        }),
        Value::Array(a) => {
            let items = s.items.as_deref();
            for v in a.iter_mut() {
                drop_nulls(v, items, depth + 1);
            }
        }
        _ => {}
    }
}

fn is_non_nullable_null(x: &Value, s: Option<&Structural>) -> bool {
    x.is_null() && s.is_some_and(|s| !s.nullable)
}

fn apply_defaults(x: &mut Value, s: &Structural, depth: usize) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            for (k, prop) in &s.properties {
                let Some(d) = &prop.default else {
                    continue;
                };
                let set = match m.get(k) {
                    None => true,
                    Some(v) => is_non_nullable_null(v, Some(prop)),
                };
                if set {
                    m.insert(k.clone(), d.clone());
                }
            }
            let additional = s.additional_schema();
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.properties.get(k) {
                    apply_defaults(v, p, depth + 1);
                } else if let Some(a) = additional {
                    if is_non_nullable_null(v, Some(a)) {
                        *v = a.default.clone().unwrap_or(Value::Null);
                    }
                    apply_defaults(v, a, depth + 1);
                }
            }
        }
        Value::Array(arr) => {
            let Some(items) = s.items.as_deref() else {
                return;
            };
            for v in arr.iter_mut() {
                if is_non_nullable_null(v, Some(items)) {
                    *v = items.default.clone().unwrap_or(Value::Null);
                }
                apply_defaults(v, items, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
