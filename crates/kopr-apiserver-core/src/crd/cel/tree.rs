//! The compiled tree: one node per schema location with rules, and the rules'
//! compiled programs.

#[allow(unused_imports)]
use super::*;
use crate::crd::FieldPathError;

// ---------------------------------------------------------------------------
// Compiled tree.
// ---------------------------------------------------------------------------

/// One compiled `x-kubernetes-validations` entry.
#[derive(Debug)]
pub(super) struct Rule {
    pub(super) rule: String,
    pub(super) message: String,
    pub(super) message_expression: Option<IdedExpr>,
    pub(super) reason: Option<String>,
    /// Normalized `fieldPath` (relative, without leading dot), if any.
    pub(super) field_path: Option<String>,
    pub(super) optional_old_self: bool,
    pub(super) uses_old_self: bool,
    /// `None` for an empty rule (skipped, as kube does) or one that does
    /// not compile.
    pub(super) program: Option<IdedExpr>,
    /// Why the rule does not compile; reported on every validation, as kube
    /// serves such rules (`rule compile error: ...`).
    pub(super) compile_error: Option<CompileError>,
}

/// The validator of one schema node (kube's `Validator`).
#[derive(Debug)]
pub(super) struct Node {
    /// The schema `type`, printed as the bad value of rule failures.
    pub(super) type_name: String,
    /// The type used to convert values for rules at this node.
    pub(super) ty: Option<Arc<Ty>>,
    pub(super) rules: Vec<Rule>,
    /// An error that keeps every rule of this node from running.
    pub(super) init_error: Option<String>,
    pub(super) properties: Vec<(String, Node)>,
    pub(super) items: Option<Box<Node>>,
    pub(super) additional: Option<Box<Node>>,
    pub(super) all_of: Vec<Node>,
    /// `x-kubernetes-list-type`.
    pub(super) list_type: Option<String>,
    /// `x-kubernetes-list-map-keys`.
    pub(super) list_map_keys: Vec<String>,
}

/// The compiled rules of one CRD version's schema.
pub struct CelValidator {
    pub(super) root: Option<Node>,
    /// Deepest schema nesting or expression nesting, to choose the stack.
    pub(super) depth: usize,
    pub(super) ctx: Context<'static>,
}

impl std::fmt::Debug for CelValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelValidator")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

/// Renders a rule the way kube prints `apiextensions.ValidationRule` with `%#v`.
pub(super) fn rule_repr(raw: &Value) -> Value {
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

pub(super) fn has_newlines(s: &str) -> bool {
    s.contains('\n') || s.contains('\r')
}

/// Compile-time state.
pub(super) struct Compiler {
    pub(super) errs: Vec<FieldError>,
    pub(super) depth: usize,
}

/// Where a node is being compiled: its schemas, declared type and position.
struct Site<'s> {
    /// The schema carrying the rules.
    vs: &'s Value,
    /// The schema carrying the structure.
    ns: &'s Value,
    /// The node's declared type.
    ty: Option<Arc<Ty>>,
    /// The CRD path of `vs`.
    path: &'s str,
    /// The path of an enclosing non-map list.
    uncorrelatable: Option<&'s str>,
    /// Its schema nesting depth.
    depth: usize,
}

impl Site<'_> {
    /// The type of the items or values of a list or map node.
    fn elem_ty(&self) -> Option<Arc<Ty>> {
        match self.ty.as_deref() {
            Some(Ty::List(e)) | Some(Ty::Map(e)) => Some(e.clone()),
            _ => None,
        }
    }
}

impl Compiler {
    /// Builds the validator of a node: `vs` carries the rules, `ns` the
    /// structure; `ty` is the node's declared type. `path` is the CRD path of
    /// `vs`; `uncorrelatable` the path of an enclosing non-map list.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn node(
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
        let conv_ty = if resource_root {
            schema_ty(ns, true, depth)
        } else {
            ty.clone()
        };
        let (rules, init_error) = self.node_rules(vs, ns, conv_ty.as_ref(), path, uncorrelatable);

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

        let site = Site {
            vs,
            ns,
            ty,
            path,
            uncorrelatable,
            depth,
        };
        let items = self.items_node(&site, list_type.as_deref());
        let properties = self.property_nodes(&site);
        let additional = self.additional_node(&site);
        let all_of = self.all_of_nodes(&site, resource_root);

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

    /// The rules of a node, compiled against its conversion type `conv_ty`;
    /// or, when the node's type cannot carry rules, the error that keeps
    /// them all from running.
    fn node_rules(
        &mut self,
        vs: &Value,
        ns: &Value,
        conv_ty: Option<&Arc<Ty>>,
        path: &str,
        uncorrelatable: Option<&str>,
    ) -> (Vec<Rule>, Option<String>) {
        let rules_raw = vs
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        let mut rules = Vec::new();
        if rules_raw.is_empty() {
            return (rules, None);
        }
        let vpath = format!("{path}.x-kubernetes-validations");
        match conv_ty {
            None => {
                let msg = format!(
                    "rule declared on schema that does not support validation rules type: '{}' x-kubernetes-preserve-unknown-fields: '{}'",
                    str_of(ns, "type").unwrap_or(""),
                    flag(ns, "x-kubernetes-preserve-unknown-fields")
                );
                self.errs
                    .push(FieldError::internal(vpath.clone(), msg.clone()));
                (rules, Some(msg))
            }
            Some(t) => {
                for (i, raw) in rules_raw.iter().enumerate() {
                    let rpath = format!("{vpath}[{i}]");
                    rules.push(self.rule(raw, t, ns, &rpath, uncorrelatable));
                }
                (rules, None)
            }
        }
    }

    /// The node of a list's `items`, when both schemas have them.
    fn items_node(&mut self, site: &Site<'_>, list_type: Option<&str>) -> Option<Box<Node>> {
        let (Some(vi), Some(ni)) = (
            site.vs.get("items").filter(|i| i.is_object()),
            site.ns.get("items").filter(|i| i.is_object()),
        ) else {
            return None;
        };
        let ipath = format!("{}.items", site.path);
        let unc = if list_type == Some("map") {
            site.uncorrelatable.map(str::to_string)
        } else {
            Some(site.uncorrelatable.unwrap_or(site.path).to_string())
        };
        self.node(
            vi,
            ni,
            flag(ni, "x-kubernetes-embedded-resource"),
            site.elem_ty(),
            &ipath,
            unc.as_deref(),
            site.depth + 1,
        )
        .map(Box::new)
    }

    /// The nodes of an object's `properties` that have a type and rules.
    fn property_nodes(&mut self, site: &Site<'_>) -> Vec<(String, Node)> {
        let mut properties = Vec::new();
        let (Some(vp), Some(np)) = (
            site.vs.get("properties").and_then(Value::as_object),
            site.ns.get("properties").and_then(Value::as_object),
        ) else {
            return properties;
        };
        for (k, vprop) in vp {
            let Some(nprop) = np.get(k) else { continue };
            let embedded = flag(nprop, "x-kubernetes-embedded-resource");
            let fty = match escape(k) {
                Some(esc) => match site.ty.as_deref().and_then(|t| t.field(&esc)) {
                    Some(f) => Some(f.ty.clone()),
                    None => continue,
                },
                None => match schema_ty(nprop, embedded, site.depth + 1) {
                    Some(t) => Some(t),
                    None => continue,
                },
            };
            let ppath = format!("{}.properties[{k}]", site.path);
            if let Some(n) = self.node(
                vprop,
                nprop,
                embedded,
                fty,
                &ppath,
                site.uncorrelatable,
                site.depth + 1,
            ) {
                properties.push((k.clone(), n));
            }
        }
        properties
    }

    /// The node of a map's `additionalProperties`, when both schemas have it.
    fn additional_node(&mut self, site: &Site<'_>) -> Option<Box<Node>> {
        let (Some(va), Some(na)) = (
            site.vs
                .get("additionalProperties")
                .filter(|a| a.is_object()),
            site.ns
                .get("additionalProperties")
                .filter(|a| a.is_object()),
        ) else {
            return None;
        };
        let apath = format!("{}.additionalProperties", site.path);
        self.node(
            va,
            na,
            flag(na, "x-kubernetes-embedded-resource"),
            site.elem_ty(),
            &apath,
            site.uncorrelatable,
            site.depth + 1,
        )
        .map(Box::new)
    }

    /// The nodes of `allOf` entries, over the same structure as the node.
    fn all_of_nodes(&mut self, site: &Site<'_>, resource_root: bool) -> Vec<Node> {
        let mut all_of = Vec::new();
        if let Some(list) = site.vs.get("allOf").and_then(Value::as_array) {
            for (i, a) in list.iter().enumerate() {
                let apath = format!("{}.allOf[{i}]", site.path);
                if let Some(n) = self.node(
                    a,
                    site.ns,
                    resource_root,
                    site.ty.clone(),
                    &apath,
                    site.uncorrelatable,
                    site.depth + 1,
                ) {
                    all_of.push(n);
                }
            }
        }
        all_of
    }

    /// Validates and compiles one rule; errors go to `self.errs`. The rule
    /// is returned even when it does not compile (kube serves it and reports
    /// the compile error on every validation).
    pub(super) fn rule(
        &mut self,
        raw: &Value,
        self_ty: &Arc<Ty>,
        ns: &Value,
        rpath: &str,
        uncorrelatable: Option<&str>,
    ) -> Rule {
        let text = str_of(raw, "rule").unwrap_or("");
        let message = str_of(raw, "message").unwrap_or("");
        let message_expr = str_of(raw, "messageExpression").unwrap_or("");
        let reason = str_of(raw, "reason").map(str::to_string);
        let optional_old_self = raw.get("optionalOldSelf").and_then(Value::as_bool);
        let before = self.errs.len();
        self.check_rule_texts(text, message, message_expr, rpath);
        if let Some(r) = &reason {
            self.check_rule_reason(r, rpath);
        }
        let normalized_path = self.check_rule_field_path(raw, ns, rpath);
        // kube skips compiling (and reporting on) the rules of a node with
        // schema errors, but serves them compiled all the same.
        let report = self.errs.len() == before;
        let mut rule = Rule {
            rule: text.to_string(),
            message: message.to_string(),
            message_expression: None,
            reason,
            field_path: normalized_path.filter(|p| !p.is_empty()),
            optional_old_self: optional_old_self == Some(true),
            uses_old_self: false,
            program: None,
            compile_error: None,
        };
        if text.trim().is_empty() {
            return rule;
        }
        let mut errs = self.compile_rule(&mut rule, raw, self_ty, rpath);
        if rule.uses_old_self {
            if let Some(u) = uncorrelatable {
                errs.push(FieldError::invalid(
                    format!("{rpath}.rule"),
                    text,
                    format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {u}"),
                ));
            }
        } else if let Some(b) = optional_old_self {
            errs.push(FieldError::invalid(
                format!("{rpath}.optionalOldSelf"),
                b,
                "may not be set if oldSelf is not used in rule",
            ));
        }
        if report {
            self.errs.extend(errs);
        }
        rule
    }

    /// A rule's `rule`, `message` and `messageExpression` texts: present,
    /// non-blank and on one line where required.
    fn check_rule_texts(&mut self, text: &str, message: &str, message_expr: &str, rpath: &str) {
        let (trimmed_rule, trimmed_msg) = (text.trim(), message.trim());
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
    }

    /// A rule's `reason`: one of the supported field error types.
    fn check_rule_reason(&mut self, r: &str, rpath: &str) {
        const SUPPORTED: [&str; 4] = [
            "FieldValueDuplicate",
            "FieldValueForbidden",
            "FieldValueInvalid",
            "FieldValueRequired",
        ];
        if !SUPPORTED.contains(&r) {
            self.errs.push(FieldError::not_supported(
                format!("{rpath}.reason"),
                r,
                &SUPPORTED,
            ));
        }
    }

    /// A rule's `fieldPath`: non-blank, on one line and valid in the schema
    /// `ns`; returns it normalized when valid.
    fn check_rule_field_path(&mut self, raw: &Value, ns: &Value, rpath: &str) -> Option<String> {
        let field_path = str_of(raw, "fieldPath").unwrap_or("");
        if field_path.is_empty() {
            return None;
        }
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
            Ok(p) => Some(p),
            Err(_) => {
                self.errs.push(FieldError::invalid(
                    fpath,
                    field_path,
                    "fieldPath must be a valid path",
                ));
                None
            }
        }
    }

    /// Compiles a (non-empty) rule's expression and message expression into
    /// `rule`; returns the compile errors, to report if the rule's fields
    /// were valid.
    fn compile_rule(
        &mut self,
        rule: &mut Rule,
        raw: &Value,
        self_ty: &Arc<Ty>,
        rpath: &str,
    ) -> Vec<FieldError> {
        let text = str_of(raw, "rule").unwrap_or("");
        let message_expr = str_of(raw, "messageExpression").unwrap_or("");
        let repr = rule_repr(raw);
        let old_ty = if rule.optional_old_self {
            CTy::Optional(Box::new(CTy::Decl(self_ty.clone())))
        } else {
            CTy::Decl(self_ty.clone())
        };
        let mut errs = Vec::new();
        match compile_expr(text, self_ty, &old_ty, true) {
            Ok((e, d)) => {
                self.depth = self.depth.max(d);
                rule.uses_old_self = references_ident(&e, OLD_SELF);
                rule.program = Some(e);
            }
            Err(detail) => {
                errs.push(FieldError::invalid(
                    format!("{rpath}.rule"),
                    repr.clone(),
                    detail.to_string(),
                ));
                rule.compile_error = Some(detail);
            }
        }
        if rule.program.is_some() && !message_expr.trim().is_empty() {
            match compile_expr(message_expr, self_ty, &old_ty, false) {
                Ok((e, d)) => {
                    self.depth = self.depth.max(d);
                    rule.message_expression = Some(e);
                }
                Err(detail) => {
                    errs.push(FieldError::invalid(
                        format!("{rpath}.messageExpression"),
                        repr,
                        detail
                            .to_string()
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
                    // kube stops compiling the rule there: its fieldPath is
                    // not normalized and so not used.
                    rule.field_path = None;
                }
            }
        }
        errs
    }
}

/// `ValidFieldPath`: checks a rule's `fieldPath` against the schema and
/// returns it as a field path relative to the rule's location.
pub(super) fn valid_field_path(path: &str, schema: &Value) -> Result<String, FieldPathError> {
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
    let append = |name: String, cur: &mut Value, out: &mut String| -> Result<(), FieldPathError> {
        if let Some(props) = cur.get("properties").and_then(Value::as_object) {
            let next = props
                .get(&name)
                .cloned()
                .ok_or(FieldPathError::NoSuchField)?;
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
            Err(FieldPathError::NoSuchField)
        }
    };
    while let Some(tok) = it.next() {
        match tok.as_str() {
            "[" => {
                let t = it.next().ok_or(FieldPathError::UnexpectedEnd)?;
                if t.len() < 2 || !t.starts_with('\'') || !t.ends_with('\'') {
                    return Err(FieldPathError::NotQuoted(t));
                }
                let inner = &t[1..t.len() - 1];
                let unescaped = unescape_single_quote(inner)?;
                append(unescaped, &mut cur, &mut out)?;
                let close = it.next().ok_or(FieldPathError::UnexpectedEnd)?;
                if close != "]" {
                    return Err(FieldPathError::NotClosed(close));
                }
            }
            "." => {
                let t = it.next().ok_or(FieldPathError::UnexpectedEnd)?;
                append(t, &mut cur, &mut out)?;
            }
            other => return Err(FieldPathError::NoStep(other.to_string())),
        }
    }
    Ok(out)
}

pub(super) fn unescape_single_quote(s: &str) -> Result<String, FieldPathError> {
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
            Some(o) => return Err(FieldPathError::Escape(o)),
            None => out.push('\\'),
        }
    }
    Ok(out)
}

pub(super) fn references_ident(e: &IdedExpr, name: &str) -> bool {
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
pub(super) fn walk(e: &IdedExpr, f: &mut dyn FnMut(&IdedExpr)) {
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

pub(super) fn ast_depth(e: &IdedExpr) -> usize {
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
