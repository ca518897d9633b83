//! CEL validation rules of CustomResourceDefinitions (`x-kubernetes-validations`).
//!
//! Mirrors apiextensions-apiserver 1.32 (`pkg/apiserver/schema/cel`): every
//! rule of a version's `openAPIV3Schema` is compiled once by
//! [`CelValidator::compile`] and evaluated by [`CelValidator::validate`] with
//! `self` bound to the value at the rule's schema location (and `oldSelf` to
//! the correlated old value on update).
//!
//! The interpreter is the `cel` crate (through `kube-cel`, which adds the
//! Kubernetes extension libraries). That crate only parses; it has no type
//! checker, so this module adds a small schema-aware checker that reports the
//! compile errors kube's checker reports most often (undeclared references,
//! undefined fields, operator overload mismatches, non-bool results) in
//! cel-go's `ERROR: <input>:L:C: ...` form. Runtime cost limits are not
//! enforced; the expression size and nesting are bounded instead, and deep
//! rules are evaluated on a thread with a large stack.

use crate::validation::{FieldError, FieldErrorKind, go_quote, go_repr};
use kube_cel::KubeCelExt;
use kube_cel::cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, SelectExpr,
};
use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::{Context, ExecutionError, Value as CelValue};
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

/// Variable name of the value at the rule's location.
const SELF: &str = "self";
/// Variable name of the old value of a transition rule.
const OLD_SELF: &str = "oldSelf";
/// cel-go's default expression size limit, in code points.
const MAX_EXPRESSION_CODE_POINTS: usize = 100_000;
/// Bracket nesting accepted before parsing (the parser recurses deeply per level).
const MAX_BRACKET_NESTING: usize = 64;
/// Parser recursion limit (parse-tree depth).
const MAX_PARSE_RECURSION: u16 = 96;
/// Expression tree depth accepted after parsing.
const MAX_AST_DEPTH: usize = 250;
/// Schema nesting accepted by [`CelValidator::compile`].
const MAX_SCHEMA_DEPTH: usize = 256;
/// Above this combined schema/expression depth, validation runs on a big stack.
const INLINE_DEPTH_LIMIT: usize = 24;
/// Stack size of the helper thread used for deep schemas or expressions.
const BIG_STACK: usize = 256 * 1024 * 1024;
/// Prefix of the string values that stand for CEL type values.
const TYPE_TAG: &str = "\u{1}type:";
/// cel-go's limit on the evaluated length of a `messageExpression`.
const MAX_MESSAGE_EXPRESSION_BYTES: usize = 5 * 1024;

// ---------------------------------------------------------------------------
// CEL types derived from the schema (model.SchemaDeclType).
// ---------------------------------------------------------------------------

/// The CEL type of a schema node, as kube declares it to the checker.
#[derive(Debug)]
enum Ty {
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
struct FieldTy {
    /// JSON property name.
    json: String,
    /// Escaped CEL field name.
    cel: String,
    ty: Arc<Ty>,
}

impl Ty {
    fn field(&self, cel_name: &str) -> Option<&FieldTy> {
        match self {
            Ty::Object(f) => f.iter().find(|f| f.cel == cel_name),
            _ => None,
        }
    }
}

fn str_of<'a>(s: &'a Value, k: &str) -> Option<&'a str> {
    s.get(k).and_then(Value::as_str)
}

fn flag(s: &Value, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}

/// The JSON schema with `apiVersion`, `kind` and `metadata.{name,generateName}`
/// forced in, like `WithTypeAndObjectMeta`.
fn with_type_and_object_meta(s: &Value) -> Value {
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
fn schema_ty(s: &Value, resource_root: bool, depth: usize) -> Option<Arc<Ty>> {
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
const RESERVED: &[&str] = &[
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
fn escape(ident: &str) -> Option<String> {
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

// ---------------------------------------------------------------------------
// Compiled tree.
// ---------------------------------------------------------------------------

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
struct Rule {
    rule: String,
    message: String,
    message_expression: Option<IdedExpr>,
    reason: Option<String>,
    /// Normalized `fieldPath` (relative, without leading dot), if any.
    field_path: Option<String>,
    optional_old_self: bool,
    uses_old_self: bool,
    /// `None` for an empty rule (skipped, as kube does).
    program: Option<IdedExpr>,
}

/// The validator of one schema node (kube's `Validator`).
#[derive(Debug)]
struct Node {
    /// The schema `type`, printed as the bad value of rule failures.
    type_name: String,
    /// The type used to convert values for rules at this node.
    ty: Option<Arc<Ty>>,
    rules: Vec<Rule>,
    /// An error that keeps every rule of this node from running.
    init_error: Option<String>,
    properties: Vec<(String, Node)>,
    items: Option<Box<Node>>,
    additional: Option<Box<Node>>,
    all_of: Vec<Node>,
    /// `x-kubernetes-list-type`.
    list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    list_map_keys: Vec<String>,
}

/// The compiled rules of one CRD version's schema.
pub struct CelValidator {
    root: Option<Node>,
    /// Deepest schema nesting or expression nesting, to choose the stack.
    depth: usize,
    ctx: Context<'static>,
}

impl std::fmt::Debug for CelValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelValidator")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Renders a rule the way kube prints `apiextensions.ValidationRule` with `%#v`.
fn rule_repr(raw: &Value) -> Value {
    let s = |k: &str| go_quote(str_of(raw, k).unwrap_or(""));
    let ptr = |k: &str, ty: &str| match raw.get(k) {
        None | Some(Value::Null) => format!("({ty})(nil)"),
        Some(_) => format!("({ty})(0xc000000000)"),
    };
    go_repr(format!(
        "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{}, FieldPath:{}, OptionalOldSelf:{}}}",
        s("rule"),
        s("message"),
        s("messageExpression"),
        ptr("reason", "*apiextensions.FieldValueErrorReason"),
        s("fieldPath"),
        ptr("optionalOldSelf", "*bool"),
    ))
}

fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// Compile-time state.
struct Compiler {
    errs: Vec<FieldError>,
    depth: usize,
}

impl Compiler {
    /// Builds the validator of a node: `vs` carries the rules, `ns` the
    /// structure; `ty` is the node's declared type. `path` is the CRD path of
    /// `vs`; `uncorrelatable` the path of an enclosing non-map list.
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        vs: &Value,
        ns: &Value,
        resource_root: bool,
        ty: Option<Arc<Ty>>,
        path: &str,
        uncorrelatable: Option<&str>,
        depth: usize,
    ) -> Option<Node> {
        self.depth = self.depth.max(depth);
        if depth > MAX_SCHEMA_DEPTH {
            self.errs.push(FieldError::invalid(
                path,
                "object",
                format!("schema nesting exceeds the maximum depth of {MAX_SCHEMA_DEPTH}"),
            ));
            return None;
        }
        let rules_raw = vs
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let vpath = format!("{path}.x-kubernetes-validations");
        let conv_ty = if resource_root {
            schema_ty(ns, true, depth)
        } else {
            ty.clone()
        };
        let mut rules = Vec::new();
        let mut init_error = None;
        if !rules_raw.is_empty() {
            match &conv_ty {
                None => {
                    let msg = format!(
                        "rule declared on schema that does not support validation rules type: '{}' x-kubernetes-preserve-unknown-fields: '{}'",
                        str_of(ns, "type").unwrap_or(""),
                        flag(ns, "x-kubernetes-preserve-unknown-fields")
                    );
                    self.errs
                        .push(FieldError::internal(vpath.clone(), msg.clone()));
                    init_error = Some(msg);
                }
                Some(t) => {
                    for (i, raw) in rules_raw.iter().enumerate() {
                        let rpath = format!("{vpath}[{i}]");
                        if let Some(r) = self.rule(raw, t, ns, &rpath, uncorrelatable) {
                            rules.push(r);
                        }
                    }
                }
            }
        }

        let list_type = str_of(ns, "x-kubernetes-list-type").map(str::to_string);
        let list_map_keys: Vec<String> = ns
            .get("x-kubernetes-list-map-keys")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|k| k.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();

        let elem_ty = match ty.as_deref() {
            Some(Ty::List(e)) | Some(Ty::Map(e)) => Some(e.clone()),
            _ => None,
        };

        let mut items = None;
        if let (Some(vi), Some(ni)) = (
            vs.get("items").filter(|i| i.is_object()),
            ns.get("items").filter(|i| i.is_object()),
        ) {
            let ipath = format!("{path}.items");
            let unc = if list_type.as_deref() == Some("map") {
                uncorrelatable.map(str::to_string)
            } else {
                Some(uncorrelatable.unwrap_or(path).to_string())
            };
            items = self
                .node(
                    vi,
                    ni,
                    flag(ni, "x-kubernetes-embedded-resource"),
                    elem_ty.clone(),
                    &ipath,
                    unc.as_deref(),
                    depth + 1,
                )
                .map(Box::new);
        }

        let mut properties = Vec::new();
        if let (Some(vp), Some(np)) = (
            vs.get("properties").and_then(Value::as_object),
            ns.get("properties").and_then(Value::as_object),
        ) {
            for (k, vprop) in vp {
                let Some(nprop) = np.get(k) else { continue };
                let embedded = flag(nprop, "x-kubernetes-embedded-resource");
                let fty = match escape(k) {
                    Some(esc) => match ty.as_deref().and_then(|t| t.field(&esc)) {
                        Some(f) => Some(f.ty.clone()),
                        None => continue,
                    },
                    None => match schema_ty(nprop, embedded, depth + 1) {
                        Some(t) => Some(t),
                        None => continue,
                    },
                };
                let ppath = format!("{path}.properties[{k}]");
                if let Some(n) = self.node(
                    vprop,
                    nprop,
                    embedded,
                    fty,
                    &ppath,
                    uncorrelatable,
                    depth + 1,
                ) {
                    properties.push((k.clone(), n));
                }
            }
        }

        let mut additional = None;
        if let (Some(va), Some(na)) = (
            vs.get("additionalProperties").filter(|a| a.is_object()),
            ns.get("additionalProperties").filter(|a| a.is_object()),
        ) {
            let apath = format!("{path}.additionalProperties");
            additional = self
                .node(
                    va,
                    na,
                    flag(na, "x-kubernetes-embedded-resource"),
                    elem_ty,
                    &apath,
                    uncorrelatable,
                    depth + 1,
                )
                .map(Box::new);
        }

        let mut all_of = Vec::new();
        if let Some(list) = vs.get("allOf").and_then(Value::as_array) {
            for (i, a) in list.iter().enumerate() {
                let apath = format!("{path}.allOf[{i}]");
                if let Some(n) = self.node(
                    a,
                    ns,
                    resource_root,
                    ty.clone(),
                    &apath,
                    uncorrelatable,
                    depth + 1,
                ) {
                    all_of.push(n);
                }
            }
        }

        if rules.is_empty()
            && init_error.is_none()
            && items.is_none()
            && additional.is_none()
            && properties.is_empty()
            && all_of.is_empty()
        {
            return None;
        }
        Some(Node {
            type_name: str_of(ns, "type").unwrap_or("").to_string(),
            ty: conv_ty,
            rules,
            init_error,
            properties,
            items,
            additional,
            all_of,
            list_type,
            list_map_keys,
        })
    }

    /// Validates and compiles one rule; errors go to `self.errs`.
    fn rule(
        &mut self,
        raw: &Value,
        self_ty: &Arc<Ty>,
        ns: &Value,
        rpath: &str,
        uncorrelatable: Option<&str>,
    ) -> Option<Rule> {
        let text = str_of(raw, "rule").unwrap_or("");
        let message = str_of(raw, "message").unwrap_or("");
        let message_expr = str_of(raw, "messageExpression").unwrap_or("");
        let reason = str_of(raw, "reason").map(str::to_string);
        let field_path = str_of(raw, "fieldPath").unwrap_or("");
        let optional_old_self = raw.get("optionalOldSelf").and_then(Value::as_bool);
        let (trimmed_rule, trimmed_msg) = (text.trim(), message.trim());
        let before = self.errs.len();
        if trimmed_rule.is_empty() {
            self.errs.push(FieldError::required(
                format!("{rpath}.rule"),
                "rule is not specified",
            ));
        } else if !message.is_empty() && trimmed_msg.is_empty() {
            self.errs.push(FieldError::invalid(
                format!("{rpath}.message"),
                message,
                "message must be non-empty if specified",
            ));
        } else if has_newlines(trimmed_msg) {
            self.errs.push(FieldError::invalid(
                format!("{rpath}.message"),
                message,
                "message must not contain line breaks",
            ));
        } else if has_newlines(trimmed_rule) && trimmed_msg.is_empty() {
            self.errs.push(FieldError::required(
                format!("{rpath}.message"),
                "message must be specified if rule contains line breaks",
            ));
        }
        if !message_expr.is_empty() && message_expr.trim().is_empty() {
            self.errs.push(FieldError::required(
                format!("{rpath}.messageExpression"),
                "messageExpression must be non-empty if specified",
            ));
        }
        if let Some(r) = &reason {
            const SUPPORTED: [&str; 4] = [
                "FieldValueDuplicate",
                "FieldValueForbidden",
                "FieldValueInvalid",
                "FieldValueRequired",
            ];
            if !SUPPORTED.contains(&r.as_str()) {
                self.errs.push(FieldError::not_supported(
                    format!("{rpath}.reason"),
                    r.as_str(),
                    &SUPPORTED,
                ));
            }
        }
        let mut normalized_path = None;
        if !field_path.is_empty() {
            let fpath = format!("{rpath}.fieldPath");
            if field_path.trim().is_empty() {
                self.errs.push(FieldError::invalid(
                    fpath.clone(),
                    field_path,
                    "fieldPath must be non-empty if specified",
                ));
            }
            if has_newlines(field_path) {
                self.errs.push(FieldError::invalid(
                    fpath.clone(),
                    field_path,
                    "fieldPath must not contain line breaks",
                ));
            }
            match valid_field_path(field_path, ns) {
                Ok(p) => normalized_path = Some(p),
                Err(_) => self.errs.push(FieldError::invalid(
                    fpath,
                    field_path,
                    "fieldPath must be a valid path",
                )),
            }
        }
        if self.errs.len() > before {
            return None;
        }

        let repr = rule_repr(raw);
        let old_ty = if optional_old_self == Some(true) {
            CTy::Optional(Box::new(CTy::Decl(self_ty.clone())))
        } else {
            CTy::Decl(self_ty.clone())
        };
        let program = match compile_expr(text, self_ty, &old_ty, true) {
            Ok((e, d)) => {
                self.depth = self.depth.max(d);
                e
            }
            Err(detail) => {
                self.errs
                    .push(FieldError::invalid(format!("{rpath}.rule"), repr, detail));
                return None;
            }
        };
        let uses_old_self = references_ident(&program, OLD_SELF);
        if uses_old_self {
            if let Some(u) = uncorrelatable {
                self.errs.push(FieldError::invalid(
                    format!("{rpath}.rule"),
                    text,
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"),
                ));
            }
        } else if let Some(b) = optional_old_self {
            self.errs.push(FieldError::invalid(
                format!("{rpath}.optionalOldSelf"),
                b,
                "may not be set if oldSelf is not used in rule",
            ));
        }
        let mut message_expression = None;
        if !message_expr.trim().is_empty() {
            match compile_expr(message_expr, self_ty, &CTy::Decl(self_ty.clone()), false) {
                Ok((e, d)) => {
                    self.depth = self.depth.max(d);
                    message_expression = Some(e);
                }
                Err(detail) => {
                    self.errs.push(FieldError::invalid(
                        format!("{rpath}.messageExpression"),
                        repr,
                        detail
                            .replacen(
                                "compilation failed",
                                "messageExpression compilation failed",
                                1,
                            )
                            .replace(
                                "cel expression must evaluate to a string",
                                "messageExpression must evaluate to a string",
                            ),
                    ));
                    return None;
                }
            }
        }
        Some(Rule {
            rule: text.to_string(),
            message: message.to_string(),
            message_expression,
            reason,
            field_path: normalized_path.filter(|p| !p.is_empty()),
            optional_old_self: optional_old_self == Some(true),
            uses_old_self,
            program: Some(program),
        })
    }
}

/// `ValidFieldPath`: checks a rule's `fieldPath` against the schema and
/// returns it as a field path relative to the rule's location.
fn valid_field_path(path: &str, schema: &Value) -> Result<String, String> {
    // Tokens: '.', '[', ']', quoted strings, and names.
    let mut toks: Vec<String> = Vec::new();
    let chars: Vec<char> = path.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '\'' {
            let start = i;
            i += 1;
            while i < chars.len() && !(chars[i] == '\'' && chars[i - 1] != '\\') {
                i += 1;
            }
            let end = (i + 1).min(chars.len());
            toks.push(chars[start..end].iter().collect());
            i = end;
        } else if matches!(c, '.' | '[' | ']') {
            toks.push(c.to_string());
            i += 1;
        } else {
            let start = i;
            while i < chars.len() && !matches!(chars[i], '.' | '[' | ']' | '\'') {
                i += 1;
            }
            toks.push(chars[start..i].iter().collect());
        }
    }
    let mut out = String::new();
    let mut cur = schema.clone();
    let mut it = toks.into_iter();
    let append = |name: String, cur: &mut Value, out: &mut String| -> Result<(), String> {
        if let Some(props) = cur.get("properties").and_then(Value::as_object) {
            let next = props
                .get(&name)
                .cloned()
                .ok_or_else(|| "does not refer to a valid field".to_string())?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            *cur = next;
            Ok(())
        } else if let Some(ap) = cur.get("additionalProperties").filter(|a| a.is_object()) {
            let next = ap.clone();
            out.push_str(&format!("[{name}]"));
            *cur = next;
            Ok(())
        } else {
            Err("does not refer to a valid field".to_string())
        }
    };
    while let Some(tok) = it.next() {
        match tok.as_str() {
            "[" => {
                let t = it.next().ok_or("unexpected end of JSON path")?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {t}"));
                }
                let inner = &t[1..t.len() - 1];
                let unescaped = unescape_single_quote(inner)?;
                append(unescaped, &mut cur, &mut out)?;
                let close = it.next().ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    return Err(format!("expected ] but got {close}"));
                }
            }
            "." => {
                let t = it.next().ok_or("unexpected end of JSON path")?;
                append(t, &mut cur, &mut out)?;
            }
            other => return Err(format!("expected [ or . but got: {other}")),
        }
    }
    Ok(out)
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('a') => out.push('\u{7}'),
            Some('b') => out.push('\u{8}'),
            Some('f') => out.push('\u{c}'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('t') => out.push('\t'),
            Some('v') => out.push('\u{b}'),
            Some('\'') => out.push('\''),
            Some('\\') => out.push('\\'),
            Some(o) => return Err(format!("invalid escape char \\{o}")),
            None => out.push('\\'),
        }
    }
    Ok(out)
}

fn references_ident(e: &IdedExpr, name: &str) -> bool {
    let mut found = false;
    walk(e, &mut |x| {
        if let Expr::Ident(n) = &x.expr
            && n == name
        {
            found = true;
        }
    });
    found
}

/// Visits every expression (pre-order).
fn walk(e: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
    f(e);
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                walk(t, f);
            }
            for a in &c.args {
                walk(a, f);
            }
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                walk(x, f);
            }
        }
        Expr::List(l) => {
            for x in &l.elements {
                walk(x, f);
            }
        }
        Expr::Map(m) => {
            for en in &m.entries {
                if let EntryExpr::MapEntry(me) = &en.expr {
                    walk(&me.key, f);
                    walk(&me.value, f);
                }
            }
        }
        Expr::Struct(s) => {
            for en in &s.entries {
                if let EntryExpr::StructField(sf) = &en.expr {
                    walk(&sf.value, f);
                }
            }
        }
        Expr::Select(s) => walk(&s.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

fn ast_depth(e: &IdedExpr) -> usize {
    let mut max = 0;
    let mut children: Vec<&IdedExpr> = Vec::new();
    match &e.expr {
        Expr::Call(c) => {
            children.extend(c.target.as_deref());
            children.extend(c.args.iter());
        }
        Expr::Comprehension(c) => children.extend([
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]),
        Expr::List(l) => children.extend(l.elements.iter()),
        Expr::Map(m) => {
            for en in &m.entries {
                if let EntryExpr::MapEntry(me) = &en.expr {
                    children.push(&me.key);
                    children.push(&me.value);
                }
            }
        }
        Expr::Select(s) => children.push(&s.operand),
        _ => {}
    }
    for c in children {
        max = max.max(ast_depth(c));
    }
    max + 1
}

// ---------------------------------------------------------------------------
// Parsing, rewriting and checking.
// ---------------------------------------------------------------------------

/// Parses, rewrites and checks an expression. `want_bool` selects the rule
/// (bool result) or messageExpression (string result) form. On success also
/// returns the expression depth.
fn compile_expr(
    src: &str,
    self_ty: &Arc<Ty>,
    old_ty: &CTy,
    want_bool: bool,
) -> Result<(IdedExpr, usize), String> {
    let n = src.chars().count();
    if n > MAX_EXPRESSION_CODE_POINTS {
        return Err(format!(
            "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: {n}, limit {MAX_EXPRESSION_CODE_POINTS}"
        ));
    }
    let mut nest = 0usize;
    let mut max_nest = 0usize;
    for c in src.chars() {
        match c {
            '(' | '[' | '{' => {
                nest += 1;
                max_nest = max_nest.max(nest);
            }
            ')' | ']' | '}' => nest = nest.saturating_sub(1),
            _ => {}
        }
    }
    if max_nest > MAX_BRACKET_NESTING {
        return Err(format!(
            "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: {MAX_BRACKET_NESTING}"
        ));
    }
    let parsed = catch_unwind(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(MAX_PARSE_RECURSION)
            .parse(src)
    });
    let expr = match parsed {
        Ok(Ok(e)) => e,
        Ok(Err(errs)) => {
            let msgs: Vec<String> = errs
                .errors
                .iter()
                .map(|e| format_issue(src, e.pos.0, e.pos.1, &e.msg))
                .collect();
            return Err(format!("compilation failed: {}", msgs.join("\n")));
        }
        Err(_) => {
            return Err("compilation failed: ERROR: <input>:1:1: internal parser error".into());
        }
    };
    let depth = ast_depth(&expr);
    if depth > MAX_AST_DEPTH {
        return Err(format!(
            "compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: {MAX_AST_DEPTH}"
        ));
    }
    let expr = rewrite(expr);
    let mut ck = Checker {
        src,
        self_ty: self_ty.clone(),
        old_ty: old_ty.clone(),
        scopes: Vec::new(),
        errors: Vec::new(),
    };
    let ty = ck.check(&expr);
    if !ck.errors.is_empty() {
        ck.errors.sort();
        ck.errors.dedup();
        let msgs: Vec<String> = ck
            .errors
            .iter()
            .map(|(l, c, m)| format_issue(src, *l, *c, m))
            .collect();
        return Err(format!("compilation failed: {}", msgs.join("\n")));
    }
    if want_bool {
        if !matches!(ty, CTy::Bool | CTy::Unknown) {
            return Err("cel expression must evaluate to a bool".into());
        }
    } else if !matches!(ty, CTy::String | CTy::Unknown) {
        return Err("cel expression must evaluate to a string".into());
    }
    Ok((expr, depth + 1))
}

/// Formats one issue like cel-go's `Error.ToDisplayString`.
fn format_issue(src: &str, line: isize, col: isize, msg: &str) -> String {
    let mut out = format!("ERROR: <input>:{line}:{col}: {msg}");
    if line >= 1
        && let Some(snippet) = src.split('\n').nth((line - 1) as usize)
    {
        let snippet = snippet.trim_end_matches('\r').replace('\t', " ");
        out.push_str("\n | ");
        out.push_str(&snippet);
        out.push_str("\n | ");
        let mut chars = snippet.chars();
        for _ in 1..col.max(1) {
            match chars.next() {
                Some(c) if c.len_utf8() > 1 => out.push('\u{ff0e}'),
                Some(_) => out.push('.'),
                None => break,
            }
        }
        match chars.next() {
            Some(c) if c.len_utf8() > 1 => out.push('\u{ff3e}'),
            _ => out.push('^'),
        }
    }
    out
}

/// Rewrites constructs the interpreter lacks: `cel.bind(v, init, e)` becomes a
/// comprehension binding `v`, `x.?f` becomes `x[?'f']`.
fn rewrite(e: IdedExpr) -> IdedExpr {
    let id = e.id;
    let expr = match e.expr {
        Expr::Call(c) => {
            let target = c.target.map(|t| Box::new(rewrite(*t)));
            let args: Vec<IdedExpr> = c.args.into_iter().map(rewrite).collect();
            let is_bind = c.func_name == "bind"
                && args.len() == 3
                && matches!(target.as_deref(), Some(IdedExpr { expr: Expr::Ident(n), .. }) if n == "cel")
                && matches!(args[0].expr, Expr::Ident(_));
            if is_bind {
                let mut args = args.into_iter();
                let (Some(var), Some(init), Some(body)) = (args.next(), args.next(), args.next())
                else {
                    return IdedExpr {
                        id,
                        expr: Expr::Unspecified,
                    };
                };
                let Expr::Ident(name) = var.expr else {
                    return IdedExpr {
                        id,
                        expr: Expr::Unspecified,
                    };
                };
                Expr::Comprehension(Box::new(ComprehensionExpr {
                    iter_range: IdedExpr {
                        id,
                        expr: Expr::List(ListExpr::new(Vec::new())),
                    },
                    iter_var: "#unused".into(),
                    iter_var2: None,
                    accu_var: name.clone(),
                    accu_init: init,
                    loop_cond: IdedExpr {
                        id,
                        expr: Expr::Literal(LiteralValue::Boolean(false.into())),
                    },
                    loop_step: IdedExpr {
                        id,
                        expr: Expr::Ident(name),
                    },
                    result: body,
                }))
            } else if c.func_name == "_?._" {
                Expr::Call(CallExpr {
                    func_name: "_[?_]".into(),
                    target,
                    args,
                })
            } else {
                Expr::Call(CallExpr {
                    func_name: c.func_name,
                    target,
                    args,
                })
            }
        }
        Expr::Comprehension(c) => {
            let c = *c;
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: rewrite(c.iter_range),
                iter_var: c.iter_var,
                iter_var2: c.iter_var2,
                accu_var: c.accu_var,
                accu_init: rewrite(c.accu_init),
                loop_cond: rewrite(c.loop_cond),
                loop_step: rewrite(c.loop_step),
                result: rewrite(c.result),
            }))
        }
        Expr::List(l) => Expr::List(ListExpr::new_with_optionals(
            l.elements.into_iter().map(rewrite).collect(),
            l.optional_indices,
        )),
        Expr::Map(mut m) => {
            for en in &mut m.entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    me.key = rewrite(std::mem::take(&mut me.key));
                    me.value = rewrite(std::mem::take(&mut me.value));
                }
            }
            Expr::Map(m)
        }
        Expr::Select(s) => Expr::Select(SelectExpr {
            operand: Box::new(rewrite(*s.operand)),
            field: s.field,
            test: s.test,
        }),
        other => other,
    };
    IdedExpr { id, expr }
}

/// Checker types: declared schema types plus the CEL primitives.
#[derive(Debug, Clone)]
enum CTy {
    Decl(Arc<Ty>),
    Bool,
    Int,
    UInt,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List(Box<CTy>),
    Map(Box<CTy>),
    Optional(Box<CTy>),
    Type,
    /// Declared `dyn` (int-or-string): known to be dynamic.
    Dyn,
    /// Not inferred by this checker.
    Unknown,
}

impl CTy {
    /// Resolves declared types to their checker form.
    fn norm(&self) -> CTy {
        match self {
            CTy::Decl(t) => match t.as_ref() {
                Ty::Dyn => CTy::Dyn,
                Ty::Bool => CTy::Bool,
                Ty::Int => CTy::Int,
                Ty::Double => CTy::Double,
                Ty::String => CTy::String,
                Ty::Bytes => CTy::Bytes,
                Ty::Duration => CTy::Duration,
                Ty::Timestamp => CTy::Timestamp,
                Ty::List(e) => CTy::List(Box::new(CTy::Decl(e.clone()))),
                Ty::Map(v) => CTy::Map(Box::new(CTy::Decl(v.clone()))),
                Ty::Object(_) => self.clone(),
            },
            other => other.clone(),
        }
    }

    /// The type name cel-go prints in overload errors, if primitive.
    fn name(&self) -> Option<String> {
        Some(
            match self.norm() {
                CTy::Bool => "bool",
                CTy::Int => "int",
                CTy::UInt => "uint",
                CTy::Double => "double",
                CTy::String => "string",
                CTy::Bytes => "bytes",
                CTy::Null => "null_type",
                CTy::Duration => "google.protobuf.Duration",
                CTy::Timestamp => "google.protobuf.Timestamp",
                _ => return None,
            }
            .to_string(),
        )
    }

    fn is_numeric(&self) -> bool {
        matches!(self.norm(), CTy::Int | CTy::UInt | CTy::Double)
    }
}

/// A small static checker over the parsed expression.
struct Checker<'a> {
    src: &'a str,
    self_ty: Arc<Ty>,
    old_ty: CTy,
    scopes: Vec<(String, CTy)>,
    errors: Vec<(isize, isize, String)>,
}

/// Namespaces of qualified function names (`sets.contains`, ...).
const NAMESPACES: &[&str] = &[
    "sets",
    "math",
    "optional",
    "base64",
    "strings",
    "format",
    "lists",
    "jsonpatch",
    "ip",
    "cel",
];

/// Type identifiers usable as values (`type(x) == string`).
const TYPE_IDENTS: &[&str] = &[
    "int",
    "uint",
    "double",
    "bool",
    "string",
    "bytes",
    "list",
    "map",
    "null_type",
    "type",
    "dyn",
];

/// Functions known to the environment and their result types.
fn function_result(name: &str) -> Option<CTy> {
    use CTy::*;
    Some(match name {
        "contains"
        | "startsWith"
        | "endsWith"
        | "matches"
        | "isSorted"
        | "isURL"
        | "isIP"
        | "isCIDR"
        | "isQuantity"
        | "isInteger"
        | "isGreaterThan"
        | "isLessThan"
        | "hasValue"
        | "sets.contains"
        | "sets.equivalent"
        | "sets.intersects"
        | "isLoopback"
        | "isUnspecified"
        | "isLinkLocalMulticast"
        | "isLinkLocalUnicast"
        | "isGlobalUnicast"
        | "containsIP"
        | "containsCIDR"
        | "ip.isCanonical"
        | "math.isInf"
        | "math.isNaN"
        | "math.isFinite"
        | "isIPv4"
        | "isIPv6"
        | "isCIDRv4"
        | "isCIDRv6"
        | "bool" => Bool,
        "size" | "indexOf" | "lastIndexOf" | "getFullYear" | "getMonth" | "getDayOfYear"
        | "getDayOfMonth" | "getDate" | "getDayOfWeek" | "getHours" | "getMinutes"
        | "getSeconds" | "getMilliseconds" | "int" | "compareTo" | "asInteger" | "family"
        | "prefixLength" | "sign" => Int,
        "uint" => UInt,
        "string" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt"
        | "join" | "format" | "strings.quote" | "getScheme" | "getHost" | "getHostname"
        | "getPort" | "getEscapedPath" | "base64.encode" | "find" => String,
        "double" | "asApproximateFloat" | "math.ceil" | "math.floor" | "math.round"
        | "math.trunc" | "math.sqrt" => Double,
        "bytes" | "base64.decode" => Bytes,
        "duration" => Duration,
        "timestamp" => Timestamp,
        "split" | "findAll" => List(Box::new(String)),
        "type" => Type,
        "dyn" => Dyn,
        "optional.none" | "optional.of" | "optional.ofNonZeroValue" => Optional(Box::new(Unknown)),
        "value"
        | "or"
        | "orValue"
        | "max"
        | "min"
        | "sum"
        | "reverse"
        | "getQuery"
        | "url"
        | "ip"
        | "cidr"
        | "quantity"
        | "masked"
        | "add"
        | "sub"
        | "math.greatest"
        | "math.least"
        | "math.abs"
        | "math.bitAnd"
        | "math.bitOr"
        | "math.bitXor"
        | "math.bitNot"
        | "math.bitShiftLeft"
        | "math.bitShiftRight"
        | "math.sign"
        | "format.named"
        | "format.dns1123Label"
        | "format.dns1123Subdomain"
        | "format.dns1035Label"
        | "format.qualifiedName"
        | "format.dns1123LabelPrefix"
        | "format.dns1123SubdomainPrefix"
        | "format.dns1035LabelPrefix"
        | "format.labelValue"
        | "format.uri"
        | "format.uuid"
        | "format.byte"
        | "format.date"
        | "format.datetime"
        | "validate"
        | "getTimezone" => Unknown,
        _ => return None,
    })
}

impl Checker<'_> {
    fn lookup(&self, name: &str) -> Option<CTy> {
        if let Some((_, t)) = self.scopes.iter().rev().find(|(n, _)| n == name) {
            return Some(t.clone());
        }
        match name {
            SELF => Some(CTy::Decl(self.self_ty.clone())),
            OLD_SELF => Some(self.old_ty.clone()),
            n if TYPE_IDENTS.contains(&n) => Some(CTy::Type),
            _ => None,
        }
    }

    fn error_at(&mut self, pos: Option<(isize, isize)>, msg: String) {
        let (l, c) = pos.unwrap_or((1, 1));
        self.errors.push((l, c, msg));
    }

    fn check(&mut self, e: &IdedExpr) -> CTy {
        match &e.expr {
            Expr::Literal(l) => match l {
                LiteralValue::Boolean(_) => CTy::Bool,
                LiteralValue::Bytes(_) => CTy::Bytes,
                LiteralValue::Double(_) => CTy::Double,
                LiteralValue::Int(_) => CTy::Int,
                LiteralValue::Null => CTy::Null,
                LiteralValue::String(_) => CTy::String,
                LiteralValue::UInt(_) => CTy::UInt,
            },
            Expr::Ident(name) => match self.lookup(name) {
                Some(t) => t,
                None => {
                    let pos = locate_ident(self.src, name);
                    self.error_at(
                        pos,
                        format!("undeclared reference to '{name}' (in container '')"),
                    );
                    CTy::Unknown
                }
            },
            Expr::Select(s) => {
                let ot = self.check(&s.operand);
                let result = self.select(&ot, &s.field);
                if s.test { CTy::Bool } else { result }
            }
            Expr::List(l) => {
                let mut elem = None;
                for x in &l.elements {
                    let t = self.check(x);
                    elem.get_or_insert(t);
                }
                CTy::List(Box::new(elem.unwrap_or(CTy::Unknown)))
            }
            Expr::Map(m) => {
                let mut val = None;
                for en in &m.entries {
                    if let EntryExpr::MapEntry(me) = &en.expr {
                        self.check(&me.key);
                        let t = self.check(&me.value);
                        val.get_or_insert(t);
                    }
                }
                CTy::Map(Box::new(val.unwrap_or(CTy::Unknown)))
            }
            Expr::Struct(s) => {
                let pos = locate_ident(self.src, &s.type_name);
                self.error_at(
                    pos,
                    format!(
                        "undeclared reference to '{}' (in container '')",
                        s.type_name
                    ),
                );
                CTy::Unknown
            }
            Expr::Comprehension(c) => {
                let range = self.check(&c.iter_range).norm();
                let elem = match &range {
                    CTy::List(e) => (**e).clone(),
                    CTy::Map(_) => CTy::String,
                    CTy::Decl(t) if matches!(t.as_ref(), Ty::Object(_)) => CTy::String,
                    _ => CTy::Unknown,
                };
                let init = self.check(&c.accu_init);
                let accu = match init {
                    CTy::List(e) if matches!(*e, CTy::Unknown) => CTy::List(Box::new(CTy::Unknown)),
                    other => other,
                };
                let base = self.scopes.len();
                self.scopes.push((c.accu_var.clone(), accu));
                self.scopes.push((c.iter_var.clone(), elem.clone()));
                if let Some(v2) = &c.iter_var2 {
                    self.scopes.push((v2.clone(), CTy::Unknown));
                }
                self.check(&c.loop_cond);
                let step = self.check(&c.loop_step);
                self.scopes.truncate(base);
                let accu = step;
                self.scopes.push((c.accu_var.clone(), accu));
                let r = self.check(&c.result);
                self.scopes.truncate(base);
                r
            }
            Expr::Call(c) => self.call(c),
            Expr::Unspecified => CTy::Unknown,
        }
    }

    fn select(&mut self, ot: &CTy, field: &str) -> CTy {
        match ot.norm() {
            CTy::Decl(t) => match t.as_ref() {
                Ty::Object(_) => match t.field(field) {
                    Some(f) => CTy::Decl(f.ty.clone()),
                    None => {
                        let pos = locate_select(self.src, field);
                        self.error_at(pos, format!("undefined field '{field}'"));
                        CTy::Unknown
                    }
                },
                _ => CTy::Unknown,
            },
            CTy::Map(v) => *v,
            CTy::Optional(inner) => CTy::Optional(Box::new(self.select(&inner, field))),
            t @ (CTy::Bool
            | CTy::Int
            | CTy::UInt
            | CTy::Double
            | CTy::String
            | CTy::Bytes
            | CTy::Duration
            | CTy::Timestamp
            | CTy::List(_)) => {
                let name = t.name().unwrap_or_else(|| "list".into());
                let name = if name == "list" {
                    "list(dyn)".to_string()
                } else {
                    name
                };
                let pos = locate_select(self.src, field);
                self.error_at(
                    pos,
                    format!("type '{name}' does not support field selection"),
                );
                CTy::Unknown
            }
            _ => CTy::Unknown,
        }
    }

    fn call(&mut self, c: &CallExpr) -> CTy {
        let f = c.func_name.as_str();
        // Qualified names: `sets.contains(...)`, `optional.of(...)`.
        let mut qualified = None;
        if let Some(t) = &c.target
            && let Expr::Ident(ns) = &t.expr
            && NAMESPACES.contains(&ns.as_str())
            && self.lookup(ns).is_none()
        {
            qualified = Some(format!("{ns}.{f}"));
        }
        let target_ty = match (&c.target, &qualified) {
            (Some(t), None) => Some(self.check(t)),
            _ => None,
        };
        let args: Vec<CTy> = c.args.iter().map(|a| self.check(a)).collect();
        if f.starts_with('_') || f.starts_with('@') || f == "!_" || f == "-_" {
            return self.operator(f, &args);
        }
        let name = qualified.as_deref().unwrap_or(f);
        match function_result(name) {
            Some(CTy::Optional(_)) if name == "optional.of" => {
                CTy::Optional(Box::new(args.first().cloned().unwrap_or(CTy::Unknown)))
            }
            Some(r) => match (name, target_ty.map(|t| t.norm())) {
                ("value" | "orValue", Some(CTy::Optional(inner))) => *inner,
                ("or", Some(t @ CTy::Optional(_))) => t,
                _ => r,
            },
            None => {
                let pos = locate_call(self.src, f);
                self.error_at(
                    pos,
                    format!("undeclared reference to '{name}' (in container '')"),
                );
                CTy::Unknown
            }
        }
    }

    fn operator(&mut self, f: &str, args: &[CTy]) -> CTy {
        let (a, b) = match args {
            [a, b] => (a.norm(), b.norm()),
            [a] => (a.norm(), CTy::Unknown),
            _ => (CTy::Unknown, CTy::Unknown),
        };
        let known = |t: &CTy| t.name().is_some();
        let mismatch = |this: &mut Self, op: &str| {
            let (Some(x), Some(y)) = (a.name(), b.name()) else {
                return;
            };
            let pos = locate_op(this.src, op);
            this.error_at(
                pos,
                format!("found no matching overload for '{f}' applied to '({x}, {y})'"),
            );
        };
        match f {
            "_==_" | "_!=_" => {
                if known(&a)
                    && known(&b)
                    && a.name() != b.name()
                    && !matches!(a, CTy::Null)
                    && !matches!(b, CTy::Null)
                {
                    mismatch(self, if f == "_==_" { "==" } else { "!=" });
                }
                CTy::Bool
            }
            "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let ok = (a.is_numeric() && b.is_numeric()) || a.name() == b.name();
                if known(&a) && known(&b) && (!ok || matches!(a, CTy::Null)) {
                    let op = &f[1..f.len() - 1];
                    mismatch(self, op);
                }
                CTy::Bool
            }
            "_&&_" | "_||_" | "!_" | "@in" | "@not_strictly_false" => CTy::Bool,
            "_+_" | "_-_" | "_*_" | "_/_" | "_%_" => {
                let op = &f[1..f.len() - 1];
                use CTy::*;
                let r = match (f, &a, &b) {
                    (_, Int, Int) => Some(Int),
                    (_, UInt, UInt) => Some(UInt),
                    ("_+_" | "_-_" | "_*_" | "_/_", Double, Double) => Some(Double),
                    ("_+_", String, String) => Some(String),
                    ("_+_", Bytes, Bytes) => Some(Bytes),
                    ("_+_" | "_-_", Duration, Duration) => Some(Duration),
                    ("_+_", Timestamp, Duration) | ("_+_", Duration, Timestamp) => Some(Timestamp),
                    ("_-_", Timestamp, Duration) => Some(Timestamp),
                    ("_-_", Timestamp, Timestamp) => Some(Duration),
                    _ => None,
                };
                match r {
                    Some(t) => t,
                    None => {
                        if known(&a) && known(&b) {
                            mismatch(self, op);
                        }
                        match (&a, &b) {
                            (List(x), List(_)) if f == "_+_" => List(x.clone()),
                            _ => Unknown,
                        }
                    }
                }
            }
            "-_" => a,
            "_?_:_" => {
                let (t, e) = match args {
                    [_, t, e] => (t.norm(), e.norm()),
                    _ => (CTy::Unknown, CTy::Unknown),
                };
                if t.name().is_some() && t.name() == e.name() {
                    t
                } else if matches!(t, CTy::Dyn) || matches!(e, CTy::Dyn) {
                    CTy::Dyn
                } else if matches!(e, CTy::Unknown) {
                    t
                } else if matches!(t, CTy::Unknown) {
                    e
                } else {
                    CTy::Unknown
                }
            }
            "_[_]" => match a {
                CTy::List(e) | CTy::Map(e) => e.norm(),
                CTy::Dyn => CTy::Dyn,
                _ => CTy::Unknown,
            },
            "_[?_]" => match a {
                CTy::List(e) | CTy::Map(e) => CTy::Optional(Box::new(e.norm())),
                CTy::Decl(t) if matches!(t.as_ref(), Ty::Object(_)) => {
                    CTy::Optional(Box::new(CTy::Unknown))
                }
                CTy::Optional(inner) => CTy::Optional(inner),
                _ => CTy::Optional(Box::new(CTy::Unknown)),
            },
            _ => CTy::Unknown,
        }
    }
}

// ---------------------------------------------------------------------------
// Locating tokens for error positions.
// ---------------------------------------------------------------------------

/// A token of the source: its text and its 1-based (line, column).
struct Tok {
    text: String,
    line: isize,
    col: isize,
}

/// Splits a CEL source into identifier and punctuation tokens, skipping
/// string literals, numbers and comments.
fn tokens(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0usize, 1isize, 1isize);
    let advance = |i: &mut usize, line: &mut isize, col: &mut isize, chars: &[char]| {
        if chars.get(*i) == Some(&'\n') {
            *line += 1;
            *col = 1;
        } else {
            *col += 1;
        }
        *i += 1;
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '/' && chars.get(i + 1) == Some(&'/') {
            while i < chars.len() && chars[i] != '\n' {
                advance(&mut i, &mut line, &mut col, &chars);
            }
        } else if c == '"' || c == '\'' {
            let triple = chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c);
            let raw = i > 0 && matches!(chars[i - 1], 'r' | 'R');
            let n = if triple { 3 } else { 1 };
            for _ in 0..n {
                advance(&mut i, &mut line, &mut col, &chars);
            }
            while i < chars.len() {
                if chars[i] == '\\' && !raw {
                    advance(&mut i, &mut line, &mut col, &chars);
                    advance(&mut i, &mut line, &mut col, &chars);
                    continue;
                }
                if chars[i] == c
                    && (!triple || (chars.get(i + 1) == Some(&c) && chars.get(i + 2) == Some(&c)))
                {
                    for _ in 0..n {
                        advance(&mut i, &mut line, &mut col, &chars);
                    }
                    break;
                }
                if !triple && chars[i] == '\n' {
                    break;
                }
                advance(&mut i, &mut line, &mut col, &chars);
            }
        } else if c.is_ascii_alphabetic() || c == '_' {
            let (l, cc) = (line, col);
            let mut text = String::new();
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                text.push(chars[i]);
                advance(&mut i, &mut line, &mut col, &chars);
            }
            // String prefixes (r'', b'') are not identifiers.
            if matches!(chars.get(i), Some('"' | '\''))
                && matches!(
                    text.as_str(),
                    "r" | "R" | "b" | "B" | "rb" | "br" | "RB" | "BR"
                )
            {
                continue;
            }
            out.push(Tok {
                text,
                line: l,
                col: cc,
            });
        } else if c.is_ascii_digit() {
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                advance(&mut i, &mut line, &mut col, &chars);
            }
        } else if c.is_whitespace() {
            advance(&mut i, &mut line, &mut col, &chars);
        } else {
            let (l, cc) = (line, col);
            let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
            let text = if ["==", "!=", "<=", ">=", "&&", "||"].contains(&two.as_str()) {
                advance(&mut i, &mut line, &mut col, &chars);
                two
            } else {
                c.to_string()
            };
            advance(&mut i, &mut line, &mut col, &chars);
            out.push(Tok {
                text,
                line: l,
                col: cc,
            });
        }
    }
    out
}

fn locate_ident(src: &str, name: &str) -> Option<(isize, isize)> {
    let toks = tokens(src);
    toks.iter()
        .enumerate()
        .find(|(i, t)| {
            t.text == name && (*i == 0 || !matches!(toks[i - 1].text.as_str(), "." | "?"))
        })
        .map(|(_, t)| (t.line, t.col))
}

fn locate_select(src: &str, field: &str) -> Option<(isize, isize)> {
    let toks = tokens(src);
    for (i, t) in toks.iter().enumerate() {
        if t.text != "." {
            continue;
        }
        let next = match toks.get(i + 1) {
            Some(n) if n.text == "?" => toks.get(i + 2),
            n => n,
        };
        if next.is_some_and(|n| n.text == field) {
            return Some((t.line, t.col));
        }
    }
    None
}

fn locate_call(src: &str, name: &str) -> Option<(isize, isize)> {
    let toks = tokens(src);
    toks.iter()
        .enumerate()
        .find(|(i, t)| t.text == name && toks.get(i + 1).is_some_and(|n| n.text == "("))
        .and_then(|(i, _)| toks.get(i + 1))
        .map(|t| (t.line, t.col))
}

fn locate_op(src: &str, op: &str) -> Option<(isize, isize)> {
    tokens(src)
        .into_iter()
        .find(|t| t.text == op)
        .map(|t| (t.line, t.col))
}

// ---------------------------------------------------------------------------
// Values.
// ---------------------------------------------------------------------------

/// Converts a JSON value to CEL as `UnstructuredToVal` does for its type.
fn to_cel(v: &Value, ty: Option<&Ty>) -> CelValue {
    match (v, ty) {
        (Value::Null, _) => CelValue::Null,
        (Value::Number(n), Some(Ty::Double)) => CelValue::Float(n.as_f64().unwrap_or(0.0)),
        (Value::Number(n), _) => match n.as_i64() {
            Some(i) => CelValue::Int(i),
            None => match n.as_u64() {
                Some(u) => CelValue::UInt(u),
                None => {
                    let f = n.as_f64().unwrap_or(0.0);
                    if matches!(ty, Some(Ty::Int)) && f.fract() == 0.0 && f.abs() < 9.0e18 {
                        CelValue::Int(f as i64)
                    } else {
                        CelValue::Float(f)
                    }
                }
            },
        },
        (Value::Bool(b), _) => CelValue::Bool(*b),
        (Value::String(s), Some(Ty::Bytes)) => match base64_decode(s) {
            Some(b) => CelValue::Bytes(Arc::new(b)),
            None => CelValue::String(Arc::new(s.clone())),
        },
        (Value::String(s), Some(Ty::Duration)) => match parse_duration(s) {
            Some(d) => CelValue::Duration(d),
            None => CelValue::String(Arc::new(s.clone())),
        },
        (Value::String(s), Some(Ty::Timestamp)) => match parse_timestamp(s) {
            Some(t) => CelValue::Timestamp(t),
            None => CelValue::String(Arc::new(s.clone())),
        },
        (Value::String(s), _) => CelValue::String(Arc::new(s.clone())),
        (Value::Array(a), Some(Ty::List(e))) => {
            CelValue::List(Arc::new(a.iter().map(|x| to_cel(x, Some(e))).collect()))
        }
        (Value::Array(a), _) => {
            CelValue::List(Arc::new(a.iter().map(|x| to_cel(x, None)).collect()))
        }
        (Value::Object(m), Some(Ty::Map(vt))) => {
            map_to_cel(m, |k| Some((k.to_string(), Some(vt.as_ref()))))
        }
        (Value::Object(m), Some(t @ Ty::Object(fields))) => {
            let _ = t;
            map_to_cel(m, |k| {
                fields
                    .iter()
                    .find(|f| f.json == k)
                    .map(|f| (f.cel.clone(), Some(f.ty.as_ref())))
            })
        }
        (Value::Object(m), _) => map_to_cel(m, |k| Some((k.to_string(), None))),
    }
}

fn map_to_cel<'t>(
    m: &Map<String, Value>,
    key: impl Fn(&str) -> Option<(String, Option<&'t Ty>)>,
) -> CelValue {
    let mut out: HashMap<Key, CelValue> = HashMap::with_capacity(m.len());
    for (k, v) in m {
        if let Some((name, ty)) = key(k) {
            out.insert(Key::String(Arc::new(name)), to_cel(v, ty));
        }
    }
    CelValue::Map(CelMap { map: Arc::new(out) })
}

fn base64_decode(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut buf, mut bits) = (0u32, 0u32);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            b'=' => break,
            _ => return None,
        };
        buf = (buf << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
            buf &= (1 << bits) - 1;
        }
    }
    Some(out)
}

/// Parses a Go duration (`1h30m`, `-1.5s`, `300ms`).
fn parse_duration(s: &str) -> Option<chrono::Duration> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(chrono::Duration::zero());
    }
    if rest.is_empty() {
        return None;
    }
    let mut nanos: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_end] {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => return None,
        };
        rest = &rest[unit_end..];
        nanos += num * mult;
    }
    if !nanos.is_finite() || nanos > 9.2e18 {
        return None;
    }
    let d = chrono::Duration::nanoseconds(nanos as i64);
    Some(if neg { -d } else { d })
}

fn parse_timestamp(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    chrono::DateTime::parse_from_rfc3339(&format!("{s}T00:00:00Z")).ok()
}

/// The type value for `type(x)`, compared against the type identifiers.
fn type_value(name: &str) -> CelValue {
    CelValue::String(Arc::new(format!("{TYPE_TAG}{name}")))
}

fn type_of(v: &CelValue) -> &'static str {
    match v {
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        CelValue::Function(..) => "function",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::String(s) if s.starts_with(TYPE_TAG) => "type",
        CelValue::String(_) => "string",
        CelValue::Bytes(_) => "bytes",
        CelValue::Bool(_) => "bool",
        CelValue::Duration(_) => "google.protobuf.Duration",
        CelValue::Timestamp(_) => "google.protobuf.Timestamp",
        CelValue::Opaque(_) => "optional_type",
        CelValue::Null => "null_type",
    }
}

/// cel-go's message for an evaluation error.
fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::IndexOutOfBounds(v) => format!("index out of bounds: {}", plain(v)),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::UndeclaredReference(r) => format!("no such attribute(s): {r}"),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        ExecutionError::NoSuchOverload
        | ExecutionError::UnsupportedBinaryOperator(..)
        | ExecutionError::UnsupportedUnaryOperator(..)
        | ExecutionError::ValuesNotComparable(..)
        | ExecutionError::UnexpectedType { .. }
        | ExecutionError::UnsupportedTargetType { .. }
        | ExecutionError::NotSupportedAsMethod { .. }
        | ExecutionError::UnsupportedIndex(..)
        | ExecutionError::UnsupportedMapIndex(..)
        | ExecutionError::UnsupportedListIndex(..)
        | ExecutionError::UnsupportedKeyType(..)
        | ExecutionError::InvalidArgumentCount { .. }
        | ExecutionError::MissingArgumentOrTarget => "no such overload".into(),
        other => other.to_string(),
    }
}

fn plain(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        CelValue::Float(f) => f.to_string(),
        CelValue::String(s) => s.to_string(),
        CelValue::Bool(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Public API.
// ---------------------------------------------------------------------------

/// Where rule errors are ratcheted: the correlation of the current node with
/// its old value (kube's `ratchetingOptions`).
#[derive(Clone, Copy)]
struct Corr<'a> {
    /// The current node's new and old values, if correlated.
    cur: Option<(&'a Value, &'a Value)>,
    /// Whether the nearest correlated ancestor is unchanged, if any.
    parent_equal: Option<bool>,
}

impl<'a> Corr<'a> {
    fn should_ratchet(&self) -> bool {
        match self.cur {
            Some((n, o)) => n == o,
            None => self.parent_equal.unwrap_or(false),
        }
    }

    fn child(&self, next: Option<(&'a Value, &'a Value)>) -> Corr<'a> {
        match self.cur {
            None => *self,
            Some((n, o)) => Corr {
                cur: next,
                parent_equal: Some(n == o),
            },
        }
    }
}

impl CelValidator {
    /// Compiles every x-kubernetes-validations rule in the schema. Compile
    /// errors are CRD validation errors, returned as FieldErrors at the rule's
    /// path in the CRD (e.g.
    /// `spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`
    /// with `compilation failed: ...`). The rule-shape checks kube makes in
    /// the same place (empty rule, message/messageExpression/reason/fieldPath
    /// checks, `optionalOldSelf` without `oldSelf`, `oldSelf` under a non-map
    /// list) are reported too. `schema_path` is the CRD field path of the
    /// schema root (e.g. "spec.versions[0].schema.openAPIV3Schema").
    pub fn compile(
        schema: &serde_json::Value,
        schema_path: &str,
    ) -> Result<CelValidator, Vec<FieldError>> {
        if !has_rules(schema, 0) {
            return Ok(CelValidator {
                root: None,
                depth: 0,
                ctx: Context::empty(),
            });
        }
        let run = || {
            catch_unwind(AssertUnwindSafe(|| {
                let mut c = Compiler {
                    errs: Vec::new(),
                    depth: 0,
                };
                let ty = schema_ty(schema, true, 0);
                let root = c.node(schema, schema, true, ty, schema_path, None, 0);
                (root, c.errs, c.depth)
            }))
        };
        let result = std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(BIG_STACK)
                .spawn_scoped(s, run)
                .map(|h| h.join())
        });
        let (root, errs, depth) = match result {
            Ok(Ok(Ok(r))) => r,
            Ok(Ok(Err(_))) | Ok(Err(_)) => {
                return Err(vec![FieldError::internal(
                    format!("{schema_path}.x-kubernetes-validations"),
                    "internal error: failed to compile x-kubernetes-validations rules",
                )]);
            }
            // No thread could be started: compile inline.
            Err(_) => match run() {
                Ok(r) => r,
                Err(_) => {
                    return Err(vec![FieldError::internal(
                        format!("{schema_path}.x-kubernetes-validations"),
                        "internal error: failed to compile x-kubernetes-validations rules",
                    )]);
                }
            },
        };
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(CelValidator {
            root,
            depth,
            ctx: base_context(),
        })
    }

    /// Whether there are no rules (fast path).
    pub fn is_empty(&self) -> bool {
        self.root.is_none()
    }

    /// Evaluates all rules against the object (and the old object for
    /// transition rules: rules using `oldSelf` run only on update and only
    /// where the old value exists at that path, unless `optionalOldSelf` is
    /// set). Paths are relative to the object root (`spec.items[2]`,
    /// `spec.labels[key]`). On update, failures of rules without `oldSelf` at
    /// nodes whose value is unchanged are ratcheted (dropped), as kube 1.32
    /// does with CRDValidationRatcheting (kube returns them as warnings).
    pub fn validate(
        &self,
        obj: &serde_json::Value,
        old: Option<&serde_json::Value>,
    ) -> Vec<FieldError> {
        let Some(root) = &self.root else {
            return Vec::new();
        };
        let run = || {
            let mut errs = Vec::new();
            let corr = Corr {
                cur: old.map(|o| (obj, o)),
                parent_equal: None,
            };
            self.node(root, "", obj, old, corr, &mut errs);
            errs
        };
        if self.depth <= INLINE_DEPTH_LIMIT {
            return run();
        }
        let result = std::thread::scope(|s| {
            std::thread::Builder::new()
                .stack_size(BIG_STACK)
                .spawn_scoped(s, run)
                .map(|h| h.join())
        });
        match result {
            Ok(Ok(errs)) => errs,
            Ok(Err(_)) => vec![FieldError::internal("", "CEL rule evaluation failed")],
            Err(e) => vec![FieldError::internal(
                "",
                format!("CEL rule evaluation could not start: {e}"),
            )],
        }
    }

    fn node<'a>(
        &self,
        n: &Node,
        path: &str,
        obj: &'a Value,
        old: Option<&'a Value>,
        corr: Corr<'a>,
        errs: &mut Vec<FieldError>,
    ) {
        if obj.is_null() {
            return;
        }
        let old = old.filter(|o| !o.is_null());
        self.expressions(n, path, obj, old, corr, errs);
        for a in &n.all_of {
            let c = Corr {
                cur: None,
                parent_equal: corr.parent_equal,
            };
            self.node(a, path, obj, old, c, errs);
        }
        match obj {
            Value::Array(items) => {
                let Some(item_node) = &n.items else { return };
                let old_items = old.and_then(Value::as_array);
                for (i, item) in items.iter().enumerate() {
                    let old_item = old_items.and_then(|o| self.correlate(n, item, o));
                    let old_for_corr = old_items.and_then(|o| match n.list_type.as_deref() {
                        Some("map") => self.correlate(n, item, o),
                        Some("set") => o.iter().find(|x| *x == item),
                        _ => None,
                    });
                    let c = corr.child(old_for_corr.map(|o| (item, o)));
                    self.node(item_node, &format!("{path}[{i}]"), item, old_item, c, errs);
                }
            }
            Value::Object(m) => {
                let old_map = old.and_then(Value::as_object);
                if let Some(ap) = &n.additional {
                    for (k, v) in m {
                        let ov = old_map.and_then(|o| o.get(k));
                        let c = corr.child(ov.map(|o| (v, o)));
                        self.node(ap, &format!("{path}[{k}]"), v, ov, c, errs);
                    }
                }
                if !n.properties.is_empty() {
                    for (k, v) in m {
                        let Some((_, pn)) = n.properties.iter().find(|(name, _)| name == k) else {
                            continue;
                        };
                        let ov = old_map.and_then(|o| o.get(k));
                        let c = corr.child(ov.map(|o| (v, o)));
                        let p = if path.is_empty() {
                            k.clone()
                        } else {
                            format!("{path}.{k}")
                        };
                        self.node(pn, &p, v, ov, c, errs);
                    }
                }
            }
            _ => {}
        }
    }

    /// The old item of a `x-kubernetes-list-type: map` list with the same keys.
    fn correlate<'a>(&self, n: &Node, item: &Value, old: &'a [Value]) -> Option<&'a Value> {
        if n.list_type.as_deref() != Some("map") || n.list_map_keys.is_empty() {
            return None;
        }
        let key_of = |v: &Value| -> Option<Vec<Value>> {
            let o = v.as_object()?;
            Some(
                n.list_map_keys
                    .iter()
                    .map(|k| o.get(k).cloned().unwrap_or(Value::Null))
                    .collect(),
            )
        };
        let want = key_of(item)?;
        old.iter().find(|o| key_of(o).as_ref() == Some(&want))
    }

    fn expressions(
        &self,
        n: &Node,
        path: &str,
        obj: &Value,
        old: Option<&Value>,
        corr: Corr<'_>,
        errs: &mut Vec<FieldError>,
    ) {
        let ty_name = n.type_name.as_str();
        // kube validates custom resources with a nil root path, printed `<nil>`.
        let path = if path.is_empty() { "<nil>" } else { path };
        if let Some(e) = &n.init_error {
            errs.push(FieldError::invalid(
                path,
                ty_name,
                format!("rule compiler initialization error: {e}"),
            ));
            return;
        }
        if n.rules.is_empty() {
            return;
        }
        let ty = n.ty.as_deref();
        let self_val = to_cel(obj, ty);
        let old_val = old.map(|o| to_cel(o, ty));
        let mut scope = self.ctx.new_inner_scope();
        scope.add_variable_from_value(SELF, self_val);
        let with_old = scope_with_old(&scope, old_val.clone(), false);
        let with_opt_old = scope_with_old(&scope, old_val, true);
        for rule in &n.rules {
            let Some(program) = &rule.program else {
                continue;
            };
            if rule.uses_old_self && old.is_none() && !rule.optional_old_self {
                continue;
            }
            let ctx = if rule.optional_old_self {
                &with_opt_old
            } else {
                &with_old
            };
            let result = catch_unwind(AssertUnwindSafe(|| ctx.resolve(program)));
            let rule_str = rule_error_string(rule);
            match result {
                Ok(Ok(CelValue::Bool(true))) => continue,
                Ok(Ok(CelValue::Bool(false))) => {}
                Ok(Ok(_)) => {
                    errs.push(FieldError::invalid(
                        path,
                        ty_name,
                        format!("'no such overload': call arguments did not match a supported operator, function or macro signature for rule: {rule_str}"),
                    ));
                    continue;
                }
                Ok(Err(e)) => {
                    let text = error_text(&e);
                    let detail = if text.starts_with("no such overload") {
                        format!(
                            "'{text}': call arguments did not match a supported operator, function or macro signature for rule: {rule_str}"
                        )
                    } else {
                        format!("{text} evaluating rule: {rule_str}")
                    };
                    errs.push(FieldError::invalid(path, ty_name, detail));
                    continue;
                }
                Err(_) => {
                    errs.push(FieldError::internal(
                        path,
                        format!("internal error evaluating rule: {rule_str}"),
                    ));
                    continue;
                }
            }
            let fpath = match &rule.field_path {
                None => path.to_string(),
                Some(fp) if path == "<nil>" => fp.clone(),
                Some(fp) => format!("{path}.{fp}"),
            };
            let mut detail = None;
            if let Some(me) = &rule.message_expression
                && let Ok(Ok(CelValue::String(s))) =
                    catch_unwind(AssertUnwindSafe(|| with_old.resolve(me)))
            {
                let t = s.trim();
                if !t.is_empty() && t.len() <= MAX_MESSAGE_EXPRESSION_BYTES && !t.contains('\n') {
                    detail = Some(t.to_string());
                }
            }
            let detail = detail.unwrap_or_else(|| {
                if rule.message.is_empty() {
                    format!("failed rule: {rule_str}")
                } else {
                    rule.message.trim().to_string()
                }
            });
            let err = match rule.reason.as_deref() {
                Some("FieldValueForbidden") => FieldError::forbidden(fpath, detail),
                Some("FieldValueRequired") => FieldError::required(fpath, detail),
                Some("FieldValueDuplicate") => FieldError::duplicate(fpath, ty_name),
                _ => FieldError::new(
                    FieldErrorKind::Invalid,
                    fpath,
                    Some(Value::String(ty_name.to_string())),
                    detail,
                ),
            };
            if !rule.uses_old_self && corr.should_ratchet() {
                continue;
            }
            errs.push(err);
        }
    }
}

/// A child scope of `scope` with `oldSelf` bound (as an optional when
/// `optional`); without an old value and not optional, `oldSelf` is unbound.
fn scope_with_old<'a>(
    scope: &'a Context<'a>,
    old: Option<CelValue>,
    optional: bool,
) -> Context<'a> {
    let mut c = scope.new_inner_scope();
    match (old, optional) {
        (Some(v), false) => c.add_variable_from_value(OLD_SELF, v),
        (Some(v), true) => c.add_variable_from_value(
            OLD_SELF,
            CelValue::Opaque(Arc::new(kube_cel::cel::objects::OptionalValue::of(v))),
        ),
        (None, true) => c.add_variable_from_value(
            OLD_SELF,
            CelValue::Opaque(Arc::new(kube_cel::cel::objects::OptionalValue::none())),
        ),
        (None, false) => {}
    }
    c
}

fn rule_error_string(rule: &Rule) -> String {
    if rule.message.is_empty() {
        rule.rule.trim().to_string()
    } else {
        rule.message.trim().to_string()
    }
}

/// Whether any node of the schema has rules (`hasXValidations`).
fn has_rules(s: &Value, depth: usize) -> bool {
    if depth > MAX_SCHEMA_DEPTH {
        return true;
    }
    if s.get("x-kubernetes-validations")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
    {
        return true;
    }
    if s.get("items").is_some_and(|i| has_rules(i, depth + 1))
        || s.get("additionalProperties")
            .is_some_and(|a| a.is_object() && has_rules(a, depth + 1))
    {
        return true;
    }
    if let Some(p) = s.get("properties").and_then(Value::as_object)
        && p.values().any(|v| has_rules(v, depth + 1))
    {
        return true;
    }
    s.get("allOf")
        .and_then(Value::as_array)
        .is_some_and(|a| a.iter().any(|v| has_rules(v, depth + 1)))
}

/// `type(x)`.
fn cel_type(This(v): This<CelValue>) -> Result<CelValue, ExecutionError> {
    Ok(type_value(type_of(&v)))
}

/// `dyn(x)`: the identity.
fn cel_dyn(This(v): This<CelValue>) -> Result<CelValue, ExecutionError> {
    Ok(v)
}

/// The root context: CEL standard functions, the Kubernetes libraries, and
/// `type`/`dyn` plus the type identifiers.
fn base_context() -> Context<'static> {
    let mut ctx = Context::default();
    ctx.register_all();
    ctx.add_function("type", cel_type);
    ctx.add_function("dyn", cel_dyn);
    for t in TYPE_IDENTS {
        ctx.add_variable_from_value(*t, type_value(t));
    }
    ctx
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ROOT: &str = "spec.versions[0].schema.openAPIV3Schema";

    fn schema(spec: Value) -> Value {
        json!({"type": "object", "properties": {"spec": spec}})
    }

    fn compile(s: &Value) -> CelValidator {
        match CelValidator::compile(s, ROOT) {
            Ok(v) => v,
            Err(e) => panic!("compile failed: {e:?}"),
        }
    }

    fn msgs(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn compile_err(s: &Value) -> Vec<String> {
        match CelValidator::compile(s, ROOT) {
            Ok(_) => panic!("expected compile error"),
            Err(e) => msgs(&e),
        }
    }

    fn replicas_schema() -> Value {
        schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.minReplicas <= self.replicas", "message": "replicas must be at least minReplicas"},
                {"rule": "self.replicas < 100", "messageExpression": "'replicas is ' + string(self.replicas)"}
            ],
            "properties": {
                "replicas": {"type": "integer"},
                "minReplicas": {"type": "integer"}
            }
        }))
    }

    #[test]
    fn object_rule_message() {
        let v = compile(&replicas_schema());
        assert!(!v.is_empty());
        assert!(
            v.validate(&json!({"spec": {"replicas": 3, "minReplicas": 1}}), None)
                .is_empty()
        );
        let e = v.validate(&json!({"spec": {"replicas": 1, "minReplicas": 2}}), None);
        assert_eq!(
            msgs(&e),
            ["spec: Invalid value: \"object\": replicas must be at least minReplicas"]
        );
    }

    #[test]
    fn message_expression() {
        let v = compile(&replicas_schema());
        let e = v.validate(&json!({"spec": {"replicas": 150, "minReplicas": 2}}), None);
        assert_eq!(
            msgs(&e),
            ["spec: Invalid value: \"object\": replicas is 150"]
        );
    }

    #[test]
    fn missing_field_is_evaluation_error() {
        let v = compile(&replicas_schema());
        let e = v.validate(&json!({"spec": {"replicas": 1}}), None);
        assert_eq!(
            msgs(&e),
            [
                "spec: Invalid value: \"object\": no such key: minReplicas evaluating rule: replicas must be at least minReplicas"
            ]
        );
    }

    #[test]
    fn has_macro_and_default_message() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "!has(self.a) || self.a.startsWith('x')"}],
            "properties": {"a": {"type": "string"}}
        }));
        let v = compile(&s);
        assert!(v.validate(&json!({"spec": {}}), None).is_empty());
        assert!(v.validate(&json!({"spec": {"a": "xy"}}), None).is_empty());
        assert_eq!(
            msgs(&v.validate(&json!({"spec": {"a": "y"}}), None)),
            [
                "spec: Invalid value: \"object\": failed rule: !has(self.a) || self.a.startsWith('x')"
            ]
        );
    }

    #[test]
    fn transition_rule() {
        let s = schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self == oldSelf", "message": "value is immutable"}
            ]}, "other": {"type": "string"}}
        }));
        let v = compile(&s);
        let new = json!({"spec": {"name": "b"}});
        assert!(v.validate(&new, None).is_empty(), "not run on create");
        assert!(
            v.validate(&new, Some(&json!({"spec": {}}))).is_empty(),
            "no old value"
        );
        assert!(
            v.validate(&new, Some(&json!({"spec": {"name": "b"}})))
                .is_empty()
        );
        assert_eq!(
            msgs(&v.validate(&new, Some(&json!({"spec": {"name": "a"}})))),
            ["spec.name: Invalid value: \"string\": value is immutable"]
        );
    }

    #[test]
    fn optional_old_self() {
        let s = schema(json!({
            "type": "object",
            "properties": {"name": {"type": "string", "x-kubernetes-validations": [
                {"rule": "!oldSelf.hasValue() || self == oldSelf.value()", "optionalOldSelf": true, "message": "immutable"}
            ]}}
        }));
        let v = compile(&s);
        let new = json!({"spec": {"name": "b"}});
        assert!(v.validate(&new, None).is_empty());
        assert_eq!(
            v.validate(&new, Some(&json!({"spec": {"name": "a"}})))
                .len(),
            1
        );
    }

    #[test]
    fn list_items_and_map_values() {
        let s = schema(json!({
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self >= 0", "message": "must be non-negative"}
                ]}},
                "labels": {"type": "object", "additionalProperties": {"type": "string", "x-kubernetes-validations": [
                    {"rule": "self.size() <= 3"}
                ]}},
                "list": {"type": "array", "items": {"type": "string"}, "x-kubernetes-validations": [
                    {"rule": "self.all(x, x != 'bad')", "fieldPath": ".foo", "reason": "FieldValueForbidden", "message": "no bad"}
                ]}
            }
        }));
        // fieldPath .foo is not a valid path of a string list.
        let e = compile_err(&s);
        assert_eq!(
            e,
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[list].x-kubernetes-validations[0].fieldPath: Invalid value: \".foo\": fieldPath must be a valid path"
            ]
        );
        let mut s = s;
        s["properties"]["spec"]["properties"]["list"]["x-kubernetes-validations"][0]
            .as_object_mut()
            .map(|o| o.remove("fieldPath"));
        let v = compile(&s);
        let e = v.validate(
            &json!({"spec": {"items": [1, -2, 3], "labels": {"a": "xy", "k": "long"}, "list": ["ok", "bad"]}}),
            None,
        );
        let mut m = msgs(&e);
        m.sort();
        assert_eq!(
            m,
            [
                "spec.items[1]: Invalid value: \"integer\": must be non-negative",
                "spec.labels[k]: Invalid value: \"string\": failed rule: self.size() <= 3",
                "spec.list: Forbidden: no bad",
            ]
        );
    }

    #[test]
    fn field_path_and_reason() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.a.size() > 0", "fieldPath": ".a", "reason": "FieldValueRequired", "message": "a needed"},
                {"rule": "self.m.all(k, k != 'x')", "fieldPath": ".m['x']", "message": "no x"}
            ],
            "properties": {"a": {"type": "string"}, "m": {"type": "object", "additionalProperties": {"type": "string"}}}
        }));
        let v = compile(&s);
        let e = v.validate(&json!({"spec": {"a": "", "m": {"x": "1"}}}), None);
        assert_eq!(
            msgs(&e),
            [
                "spec.a: Required value: a needed",
                "spec.m[x]: Invalid value: \"object\": no x"
            ]
        );
    }

    #[test]
    fn compile_errors() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.replicas >"}],
            "properties": {"replicas": {"type": "integer"}}
        }));
        let e = compile_err(&s);
        assert_eq!(e.len(), 1);
        assert!(
            e[0].starts_with("spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:16: Syntax error: mismatched input '<EOF>'"),
            "{}",
            e[0]
        );
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.foo == 1"}, {"rule": "self.replicas == bar"}, {"rule": "self.replicas"}, {"rule": "self.replicas + 'a' == 'b'"}],
            "properties": {"replicas": {"type": "integer"}}
        }));
        let e = compile_err(&s);
        assert_eq!(e.len(), 4, "{e:#?}");
        assert!(e[0].ends_with("compilation failed: ERROR: <input>:1:5: undefined field 'foo'\n | self.foo == 1\n | ....^"), "{}", e[0]);
        assert!(e[1].ends_with("compilation failed: ERROR: <input>:1:18: undeclared reference to 'bar' (in container '')\n | self.replicas == bar\n | .................^"), "{}", e[1]);
        assert!(
            e[2].ends_with(": cel expression must evaluate to a bool"),
            "{}",
            e[2]
        );
        assert!(
            e[3].contains("found no matching overload for '_+_' applied to '(int, string)'"),
            "{}",
            e[3]
        );
    }

    #[test]
    fn rule_shape_errors() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": " "},
                {"rule": "true", "reason": "Bogus"},
                {"rule": "true", "optionalOldSelf": true}
            ]
        }));
        let e = compile_err(&s);
        let p = "spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations";
        assert_eq!(
            e,
            [
                format!("{p}[0].rule: Required value: rule is not specified"),
                format!(
                    "{p}[1].reason: Unsupported value: \"Bogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""
                ),
                format!(
                    "{p}[2].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"
                ),
            ]
        );
        let s = schema(
            json!({"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}),
        );
        let e = compile_err(&s);
        assert_eq!(
            e,
            [
                "spec.versions[0].schema.openAPIV3Schema.properties[spec].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within spec.versions[0].schema.openAPIV3Schema.properties[spec]"
            ]
        );
    }

    #[test]
    fn map_list_correlation_and_ratcheting() {
        let s = schema(json!({
            "type": "array",
            "x-kubernetes-list-type": "map",
            "x-kubernetes-list-map-keys": ["name"],
            "items": {"type": "object", "properties": {
                "name": {"type": "string"},
                "v": {"type": "integer", "x-kubernetes-validations": [
                    {"rule": "self >= oldSelf", "message": "no decrease"},
                    {"rule": "self < 10", "message": "too big"}
                ]}
            }}
        }));
        let v = compile(&s);
        let old = json!({"spec": [{"name": "a", "v": 5}, {"name": "b", "v": 20}]});
        let new = json!({"spec": [{"name": "b", "v": 20}, {"name": "a", "v": 4}]});
        // b is unchanged (ratcheted); a decreased.
        assert_eq!(
            msgs(&v.validate(&new, Some(&old))),
            ["spec[1].v: Invalid value: \"integer\": no decrease"]
        );
        assert_eq!(v.validate(&new, None).len(), 1, "create reports too big");
    }

    #[test]
    fn resource_root_and_embedded() {
        let s = json!({
            "type": "object",
            "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('ok')", "message": "bad name"}],
            "properties": {"spec": {"type": "object"}}
        });
        let v = compile(&s);
        assert!(
            v.validate(&json!({"metadata": {"name": "ok-1"}, "spec": {}}), None)
                .is_empty()
        );
        assert_eq!(
            msgs(&v.validate(&json!({"metadata": {"name": "x"}}), None)),
            ["<nil>: Invalid value: \"object\": bad name"]
        );
    }

    #[test]
    fn int_or_string_and_escaping() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "type(self.port) == int ? self.port > 0 : self.port.endsWith('%')", "message": "bad port"},
                {"rule": "self.foo__dash__bar == 'x' && self.__namespace__ == 'n'", "message": "bad names"}
            ],
            "properties": {
                "port": {"x-kubernetes-int-or-string": true},
                "foo-bar": {"type": "string"},
                "namespace": {"type": "string"}
            }
        }));
        let v = compile(&s);
        assert!(
            v.validate(
                &json!({"spec": {"port": 5, "foo-bar": "x", "namespace": "n"}}),
                None
            )
            .is_empty()
        );
        assert!(
            v.validate(
                &json!({"spec": {"port": "5%", "foo-bar": "x", "namespace": "n"}}),
                None
            )
            .is_empty()
        );
        assert_eq!(
            v.validate(
                &json!({"spec": {"port": "5", "foo-bar": "x", "namespace": "n"}}),
                None
            )
            .len(),
            1
        );
    }

    #[test]
    fn formats_and_bind() {
        let s = schema(json!({
            "type": "object",
            "x-kubernetes-validations": [
                {"rule": "self.timeout < duration('1h')", "message": "timeout"},
                {"rule": "self.at > timestamp('2020-01-01T00:00:00Z')", "message": "at"},
                {"rule": "cel.bind(x, self.timeout, x > duration('1s'))", "message": "bind"},
                {"rule": "self.?missing.orValue('d') == 'd'", "message": "opt"}
            ],
            "properties": {
                "timeout": {"type": "string", "format": "duration"},
                "at": {"type": "string", "format": "date-time"},
                "missing": {"type": "string"}
            }
        }));
        let v = compile(&s);
        assert_eq!(
            msgs(&v.validate(
                &json!({"spec": {"timeout": "30m", "at": "2021-01-01T00:00:00Z"}}),
                None
            )),
            Vec::<String>::new()
        );
        assert_eq!(
            v.validate(
                &json!({"spec": {"timeout": "2h", "at": "2021-01-01T00:00:00Z"}}),
                None
            )
            .len(),
            1
        );
    }

    #[test]
    fn no_rules_is_empty() {
        let v = compile(&schema(json!({"type": "object"})));
        assert!(v.is_empty());
        assert!(v.validate(&json!({"spec": {}}), None).is_empty());
    }

    #[test]
    fn inline_depth_fits_small_stack() {
        let nested_all = (0..7).fold("x > 0".to_string(), |acc, i| {
            format!("self.l.all(v{i}, {acc})")
        });
        let chain = vec!["1"; INLINE_DEPTH_LIMIT - 2].join(" + ") + " > 0";
        let ternary = (0..10).fold("true".to_string(), |acc, _| {
            format!("self.l.size() > 0 ? ({acc}) : false")
        });
        let lists = (0..10).fold("1".to_string(), |acc, _| format!("[{acc}]")) + " != []";
        for r in [nested_all.replace("x > 0", "v0 > 0"), chain, ternary, lists] {
            let s = schema(
                json!({"type": "object", "x-kubernetes-validations": [{"rule": r.clone()}],
                "properties": {"l": {"type": "array", "items": {"type": "integer"}}}}),
            );
            let v = compile(&s);
            let h = std::thread::Builder::new()
                .stack_size(2 * 1024 * 1024)
                .spawn(move || v.validate(&json!({"spec": {"l": [1, 2]}}), None));
            let errs = h.map(|h| h.join());
            assert!(matches!(&errs, Ok(Ok(e)) if e.is_empty()), "{r}: {errs:?}");
        }
    }

    #[test]
    fn deep_expressions_rejected_or_run_on_big_stack() {
        let long = vec!["1"; 20_000].join("+") + " > 0";
        let s = schema(json!({"type": "object", "x-kubernetes-validations": [{"rule": long}]}));
        let e = compile_err(&s);
        assert!(
            e[0].ends_with("expression recursion limit exceeded: 250"),
            "{}",
            e[0]
        );
        let mid = vec!["1"; 200].join("+") + " > 0";
        let s = schema(json!({"type": "object", "x-kubernetes-validations": [{"rule": mid}]}));
        assert!(compile(&s).validate(&json!({"spec": {}}), None).is_empty());
    }

    #[test]
    fn fuzz_random_rules_and_objects() {
        const ATOMS: &[&str] = &[
            "self",
            "oldSelf",
            ".",
            "a",
            "l",
            "m",
            "s",
            "(",
            ")",
            "[",
            "]",
            "{",
            "}",
            ",",
            ":",
            "+",
            "-",
            "*",
            "/",
            "%",
            "==",
            "!=",
            "<",
            ">=",
            "&&",
            "||",
            "!",
            "?",
            "1",
            "0",
            "-1",
            "2.5",
            "'x'",
            "\"y\"",
            "b'z'",
            "true",
            "null",
            "size",
            "has",
            "all",
            "exists",
            "map",
            "filter",
            "x",
            "in",
            "matches",
            "'('",
            "int",
            "string",
            "type",
            "dyn",
            "cel",
            "bind",
            "optional",
            "none",
            "of",
            "orValue",
            "hasValue",
            "value",
            "startsWith",
            "9223372036854775807",
            "duration",
            "'1h'",
            "timestamp",
            "quantity",
            "'1Gi'",
            "url",
            "sets",
            "contains",
            "?.",
            "[?",
            "\u{1F600}",
            "\n",
            "//",
            "'''",
            "__dash__",
            "Foo{",
        ];
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let base = json!({
            "type": "object",
            "properties": {
                "a": {"type": "integer"},
                "s": {"type": "string"},
                "l": {"type": "array", "items": {"type": "integer"}},
                "m": {"type": "object", "additionalProperties": {"x-kubernetes-int-or-string": true}}
            }
        });
        let objs = [
            json!({"spec": {"a": 1, "s": "x", "l": [1, 2], "m": {"k": "v", "n": 3}}}),
            json!({"spec": {"a": "wrong", "l": {"x": 1}, "m": [1]}}),
            json!({"spec": null}),
            json!({"spec": [{"a": 1, "l": [3]}, [2]]}),
            json!(7),
        ];
        const TERMS: &[&str] = &[
            "self",
            "oldSelf",
            "self.a",
            "self.s",
            "self.l",
            "self.m",
            "self.m.k",
            "self.l[1]",
            "1",
            "2.5",
            "'x'",
            "true",
            "null",
            "[1, 2]",
            "{'k': 1}",
            "self.m['n']",
            "oldSelf.a",
            "self.?a",
            "optional.none()",
            "dyn(self.m.n)",
            "type(self.a)",
            "int",
            "duration('1h')",
            "quantity('1Gi')",
            "b'z'",
            "9223372036854775807",
            "-1",
            "x",
        ];
        const BIN: &[&str] = &[
            "+", "-", "*", "/", "%", "==", "!=", "<", ">=", "&&", "||", "in",
        ];
        const WRAP: &[&str] = &[
            "size({})",
            "!{}",
            "({})",
            "{}.size()",
            "string({})",
            "int({})",
            "has({}.a)",
            "{}.all(x, x > 0)",
            "{}.exists(x, x == 'k')",
            "{}.map(x, x)",
            "{}.filter(x, x)",
            "{}.orValue(1)",
            "{}.hasValue()",
            "{}.startsWith('x')",
            "{}.matches('(')",
            "cel.bind(x, {}, x)",
            "{}.isGreaterThan(quantity('1'))",
            "-{}",
            "{} ? 1 : 2",
            "{}[0]",
            "{}.?k",
            "sets.contains({}, [1])",
        ];
        fn gen_expr(next: &mut dyn FnMut() -> u64, depth: u32) -> String {
            let pick = |n: u64, len: usize| (n % len as u64) as usize;
            match if depth == 0 { 0 } else { next() % 3 } {
                0 => TERMS[pick(next(), TERMS.len())].to_string(),
                1 => format!(
                    "{} {} {}",
                    gen_expr(next, depth - 1),
                    BIN[pick(next(), BIN.len())],
                    gen_expr(next, depth - 1)
                ),
                _ => WRAP[pick(next(), WRAP.len())].replace("{}", &gen_expr(next, depth - 1)),
            }
        }
        let mut compiled = 0;
        for i in 0..800 {
            let rule = if i % 4 == 0 {
                let n = (next() % 12 + 1) as usize;
                let parts: Vec<&str> = (0..n)
                    .map(|_| ATOMS[(next() % ATOMS.len() as u64) as usize])
                    .collect();
                parts.join(if next() % 2 == 0 { " " } else { "" })
            } else {
                gen_expr(&mut next, 3)
            };
            let mut s = base.clone();
            s["x-kubernetes-validations"] =
                json!([{"rule": rule, "message": "m", "messageExpression": "string(self)"}]);
            let mut s = schema(s);
            if next() % 3 == 0 {
                let items = s["properties"]["spec"].clone();
                s["properties"]["spec"] = json!({"type": "array", "items": items,
                    "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["a"]});
            }
            if let Ok(v) = CelValidator::compile(&s, ROOT) {
                compiled += 1;
                for o in &objs {
                    for old in &objs {
                        let _ = v.validate(o, Some(old));
                    }
                    let _ = v.validate(o, None);
                }
            }
        }
        assert!(compiled > 100, "{compiled}");
    }

    #[test]
    fn send_sync() {
        fn check<T: Send + Sync>() {}
        check::<CelValidator>();
    }

    #[test]
    fn hostile_inputs_do_not_panic() {
        let rules = [
            "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))))",
            "Foo{a: 1} == 1",
            "self.x.y.z",
            "1/0 == 1",
            "[1][5] == 1",
            "self + 1 == 2",
            "'\u{1F600}' == self.x.",
            "9223372036854775807 + 1 > 0",
            "dyn(self).foo.bar == 1",
            "self.all(x, x)",
            "size(self, 1) == 1",
            "optional.none().value() == 1",
            "self.x.matches('(') ",
        ];
        let long = vec!["1"; 3000].join(" + ") + " > 0";
        for r in rules.iter().map(|s| s.to_string()).chain([long]) {
            let s = schema(
                json!({"type": "object", "x-kubernetes-validations": [{"rule": r}],
                "properties": {"x": {"type": "string"}}}),
            );
            if let Ok(v) = CelValidator::compile(&s, ROOT) {
                let _ = v.validate(&json!({"spec": {"x": "a"}}), None);
                let _ = v.validate(&json!({"spec": 5}), Some(&json!({"spec": []})));
            }
        }
    }
}
