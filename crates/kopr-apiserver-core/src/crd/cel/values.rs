//! Values: JSON to CEL values by schema, and CEL values back to messages.

#[allow(unused_imports)]
use super::*;

// ---------------------------------------------------------------------------
// Values.
// ---------------------------------------------------------------------------

/// Converts a JSON value to CEL as `UnstructuredToVal` does for its type.
pub(super) fn to_cel(v: &Value, ty: Option<&Ty>) -> CelValue {
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

pub(super) fn map_to_cel<'t>(
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

pub(super) fn base64_decode(s: &str) -> Option<Vec<u8>> {
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
pub(super) fn parse_duration(s: &str) -> Option<chrono::Duration> {
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

pub(super) fn parse_timestamp(s: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(t);
    }
    chrono::DateTime::parse_from_rfc3339(&format!("{s}T00:00:00Z")).ok()
}

/// The type value for `type(x)`, compared against the type identifiers.
pub(super) fn type_value(name: &str) -> CelValue {
    CelValue::String(Arc::new(format!("{TYPE_TAG}{name}")))
}

pub(super) fn type_of(v: &CelValue) -> &'static str {
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
pub(super) fn error_text(e: &ExecutionError) -> String {
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

pub(super) fn plain(v: &CelValue) -> String {
    match v {
        CelValue::Int(i) => i.to_string(),
        CelValue::UInt(u) => u.to_string(),
        CelValue::Float(f) => f.to_string(),
        CelValue::String(s) => s.to_string(),
        CelValue::Bool(b) => b.to_string(),
        other => format!("{other:?}"),
    }
}
