//! CEL types derived from a structural schema (kube's `model.SchemaDeclType`).

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// CEL types derived from the schema (model.SchemaDeclType).
// ---------------------------------------------------------------------------

/// The CEL type of a schema node, as kube declares it to the checker.
#[derive(Debug)]
pub(super) enum Ty {
    /// `x-kubernetes-int-or-string`: dynamically typed.
    Dyn,
    Bool,
    Int,
    Double,
    String,
    Bytes,
    Duration,
    Timestamp,
    List(Arc<Ty>),
    Map(Arc<Ty>),
    Object(Vec<FieldTy>),
}

/// A field of an object type.
#[derive(Debug)]
pub(super) struct FieldTy {
    /// JSON property name.
    pub(super) json: String,
    /// Escaped CEL field name.
    pub(super) cel: String,
    pub(super) ty: Arc<Ty>,
}

impl Ty {
    pub(super) fn field(&self, cel_name: &str) -> Option<&FieldTy> {
        match self {
            Ty::Object(f) => f.iter().find(|f| f.cel == cel_name),
            _ => None,
        }
    }
}

pub(super) fn str_of<'a>(s: &'a Value, k: &str) -> Option<&'a str> {
    s.get(k).and_then(Value::as_str)
}

pub(super) fn flag(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}

/// The JSON schema with `apiVersion`, `kind` and `metadata.{name,generateName}`
/// forced in, like `WithTypeAndObjectMeta`.
pub(super) fn with_type_and_object_meta(s: &Value) -> Value {
    let props = s.get("properties").and_then(Value::as_object);
    let ty = |v: Option<&Value>| v.and_then(|v| str_of(v, "type")).map(str::to_string);
    if let Some(p) = props {
        let meta = p.get("metadata");
        let mp = meta.and_then(|m| m.get("properties"));
        if ty(p.get("kind")).as_deref() == Some("string")
            && ty(p.get("apiVersion")).as_deref() == Some("string")
            && ty(meta).as_deref() == Some("object")
            && ty(mp.and_then(|m| m.get("name"))).as_deref() == Some("string")
            && ty(mp.and_then(|m| m.get("generateName"))).as_deref() == Some("string")
        {
            return s.clone();
        }
    }
    let mut out = s.clone();
    let string = serde_json::json!({"type": "string"});
    let mut new_props = props.cloned().unwrap_or_default();
    new_props.insert("kind".into(), string.clone());
    new_props.insert("apiVersion".into(), string.clone());
    new_props.insert(
        "metadata".into(),
        serde_json::json!({"type": "object", "properties": {"name": string, "generateName": string}}),
    );
    if let Some(o) = out.as_object_mut() {
        o.insert("properties".into(), Value::Object(new_props));
    }
    out
}

/// `model.SchemaDeclType`: the CEL type of a schema, `None` when the schema
/// cannot be typed (and is then invisible to rules).
pub(super) fn schema_ty(s: &Value, resource_root: bool, depth: usize) -> Option<Arc<Ty>> {
    if depth > MAX_SCHEMA_DEPTH {
        return None;
    }
    if flag(s, "x-kubernetes-int-or-string") {
        return Some(Arc::new(Ty::Dyn));
    }
    let owned;
    let s = if resource_root {
        owned = with_type_and_object_meta(s);
        &owned
    } else {
        s
    };
    let ty = match str_of(s, "type").unwrap_or("") {
        "array" => {
            let items = s.get("items").filter(|i| i.is_object())?;
            let e = schema_ty(
                items,
                flag(items, "x-kubernetes-embedded-resource"),
                depth + 1,
            )?;
            Ty::List(e)
        }
        "object" => {
            if let Some(ap) = s.get("additionalProperties").filter(|a| a.is_object()) {
                let v = schema_ty(ap, flag(ap, "x-kubernetes-embedded-resource"), depth + 1)?;
                Ty::Map(v)
            } else {
                let mut fields = Vec::new();
                if let Some(props) = s.get("properties").and_then(Value::as_object) {
                    for (name, p) in props {
                        let Some(cel) = escape(name) else { continue };
                        let embedded = flag(p, "x-kubernetes-embedded-resource");
                        if let Some(t) = schema_ty(p, embedded, depth + 1) {
                            fields.push(FieldTy {
                                json: name.clone(),
                                cel,
                                ty: t,
                            });
                        }
                    }
                }
                Ty::Object(fields)
            }
        }
        "string" => match str_of(s, "format").unwrap_or("") {
            "byte" => Ty::Bytes,
            "duration" => Ty::Duration,
            "date" | "date-time" => Ty::Timestamp,
            _ => Ty::String,
        },
        "boolean" => Ty::Bool,
        "number" => Ty::Double,
        "integer" => Ty::Int,
        _ => return None,
    };
    Some(Arc::new(ty))
}

/// CEL reserved words, escaped as `__word__` when used as property names.
pub(super) const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// `cel.Escape`: the CEL field name of a property, `None` if it has none.
pub(super) fn escape(ident: &str) -> Option<String> {
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let mut chars = ident.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}
