//! Go's `time.ParseDuration`: the value in nanoseconds, or the error text
//! Go gives (`@every` schedules carry such durations).

use crate::gofmt::quote as go_quote;

/// Why a duration does not parse, with the text Go's `time.ParseDuration`
/// gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    /// Not a duration at all, or out of range.
    #[error("time: invalid duration {}", go_quote(.0))]
    Invalid(String),
    /// A number without a unit.
    #[error("time: missing unit in duration {}", go_quote(.0))]
    MissingUnit(String),
    /// A unit Go does not know.
    #[error("time: unknown unit {} in duration {}", go_quote(.unit), go_quote(.duration))]
    UnknownUnit {
        /// The unit.
        unit: String,
        /// The whole duration.
        duration: String,
    },
}

/// Nanoseconds per unit suffix.
fn unit_scale(unit: &str) -> Option<u64> {
    Some(match unit {
        "ns" => 1,
        "us" | "\u{b5}s" | "\u{3bc}s" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        "m" => 60_000_000_000,
        "h" => 3_600_000_000_000,
        _ => return None,
    })
}

/// The leading decimal digits of `s` as an integer (None on overflow of
/// an i64, as Go's `leadingInt` reports), and the rest.
fn leading_int(s: &str) -> (Option<u64>, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let mut v: u64 = 0;
    let mut ok = true;
    for b in s[..n].bytes() {
        if v > (1 << 63) / 10 {
            ok = false;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(b - b'0'));
        if v > 1 << 63 {
            ok = false;
        }
    }
    (ok.then_some(v), &s[n..])
}

/// The leading fraction digits of `s`: the value, its scale (10^digits
/// used), and the rest; digits past what fits are dropped, as Go does.
fn leading_fraction(s: &str) -> (u64, f64, &str) {
    let n = s.bytes().take_while(u8::is_ascii_digit).count();
    let (mut x, mut scale, mut overflow) = (0u64, 1f64, false);
    for b in s[..n].bytes() {
        if overflow {
            continue;
        }
        if x > (1 << 63) / 10 {
            overflow = true;
            continue;
        }
        let y = x * 10 + u64::from(b - b'0');
        if y > 1 << 63 {
            overflow = true;
            continue;
        }
        x = y;
        scale *= 10.0;
    }
    (x, scale, &s[n..])
}

/// `time.ParseDuration(orig)` in nanoseconds.
pub fn parse_duration(orig: &str) -> Result<i64, DurationError> {
    let invalid = || Err(DurationError::Invalid(orig.to_string()));
    let mut s = orig;
    let neg = s.starts_with('-');
    s = s.strip_prefix(['-', '+']).unwrap_or(s);
    if s == "0" {
        return Ok(0);
    }
    if s.is_empty() {
        return invalid();
    }
    let mut total: u64 = 0;
    while !s.is_empty() {
        if !(s.starts_with('.') || s.as_bytes()[0].is_ascii_digit()) {
            return invalid();
        }
        let before = s.len();
        let (int, rest) = leading_int(s);
        let Some(mut v) = int else {
            return invalid();
        };
        let pre = rest.len() != before;
        s = rest;
        let (mut f, mut scale, mut post) = (0u64, 1f64, false);
        if let Some(rest) = s.strip_prefix('.') {
            let before = rest.len();
            let (ff, sc, rest) = leading_fraction(rest);
            (f, scale, post) = (ff, sc, rest.len() != before);
            s = rest;
        }
        if !pre && !post {
            return invalid();
        }
        let unit_len = s
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(DurationError::MissingUnit(orig.to_string()));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let Some(unit_ns) = unit_scale(unit) else {
            return Err(DurationError::UnknownUnit {
                unit: unit.to_string(),
                duration: orig.to_string(),
            });
        };
        if v > (1 << 63) / unit_ns {
            return invalid();
        }
        v *= unit_ns;
        if f > 0 {
            v = v.saturating_add((f as f64 * (unit_ns as f64 / scale)) as u64);
            if v > 1 << 63 {
                return invalid();
            }
        }
        total = total.saturating_add(v);
        if total > 1 << 63 {
            return invalid();
        }
    }
    if neg {
        return Ok((total as i128).wrapping_neg() as i64);
    }
    if total > i64::MAX as u64 {
        return invalid();
    }
    Ok(total as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_parse_as_go_parses_them() {
        assert_eq!(parse_duration("1h30m"), Ok(5_400_000_000_000));
        assert_eq!(parse_duration("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration(".5m"), Ok(30_000_000_000));
        assert_eq!(parse_duration("-2s"), Ok(-2_000_000_000));
        assert_eq!(parse_duration("0"), Ok(0));
        assert_eq!(parse_duration("300ms"), Ok(300_000_000));
        assert_eq!(
            parse_duration("1x").map_err(|e| e.to_string()),
            Err("time: unknown unit \"x\" in duration \"1x\"".to_string())
        );
        assert_eq!(
            parse_duration("10").map_err(|e| e.to_string()),
            Err("time: missing unit in duration \"10\"".to_string())
        );
        assert_eq!(
            parse_duration(".").map_err(|e| e.to_string()),
            Err("time: invalid duration \".\"".to_string())
        );
        assert_eq!(
            parse_duration("9999999999h").map_err(|e| e.to_string()),
            Err("time: invalid duration \"9999999999h\"".to_string())
        );
        assert_eq!(
            parse_duration("").map_err(|e| e.to_string()),
            Err("time: invalid duration \"\"".to_string())
        );
    }
}
