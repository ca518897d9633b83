//! Decoding request bodies: JSON or YAML objects, patch documents, and the
//! content types each verb accepts.

use serde_json::Value;

use crate::patch::{CUSTOM_PATCH_TYPES, PatchDocument};
use crate::status::ApiError;

/// Largest request body accepted (kube-apiserver's 3 MiB limit).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// The media type of a request body, without parameters.
pub fn media_type(content_type: Option<&str>) -> String {
    content_type
        .unwrap_or("")
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase()
}

/// Decodes an object body (create, update, delete options).
pub fn decode_object(content_type: Option<&str>, body: &[u8]) -> Result<Value, ApiError> {
    let mt = media_type(content_type);
    let value = match mt.as_str() {
        "" | "application/json" | "*/*" => decode_json(body)?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => decode_yaml(body)?,
        "application/vnd.kubernetes.protobuf" => {
            crate::protobuf::decode(body).map_err(|e| ApiError::bad_request(e.to_string()))?
        }
        _ => {
            return Err(unsupported(
                &mt,
                "application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ));
        }
    };
    if !value.is_object() {
        return Err(ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: json: cannot unmarshal {} into Go value of type struct {{ APIVersion string \"json:\\\"apiVersion,omitempty\\\"\"; Kind string \"json:\\\"kind,omitempty\\\"\" }}",
            json_type_name(&value)
        )));
    }
    Ok(value)
}

fn unsupported(mt: &str, accepted: &str) -> ApiError {
    let mut e = ApiError::unsupported_media_type(accepted);
    if mt.is_empty() {
        e.message = format!(
            "the body of the request was in an unknown format - accepted media types include: {accepted}"
        );
    }
    e
}

/// The Go name of a JSON value's type, as Go's decoder reports it.
pub fn json_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes JSON, answering a malformed body as kube-apiserver does.
pub fn decode_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "couldn't get version/kind; json parse error: {}",
            go_style_json_error(&e)
        ))
    })
}

fn go_style_json_error(e: &serde_json::Error) -> String {
    match e.classify() {
        serde_json::error::Category::Eof => "unexpected end of JSON input".to_string(),
        _ => format!(
            "invalid character at line {} column {}: {}",
            e.line(),
            e.column(),
            e
        ),
    }
}

/// Decodes YAML (a single document) into JSON.
pub fn decode_yaml(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| {
        ApiError::bad_request("error converting YAML to JSON: yaml: invalid leading UTF-8 octet")
    })?;
    serde_saphyr::from_str::<Value>(text)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: yaml: {e}")))
}

/// The kinds of PATCH bodies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchKind {
    /// RFC 6902 JSON patch.
    Json,
    /// RFC 7386 merge patch.
    Merge,
    /// Strategic merge patch.
    Strategic,
    /// Server-side apply.
    Apply,
}

impl PatchKind {
    /// Picks the patch kind from the Content-Type header.
    pub fn from_content_type(content_type: Option<&str>) -> Result<PatchKind, ApiError> {
        match media_type(content_type).as_str() {
            "application/json-patch+json" => Ok(PatchKind::Json),
            "application/merge-patch+json" => Ok(PatchKind::Merge),
            "application/strategic-merge-patch+json" => Ok(PatchKind::Strategic),
            "application/apply-patch+yaml" => Ok(PatchKind::Apply),
            _ => Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES)),
        }
    }
}

/// kube-apiserver's limit on the operations of one JSON patch.
pub const MAX_JSON_PATCH_OPERATIONS: usize = 10_000;

/// Decodes a PATCH body of `kind`. Strategic merge patch is refused with a
/// 415 for kinds that do not take it (custom resources), as kube-apiserver
/// does.
pub fn decode_patch(
    kind: PatchKind,
    body: &[u8],
    strategic: bool,
) -> Result<PatchDocument, ApiError> {
    match kind {
        PatchKind::Json => {
            let v = decode_json(body)?;
            let ops: json_patch::Patch = serde_json::from_value(v)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
            if ops.0.len() > MAX_JSON_PATCH_OPERATIONS {
                return Err(ApiError::entity_too_large(format!(
                    "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {}",
                    ops.0.len()
                )));
            }
            Ok(PatchDocument::Json(ops))
        }
        PatchKind::Merge => Ok(PatchDocument::Merge(decode_json(body)?)),
        PatchKind::Strategic if !strategic => {
            Err(ApiError::unsupported_media_type(CUSTOM_PATCH_TYPES))
        }
        PatchKind::Strategic => {
            let v = decode_json(body)?;
            if !v.is_object() {
                return Err(ApiError::bad_request(
                    "json: cannot unmarshal array into Go value of type map[string]interface {}",
                ));
            }
            Ok(PatchDocument::Strategic(v))
        }
        PatchKind::Apply => {
            let v = decode_yaml(body)?;
            if !v.is_object() {
                return Err(ApiError::bad_request(
                    "error decoding YAML: the applied configuration must be an object",
                ));
            }
            Ok(PatchDocument::Apply(v))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_patches_have_kube_s_operation_limit() {
        let op = r#"{"op":"add","path":"/metadata/labels/a","value":"b"}"#;
        let ops = |n: usize| format!("[{}]", vec![op; n].join(","));
        assert!(decode_patch(PatchKind::Json, ops(10_000).as_bytes(), true).is_ok());
        let Err(e) = decode_patch(PatchKind::Json, ops(10_001).as_bytes(), true) else {
            panic!("over the limit");
        };
        assert_eq!(e.code, 413);
        assert_eq!(e.reason, "RequestEntityTooLarge");
        assert_eq!(
            e.message,
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
    }

    #[test]
    fn decodes_json_and_yaml() {
        assert_eq!(decode_object(None, br#"{"a":1}"#).unwrap()["a"], 1);
        assert_eq!(
            decode_object(Some("application/yaml"), b"a: 1\n").unwrap()["a"],
            1
        );
    }

    #[test]
    fn malformed_bodies_are_bad_requests() {
        assert_eq!(decode_object(None, b"{").unwrap_err().code, 400);
        assert_eq!(decode_object(None, b"[1]").unwrap_err().code, 400);
        assert_eq!(
            decode_object(Some("application/yaml"), b"a: [")
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            decode_object(Some("text/plain"), b"{}").unwrap_err().code,
            415
        );
    }

    #[test]
    fn patch_kinds() {
        assert_eq!(
            PatchKind::from_content_type(Some("application/merge-patch+json; charset=utf-8"))
                .unwrap(),
            PatchKind::Merge
        );
        assert_eq!(
            PatchKind::from_content_type(Some("text/plain"))
                .unwrap_err()
                .code,
            415
        );
    }
}
