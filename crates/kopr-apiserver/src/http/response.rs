//! Building HTTP responses: JSON bodies, Status errors, warnings.

use axum::body::Body;
use axum::response::Response;
use http::{HeaderValue, StatusCode, header};
use serde::Serialize;

use crate::status::ApiError;

/// A JSON response with a status code.
pub fn json<T: Serialize + ?Sized>(code: StatusCode, body: &T) -> Response {
    match serde_json::to_vec(body) {
        Ok(bytes) => bytes_response(code, "application/json", bytes),
        Err(e) => error(&ApiError::internal(e)),
    }
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
    match serde_json::to_vec(&body) {
        Ok(bytes) => with_warnings(bytes_response(code, "application/json", bytes), &e.warnings),
        Err(_) => bytes_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            b"internal error".to_vec(),
        ),
    }
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
