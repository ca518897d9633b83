//! String formats of kube-openapi's `strfmt.Default` registry, limited to
//! the ones apiextensions-apiserver 1.32 keeps (see
//! `SUPPORTED_STRING_FORMATS` in the parent module). Format names are
//! normalized like go-openapi does (dashes removed: `date-time` is
//! `datetime`).

use regex::Regex;
use std::net::Ipv6Addr;
use std::sync::LazyLock;

fn normalize(name: &str) -> String {
    name.replace('-', "")
}

/// Whether the registry knows the format (the format validator applies).
pub(super) fn is_known(format: &str) -> bool {
    !format.is_empty() && super::SUPPORTED_STRING_FORMATS.contains(&normalize(format).as_str())
}

fn rx(p: &str) -> Option<Regex> {
    Regex::new(p).ok()
}

fn matches(re: &LazyLock<Option<Regex>>, s: &str) -> bool {
    re.as_ref().is_some_and(|r| r.is_match(s))
}

static HOSTNAME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9\-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$",
    )
});
static UUID: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$"));
static UUID3: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
});
static UUID4: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static UUID5: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
});
static BASE64: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
});
static CREDIT_CARD: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(
        r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35[0-9]{3})[0-9]{11})$",
    )
});
static SSN: LazyLock<Option<Regex>> = LazyLock::new(|| rx(r"^[0-9]{3}[- ]?[0-9]{2}[- ]?[0-9]{4}$"));
static HEX_COLOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$"));
static RGB_COLOR: LazyLock<Option<Regex>> = LazyLock::new(|| {
    let n = r"(0|[1-9][0-9]?|1[0-9][0-9]?|2[0-4][0-9]|25[0-5])";
    let w = r"[\t\n\f\r ]*";
    rx(&format!(r"^rgb\({w}{n}{w},{w}{n}{w},{w}{n}{w}\)$"))
});
static DATE_TIME: LazyLock<Option<Regex>> = LazyLock::new(|| {
    rx(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")
});
static DURATION_VALIDATOR: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"^[\t\n\f\r ]*(?:[0-9]+[\t\n\f\r ]*[A-Za-zµ]+[\t\n\f\r ]*)+$"));
static DURATION_MATCHER: LazyLock<Option<Regex>> =
    LazyLock::new(|| rx(r"(([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))"));

/// Whether `value` is valid for `format` (`Registry.Validates`).
pub(super) fn validates(format: &str, value: &str) -> bool {
    match normalize(format).as_str() {
        "uri" => is_request_uri(value),
        "email" => is_email(value),
        "hostname" => is_hostname(value),
        "ipv4" => parse_ip_sloppy(value) && value.contains('.'),
        "ipv6" => is_ipv6(value),
        "cidr" => is_cidr_sloppy(value),
        "mac" => is_mac(value),
        "uuid" => matches(&UUID, value),
        "uuid3" => matches(&UUID3, value),
        "uuid4" => matches(&UUID4, value),
        "uuid5" => matches(&UUID5, value),
        "isbn" => is_isbn10(value) || is_isbn13(value),
        "isbn10" => is_isbn10(value),
        "isbn13" => is_isbn13(value),
        "creditcard" => is_credit_card(value),
        "ssn" => value.len() == 11 && matches(&SSN, value),
        "hexcolor" => matches(&HEX_COLOR, value),
        "rgbcolor" => matches(&RGB_COLOR, value),
        "byte" => matches(&BASE64, value),
        "password" => true,
        "date" => is_date(value),
        "datetime" => is_date_time(value),
        "duration" => is_duration(value),
        "bsonobjectid" => value.len() == 24 && value.bytes().all(|b| b.is_ascii_hexdigit()),
        _ => true,
    }
}

fn is_hostname(s: &str) -> bool {
    matches(&HOSTNAME, s) && s.len() <= 255 && s.split('.').all(|p| p.len() <= 63)
}

/// Go's `dtoi`: leading decimal digits, failing at 0xFFFFFF.
fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + u32::from(s[i] - b'0');
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    if i == 0 { None } else { Some((n, i)) }
}

/// Pre-Go-1.17 IPv4 parsing (leading zeros allowed).
fn parse_ipv4_sloppy(s: &str) -> bool {
    let mut b = s.as_bytes();
    for i in 0..4 {
        if b.is_empty() {
            return false;
        }
        if i > 0 {
            if b[0] != b'.' {
                return false;
            }
            b = &b[1..];
        }
        match dtoi(b) {
            Some((n, c)) if n <= 0xFF => b = &b[c..],
            _ => return false,
        }
    }
    b.is_empty()
}

fn is_ipv6(s: &str) -> bool {
    s.contains(':') && s.parse::<Ipv6Addr>().is_ok()
}

/// `netutils.ParseIPSloppy(s) != nil`.
fn parse_ip_sloppy(s: &str) -> bool {
    match s.bytes().find(|b| *b == b'.' || *b == b':') {
        Some(b'.') => parse_ipv4_sloppy(s),
        Some(b':') => s.parse::<Ipv6Addr>().is_ok(),
        _ => false,
    }
}

fn is_cidr_sloppy(s: &str) -> bool {
    let Some((addr, mask)) = s.split_once('/') else {
        return false;
    };
    let bits = if parse_ipv4_sloppy(addr) {
        32
    } else if addr.parse::<Ipv6Addr>().is_ok() {
        128
    } else {
        return false;
    };
    match dtoi(mask.as_bytes()) {
        Some((n, c)) => c == mask.len() && n <= bits,
        None => false,
    }
}

fn hex_val(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

/// Go's `xtoi2`: two hex digits followed by `sep` or the end.
fn xtoi2(s: &[u8], sep: Option<u8>) -> bool {
    if s.len() > 2 && Some(s[2]) != sep {
        return false;
    }
    s.len() >= 2 && hex_val(s[0]) && hex_val(s[1])
}

/// `net.ParseMAC(s) == nil`.
fn is_mac(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() < 14 {
        return false;
    }
    if b[2] == b':' || b[2] == b'-' {
        if !(b.len() + 1).is_multiple_of(3) {
            return false;
        }
        let n = (b.len() + 1) / 3;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        let sep = b[2];
        (0..n).all(|i| xtoi2(&b[i * 3..], Some(sep)))
    } else if b[4] == b'.' {
        if !(b.len() + 1).is_multiple_of(5) {
            return false;
        }
        let n = 2 * (b.len() + 1) / 5;
        if n != 6 && n != 8 && n != 20 {
            return false;
        }
        let sep = b[4];
        (0..n / 2).all(|i| {
            let x = i * 5;
            xtoi2(&b[x..x + 2], None) && xtoi2(&b[x + 2..], Some(sep))
        })
    } else {
        false
    }
}

fn sanitize_isbn(s: &str) -> String {
    s.chars()
        .filter(|c| !matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '-'))
        .collect()
}

fn is_isbn10(s: &str) -> bool {
    let s = sanitize_isbn(s);
    let b = s.as_bytes();
    if b.len() != 10
        || !b[..9].iter().all(u8::is_ascii_digit)
        || !(b[9].is_ascii_digit() || b[9] == b'X')
    {
        return false;
    }
    let mut sum: u32 = 0;
    for (i, d) in b[..9].iter().enumerate() {
        sum += (i as u32 + 1) * u32::from(d - b'0');
    }
    sum += if b[9] == b'X' {
        100
    } else {
        10 * u32::from(b[9] - b'0')
    };
    sum.is_multiple_of(11)
}

fn is_isbn13(s: &str) -> bool {
    let s = sanitize_isbn(s);
    let b = s.as_bytes();
    if b.len() != 13 || !b.iter().all(u8::is_ascii_digit) {
        return false;
    }
    let mut sum: u32 = 0;
    for (i, d) in b[..12].iter().enumerate() {
        let f = if i % 2 == 0 { 1 } else { 3 };
        sum += f * u32::from(d - b'0');
    }
    u32::from(b[12] - b'0') == (10 - sum % 10) % 10
}

fn is_credit_card(s: &str) -> bool {
    let digits: String = s.chars().filter(char::is_ascii_digit).collect();
    if !matches(&CREDIT_CARD, &digits) {
        return false;
    }
    let mut sum = 0u32;
    let mut double = false;
    for d in digits.bytes().rev() {
        let mut n = u32::from(d - b'0');
        if double {
            n *= 2;
            sum += if n >= 10 { n % 10 + 1 } else { n };
        } else {
            sum += n;
        }
        double = !double;
    }
    sum.is_multiple_of(10)
}

/// `time.Parse("2006-01-02", s) == nil`.
fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return false;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        let part = &b[r];
        if !part.iter().all(u8::is_ascii_digit) {
            return None;
        }
        Some(part.iter().fold(0u32, |n, d| n * 10 + u32::from(d - b'0')))
    };
    let (Some(y), Some(m), Some(d)) = (num(0..4), num(5..7), num(8..10)) else {
        return false;
    };
    if !(1..=12).contains(&m) || d < 1 {
        return false;
    }
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let max = match m {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    d <= max
}

/// strfmt's `IsDateTime`.
fn is_date_time(s: &str) -> bool {
    if s.len() < 4 {
        return false;
    }
    let lower = s.to_lowercase();
    let parts: Vec<&str> = lower.split('t').collect();
    if parts.len() < 2 || !is_date(parts[0]) {
        return false;
    }
    let Some(re) = DATE_TIME.as_ref() else {
        return false;
    };
    let Some(c) = re.captures(parts[1]) else {
        return false;
    };
    let g = |i: usize| c.get(i).map(|m| m.as_str()).unwrap_or("");
    g(1) <= "23" && g(2) <= "59" && g(3) <= "59"
}

/// Go's `time.ParseDuration(s) == nil`.
fn go_parse_duration(s: &str) -> bool {
    let mut b = s.as_bytes();
    if let Some(&c) = b.first()
        && (c == b'-' || c == b'+')
    {
        b = &b[1..];
    }
    if b == b"0" {
        return true;
    }
    if b.is_empty() {
        return false;
    }
    // 1<<63 ns (negative) or 1<<63-1 (positive): the same in f64.
    let limit: f64 = 9_223_372_036_854_775_808.0;
    let mut total: f64 = 0.0;
    while !b.is_empty() {
        if !(b[0] == b'.' || b[0].is_ascii_digit()) {
            return false;
        }
        let mut i = 0;
        let mut v: u64 = 0;
        while i < b.len() && b[i].is_ascii_digit() {
            v = match v
                .checked_mul(10)
                .and_then(|v| v.checked_add(u64::from(b[i] - b'0')))
            {
                Some(v) if v <= 1 << 63 => v,
                _ => return false,
            };
            i += 1;
        }
        let pre = i > 0;
        b = &b[i..];
        let mut frac = 0.0f64;
        let mut post = false;
        if b.first() == Some(&b'.') {
            b = &b[1..];
            let mut j = 0;
            let mut scale = 1.0f64;
            while j < b.len() && b[j].is_ascii_digit() {
                scale /= 10.0;
                frac += f64::from(b[j] - b'0') * scale;
                j += 1;
            }
            post = j > 0;
            b = &b[j..];
        }
        if !pre && !post {
            return false;
        }
        let mut u = 0;
        while u < b.len() && !(b[u] == b'.' || b[u].is_ascii_digit()) {
            u += 1;
        }
        if u == 0 {
            return false;
        }
        let unit: f64 = match &b[..u] {
            b"ns" => 1.0,
            b"us" | b"\xc2\xb5s" | b"\xce\xbcs" => 1e3,
            b"ms" => 1e6,
            b"s" => 1e9,
            b"m" => 60e9,
            b"h" => 3600e9,
            _ => return false,
        };
        b = &b[u..];
        total += (v as f64 + frac) * unit;
        if total > limit {
            return false;
        }
    }
    true
}

/// strfmt's `IsDuration` (Go durations or scala-like `3 days`).
fn is_duration(s: &str) -> bool {
    if go_parse_duration(s) {
        return true;
    }
    if !matches(&DURATION_VALIDATOR, s) {
        return false;
    }
    let Some(re) = DURATION_MATCHER.as_ref() else {
        return false;
    };
    const UNITS: &[&[&str]] = &[
        &["ns", "nano"],
        &["us", "µs", "micro"],
        &["ms", "milli"],
        &["s", "sec"],
        &["m", "min"],
        &["h", "hr", "hour"],
        &["d", "day"],
        &["w", "wk", "week"],
    ];
    let mut ok = false;
    for c in re.captures_iter(s) {
        let factor = c.get(2).map(|m| m.as_str()).unwrap_or("");
        if factor.parse::<i64>().is_err() {
            return false;
        }
        let unit = c
            .get(3)
            .map(|m| m.as_str().trim().to_lowercase())
            .unwrap_or_default();
        for variants in UNITS {
            let last = variants.len() - 1;
            for (i, v) in variants.iter().enumerate() {
                if (i == last && unit.starts_with(v)) || v.eq_ignore_ascii_case(&unit) {
                    ok = true;
                }
            }
        }
    }
    ok
}

fn is_atext(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-/=?^_`{|}~".contains(c) || !c.is_ascii()
}

fn is_dot_atom(s: &str) -> bool {
    !s.is_empty()
        && s.split('.')
            .all(|p| !p.is_empty() && p.chars().all(is_atext))
}

fn is_quoted_string(s: &str) -> bool {
    let Some(inner) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return false;
    };
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.next().is_none() => return false,
            '\\' => {}
            '"' => return false,
            c if (c as u32) < 0x20 && c != '\t' => return false,
            _ => {}
        }
    }
    true
}

fn is_addr_spec(s: &str) -> bool {
    let Some(at) = s.rfind('@') else {
        return false;
    };
    let (local, domain) = (&s[..at], &s[at + 1..]);
    let local_ok = is_dot_atom(local) || (local.len() > 2 && is_quoted_string(local));
    let domain_ok = is_dot_atom(domain)
        || (domain.starts_with('[') && domain.ends_with(']') && domain.len() >= 2);
    local_ok && domain_ok
}

/// Approximates `net/mail.ParseAddress(s)` succeeding with an address:
/// `local@domain` or `Display Name <local@domain>`.
fn is_email(s: &str) -> bool {
    let t = s.trim_matches(|c| c == ' ' || c == '\t');
    if let Some(inner) = t.strip_suffix('>') {
        let Some(open) = inner.rfind('<') else {
            return false;
        };
        let name = inner[..open].trim();
        let name_ok = name.is_empty()
            || is_quoted_string(name)
            || name
                .split_whitespace()
                .all(|w| w.chars().all(|c| is_atext(c) || c == '.'));
        return name_ok && is_addr_spec(&inner[open + 1..]);
    }
    is_addr_spec(t)
}

fn valid_escapes(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            if i + 2 >= b.len() || !hex_val(b[i + 1]) || !hex_val(b[i + 2]) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

fn valid_host(host: &str) -> bool {
    if let Some(rest) = host.strip_prefix('[') {
        let Some(end) = rest.find(']') else {
            return false;
        };
        let port = &rest[end + 1..];
        return port.is_empty()
            || port
                .strip_prefix(':')
                .is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit()));
    }
    if let Some(i) = host.rfind(':') {
        let port = &host[i + 1..];
        if !port.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
    }
    valid_escapes(host)
        && host.bytes().all(|b| {
            b >= 0x80 || b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:[]<>\"%".contains(&b)
        })
}

/// `url.ParseRequestURI(s) == nil`.
fn is_request_uri(s: &str) -> bool {
    if s.bytes().any(|b| b < 0x20 || b == 0x7f) || s.is_empty() {
        return false;
    }
    if s == "*" {
        return true;
    }
    // Scheme.
    let mut scheme_end = None;
    for (i, c) in s.char_indices() {
        if c.is_ascii_alphabetic() {
            continue;
        }
        if (c.is_ascii_digit() || c == '+' || c == '-' || c == '.') && i > 0 {
            continue;
        }
        if c == ':' {
            if i == 0 {
                return false;
            }
            scheme_end = Some(i);
        }
        break;
    }
    let rest = match scheme_end {
        Some(i) => &s[i + 1..],
        None => s,
    };
    let rest = match rest.split_once('?') {
        Some((r, _)) => r,
        None => rest,
    };
    if !rest.starts_with('/') {
        // Opaque URIs (mailto:x) are fine with a scheme.
        return scheme_end.is_some();
    }
    let mut path = rest;
    if scheme_end.is_some()
        && let Some(after) = rest.strip_prefix("//")
    {
        let (authority, p) = match after.find('/') {
            Some(i) => (&after[..i], &after[i..]),
            None => (after, ""),
        };
        let host = match authority.rfind('@') {
            Some(i) => &authority[i + 1..],
            None => authority,
        };
        if !valid_host(host) {
            return false;
        }
        path = p;
    }
    valid_escapes(path)
}
