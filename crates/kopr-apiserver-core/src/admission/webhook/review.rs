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

/// Checks a response body as kube does. The error text follows
/// `received invalid webhook response: ` in kube's message.
pub(crate) fn answer(body: &[u8], uid: &str, mutating: bool) -> Result<Answer, String> {
    use base64::Engine as _;
    let review: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let api_version = review["apiVersion"].as_str().unwrap_or("");
    let kind = review["kind"].as_str().unwrap_or("");
    let response = match review.get("response") {
        Some(r) if r.is_object() => r,
        _ => return Err("webhook response was absent".into()),
    };
    let got = response["uid"].as_str().unwrap_or("");
    if got != uid {
        return Err(format!("expected response.uid={uid:?}, got {got:?}"));
    }
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    let patch = response["patch"].as_str().filter(|p| !p.is_empty());
    let patch_type = response["patchType"].as_str();
    let patch = match (mutating, patch, patch_type) {
        (false, Some(_), _) => {
            return Err("validating webhook may not return response.patch".into());
        }
        (false, None, Some(_)) => {
            return Err("validating webhook may not return response.patchType".into());
        }
        (true, Some(_), None) => {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        (true, None, Some(_)) => {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        (true, Some(patch), Some("JSONPatch")) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(patch)
                .map_err(|e| format!("received undecodable patch in webhook response: {e}"))?,
        ),
        (true, Some(_), Some(other)) => return Err(format!("unsupported patch type {other:?}")),
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
            answer(&body(json!({"uid": "x", "allowed": true})), "u", false).unwrap_err(),
            "expected response.uid=\"u\", got \"x\""
        );
        assert_eq!(
            answer(br#"{"response": {"uid": "u"}}"#, "u", false).unwrap_err(),
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got , Kind="
        );
        assert_eq!(
            answer(br#"{}"#, "u", false).unwrap_err(),
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
            .unwrap_err(),
            "validating webhook may not return response.patch"
        );
    }
}
