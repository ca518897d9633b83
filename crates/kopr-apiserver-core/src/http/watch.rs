//! Streaming watch responses: one compact JSON event per line.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;
use serde_json::Value;

use super::negotiate::Representation;
use super::query::Query;
use crate::registry::{WatchItem, WatchStream, bookmark_object};
use crate::resources::ResourceType;
use crate::storage::{Seen, WatchEvent};

#[derive(Serialize)]
struct EventLine<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    object: crate::gojson::Ordered<'a>,
}

/// A watch event's line: `{"type":T,"object":O}` and a newline, `O` as a response writes it.
fn line(event_type: &str, object: &Value) -> bytes::Bytes {
    let object = crate::gojson::Ordered(object);
    let mut out = crate::gojson::to_vec(&EventLine { event_type, object });
    out.push(b'\n');
    bytes::Bytes::from(out)
}

/// The object's part of a [`line`] of `event_type`.
fn object_in_line<'l>(line: &'l [u8], event_type: &str) -> Option<&'l [u8]> {
    line.strip_prefix(b"{\"type\":\"".as_slice())?
        .strip_prefix(event_type.as_bytes())?
        .strip_prefix(b"\",\"object\":".as_slice())?
        .strip_suffix(b"}\n".as_slice())
}

/// The body of a response carrying `object`, the object of the stored change `change`,
/// taken from the change's watch line as its watchers see it unchanged (encoding the line
/// if no watcher has yet, for them to share): the object's encoding and a newline, as
/// [`crate::http::response::json`] writes it. `None` when `object` is not the change's.
pub(super) fn shared_object(change: &WatchEvent, object: &Arc<Value>) -> Option<Vec<u8>> {
    if !Arc::ptr_eq(&change.object, object) {
        return None;
    }
    let line = change.line_seen(Seen::AsIs, line);
    let encoded = object_in_line(&line, change.type_seen(Seen::AsIs))?;
    let mut body = Vec::with_capacity(encoded.len() + 1);
    body.extend_from_slice(encoded);
    body.push(b'\n');
    Some(body)
}

/// Turns a watch stream into a chunked HTTP response.
pub fn respond(
    stream: WatchStream,
    rt: Arc<ResourceType>,
    repr: Representation,
    query: &Query,
) -> Response {
    // What every item needs, shared rather than copied per item.
    let shared = Arc::new((rt, query.clone()));
    let state = (stream, true);
    let body = futures::stream::unfold(state, move |(mut items, mut first)| {
        let shared = shared.clone();
        async move {
            let (rt, query) = &*shared;
            let item = items.recv().await?;
            let chunk = match item {
                WatchItem::Event(t, obj) => {
                    if repr == Representation::Table {
                        let rv = crate::object::meta_str(&obj, "resourceVersion")
                            .unwrap_or("")
                            .to_string();
                        let v = super::table::render(
                            rt,
                            &[obj],
                            query,
                            serde_json::json!({"resourceVersion": rv}),
                            first,
                        )
                        .unwrap_or_else(|e| e.to_status());
                        first = false;
                        line(t, &v)
                    } else if let Some(version) = repr.partial_version() {
                        line(t, &super::negotiate::partial_metadata(&obj, version))
                    } else {
                        line(t, &obj)
                    }
                }
                WatchItem::Stored(ev, seen) if repr.partial_version().is_some() => {
                    let version = repr.partial_version().unwrap_or("v1");
                    let partial =
                        super::negotiate::partial_metadata(&ev.object_seen(seen), version);
                    line(ev.type_seen(seen), &partial)
                }
                WatchItem::Stored(ev, seen) if repr != Representation::Table => {
                    ev.line_seen(seen, line)
                }
                WatchItem::Stored(ev, seen) => {
                    let object = ev.object_seen(seen);
                    let rv = crate::object::meta_str(&object, "resourceVersion")
                        .unwrap_or("")
                        .to_string();
                    let v = super::table::render(
                        rt,
                        std::slice::from_ref(&object),
                        query,
                        serde_json::json!({"resourceVersion": rv}),
                        first,
                    )
                    .unwrap_or_else(|e| e.to_status());
                    first = false;
                    line(ev.type_seen(seen), &v)
                }
                WatchItem::Bookmark(rv, initial_end) => {
                    let bookmark = bookmark_object(rt, rv, initial_end);
                    match repr.partial_version() {
                        Some(version) => line(
                            "BOOKMARK",
                            &super::negotiate::partial_metadata(&bookmark, version),
                        ),
                        None => line("BOOKMARK", &bookmark),
                    }
                }
                WatchItem::Error(status) => line("ERROR", &status),
            };
            Some((Ok::<_, std::convert::Infallible>(chunk), (items, first)))
        }
    });
    let mut r = Response::new(Body::from_stream(body));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::EventType;
    use serde_json::json;

    fn change(event_type: EventType, object: Value) -> WatchEvent {
        WatchEvent::new(7, "/k".into(), event_type, Arc::new(object), None)
    }

    #[test]
    fn a_response_shares_the_watch_lines_encoding_of_its_object() {
        let objects = [
            // A built-in kind, written in Go field order with Go's escapes.
            json!({"kind": "ConfigMap", "apiVersion": "v1", "data": {"b": "<&>", "a": "\u{2028}"},
                   "metadata": {"name": "c", "resourceVersion": "7", "labels": {"z": "1", "a": "2"}}}),
            // A custom resource, written with sorted keys.
            json!({"apiVersion": "x.io/v1", "kind": "Thing", "spec": {"b": [1, 2.5, null], "a": true},
                   "metadata": {"name": "t", "resourceVersion": "7"}}),
        ];
        for (event_type, object) in [EventType::Added, EventType::Modified, EventType::Deleted]
            .into_iter()
            .zip(objects.iter().cycle())
        {
            let direct = crate::http::response::JsonBody::encode(object);
            // Either order: the response first (it encodes the line), or a watcher first.
            let first = change(event_type, object.clone());
            let shared = shared_object(&first, &first.object.clone());
            assert_eq!(shared.as_deref(), Some(direct.as_slice()));
            let watched = change(event_type, object.clone());
            let line = watched.line_seen(Seen::AsIs, line);
            let shared = shared_object(&watched, &watched.object.clone());
            assert_eq!(shared.as_deref(), Some(direct.as_slice()));
            assert!(line.ends_with(b"}\n"));
            // Another object, even an equal one, is not the change's.
            assert_eq!(shared_object(&watched, &Arc::new(object.clone())), None);
        }
    }
}
