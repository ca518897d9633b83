//! Label selectors and field selectors, parsed and matched the way
//! kube-apiserver 1.32 does (apimachinery `labels.Parse`, `fields.ParseSelector`
//! and the per-kind field label conversions), including the exact error texts
//! that end up in a 400 BadRequest `Status`.
//!
//! Everything here works on `serde_json::Value` objects and never panics on
//! any input string.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use crate::gofmt::quote as go_quote;

/// A selector that could not be parsed or uses an unsupported field label.
///
/// `Display` is exactly the message kube-apiserver puts in the 400 BadRequest
/// `Status` for the same input.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The `labelSelector` (or a `metav1.LabelSelector` value) is invalid.
    #[error("{0}")]
    Label(String),
    /// The `fieldSelector` could not be parsed.
    #[error("{0}")]
    Field(String),
    /// The field selector names a field label this kind does not support.
    #[error("{0}")]
    UnsupportedField(String),
}

// ---------------------------------------------------------------------------
// Label selectors
// ---------------------------------------------------------------------------

/// The operator of one label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
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
struct Requirement {
    key: String,
    op: Op,
    /// Sorted for set operators (they come from a set), as given otherwise.
    values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
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
    requirements: Vec<Requirement>,
    /// A null `metav1.LabelSelector`: selects nothing.
    nothing: bool,
}

impl LabelSelector {
    /// Parses a `labelSelector` query value exactly like `labels.Parse`.
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parser = Parser {
            tokens: lex(s),
            pos: 0,
        };
        let mut requirements = parser.parse().map_err(SelectorError::Label)?;
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
fn label_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

// --- lexer -----------------------------------------------------------------

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
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

fn keyword(s: &[u8]) -> Option<Tok> {
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

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// A byte cursor; like the Go lexer, reading past the end (or a NUL byte)
/// yields 0.
struct Lexer<'a> {
    s: &'a [u8],
    pos: usize,
}

impl Lexer<'_> {
    fn read(&mut self) -> u8 {
        match self.s.get(self.pos) {
            Some(&b) => {
                self.pos += 1;
                b
            }
            None => 0,
        }
    }

    fn unread(&mut self) {
        self.pos = self.pos.saturating_sub(1);
    }

    fn lex(&mut self) -> (Tok, String) {
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

    fn ident(&mut self) -> (Tok, String) {
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

    fn special(&mut self) -> (Tok, String) {
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

fn lex(s: &str) -> Vec<(Tok, String)> {
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

struct Parser {
    tokens: Vec<(Tok, String)>,
    pos: usize,
}

impl Parser {
    /// The current token; `values` context turns `in`/`notin` into identifiers.
    fn peek(&self, values: bool) -> (Tok, String) {
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

    fn next(&mut self, values: bool) -> (Tok, String) {
        let item = self.peek(values);
        self.pos += 1;
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut reqs = Vec::new();
        loop {
            let (tok, lit) = self.peek(true);
            match tok {
                Tok::Ident | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    reqs.push(r);
                    let (t, l) = self.next(true);
                    match t {
                        Tok::End => return Ok(reqs),
                        Tok::Comma => {
                            let (t2, l2) = self.peek(true);
                            if t2 != Tok::Ident && t2 != Tok::Not {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Tok::End => return Ok(reqs),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let (key, inferred) = self.key_and_inferred_op()?;
        if let Some(op) = inferred {
            return new_requirement(&key, op, Vec::new(), None).map_err(|e| e.to_string());
        }
        let op = self.operator()?;
        let values = match op {
            Op::In | Op::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        new_requirement(&key, op, values.into_iter().collect(), None).map_err(|e| e.to_string())
    }

    /// Reads `[!]key`; returns `Some(op)` when the operator is implied
    /// (`!key` → DoesNotExist, a bare key before `,`/end → Exists).
    fn key_and_inferred_op(&mut self) -> Result<(String, Option<Op>), String> {
        let (mut tok, mut lit) = self.next(true);
        let mut op = None;
        if tok == Tok::Not {
            op = Some(Op::DoesNotExist);
            (tok, lit) = self.next(true);
        }
        if tok != Tok::Ident {
            return Err(format!("found '{lit}', expected: identifier"));
        }
        if let Some(detail) = qualified_name_errors(&lit) {
            return Err(invalid("<nil>", &go_quote(&lit), &detail));
        }
        let (t, _) = self.peek(true);
        if (t == Tok::End || t == Tok::Comma) && op.is_none() {
            op = Some(Op::Exists);
        }
        Ok((lit, op))
    }

    fn operator(&mut self) -> Result<Op, String> {
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
                return Err(format!(
                    "found '{lit}', expected: '=', '!=', '==', 'in', notin'"
                ));
            }
        })
    }

    fn set_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.next(true);
        if tok != Tok::OpenPar {
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.peek(true);
        match tok {
            Tok::Ident | Tok::Comma => {
                let set = self.identifiers()?;
                let (t, _) = self.next(true);
                if t != Tok::ClosePar {
                    // kube reports the token seen before the list here.
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Tok::ClosePar => {
                self.next(true);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn identifiers(&mut self) -> Result<BTreeSet<String>, String> {
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
                        _ => return Err(format!("found '{l2}', expected: ',' or ')'")),
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
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (t, _) = self.peek(true);
        if t == Tok::End || t == Tok::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (t, lit) = self.next(true);
        if t == Tok::Ident {
            Ok(BTreeSet::from([lit]))
        } else {
            Err(format!("found '{lit}', expected: identifier"))
        }
    }
}

/// `labels.NewRequirement` with its validation; `path` is the field path
/// prefix (always absent here, as for the query parameter).
fn new_requirement(
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
fn invalid(path: &str, quoted_value: &str, detail: &str) -> String {
    format!("{path}: Invalid value: {quoted_value}: {detail}")
}

/// `utilerrors.NewAggregate(...).Error()`: one message as is, several
/// de-duplicated inside `[...]`.
fn aggregate(errs: Vec<String>) -> String {
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
fn go_string_slice(v: &[String]) -> String {
    if v.is_empty() {
        return "[]string(nil)".to_string();
    }
    let items: Vec<String> = v.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", items.join(", "))
}

// --- validation (apimachinery util/validation) ------------------------------

const QNAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QNAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `validation.RegexError`.
fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
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

fn is_qualified_name_part(s: &str) -> bool {
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

fn is_dns1123_subdomain(s: &str) -> bool {
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
fn qualified_name_errors(value: &str) -> Option<String> {
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
fn label_value_errors(value: &str) -> Option<String> {
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

// ---------------------------------------------------------------------------
// Field selectors
// ---------------------------------------------------------------------------

/// One `field=value` / `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    negate: bool,
}

/// A parsed field selector (`fields.Selector`): an AND of terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses a `fieldSelector` query value exactly like `fields.ParseSelector`
    /// (comma-separated `=`, `==`, `!=` terms; `\`, `,` and `=` escaped with `\`
    /// in values).
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(s);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(part) else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{s}'; can't understand '{part}'"
                )));
            };
            let value = unescape_value(rhs)?;
            // An empty field with an empty value selects everything.
            if lhs.is_empty() && value.is_empty() {
                continue;
            }
            terms.push(FieldTerm {
                field: lhs.to_string(),
                value,
                negate: op == "!=",
            });
        }
        Ok(FieldSelector { terms })
    }

    /// The field labels used, in term order (duplicates possible).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// True if every term holds; `get` returns a field's value (`None` counts
    /// as the empty string, as a missing key in kube's `fields.Set`).
    pub fn matches(&self, get: &dyn Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let v = get(&t.field).unwrap_or_default();
            (v == t.value) != t.negate
        })
    }

    /// True if the selector has no terms.
    pub fn is_everything(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value this selector requires `field` to equal, if any
    /// (`RequiresExactMatch`), e.g. `metadata.name` for a watch on one object.
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negate && t.field == field)
            .map(|t| t.value.as_str())
    }

    /// Rewrites field labels to the ones used when matching (the field label
    /// conversion of the kind): `spec.host` → `spec.nodeName` for pods. Returns
    /// the kube error for the first unsupported label.
    pub fn convert_for(&self, group: &str, resource: &str) -> Result<Self, SelectorError> {
        let mut terms = Vec::with_capacity(self.terms.len());
        for t in &self.terms {
            let field = convert_field_label(group, resource, &t.field)?;
            terms.push(FieldTerm {
                field,
                value: t.value.clone(),
                negate: t.negate,
            });
        }
        Ok(FieldSelector { terms })
    }
}

impl fmt::Display for FieldSelector {
    /// The canonical form (`a=b,c!=d`, values re-escaped).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let escaped = t
                .value
                .replace('\\', "\\\\")
                .replace(',', "\\,")
                .replace('=', "\\=");
            let op = if t.negate { "!=" } else { "=" };
            write!(f, "{}{op}{escaped}", t.field)?;
        }
        Ok(())
    }
}

/// Splits on commas not preceded by a backslash escape (escapes kept).
fn split_terms(s: &str) -> Vec<&str> {
    if s.is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in s.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            out.push(&s[start..i]);
            start = i + 1;
        }
    }
    out.push(&s[start..]);
    out
}

/// Splits at the first operator (`!=`, `==`, `=`, tried in that order at each
/// position).
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(rhs) = rest.strip_prefix(op) {
                return Some((&term[..i], op, rhs));
            }
        }
    }
    None
}

fn unescape_value(s: &str) -> Result<String, SelectorError> {
    if !s.contains(['\\', ',', '=']) {
        return Ok(s.to_string());
    }
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            match c {
                '\\' | ',' | '=' => out.push(c),
                _ => {
                    return Err(SelectorError::Field(format!(
                        "invalid field selector: invalid escape sequence: \\{c}"
                    )));
                }
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            ',' | '=' => {
                // kube prints the rune as its code point number.
                return Err(SelectorError::Field(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )));
            }
            _ => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::Field(
            "invalid field selector: invalid escape sequence: \\".to_string(),
        ));
    }
    Ok(out)
}

// --- per-kind field labels ---------------------------------------------------

/// How a kind's field label conversion rejects an unknown label.
enum Reject {
    /// `field label not supported: X` (core kinds, events.k8s.io, certificates).
    NotSupported,
    /// `field label "X" not supported for batchv1.Job`.
    Job,
    /// No conversion registered: only metadata.name / metadata.namespace.
    Default,
}

/// Accepted field labels of a kind (as sent by clients) and how unknown ones
/// are rejected.
fn accepted_labels(group: &str, resource: &str) -> (&'static [&'static str], Reject) {
    match (group, resource) {
        ("", "pods") => (
            &[
                "metadata.name",
                "metadata.namespace",
                "spec.nodeName",
                "spec.restartPolicy",
                "spec.schedulerName",
                "spec.serviceAccountName",
                "spec.hostNetwork",
                "status.phase",
                "status.podIP",
                "status.podIPs",
                "status.nominatedNodeName",
                "spec.host",
            ],
            Reject::NotSupported,
        ),
        ("", "nodes") => (
            &["metadata.name", "spec.unschedulable"],
            Reject::NotSupported,
        ),
        ("", "replicationcontrollers") => (
            &["metadata.name", "metadata.namespace", "status.replicas"],
            Reject::NotSupported,
        ),
        ("", "events") => (
            &[
                "involvedObject.kind",
                "involvedObject.namespace",
                "involvedObject.name",
                "involvedObject.uid",
                "involvedObject.apiVersion",
                "involvedObject.resourceVersion",
                "involvedObject.fieldPath",
                "reason",
                "reportingComponent",
                "source",
                "type",
                "metadata.namespace",
                "metadata.name",
            ],
            Reject::NotSupported,
        ),
        ("events.k8s.io", "events") => (
            &[
                "reason",
                "regarding.kind",
                "regarding.namespace",
                "regarding.name",
                "regarding.uid",
                "regarding.apiVersion",
                "regarding.resourceVersion",
                "regarding.fieldPath",
                "reportingController",
                "type",
                "metadata.namespace",
                "metadata.name",
            ],
            Reject::NotSupported,
        ),
        ("", "namespaces") => (&["status.phase", "metadata.name"], Reject::NotSupported),
        ("", "secrets") => (
            &["type", "metadata.namespace", "metadata.name"],
            Reject::NotSupported,
        ),
        ("", "services") => (
            &[
                "metadata.namespace",
                "metadata.name",
                "spec.clusterIP",
                "spec.type",
            ],
            Reject::NotSupported,
        ),
        ("batch", "jobs") => (
            &["metadata.name", "metadata.namespace", "status.successful"],
            Reject::Job,
        ),
        ("certificates.k8s.io", "certificatesigningrequests") => {
            (&["metadata.name", "spec.signerName"], Reject::NotSupported)
        }
        _ => (&["metadata.name", "metadata.namespace"], Reject::Default),
    }
}

/// The field label conversion of a kind: the label used for matching, or the
/// exact kube error (a 400 BadRequest) for an unsupported label.
pub fn convert_field_label(
    group: &str,
    resource: &str,
    label: &str,
) -> Result<String, SelectorError> {
    let (accepted, reject) = accepted_labels(group, resource);
    if accepted.contains(&label) {
        return Ok(match (group, resource, label) {
            ("", "pods", "spec.host") => "spec.nodeName".to_string(),
            _ => label.to_string(),
        });
    }
    Err(SelectorError::UnsupportedField(match reject {
        Reject::NotSupported => format!("field label not supported: {label}"),
        Reject::Job => format!(
            "field label {} not supported for batchv1.Job",
            go_quote(label)
        ),
        Reject::Default => format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            go_quote(label)
        ),
    }))
}

fn path<'a>(obj: &'a Value, p: &[&str]) -> Option<&'a Value> {
    p.iter().try_fold(obj, |v, k| v.get(k))
}

/// A string at a JSON path ("" when missing or not a string).
fn str_at(obj: &Value, p: &[&str]) -> String {
    path(obj, p)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

/// First non-empty string among several JSON paths (used where core and
/// events.k8s.io spell the same field differently).
fn first_str(obj: &Value, paths: &[&[&str]]) -> String {
    paths
        .iter()
        .map(|p| str_at(obj, p))
        .find(|s| !s.is_empty())
        .unwrap_or_default()
}

fn int_at(obj: &Value, p: &[&str]) -> i64 {
    path(obj, p).and_then(Value::as_i64).unwrap_or(0)
}

/// The pod IP as the internal API sees it: `status.podIP`, else `status.podIPs[0].ip`.
pub(crate) fn pod_ip(pod: &Value) -> String {
    let ip = str_at(pod, &["status", "podIP"]);
    if !ip.is_empty() {
        return ip;
    }
    path(pod, &["status", "podIPs", "0"])
        .or_else(|| {
            path(pod, &["status", "podIPs"])
                .and_then(|v| v.as_array())
                .and_then(|a| a.first())
        })
        .map(|v| str_at(v, &["ip"]))
        .unwrap_or_default()
}

/// Value of a field label for an object of a kind, as kube's selectable
/// fields set holds it. `None`: the label is not supported for this kind
/// (see [`convert_field_label`] for the error). `Some(None)`: supported but not
/// in kube's field set (matches as ""). `Some(Some(v))`: the value; missing
/// object fields read as "".
pub fn field_value(
    group: &str,
    resource: &str,
    obj: &Value,
    field: &str,
) -> Option<Option<String>> {
    let field = convert_field_label(group, resource, field).ok()?;
    let ns_field = || str_at(obj, &["metadata", "namespace"]);
    let v = match field.as_str() {
        "metadata.name" => str_at(obj, &["metadata", "name"]),
        "metadata.namespace" => ns_field(),
        _ => match (group, resource) {
            ("", "pods") => match field.as_str() {
                "spec.nodeName" => str_at(obj, &["spec", "nodeName"]),
                "spec.restartPolicy" => str_at(obj, &["spec", "restartPolicy"]),
                "spec.schedulerName" => str_at(obj, &["spec", "schedulerName"]),
                "spec.serviceAccountName" => str_at(obj, &["spec", "serviceAccountName"]),
                "spec.hostNetwork" => {
                    let b = path(obj, &["spec", "hostNetwork"]).and_then(Value::as_bool);
                    b.unwrap_or(false).to_string()
                }
                "status.phase" => str_at(obj, &["status", "phase"]),
                "status.podIP" => pod_ip(obj),
                "status.nominatedNodeName" => str_at(obj, &["status", "nominatedNodeName"]),
                _ => return Some(None),
            },
            ("", "nodes") => {
                let b = path(obj, &["spec", "unschedulable"]).and_then(Value::as_bool);
                b.unwrap_or(false).to_string()
            }
            ("", "replicationcontrollers") => int_at(obj, &["status", "replicas"]).to_string(),
            ("", "namespaces") => str_at(obj, &["status", "phase"]),
            ("", "secrets") => str_at(obj, &["type"]),
            ("", "services") => match field.as_str() {
                "spec.clusterIP" => str_at(obj, &["spec", "clusterIP"]),
                _ => str_at(obj, &["spec", "type"]),
            },
            ("batch", "jobs") => int_at(obj, &["status", "succeeded"]).to_string(),
            ("certificates.k8s.io", _) => str_at(obj, &["spec", "signerName"]),
            ("", "events") | ("events.k8s.io", "events") => event_field(obj, &field),
            _ => return Some(None),
        },
    };
    Some(Some(v))
}

/// Event selectable fields; reads both the core v1 and events.k8s.io spelling.
fn event_field(obj: &Value, field: &str) -> String {
    let reference = |k: &str| first_str(obj, &[&["involvedObject", k], &["regarding", k]]);
    match field {
        "involvedObject.kind" | "regarding.kind" => reference("kind"),
        "involvedObject.namespace" | "regarding.namespace" => reference("namespace"),
        "involvedObject.name" | "regarding.name" => reference("name"),
        "involvedObject.uid" | "regarding.uid" => reference("uid"),
        "involvedObject.apiVersion" | "regarding.apiVersion" => reference("apiVersion"),
        "involvedObject.resourceVersion" | "regarding.resourceVersion" => {
            reference("resourceVersion")
        }
        "involvedObject.fieldPath" | "regarding.fieldPath" => reference("fieldPath"),
        "reason" => str_at(obj, &["reason"]),
        "type" => str_at(obj, &["type"]),
        "reportingComponent" | "reportingController" => {
            first_str(obj, &[&["reportingComponent"], &["reportingController"]])
        }
        "source" => {
            let c = first_str(
                obj,
                &[&["source", "component"], &["deprecatedSource", "component"]],
            );
            if c.is_empty() {
                first_str(obj, &[&["reportingComponent"], &["reportingController"]])
            } else {
                c
            }
        }
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        match v {
            Value::Object(m) => m,
            _ => Map::new(),
        }
    }

    fn perr(s: &str) -> String {
        match LabelSelector::parse(s) {
            Ok(sel) => panic!("{s:?} parsed as {sel:?}"),
            Err(e) => e.to_string(),
        }
    }

    fn ok(s: &str) -> LabelSelector {
        match LabelSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?}: {e}"),
        }
    }

    #[test]
    fn equality_based() {
        let l = labels(json!({"app": "web", "tier": "front"}));
        assert!(ok("app=web").matches(Some(&l)));
        assert!(ok("app==web").matches(Some(&l)));
        assert!(ok(" app = web , tier=front ").matches(Some(&l)));
        assert!(!ok("app=db").matches(Some(&l)));
        assert!(ok("app!=db").matches(Some(&l)));
        assert!(ok("missing!=x").matches(Some(&l)));
        assert!(!ok("app!=web").matches(Some(&l)));
        assert!(ok("app").matches(Some(&l)));
        assert!(!ok("!app").matches(Some(&l)));
        assert!(ok("!missing").matches(Some(&l)));
        assert!(ok("").matches(None));
        assert!(ok("").is_everything());
        assert!(!ok("app").matches(None));
        assert!(ok("app=").matches(Some(&labels(json!({"app": ""})))));
        assert!(!ok("app=").matches(None));
    }

    #[test]
    fn set_based() {
        let l = labels(json!({"env": "prod", "n": "10"}));
        assert!(ok("env in (prod,dev)").matches(Some(&l)));
        assert!(ok("env in(prod)").matches(Some(&l)));
        assert!(!ok("env notin (prod, dev)").matches(Some(&l)));
        assert!(ok("other notin (prod)").matches(Some(&l)));
        assert!(!ok("other in (prod)").matches(Some(&l)));
        assert!(ok("env in (in)").matches(Some(&labels(json!({"env": "in"})))));
        assert!(ok("in in (notin)").matches(Some(&labels(json!({"in": "notin"})))));
        assert!(ok("env in (,prod)").matches(Some(&labels(json!({"env": ""})))));
        assert!(ok("env in ()").matches(Some(&labels(json!({"env": ""})))));
        assert!(ok("n>5").matches(Some(&l)));
        assert!(!ok("n<5").matches(Some(&l)));
        assert!(!ok("env>5").matches(Some(&l)));
        assert_eq!(ok("b in (z,a),a").to_string(), "a,b in (a,z)");
        assert_eq!(ok("!x,y!=1").to_string(), "!x,y!=1");
    }

    #[test]
    fn parse_errors() {
        assert_eq!(
            perr("a b"),
            "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'"
        );
        assert_eq!(perr("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(perr("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(
            perr(",a"),
            "found ',', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            perr("a in b"),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(
            perr("a in (b"),
            "unable to parse requirement: found '', expected: ',' or ')'"
        );
        assert_eq!(
            perr("a in (b c)"),
            "unable to parse requirement: found 'c', expected: ',' or ')'"
        );
        assert_eq!(
            perr("a in (=)"),
            "unable to parse requirement: found '=', expected: ',', ')' or identifier"
        );
        assert_eq!(
            perr("a=(b"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(
            perr("!=a"),
            "found '!=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(
            perr("!(a"),
            "unable to parse requirement: found '(', expected: identifier"
        );
        assert_eq!(perr("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(
            perr("a ( b"),
            "unable to parse requirement: found '(', expected: '=', '!=', '==', 'in', notin'"
        );
        assert_eq!(
            perr("a>b"),
            "unable to parse requirement: values[0]: Invalid value: \"b\": for 'Gt', 'Lt' operators, the value must be an integer"
        );
    }

    #[test]
    fn validation_errors() {
        let qn = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        assert_eq!(
            perr("-a=b"),
            format!("unable to parse requirement: <nil>: Invalid value: \"-a\": name part {qn}")
        );
        assert_eq!(
            perr("a/b/c"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a qualified name {qn} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )
        );
        assert_eq!(
            perr("/a"),
            "unable to parse requirement: <nil>: Invalid value: \"/a\": prefix part must be non-empty"
        );
        assert_eq!(
            perr("Ex.com/a"),
            "unable to parse requirement: <nil>: Invalid value: \"Ex.com/a\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
        );
        assert_eq!(
            perr("a/"),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"a/\": name part must be non-empty; name part {qn}"
            )
        );
        let long = "k".repeat(64);
        assert_eq!(
            perr(&long),
            format!(
                "unable to parse requirement: <nil>: Invalid value: \"{long}\": name part must be no more than 63 characters"
            )
        );
        let lv = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        assert_eq!(
            perr("a=b@"),
            format!("unable to parse requirement: values[0][a]: Invalid value: \"b@\": {lv}")
        );
        assert_eq!(
            perr("a in (x@,-y)"),
            format!(
                "unable to parse requirement: [values[0][a]: Invalid value: \"-y\": {lv}, values[1][a]: Invalid value: \"x@\": {lv}]"
            )
        );
    }

    #[test]
    fn from_value() {
        let sel = LabelSelector::from_label_selector_value(&json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "legacy", "operator": "DoesNotExist"}
            ]
        }))
        .unwrap_or_default();
        assert_eq!(sel.to_string(), "app=web,env in (dev,prod),!legacy");
        assert!(sel.matches(Some(&labels(json!({"app": "web", "env": "dev"})))));
        assert!(!sel.matches(Some(&labels(
            json!({"app": "web", "env": "dev", "legacy": "1"})
        ))));
        let none = LabelSelector::from_label_selector_value(&Value::Null).unwrap_or_default();
        assert!(!none.matches(None) && !none.is_everything());
        let all = LabelSelector::from_label_selector_value(&json!({})).unwrap_or_default();
        assert!(all.matches(None) && all.is_everything());
        let e = LabelSelector::from_label_selector_value(
            &json!({"matchExpressions": [{"key": "a", "operator": "Bogus"}]}),
        );
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("\"Bogus\" is not a valid label selector operator".to_string())
        );
        let e = LabelSelector::from_label_selector_value(
            &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
        );
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("values: Invalid value: []string(nil): for 'in', 'notin' operators, values set can't be empty".to_string())
        );
        let e = LabelSelector::from_label_selector_value(
            &json!({"matchExpressions": [{"key": "a", "operator": "Exists", "values": ["x"]}]}),
        );
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("values: Invalid value: []string{\"x\"}: values set must be empty for exists and does not exist".to_string())
        );
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        assert_eq!(
            format_label_selector(Some(&json!({"matchLabels": {"a": "b"}}))),
            "a=b"
        );
    }

    #[test]
    fn format_labels_sorted() {
        assert_eq!(format_labels(None), "<none>");
        assert_eq!(
            format_labels(Some(&labels(json!({"b": "1", "a": "2"})))),
            "a=2,b=1"
        );
    }

    #[test]
    fn lexer_edge_cases_do_not_panic() {
        for s in [
            "",
            "!",
            "!!",
            "=",
            "==",
            "===",
            "!=!",
            "(",
            ")",
            "a in",
            "a in (",
            "a in (,",
            "a in (,,)",
            "a notin",
            "a=\0b",
            "\0",
            "a\0=b",
            "<>",
            "a<",
            "é=ü",
            "a in ((",
            ",,,",
            "a=b,!",
            "x in (a,)",
        ] {
            let _ = LabelSelector::parse(s);
            let _ = FieldSelector::parse(s);
        }
        // a NUL byte ends an identifier and is skipped, like the Go lexer
        assert!(LabelSelector::parse("a\0").is_ok());
        assert!(ok("x in (a,)").matches(Some(&labels(json!({"x": ""})))));
    }

    #[test]
    fn field_selectors() {
        let get = |f: &str| match f {
            "metadata.name" => Some("web-1".to_string()),
            "status.phase" => Some("Running".to_string()),
            _ => None,
        };
        let ok = |s: &str| match FieldSelector::parse(s) {
            Ok(sel) => sel,
            Err(e) => panic!("{s:?}: {e}"),
        };
        assert!(ok("metadata.name=web-1").matches(&get));
        assert!(ok("metadata.name==web-1,status.phase!=Pending").matches(&get));
        assert!(!ok("status.phase=Pending").matches(&get));
        assert!(ok("spec.nodeName=").matches(&get));
        assert!(ok("").is_everything());
        assert!(ok("=").is_everything());
        assert!(ok(",,").is_everything());
        let esc = ok("a=x\\,y\\=z\\\\");
        assert!(esc.matches(&|_| Some("x,y=z\\".to_string())));
        assert_eq!(esc.to_string(), "a=x\\,y\\=z\\\\");
        assert_eq!(esc.fields().collect::<Vec<_>>(), vec!["a"]);
        assert_eq!(ok("b=1,a=2").fields().collect::<Vec<_>>(), vec!["a", "b"]);
        assert_eq!(ok("a=1").requires_exact_match("a"), Some("1"));

        let err = |s: &str| FieldSelector::parse(s).map_err(|e| e.to_string()).err();
        assert_eq!(
            err("foo"),
            Some("invalid selector: 'foo'; can't understand 'foo'".into())
        );
        assert_eq!(
            err("b=1,foo"),
            Some("invalid selector: 'b=1,foo'; can't understand 'foo'".into())
        );
        assert_eq!(
            err("a=b=c"),
            Some("invalid field selector: unescaped character in value: 61".into())
        );
        assert_eq!(
            err("a=\\x"),
            Some("invalid field selector: invalid escape sequence: \\x".into())
        );
        assert_eq!(
            err("a=x\\"),
            Some("invalid field selector: invalid escape sequence: \\".into())
        );
    }

    #[test]
    fn field_labels_per_kind() {
        let conv =
            |g: &str, r: &str, f: &str| convert_field_label(g, r, f).map_err(|e| e.to_string());
        assert_eq!(conv("", "pods", "spec.host"), Ok("spec.nodeName".into()));
        assert_eq!(
            conv("", "pods", "foo"),
            Err("field label not supported: foo".into())
        );
        assert_eq!(
            conv("", "nodes", "metadata.namespace"),
            Err("field label not supported: metadata.namespace".into())
        );
        assert_eq!(
            conv("batch", "jobs", "foo"),
            Err("field label \"foo\" not supported for batchv1.Job".into())
        );
        assert_eq!(
            conv("", "configmaps", "data.x"),
            Err("\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"".into())
        );
        assert_eq!(
            conv("events.k8s.io", "events", "involvedObject.kind"),
            Err("field label not supported: involvedObject.kind".into())
        );
        let sel = FieldSelector::parse("spec.host=n1")
            .unwrap_or_default()
            .convert_for("", "pods");
        assert_eq!(
            sel.map(|s| s.to_string()),
            Ok("spec.nodeName=n1".to_string())
        );
    }

    #[test]
    fn field_values() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"nodeName": "n1", "restartPolicy": "Always"},
            "status": {"phase": "Running", "podIPs": [{"ip": "10.0.0.1"}]}
        });
        let fv = |f: &str| field_value("", "pods", &pod, f);
        assert_eq!(fv("metadata.name"), Some(Some("p".into())));
        assert_eq!(fv("spec.host"), Some(Some("n1".into())));
        assert_eq!(fv("spec.hostNetwork"), Some(Some("false".into())));
        assert_eq!(fv("status.podIP"), Some(Some("10.0.0.1".into())));
        assert_eq!(fv("spec.schedulerName"), Some(Some(String::new())));
        assert_eq!(fv("status.podIPs"), Some(None));
        assert_eq!(fv("spec.containers"), None);

        let ev = json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "regarding": {"kind": "Pod", "name": "p"},
            "reportingController": "kubelet",
            "reason": "Started", "type": "Normal"
        });
        assert_eq!(
            field_value("events.k8s.io", "events", &ev, "regarding.kind"),
            Some(Some("Pod".into()))
        );
        assert_eq!(
            field_value("events.k8s.io", "events", &ev, "reportingController"),
            Some(Some("kubelet".into()))
        );
        assert_eq!(
            field_value("", "events", &ev, "source"),
            Some(Some("kubelet".into()))
        );
        assert_eq!(
            field_value("", "events", &ev, "involvedObject.name"),
            Some(Some("p".into()))
        );
        let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 3}});
        assert_eq!(
            field_value("batch", "jobs", &job, "status.successful"),
            Some(Some("3".into()))
        );
        let node = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert_eq!(
            field_value("", "nodes", &node, "spec.unschedulable"),
            Some(Some("true".into()))
        );
    }
}
