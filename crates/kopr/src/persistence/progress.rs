//! Per-handler progress, persisted on the object so that retries, delays and successes survive
//! operator restarts: one `<name>.kopr.dev/<handler-id>` annotation per handler (or a `status.kopr.progress`
//! entry), cleared once the cause is fully handled; a deletion's records stay, written before
//! kopr's finalizer is released, until the object goes.

use jiff::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::persistence::identity::Identity;
use crate::persistence::storage::{Storage, nest, pointer};

/// What is known about one handler's attempts for the current cause: the record kopr keeps
/// on the object (as `<name>.kopr.dev/<handler id>`, or under `status.kopr.<name>.progress`) so that
/// retries, delays and successes survive restarts.
///
/// ```
/// use kopr::progress::{annotation_key, read};
/// use kopr::{Identity, Storage};
/// let body = serde_json::json!({"metadata": {"annotations": {
///     "greeting.kopr.dev/greet": r#"{"started":"2026-01-01T00:00:00Z","retries":2,"success":false,"failure":false,"message":"busy"}"#,
/// }}});
/// let identity = Identity::new("greeting");
/// assert_eq!(annotation_key(&identity, "greet"), "greeting.kopr.dev/greet");
/// let progress = read(&identity, Storage::Annotations, &body, "greet");
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
pub fn annotation_key(identity: &Identity, handler_id: &str) -> String {
    key_in(identity.prefix(), handler_id)
}

/// What the annotation keys of a handler's subhandlers start with.
pub fn subhandler_prefix(identity: &Identity, handler_id: &str) -> String {
    sub_prefix_in(identity.prefix(), handler_id)
}

fn key_in(prefix: &str, handler_id: &str) -> String {
    let Some((parent, _)) = handler_id.split_once('/') else {
        return format!("{prefix}{handler_id}");
    };
    let name = handler_id.replace('/', ".");
    let valid = name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    if valid {
        return format!("{prefix}{name}");
    }
    let hash = crate::handling::handlers::fnv1a(handler_id);
    format!("{}{:08x}", sub_prefix_in(prefix, parent), hash as u32)
}

fn sub_prefix_in(prefix: &str, handler_id: &str) -> String {
    let cut = handler_id
        .char_indices()
        .nth(54)
        .map_or(handler_id, |(at, _)| &handler_id[..at]);
    format!("{prefix}{cut}.")
}

/// Reads a handler's progress from the object (under the operator's name, else under kopr's
/// historical one); absent or unreadable records count as fresh.
pub fn read(identity: &Identity, storage: Storage, body: &Value, handler_id: &str) -> Progress {
    let raw = match storage {
        Storage::Annotations => identity.prefixes().iter().find_map(|prefix| {
            body.pointer("/metadata/annotations")
                .and_then(|a| a.get(key_in(prefix, handler_id)))
                .and_then(Value::as_str)
                .and_then(|text| serde_json::from_str(text).ok())
        }),
        Storage::Status => identity.status_paths().iter().find_map(|path| {
            body.pointer(&pointer(path, "progress"))
                .and_then(|p| p.get(handler_id))
                .and_then(|v| serde_json::from_value(v.clone()).ok())
        }),
    };
    raw.unwrap_or_default()
}

/// The merge patch that stores `progress` for a handler on `body` (dropping a record kept under
/// kopr's historical name).
pub fn write_patch(
    identity: &Identity,
    storage: Storage,
    body: &Value,
    handler_id: &str,
    progress: &Progress,
) -> Value {
    match storage {
        Storage::Annotations => {
            let text = serde_json::to_string(progress).unwrap_or_default();
            let mut write = serde_json::Map::new();
            for prefix in identity.prefixes().iter().skip(1) {
                let legacy = key_in(prefix, handler_id);
                if body
                    .pointer("/metadata/annotations")
                    .and_then(|a| a.get(&legacy))
                    .is_some()
                {
                    write.insert(legacy, Value::Null);
                }
            }
            write.insert(annotation_key(identity, handler_id), Value::String(text));
            json!({"metadata": {"annotations": write}})
        }
        Storage::Status => {
            let paths = identity.status_paths();
            let mut write = Value::Null;
            for legacy in paths.iter().skip(1) {
                let records = body.pointer(&pointer(legacy, "progress"));
                if records.and_then(|r| r.get(handler_id)).is_some() {
                    let gone = nest(legacy, json!({"progress": {handler_id: null}}));
                    crate::handling::patch::merge_into(&mut write, gone);
                }
            }
            let own = nest(&paths[0], json!({"progress": {handler_id: progress}}));
            crate::handling::patch::merge_into(&mut write, own);
            write
        }
    }
}

/// The merge patch that clears the progress of the given handlers, where present on `body` or
/// about to be written by `pending` (the cycle's patch so far), with their subhandlers', under
/// the operator's name and kopr's historical one.
pub fn purge_patch<'a>(
    identity: &Identity,
    storage: Storage,
    body: &Value,
    pending: &Value,
    ids: impl Iterator<Item = &'a str>,
) -> Value {
    let mut patch = Value::Null;
    // Where records are, each with the path its patch is built under and how keys are named.
    let places: Vec<(Vec<String>, Option<String>)> = match storage {
        Storage::Annotations => identity
            .prefixes()
            .iter()
            .map(|prefix| {
                let path = vec!["metadata".into(), "annotations".into()];
                (path, Some(prefix.clone()))
            })
            .collect(),
        Storage::Status => identity
            .status_paths()
            .iter()
            .map(|path| {
                let mut path = path.clone();
                path.push("progress".into());
                (path, None)
            })
            .collect(),
    };
    for id in ids {
        for (path, prefix) in &places {
            // Its subhandlers' records (at any depth) go with it, and the record itself.
            let (sub, own) = match prefix {
                Some(prefix) => (sub_prefix_in(prefix, id), key_in(prefix, id)),
                None => (format!("{id}/"), id.to_owned()),
            };
            let at = pointer(&path[..path.len() - 1], &path[path.len() - 1]);
            let doomed: Vec<Value> = [body, pending]
                .into_iter()
                .filter_map(|v| v.pointer(&at).and_then(Value::as_object))
                .flat_map(|records| records.keys())
                .filter(|k| k.starts_with(sub.as_str()) || **k == own)
                .map(|k| nest(path, json!({ k.as_str(): null })))
                .collect();
            for piece in doomed {
                crate::handling::patch::merge_into(&mut patch, piece);
            }
        }
    }
    patch
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kopr() -> Identity {
        Identity::default()
    }

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
            let write = write_patch(&kopr(), storage, &body, "h1", &progress);
            crate::handling::patch::merge_into(&mut body, write);
            assert_eq!(read(&kopr(), storage, &body, "h1"), progress);
            assert_eq!(read(&kopr(), storage, &body, "h2"), Progress::default());
            let purge = purge_patch(
                &kopr(),
                storage,
                &body,
                &Value::Null,
                ["h1", "h2"].into_iter(),
            );
            let mut cleared = body.clone();
            json_patch::merge(&mut cleared, &purge);
            assert_eq!(read(&kopr(), storage, &cleared, "h1"), Progress::default());
        }
    }

    #[test]
    fn subhandler_records_are_valid_annotations_and_go_with_their_parent() {
        assert_eq!(annotation_key(&kopr(), "create"), "kopr.dev/create");
        assert_eq!(
            annotation_key(&kopr(), "create/item-1"),
            "kopr.dev/create.item-1"
        );
        let long = format!("create/{}", "x".repeat(80));
        let key = annotation_key(&kopr(), &long);
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
                let write = write_patch(&kopr(), storage, &body, id, &done);
                crate::handling::patch::merge_into(&mut body, write);
            }
            // A record about to be written goes too.
            let pending = write_patch(&kopr(), storage, &body, "create/d", &done);
            let purge = purge_patch(&kopr(), storage, &body, &pending, ["create"].into_iter());
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
                assert_eq!(
                    read(&kopr(), storage, &cleared, id),
                    Progress::default(),
                    "{id}"
                );
            }
            assert!(
                read(&kopr(), storage, &cleared, "update/a").success,
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

    #[test]
    fn a_named_operator_reads_and_moves_historical_records() {
        let greeting = Identity::new("greeting");
        let started = Progress {
            retries: 3,
            ..Progress::default()
        };
        let text = serde_json::to_string(&started).unwrap();
        let body = json!({"metadata": {"annotations": {
            "kopr.dev/create": text, "kopr.dev/create.sub": text, "kopr.dev/conversion-stash": "{}"}}});
        assert_eq!(
            read(&greeting, Storage::Annotations, &body, "create"),
            started
        );
        let write = write_patch(&greeting, Storage::Annotations, &body, "create", &started);
        assert_eq!(
            write["metadata"]["annotations"]["kopr.dev/create"],
            Value::Null
        );
        assert!(write["metadata"]["annotations"]["greeting.kopr.dev/create"].is_string());
        let purge = purge_patch(
            &greeting,
            Storage::Annotations,
            &body,
            &write,
            ["create"].into_iter(),
        );
        let mut after = body.clone();
        json_patch::merge(&mut after, &write);
        json_patch::merge(&mut after, &purge);
        assert_eq!(
            after["metadata"]["annotations"],
            json!({"kopr.dev/conversion-stash": "{}"})
        );
    }
}
