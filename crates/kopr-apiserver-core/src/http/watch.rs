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

#[derive(Serialize)]
struct EventLine<'a> {
    #[serde(rename = "type")]
    event_type: &'a str,
    object: crate::gojson::Ordered<'a>,
}

fn line(event_type: &str, object: &Value) -> bytes::Bytes {
    let object = crate::gojson::Ordered(object);
    let mut out = crate::gojson::to_vec(&EventLine { event_type, object });
    out.push(b'\n');
    bytes::Bytes::from(out)
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
