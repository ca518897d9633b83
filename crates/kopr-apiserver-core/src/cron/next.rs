//! `SpecSchedule.Next` and `ConstantDelaySchedule.Next` of robfig/cron v3:
//! the first activation after an instant, found field by field (month,
//! day, hour, minute, second) in the schedule's time zone, with Go's
//! `time.Date` normalisation and its choice of offset for wall times that a
//! daylight-saving change skips or repeats.

use jiff::Timestamp;
use jiff::tz::TimeZone;

use super::{Bits, STAR_BIT, Schedule, Spec};

/// Steps after which a search gives up (far more than any schedule needs
/// within the five years robfig/cron searches).
const MAX_STEPS: usize = 1_000_000;

/// The wall-clock fields of an instant in a zone.
struct Fields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    /// Sunday = 0.
    weekday: i64,
}

fn fields(tz: &TimeZone, unix: i64) -> Option<Fields> {
    let dt = tz.to_datetime(Timestamp::from_second(unix).ok()?);
    Some(Fields {
        year: i64::from(dt.year()),
        month: i64::from(dt.month()),
        day: i64::from(dt.day()),
        hour: i64::from(dt.hour()),
        minute: i64::from(dt.minute()),
        second: i64::from(dt.second()),
        weekday: i64::from(dt.weekday().to_sunday_zero_offset()),
    })
}

/// Days from 1970-01-01 to a (proleptic Gregorian) date.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn offset_at(tz: &TimeZone, unix: i64) -> Option<i64> {
    let ts = Timestamp::from_second(unix).ok()?;
    Some(i64::from(tz.to_offset(ts).seconds()))
}

/// Go's `time.Date(year, month, day, hour, min, sec, 0, tz)`: fields out
/// of range carry over; a wall time that does not exist or exists twice
/// resolves as Go resolves it (the offset in force at the wall time read as
/// UTC, corrected once).
fn date(tz: &TimeZone, year: i64, month: i64, day: i64, h: i64, mi: i64, s: i64) -> Option<i64> {
    let m0 = month - 1;
    let (year, month) = (year + m0.div_euclid(12), m0.rem_euclid(12) + 1);
    let days = days_from_civil(year, month, 1) + day - 1;
    let naive = days * 86_400 + h * 3_600 + mi * 60 + s;
    let guess = offset_at(tz, naive)?;
    Some(naive - offset_at(tz, naive - guess)?)
}

fn day_matches(spec: &Spec, f: &Fields) -> bool {
    let dom = spec.dom & (1 << f.day) != 0;
    let dow = spec.dow & (1 << f.weekday) != 0;
    if spec.dom & STAR_BIT != 0 || spec.dow & STAR_BIT != 0 {
        dom && dow
    } else {
        dom || dow
    }
}

fn has(bits: u64, v: i64) -> bool {
    (0..64).contains(&v) && bits & (1 << v) != 0
}

/// The next activation of `schedule` after `t`.
pub(super) fn next(schedule: &Schedule, t: Timestamp) -> Option<Timestamp> {
    let whole = i64::try_from(t.as_nanosecond().div_euclid(1_000_000_000)).ok()?;
    match schedule.bits {
        Bits::Every(secs) => {
            Timestamp::from_second(whole.checked_add(i64::try_from(secs).ok()?)?).ok()
        }
        Bits::Spec(spec) => {
            let unix = spec_next(&spec, &schedule.tz, whole + 1)?;
            Timestamp::from_second(unix).ok()
        }
    }
}

/// The first second at or after `start` the calendar fields allow.
fn spec_next(spec: &Spec, tz: &TimeZone, start: i64) -> Option<i64> {
    let mut t = start;
    let mut added = false;
    let year_limit = fields(tz, t)?.year + 5;
    let mut steps = 0usize;
    let mut step = || {
        steps += 1;
        (steps < MAX_STEPS).then_some(())
    };
    'wrap: loop {
        step()?;
        if fields(tz, t)?.year > year_limit {
            return None;
        }
        while !has(spec.month, fields(tz, t)?.month) {
            step()?;
            if !added {
                added = true;
                let f = fields(tz, t)?;
                t = date(tz, f.year, f.month, 1, 0, 0, 0)?;
            }
            let f = fields(tz, t)?;
            t = date(tz, f.year, f.month + 1, f.day, f.hour, f.minute, f.second)?;
            if fields(tz, t)?.month == 1 {
                continue 'wrap;
            }
        }
        while !day_matches(spec, &fields(tz, t)?) {
            step()?;
            if !added {
                added = true;
                let f = fields(tz, t)?;
                t = date(tz, f.year, f.month, f.day, 0, 0, 0)?;
            }
            let f = fields(tz, t)?;
            t = date(tz, f.year, f.month, f.day + 1, f.hour, f.minute, f.second)?;
            // Midnight moved by a daylight-saving change: back to midnight.
            let hour = fields(tz, t)?.hour;
            if hour > 12 {
                t += (24 - hour) * 3_600;
            } else {
                t -= hour * 3_600;
            }
            if fields(tz, t)?.day == 1 {
                continue 'wrap;
            }
        }
        while !has(spec.hour, fields(tz, t)?.hour) {
            step()?;
            if !added {
                added = true;
                let f = fields(tz, t)?;
                t = date(tz, f.year, f.month, f.day, f.hour, 0, 0)?;
            }
            t += 3_600;
            if fields(tz, t)?.hour == 0 {
                continue 'wrap;
            }
        }
        while !has(spec.minute, fields(tz, t)?.minute) {
            step()?;
            if !added {
                added = true;
                t -= t.rem_euclid(60);
            }
            t += 60;
            if fields(tz, t)?.minute == 0 {
                continue 'wrap;
            }
        }
        while !has(spec.second, fields(tz, t)?.second) {
            step()?;
            added = true;
            t += 1;
            if fields(tz, t)?.second == 0 {
                continue 'wrap;
            }
        }
        return Some(t);
    }
}

#[cfg(test)]
mod tests {
    use super::super::parse_standard;
    use super::*;

    fn ts(s: &str) -> Timestamp {
        s.parse().unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    fn next_of(spec: &str, after: &str) -> Option<String> {
        let sched = parse_standard(spec).unwrap_or_else(|e| panic!("{spec}: {e}"));
        sched.next(ts(after)).map(|t| t.to_string())
    }

    #[test]
    fn next_times_in_utc() {
        let cases = [
            ("* * * * *", "2024-03-05T10:07:30Z", "2024-03-05T10:08:00Z"),
            ("* * * * *", "2024-03-05T10:07:00Z", "2024-03-05T10:08:00Z"),
            (
                "*/15 * * * *",
                "2024-03-05T10:07:00Z",
                "2024-03-05T10:15:00Z",
            ),
            ("0 * * * *", "2024-03-05T23:59:59Z", "2024-03-06T00:00:00Z"),
            (
                "30 6-16/4 * * 1-5",
                "2024-03-05T15:00:00Z",
                "2024-03-06T06:30:00Z",
            ),
            ("0 0 1 * *", "2024-12-15T00:00:00Z", "2025-01-01T00:00:00Z"),
            ("0 0 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
            (
                "0 0 * * sun",
                "2024-03-05T00:00:00Z",
                "2024-03-10T00:00:00Z",
            ),
            // Both day fields restricted: either matches.
            (
                "0 0 13 * fri",
                "2024-03-05T00:00:00Z",
                "2024-03-08T00:00:00Z",
            ),
            (
                "0 0 */10 * *",
                "2024-03-05T00:00:00Z",
                "2024-03-11T00:00:00Z",
            ),
            ("@hourly", "2024-03-05T10:07:00Z", "2024-03-05T11:00:00Z"),
            ("@daily", "2024-03-05T10:07:00Z", "2024-03-06T00:00:00Z"),
            ("@weekly", "2024-03-05T10:07:00Z", "2024-03-10T00:00:00Z"),
            ("@monthly", "2024-03-05T10:07:00Z", "2024-04-01T00:00:00Z"),
            ("@yearly", "2024-03-05T10:07:00Z", "2025-01-01T00:00:00Z"),
            (
                "@every 90s",
                "2024-03-05T10:07:00.5Z",
                "2024-03-05T10:08:30Z",
            ),
        ];
        for (spec, after, want) in cases {
            assert_eq!(
                next_of(spec, after).as_deref(),
                Some(want),
                "{spec} after {after}"
            );
        }
        assert_eq!(next_of("0 0 31 2 *", "2024-03-05T00:00:00Z"), None);
        assert_eq!(next_of("59 23 30 2 *", "2024-03-05T00:00:00Z"), None);
    }

    #[test]
    fn next_times_in_zones() {
        let cases = [
            // 09:00 in Berlin is 08:00 UTC in winter, 07:00 in summer.
            (
                "TZ=Europe/Berlin 0 9 * * *",
                "2024-01-10T12:00:00Z",
                "2024-01-11T08:00:00Z",
            ),
            (
                "TZ=Europe/Berlin 0 9 * * *",
                "2024-07-10T12:00:00Z",
                "2024-07-11T07:00:00Z",
            ),
            // 02:30 does not exist on 2024-03-31 in Berlin: that day is
            // skipped, as robfig/cron skips it.
            (
                "CRON_TZ=Europe/Berlin 30 2 * * *",
                "2024-03-30T12:00:00Z",
                "2024-04-01T00:30:00Z",
            ),
            // 01:30 happens twice on 2024-11-03 in New York: the first.
            (
                "TZ=America/New_York 30 1 * * *",
                "2024-11-02T12:00:00Z",
                "2024-11-03T05:30:00Z",
            ),
            (
                "TZ=Asia/Kolkata 0 0 * * *",
                "2024-03-05T00:00:00Z",
                "2024-03-05T18:30:00Z",
            ),
        ];
        for (spec, after, want) in cases {
            assert_eq!(
                next_of(spec, after).as_deref(),
                Some(want),
                "{spec} after {after}"
            );
        }
    }

    #[test]
    fn go_dates_normalise() {
        let utc = TimeZone::UTC;
        assert_eq!(date(&utc, 2024, 13, 1, 0, 0, 0), Some(1_735_689_600));
        assert_eq!(date(&utc, 2024, 2, 30, 0, 0, 0), Some(1_709_251_200));
        assert_eq!(days_from_civil(1970, 1, 1), 0);
    }
}
