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
//! undefined fields, operator overload mismatches, non-bool results, misused
//! optionals) in cel-go's `ERROR: <input>:L:C: ...` form. CEL optional types
//! (`optionalOldSelf`, `x.?f`, `optMap`, ...) are completed in the
//! `optional` submodule. Runtime cost limits are not enforced; the
//! expression size and nesting are bounded instead, and deep rules are
//! evaluated on a thread with a large stack.
//!
//! [`CelValidator::check`] gives the errors CRD validation reports for the
//! rules; [`CelValidator::compile`] builds the validator a version is served
//! with, which (as in kube) reports a rule that does not compile on every
//! write instead of keeping the version from being served.

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

mod check;
mod optional;
#[cfg(test)]
mod optional_tests;
mod positions;
#[cfg(test)]
mod tests;
mod tree;
mod types;
mod values;

#[allow(unused_imports)]
pub use self::check::*;
#[allow(unused_imports)]
pub use self::optional::*;
#[allow(unused_imports)]
pub use self::positions::*;
#[allow(unused_imports)]
pub use self::tree::*;
#[allow(unused_imports)]
pub use self::types::*;
#[allow(unused_imports)]
pub use self::values::*;

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
    /// Compiles every x-kubernetes-validations rule in the schema for
    /// serving. Like kube, a rule that does not compile does not keep the
    /// version from being served: validating a custom resource reports
    /// `rule compile error: ...` at that rule's location instead. `Err` only
    /// for an internal failure of the compiler. `schema_path` is the CRD
    /// field path of the schema root (e.g.
    /// "spec.versions[0].schema.openAPIV3Schema").
    pub fn compile(
        schema: &serde_json::Value,
        schema_path: &str,
    ) -> Result<CelValidator, Vec<FieldError>> {
        Self::build(schema, schema_path).map(|(v, _)| v)
    }

    /// The errors CRD validation reports for the rules of a schema: compile
    /// errors at the rule's path in the CRD (e.g.
    /// `spec.versions[0].schema.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule`
    /// with `compilation failed: ...`), messageExpression compile errors,
    /// `optionalOldSelf` without `oldSelf`, `oldSelf` on an uncorrelatable
    /// part of the schema, and the rule-shape checks kube makes in the same
    /// place (empty rule, message/messageExpression/reason/fieldPath).
    pub fn check(schema: &serde_json::Value, schema_path: &str) -> Vec<FieldError> {
        match Self::build(schema, schema_path) {
            Ok((_, errs)) | Err(errs) => errs,
        }
    }

    fn build(
        schema: &serde_json::Value,
        schema_path: &str,
    ) -> Result<(CelValidator, Vec<FieldError>), Vec<FieldError>> {
        if !has_rules(schema, 0) {
            let empty = CelValidator {
                root: None,
                depth: 0,
                ctx: Context::empty(),
            };
            return Ok((empty, Vec::new()));
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
        let validator = CelValidator {
            root,
            depth,
            ctx: base_context(),
        };
        Ok((validator, errs))
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
            if let Some(e) = &rule.compile_error {
                errs.push(FieldError::invalid(
                    path,
                    ty_name,
                    format!("rule compile error: {e}"),
                ));
                continue;
            }
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
                    catch_unwind(AssertUnwindSafe(|| ctx.resolve(me)))
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
    ctx.add_function(OPT_EQUALS, cel_optional_equals);
    ctx.add_function(OPT_NOT_EQUALS, cel_optional_not_equals);
    for t in TYPE_IDENTS {
        ctx.add_variable_from_value(*t, type_value(t));
    }
    ctx
}
