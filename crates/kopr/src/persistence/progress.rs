//! Per-handler progress, persisted on the object so that retries, delays and successes survive
//! operator restarts: one `kopr.dev/<handler-id>` annotation per handler (or a `status.kopr.progress`
//! entry), cleared once the cause is fully handled; a deletion's records stay, written before
//! kopr's finalizer is released, until the object goes.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::persistence::storage::{ANNOTATION_PREFIX, Storage};

/// What is known about one handler's attempts for the current cause: the record kopr keeps
/// on the object (as `kopr.dev/<handler id>`, or under `status.kopr.progress`) so that
/// retries, delays and successes survive restarts.
///
/// ```
/// use kopr::progress::{annotation_key, read};
/// use kopr::Storage;
/// let body = serde_json::json!({"metadata": {"annotations": {
///     "kopr.dev/greet": r#"{"started":"2026-01-01T00:00:00Z","retries":2,"success":false,"failure":false,"message":"busy"}"#,
/// }}});
/// assert_eq!(annotation_key("greet"), "kopr.dev/greet");
/// let progress = read(Storage::Annotations, &body, "greet");
/// assert_eq!((progress.retries, progress.is_finished()), (2, false));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// When the first attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<Timestamp>,
    /// When the handler finished (successfully or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Timestamp>,
    /// Not to be retried before this time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delayed: Option<Timestamp>,
    /// How many attempts have failed so far.
    #[serde(default)]
    pub retries: u32,
    /// The handler succeeded.
    #[serde(default)]
    pub success: bool,
    /// The handler failed permanently.
    #[serde(default)]
    pub failure: bool,
    /// The last failure's message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// Whether the handler needs no more attempts.
    pub fn is_finished(&self) -> bool {
        self.success || self.failure
    }

    /// Whether an attempt may run at `now`.
    pub fn is_ready(&self, now: Timestamp) -> bool {
        !self.is_finished() && self.delayed.is_none_or(|d| d <= now)
    }
}

/// The annotation key for a handler's progress. A subhandler's id (`parent/child`) becomes
/// `parent.child`, or, when that is longer than an annotation name may be, the parent's id
/// (cut to 54 characters) and a hash of the whole id: either way it starts with the parent's
/// [`subhandler_prefix`].
pub fn annotation_key(handler_id: &str) -> String {
    let Some((parent, _)) = handler_id.split_once('/') else {
        return format!("{ANNOTATION_PREFIX}{handler_id}");
    };
    let name = handler_id.replace('/', ".");
    let valid = name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        return format!("{ANNOTATION_PREFIX}{name}");
    }
    let hash = crate::handling::handlers::fnv1a(handler_id);
    format!("{}{:08x}", subhandler_prefix(parent), hash as u32)
}

/// What the annotation keys of a handler's subhandlers start with.
pub fn subhandler_prefix(handler_id: &str) -> String {
    let cut = handler_id
        .char_indices()
        .nth(54)
        .map_or(handler_id, |(at, _)| &handler_id[..at]);
    format!("{ANNOTATION_PREFIX}{cut}.")
}

/// Reads a handler's progress from the object; absent or unreadable records count as fresh.
pub fn read(storage: Storage, body: &Value, handler_id: &str) -> Progress {
    let raw = match storage {
        Storage::Annotations => body
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(annotation_key(handler_id)))
            .and_then(Value::as_str)
            .and_then(|text| serde_json::from_str(text).ok()),
        Storage::Status => body
            .pointer("/status/kopr/progress")
            .and_then(|p| p.get(handler_id))
            .and_then(|v| serde_json::from_value(v.clone()).ok()),
    };
    raw.unwrap_or_default()
}

/// The merge patch that stores `progress` for a handler.
pub fn write_patch(storage: Storage, handler_id: &str, progress: &Progress) -> Value {
    match storage {
        Storage::Annotations => {
            let text = serde_json::to_string(progress).unwrap_or_default();
            json!({"metadata": {"annotations": {annotation_key(handler_id): text}}})
        }
        Storage::Status => json!({"status": {"kopr": {"progress": {handler_id: progress}}}}),
    }
}

/// The merge patch that clears the progress of the given handlers, where present on `body` or
/// about to be written by `pending` (the cycle's patch so far), with their subhandlers'.
pub fn purge_patch<'a>(
    storage: Storage,
    body: &Value,
    pending: &Value,
    ids: impl Iterator<Item = &'a str>,
) -> Value {
    let mut patch = Value::Null;
    for id in ids {
        // Its subhandlers' records (at any depth) go with it.
        let (pointer, prefix) = match storage {
            Storage::Annotations => ("/metadata/annotations", subhandler_prefix(id)),
            Storage::Status => ("/status/kopr/progress", format!("{id}/")),
        };
        let subs: Vec<Value> = [body, pending]
            .into_iter()
            .filter_map(|v| v.pointer(pointer).and_then(Value::as_object))
            .flat_map(|records| records.keys())
            .filter(|k| k.starts_with(&prefix))
            .map(|k| match storage {
                Storage::Annotations => json!({"metadata": {"annotations": {k: null}}}),
                Storage::Status => json!({"status": {"kopr": {"progress": {k: null}}}}),
            })
            .collect();
        for piece in subs {
            crate::handling::patch::merge_into(&mut patch, piece);
        }
        let present = match storage {
            Storage::Annotations => body
                .pointer("/metadata/annotations")
                .and_then(|a| a.get(annotation_key(id)))
                .is_some(),
            Storage::Status => body
                .pointer("/status/kopr/progress")
                .and_then(|p| p.get(id))
                .is_some(),
        };
        if present {
            let piece = match storage {
                Storage::Annotations => {
                    json!({"metadata": {"annotations": {annotation_key(id): null}}})
                }
                Storage::Status => json!({"status": {"kopr": {"progress": {id: null}}}}),
            };
            crate::handling::patch::merge_into(&mut patch, piece);
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_through_annotations_and_status() {
        let progress = Progress {
            started: Some(Timestamp::UNIX_EPOCH),
            retries: 2,
            message: Some("boom".into()),
            ..Progress::default()
        };
        for storage in [Storage::Annotations, Storage::Status] {
            let mut body = json!({"metadata": {"name": "x"}});
            crate::handling::patch::merge_into(&mut body, write_patch(storage, "h1", &progress));
            assert_eq!(read(storage, &body, "h1"), progress);
            assert_eq!(read(storage, &body, "h2"), Progress::default());
            let purge = purge_patch(storage, &body, &Value::Null, ["h1", "h2"].into_iter());
            let mut cleared = body.clone();
            json_patch::merge(&mut cleared, &purge);
            assert_eq!(read(storage, &cleared, "h1"), Progress::default());
        }
    }

    #[test]
    fn subhandler_records_are_valid_annotations_and_go_with_their_parent() {
        assert_eq!(annotation_key("create"), "kopr.dev/create");
        assert_eq!(annotation_key("create/item-1"), "kopr.dev/create.item-1");
        let long = format!("create/{}", "x".repeat(80));
        let key = annotation_key(&long);
        assert!(
            key.starts_with("kopr.dev/create.") && key.len() <= 9 + 63,
            "{key}"
        );
        let done = Progress {
            success: true,
            ..Progress::default()
        };
        for storage in [Storage::Annotations, Storage::Status] {
            let mut body = json!({"metadata": {"name": "x"}});
            for id in [
                "create",
                "create/a",
                "create/a/b",
                long.as_str(),
                "update/a",
            ] {
                crate::handling::patch::merge_into(&mut body, write_patch(storage, id, &done));
            }
            // A record about to be written goes too.
            let pending = write_patch(storage, "create/d", &done);
            let purge = purge_patch(storage, &body, &pending, ["create"].into_iter());
            let mut cleared = body.clone();
            json_patch::merge(&mut cleared, &pending);
            json_patch::merge(&mut cleared, &purge);
            for id in [
                "create",
                "create/a",
                "create/a/b",
                "create/d",
                long.as_str(),
            ] {
                assert_eq!(read(storage, &cleared, id), Progress::default(), "{id}");
            }
            assert!(
                read(storage, &cleared, "update/a").success,
                "another handler's"
            );
        }
    }

    #[test]
    fn readiness() {
        let now = Timestamp::UNIX_EPOCH;
        let later = now + jiff::SignedDuration::from_secs(5);
        assert!(Progress::default().is_ready(now));
        let delayed = Progress {
            delayed: Some(later),
            ..Progress::default()
        };
        assert!(!delayed.is_ready(now));
        assert!(delayed.is_ready(later));
        let done = Progress {
            success: true,
            ..Progress::default()
        };
        assert!(done.is_finished() && !done.is_ready(now));
    }
}
