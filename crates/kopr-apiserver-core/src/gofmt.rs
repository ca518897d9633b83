//! Formatting values the way Go prints them, where kube-apiserver's
//! messages embed Go-formatted values.

/// Quotes a string like Go's `strconv.Quote` / `%q`.
pub fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                out.push_str(&format!("\\x{:02x}", c as u32));
            }
            c if c.is_control() || (c.is_whitespace() && c != ' ') || c == '\u{feff}' => {
                if (c as u32) < 0x10000 {
                    out.push_str(&format!("\\u{:04x}", c as u32));
                } else {
                    out.push_str(&format!("\\U{:08x}", c as u32));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Formats a float like Go's `%v` (shortest repr, exponent outside 1e-4..1e21).
pub fn float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    let exp = f.abs().log10().floor() as i32;
    if (-4..21).contains(&exp) {
        let s = format!("{f}");
        return s;
    }
    // Rust's {:e} gives e.g. "1e21" / "1.5e-5"; Go wants "1e+21" / "1.5e-05".
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((mant, ex)) => {
            let (sign, digits) = match ex.strip_prefix('-') {
                Some(d) => ('-', d),
                None => ('+', ex),
            };
            let digits = if digits.len() < 2 {
                format!("0{digits}")
            } else {
                digits.to_string()
            };
            format!("{mant}e{sign}{digits}")
        }
        None => s,
    }
}
