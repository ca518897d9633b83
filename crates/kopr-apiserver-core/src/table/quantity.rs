//! Quantity fields as table cells show them: Go's `Quantity.String()` of
//! the parsed value ([`crate::quantity`]): "1.5Gi" is "1536Mi", "1000" is
//! "1k", "0.5" is "500m", text already canonical stays as written.

use serde_json::Value;

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

/// The text of a quantity string as Go's `String()` prints it, or `None`
/// if it does not parse.
pub fn canonical(s: &str) -> Option<String> {
    crate::quantity::Quantity::parse(s).map(|q| q.string())
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
