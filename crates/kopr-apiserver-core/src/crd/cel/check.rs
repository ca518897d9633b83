//! Parsing, rewriting and checking rules against the schema: cel-go's compile
//! errors (undeclared references, undefined fields, overloads, non-bool results).

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Parsing, rewriting and checking.
// ---------------------------------------------------------------------------

/// Why an expression does not compile; the messages are cel-go's as kube reports them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum CompileError {
    /// More code points than kube allows.
    #[error(
        "compilation failed: ERROR: <input>:-1:0: expression code point size exceeds limit: size: {0}, limit {MAX_EXPRESSION_CODE_POINTS}"
    )]
    TooLong(usize),
    /// Brackets or the parse tree nested deeper than the limit (the limit).
    #[error("compilation failed: ERROR: <input>:-1:0: expression recursion limit exceeded: {0}")]
    TooDeep(usize),
    /// The parser gave up.
    #[error("compilation failed: ERROR: <input>:1:1: internal parser error")]
    ParserPanic,
    /// Parse, macro or check errors, each formatted as cel-go displays it.
    #[error("compilation failed: {}", .0.join("\n"))]
    Issues(Vec<String>),
    /// A rule whose result is not a bool.
    #[error("cel expression must evaluate to a bool")]
    NotBool,
    /// A messageExpression whose result is not a string.
    #[error("cel expression must evaluate to a string")]
    NotString,
}

/// Parses, rewrites and checks an expression. `want_bool` selects the rule
/// (bool result) or messageExpression (string result) form. On success also
/// returns the expression depth.
pub(super) fn compile_expr(
    src: &str,
    self_ty: &Arc<Ty>,
    old_ty: &CTy,
    want_bool: bool,
) -> Result<(IdedExpr, usize), CompileError> {
    let n = src.chars().count();
    if n > MAX_EXPRESSION_CODE_POINTS {
        return Err(CompileError::TooLong(n));
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
        return Err(CompileError::TooDeep(MAX_BRACKET_NESTING));
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
            return Err(CompileError::Issues(msgs));
        }
        Err(_) => return Err(CompileError::ParserPanic),
    };
    let depth = ast_depth(&expr);
    if depth > MAX_AST_DEPTH {
        return Err(CompileError::TooDeep(MAX_AST_DEPTH));
    }
    let mut next_id = max_id(&expr);
    let mut ex = Expander {
        src,
        next_id: &mut next_id,
        errors: Vec::new(),
    };
    let expr = ex.expand(expr);
    if !ex.errors.is_empty() {
        let msgs: Vec<String> = ex
            .errors
            .iter()
            .map(|(l, c, m)| format_issue(src, *l, *c, m))
            .collect();
        return Err(CompileError::Issues(msgs));
    }
    let mut ck = Checker {
        src,
        self_ty: self_ty.clone(),
        old_ty: old_ty.clone(),
        scopes: Vec::new(),
        errors: Vec::new(),
        lowering: Lowering::default(),
        optional_entries: 0,
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
        return Err(CompileError::Issues(msgs));
    }
    let ty = ty.norm();
    if want_bool {
        if !matches!(ty, CTy::Bool | CTy::Unknown) {
            return Err(CompileError::NotBool);
        }
    } else if !matches!(ty, CTy::String | CTy::Unknown) {
        return Err(CompileError::NotString);
    }
    let expr = lower(expr, &ck.lowering, &mut next_id);
    let depth = ast_depth(&expr);
    Ok((expr, depth + 1))
}

/// Formats one issue like cel-go's `Error.ToDisplayString`.
pub(super) fn format_issue(src: &str, line: isize, col: isize, msg: &str) -> String {
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

/// Expands before checking what the interpreter lacks: `cel.bind(v, init,
/// e)` becomes a comprehension binding `v`; the `optMap`/`optFlatMap` macros
/// are expanded as cel-go's parser does. Macro misuse is reported in
/// `errors` like a parse error.
pub(super) struct Expander<'a> {
    pub(super) src: &'a str,
    /// The last expression id handed out.
    pub(super) next_id: &'a mut u64,
    pub(super) errors: Vec<(isize, isize, String)>,
}

impl Expander<'_> {
    pub(super) fn expand(&mut self, e: IdedExpr) -> IdedExpr {
        let id = e.id;
        let expr = match e.expr {
            Expr::Call(c) => self.call(c),
            Expr::Comprehension(c) => {
                let c = *c;
                Expr::Comprehension(Box::new(ComprehensionExpr {
                    iter_range: self.expand(c.iter_range),
                    iter_var: c.iter_var,
                    iter_var2: c.iter_var2,
                    accu_var: c.accu_var,
                    accu_init: self.expand(c.accu_init),
                    loop_cond: self.expand(c.loop_cond),
                    loop_step: self.expand(c.loop_step),
                    result: self.expand(c.result),
                }))
            }
            Expr::List(l) => Expr::List(ListExpr::new_with_optionals(
                l.elements.into_iter().map(|x| self.expand(x)).collect(),
                l.optional_indices,
            )),
            Expr::Map(mut m) => {
                for en in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut en.expr {
                        me.key = self.expand(std::mem::take(&mut me.key));
                        me.value = self.expand(std::mem::take(&mut me.value));
                    }
                }
                Expr::Map(m)
            }
            Expr::Select(s) => Expr::Select(SelectExpr {
                operand: Box::new(self.expand(*s.operand)),
                field: s.field,
                test: s.test,
            }),
            other => other,
        };
        IdedExpr { id, expr }
    }

    fn call(&mut self, c: CallExpr) -> Expr {
        let target = c.target.map(|t| Box::new(self.expand(*t)));
        let args: Vec<IdedExpr> = c.args.into_iter().map(|a| self.expand(a)).collect();
        let is_bind = c.func_name == "bind"
            && args.len() == 3
            && matches!(target.as_deref(), Some(IdedExpr { expr: Expr::Ident(n), .. }) if n == "cel")
            && matches!(args[0].expr, Expr::Ident(_));
        let is_opt_map = matches!(c.func_name.as_str(), "optMap" | "optFlatMap")
            && args.len() == 2
            && target.is_some();
        if is_bind {
            let mut args = args.into_iter();
            let (Some(var), Some(init), Some(body)) = (args.next(), args.next(), args.next())
            else {
                return Expr::Unspecified;
            };
            let Expr::Ident(name) = var.expr else {
                return Expr::Unspecified;
            };
            let mut fresh = |expr| {
                *self.next_id += 1;
                IdedExpr {
                    id: *self.next_id,
                    expr,
                }
            };
            Expr::Comprehension(Box::new(ComprehensionExpr {
                iter_range: fresh(Expr::List(ListExpr::new(Vec::new()))),
                iter_var: BIND_ITER_VAR.into(),
                iter_var2: None,
                accu_var: name.clone(),
                accu_init: init,
                loop_cond: fresh(Expr::Literal(LiteralValue::Boolean(false.into()))),
                loop_step: fresh(Expr::Ident(name)),
                result: body,
            }))
        } else if is_opt_map && let Some(t) = target {
            let mut args = args.into_iter();
            let (Some(var), Some(body)) = (args.next(), args.next()) else {
                return Expr::Unspecified;
            };
            match expand_opt_map(self.next_id, &c.func_name, *t, var, body) {
                Ok(e) => e,
                Err(msg) => {
                    let (l, col) = locate_call(self.src, &c.func_name)
                        .map(|(l, col)| first_after(self.src, l, col))
                        .unwrap_or((1, 1));
                    self.errors.push((l, col, msg.to_string()));
                    Expr::Unspecified
                }
            }
        } else {
            Expr::Call(CallExpr {
                func_name: c.func_name,
                target,
                args,
            })
        }
    }
}

/// Checker types: declared schema types plus the CEL primitives.
#[derive(Debug, Clone)]
pub(super) enum CTy {
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
    pub(super) fn norm(&self) -> CTy {
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
    pub(super) fn name(&self) -> Option<String> {
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

    pub(super) fn is_numeric(&self) -> bool {
        matches!(self.norm(), CTy::Int | CTy::UInt | CTy::Double)
    }
}

/// A small static checker over the parsed expression.
pub(super) struct Checker<'a> {
    pub(super) src: &'a str,
    pub(super) self_ty: Arc<Ty>,
    pub(super) old_ty: CTy,
    pub(super) scopes: Vec<(String, CTy)>,
    pub(super) errors: Vec<(isize, isize, String)>,
    /// Optional constructs to lower for the interpreter.
    pub(super) lowering: Lowering,
    /// Optional list elements and map entries seen so far (for positions).
    pub(super) optional_entries: usize,
}

/// Namespaces of qualified function names (`sets.contains`, ...).
pub(super) const NAMESPACES: &[&str] = &[
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
pub(super) const TYPE_IDENTS: &[&str] = &[
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
pub(super) fn function_result(name: &str) -> Option<CTy> {
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
    pub(super) fn lookup(&self, name: &str) -> Option<CTy> {
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

    pub(super) fn error_at(&mut self, pos: Option<(isize, isize)>, msg: String) {
        let (l, c) = pos.unwrap_or((1, 1));
        self.errors.push((l, c, msg));
    }

    pub(super) fn check(&mut self, e: &IdedExpr) -> CTy {
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
                if matches!(ot.norm(), CTy::Optional(_)) {
                    self.lowering.selects.insert(e.id);
                }
                let result = self.select(&ot, &s.field);
                if s.test { CTy::Bool } else { result }
            }
            Expr::List(l) => {
                let mut elem = None;
                for (i, x) in l.elements.iter().enumerate() {
                    let entry = l.optional_indices.contains(&i).then(|| self.next_entry());
                    let mut t = self.check(x);
                    if let Some(n) = entry {
                        t = self.optional_entry(t, n);
                    }
                    elem.get_or_insert(t);
                }
                CTy::List(Box::new(elem.unwrap_or(CTy::Unknown)))
            }
            Expr::Map(m) => {
                let mut val = None;
                for en in &m.entries {
                    if let EntryExpr::MapEntry(me) = &en.expr {
                        let entry = me.optional.then(|| self.next_entry());
                        self.check(&me.key);
                        let mut t = self.check(&me.value);
                        if let Some(n) = entry {
                            t = self.optional_entry(t, n);
                        }
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
                if c.iter_var == BIND_ITER_VAR && matches!(init.norm(), CTy::Optional(_)) {
                    self.lowering.optional_binds.insert(e.id);
                }
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
            Expr::Call(c) => self.call(e.id, c),
            Expr::Unspecified => CTy::Unknown,
        }
    }

    pub(super) fn select(&mut self, ot: &CTy, field: &str) -> CTy {
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

    pub(super) fn call(&mut self, id: u64, c: &CallExpr) -> CTy {
        let f = c.func_name.as_str();
        if f == "_?._" {
            return self.optional_select(c);
        }
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
            if matches!(f, "_==_" | "_!=_")
                && args.iter().any(|a| matches!(a.norm(), CTy::Optional(_)))
            {
                self.lowering.equalities.insert(id);
            }
            return self.operator(f, &args);
        }
        let name = qualified.as_deref().unwrap_or(f);
        if qualified.is_none()
            && let Some(t) = &target_ty
            && let Some(r) = self.optional_member(f, t, &args)
        {
            return r;
        }
        match function_result(name) {
            Some(CTy::Optional(_))
                if name == "optional.of" || name == "optional.ofNonZeroValue" =>
            {
                CTy::Optional(Box::new(args.first().cloned().unwrap_or(CTy::Unknown)))
            }
            Some(r) => r,
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

    pub(super) fn operator(&mut self, f: &str, args: &[CTy]) -> CTy {
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
                // Indexing an optional yields an optional.
                CTy::Optional(inner) => CTy::Optional(Box::new(element_of(&inner))),
                _ => CTy::Unknown,
            },
            "_[?_]" => match a {
                CTy::Optional(inner) => CTy::Optional(Box::new(element_of(&inner))),
                other => CTy::Optional(Box::new(element_of(&other))),
            },
            _ => CTy::Unknown,
        }
    }
}

/// The element (list) or value (map) type of a container type.
pub(super) fn element_of(t: &CTy) -> CTy {
    match t.norm() {
        CTy::List(e) | CTy::Map(e) => e.norm(),
        CTy::Dyn => CTy::Dyn,
        _ => CTy::Unknown,
    }
}
