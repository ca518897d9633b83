//! Helpers shared by the workload controllers, the scheduler and the
//! simulated kubelet: times, owner references, pod readiness and
//! availability, pod templates, template hashes and Go-style formatting.

use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::object;
use crate::registry::WriteOptions;
use crate::selectors::LabelSelector;

/// The label that ties a ReplicaSet and its pods to one pod template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";

/// The field manager kube-controller-manager's controllers write with.
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// Write options with a field manager.
pub fn writer(manager: &str) -> WriteOptions {
    WriteOptions {
        field_manager: manager.to_string(),
        ..WriteOptions::default()
    }
}

/// The current time.
pub fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// A timestamp as the API writes `metav1.Time` (RFC 3339, whole seconds).
pub fn rfc3339(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Parses an RFC 3339 timestamp.
pub fn parse_time(s: &str) -> Option<jiff::Timestamp> {
    s.parse::<jiff::Timestamp>().ok()
}

/// The time from `now` until `t` (zero if `t` has passed).
pub fn until(t: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    Duration::try_from(t.duration_since(now)).unwrap_or_default()
}

/// `t` plus a duration.
pub fn after(t: jiff::Timestamp, d: Duration) -> jiff::Timestamp {
    let d = jiff::SignedDuration::try_from(d).unwrap_or(jiff::SignedDuration::MAX);
    t.checked_add(d).unwrap_or(jiff::Timestamp::MAX)
}

/// The value at a JSON pointer, as [`Value::pointer`] finds it, but
/// without allocating for pointers free of `~` escapes (the controllers
/// look up fixed paths of every pod on every sync).
pub fn at<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    if pointer.contains('~') {
        return v.pointer(pointer);
    }
    if pointer.is_empty() {
        return Some(v);
    }
    pointer
        .strip_prefix('/')?
        .split('/')
        .try_fold(v, |cur, token| match cur {
            Value::Object(map) => map.get(token),
            Value::Array(list) => {
                let leading_zero = token.len() > 1 && token.starts_with('0');
                if leading_zero || token.starts_with('+') {
                    return None;
                }
                token.parse::<usize>().ok().and_then(|i| list.get(i))
            }
            _ => None,
        })
}

/// An integer at a JSON pointer.
pub fn int_at(v: &Value, pointer: &str) -> Option<i64> {
    at(v, pointer).and_then(Value::as_i64)
}

/// A string at a JSON pointer ("" when absent).
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    at(v, pointer).and_then(Value::as_str).unwrap_or("")
}

/// The condition of a type in `status.conditions`.
pub fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    at(obj, "/status/conditions")
        .and_then(Value::as_array)?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

/// Whether a condition of a type is `True`.
pub fn condition_true(obj: &Value, ty: &str) -> bool {
    condition(obj, ty)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// The controller owner reference of an object.
pub fn controller_ref(obj: &Value) -> Option<&Value> {
    object::owner_references(obj)
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

/// The kind and name of an object's controller.
pub fn controller_of(obj: &Value) -> Option<(&str, &str)> {
    let r = controller_ref(obj)?;
    Some((
        r.get("kind").and_then(Value::as_str)?,
        r.get("name").and_then(Value::as_str)?,
    ))
}

/// The uid of an object's controller.
pub fn controller_uid(obj: &Value) -> Option<&str> {
    controller_ref(obj)?.get("uid").and_then(Value::as_str)
}

/// A controller owner reference to `owner` (`metav1.NewControllerRef`).
pub fn new_controller_ref(owner: &Value, api_version: &str, kind: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": kind,
        "name": object::name(owner),
        "uid": object::uid(owner),
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// The parsed `spec.selector` of a workload (None when invalid).
pub fn selector_of(obj: &Value) -> Option<LabelSelector> {
    let v = at(obj, "/spec/selector").unwrap_or(&Value::Null);
    LabelSelector::from_label_selector_value(v).ok()
}

/// The selector of a ReplicationController: its label map, all of which a
/// pod must carry (an empty map selects everything, as
/// `labels.SelectorFromSet` does). None when it is not a map of strings.
pub fn map_selector_of(rc: &Value) -> Option<LabelSelector> {
    let map = match at(rc, "/spec/selector") {
        None | Some(Value::Null) => serde_json::Map::new(),
        Some(Value::Object(m)) => m.clone(),
        Some(_) => return None,
    };
    if !map.values().all(Value::is_string) {
        return None;
    }
    LabelSelector::from_label_selector_value(&json!({ "matchLabels": map })).ok()
}

/// Whether a selector matches an object's labels.
pub fn selects(selector: &LabelSelector, obj: &Value) -> bool {
    selector.matches(object::labels(obj))
}

/// A pod's phase.
pub fn phase(pod: &Value) -> &str {
    str_at(pod, "/status/phase")
}

/// Whether a pod has finished (Succeeded or Failed).
pub fn is_terminal(pod: &Value) -> bool {
    matches!(phase(pod), "Succeeded" | "Failed")
}

/// Whether a pod counts as active: not finished and not being deleted
/// (`controller.IsPodActive`).
pub fn is_active(pod: &Value) -> bool {
    !is_terminal(pod) && !object::is_deleting(pod)
}

/// Whether a pod's `Ready` condition is true.
pub fn is_ready(pod: &Value) -> bool {
    condition_true(pod, "Ready")
}

/// When a ready pod became ready.
pub fn ready_since(pod: &Value) -> Option<jiff::Timestamp> {
    if !is_ready(pod) {
        return None;
    }
    condition(pod, "Ready")
        .and_then(|c| c.get("lastTransitionTime"))
        .and_then(Value::as_str)
        .and_then(parse_time)
}

/// Whether a pod is available: ready for at least `min_ready` seconds
/// (`podutil.IsPodAvailable`). When it is ready but not yet available, also
/// returns how long until it will be.
pub fn availability(pod: &Value, min_ready: i64, now: jiff::Timestamp) -> (bool, Option<Duration>) {
    if !is_ready(pod) {
        return (false, None);
    }
    if min_ready <= 0 {
        return (true, None);
    }
    let Some(since) = ready_since(pod) else {
        return (false, None);
    };
    let at = after(since, Duration::from_secs(min_ready as u64));
    if at <= now {
        (true, None)
    } else {
        (false, Some(until(at, now)))
    }
}

/// A pod's restart count (sum over its containers).
pub fn restart_count(pod: &Value) -> i64 {
    at(pod, "/status/containerStatuses")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c.get("restartCount").and_then(Value::as_i64))
                .sum()
        })
        .unwrap_or(0)
}

/// Builds a pod from a pod template (`controller.GetPodFromTemplate`).
pub fn pod_from_template(template: &Value, namespace: &str, owner_ref: Value) -> Value {
    let meta = template.get("metadata");
    let mut metadata = Map::new();
    metadata.insert("namespace".into(), json!(namespace));
    for k in ["labels", "annotations", "finalizers"] {
        if let Some(v) = meta.and_then(|m| m.get(k)).filter(|v| !v.is_null()) {
            metadata.insert(k.into(), v.clone());
        }
    }
    metadata.insert("ownerReferences".into(), json!([owner_ref]));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// 32-bit FNV-1a.
pub fn fnv32a(bytes: &[u8]) -> u32 {
    let mut h: u32 = 0x811c9dc5;
    for b in bytes {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x01000193);
    }
    h
}

/// 64-bit FNV-1a.
pub fn fnv64a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// `rand.SafeEncodeString`: maps each character onto an alphabet without
/// vowels or look-alike characters.
pub fn safe_encode(s: &str) -> String {
    const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    s.bytes()
        .map(|b| ALPHANUMS[usize::from(b) % ALPHANUMS.len()] as char)
        .collect()
}

/// The hash of a pod template as `controller.ComputeHash` forms it: FNV-1a
/// over the template (here its canonical JSON) and the collision count,
/// encoded safely.
pub fn template_hash(template: &Value, collision_count: Option<i64>) -> String {
    let mut bytes = template.to_string().into_bytes();
    if let Some(c) = collision_count {
        let mut extra = [0u8; 8];
        extra[..4].copy_from_slice(&(c as u32).to_le_bytes());
        bytes.extend_from_slice(&extra);
    }
    safe_encode(&fnv32a(&bytes).to_string())
}

/// Hex digits derived deterministically from a seed.
pub fn hex_from(seed: &str, len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    let mut i = 0u64;
    while out.len() < len {
        let h = fnv64a(format!("{seed}/{i}").as_bytes());
        out.push_str(&format!("{h:016x}"));
        i += 1;
    }
    out.truncate(len);
    out
}

/// Random hex digits.
pub fn random_hex(len: usize) -> String {
    let mut out = String::with_capacity(len + 16);
    while out.len() < len {
        let r: u64 = rand::random();
        out.push_str(&format!("{r:016x}"));
    }
    out.truncate(len);
    out
}

/// Formats a duration like Go's `time.Duration.String` for whole seconds
/// and milliseconds (`10s`, `1m20s`, `5m0s`, `512ms`).
pub fn go_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms < 1000 {
        return format!("{ms}ms");
    }
    let secs = d.as_secs();
    let frac = d.subsec_millis();
    let (h, m, s) = (secs / 3600, (secs % 3600) / 60, secs % 60);
    let sec_part = if frac == 0 {
        format!("{s}s")
    } else {
        let f = format!("{frac:03}");
        format!("{s}.{}s", f.trim_end_matches('0'))
    };
    if h > 0 {
        format!("{h}h{m}m{sec_part}")
    } else if m > 0 {
        format!("{m}m{sec_part}")
    } else {
        sec_part
    }
}

/// Re-encodes a value through a k8s-openapi type, so that it compares equal
/// to what the API stores (nulls and empty optionals dropped).
pub fn normalized<T: serde::de::DeserializeOwned + serde::Serialize>(v: &Value) -> Value {
    match serde_json::from_value::<T>(v.clone()) {
        Ok(t) => serde_json::to_value(&t).unwrap_or_else(|_| v.clone()),
        Err(_) => v.clone(),
    }
}

/// Sets the counts of a status that are not zero (the API leaves zero
/// counts out).
pub fn set_counts(status: &mut Value, counts: &[(&str, i64)]) {
    for (k, v) in counts {
        if *v != 0 {
            status[*k] = json!(v);
        }
    }
}

/// The sooner of an optional delay and another.
pub fn sooner(current: Option<Duration>, other: Duration) -> Option<Duration> {
    Some(current.map_or(other, |c| c.min(other)))
}

/// The object without one finalizer.
pub fn without_finalizer(obj: &Value, finalizer: &str) -> Value {
    let mut new = obj.clone();
    let kept: Vec<String> = object::finalizers(obj)
        .into_iter()
        .filter(|f| f != finalizer)
        .collect();
    object::set_finalizers(&mut new, &kept);
    new
}

/// Whether `status` differs from the status stored in `obj` (an absent one
/// counting as `{}`), compared as the k8s-openapi type `T` encodes them.
pub fn status_changed<T: serde::de::DeserializeOwned + serde::Serialize>(
    obj: &Value,
    status: &Value,
) -> bool {
    let empty = Value::Object(Map::new());
    let current = obj.get("status").unwrap_or(&empty);
    normalized::<T>(status) != normalized::<T>(current)
}

/// Resolves an `IntOrString` (`intstr.GetScaledValueFromIntOrPercent`).
pub fn int_or_percent(v: Option<&Value>, total: i64, round_up: bool) -> i64 {
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        Some(Value::String(s)) => match s.strip_suffix('%').and_then(|p| p.parse::<i64>().ok()) {
            Some(p) => {
                let scaled = p * total;
                if round_up {
                    (scaled + 99).div_euclid(100)
                } else {
                    scaled.div_euclid(100)
                }
            }
            None => s.parse::<i64>().unwrap_or(0),
        },
        _ => 0,
    }
}

/// Sets or replaces a condition in a list, keeping `lastTransitionTime` when
/// the status does not change.
pub fn put_condition(conditions: &mut Vec<Value>, mut new: Value) {
    let ty = new.get("type").cloned();
    if let Some(old) = conditions.iter().find(|c| c.get("type") == ty.as_ref())
        && old.get("status") == new.get("status")
        && let Some(t) = old.get("lastTransitionTime")
    {
        new["lastTransitionTime"] = t.clone();
    }
    conditions.retain(|c| c.get("type") != ty.as_ref());
    conditions.push(new);
}

/// The conditions of an object's status.
pub fn conditions_of(obj: &Value) -> Vec<Value> {
    at(obj, "/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Ordering key for objects by creation (then name), oldest first.
pub fn creation_key(obj: &Value) -> (String, String) {
    (
        object::meta_str(obj, "creationTimestamp")
            .unwrap_or("")
            .to_string(),
        object::name(obj).to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(80)), "1m20s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_millis(512)), "512ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
    }

    #[test]
    fn pointers_resolve_like_serde_json() {
        let v = json!({"a": {"b": [10, {"c": "x"}], "d/e": 1, "": 2}});
        for p in [
            "",
            "/a",
            "/a/b",
            "/a/b/0",
            "/a/b/1/c",
            "/a/b/01",
            "/a/b/+1",
            "/a/b/2",
            "/a/x",
            "/a/d~1e",
            "/a/",
            "a",
            "/a/b/1/c/z",
        ] {
            assert_eq!(at(&v, p), v.pointer(p), "{p}");
        }
    }

    #[test]
    fn percents() {
        assert_eq!(int_or_percent(Some(&json!("25%")), 3, true), 1);
        assert_eq!(int_or_percent(Some(&json!("25%")), 3, false), 0);
        assert_eq!(int_or_percent(Some(&json!(2)), 3, false), 2);
        assert_eq!(int_or_percent(Some(&json!("50%")), 10, false), 5);
    }

    #[test]
    fn hashes_are_safe_and_stable() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": []}});
        let a = template_hash(&t, None);
        assert_eq!(a, template_hash(&t, None));
        assert_ne!(a, template_hash(&t, Some(1)));
        assert!(a.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
