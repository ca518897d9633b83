//! Building HTTP responses: JSON bodies, Status errors, warnings.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;

use crate::gojson::{self, Ordered};
use crate::registry::ListBody;
use crate::status::ApiError;

/// A body kube-apiserver writes as JSON.
pub trait JsonBody {
    /// The JSON as kube's Go encoder writes it, ending in a newline as
    /// `json.Encoder` ends every value.
    fn encode(&self) -> Vec<u8>;
}

fn with_newline(mut bytes: Vec<u8>) -> Vec<u8> {
    bytes.push(b'\n');
    bytes
}

impl JsonBody for Value {
    fn encode(&self) -> Vec<u8> {
        with_newline(gojson::to_vec(&Ordered(self)))
    }
}

impl JsonBody for std::sync::Arc<Value> {
    fn encode(&self) -> Vec<u8> {
        (**self).encode()
    }
}

impl JsonBody for ListBody {
    fn encode(&self) -> Vec<u8> {
        with_newline(gojson::to_vec(self))
    }
}

/// A JSON response with a status code.
pub fn json<T: JsonBody + ?Sized>(code: StatusCode, body: &T) -> Response {
    bytes_response(code, "application/json", body.encode())
}

/// A response with raw bytes and a content type.
pub fn bytes_response(code: StatusCode, content_type: &'static str, bytes: Vec<u8>) -> Response {
    let mut r = Response::new(Body::from(bytes));
    *r.status_mut() = code;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

/// A Status error response.
pub fn error(e: &ApiError) -> Response {
    let code = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut body = e.to_status();
    if e.code == 405 {
        body["details"] = serde_json::json!({});
    }
    with_warnings(
        bytes_response(code, "application/json", body.encode()),
        &e.warnings,
    )
}

/// Adds `Warning: 299 - "<text>"` headers.
pub fn with_warnings(mut r: Response, warnings: &[String]) -> Response {
    let mut seen = std::collections::HashSet::new();
    for w in warnings {
        if !seen.insert(w) {
            continue;
        }
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}
