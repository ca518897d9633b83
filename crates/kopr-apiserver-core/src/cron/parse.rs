//! robfig/cron v3's `ParseStandard`, as kube's CronJob validation and
//! controller run it: five fields, `@` descriptors and `TZ=`/`CRON_TZ=`
//! prefixes, with the parser's error messages (and Go's `strconv` /
//! `time.ParseDuration` ones it embeds). Also Go's `time.LoadLocation`.

use jiff::tz::TimeZone;

use super::duration::{DurationError, parse_duration};
use super::{Bits, STAR_BIT, Schedule, Spec};
use crate::gofmt::quote as go_quote;

/// Why `strconv.Atoi` refuses a number, with Go's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AtoiError {
    /// Not an integer.
    #[error("strconv.Atoi: parsing {}: invalid syntax", go_quote(.0))]
    Syntax(String),
    /// Beyond 64 bits.
    #[error("strconv.Atoi: parsing {}: value out of range", go_quote(.0))]
    Range(String),
}

/// Why one part of a schedule's field (`5`, `1-5`, `*/10`) does not parse,
/// with robfig/cron's text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RangeError {
    /// A number that does not parse.
    #[error("failed to parse int from {expr}: {source}")]
    Int {
        /// The number as written.
        expr: String,
        /// Go's error.
        source: AtoiError,
    },
    /// A negative number.
    #[error("negative number ({n}) not allowed: {expr}")]
    Negative {
        /// The number.
        n: i64,
        /// As written.
        expr: String,
    },
    /// `a-b-c`.
    #[error("too many hyphens: {0}")]
    Hyphens(String),
    /// `a/b/c`.
    #[error("too many slashes: {0}")]
    Slashes(String),
    /// A start below the field's minimum.
    #[error("beginning of range ({start}) below minimum ({min}): {expr}")]
    BelowMinimum {
        /// The start.
        start: u64,
        /// The field's minimum.
        min: u64,
        /// As written.
        expr: String,
    },
    /// An end above the field's maximum.
    #[error("end of range ({end}) above maximum ({max}): {expr}")]
    AboveMaximum {
        /// The end.
        end: u64,
        /// The field's maximum.
        max: u64,
        /// As written.
        expr: String,
    },
    /// A start after the end.
    #[error("beginning of range ({start}) beyond end of range ({end}): {expr}")]
    Reversed {
        /// The start.
        start: u64,
        /// The end.
        end: u64,
        /// As written.
        expr: String,
    },
    /// A step of zero.
    #[error("step of range should be a positive number: {0}")]
    Step(String),
}

/// Why Go's `time.LoadLocation` refuses a zone name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LocationError {
    /// A path-like name (`..`, a leading slash).
    #[error("time: invalid location name")]
    InvalidName,
    /// A name the zone database lacks.
    #[error("unknown time zone {0}")]
    Unknown(String),
}

/// Why `cron.ParseStandard` refuses a schedule, with its text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// An empty schedule.
    #[error("empty spec string")]
    Empty,
    /// A `TZ=`/`CRON_TZ=` prefix naming no zone.
    #[error("provided bad location {name}: {source}")]
    Location {
        /// The zone name.
        name: String,
        /// Why it is refused.
        source: LocationError,
    },
    /// An `@` word robfig/cron does not know.
    #[error("unrecognized descriptor: {0}")]
    Descriptor(String),
    /// `@every` with a bad duration.
    #[error("failed to parse duration {descriptor}: {source}")]
    Every {
        /// The descriptor as written.
        descriptor: String,
        /// Why the duration is refused.
        source: DurationError,
    },
    /// Not five fields.
    #[error("expected exactly 5 fields, found {found}: [{fields}]")]
    FieldCount {
        /// How many there are.
        found: usize,
        /// The fields, space-separated.
        fields: String,
    },
    /// A field that does not parse.
    #[error(transparent)]
    Range(#[from] RangeError),
}

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

const SECONDS: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: MONTH_NAMES,
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: DOW_NAMES,
};

/// `strconv.Atoi`, with Go's error text.
fn atoi(s: &str) -> Result<i64, AtoiError> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(AtoiError::Syntax(s.to_string()));
    }
    s.parse::<i64>()
        .map_err(|_| AtoiError::Range(s.to_string()))
}

/// The parser's `mustParseInt`.
fn must_parse_int(expr: &str) -> Result<u64, RangeError> {
    let n = atoi(expr).map_err(|source| RangeError::Int {
        expr: expr.to_string(),
        source,
    })?;
    if n < 0 {
        return Err(RangeError::Negative {
            n,
            expr: expr.to_string(),
        });
    }
    Ok(n as u64)
}

fn parse_int_or_name(expr: &str, b: &Bounds) -> Result<u64, RangeError> {
    let lower = expr.to_lowercase();
    if let Some((_, v)) = b.names.iter().find(|(n, _)| *n == lower) {
        return Ok(*v);
    }
    must_parse_int(expr)
}

/// The bits `min..=max` every `step`.
fn get_bits(min: u64, max: u64, step: u64) -> u64 {
    if step == 1 {
        let below_max = if max >= 63 {
            u64::MAX
        } else {
            !(u64::MAX << (max + 1))
        };
        return below_max & (u64::MAX << min.min(63));
    }
    (min..=max)
        .step_by(step as usize)
        .filter(|i| *i < 64)
        .fold(0, |bits, i| bits | 1 << i)
}

/// Every value of a field, as a `*`.
fn all(b: &Bounds) -> u64 {
    get_bits(b.min, b.max, 1) | STAR_BIT
}

/// One comma-separated part of a field (`5`, `1-5`, `*/10`, `mon-fri`).
fn get_range(expr: &str, b: &Bounds) -> Result<u64, RangeError> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let mut extra = 0;
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        extra = STAR_BIT;
        (b.min, b.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], b)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], b)?,
            _ => return Err(RangeError::Hyphens(expr.to_string())),
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
            if s > 1 {
                extra = 0;
            }
            s
        }
        _ => return Err(RangeError::Slashes(expr.to_string())),
    };
    let expr = || expr.to_string();
    if start < b.min {
        return Err(RangeError::BelowMinimum {
            start,
            min: b.min,
            expr: expr(),
        });
    }
    if end > b.max {
        return Err(RangeError::AboveMaximum {
            end,
            max: b.max,
            expr: expr(),
        });
    }
    if start > end {
        return Err(RangeError::Reversed {
            start,
            end,
            expr: expr(),
        });
    }
    if step == 0 {
        return Err(RangeError::Step(expr()));
    }
    Ok(get_bits(start, end, step) | extra)
}

/// A whole field: its comma-separated ranges, or'ed.
fn get_field(field: &str, b: &Bounds) -> Result<u64, RangeError> {
    field
        .split(',')
        .filter(|e| !e.is_empty())
        .try_fold(0, |bits, expr| Ok(bits | get_range(expr, b)?))
}

fn parse_descriptor(d: &str, tz: TimeZone) -> Result<Schedule, ScheduleError> {
    let first = |b: &Bounds| 1u64 << b.min;
    let at = |minute, hour, dom, month, dow| Spec {
        second: first(&SECONDS),
        minute,
        hour,
        dom,
        month,
        dow,
    };
    let spec = match d {
        "@yearly" | "@annually" => at(
            first(&MINUTES),
            first(&HOURS),
            first(&DOM),
            first(&MONTHS),
            all(&DOW),
        ),
        "@monthly" => at(
            first(&MINUTES),
            first(&HOURS),
            first(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        "@weekly" => at(
            first(&MINUTES),
            first(&HOURS),
            all(&DOM),
            all(&MONTHS),
            first(&DOW),
        ),
        "@daily" | "@midnight" => at(
            first(&MINUTES),
            first(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        "@hourly" => at(
            first(&MINUTES),
            all(&HOURS),
            all(&DOM),
            all(&MONTHS),
            all(&DOW),
        ),
        _ => {
            let Some(dur) = d.strip_prefix("@every ") else {
                return Err(ScheduleError::Descriptor(d.to_string()));
            };
            let nanos = parse_duration(dur).map_err(|source| ScheduleError::Every {
                descriptor: d.to_string(),
                source,
            })?;
            // `cron.Every`: at least a second, in whole seconds.
            let secs = (nanos / 1_000_000_000).max(1) as u64;
            return Ok(Schedule {
                bits: Bits::Every(secs),
                tz,
            });
        }
    };
    Ok(Schedule {
        bits: Bits::Spec(spec),
        tz,
    })
}

/// Go's `time.LoadLocation` on the zoneinfo database. `Local` is taken as
/// UTC: kube-controller-manager runs in UTC in its container.
pub fn load_location(name: &str) -> Result<TimeZone, LocationError> {
    if name.is_empty() || name == "UTC" || name == "Local" {
        return Ok(TimeZone::UTC);
    }
    if name.contains("..") || name.starts_with('/') || name.starts_with('\\') {
        return Err(LocationError::InvalidName);
    }
    match jiff::tz::db().get(name) {
        Ok(tz) if tz.iana_name() == Some(name) => Ok(tz),
        _ => Err(LocationError::Unknown(name.to_string())),
    }
}

/// `cron.ParseStandard(spec)`: the schedule, or the parser's error message.
pub fn parse_standard(spec: &str) -> Result<Schedule, ScheduleError> {
    if spec.is_empty() {
        return Err(ScheduleError::Empty);
    }
    let mut spec = spec;
    let mut tz = TimeZone::UTC;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let end = spec.find(' ').unwrap_or(spec.len());
        let name = spec.get(eq + 1..end).unwrap_or("");
        tz = load_location(name).map_err(|source| ScheduleError::Location {
            name: name.to_string(),
            source,
        })?;
        spec = spec[end..].trim();
    }
    if spec.starts_with('@') {
        return parse_descriptor(spec, tz);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(ScheduleError::FieldCount {
            found: fields.len(),
            fields: fields.join(" "),
        });
    }
    let parsed = Spec {
        second: 1,
        minute: get_field(fields[0], &MINUTES)?,
        hour: get_field(fields[1], &HOURS)?,
        dom: get_field(fields[2], &DOM)?,
        month: get_field(fields[3], &MONTHS)?,
        dow: get_field(fields[4], &DOW)?,
    };
    Ok(Schedule {
        bits: Bits::Spec(parsed),
        tz,
    })
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
            assert!(parse_standard(ok).is_ok(), "{ok}");
        }
        let cases = [
            ("", "empty spec string"),
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
            (
                "-1 * * * *",
                "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax",
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
            assert_eq!(
                parse_standard(spec).err().map(|e| e.to_string()),
                Some(msg.to_string()),
                "{spec}"
            );
        }
    }

    #[test]
    fn fields_become_bits() {
        let spec = |s: &str| match parse_standard(s).map(|s| s.bits) {
            Ok(Bits::Spec(spec)) => spec,
            other => panic!("{s}: {other:?}"),
        };
        let s = spec("*/15 1-3,5 * jan,mar sun");
        assert_eq!(s.minute, 1 | 1 << 15 | 1 << 30 | 1 << 45);
        assert_eq!(s.hour, 0b10_1110);
        assert_eq!(s.dom, 0xffff_fffe | STAR_BIT);
        assert_eq!(s.month, 1 << 1 | 1 << 3);
        assert_eq!(s.dow, 1);
        // A step over `*` is not a star.
        assert_eq!(spec("0 0 */2 * *").dom & STAR_BIT, 0);
        assert_eq!(spec("0 0 */1 * *").dom & STAR_BIT, STAR_BIT);
        let every = parse_standard("@every 90s500ms").map(|s| s.bits);
        assert_eq!(every, Ok(Bits::Every(90)));
        let every = parse_standard("@every 10ms").map(|s| s.bits);
        assert_eq!(every, Ok(Bits::Every(1)));
    }
}
