//! Label selectors: apimachinery's `labels.Parse` grammar and errors, matching,
//! and `metav1.LabelSelector` values.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// The operator of one label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    In,
    NotIn,
    Equals,
    DoubleEquals,
    NotEquals,
    Exists,
    DoesNotExist,
    GreaterThan,
    LessThan,
}

/// One `key op values` term of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Requirement {
    pub(super) key: String,
    pub(super) op: Op,
    /// Sorted for set operators (they come from a set), as given otherwise.
    pub(super) values: Vec<String>,
}

impl Requirement {
    pub(super) fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let got = labels.and_then(|m| m.get(&self.key)).map(label_text);
        let has = |v: &str| self.values.iter().any(|x| x == v);
        match self.op {
            Op::In | Op::Equals | Op::DoubleEquals => got.is_some_and(|v| has(&v)),
            Op::NotIn | Op::NotEquals => got.is_none_or(|v| !has(&v)),
            Op::Exists => got.is_some(),
            Op::DoesNotExist => got.is_none(),
            Op::GreaterThan | Op::LessThan => {
                let Some(Ok(have)) = got.map(|v| v.parse::<i64>()) else {
                    return false;
                };
                let [want] = self.values.as_slice() else {
                    return false;
                };
                let Ok(want) = want.parse::<i64>() else {
                    return false;
                };
                if self.op == Op::GreaterThan {
                    have > want
                } else {
                    have < want
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.op == Op::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let sep = match self.op {
            Op::Exists | Op::DoesNotExist => return Ok(()),
            Op::Equals => "=",
            Op::DoubleEquals => "==",
            Op::NotEquals => "!=",
            Op::In => " in ",
            Op::NotIn => " notin ",
            Op::GreaterThan => ">",
            Op::LessThan => "<",
        };
        f.write_str(sep)?;
        let set = matches!(self.op, Op::In | Op::NotIn);
        let mut values = self.values.clone();
        values.sort();
        if set {
            write!(f, "({})", values.join(","))
        } else {
            f.write_str(&values.join(","))
        }
    }
}

/// A parsed label selector (`labels.Selector`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    /// Requirements, sorted by key; all must match.
    pub(super) requirements: Vec<Requirement>,
    /// A null `metav1.LabelSelector`: selects nothing.
    pub(super) nothing: bool,
}

impl LabelSelector {
    /// Parses a `labelSelector` query value exactly like `labels.Parse`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser {
            tokens: lex(s),
            pos: 0,
        };
        let mut requirements = parser
            .parse()
            .map_err(|e| SelectorError::Label(e.to_string()))?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }

    /// True if the selector accepts an object with these labels (`None` = no labels).
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// The requirements an object meets only by carrying a label with one of some values
    /// (`key=value`, `key==value`, `key in (...)`), as (key, values).
    pub fn required_values(&self) -> impl Iterator<Item = (&str, &[String])> {
        self.requirements
            .iter()
            .filter(|r| matches!(r.op, Op::In | Op::Equals | Op::DoubleEquals))
            .map(|r| (r.key.as_str(), r.values.as_slice()))
    }

    /// Whether the selector is exactly one such requirement (and selects something).
    pub fn is_one_required_value(&self) -> bool {
        !self.nothing && self.requirements.len() == 1 && self.required_values().count() == 1
    }

    /// True if the selector does not restrict anything (empty selector).
    pub fn is_everything(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// Converts a `metav1.LabelSelector` (`{matchLabels, matchExpressions}`,
    /// e.g. a Deployment's `spec.selector`) like `metav1.LabelSelectorAsSelector`:
    /// `null`/missing selects nothing, `{}` selects everything.
    pub fn from_label_selector_value(v: &Value) -> Result<Self, SelectorError> {
        let obj = match v {
            Value::Null => {
                return Ok(LabelSelector {
                    requirements: Vec::new(),
                    nothing: true,
                });
            }
            Value::Object(o) => o,
            _ => {
                return Err(SelectorError::Label(
                    "label selector must be an object".into(),
                ));
            }
        };
        let mut requirements = Vec::new();
        if let Some(Value::Object(ml)) = obj.get("matchLabels") {
            for (k, v) in ml {
                requirements.push(new_requirement(k, Op::Equals, vec![label_text(v)], None)?);
            }
        }
        if let Some(Value::Array(exprs)) = obj.get("matchExpressions") {
            for e in exprs {
                let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
                let op_str = e
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let op = match op_str {
                    "In" => Op::In,
                    "NotIn" => Op::NotIn,
                    "Exists" => Op::Exists,
                    "DoesNotExist" => Op::DoesNotExist,
                    other => {
                        return Err(SelectorError::Label(format!(
                            "{} is not a valid label selector operator",
                            go_quote(other)
                        )));
                    }
                };
                let values: Vec<String> = match e.get("values") {
                    Some(Value::Array(vs)) => vs.iter().map(label_text).collect(),
                    _ => Vec::new(),
                };
                requirements.push(new_requirement(key, op, values, None)?);
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(LabelSelector {
            requirements,
            nothing: false,
        })
    }
}

impl fmt::Display for LabelSelector {
    /// The canonical `selector.String()` form (e.g. `app=web,tier in (a,b)`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}

/// Formats a label map like `labels.FormatLabels`: sorted `k=v` pairs joined by
/// `,`, or `<none>` when empty.
pub fn format_labels(labels: Option<&Map<String, Value>>) -> String {
    let mut pairs: Vec<String> = labels
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", label_text(v)))
        .collect();
    pairs.sort();
    if pairs.is_empty() {
        "<none>".to_string()
    } else {
        pairs.join(",")
    }
}

/// Formats a `metav1.LabelSelector` value like `metav1.FormatLabelSelector`
/// (`<none>` for an empty or null selector, `<error>` if invalid).
pub fn format_label_selector(v: Option<&Value>) -> String {
    match LabelSelector::from_label_selector_value(v.unwrap_or(&Value::Null)) {
        Err(_) => "<error>".to_string(),
        Ok(s) => {
            let text = s.to_string();
            if text.is_empty() {
                "<none>".to_string()
            } else {
                text
            }
        }
    }
}

/// The text of a label value (labels are strings; anything else is shown as JSON).
pub(super) fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

// --- lexer -----------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok {
    Error,
    End,
    ClosePar,
    Comma,
    Not,
    DoubleEquals,
    Equals,
    Gt,
    Ident,
    In,
    Lt,
    NotEquals,
    NotIn,
    OpenPar,
}

pub(super) fn keyword(s: &[u8]) -> Option<Tok> {
    Some(match s {
        b")" => Tok::ClosePar,
        b"," => Tok::Comma,
        b"!" => Tok::Not,
        b"==" => Tok::DoubleEquals,
        b"=" => Tok::Equals,
        b">" => Tok::Gt,
        b"in" => Tok::In,
        b"<" => Tok::Lt,
        b"!=" => Tok::NotEquals,
        b"notin" => Tok::NotIn,
        b"(" => Tok::OpenPar,
        _ => return None,
    })
}

pub(super) fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

pub(super) fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// A byte cursor; like the Go lexer, reading past the end (or a NUL byte)
/// yields 0.
pub(super) struct Lexer<'a> {
    pub(super) s: &'a [u8],
    pub(super) pos: usize,
}

impl Lexer<'_> {
    pub(super) fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    pub(super) fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    pub(super) fn lex(&mut self) -> (Tok, String) {
        let mut ch = self.read();
        while is_ws(ch) {
            ch = self.read();
        }
        if ch == 0 {
            return (Tok::End, String::new());
        }
        self.unread();
        if is_special(ch) {
            self.special()
        } else {
            self.ident()
        }
    }

    pub(super) fn ident(&mut self) -> (Tok, String) {
        let mut buf = Vec::new();
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if is_special(ch) || is_ws(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
        }
        let text = String::from_utf8_lossy(&buf).into_owned();
        (keyword(&buf).unwrap_or(Tok::Ident), text)
    }

    pub(super) fn special(&mut self) -> (Tok, String) {
        let mut buf = Vec::new();
        let mut last: Option<(Tok, usize)> = None;
        loop {
            let ch = self.read();
            if ch == 0 {
                break;
            }
            if !is_special(ch) {
                self.unread();
                break;
            }
            buf.push(ch);
            if let Some(t) = keyword(&buf) {
                last = Some((t, buf.len()));
            } else if last.is_some() {
                self.unread();
                break;
            }
        }
        match last {
            Some((t, n)) => (t, String::from_utf8_lossy(&buf[..n]).into_owned()),
            None => (
                Tok::Error,
                format!(
                    "error expected: keyword found '{}'",
                    String::from_utf8_lossy(&buf)
                ),
            ),
        }
    }
}

pub(super) fn lex(s: &str) -> Vec<(Tok, String)> {
    let mut lexer = Lexer {
        s: s.as_bytes(),
        pos: 0,
    };
    let mut out = Vec::new();
    loop {
        let item = lexer.lex();
        let end = item.0 == Tok::End;
        out.push(item);
        if end {
            return out;
        }
    }
}

// --- parser ----------------------------------------------------------------

/// Why a `labelSelector` does not parse: `labels.Parse`'s messages.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(super) enum SyntaxError {
    /// A token where the grammar wants something else.
    #[error("found '{found}', expected: {expected}")]
    Unexpected {
        found: String,
        expected: &'static str,
    },
    /// A set operator not followed by `(` (kube's message has no comma).
    #[error("found '{0}' expected: '('")]
    NoOpenParen(String),
    /// A key that is not a qualified name.
    #[error("<nil>: Invalid value: {}: {detail}", go_quote(.key))]
    InvalidKey { key: String, detail: String },
    /// A requirement `labels.NewRequirement` refuses.
    #[error(transparent)]
    Invalid(#[from] SelectorError),
    /// What went wrong inside one requirement.
    #[error("unable to parse requirement: {0}")]
    Requirement(Box<SyntaxError>),
}

fn unexpected(found: String, expected: &'static str) -> SyntaxError {
    SyntaxError::Unexpected { found, expected }
}

pub(super) struct Parser {
    pub(super) tokens: Vec<(Tok, String)>,
    pub(super) pos: usize,
}

impl Parser {
    /// The current token; `values` context turns `in`/`notin` into identifiers.
    pub(super) fn peek(&self, values: bool) -> (Tok, String) {
        let (t, l) = self
            .tokens
            .get(self.pos)
            .cloned()
            .unwrap_or((Tok::End, String::new()));
        match t {
            Tok::In | Tok::NotIn if values => (Tok::Ident, l),
            _ => (t, l),
        }
    }

    pub(super) fn next(&mut self, values: bool) -> (Tok, String) {
        let item = self.peek(values);
        self.pos += 1;
        item
    }

    pub(super) fn parse(&mut self) -> Result<Vec<Requirement>, SyntaxError> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.peek(true);
            match tok {
                Tok::Ident | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|e| SyntaxError::Requirement(Box::new(e)))?;
                    reqs.push(r);
                    let (t, l) = self.next(true);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.peek(true);
                            if t2 != Tok::Ident && t2 != Tok::Not {
                                return Err(unexpected(l2, "identifier after ','"));
                            }
                        }
                        _ => return Err(unexpected(l, "',' or 'end of string'")),
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(unexpected(lit, "!, identifier, or 'end of string'"));
                }
            }
        }
    }

    pub(super) fn requirement(&mut self) -> Result<Requirement, SyntaxError> {
        let (key, inferred) = self.key_and_inferred_op()?;
        if let Some(op) = inferred {
            return Ok(new_requirement(&key, op, Vec::new(), None)?);
        }
        let op = self.operator()?;
        let values = match op {
            Op::In | Op::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        Ok(new_requirement(
            &key,
            op,
            values.into_iter().collect(),
            None,
        )?)
    }

    /// Reads `[!]key`; returns `Some(op)` when the operator is implied
    /// (`!key` → DoesNotExist, a bare key before `,`/end → Exists).
    pub(super) fn key_and_inferred_op(&mut self) -> Result<(String, Option<Op>), SyntaxError> {
        let (mut tok, mut lit) = self.next(true);
        let mut op = None;
        if tok == Tok::Not {
            op = Some(Op::DoesNotExist);
            (tok, lit) = self.next(true);
        }
        if tok != Tok::Ident {
            return Err(unexpected(lit, "identifier"));
        }
        if let Some(detail) = qualified_name_errors(&lit) {
            return Err(SyntaxError::InvalidKey { key: lit, detail });
        }
        let (t, _) = self.peek(true);
        if (t == Tok::End || t == Tok::Comma) && op.is_none() {
            op = Some(Op::Exists);
        }
        Ok((lit, op))
    }

    pub(super) fn operator(&mut self) -> Result<Op, SyntaxError> {
        let (tok, lit) = self.next(false);
        Ok(match tok {
            Tok::In => Op::In,
            Tok::Equals => Op::Equals,
            Tok::DoubleEquals => Op::DoubleEquals,
            Tok::Gt => Op::GreaterThan,
            Tok::Lt => Op::LessThan,
            Tok::NotIn => Op::NotIn,
            Tok::NotEquals => Op::NotEquals,
            _ => {
                return Err(unexpected(lit, "'=', '!=', '==', 'in', notin'"));
            }
        })
    }

    pub(super) fn set_values(&mut self) -> Result<BTreeSet<String>, SyntaxError> {
        let (tok, lit) = self.next(true);
        if tok != Tok::OpenPar {
            return Err(SyntaxError::NoOpenParen(lit));
        }
        let (tok, lit) = self.peek(true);
        match tok {
            Tok::Ident | Tok::Comma => {
                let set = self.identifiers()?;
                let (t, _) = self.next(true);
                if t != Tok::ClosePar {
                    // kube reports the token seen before the list here.
                    return Err(unexpected(lit, "')'"));
                }
                Ok(set)
            }
            Tok::ClosePar => {
                self.next(true);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(unexpected(lit, "',', ')' or identifier")),
        }
    }

    pub(super) fn identifiers(&mut self) -> Result<BTreeSet<String>, SyntaxError> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.next(true);
            match tok {
                Tok::Ident => {
                    set.insert(lit);
                    let (t2, l2) = self.peek(true);
                    match t2 {
                        Tok::Comma => continue,
                        Tok::ClosePar => return Ok(set),
                        _ => return Err(unexpected(l2, "',' or ')'")),
                    }
                }
                Tok::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (t2, _) = self.peek(true);
                    if t2 == Tok::ClosePar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if t2 == Tok::Comma {
                        self.next(true);
                        set.insert(String::new());
                    }
                }
                _ => return Err(unexpected(lit, "',', or identifier")),
            }
        }
    }

    pub(super) fn exact_value(&mut self) -> Result<BTreeSet<String>, SyntaxError> {
        let (t, _) = self.peek(true);
        if t == Tok::End || t == Tok::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (t, lit) = self.next(true);
        if t == Tok::Ident {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(unexpected(lit, "identifier"))
        }
    }
}

/// `labels.NewRequirement` with its validation; `path` is the field path
/// prefix (always absent here, as for the query parameter).
pub(super) fn new_requirement(
    key: &str,
    op: Op,
    values: Vec<String>,
    path: Option<&str>,
) -> Result<Requirement, SelectorError> {
    let child = |name: &str| match path {
        Some(p) => format!("{p}.{name}"),
        None => name.to_string(),
    };
    let mut errs: Vec<String> = Vec::new();
    if let Some(detail) = qualified_name_errors(key) {
        errs.push(invalid(&child("key"), &go_quote(key), &detail));
    }
    let vpath = child("values");
    let list = || go_string_slice(&values);
    match op {
        Op::In | Op::NotIn if values.is_empty() => errs.push(invalid(
            &vpath,
            &list(),
            "for 'in', 'notin' operators, values set can't be empty",
        )),
        Op::Equals | Op::DoubleEquals | Op::NotEquals if values.len() != 1 => errs.push(invalid(
            &vpath,
            &list(),
            "exact-match compatibility requires one single value",
        )),
        Op::Exists | Op::DoesNotExist if !values.is_empty() => errs.push(invalid(
            &vpath,
            &list(),
            "values set must be empty for exists and does not exist",
        )),
        Op::GreaterThan | Op::LessThan => {
            if values.len() != 1 {
                errs.push(invalid(
                    &vpath,
                    &list(),
                    "for 'Gt', 'Lt' operators, exactly one value is required",
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(invalid(
                        &format!("{vpath}[{i}]"),
                        &go_quote(v),
                        "for 'Gt', 'Lt' operators, the value must be an integer",
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        if let Some(detail) = label_value_errors(v) {
            errs.push(invalid(
                &format!("{vpath}[{i}][{key}]"),
                &go_quote(v),
                &detail,
            ));
        }
    }
    if errs.is_empty() {
        Ok(Requirement {
            key: key.to_string(),
            op,
            values,
        })
    } else {
        Err(SelectorError::Label(aggregate(errs)))
    }
}

/// `field.Invalid(...).Error()`.
pub(super) fn invalid(path: &str, quoted_value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {quoted_value}: {detail}")
}

/// `utilerrors.NewAggregate(...).Error()`: one message as is, several
/// de-duplicated inside `[...]`.
pub(super) fn aggregate(errs: Vec<String>) -> String {
    let mut seen: Vec<String> = Vec::new();
    for e in errs {
        if !seen.contains(&e) {
            seen.push(e);
        }
    }
    if seen.len() == 1 {
        seen.pop().unwrap_or_default()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// Go's `%#v` of a `[]string`.
pub(super) fn go_string_slice(v: &[String]) -> String {
    if v.is_empty() {
        return "[]string(nil)".to_string();
    }
    let items: Vec<String> = v.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

// --- validation (apimachinery util/validation) ------------------------------

pub(super) const QNAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
pub(super) const QNAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
pub(super) const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
pub(super) const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
pub(super) const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `validation.RegexError`.
pub(super) fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{e}', "));
    }
    out.push_str(&format!("regex used for validation is '{fmt}')"));
    out
}

pub(super) fn is_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

pub(super) fn is_dns1123_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            match (b.first(), b.last()) {
                (Some(f), Some(l)) => {
                    (f.is_ascii_lowercase() || f.is_ascii_digit())
                        && (l.is_ascii_lowercase() || l.is_ascii_digit())
                        && b.iter()
                            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                }
                _ => false,
            }
        })
}

/// `validation.IsQualifiedName`, joined with "; " (None when valid).
pub(super) fn qualified_name_errors(value: &str) -> Option<String> {
    let parts: Vec<&str> = value.split('/').collect();
    let mut errs: Vec<String> = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                if prefix.len() > 253 {
                    errs.push("prefix part must be no more than 253 characters".to_string());
                }
                if !is_dns1123_subdomain(prefix) {
                    errs.push(format!(
                        "prefix part {}",
                        regex_error(
                            DNS1123_SUBDOMAIN_MSG,
                            DNS1123_SUBDOMAIN_FMT,
                            &["example.com"]
                        )
                    ));
                }
            }
            *name
        }
        _ => {
            return Some(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(QNAME_MSG, QNAME_FMT, &["MyName", "my.name", "123-abc"])
            ));
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 characters".to_string());
    }
    if !is_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(QNAME_MSG, QNAME_FMT, &["MyName", "my.name", "123-abc"])
        ));
    }
    if errs.is_empty() {
        None
    } else {
        Some(errs.join("; "))
    }
}

/// `validation.IsValidLabelValue`, joined with "; " (None when valid).
pub(super) fn label_value_errors(value: &str) -> Option<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 characters".to_string());
    }
    if !value.is_empty() && !is_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_MSG,
            &format!("({QNAME_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    if errs.is_empty() {
        None
    } else {
        Some(errs.join("; "))
    }
}
