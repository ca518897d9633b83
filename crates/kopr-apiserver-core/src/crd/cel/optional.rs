//! CEL optional types (cel-go's `optional` library, which kube enables for
//! CRD rules): the `optMap`/`optFlatMap` macros, the lowering of optional
//! constructs the interpreter evaluates wrongly, and optional equality.
//!
//! The `cel` crate parses the optional syntax (`x.?f`, `x[?k]`, `[?e]`,
//! `{?k: v}`) and has `optional.of/none/ofNonZeroValue`, `hasValue`,
//! `value`, `or` and `orValue`, but not the macros, and it evaluates a plain
//! field selection on an optional (`oldSelf.spec` with `optionalOldSelf`) as
//! `false`, optionals as never equal, and unwraps an optional bound to a
//! variable (`cel.bind(o, self.?f, ...)`). The checker records where those
//! constructs occur ([`Lowering`]); [`lower`] then rewrites them into forms
//! the interpreter gets right.

#[allow(unused_imports)]
use super::*;
use kube_cel::cel::common::ast::MapExpr;
use kube_cel::cel::objects::OptionalValue;
use std::collections::HashSet;

/// Iteration variable of the comprehensions that bind a variable
/// (`cel.bind`, `optMap`, `optFlatMap`); it cannot clash with identifiers.
pub(super) const BIND_ITER_VAR: &str = "#unused";

/// Runtime function: `_==_` where an operand is optional.
pub(super) const OPT_EQUALS: &str = "@optional_equals";
/// Runtime function: `_!=_` where an operand is optional.
pub(super) const OPT_NOT_EQUALS: &str = "@optional_not_equals";

/// Expression ids the checker found to need lowering.
#[derive(Debug, Default)]
pub(super) struct Lowering {
    /// Field selections (`x.f`, `has(x.f)`) whose operand is optional.
    pub(super) selects: HashSet<u64>,
    /// `_==_` / `_!=_` calls with an optional operand.
    pub(super) equalities: HashSet<u64>,
    /// Variable-binding comprehensions whose value is optional: the
    /// interpreter unwraps an optional when it binds it to a variable, so
    /// the variable is replaced by its (pure) definition instead.
    pub(super) optional_binds: HashSet<u64>,
}

/// The largest expression id in `e` (new nodes are numbered above it).
pub(super) fn max_id(e: &IdedExpr) -> u64 {
    let mut max = 0;
    walk(e, &mut |x| max = max.max(x.id));
    max
}

fn node(id: &mut u64, expr: Expr) -> IdedExpr {
    *id += 1;
    IdedExpr { id: *id, expr }
}

fn member(id: &mut u64, target: IdedExpr, func: &str, args: Vec<IdedExpr>) -> IdedExpr {
    node(
        id,
        Expr::Call(CallExpr {
            func_name: func.into(),
            target: Some(Box::new(target)),
            args,
        }),
    )
}

fn optional_call(id: &mut u64, func: &str, args: Vec<IdedExpr>) -> IdedExpr {
    let ns = node(id, Expr::Ident("optional".into()));
    member(id, ns, func, args)
}

/// An `optMap`/`optFlatMap` whose variable is not an identifier (the macro's name);
/// the message is cel-go's.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}() variable name must be a simple identifier")]
pub(super) struct MacroVariable(String);

/// Expands `target.optMap(v, e)` (`flat` false) or `target.optFlatMap(v, e)`
/// like cel-go: `target.hasValue() ? optional.of(<e with v bound to
/// target.value()>) : optional.none()` (without `optional.of` for
/// `optFlatMap`). `Err` when `v` is not a simple identifier.
pub(super) fn expand_opt_map(
    id: &mut u64,
    macro_name: &str,
    target: IdedExpr,
    var: IdedExpr,
    body: IdedExpr,
) -> Result<Expr, MacroVariable> {
    let Expr::Ident(name) = var.expr else {
        return Err(MacroVariable(macro_name.to_string()));
    };
    let has_value = member(id, target.clone(), "hasValue", Vec::new());
    let value = member(id, target, "value", Vec::new());
    let iter_range = node(id, Expr::List(ListExpr::new(Vec::new())));
    let loop_cond = node(id, Expr::Literal(LiteralValue::Boolean(false.into())));
    let loop_step = node(id, Expr::Ident(name.clone()));
    let comprehension = Expr::Comprehension(Box::new(ComprehensionExpr {
        iter_range,
        iter_var: BIND_ITER_VAR.into(),
        iter_var2: None,
        accu_var: name,
        accu_init: value,
        loop_cond,
        loop_step,
        result: body,
    }));
    let bound = node(id, comprehension);
    let some = if macro_name == "optMap" {
        optional_call(id, "of", vec![bound])
    } else {
        bound
    };
    let none = optional_call(id, "none", Vec::new());
    Ok(Expr::Call(CallExpr {
        func_name: "_?_:_".into(),
        target: None,
        args: vec![has_value, some, none],
    }))
}

/// `x[?'f']`: the interpreter's optional index, which also unwraps an
/// optional operand and yields `optional.none()` for a missing key.
fn opt_index(id: &mut u64, operand: IdedExpr, field: String) -> Expr {
    let key = node(id, Expr::Literal(LiteralValue::String(field.into())));
    Expr::Call(CallExpr {
        func_name: "_[?_]".into(),
        target: None,
        args: vec![operand, key],
    })
}

/// Rewrites the checked expression for the interpreter: `x.?f` and field
/// selections on optionals become optional indexes (`has(opt.f)` becomes
/// `opt[?'f'].hasValue()`), and equalities involving optionals call
/// [`OPT_EQUALS`] / [`OPT_NOT_EQUALS`].
pub(super) fn lower(e: IdedExpr, l: &Lowering, next_id: &mut u64) -> IdedExpr {
    let id = e.id;
    let expr = match e.expr {
        Expr::Call(c) => {
            let target = c.target.map(|t| Box::new(lower(*t, l, next_id)));
            let mut args: Vec<IdedExpr> =
                c.args.into_iter().map(|a| lower(a, l, next_id)).collect();
            let field = match args.get(1).map(|a| &a.expr) {
                Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().to_string()),
                _ => None,
            };
            if c.func_name == "_?._" && args.len() == 2 && field.is_some() {
                args.truncate(1);
                match (args.pop(), field) {
                    (Some(operand), Some(f)) => opt_index(next_id, operand, f),
                    _ => Expr::Unspecified,
                }
            } else if l.equalities.contains(&id) && matches!(c.func_name.as_str(), "_==_" | "_!=_")
            {
                let f = if c.func_name == "_==_" {
                    OPT_EQUALS
                } else {
                    OPT_NOT_EQUALS
                };
                Expr::Call(CallExpr {
                    func_name: f.into(),
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
        Expr::Select(s) if l.selects.contains(&id) => {
            let operand = lower(*s.operand, l, next_id);
            let index = opt_index(next_id, operand, s.field);
            if s.test {
                let idx = node(next_id, index);
                Expr::Call(CallExpr {
                    func_name: "hasValue".into(),
                    target: Some(Box::new(idx)),
                    args: Vec::new(),
                })
            } else {
                index
            }
        }
        Expr::Select(s) => Expr::Select(SelectExpr {
            operand: Box::new(lower(*s.operand, l, next_id)),
            field: s.field,
            test: s.test,
        }),
        Expr::Comprehension(c) if l.optional_binds.contains(&id) => {
            let init = lower(c.accu_init, l, next_id);
            let body = lower(c.result, l, next_id);
            return substitute(body, &c.accu_var, &init);
        }
        Expr::Comprehension(c) => {
            let c = *c;
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: lower(c.iter_range, l, next_id),
                iter_var: c.iter_var,
                iter_var2: c.iter_var2,
                accu_var: c.accu_var,
                accu_init: lower(c.accu_init, l, next_id),
                loop_cond: lower(c.loop_cond, l, next_id),
                loop_step: lower(c.loop_step, l, next_id),
                result: lower(c.result, l, next_id),
            }))
        }
        Expr::List(list) => {
            let optional = list.optional_indices;
            let elements = list
                .elements
                .into_iter()
                .map(|x| lower(x, l, next_id))
                .collect();
            Expr::List(ListExpr::new_with_optionals(elements, optional))
        }
        Expr::Map(m) => {
            let mut entries = m.entries;
            for en in &mut entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    me.key = lower(std::mem::take(&mut me.key), l, next_id);
                    me.value = lower(std::mem::take(&mut me.value), l, next_id);
                }
            }
            Expr::Map(MapExpr { entries })
        }
        other => other,
    };
    IdedExpr { id, expr }
}

/// Replaces the free occurrences of variable `name` in `e` by `value`.
fn substitute(e: IdedExpr, name: &str, value: &IdedExpr) -> IdedExpr {
    let id = e.id;
    let expr = match e.expr {
        Expr::Ident(n) if n == name => return value.clone(),
        Expr::Call(c) => Expr::Call(CallExpr {
            func_name: c.func_name,
            target: c.target.map(|t| Box::new(substitute(*t, name, value))),
            args: c
                .args
                .into_iter()
                .map(|a| substitute(a, name, value))
                .collect(),
        }),
        Expr::Select(s) => Expr::Select(SelectExpr {
            operand: Box::new(substitute(*s.operand, name, value)),
            field: s.field,
            test: s.test,
        }),
        Expr::Comprehension(c) => {
            let c = *c;
            // The range and the initial value are outside the loop's scope;
            // the loop sees its variables, the result its accumulator.
            let accu = c.accu_var == name;
            let iter = accu || c.iter_var == name || c.iter_var2.as_deref() == Some(name);
            let inner = |x: IdedExpr, shadowed: bool| {
                if shadowed {
                    x
                } else {
                    substitute(x, name, value)
                }
            };
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: substitute(c.iter_range, name, value),
                accu_init: substitute(c.accu_init, name, value),
                loop_cond: inner(c.loop_cond, iter),
                loop_step: inner(c.loop_step, iter),
                result: inner(c.result, accu),
                iter_var: c.iter_var,
                iter_var2: c.iter_var2,
                accu_var: c.accu_var,
            }))
        }
        Expr::List(list) => Expr::List(ListExpr::new_with_optionals(
            list.elements
                .into_iter()
                .map(|x| substitute(x, name, value))
                .collect(),
            list.optional_indices,
        )),
        Expr::Map(m) => {
            let mut entries = m.entries;
            for en in &mut entries {
                if let EntryExpr::MapEntry(me) = &mut en.expr {
                    me.key = substitute(std::mem::take(&mut me.key), name, value);
                    me.value = substitute(std::mem::take(&mut me.value), name, value);
                }
            }
            Expr::Map(MapExpr { entries })
        }
        other => other,
    };
    IdedExpr { id, expr }
}

fn as_optional(v: &CelValue) -> Option<&OptionalValue> {
    match v {
        CelValue::Opaque(o) => o.downcast_ref::<OptionalValue>(),
        _ => None,
    }
}

/// cel-go's equality where optionals are involved: two `optional.none()`
/// are equal, two present optionals are equal when their values are, and
/// an optional never equals a plain value.
pub(super) fn optional_equal(a: &CelValue, b: &CelValue) -> bool {
    match (as_optional(a), as_optional(b)) {
        (Some(x), Some(y)) => match (x.value(), y.value()) {
            (None, None) => true,
            (Some(p), Some(q)) => optional_equal(p, q),
            _ => false,
        },
        (None, None) => a == b,
        _ => false,
    }
}

/// [`OPT_EQUALS`].
pub(super) fn cel_optional_equals(a: CelValue, b: CelValue) -> bool {
    optional_equal(&a, &b)
}

/// [`OPT_NOT_EQUALS`].
pub(super) fn cel_optional_not_equals(a: CelValue, b: CelValue) -> bool {
    !optional_equal(&a, &b)
}

/// Name of the root object type in messages (kube's `selfType<N>`, whose
/// number changes with every compilation).
const SELF_TYPE_NAME: &str = "selfType0";

/// The name kube's DeclType gives an object type: `selfType<N>` for the
/// rule's own type, `<parent>.<field>` for object fields below it, `object`
/// for objects under lists and maps.
fn object_name_in(
    root: &Arc<Ty>,
    want: &Arc<Ty>,
    name: Option<String>,
    depth: usize,
) -> Option<String> {
    if Arc::ptr_eq(root, want) {
        return Some(name.unwrap_or_else(|| "object".into()));
    }
    if depth > MAX_SCHEMA_DEPTH {
        return None;
    }
    match root.as_ref() {
        Ty::Object(fields) => fields.iter().find_map(|f| {
            let n = name.as_ref().map(|p| format!("{p}.{}", f.cel));
            object_name_in(&f.ty, want, n, depth + 1)
        }),
        Ty::List(e) | Ty::Map(e) => object_name_in(e, want, None, depth + 1),
        _ => None,
    }
}

impl Checker<'_> {
    /// cel-go's `FormatCELType` name of a type, if this checker knows it.
    pub(super) fn type_name(&self, t: &CTy) -> Option<String> {
        Some(match t.norm() {
            CTy::Decl(d) => {
                return object_name_in(&self.self_ty, &d, Some(SELF_TYPE_NAME.into()), 0)
                    .or_else(|| Some("object".into()));
            }
            CTy::List(e) => format!("list({})", self.type_name(&e)?),
            CTy::Map(v) => format!("map(string, {})", self.type_name(&v)?),
            CTy::Optional(i) => format!("optional_type({})", self.type_name(&i)?),
            CTy::Type => "type".into(),
            CTy::Dyn => "dyn".into(),
            CTy::Unknown => return None,
            other => other.name()?,
        })
    }

    /// Number of the next optional list element or map entry.
    pub(super) fn next_entry(&mut self) -> usize {
        self.optional_entries += 1;
        self.optional_entries - 1
    }

    /// The element type of the `n`-th optional entry `[?e]` / `{?k: e}`,
    /// whose value must be optional (cel-go's type mismatch otherwise).
    pub(super) fn optional_entry(&mut self, t: CTy, n: usize) -> CTy {
        match t.norm() {
            CTy::Optional(inner) => *inner,
            CTy::Dyn | CTy::Unknown => t,
            other => {
                if let Some(name) = self.type_name(&other) {
                    let pos = locate_optional_entry(self.src, n);
                    self.error_at(
                        pos,
                        format!("expected type 'optional_type({name})' but found '{name}'"),
                    );
                }
                other
            }
        }
    }

    /// `x.?f`: optional field selection (an optional operand is unwrapped).
    pub(super) fn optional_select(&mut self, c: &CallExpr) -> CTy {
        let Some(operand) = c.args.first() else {
            return CTy::Optional(Box::new(CTy::Unknown));
        };
        let ot = self.check(operand);
        let Some(Expr::Literal(LiteralValue::String(field))) = c.args.get(1).map(|a| &a.expr)
        else {
            return CTy::Optional(Box::new(CTy::Unknown));
        };
        let inner = match ot.norm() {
            CTy::Optional(i) => *i,
            o => o,
        };
        match self.select(&inner, field.inner()) {
            t @ CTy::Optional(_) => t,
            t => CTy::Optional(Box::new(t)),
        }
    }

    /// Result type of the optional member functions (`hasValue`, `value`,
    /// `or`, `orValue`), reporting cel-go's overload error when the target
    /// is known not to be optional or `orValue`'s argument does not match.
    /// `None` for other functions and for targets of unknown type.
    pub(super) fn optional_member(&mut self, f: &str, target: &CTy, args: &[CTy]) -> Option<CTy> {
        if !matches!(f, "hasValue" | "value" | "or" | "orValue") {
            return None;
        }
        let arg = args.first().map(CTy::norm).unwrap_or(CTy::Unknown);
        match target.norm() {
            CTy::Unknown | CTy::Dyn => None,
            CTy::Optional(inner) => Some(match f {
                "hasValue" => CTy::Bool,
                "value" => *inner,
                "or" => match arg {
                    CTy::Optional(_) if matches!(inner.norm(), CTy::Unknown) => arg,
                    CTy::Optional(_) | CTy::Unknown | CTy::Dyn => CTy::Optional(inner),
                    _ => {
                        self.no_overload(f, &CTy::Optional(inner), args);
                        CTy::Unknown
                    }
                },
                _ => {
                    let (i, a) = (inner.norm(), arg);
                    let open = |t: &CTy| matches!(t, CTy::Unknown | CTy::Dyn | CTy::Null);
                    if open(&i) {
                        a
                    } else {
                        if !open(&a) && self.type_name(&i) != self.type_name(&a) {
                            self.no_overload(f, &CTy::Optional(inner.clone()), args);
                        }
                        i
                    }
                }
            }),
            other => {
                self.no_overload(f, &other, args);
                Some(CTy::Unknown)
            }
        }
    }

    /// cel-go's `found no matching overload for 'f' applied to 'T.(A)'`,
    /// when every type involved is known.
    fn no_overload(&mut self, f: &str, target: &CTy, args: &[CTy]) {
        let Some(t) = self.type_name(target) else {
            return;
        };
        let Some(a) = args
            .iter()
            .map(|a| self.type_name(a))
            .collect::<Option<Vec<_>>>()
        else {
            return;
        };
        let pos = locate_call(self.src, f);
        self.error_at(
            pos,
            format!(
                "found no matching overload for '{f}' applied to '{t}.({})'",
                a.join(", ")
            ),
        );
    }
}
