//! `resource.Quantity` text as Go's `Quantity.String()` prints it: the value
//! parsed from its serialized form, then written in canonical form ("1.5Gi"
//! is "1536Mi", "1000" is "1k", "0.5" is "500m"), or the original text when
//! the parser keeps it (as `ParseQuantity` does for strings already in
//! canonical form). Table cells show quantities this way.

use serde_json::Value;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalExponent,
    BinarySi,
    DecimalSi,
}

/// A decimal number: `unscaled × 10^-scale`.
#[derive(Debug, Clone, Copy)]
struct Dec {
    unscaled: i128,
    scale: i32,
}

/// The largest BinarySI magnitude kept by the parser (Go's `maxAllowed`).
const MAX_ALLOWED: i128 = i64::MAX as i128;

/// A quantity field as `Quantity.String()` shows it: a missing or null value is
/// the zero quantity ("0"); text that does not parse is shown as it is.
pub fn quantity(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "0".to_string(),
        Some(v) => quantity_text(v),
    }
}

/// A `*Quantity` field as `(*Quantity).String()` shows it: `<nil>` when unset.
pub fn quantity_ptr(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "<nil>".to_string(),
        Some(v) => quantity_text(v),
    }
}

fn quantity_text(v: &Value) -> String {
    let raw = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        other => return other.to_string(),
    };
    canonical(&raw).unwrap_or(raw)
}

/// The canonical text of a quantity string, or `None` if it does not parse.
pub fn canonical(s: &str) -> Option<String> {
    if s.is_empty() {
        return None;
    }
    if s == "0" {
        return Some(s.to_string());
    }
    let parts = split(s)?;
    let (base, exponent, format) = interpret(parts.suffix)?;
    if let Some(fast) = fast_path(s, &parts, base, exponent, format) {
        return Some(fast);
    }
    slow_path(&parts, base, exponent, format)
}

struct Parts<'a> {
    positive: bool,
    num: String,
    denom: &'a str,
    suffix: &'a str,
}

/// `parseQuantityString`: sign, numerator (leading zeros dropped), fraction
/// digits and suffix.
fn split(s: &str) -> Option<Parts<'_>> {
    let b = s.as_bytes();
    let mut pos = 0;
    let mut positive = true;
    match b.first() {
        Some(b'-') => {
            positive = false;
            pos = 1;
        }
        Some(b'+') => pos = 1,
        _ => {}
    }
    while pos < b.len() && b[pos] == b'0' {
        pos += 1;
    }
    if pos >= b.len() {
        return Some(Parts {
            positive,
            num: "0".to_string(),
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let mut num = s.get(start..pos)?.to_string();
    if num.is_empty() {
        num = "0".to_string();
    }
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let d = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = s.get(d..pos)?;
    }
    let suffix_start = pos;
    while pos < b.len() && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < b.len() && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos != b.len() {
        return None;
    }
    Some(Parts {
        positive,
        num,
        denom,
        suffix: s.get(suffix_start..)?,
    })
}

/// The suffixer's `interpret`: (base, exponent, format).
fn interpret(suffix: &str) -> Option<(u32, i32, Format)> {
    let dec = |e| Some((10, e, Format::DecimalSi));
    let bin = |e| Some((2, e, Format::BinarySi));
    match suffix {
        "" => dec(0),
        "n" => dec(-9),
        "u" => dec(-6),
        "m" => dec(-3),
        "k" => dec(3),
        "M" => dec(6),
        "G" => dec(9),
        "T" => dec(12),
        "P" => dec(15),
        "E" => dec(18),
        "Ki" => bin(10),
        "Mi" => bin(20),
        "Gi" => bin(30),
        "Ti" => bin(40),
        "Pi" => bin(50),
        "Ei" => bin(60),
        s if s.len() > 1 && (s.starts_with('e') || s.starts_with('E')) => {
            let e: i64 = s.get(1..)?.parse().ok()?;
            Some((10, e as i32, Format::DecimalExponent))
        }
        _ => None,
    }
}

/// `ParseQuantity`'s int64 fast path: the original text when it is kept as
/// the canonical form, the canonical text of the int64 amount otherwise, or
/// `None` when the value needs the arbitrary-precision path.
fn fast_path(s: &str, p: &Parts, base: u32, exponent: i32, format: Format) -> Option<String> {
    let digits = (p.num.len() + p.denom.len()) as i32;
    let (precision, mut scale, mantissa): (i32, i32, i64) = match format {
        Format::DecimalExponent | Format::DecimalSi => (18 - digits, exponent, 1),
        Format::BinarySi if exponent >= 0 && p.denom.is_empty() && base == 2 => {
            let precision = 15 - p.num.len() as i32 - (exponent as f32 * 3.0 / 10.0) as i32 - 1;
            (precision, 0, 1i64.checked_shl(exponent as u32)?)
        }
        Format::BinarySi => (-1, 0, 1),
    };
    if precision < 0 {
        return None;
    }
    scale -= p.denom.len() as i32;
    if scale < -9 {
        return None;
    }
    let shifted = format!("{}{}", p.num, p.denom);
    let value: i64 = shifted.parse().ok()?;
    let mut result = value.checked_mul(mantissa)?;
    if !p.positive {
        result = -result;
    }
    let keep = match format {
        Format::BinarySi => exponent % 10 == 0 && value & 0x07 != 0,
        _ => scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0'),
    };
    if keep {
        return Some(s.to_string());
    }
    Some(canonicalize(
        Dec {
            unscaled: i128::from(result),
            scale: -scale,
        },
        format,
    ))
}

/// The arbitrary-precision path: exact value, rounded up to nanos, capped.
fn slow_path(p: &Parts, base: u32, exponent: i32, mut format: Format) -> Option<String> {
    let digits = format!("{}{}", p.num, p.denom);
    let mut d = Dec {
        unscaled: digits.parse().ok()?,
        scale: p.denom.len() as i32,
    };
    if base == 10 {
        d.scale = d.scale.checked_sub(exponent)?;
    } else {
        d.unscaled = d
            .unscaled
            .checked_mul(1i128.checked_shl(exponent as u32)?)?;
    }
    if d.scale > 9 {
        let div = pow10(d.scale - 9)?;
        let q = d.unscaled / div;
        d.unscaled = if d.unscaled % div != 0 { q + 1 } else { q };
        d.scale = 9;
    }
    if format == Format::BinarySi && cmp_int(d, MAX_ALLOWED)? == std::cmp::Ordering::Greater {
        d = Dec {
            unscaled: MAX_ALLOWED,
            scale: 0,
        };
    }
    if format == Format::BinarySi && d.unscaled != 0 && cmp_int(d, 1)?.is_lt() {
        format = Format::DecimalSi;
    }
    if !p.positive {
        d.unscaled = -d.unscaled;
    }
    Some(canonicalize(d, format))
}

fn pow10(n: i32) -> Option<i128> {
    10i128.checked_pow(u32::try_from(n).ok()?)
}

/// Compares a decimal with an integer.
fn cmp_int(d: Dec, i: i128) -> Option<std::cmp::Ordering> {
    if d.scale >= 0 {
        Some(d.unscaled.cmp(&i.checked_mul(pow10(d.scale)?)?))
    } else {
        Some(d.unscaled.checked_mul(pow10(-d.scale)?)?.cmp(&i))
    }
}

/// `CanonicalizeBytes`: mantissa and suffix of the canonical form.
fn canonicalize(d: Dec, format: Format) -> String {
    if d.unscaled == 0 {
        return "0".to_string();
    }
    let mut format = format;
    let mut integer = None;
    if format == Format::BinarySi {
        let small = cmp_int(d, -1024).is_some_and(|o| o.is_gt())
            && cmp_int(d, 1024).is_some_and(|o| o.is_lt());
        if small {
            format = Format::DecimalSi;
        } else {
            match round_up_to_integer(d) {
                Some((v, true)) => integer = Some(v),
                _ => format = Format::DecimalSi,
            }
        }
    }
    if let (Format::BinarySi, Some(mut v)) = (format, integer) {
        let mut times = 0;
        while v.unsigned_abs() >= 1024 && v % 1024 == 0 {
            v /= 1024;
            times += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
            .get(times)
            .copied()
            .unwrap_or("");
        return format!("{v}{suffix}");
    }
    let (mut m, mut exponent) = (d.unscaled, -d.scale);
    while m.unsigned_abs() >= 10 && m % 10 == 0 {
        m /= 10;
        exponent += 1;
    }
    while exponent % 3 != 0 {
        match m.checked_mul(10) {
            Some(x) => m = x,
            None => break,
        }
        exponent -= 1;
    }
    let suffix = match format {
        Format::DecimalExponent if exponent == 0 => String::new(),
        Format::DecimalExponent => format!("e{exponent}"),
        _ => match exponent {
            -9 => "n",
            -6 => "u",
            -3 => "m",
            3 => "k",
            6 => "M",
            9 => "G",
            12 => "T",
            15 => "P",
            18 => "E",
            _ => "",
        }
        .to_string(),
    };
    format!("{m}{suffix}")
}

/// Rounds away from zero to an integer; `true` when nothing was lost.
fn round_up_to_integer(d: Dec) -> Option<(i128, bool)> {
    if d.scale <= 0 {
        return Some((d.unscaled.checked_mul(pow10(-d.scale)?)?, true));
    }
    let div = pow10(d.scale)?;
    let (q, r) = (d.unscaled / div, d.unscaled % div);
    Some(match r.signum() {
        0 => (q, true),
        1 => (q + 1, false),
        _ => (q - 1, false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_forms_match_go() {
        let cases: &[(&str, &str)] = &[
            ("0", "0"),
            ("0Gi", "0"),
            ("1Gi", "1Gi"),
            ("8Gi", "8Gi"),
            ("1.5Gi", "1536Mi"),
            ("2048Ki", "2Mi"),
            ("1000Mi", "1000Mi"),
            ("1024", "1024"),
            ("1000", "1k"),
            ("1500", "1500"),
            ("10Gi", "10Gi"),
            ("0.5", "500m"),
            ("1.1", "1100m"),
            ("100m", "100m"),
            ("1000m", "1"),
            ("0.5Ki", "512"),
            ("0.1Ki", "102400m"),
            ("1e3", "1e3"),
            ("10e3", "10e3"),
            ("100e3", "100e3"),
            ("1000e3", "1e6"),
            ("5G", "5G"),
            ("5000M", "5G"),
            ("-1Ki", "-1Ki"),
            ("-1.5", "-1500m"),
            ("0.0000000001", "1n"),
            ("12345678901234567890", "12345678901234567890"),
            ("2", "2"),
            ("01", "01"),
            ("+1", "+1"),
        ];
        for (input, want) in cases {
            assert_eq!(canonical(input).as_deref(), Some(*want), "{input}");
        }
        for bad in ["", "abc", "1x", "1Kii", "1e", "--1"] {
            assert_eq!(canonical(bad), None, "{bad}");
        }
    }

    #[test]
    fn fields() {
        assert_eq!(quantity(None), "0");
        assert_eq!(quantity(Some(&json!("2048Mi"))), "2Gi");
        assert_eq!(quantity(Some(&json!(3))), "3");
        assert_eq!(quantity(Some(&json!("nonsense"))), "nonsense");
        assert_eq!(quantity_ptr(None), "<nil>");
        assert_eq!(quantity_ptr(Some(&json!("250m"))), "250m");
    }
}
