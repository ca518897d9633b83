//! `resource.Quantity` as kube-apiserver handles it: parsing with kube's
//! grammar and rounding (values are kept in nano units), comparison, the
//! text Go's `String()` prints (the parsed text when the parser keeps it,
//! else the canonical form), and Go's `%#v` rendering of the struct that
//! some validation messages embed. Validation and table cells share it.

use serde_json::Value;
use std::cmp::Ordering;

const NANO: i128 = 1_000_000_000;

/// Suffix format of a quantity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QFormat {
    /// `m`, `k`, `M`, ... or no suffix.
    DecimalSI,
    /// `Ki`, `Mi`, ...
    BinarySI,
    /// `e3`, `E-2`, ...
    DecimalExponent,
}

impl QFormat {
    fn name(self) -> &'static str {
        match self {
            Self::DecimalSI => "DecimalSI",
            Self::BinarySI => "BinarySI",
            Self::DecimalExponent => "DecimalExponent",
        }
    }
}

/// A parsed quantity.
#[derive(Debug, Clone, PartialEq)]
pub struct Quantity {
    /// The value times 10^9, rounded away from zero as kube rounds it.
    pub nano: i128,
    /// The suffix format kept for the canonical form.
    pub format: QFormat,
    /// kube's `int64Amount{value, scale}` when its fast path parsed it;
    /// `None` when it used an `inf.Dec`.
    int64: Option<(i64, i32)>,
    /// The string kube caches at parse time (`s`), when it does.
    cached: Option<String>,
}

fn pow10(n: u32) -> Option<i128> {
    10i128.checked_pow(n)
}

/// Divides rounding away from zero.
fn div_away(n: i128, d: i128) -> i128 {
    let q = n / d;
    if n % d == 0 {
        q
    } else if n < 0 {
        q - 1
    } else {
        q + 1
    }
}

/// `(base, exponent, format)` of a suffix, like `quantitySuffixer.interpret`.
fn interpret_suffix(s: &str) -> Option<(u32, i32, QFormat)> {
    let dec = |e| Some((10, e, QFormat::DecimalSI));
    let bin = |e| Some((2, e, QFormat::BinarySI));
    match s {
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
        _ => {
            let rest = s.strip_prefix(['e', 'E'])?;
            let e: i32 = go_parse_int(rest)?;
            Some((10, e, QFormat::DecimalExponent))
        }
    }
}

/// `strconv.ParseInt(s, 10, 32)`.
fn go_parse_int(s: &str) -> Option<i32> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

struct Scanned<'a> {
    positive: bool,
    num: &'a str,
    denom: &'a str,
    suffix: &'a str,
}

/// kube's `parseQuantityString`.
fn scan(s: &str) -> Option<Scanned<'_>> {
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
        return Some(Scanned {
            positive,
            num: "0",
            denom: "",
            suffix: "",
        });
    }
    let start = pos;
    while pos < b.len() && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num = if pos == start { "0" } else { &s[start..pos] };
    let mut denom = "";
    if pos < b.len() && b[pos] == b'.' {
        pos += 1;
        let ds = pos;
        while pos < b.len() && b[pos].is_ascii_digit() {
            pos += 1;
        }
        denom = &s[ds..pos];
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
    Some(Scanned {
        positive,
        num,
        denom,
        suffix: &s[suffix_start..],
    })
}

impl Quantity {
    /// Parses like `resource.ParseQuantity`; `None` for malformed input or
    /// values too large to handle.
    pub fn parse(s: &str) -> Option<Quantity> {
        if s.is_empty() {
            return None;
        }
        if s == "0" {
            return Some(Quantity {
                nano: 0,
                format: QFormat::DecimalSI,
                int64: Some((0, 0)),
                cached: Some(s.to_string()),
            });
        }
        let sc = scan(s)?;
        let (base, exponent, mut format) = interpret_suffix(sc.suffix)?;
        let digits = format!("{}{}", sc.num, sc.denom);
        let mantissa: i128 = digits.parse().ok()?;
        let dlen = sc.denom.len() as i32;
        // The exact value is mantissa * 10^-dlen * base^exponent; scale it to nano.
        let nano_abs = if base == 10 {
            let shift = exponent - dlen + 9;
            if shift >= 0 {
                mantissa.checked_mul(pow10(shift as u32)?)?
            } else {
                div_away(mantissa, pow10((-shift) as u32)?)
            }
        } else {
            let factor = 1i128.checked_shl(exponent as u32)?;
            let scaled = mantissa.checked_mul(factor)?;
            let shift = 9 - dlen;
            if shift >= 0 {
                scaled.checked_mul(pow10(shift as u32)?)?
            } else {
                div_away(scaled, pow10((-shift) as u32)?)
            }
        };
        let nano = if sc.positive { nano_abs } else { -nano_abs };
        let int64 = fast_path(&sc, exponent, format)
            .map(|(v, scale)| (if sc.positive { v } else { -v }, scale));
        let cached = int64.and_then(|_| {
            let shifted = digits.as_str();
            let value_bits = shifted.parse::<i64>().unwrap_or(0);
            let keep = match format {
                QFormat::BinarySI => exponent % 10 == 0 && value_bits & 0x07 != 0,
                _ => {
                    let scale = exponent - dlen;
                    scale % 3 == 0 && !shifted.ends_with("000") && !shifted.starts_with('0')
                }
            };
            keep.then(|| s.to_string())
        });
        if int64.is_none() && format == QFormat::BinarySI && nano_abs < NANO && nano_abs > 0 {
            format = QFormat::DecimalSI;
        }
        Some(Quantity {
            nano,
            format,
            int64,
            cached,
        })
    }

    /// A zero quantity as Go's `resource.Quantity{Format: DecimalSI}`.
    pub fn zero() -> Quantity {
        Quantity::from_int(0)
    }

    /// `resource.NewQuantity(n, DecimalSI)`.
    pub fn from_int(n: i64) -> Quantity {
        Quantity {
            nano: i128::from(n) * NANO,
            format: QFormat::DecimalSI,
            int64: Some((n, 0)),
            cached: None,
        }
    }

    /// `Add`: the sum, printed in canonical form afterwards; a zero
    /// receiver takes the addend's format, as Go's does.
    pub fn add(&mut self, other: &Quantity) {
        if self.nano == 0 {
            self.format = other.format;
        }
        self.nano += other.nano;
        self.int64 = None;
        self.cached = None;
    }

    /// `Sub`: the difference, printed in canonical form afterwards.
    pub fn sub(&mut self, other: &Quantity) {
        if self.nano == 0 {
            self.format = other.format;
        }
        self.nano -= other.nano;
        self.int64 = None;
        self.cached = None;
    }

    /// Reads a quantity from JSON (a string, or a number as kube accepts).
    pub fn from_value(v: &Value) -> Option<Quantity> {
        match v {
            Value::String(s) => Quantity::parse(s.trim()),
            Value::Number(n) => Quantity::parse(&n.to_string()),
            _ => None,
        }
    }

    /// `Cmp`.
    pub fn cmp_value(&self, other: &Quantity) -> Ordering {
        self.nano.cmp(&other.nano)
    }

    /// `Sign()`.
    pub fn sign(&self) -> i32 {
        self.nano.signum() as i32
    }

    /// `Value()`: rounded up (away from zero) to an integer.
    pub fn value(&self) -> i128 {
        div_away(self.nano, NANO)
    }

    /// `MilliValue()`.
    pub fn milli_value(&self) -> i128 {
        div_away(self.nano, 1_000_000)
    }

    /// What `SetDefaults_ResourceList` does to every value of a resource
    /// list: `RoundUp(-3)`.
    pub fn round_up_milli(&mut self) {
        let rounded = div_away(self.nano, 1_000_000) * 1_000_000;
        match self.int64 {
            Some((v, sc)) if sc < -3 => {
                let d = pow10((-3 - sc) as u32).unwrap_or(1);
                let nv = div_away(i128::from(v), d);
                self.int64 = Some((i64::try_from(nv).unwrap_or(i64::MAX), -3));
                self.cached = None;
            }
            Some(_) => {}
            None => self.cached = None,
        }
        self.nano = rounded;
    }

    /// The canonical form, like `String()`.
    pub fn canonical(&self) -> String {
        if self.nano == 0 {
            return "0".into();
        }
        let mut format = self.format;
        if format == QFormat::BinarySI && (self.nano.abs() < 1024 * NANO || self.nano % NANO != 0) {
            format = QFormat::DecimalSI;
        }
        if format == QFormat::BinarySI {
            let mut v = self.nano / NANO;
            let mut times = 0;
            while v.abs() >= 1024 && v % 1024 == 0 && times < 6 {
                v /= 1024;
                times += 1;
            }
            let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][times];
            return format!("{v}{suffix}");
        }
        let mut m = self.nano;
        let mut e: i32 = -9;
        while m.abs() >= 10 && m % 10 == 0 {
            m /= 10;
            e += 1;
        }
        match e % 3 {
            1 | -2 => {
                m *= 10;
                e -= 1;
            }
            2 | -1 => {
                m *= 100;
                e -= 2;
            }
            _ => {}
        }
        let suffix = match (format, e) {
            (QFormat::DecimalExponent, 0) => String::new(),
            (QFormat::DecimalExponent, e) => format!("e{e}"),
            (_, -9) => "n".into(),
            (_, -6) => "u".into(),
            (_, -3) => "m".into(),
            (_, 0) => String::new(),
            (_, 3) => "k".into(),
            (_, 6) => "M".into(),
            (_, 9) => "G".into(),
            (_, 12) => "T".into(),
            (_, 15) => "P".into(),
            (_, 18) => "E".into(),
            (_, e) => format!("e{e}"),
        };
        format!("{m}{suffix}")
    }

    /// Go's `String()`: the text the parser kept, else the canonical form.
    pub fn string(&self) -> String {
        match &self.cached {
            Some(s) => s.clone(),
            None => self.canonical(),
        }
    }

    /// The string kube caches when parsing (empty when it does not).
    pub fn parse_cache(&self) -> &str {
        self.cached.as_deref().unwrap_or("")
    }

    /// Go's `%#v` of the `resource.Quantity` struct, with `s` as its cached
    /// string field.
    pub fn go_struct(&self, s: &str) -> String {
        let (i, d) = match self.int64 {
            Some((v, sc)) => (
                format!("resource.int64Amount{{value:{v}, scale:{sc}}}"),
                "(*inf.Dec)(nil)",
            ),
            None => (
                "resource.int64Amount{value:0, scale:0}".to_string(),
                "(*inf.Dec)(0xc000000000)",
            ),
        };
        format!(
            "resource.Quantity{{i:{i}, d:resource.infDecAmount{{Dec:{d}}}, s:{}, Format:{}}}",
            quote(s),
            quote(self.format.name())
        )
    }
}

/// Go's `%q` of the ASCII text quantities and format names are made of.
fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// kube's fast path: `Some((|value|, scale))` when the quantity fits an
/// `int64Amount`.
fn fast_path(sc: &Scanned<'_>, exponent: i32, format: QFormat) -> Option<(i64, i32)> {
    let (mut scale, precision, mantissa) = match format {
        QFormat::BinarySI => {
            if exponent >= 0 && sc.denom.is_empty() {
                let p = 15 - sc.num.len() as i32 - ((exponent as f32) * 3.0 / 10.0) as i32 - 1;
                (0, p, 1i64.checked_shl(exponent as u32)?)
            } else {
                (0, -1, 1)
            }
        }
        _ => (exponent, 18 - (sc.num.len() + sc.denom.len()) as i32, 1),
    };
    if precision < 0 {
        return None;
    }
    scale -= sc.denom.len() as i32;
    if scale < -9 {
        return None;
    }
    let value: i64 = format!("{}{}", sc.num, sc.denom).parse().ok()?;
    let result = value.checked_mul(mantissa)?;
    Some((result, scale))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        Quantity::parse(s)
            .map(|q| q.canonical())
            .unwrap_or_default()
    }

    fn q(s: &str) -> Quantity {
        Quantity::parse(s).unwrap_or_else(|| panic!("bad quantity {s}"))
    }

    #[test]
    fn canonical_forms() {
        assert_eq!(canon("1.5"), "1500m");
        assert_eq!(canon("1.5Gi"), "1536Mi");
        assert_eq!(canon("1024Mi"), "1Gi");
        assert_eq!(canon("1000Mi"), "1000Mi");
        assert_eq!(canon("0.5Ki"), "512");
        assert_eq!(canon("1000m"), "1");
        assert_eq!(canon("1e3"), "1e3");
        assert_eq!(canon("1000e0"), "1e3");
        assert_eq!(canon("-1Gi"), "-1Gi");
        assert_eq!(canon("100M"), "100M");
        assert_eq!(canon("0.1m"), "100u");
        assert_eq!(canon("0"), "0");
        assert_eq!(canon("000"), "0");
        assert_eq!(canon("12k"), "12k");
        assert_eq!(canon("1200"), "1200");
        assert_eq!(canon(".5"), "500m");
        assert!(Quantity::parse("1x").is_none());
        assert!(Quantity::parse("").is_none());
        assert!(Quantity::parse("1e").is_none());
        assert!(Quantity::parse("abc").is_none());
    }

    #[test]
    fn values_and_rounding() {
        let a = q("1.2");
        assert_eq!(a.value(), 2);
        assert_eq!(a.milli_value(), 1200);
        let mut n = q("1n");
        n.round_up_milli();
        assert_eq!(n.canonical(), "1m");
        assert_eq!(q("2Gi").cmp_value(&q("2048Mi")), Ordering::Equal);
    }

    #[test]
    fn struct_repr() {
        let a = q("500m");
        assert_eq!(a.parse_cache(), "500m");
        let e = crate::validation::FieldError::invalid(
            "x",
            crate::validation::go_repr(a.go_struct("500m")),
            "d",
        );
        assert_eq!(
            e.to_string(),
            "x: Invalid value: resource.Quantity{i:resource.int64Amount{value:500, scale:-3}, d:resource.infDecAmount{Dec:(*inf.Dec)(nil)}, s:\"500m\", Format:\"DecimalSI\"}: d"
        );
        assert_eq!(q("1000").parse_cache(), "");
        assert_eq!(q("-1").int64, Some((-1, 0)));
    }
}
