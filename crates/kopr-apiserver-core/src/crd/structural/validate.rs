//! Custom resource validation against a [`Structural`] schema.
//!
//! [`openapi_errors`] reimplements kube-openapi's `validate.SchemaValidator`
//! (type, allOf/anyOf/oneOf/not, string, format, number, slice, enum and
//! object validators, in that order, with its de-duplication of identical
//! messages and its match counting for anyOf/oneOf) and converts the
//! results like apiextensions' `kubeOpenAPIResultToFieldErrors`.
//! [`embedded_errors`] is `objectmeta.Validate` for
//! x-kubernetes-embedded-resource objects and [`list_type_errors`] is
//! `listtype.ValidateListSetsAndMaps`.
//!
//! Go iterates maps in random order; here object keys are visited in
//! sorted order, so error order among sibling fields is deterministic.

use super::{Additional, MAX_VALUE_DEPTH, Structural, formats};
pub(crate) use crate::gofmt::float as go_float;
use crate::validation::{FieldError, FieldErrorKind, child, go_quote, go_repr, index, key};
use serde_json::{Map, Value};
use std::collections::HashSet;

const IN: &str = "body";

/// kube-openapi error codes that apiextensions maps specially.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Code {
    InvalidType,
    Required,
    TooLong,
    Enum,
    MaxItems,
    TooManyProperties,
    Other,
}

/// One kube-openapi error: an `*errors.Validation` or a plain error.
#[derive(Debug, Clone)]
enum OErr {
    Validation {
        code: Code,
        name: String,
        value: Option<Value>,
        valid: i64,
        values: Vec<Value>,
        msg: String,
    },
    Plain(String),
}

impl OErr {
    fn msg(&self) -> &str {
        match self {
            OErr::Validation { msg, .. } | OErr::Plain(msg) => msg,
        }
    }

    fn v(
        code: Code,
        name: &(impl std::fmt::Display + ?Sized),
        value: Option<Value>,
        msg: String,
    ) -> OErr {
        OErr::Validation {
            code,
            name: name.to_string(),
            value,
            valid: -1,
            values: Vec::new(),
            msg,
        }
    }
}

/// A value's path as kube-openapi writes it, built only when an error names it: `""` at
/// the root, `.k` for a key (even under the root), `name` or `path.name` for a declared
/// property, `path[i]` for an item.
#[derive(Debug, Clone, Copy)]
enum Path<'a> {
    Root,
    /// `{parent}.{key}`.
    Dot(&'a Path<'a>, &'a str),
    /// A declared property: `{name}` under an empty path, else `{parent}.{name}`.
    Property(&'a Path<'a>, &'a str),
    /// `{parent}[{i}]`.
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    fn dot(&'a self, key: &'a str) -> Path<'a> {
        Path::Dot(self, key)
    }

    fn property(&'a self, name: &'a str) -> Path<'a> {
        Path::Property(self, name)
    }

    fn index(&'a self, i: usize) -> Path<'a> {
        Path::Index(self, i)
    }

    /// Whether the path writes as `""`.
    fn is_empty(&self) -> bool {
        match self {
            Path::Root => true,
            Path::Property(parent, name) => name.is_empty() && parent.is_empty(),
            Path::Dot(..) | Path::Index(..) => false,
        }
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Dot(parent, key) => write!(f, "{parent}.{key}"),
            Path::Property(parent, name) if parent.is_empty() => f.write_str(name),
            Path::Property(parent, name) => write!(f, "{parent}.{name}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A `validate.Result`: errors (unique by message) and the match count.
#[derive(Debug, Default)]
struct Res {
    errs: Vec<OErr>,
    seen: HashSet<String>,
    count: usize,
}

impl Res {
    fn err(e: OErr) -> Res {
        let mut r = Res::default();
        r.add(e);
        r
    }

    fn add(&mut self, e: OErr) {
        if self.seen.insert(e.msg().to_string()) {
            self.errs.push(e);
        }
    }

    fn merge(&mut self, o: Res) {
        for e in o.errs {
            self.add(e);
        }
        self.count += o.count;
    }

    fn is_valid(&self) -> bool {
        self.errs.is_empty()
    }
}

/// The Go dynamic kind of a decoded JSON value.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Nil,
    Bool,
    Int(i64),
    Float(f64),
    Str,
    Slice,
    Map,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Null => Kind::Nil,
        Value::Bool(_) => Kind::Bool,
        Value::Number(n) => match n.as_i64() {
            Some(i) => Kind::Int(i),
            None => Kind::Float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(_) => Kind::Str,
        Value::Array(_) => Kind::Slice,
        Value::Object(_) => Kind::Map,
    }
}

/// `%#v` of a decoded JSON value held in an `interface{}`.
pub(crate) fn go_sharp_v(v: &Value, depth: usize) -> String {
    if depth > MAX_VALUE_DEPTH {
        return "...".into();
    }
    match v {
        Value::Null => "interface {}(nil)".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match n.as_i64() {
            Some(i) => i.to_string(),
            None => go_float(n.as_f64().unwrap_or(0.0)),
        },
        Value::String(s) => go_quote(s),
        Value::Array(a) => {
            let parts: Vec<String> = a.iter().map(|x| go_sharp_v(x, depth + 1)).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(m) => {
            let parts: Vec<String> = m
                .iter()
                .map(|(k, x)| format!("{}:{}", go_quote(k), go_sharp_v(x, depth + 1)))
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// A bad value as `field.Error` prints an `interface{}` holding it.
fn bad_value(v: &Value) -> Value {
    match v {
        Value::Array(_) | Value::Object(_) => go_repr(go_sharp_v(v, 0)),
        other => other.clone(),
    }
}

fn num_value(k: Kind) -> Value {
    match k {
        Kind::Int(i) => Value::from(i),
        Kind::Float(f) => serde_json::Number::from_f64(f)
            .map(Value::Number)
            .unwrap_or(Value::Null),
        _ => Value::Null,
    }
}

fn contains(types: &[String], t: &str) -> bool {
    types.iter().any(|x| x == t)
}

/// `swag.IsFloat64AJSONInteger`.
fn is_float_json_integer(f: f64) -> bool {
    const MAX: f64 = 9_007_199_254_740_991.0;
    if !f.is_finite() || !(-MAX..=MAX).contains(&f) {
        return false;
    }
    if f.fract() == 0.0 {
        return true;
    }
    if f < 0.0 {
        return false;
    }
    let g = f.trunc();
    if g == 0.0 {
        return false;
    }
    (f - g).abs() / (f + g) < 1e-9
}

/// The kube-openapi schema validator.
struct Validator;

impl Validator {
    fn validate(s: &Structural, path: &Path<'_>, data: &Value, depth: usize) -> Res {
        let mut result = Res::default();
        if depth > MAX_VALUE_DEPTH {
            return result;
        }
        let k = kind(data);
        if k == Kind::Nil {
            result.merge(Self::type_check(s, path, k));
            result.merge(Self::common(s, path, data));
            return result;
        }
        if !s.types.is_empty() || !s.format.is_empty() {
            result.merge(Self::type_check(s, path, k));
            result.count += 1;
        }
        result.merge(Self::schema_props(s, path, data, depth));
        result.count += 1;
        if k == Kind::Str {
            result.merge(Self::string(s, path, data));
            result.count += 1;
            if formats::is_known(&s.format) {
                result.merge(Self::format(s, path, data));
                result.count += 1;
            }
        }
        if matches!(k, Kind::Int(_) | Kind::Float(_)) {
            result.merge(Self::number(s, path, k));
            result.count += 1;
        }
        if k == Kind::Slice {
            result.merge(Self::slice(s, path, data, depth));
            result.count += 1;
        }
        result.merge(Self::common(s, path, data));
        result.count += 1;
        if k == Kind::Map {
            result.merge(Self::object(s, path, data, depth));
            result.count += 1;
        }
        result.count += 1;
        result
    }

    fn invalid_type(path: &Path<'_>, type_name: &str, value: &str) -> OErr {
        OErr::v(
            Code::InvalidType,
            path,
            Some(Value::String(value.to_string())),
            format!(
                "{path} in {IN} must be of type {type_name}: {}",
                go_quote(value)
            ),
        )
    }

    fn type_check(s: &Structural, path: &Path<'_>, k: Kind) -> Res {
        let mut result = Res {
            count: 1,
            ..Res::default()
        };
        if k == Kind::Nil {
            if !s.types.is_empty() && !contains(&s.types, "null") && !s.nullable {
                return Res::err(Self::invalid_type(path, &s.types.join(","), "null"));
            }
            return result;
        }
        let (sch_type, format) = match k {
            Kind::Bool => ("boolean", ""),
            Kind::Str => ("string", ""),
            Kind::Int(_) => ("integer", "int64"),
            Kind::Float(_) => ("number", "float64"),
            Kind::Slice => ("array", ""),
            Kind::Map => ("object", ""),
            Kind::Nil => ("", ""),
        };
        let is_float_int = matches!(k, Kind::Float(f) if is_float_json_integer(f))
            && contains(&s.types, "integer");
        let is_int_float = sch_type == "integer" && contains(&s.types, "number");
        let is_lower_int = s.format == "int64" && format == "int32";
        let is_lower_float = s.format == "float64" && format == "float32";
        let string_or_slice = matches!(k, Kind::Str | Kind::Slice);
        if !string_or_slice
            && !s.format.is_empty()
            && !(contains(&s.types, sch_type)
                || format == s.format
                || is_float_int
                || is_int_float
                || is_lower_int
                || is_lower_float)
        {
            return Res::err(Self::invalid_type(path, &s.format, format));
        }
        let numeric = contains(&s.types, "number") || contains(&s.types, "integer");
        if !numeric && !s.format.is_empty() && string_or_slice {
            return result;
        }
        if !(contains(&s.types, sch_type) || is_float_int || is_int_float) {
            result = Res::err(Self::invalid_type(path, &s.types.join(","), sch_type));
        }
        result
    }

    fn schema_props(s: &Structural, path: &Path<'_>, data: &Value, depth: usize) -> Res {
        let mut main = Res::default();
        if !s.any_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            for sub in &s.any_of {
                let r = Self::validate(sub, path, data, depth + 1);
                if r.is_valid() {
                    best = None;
                    first_success = Some(r);
                    break;
                }
                if best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if first_success.is_none() {
                main.add(OErr::Plain(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(&path.to_string())
                )));
            }
            if let Some(b) = best {
                main.merge(b);
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }
        if !s.one_of.is_empty() {
            let mut best: Option<Res> = None;
            let mut first_success: Option<Res> = None;
            let mut validated = 0usize;
            for sub in &s.one_of {
                let r = Self::validate(sub, path, data, depth + 1);
                if r.is_valid() {
                    validated += 1;
                    best = None;
                    if first_success.is_none() {
                        first_success = Some(r);
                    }
                    continue;
                }
                if validated == 0 && best.as_ref().is_none_or(|b| r.count > b.count) {
                    best = Some(r);
                }
            }
            if validated != 1 {
                let extra = if validated == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {validated} valid alternatives")
                };
                main.add(OErr::Plain(format!(
                    "{} must validate one and only one schema (oneOf). {extra}",
                    go_quote(&path.to_string())
                )));
                if let Some(b) = best {
                    main.merge(b);
                }
            } else if let Some(f) = first_success {
                main.merge(f);
            }
        }
        if !s.all_of.is_empty() {
            let mut validated = 0usize;
            for sub in &s.all_of {
                let r = Self::validate(sub, path, data, depth + 1);
                if r.is_valid() {
                    validated += 1;
                }
                main.merge(r);
            }
            if validated != s.all_of.len() {
                let extra = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                main.add(OErr::Plain(format!(
                    "{} must validate all the schemas (allOf){extra}",
                    go_quote(&path.to_string())
                )));
            }
        }
        if let Some(not) = &s.not {
            let r = Self::validate(not, path, data, depth + 1);
            if r.is_valid() {
                main.add(OErr::Plain(format!(
                    "{} must not validate the schema (not)",
                    go_quote(&path.to_string())
                )));
            }
        }
        main.count += 1;
        main
    }

    fn string(s: &Structural, path: &Path<'_>, data: &Value) -> Res {
        let text = data.as_str().unwrap_or("");
        let len = text.chars().count() as i64;
        if let Some(max) = s.max_length
            && len > max
        {
            return Res::err(OErr::Validation {
                code: Code::TooLong,
                name: path.to_string(),
                value: Some(data.clone()),
                valid: max,
                values: Vec::new(),
                msg: format!("{path} in {IN} should be at most {max} chars long"),
            });
        }
        if let Some(min) = s.min_length
            && len < min
        {
            return Res::err(OErr::v(
                Code::Other,
                path,
                Some(data.clone()),
                format!("{path} in {IN} should be at least {min} chars long"),
            ));
        }
        if let Some(p) = &s.pattern {
            match &p.re {
                Err(e) => {
                    return Res::err(OErr::v(
                        Code::Other,
                        path,
                        Some(data.clone()),
                        format!(
                            "{path} in {IN} should match '{}, but pattern is invalid: {e}'",
                            p.source
                        ),
                    ));
                }
                Ok(re) if !re.is_match(text) => {
                    return Res::err(OErr::v(
                        Code::Other,
                        path,
                        Some(data.clone()),
                        format!("{path} in {IN} should match '{}'", p.source),
                    ));
                }
                Ok(_) => {}
            }
        }
        Res::default()
    }

    fn format(s: &Structural, path: &Path<'_>, data: &Value) -> Res {
        let text = data.as_str().unwrap_or("");
        if formats::validates(&s.format, text) {
            Res::default()
        } else {
            Res::err(Self::invalid_type(path, &s.format, text))
        }
    }

    fn number(s: &Structural, path: &Path<'_>, k: Kind) -> Res {
        let mut res = Res::default();
        let mut res_multiple = Res::default();
        let mut res_min = Res::default();
        let mut res_max = Res::default();
        let value = Some(num_value(k));
        if let Some(factor) = s.multiple_of {
            match k {
                Kind::Int(i) => {
                    let fi = factor as i64;
                    if fi < 0 {
                        res_multiple.add(OErr::v(
                            Code::Other,
                            path,
                            Some(Value::from(fi)),
                            format!("factor MultipleOf declared for {path} must be positive: {fi}"),
                        ));
                    } else if fi != 0 && i.wrapping_div(fi).wrapping_mul(fi) != i {
                        res_multiple.add(OErr::v(
                            Code::Other,
                            path,
                            value.clone(),
                            format!("{path} in {IN} should be a multiple of {fi}"),
                        ));
                    }
                }
                Kind::Float(x) => {
                    if factor < 0.0 {
                        res_multiple.add(OErr::v(
                            Code::Other,
                            path,
                            Some(num_value(Kind::Float(factor))),
                            format!(
                                "factor MultipleOf declared for {path} must be positive: {}",
                                go_float(factor)
                            ),
                        ));
                    } else {
                        let mult = if factor < 1.0 {
                            1.0 / factor * x
                        } else {
                            x / factor
                        };
                        if !is_float_json_integer(mult) {
                            res_multiple.add(OErr::v(
                                Code::Other,
                                path,
                                value.clone(),
                                format!(
                                    "{path} in {IN} should be a multiple of {}",
                                    go_float(factor)
                                ),
                            ));
                        }
                    }
                }
                _ => {}
            }
        }
        if let Some(max) = s.maximum {
            let excl = s.exclusive_maximum;
            let word = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            let bad = match k {
                Kind::Int(i) => {
                    let m = max as i64;
                    ((!excl && i > m) || (excl && i >= m)).then(|| m.to_string())
                }
                Kind::Float(x) => ((!excl && x > max) || (excl && x >= max)).then(|| go_float(max)),
                _ => None,
            };
            if let Some(m) = bad {
                res_max.add(OErr::v(
                    Code::Other,
                    path,
                    value.clone(),
                    format!("{path} in {IN} should be {word} {m}"),
                ));
            }
        }
        if let Some(min) = s.minimum {
            let excl = s.exclusive_minimum;
            let word = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            let bad = match k {
                Kind::Int(i) => {
                    let m = min as i64;
                    ((!excl && i < m) || (excl && i <= m)).then(|| m.to_string())
                }
                Kind::Float(x) => ((!excl && x < min) || (excl && x <= min)).then(|| go_float(min)),
                _ => None,
            };
            if let Some(m) = bad {
                res_min.add(OErr::v(
                    Code::Other,
                    path,
                    value.clone(),
                    format!("{path} in {IN} should be {word} {m}"),
                ));
            }
        }
        res.merge(res_multiple);
        res.merge(res_min);
        res.merge(res_max);
        res.count += 1;
        res
    }

    fn slice(s: &Structural, path: &Path<'_>, data: &Value, depth: usize) -> Res {
        let mut result = Res::default();
        let Some(arr) = data.as_array() else {
            return result;
        };
        if let Some(items) = &s.items {
            for (i, v) in arr.iter().enumerate() {
                result.merge(Self::validate(items, &path.index(i), v, depth + 1));
            }
        }
        let size = arr.len() as i64;
        if let Some(min) = s.min_items
            && size < min
        {
            result.add(OErr::v(
                Code::Other,
                path,
                Some(Value::from(size)),
                format!("{path} in {IN} should have at least {min} items"),
            ));
        }
        if let Some(max) = s.max_items
            && size > max
        {
            result.add(OErr::Validation {
                code: Code::MaxItems,
                name: path.to_string(),
                value: Some(Value::from(size)),
                valid: max,
                values: Vec::new(),
                msg: format!("{path} in {IN} should have at most {max} items"),
            });
        }
        if s.unique_items {
            let mut dup = false;
            'outer: for (i, a) in arr.iter().enumerate() {
                for b in &arr[..i] {
                    if a == b {
                        dup = true;
                        break 'outer;
                    }
                }
            }
            if dup {
                result.add(OErr::v(
                    Code::Other,
                    path,
                    None,
                    format!("{path} in {IN} shouldn't contain duplicates"),
                ));
            }
        }
        result.count += 1;
        result
    }

    fn common(s: &Structural, path: &Path<'_>, data: &Value) -> Res {
        let Some(values) = &s.enum_values else {
            return Res::default();
        };
        if values.is_empty() {
            return Res::default();
        }
        if values.iter().any(|e| enum_matches(data, e)) {
            return Res::default();
        }
        Res::err(OErr::Validation {
            code: Code::Enum,
            name: path.to_string(),
            value: Some(data.clone()),
            valid: -1,
            values: values.clone(),
            msg: format!("{path} in {IN} should be one of {values:?}"),
        })
    }

    fn object(s: &Structural, path: &Path<'_>, data: &Value, depth: usize) -> Res {
        let Some(m) = data.as_object() else {
            return Res::default();
        };
        let num_keys = m.len() as i64;
        if let Some(min) = s.min_properties
            && num_keys < min
        {
            return Res::err(OErr::v(
                Code::Other,
                path,
                Some(Value::from(num_keys)),
                format!("{path} in {IN} should have at least {min} properties"),
            ));
        }
        if let Some(max) = s.max_properties
            && num_keys > max
        {
            return Res::err(OErr::Validation {
                code: Code::TooManyProperties,
                name: path.to_string(),
                value: Some(Value::from(num_keys)),
                valid: max,
                values: Vec::new(),
                msg: format!("{path} in {IN} should have at most {max} properties"),
            });
        }
        let mut res = Res::default();
        if matches!(s.additional, Some(Additional::Bool(false))) {
            for k in m.keys() {
                let regular = s.properties.contains_key(k);
                let matched = s
                    .pattern_properties
                    .iter()
                    .any(|(_, re, _)| re.as_ref().is_some_and(|re| re.is_match(k)));
                if !regular && !matched {
                    res.add(OErr::v(
                        Code::Other,
                        path,
                        Some(Value::String(k.clone())),
                        format!("{path}.{k} in {IN} is a forbidden property"),
                    ));
                }
            }
        } else {
            for (k, v) in m {
                let regular = s.properties.contains_key(k);
                let matched = Self::pattern_properties(s, path, k, v, &mut res, depth);
                if !(regular || matched)
                    && let Some(Additional::Schema(a)) = &s.additional
                {
                    res.merge(Self::validate(a, &path.dot(k), v, depth + 1));
                }
            }
        }
        for (name, ps) in &s.properties {
            if let Some(v) = m.get(name) {
                res.merge(Self::validate(ps, &path.property(name), v, depth + 1));
            }
        }
        for k in &s.required {
            if !m.contains_key(k) {
                let name = path.dot(k);
                res.add(OErr::v(
                    Code::Required,
                    &name,
                    None,
                    format!("{name} in {IN} is required"),
                ));
            }
        }
        if !s.pattern_properties.is_empty() {
            for (k, v) in m {
                let regular = s.properties.contains_key(k);
                let matched = Self::pattern_properties(s, path, k, v, &mut res, depth);
                if !regular && matched {
                    for (_, re, ps) in &s.pattern_properties {
                        if re.as_ref().is_some_and(|re| re.is_match(k)) {
                            res.merge(Self::validate(ps, &path.dot(k), v, depth + 1));
                        }
                    }
                }
            }
        }
        res
    }

    fn pattern_properties(
        s: &Structural,
        path: &Path<'_>,
        k: &str,
        v: &Value,
        res: &mut Res,
        depth: usize,
    ) -> bool {
        let mut matched = false;
        for (_, re, ps) in &s.pattern_properties {
            if re.as_ref().is_some_and(|re| re.is_match(k)) {
                matched = true;
                res.merge(Self::validate(ps, &path.dot(k), v, depth + 1));
            }
        }
        matched
    }
}

/// basicCommonValidator's enum comparison: reflect.DeepEqual after a Go
/// conversion of the value to the enum member's type.
fn enum_matches(data: &Value, e: &Value) -> bool {
    let dk = kind(data);
    if dk == Kind::Nil || e.is_null() {
        return false;
    }
    match (dk, kind(e)) {
        (Kind::Int(a), Kind::Int(b)) => a == b,
        (Kind::Float(a), Kind::Float(b)) => a == b,
        (Kind::Int(a), Kind::Float(b)) => a as f64 == b,
        (Kind::Float(a), Kind::Int(b)) => a as i64 == b,
        (Kind::Int(a), Kind::Str) => {
            let c = u32::try_from(a)
                .ok()
                .and_then(char::from_u32)
                .unwrap_or('\u{fffd}');
            e.as_str() == Some(c.to_string().as_str())
        }
        _ => data == e,
    }
}

/// The value list of an enum error, as apiextensions passes it to
/// `field.NotSupported`: strings as-is, anything else JSON-encoded.
fn enum_strings(values: &[Value]) -> Vec<String> {
    values
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => serde_json::to_string(other).unwrap_or_default(),
        })
        .collect()
}

fn to_field_error(e: OErr) -> FieldError {
    match e {
        OErr::Plain(msg) => FieldError::new(
            FieldErrorKind::Invalid,
            "<nil>",
            Some(Value::String(String::new())),
            msg,
        ),
        OErr::Validation {
            code,
            name,
            value,
            valid,
            values,
            msg,
        } => {
            let field = if name.is_empty() || name == "." {
                "<nil>".to_string()
            } else {
                name.strip_prefix('.').unwrap_or(&name).to_string()
            };
            let value = value.map(|v| bad_value(&v));
            let or_empty = |v: Option<Value>| v.unwrap_or(Value::String(String::new()));
            match code {
                Code::Required => FieldError::required(field, ""),
                Code::Enum => {
                    let strs = enum_strings(&values);
                    let refs: Vec<&str> = strs.iter().map(String::as_str).collect();
                    FieldError::not_supported(field, value.unwrap_or(Value::Null), &refs)
                }
                Code::TooLong => {
                    let detail = if valid >= 0 {
                        format!("may not be longer than {valid}")
                    } else {
                        "value is too long".to_string()
                    };
                    FieldError::new(
                        FieldErrorKind::TooLong,
                        field,
                        Some(or_empty(value)),
                        detail,
                    )
                }
                Code::MaxItems | Code::TooManyProperties => {
                    let actual = value.as_ref().and_then(Value::as_i64).filter(|a| *a >= 0);
                    FieldError::too_many(field, actual, valid)
                }
                Code::InvalidType => FieldError::new(
                    FieldErrorKind::TypeInvalid,
                    field,
                    Some(or_empty(value)),
                    msg,
                ),
                Code::Other => {
                    FieldError::new(FieldErrorKind::Invalid, field, Some(or_empty(value)), msg)
                }
            }
        }
    }
}

/// kube-openapi validation of `obj` (root path `""`), as field errors.
pub(super) fn openapi_errors(s: &Structural, obj: &Value) -> Vec<FieldError> {
    let res = Validator::validate(s, &Path::Root, obj, 0);
    res.errs.into_iter().map(to_field_error).collect()
}

/// `objectmeta.Validate(nil, obj, s, false)`: TypeMeta and ObjectMeta of
/// x-kubernetes-embedded-resource objects.
pub(super) fn embedded_errors(s: &Structural, obj: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    embedded_walk("", obj, Some(s), &mut out, 0);
    out
}

fn embedded_walk(
    pth: &str,
    x: &Value,
    s: Option<&Structural>,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    let Some(s) = s.filter(|s| s.walk_embedded) else {
        return;
    };
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            if s.embedded {
                validate_embedded_resource(pth, m, out);
            }
            for (k, v) in m {
                if let Some(p) = s.properties.get(k) {
                    if p.walk_embedded {
                        embedded_walk(&child(pth, k), v, Some(p), out, depth + 1);
                    }
                } else if let Some(Additional::Schema(a)) = &s.additional
                    && a.walk_embedded
                {
                    embedded_walk(&key(pth, k), v, Some(a), out, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            let Some(items) = s.items.as_deref().filter(|it| it.walk_embedded) else {
                return;
            };
            for (i, v) in a.iter().enumerate() {
                embedded_walk(&index(pth, i), v, Some(items), out, depth + 1);
            }
        }
        _ => {}
    }
}

fn json_type_word(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
        Value::Null => "null",
    }
}

fn validate_embedded_resource(pth: &str, x: &Map<String, Value>, out: &mut Vec<FieldError>) {
    let api_path = child(pth, "apiVersion");
    let kind_path = child(pth, "kind");
    if !x.contains_key("apiVersion") {
        out.push(FieldError::required(&api_path, ""));
    }
    if !x.contains_key("kind") {
        out.push(FieldError::required(&kind_path, ""));
    }
    if let Some(v) = x.get("apiVersion") {
        match v.as_str() {
            None => out.push(FieldError::invalid(
                &api_path,
                bad_value(v),
                "must be a string",
            )),
            Some("") => out.push(FieldError::invalid(&api_path, "", "must not be empty")),
            Some(av) => {
                if av != "/" && av.matches('/').count() > 1 {
                    out.push(FieldError::invalid(
                        &api_path,
                        av,
                        format!("unexpected GroupVersion string: {av}"),
                    ));
                }
            }
        }
    }
    if let Some(v) = x.get("kind") {
        match v.as_str() {
            None => out.push(FieldError::invalid(
                &kind_path,
                bad_value(v),
                "must be a string",
            )),
            Some("") => out.push(FieldError::invalid(&kind_path, "", "must not be empty")),
            Some(k) => {
                let errs = crate::validation::names::is_dns1035_label(&k.to_lowercase());
                if !errs.is_empty() {
                    out.push(FieldError::invalid(
                        &kind_path,
                        k,
                        format!(
                            "may have mixed case, but should otherwise match: {}",
                            errs.join(",")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(v) = x.get("metadata") {
        let meta_path = child(pth, "metadata");
        let mut meta = match v {
            Value::Object(m) => m.clone(),
            Value::Null => Map::new(),
            other => {
                out.push(FieldError::invalid(
                    &meta_path,
                    bad_value(other),
                    format!(
                        "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
                        json_type_word(other)
                    ),
                ));
                return;
            }
        };
        if meta
            .get("name")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            meta.insert("name".into(), Value::String("fakename".into()));
        }
        let namespaced = meta
            .get("namespace")
            .and_then(Value::as_str)
            .is_some_and(|n| !n.is_empty());
        let mut root = Map::new();
        root.insert("metadata".into(), Value::Object(meta));
        let mut ck = crate::validation::Checker::default();
        crate::validation::metadata::validate_object_meta(
            &mut ck,
            &root,
            namespaced,
            crate::validation::names::is_valid_path_segment_name,
            false,
        );
        for mut e in ck.errs {
            if !pth.is_empty() {
                e.field = format!("{pth}.{}", e.field);
            }
            out.push(e);
        }
    }
}

/// `listtype.ValidateListSetsAndMaps(nil, s, obj)`.
pub(super) fn list_type_errors(s: &Structural, obj: &Value) -> Vec<FieldError> {
    let mut out = Vec::new();
    if let Some(m) = obj.as_object().filter(|_| s.walk_list_types) {
        list_maps_object("", s, m, &mut out, 0);
    }
    out
}

fn list_maps_object(
    pth: &str,
    s: &Structural,
    m: &Map<String, Value>,
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    if let Some(Additional::Schema(a)) = &s.additional {
        for (k, v) in m {
            if a.walk_list_types {
                list_maps_value(&key(pth, k), a, v, out, depth + 1);
            }
        }
    }
    for (k, v) in m {
        if let Some(p) = s.properties.get(k).filter(|p| p.walk_list_types) {
            list_maps_value(&child(pth, k), p, v, out, depth + 1);
        }
    }
}

fn list_maps_value(pth: &str, s: &Structural, v: &Value, out: &mut Vec<FieldError>, depth: usize) {
    if !s.walk_list_types {
        return;
    }
    match v {
        Value::Array(a) => list_maps_array(pth, s, a, out, depth),
        Value::Object(m) => list_maps_object(pth, s, m, out, depth),
        _ => {}
    }
}

/// Indices of the second appearance of each repeated element.
fn non_unique(items: &[Value]) -> Vec<usize> {
    let mut seen: Vec<(&Value, usize)> = Vec::new();
    let mut out = Vec::new();
    for (i, x) in items.iter().enumerate() {
        match seen.iter_mut().find(|(v, _)| *v == x) {
            Some((_, times)) => {
                *times += 1;
                if *times == 2 {
                    out.push(i);
                }
            }
            None => seen.push((x, 1)),
        }
    }
    out
}

fn list_maps_array(
    pth: &str,
    s: &Structural,
    a: &[Value],
    out: &mut Vec<FieldError>,
    depth: usize,
) {
    if depth > MAX_VALUE_DEPTH {
        return;
    }
    match s.list_type.as_deref() {
        Some("set") if a.len() > 1 => {
            for i in non_unique(a) {
                out.push(FieldError::duplicate(index(pth, i), bad_value(&a[i])));
            }
        }
        Some("map") => list_map(pth, s, a, out),
        _ => {}
    }
    if let Some(items) = s.items.as_deref().filter(|it| it.walk_list_types) {
        for (i, v) in a.iter().enumerate() {
            list_maps_value(&index(pth, i), items, v, out, depth + 1);
        }
    }
}

fn list_map(pth: &str, s: &Structural, a: &[Value], out: &mut Vec<FieldError>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            out.push(FieldError::invalid(
                index(pth, i),
                bad_value(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    // Each element's key: the map of its present key fields. An element
    // without the (single) key field is "unspecified", which compares
    // like an empty key map.
    let keys: Vec<Value> = a
        .iter()
        .map(|x| {
            let mut k = Map::new();
            if let Some(m) = x.as_object() {
                for f in &s.list_map_keys {
                    if let Some(v) = m.get(f) {
                        k.insert(f.clone(), v.clone());
                    }
                }
            }
            Value::Object(k)
        })
        .collect();
    for i in non_unique(&keys) {
        out.push(FieldError::duplicate(index(pth, i), bad_value(&keys[i])));
    }
}
