//! Field-error model and entry point for built-in object validation.
//!
//! [`FieldError`] mirrors `field.Error` from k8s.io/apimachinery, including
//! how its message is rendered; [`invalid_message`] builds the message of a
//! 422 `Invalid` status; [`validate`] dispatches to the per-kind validators in
//! [`kinds`], which use [`metadata`] for ObjectMeta and [`names`] for formats.

/// Per-kind validators.
pub mod kinds;
/// ObjectMeta validation.
pub mod metadata;
/// Name and key formats.
pub mod names;
pub mod webhook;

use serde_json::{Map, Value};
use std::fmt;

use crate::gofmt::float as go_float;
pub use crate::gofmt::quote as go_quote;

/// Key of the single-entry JSON object used by [`go_repr`] to carry a
/// pre-rendered Go `%#v` representation of a bad value.
pub const GO_REPR_KEY: &str = "$goRepr";

/// The type of a field error, like `field.ErrorType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldErrorKind {
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `FieldValueTypeInvalid`: the JSON value has the wrong type for the field.
    TypeInvalid,
    /// `FieldValueNotFound`.
    NotFound,
    /// `InternalError`.
    Internal,
}

impl FieldErrorKind {
    /// The machine-readable cause type used in `Status.details.causes[].reason`.
    pub fn cause_type(&self) -> &'static str {
        match self {
            Self::Required => "FieldValueRequired",
            Self::Invalid => "FieldValueInvalid",
            Self::Duplicate => "FieldValueDuplicate",
            Self::NotSupported => "FieldValueNotSupported",
            Self::Forbidden => "FieldValueForbidden",
            Self::TooLong => "FieldValueTooLong",
            Self::TooMany => "FieldValueTooMany",
            Self::TypeInvalid => "FieldValueTypeInvalid",
            Self::NotFound => "FieldValueNotFound",
            Self::Internal => "InternalError",
        }
    }

    /// The human-readable prefix of the error body (`"Required value"`, ...).
    pub fn label(&self) -> &'static str {
        match self {
            Self::Required => "Required value",
            Self::Invalid | Self::TypeInvalid => "Invalid value",
            Self::Duplicate => "Duplicate value",
            Self::NotSupported => "Unsupported value",
            Self::Forbidden => "Forbidden",
            Self::TooLong => "Too long",
            Self::TooMany => "Too many",
            Self::NotFound => "Not found",
            Self::Internal => "Internal error",
        }
    }
}

/// One field error, like k8s.io/apimachinery/pkg/util/validation/field.Error.
///
/// `bad_value: None` means the value is omitted from the message. A value
/// built with [`go_repr`] is printed verbatim (used where kube prints a Go
/// struct with `%#v`).
#[derive(Debug, Clone, PartialEq)]
pub struct FieldError {
    /// Error type.
    pub kind: FieldErrorKind,
    /// Field path, e.g. `spec.containers[0].name`.
    pub field: String,
    /// The offending value, if it is shown.
    pub bad_value: Option<Value>,
    /// Extra detail appended after the value.
    pub detail: String,
}

impl FieldError {
    /// Builds an error of any kind.
    pub fn new(
        kind: FieldErrorKind,
        field: impl Into<String>,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self {
            kind,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `field.Required`.
    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorKind::Required,
            field,
            Some(Value::String(String::new())),
            detail,
        )
    }

    /// `field.Invalid`.
    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorKind::Invalid, field, Some(value.into()), detail)
    }

    /// `field.Forbidden`.
    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(
            FieldErrorKind::Forbidden,
            field,
            Some(Value::String(String::new())),
            detail,
        )
    }

    /// `field.Duplicate`.
    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorKind::Duplicate, field, Some(value.into()), "")
    }

    /// `field.NotFound`.
    pub fn not_found(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorKind::NotFound, field, Some(value.into()), "")
    }

    /// `field.NotSupported` with the list of supported values.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        valid: &[&str],
    ) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| go_quote(v)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorKind::NotSupported,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// `field.TooLong` (value not shown).
    pub fn too_long(field: impl Into<String>, max_len: usize) -> Self {
        Self::new(
            FieldErrorKind::TooLong,
            field,
            Some(Value::String(String::new())),
            format!("must have at most {max_len} bytes"),
        )
    }

    /// `field.TooMany`.
    pub fn too_many(field: impl Into<String>, actual: Option<i64>, max: i64) -> Self {
        let detail = if max >= 0 {
            format!("must have at most {max} items")
        } else {
            "has too many items".to_string()
        };
        Self::new(
            FieldErrorKind::TooMany,
            field,
            actual.map(Value::from),
            detail,
        )
    }

    /// `field.InternalError`.
    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorKind::Internal, field, Some(Value::Null), detail)
    }

    /// A wrong-JSON-type error; kube's decoder rejects these with a 400.
    pub fn type_invalid(field: impl Into<String>, value: Value, expected: &str) -> Self {
        Self::new(
            FieldErrorKind::TypeInvalid,
            field,
            Some(value),
            format!("must be of type {expected}"),
        )
    }

    /// The message without the field name, like `ErrorBody()`; this is the
    /// `message` of a status cause.
    pub fn body(&self) -> String {
        let mut s = match self.kind {
            FieldErrorKind::Required
            | FieldErrorKind::Forbidden
            | FieldErrorKind::TooLong
            | FieldErrorKind::Internal => self.kind.label().to_string(),
            _ => match &self.bad_value {
                None => self.kind.label().to_string(),
                Some(v) => format!("{}: {}", self.kind.label(), render_value(v)),
            },
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// Wraps a pre-rendered Go `%#v` representation so it prints verbatim.
pub fn go_repr(repr: impl Into<String>) -> Value {
    let mut m = Map::new();
    m.insert(GO_REPR_KEY.to_string(), Value::String(repr.into()));
    Value::Object(m)
}

/// Renders a bad value the way `field.Error` prints it.
fn render_value(v: &Value) -> String {
    match v {
        Value::Null => go_quote("null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                u.to_string()
            } else {
                go_float(n.as_f64().unwrap_or(0.0))
            }
        }
        Value::String(s) => go_quote(s),
        Value::Object(m) => {
            if m.len() == 1
                && let Some(Value::String(r)) = m.get(GO_REPR_KEY)
            {
                return r.clone();
            }
            if m.values().all(Value::is_string) {
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v.as_str().unwrap_or(""))))
                    .collect();
                return format!("map[string]string{{{}}}", parts.join(", "));
            }
            v.to_string()
        }
        Value::Array(a) => {
            if a.iter().all(Value::is_string) {
                let parts: Vec<String> = a
                    .iter()
                    .map(|s| go_quote(s.as_str().unwrap_or("")))
                    .collect();
                return format!("[]string{{{}}}", parts.join(", "));
            }
            v.to_string()
        }
    }
}

/// `GroupKind.String()`: `Kind` for the core group, else `Kind.group`.
pub fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    }
}

/// The message of a 422 Invalid Status, like `apierrors.NewInvalid`:
/// `<kind> "<name>" is invalid: <error>` or `...: [e1, e2]`. `kind` is the
/// qualified kind (see [`qualified_kind`], e.g. `Deployment.apps`).
/// Duplicate messages are dropped, as `ErrorList.ToAggregate` does.
pub fn invalid_message(kind: &str, name: &str, errors: &[FieldError]) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errors {
        let m = e.to_string();
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    let head = format!("{kind} {} is invalid", go_quote(name));
    match seen.len() {
        0 => head,
        1 => format!("{head}: {}", seen[0]),
        _ => format!("{head}: [{}]", seen.join(", ")),
    }
}

/// Validates an object of a built-in kind on create (`old = None`) or update
/// (`old = Some`) with the kind's `validator` (from its definition in
/// `crate::kinds`) and kube's ObjectMeta rules for its scope. A kind without
/// a validator yields no errors. On update the caller should have
/// filled `metadata.resourceVersion` (kube requires it) and applied defaults.
pub fn validate(
    validator: Option<kinds::ValidateFn>,
    namespaced: bool,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let mut ck = Checker::default();
    let Some(root) = obj.as_object() else {
        ck.push(FieldError::type_invalid("", obj.clone(), "object"));
        return ck.errs;
    };
    let old_root = old.and_then(Value::as_object);
    let Some(validate) = validator else {
        return ck.errs;
    };
    match old_root {
        Some(o) => {
            // rest.BeforeUpdate: common ObjectMeta checks first.
            metadata::validate_object_meta(
                &mut ck,
                root,
                namespaced,
                names::is_valid_path_segment_name,
                false,
            );
            metadata::validate_object_meta_update(&mut ck, root, o);
            validate(&mut ck, root, Some(o));
        }
        None => {
            validate(&mut ck, root, None);
            if ck.errs.is_empty() {
                metadata::validate_object_meta(
                    &mut ck,
                    root,
                    namespaced,
                    names::is_valid_path_segment_name,
                    false,
                );
            }
        }
    }
    ck.errs
}

/// Validates as [`validate`] does, for the built-in kind `group`/`resource`
/// (the unit tests' entry).
#[cfg(test)]
pub(crate) fn validate_kind(
    group: &str,
    resource: &str,
    obj: &Value,
    old: Option<&Value>,
) -> Vec<FieldError> {
    let def = crate::kinds::all()
        .into_iter()
        .find(|k| k.group == group && k.plural == resource);
    let namespaced = def.is_some_and(|d| d.scope == crate::resources::kind::Scope::Namespaced);
    validate(def.and_then(|d| d.validate), namespaced, obj, old)
}

/// Appends a child name to a field path.
pub fn child(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Appends an index subscript to a field path.
pub fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

/// Appends a map-key subscript to a field path.
pub fn key(path: &str, k: &str) -> String {
    format!("{path}[{k}]")
}

/// JSON object type alias.
pub type Obj = Map<String, Value>;

/// Collects errors and offers type-checked field accessors: a present field
/// of the wrong JSON type yields a `TypeInvalid` error and reads as absent;
/// `null` reads as absent.
#[derive(Default)]
pub struct Checker {
    /// Errors collected so far, in order.
    pub errs: Vec<FieldError>,
}

impl Checker {
    /// Records an error.
    pub fn push(&mut self, e: FieldError) {
        self.errs.push(e);
    }

    /// Records one `Invalid` error per message for a string value.
    pub fn extend(&mut self, field: &str, value: &str, msgs: Vec<String>) {
        for m in msgs {
            self.push(FieldError::invalid(field, value, m));
        }
    }

    /// [`Checker::extend`] for the map key `k` under `path`, naming the field (`path[k]`)
    /// only when there is an error to report.
    pub fn extend_key(&mut self, path: &str, k: &str, msgs: Vec<String>) {
        if !msgs.is_empty() {
            self.extend(&key(path, k), k, msgs);
        }
    }

    fn present<'a>(m: &'a Obj, k: &str) -> Option<&'a Value> {
        match m.get(k) {
            None | Some(Value::Null) => None,
            Some(v) => Some(v),
        }
    }

    /// An object field.
    pub fn obj<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> Option<&'a Obj> {
        let v = Self::present(m, k)?;
        match v.as_object() {
            Some(o) => Some(o),
            None => {
                self.push(FieldError::type_invalid(
                    child(path, k),
                    v.clone(),
                    "object",
                ));
                None
            }
        }
    }

    /// An array field.
    pub fn arr<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> Option<&'a Vec<Value>> {
        let v = Self::present(m, k)?;
        match v.as_array() {
            Some(a) => Some(a),
            None => {
                self.push(FieldError::type_invalid(child(path, k), v.clone(), "array"));
                None
            }
        }
    }

    /// Array elements that are objects, with their index; others are reported.
    pub fn obj_items<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> Vec<(usize, &'a Obj)> {
        let mut out = Vec::new();
        if let Some(a) = self.arr(m, k, path) {
            let p = child(path, k);
            for (i, v) in a.iter().enumerate() {
                match v.as_object() {
                    Some(o) => out.push((i, o)),
                    None => self.push(FieldError::type_invalid(index(&p, i), v.clone(), "object")),
                }
            }
        }
        out
    }

    /// A string field.
    pub fn str<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> Option<&'a str> {
        let v = Self::present(m, k)?;
        match v.as_str() {
            Some(s) => Some(s),
            None => {
                self.push(FieldError::type_invalid(
                    child(path, k),
                    v.clone(),
                    "string",
                ));
                None
            }
        }
    }

    /// A string field read as `""` when absent.
    pub fn string<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> &'a str {
        self.str(m, k, path).unwrap_or("")
    }

    /// A boolean field.
    pub fn bool(&mut self, m: &Obj, k: &str, path: &str) -> Option<bool> {
        let v = Self::present(m, k)?;
        match v.as_bool() {
            Some(b) => Some(b),
            None => {
                self.push(FieldError::type_invalid(
                    child(path, k),
                    v.clone(),
                    "boolean",
                ));
                None
            }
        }
    }

    /// An integer field within `[min, max]` (int32 / int64 ranges).
    pub fn int_in(
        &mut self,
        m: &Obj,
        k: &str,
        path: &str,
        min: i64,
        max: i64,
        ty: &str,
    ) -> Option<i64> {
        let v = Self::present(m, k)?;
        match v.as_i64() {
            Some(i) if i >= min && i <= max => Some(i),
            _ => {
                self.push(FieldError::type_invalid(child(path, k), v.clone(), ty));
                None
            }
        }
    }

    /// An int32 field.
    pub fn i32(&mut self, m: &Obj, k: &str, path: &str) -> Option<i64> {
        self.int_in(m, k, path, i32::MIN as i64, i32::MAX as i64, "int32")
    }

    /// An int64 field.
    pub fn i64(&mut self, m: &Obj, k: &str, path: &str) -> Option<i64> {
        self.int_in(m, k, path, i64::MIN, i64::MAX, "int64")
    }

    /// A `map[string]string` field; entries with non-string values are reported.
    pub fn str_map<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> Vec<(&'a str, &'a str)> {
        let mut out = Vec::new();
        if let Some(o) = self.obj(m, k, path) {
            let p = child(path, k);
            for (kk, v) in o {
                match v.as_str() {
                    Some(s) => out.push((kk.as_str(), s)),
                    None => self.push(FieldError::type_invalid(key(&p, kk), v.clone(), "string")),
                }
            }
        }
        out
    }

    /// A `[]string` field; non-string items are reported.
    pub fn str_list<'a>(&mut self, m: &'a Obj, k: &str, path: &str) -> Vec<&'a str> {
        let mut out = Vec::new();
        if let Some(a) = self.arr(m, k, path) {
            let p = child(path, k);
            for (i, v) in a.iter().enumerate() {
                match v.as_str() {
                    Some(s) => out.push(s),
                    None => self.push(FieldError::type_invalid(index(&p, i), v.clone(), "string")),
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::validate_kind as validate;
    use super::*;
    use serde_json::json;

    #[test]
    fn display_forms() {
        let e = FieldError::invalid("metadata.name", "Foo", "bad");
        assert_eq!(e.to_string(), "metadata.name: Invalid value: \"Foo\": bad");
        assert_eq!(
            FieldError::required("spec.containers", "").to_string(),
            "spec.containers: Required value"
        );
        assert_eq!(
            FieldError::not_supported("spec.x", "a", &["b", "c"]).to_string(),
            "spec.x: Unsupported value: \"a\": supported values: \"b\", \"c\""
        );
        assert_eq!(
            FieldError::invalid("spec.replicas", -1, "must be greater than or equal to 0")
                .to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
        assert_eq!(
            FieldError::invalid("a", 1.5, "x").to_string(),
            "a: Invalid value: 1.5: x"
        );
        assert_eq!(
            FieldError::invalid("a", true, "").to_string(),
            "a: Invalid value: true"
        );
        assert_eq!(
            FieldError::invalid("a", Value::Null, "x").to_string(),
            "a: Invalid value: \"null\": x"
        );
        assert_eq!(
            FieldError::invalid("a", json!(["x", "y"]), "d").to_string(),
            "a: Invalid value: []string{\"x\", \"y\"}: d"
        );
        assert_eq!(
            FieldError::invalid("a", json!({"k": "v", "a": "b"}), "d").to_string(),
            "a: Invalid value: map[string]string{\"a\":\"b\", \"k\":\"v\"}: d"
        );
        assert_eq!(
            FieldError::invalid("a", go_repr("v1.X{A:1}"), "d").to_string(),
            "a: Invalid value: v1.X{A:1}: d"
        );
        assert_eq!(
            FieldError::forbidden("spec", "nope").to_string(),
            "spec: Forbidden: nope"
        );
        assert_eq!(
            FieldError::too_long("metadata.annotations", 262144).to_string(),
            "metadata.annotations: Too long: must have at most 262144 bytes"
        );
        assert_eq!(
            FieldError::duplicate("spec.containers[1].name", "a").to_string(),
            "spec.containers[1].name: Duplicate value: \"a\""
        );
        assert_eq!(
            FieldError::not_found("x", "v").to_string(),
            "x: Not found: \"v\""
        );
        assert_eq!(
            FieldError::too_many("l", None, 3).to_string(),
            "l: Too many: must have at most 3 items"
        );
        assert_eq!(
            FieldError::too_many("l", Some(5), 3).to_string(),
            "l: Too many: 5: must have at most 3 items"
        );
        assert_eq!(
            FieldError::internal("x", "boom").to_string(),
            "x: Internal error: boom"
        );
        let none = FieldError::new(FieldErrorKind::Invalid, "x", None, "d");
        assert_eq!(none.to_string(), "x: Invalid value: d");
        assert_eq!(
            FieldErrorKind::TypeInvalid.cause_type(),
            "FieldValueTypeInvalid"
        );
        assert_eq!(FieldErrorKind::Internal.cause_type(), "InternalError");
    }

    #[test]
    fn quoting() {
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1e-5), "1e-05");
        assert_eq!(go_float(0.5), "0.5");
    }

    #[test]
    fn aggregate() {
        let a = FieldError::required("spec.containers", "");
        let b = FieldError::invalid("metadata.name", "Foo", "x");
        assert_eq!(invalid_message("Pod", "p", &[]), "Pod \"p\" is invalid");
        assert_eq!(
            invalid_message("Pod", "p", std::slice::from_ref(&a)),
            "Pod \"p\" is invalid: spec.containers: Required value"
        );
        assert_eq!(
            invalid_message("Deployment.apps", "d", &[a.clone(), b, a]),
            "Deployment.apps \"d\" is invalid: [spec.containers: Required value, metadata.name: Invalid value: \"Foo\": x]"
        );
        assert_eq!(qualified_kind("apps", "Deployment"), "Deployment.apps");
        assert_eq!(qualified_kind("", "Pod"), "Pod");
    }

    #[test]
    fn non_object_and_unknown() {
        let e = validate("", "pods", &json!(3), None);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].kind, FieldErrorKind::TypeInvalid);
        assert!(validate("example.com", "widgets", &json!({}), None).is_empty());
    }
}
