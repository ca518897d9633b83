//! The AdmissionReview exchanged with a webhook (admission.k8s.io/v1):
//! the request as kube builds it, and the checks kube makes of the
//! response before it is used.

use serde_json::{Map, Value, json};

use crate::admission::matching::Attributes;

/// The whole AdmissionReview sent.
pub(crate) fn review(mut request: Map<String, Value>, attrs: &Attributes<'_>) -> Value {
    request.insert(
        "object".into(),
        attrs.object.cloned().unwrap_or(Value::Null),
    );
    request.insert(
        "oldObject".into(),
        attrs.old.cloned().unwrap_or(Value::Null),
    );
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request})
}

/// A webhook's checked answer.
#[derive(Debug, Default)]
pub(crate) struct Answer {
    pub allowed: bool,
    /// `status`, used on a denial.
    pub status: Option<Value>,
    /// The decoded JSON patch (mutating webhooks).
    pub patch: Option<Vec<u8>>,
    pub warnings: Vec<String>,
    /// `auditAnnotations`, recorded as `<webhook name>/<key>`.
    pub audit_annotations: Vec<(String, String)>,
}

/// Why a webhook's response is not usable; the messages are kube's (they follow
/// `received invalid webhook response: `).
#[derive(Debug, thiserror::Error)]
pub(crate) enum AnswerError {
    /// The body is not JSON.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// No `response` object.
    #[error("webhook response was absent")]
    Absent,
    /// The answer to another request.
    #[error("expected response.uid={expected:?}, got {got:?}")]
    Uid { expected: String, got: String },
    /// Another kind or version than `admission.k8s.io/v1` AdmissionReview.
    #[error(
        "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
    )]
    Kind { api_version: String, kind: String },
    /// A validating webhook that patches (`patch` or `patchType`).
    #[error("validating webhook may not return response.{0}")]
    ValidatingPatch(&'static str),
    /// A patch without its type.
    #[error("webhook returned response.patch but not response.patchType")]
    PatchWithoutType,
    /// A patch type without a patch.
    #[error("webhook returned response.patchType but not response.patch")]
    TypeWithoutPatch,
    /// A patch that is not base64.
    #[error("received undecodable patch in webhook response: {0}")]
    Undecodable(#[from] base64::DecodeError),
    /// A patch type other than `JSONPatch`.
    #[error("unsupported patch type {0:?}")]
    PatchType(String),
}

/// Checks a response body as kube does.
pub(crate) fn answer(body: &[u8], uid: &str, mutating: bool) -> Result<Answer, AnswerError> {
    use base64::Engine as _;
    let review: Value = serde_json::from_slice(body)?;
    let api_version = review["apiVersion"].as_str().unwrap_or("");
    let kind = review["kind"].as_str().unwrap_or("");
    let response = match review.get("response") {
        Some(r) if r.is_object() => r,
        _ => return Err(AnswerError::Absent),
    };
    let got = response["uid"].as_str().unwrap_or("");
    if got != uid {
        return Err(AnswerError::Uid {
            expected: uid.to_string(),
            got: got.to_string(),
        });
    }
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(AnswerError::Kind {
            api_version: api_version.to_string(),
            kind: kind.to_string(),
        });
    }
    let patch = response["patch"].as_str().filter(|p| !p.is_empty());
    let patch_type = response["patchType"].as_str();
    let patch = match (mutating, patch, patch_type) {
        (false, Some(_), _) => return Err(AnswerError::ValidatingPatch("patch")),
        (false, None, Some(_)) => return Err(AnswerError::ValidatingPatch("patchType")),
        (true, Some(_), None) => return Err(AnswerError::PatchWithoutType),
        (true, None, Some(_)) => return Err(AnswerError::TypeWithoutPatch),
        (true, Some(patch), Some("JSONPatch")) => {
            Some(base64::engine::general_purpose::STANDARD.decode(patch)?)
        }
        (true, Some(_), Some(other)) => return Err(AnswerError::PatchType(other.to_string())),
        _ => None,
    };
    Ok(Answer {
        allowed: response["allowed"].as_bool().unwrap_or(false),
        status: response.get("status").filter(|s| s.is_object()).cloned(),
        patch,
        warnings: crate::object::string_list(&response["warnings"]),
        audit_annotations: response["auditAnnotations"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(response: Value) -> Vec<u8> {
        json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
            .to_string()
            .into_bytes()
    }

    #[test]
    fn responses_are_checked_as_kube_checks_them() {
        let ok = answer(&body(json!({"uid": "u", "allowed": true})), "u", false).unwrap();
        assert!(ok.allowed);
        assert_eq!(
            answer(&body(json!({"uid": "x", "allowed": true})), "u", false)
                .unwrap_err()
                .to_string(),
            "expected response.uid=\"u\", got \"x\""
        );
        assert_eq!(
            answer(br#"{"response": {"uid": "u"}}"#, "u", false)
                .unwrap_err()
                .to_string(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got , Kind="
        );
        assert_eq!(
            answer(br#"{}"#, "u", false).unwrap_err().to_string(),
            "webhook response was absent"
        );
        let patched = answer(
            &body(json!({"uid": "u", "allowed": true, "patchType": "JSONPatch", "patch": "W10="})),
            "u",
            true,
        )
        .unwrap();
        assert_eq!(patched.patch.as_deref(), Some(&b"[]"[..]));
        assert_eq!(
            answer(
                &body(json!({"uid": "u", "allowed": true, "patch": "W10="})),
                "u",
                false
            )
            .unwrap_err()
            .to_string(),
            "validating webhook may not return response.patch"
        );
    }
}
