//! robfig/cron v3's `ParseStandard`, as kube's CronJob validation runs it:
//! five fields, `@` descriptors and `TZ=`/`CRON_TZ=` prefixes, with the
//! parser's error messages (and Go's `strconv` / `time.ParseDuration` ones
//! it embeds). Also Go's `time.LoadLocation` check of zone names.

use crate::validation::go_quote;

struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MONTH_NAMES: &[(&str, u64)] = &[
    ("jan", 1),
    ("feb", 2),
    ("mar", 3),
    ("apr", 4),
    ("may", 5),
    ("jun", 6),
    ("jul", 7),
    ("aug", 8),
    ("sep", 9),
    ("oct", 10),
    ("nov", 11),
    ("dec", 12),
];

const DOW_NAMES: &[(&str, u64)] = &[
    ("sun", 0),
    ("mon", 1),
    ("tue", 2),
    ("wed", 3),
    ("thu", 4),
    ("fri", 5),
    ("sat", 6),
];

const FIELDS: [Bounds; 5] = [
    Bounds {
        min: 0,
        max: 59,
        names: &[],
    },
    Bounds {
        min: 0,
        max: 23,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 31,
        names: &[],
    },
    Bounds {
        min: 1,
        max: 12,
        names: MONTH_NAMES,
    },
    Bounds {
        min: 0,
        max: 6,
        names: DOW_NAMES,
    },
];

/// `strconv.Atoi`, with Go's error text.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            go_quote(s)
        ));
    }
    s.parse::<i64>()
        .map_err(|_| format!("strconv.Atoi: parsing {}: value out of range", go_quote(s)))
}

/// The parser's `mustParseInt`.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let n = atoi(expr).map_err(|e| format!("failed to parse int from {expr}: {e}"))?;
    if n < 0 {
        return Err(format!("negative number ({n}) not allowed: {expr}"));
    }
    Ok(n as u64)
}

fn parse_int_or_name(expr: &str, b: &Bounds) -> Result<u64, String> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

fn get_range(expr: &str, b: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (b.min, b.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], b)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], b)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let s = must_parse_int(range_and_step[1])?;
            if single {
                end = b.max;
            }
            s
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < b.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            b.min
        ));
    }
    if end > b.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            b.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// Go's `time.ParseDuration` (only whether it fails, and how).
fn parse_duration(orig: &str) -> Result<(), String> {
    let invalid = || Err(format!("time: invalid duration {}", go_quote(orig)));
    let mut s = orig.strip_prefix(['-', '+']).unwrap_or(orig);
    if s == "0" {
        return Ok(());
    }
    if s.is_empty() {
        return invalid();
    }
    let mut total: f64 = 0.0;
    while !s.is_empty() {
        let b = s.as_bytes();
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return invalid();
        }
        let int_len = b.iter().take_while(|c| c.is_ascii_digit()).count();
        let int_part = &s[..int_len];
        s = &s[int_len..];
        let mut frac_part = "";
        if s.starts_with('.') {
            s = &s[1..];
            let n = s.bytes().take_while(u8::is_ascii_digit).count();
            frac_part = &s[..n];
            s = &s[n..];
            if int_part.is_empty() && frac_part.is_empty() {
                return invalid();
            }
        } else if int_part.is_empty() {
            return invalid();
        }
        let unit_len = s
            .bytes()
            .take_while(|c| *c != b'.' && !c.is_ascii_digit())
            .count();
        if unit_len == 0 {
            return Err(format!("time: missing unit in duration {}", go_quote(orig)));
        }
        let unit = &s[..unit_len];
        s = &s[unit_len..];
        let scale: f64 = match unit {
            "ns" => 1.0,
            "us" | "\u{b5}s" | "\u{3bc}s" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            _ => {
                return Err(format!(
                    "time: unknown unit {} in duration {}",
                    go_quote(unit),
                    go_quote(orig)
                ));
            }
        };
        let v: f64 = format!(
            "{}.{}0",
            if int_part.is_empty() { "0" } else { int_part },
            frac_part
        )
        .parse()
        .unwrap_or(f64::INFINITY);
        total += v * scale;
        if total > 9.223_372_036_854_775e18 {
            return invalid();
        }
    }
    Ok(())
}

fn parse_descriptor(d: &str) -> Result<(), String> {
    match d {
        "@yearly" | "@annually" | "@monthly" | "@weekly" | "@daily" | "@midnight" | "@hourly" => {
            Ok(())
        }
        _ => match d.strip_prefix("@every ") {
            Some(dur) => {
                parse_duration(dur).map_err(|e| format!("failed to parse duration {d}: {e}"))
            }
            None => Err(format!("unrecognized descriptor: {d}")),
        },
    }
}

/// Go's `time.LoadLocation` on the zoneinfo database: the error, if any.
pub(super) fn load_location(name: &str) -> Result<(), String> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(());
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err("time: invalid location name".into());
    }
    match jiff::tz::db().get(name) {
        Ok(tz) if tz.iana_name() == Some(name) => Ok(()),
        _ => Err(format!("unknown time zone {name}")),
    }
}

/// `cron.ParseStandard(spec)`: the error message, if the spec is invalid.
pub(super) fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let end = spec.find(' ').unwrap_or(spec.len());
        let name = spec.get(eq + 1..end).unwrap_or("");
        if let Err(e) = load_location(name) {
            return Err(format!("provided bad location {name}: {e}"));
        }
        spec = spec[end..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in fields.iter().zip(FIELDS.iter()) {
        for expr in field.split(',').filter(|e| !e.is_empty()) {
            get_range(expr, bounds)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules() {
        for ok in [
            "*/5 * * * *",
            "0 0 1 jan-dec mon-fri",
            "@hourly",
            "@every 1h30m",
            "CRON_TZ=UTC 0 * * * *",
            "0 0 ? * *",
            "5,10,15 1-3 * * 0",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
        let cases = [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("1/2/3 * * * *", "too many slashes: 1/2/3"),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("@often", "unrecognized descriptor: @often"),
            (
                "@every 1x",
                "failed to parse duration @every 1x: time: unknown unit \"x\" in duration \"1x\"",
            ),
            (
                "TZ=Mars/Base 0 * * * *",
                "provided bad location Mars/Base: unknown time zone Mars/Base",
            ),
        ];
        for (spec, msg) in cases {
            assert_eq!(parse_standard(spec), Err(msg.to_string()), "{spec}");
        }
    }
}
