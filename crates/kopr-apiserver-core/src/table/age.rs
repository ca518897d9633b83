//! Time formatting for table cells: apimachinery's `duration.HumanDuration`
//! and the printers' "translate timestamp since" helpers.

use jiff::Timestamp;
use serde_json::Value;

const NANOS_PER_SEC: i64 = 1_000_000_000;

/// Formats a duration given in nanoseconds exactly like
/// `k8s.io/apimachinery/pkg/util/duration.HumanDuration` ("5s", "3m20s",
/// "2d3h", "<invalid>" when more than ~2s in the future).
pub fn human_duration(nanos: i64) -> String {
    // Truncation toward zero, as Go's int(d.Seconds()) does.
    let seconds = nanos / NANOS_PER_SEC;
    if seconds < -1 {
        return "<invalid>".to_string();
    } else if seconds < 0 {
        return "0s".to_string();
    } else if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = nanos / (60 * NANOS_PER_SEC);
    if minutes < 10 {
        let s = seconds % 60;
        if s == 0 {
            return format!("{minutes}m");
        }
        return format!("{minutes}m{s}s");
    } else if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = nanos / (3600 * NANOS_PER_SEC);
    if hours < 8 {
        let m = minutes % 60;
        if m == 0 {
            return format!("{hours}h");
        }
        return format!("{hours}h{m}m");
    } else if hours < 48 {
        return format!("{hours}h");
    } else if hours < 24 * 8 {
        let h = hours % 24;
        if h == 0 {
            return format!("{}d", hours / 24);
        }
        return format!("{}d{h}h", hours / 24);
    } else if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    } else if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        if dy == 0 {
            return format!("{}y", hours / 24 / 365);
        }
        return format!("{}y{dy}d", hours / 24 / 365);
    }
    format!("{}y", hours / 24 / 365)
}

/// Parses an RFC 3339 timestamp field; `None` when missing, null, unparsable
/// or Go's zero time (`0001-01-01T00:00:00Z`), which kube treats as unset.
pub fn parse_time(v: Option<&Value>) -> Option<Timestamp> {
    let ts: Timestamp = v?.as_str()?.parse().ok()?;
    // Go's zero time.Time: 0001-01-01T00:00:00Z.
    const GO_ZERO_SECONDS: i64 = -62_135_596_800;
    if ts.as_second() == GO_ZERO_SECONDS && ts.subsec_nanosecond() == 0 {
        return None;
    }
    Some(ts)
}

/// Nanoseconds from `a` to `b`, saturated to the range of Go's `time.Duration`.
pub fn nanos_between(a: Timestamp, b: Timestamp) -> i64 {
    let d = b.as_nanosecond() - a.as_nanosecond();
    d.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// `translateTimestampSince`: the age of a timestamp, or "<unknown>" if unset.
pub fn since(v: Option<&Value>, now: Timestamp) -> String {
    match parse_time(v) {
        None => "<unknown>".to_string(),
        Some(t) => human_duration(nanos_between(t, now)),
    }
}

/// A timestamp as Go's `t.UTC().Format(time.RFC3339)` prints it (no fractional
/// seconds); unset times print as Go's zero time.
pub fn rfc3339(v: Option<&Value>) -> String {
    let Some(ts) = parse_time(v) else {
        return "0001-01-01T00:00:00Z".to_string();
    };
    let dt = ts.to_zoned(jiff::tz::TimeZone::UTC).datetime();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const S: i64 = NANOS_PER_SEC;

    #[test]
    fn human_duration_matches_apimachinery() {
        let cases: &[(i64, &str)] = &[
            (-3 * S, "<invalid>"),
            (-2 * S, "<invalid>"),
            (-S - S / 2, "0s"),
            (-S, "0s"),
            (0, "0s"),
            (5 * S, "5s"),
            (119 * S, "119s"),
            (120 * S, "2m"),
            (200 * S, "3m20s"),
            (599 * S, "9m59s"),
            (600 * S, "10m"),
            (179 * 60 * S, "179m"),
            (180 * 60 * S, "3h"),
            (3 * 3600 * S + 5 * 60 * S, "3h5m"),
            (8 * 3600 * S, "8h"),
            (47 * 3600 * S, "47h"),
            (48 * 3600 * S, "2d"),
            (51 * 3600 * S, "2d3h"),
            (8 * 24 * 3600 * S, "8d"),
            (729 * 24 * 3600 * S, "729d"),
            (730 * 24 * 3600 * S, "2y"),
            (800 * 24 * 3600 * S, "2y70d"),
            (3000 * 24 * 3600 * S, "8y"),
            (i64::MAX, "292y"),
            (i64::MIN, "<invalid>"),
        ];
        for (d, want) in cases {
            assert_eq!(human_duration(*d), *want, "{d}");
        }
    }

    #[test]
    fn timestamps() {
        let now: Timestamp = "2024-05-01T12:00:00Z".parse().unwrap_or_default();
        assert_eq!(since(Some(&json!("2024-05-01T11:59:55Z")), now), "5s");
        assert_eq!(since(Some(&json!("2024-05-01T12:00:01Z")), now), "0s");
        assert_eq!(
            since(Some(&json!("2024-05-01T12:00:03Z")), now),
            "<invalid>"
        );
        assert_eq!(since(None, now), "<unknown>");
        assert_eq!(since(Some(&Value::Null), now), "<unknown>");
        assert_eq!(
            since(Some(&json!("0001-01-01T00:00:00Z")), now),
            "<unknown>"
        );
        assert_eq!(since(Some(&json!("garbage")), now), "<unknown>");
        assert_eq!(
            rfc3339(Some(&json!("2024-05-01T14:00:00.123+02:00"))),
            "2024-05-01T12:00:00Z"
        );
        assert_eq!(rfc3339(None), "0001-01-01T00:00:00Z");
    }
}
