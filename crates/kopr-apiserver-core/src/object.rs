//! Accessors and small edits on objects held as JSON values.

use serde_json::{Map, Value};

/// The `metadata` map of an object, if present.
pub fn meta(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata").and_then(Value::as_object)
}

/// The `metadata` map of an object, created if missing (only on objects).
pub fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let entry = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !entry.is_object() {
        *entry = Value::Object(Map::new());
    }
    entry.as_object_mut()
}

/// A string field of `metadata`, e.g. `name`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    meta(obj)?.get(field)?.as_str()
}

/// `metadata.name`, or "".
pub fn name(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// `metadata.namespace`, or "".
pub fn namespace(obj: &Value) -> &str {
    meta_str(obj, "namespace").unwrap_or("")
}

/// `metadata.uid`, or "".
pub fn uid(obj: &Value) -> &str {
    meta_str(obj, "uid").unwrap_or("")
}

/// `metadata.labels`.
pub fn labels(obj: &Value) -> Option<&Map<String, Value>> {
    meta(obj)?.get("labels")?.as_object()
}

/// `metadata.finalizers` as strings.
pub fn finalizers(obj: &Value) -> Vec<String> {
    meta(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Replaces `metadata.finalizers` (removing the field when empty).
pub fn set_finalizers(obj: &mut Value, list: &[String]) {
    if let Some(m) = meta_mut(obj) {
        if list.is_empty() {
            m.remove("finalizers");
        } else {
            m.insert("finalizers".into(), Value::from(list.to_vec()));
        }
    }
}

/// Whether `metadata.deletionTimestamp` is set.
pub fn is_deleting(obj: &Value) -> bool {
    meta(obj)
        .and_then(|m| m.get("deletionTimestamp"))
        .is_some_and(|v| !v.is_null())
}

/// `metadata.ownerReferences`.
pub fn owner_references(obj: &Value) -> &[Value] {
    meta(obj)
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// `metadata.generation`, or 0.
pub fn generation(obj: &Value) -> i64 {
    meta(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

/// The current time as kube-apiserver writes timestamps (RFC 3339, seconds).
pub fn now_rfc3339() -> String {
    thread_local! {
        /// The last second this thread wrote, and its text: every write in a second shares it.
        static LAST: std::cell::RefCell<(i64, String)> =
            const { std::cell::RefCell::new((i64::MIN, String::new())) };
    }
    let now = jiff::Timestamp::now();
    let second = now.as_second();
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != second {
            *last = (second, now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
        }
        last.1.clone()
    })
}

/// The current time with microseconds (`MicroTime`), as used by `managedFields`
/// times are not, but Lease renew times and Event `eventTime` are.
pub fn now_micro_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    now.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

/// A random version-4 UUID, as used for `metadata.uid`.
pub fn new_uid() -> String {
    let mut b: [u8; 16] = rand::random();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    format!(
        "{:02x}{:02x}{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}-{:02x}{:02x}{:02x}{:02x}{:02x}{:02x}",
        b[0],
        b[1],
        b[2],
        b[3],
        b[4],
        b[5],
        b[6],
        b[7],
        b[8],
        b[9],
        b[10],
        b[11],
        b[12],
        b[13],
        b[14],
        b[15]
    )
}

/// Everything of an object except `metadata` and `status`, for deciding
/// whether `generation` must be bumped.
pub fn spec_part(obj: &Value) -> Map<String, Value> {
    let mut out = obj.as_object().cloned().unwrap_or_default();
    for k in ["metadata", "status", "kind", "apiVersion"] {
        out.remove(k);
    }
    out
}

/// The strings of a JSON list, skipping other items (none when it is not a
/// list).
pub fn string_list(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn now_is_written_as_the_current_second() {
        for _ in 0..3 {
            let before = jiff::Timestamp::now().as_second();
            let text = super::now_rfc3339();
            let after = jiff::Timestamp::now().as_second();
            let at: jiff::Timestamp = text.parse().unwrap_or_default();
            assert!(
                (before..=after).contains(&at.as_second()),
                "{text} outside {before}..={after}"
            );
            assert!(text.len() == 20 && text.ends_with('Z'), "{text}");
        }
    }
}
