//! CRD conversion webhooks: a CRD whose `spec.conversion.strategy` is
//! `Webhook` has its objects converted between versions by a
//! `ConversionReview` posted to the webhook ([`Webhook::convert`]), checked
//! and answered as kube-apiserver 1.32 does (apiextensions-apiserver's
//! `webhook_converter.go`): objects already at the desired version are not
//! sent, the answer's uid, count, versions, kinds and identities are checked,
//! and only labels and annotations are taken from the converted metadata.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::callout::{CallError, Caller, ClientConfig};
use crate::validation::{Checker, metadata};

/// kube-apiserver's bound on a conversion webhook call (its webhook client's
/// default; the CRD API has no field for it).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// How a CRD's objects are converted by its webhook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Webhook {
    /// `spec.conversion.webhook.clientConfig`, called within [`TIMEOUT`].
    pub client: ClientConfig,
    /// `spec.conversion.webhook.conversionReviewVersions`, in order.
    pub review_versions: Vec<String>,
}

/// A group, version and kind, printed as Go's `schema.GroupVersionKind`
/// (`group/version, Kind=Kind`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gvk {
    /// `apiVersion` (`group/version`).
    pub api_version: String,
    /// `kind`.
    pub kind: String,
}

impl Gvk {
    fn of(obj: &Value) -> Gvk {
        Gvk {
            api_version: text(obj, "apiVersion").to_string(),
            kind: text(obj, "kind").to_string(),
        }
    }
}

impl fmt::Display for Gvk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Go prints the group version with a slash even for an empty group.
        let gv = if self.api_version.contains('/') {
            self.api_version.clone()
        } else {
            format!("/{}", self.api_version)
        };
        write!(f, "{gv}, Kind={}", self.kind)
    }
}

/// Why a conversion failed; the messages are kube-apiserver's.
#[derive(Debug, thiserror::Error)]
pub enum ConversionError {
    /// `conversionReviewVersions` names neither `v1` nor `v1beta1`.
    #[error("no supported conversion review versions")]
    NoReviewVersion,
    /// The webhook could not be called, or its answer is not a review.
    #[error("conversion webhook for {gvk} failed: {source}")]
    Call {
        /// What was converted.
        gvk: Gvk,
        /// Why.
        source: Box<CallError>,
    },
    /// The answer is not a usable review, or reports a failure.
    #[error("conversion webhook for {gvk} failed: {reason}")]
    Review {
        /// What was converted.
        gvk: Gvk,
        /// Why (the webhook's own message for a failure).
        reason: String,
    },
    /// The answer has another number of objects than were sent.
    #[error("conversion webhook for {gvk} returned {got} objects, expected {expected}")]
    Count {
        /// What was converted.
        gvk: Gvk,
        /// Objects returned.
        got: usize,
        /// Objects sent.
        expected: usize,
    },
    /// A converted object breaks a rule (version, kind, identity).
    #[error("conversion webhook for {gvk} returned invalid {at}: {reason}")]
    Invalid {
        /// What was converted.
        gvk: Gvk,
        /// `object`, `object at index 0` or `converted object at index N`.
        at: String,
        /// Why.
        reason: String,
    },
    /// A converted object's labels or annotations are unusable.
    #[error("conversion webhook for {gvk} returned invalid metadata{at}: {reason}")]
    Metadata {
        /// What was converted.
        gvk: Gvk,
        /// Empty, or ` in object at index N`.
        at: String,
        /// Why.
        reason: String,
    },
}

fn text<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get(field).and_then(Value::as_str).unwrap_or("")
}

fn meta<'a>(v: &'a Value, field: &str) -> &'a str {
    v.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

impl Webhook {
    /// The webhook of a CRD whose conversion strategy is `Webhook`.
    pub fn of_crd(crd: &Value) -> Option<Webhook> {
        let conversion = crd.pointer("/spec/conversion")?;
        if text(conversion, "strategy") != "Webhook" {
            return None;
        }
        // v1beta1 CRDs keep the client config and review versions one level up.
        let hook = conversion.get("webhook").unwrap_or(conversion);
        let config = hook
            .get("clientConfig")
            .or_else(|| conversion.get("webhookClientConfig"))?;
        let review_versions = hook
            .get("conversionReviewVersions")
            .or_else(|| conversion.get("conversionReviewVersions"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Some(Webhook {
            client: ClientConfig::parse(config, TIMEOUT)?,
            review_versions,
        })
    }

    /// Converts `objects` to `desired` (`group/version`) in one review; those
    /// already at `desired` are not sent. `list_kind` names the list the
    /// objects are served in when several may be converted (kube words a
    /// list's errors apart), none for a single object.
    ///
    /// # Errors
    /// [`ConversionError`] when the webhook cannot be called or its answer
    /// does not hold; nothing is converted then.
    pub async fn convert(
        &self,
        caller: &Caller,
        desired: &str,
        objects: &[Arc<Value>],
        list_kind: Option<&str>,
    ) -> Result<Vec<Arc<Value>>, ConversionError> {
        let sent: Vec<&Arc<Value>> = objects
            .iter()
            .filter(|o| text(o, "apiVersion") != desired)
            .collect();
        let review = self.review_version()?;
        let Some(first) = sent.first() else {
            return Ok(objects.to_vec());
        };
        let gvk = match list_kind {
            Some(kind) => Gvk {
                api_version: desired.to_string(),
                kind: kind.to_string(),
            },
            None => Gvk::of(first),
        };
        let uid = crate::object::new_uid();
        let body = json!({
            "kind": "ConversionReview",
            "apiVersion": format!("apiextensions.k8s.io/{review}"),
            "request": {"uid": uid, "desiredAPIVersion": desired, "objects": sent},
            "response": {"uid": "", "convertedObjects": null, "result": {"metadata": {}}},
        });
        let bytes = serde_json::to_vec(&body).unwrap_or_default();
        let answer =
            caller
                .post(&self.client, bytes)
                .await
                .map_err(|source| ConversionError::Call {
                    gvk: gvk.clone(),
                    source: Box::new(source),
                })?;
        let converted =
            converted_objects(&answer, review, &uid).map_err(|reason| ConversionError::Review {
                gvk: gvk.clone(),
                reason,
            })?;
        if converted.len() != sent.len() {
            return Err(ConversionError::Count {
                gvk,
                got: converted.len(),
                expected: sent.len(),
            });
        }
        let mut converted = converted.into_iter();
        let mut index = 0;
        let mut out = Vec::with_capacity(objects.len());
        for original in objects {
            if text(original, "apiVersion") == desired {
                out.push(original.clone());
                continue;
            }
            let Some(new) = converted.next() else { break };
            let checked = match list_kind {
                Some(_) => {
                    index += 1;
                    accept_in_list(original, new, desired, index, &gvk)?
                }
                None => accept_single(original, new, desired, &gvk)?,
            };
            out.push(Arc::new(checked));
        }
        Ok(out)
    }

    fn review_version(&self) -> Result<&'static str, ConversionError> {
        self.review_versions
            .iter()
            .find_map(|v| match v.as_str() {
                "v1beta1" => Some("v1beta1"),
                "v1" => Some("v1"),
                _ => None,
            })
            .ok_or(ConversionError::NoReviewVersion)
    }
}

/// The converted objects of a review's answer, or why there are none.
fn converted_objects(answer: &[u8], review: &str, uid: &str) -> Result<Vec<Value>, String> {
    let answer: Value = serde_json::from_slice(answer).map_err(|e| e.to_string())?;
    if review == "v1" {
        let expected = "apiextensions.k8s.io/v1, Kind=ConversionReview";
        let api_version = text(&answer, "apiVersion");
        let kind = text(&answer, "kind");
        // A missing apiVersion or kind is filled from the expected type, as Go decodes.
        let got = Gvk {
            api_version: if api_version.is_empty() {
                "apiextensions.k8s.io/v1".into()
            } else {
                api_version.into()
            },
            kind: if kind.is_empty() {
                "ConversionReview".into()
            } else {
                kind.into()
            },
        };
        if got.to_string() != expected {
            return Err(format!(
                "expected webhook response of {expected}, got {got}"
            ));
        }
    }
    let response = match answer.get("response") {
        Some(r) if !r.is_null() => r,
        _ => return Err("no response provided".into()),
    };
    if review == "v1" && text(response, "uid") != uid {
        return Err(format!(
            "expected response.uid={}, got {}",
            crate::gofmt::quote(uid),
            crate::gofmt::quote(text(response, "uid"))
        ));
    }
    let result = response.get("result").unwrap_or(&Value::Null);
    let status = text(result, "status");
    if status != "Success" {
        return Err(match text(result, "message") {
            "" => format!("response.result.status was '{status}', not 'Success'"),
            message => message.to_string(),
        });
    }
    Ok(response
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// Checks one converted object of a list's review (kube counts its index
/// from one after the first object).
fn accept_in_list(
    original: &Value,
    mut converted: Value,
    desired: &str,
    index: usize,
    gvk: &Gvk,
) -> Result<Value, ConversionError> {
    let invalid = |reason: String| ConversionError::Invalid {
        gvk: gvk.clone(),
        at: format!("converted object at index {index}"),
        reason,
    };
    if !converted.is_object() {
        return Err(invalid("invalid type, expected=Unstructured".into()));
    }
    if text(&converted, "apiVersion") != desired {
        return Err(invalid(format!(
            "invalid groupVersion (expected {desired}, received {})",
            text(&converted, "apiVersion")
        )));
    }
    if text(&converted, "kind") != text(original, "kind") {
        return Err(invalid(format!(
            "invalid kind (expected {}, received {})",
            text(original, "kind"),
            text(&converted, "kind")
        )));
    }
    same_identity(original, &converted).map_err(invalid)?;
    restore_metadata(original, &mut converted).map_err(|reason| ConversionError::Metadata {
        gvk: gvk.clone(),
        at: format!(" in object at index {index}"),
        reason,
    })?;
    Ok(converted)
}

/// Checks the converted object of a single object's review.
fn accept_single(
    original: &Value,
    mut converted: Value,
    desired: &str,
    gvk: &Gvk,
) -> Result<Value, ConversionError> {
    let invalid = |at: &str, reason: String| ConversionError::Invalid {
        gvk: gvk.clone(),
        at: at.to_string(),
        reason,
    };
    if !converted.is_object() {
        return Err(ConversionError::Review {
            gvk: gvk.clone(),
            reason: "unexpected type at index 0".into(),
        });
    }
    if text(&converted, "apiVersion") != desired {
        return Err(invalid(
            "object at index 0",
            format!(
                "invalid groupVersion (expected {desired}, received {})",
                text(&converted, "apiVersion")
            ),
        ));
    }
    if text(&converted, "kind") != text(original, "kind") {
        return Err(invalid(
            "object at index 0",
            format!(
                "invalid kind (expected {}, received {})",
                text(original, "kind"),
                text(&converted, "kind")
            ),
        ));
    }
    same_identity(original, &converted).map_err(|r| invalid("object", r))?;
    restore_metadata(original, &mut converted).map_err(|reason| ConversionError::Metadata {
        gvk: gvk.clone(),
        at: String::new(),
        reason,
    })?;
    Ok(converted)
}

/// A converted object keeps the kind, name, namespace and uid.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    let (a, b) = (text(original, "kind"), text(converted, "kind"));
    if a != b {
        return Err(format!("must have the same kind: {a} != {b}"));
    }
    for (field, what) in [("name", "name"), ("namespace", "namespace"), ("uid", "UID")] {
        let (a, b) = (meta(original, field), meta(converted, field));
        if a != b {
            return Err(format!("must have the same {what}: {a} != {b}"));
        }
    }
    Ok(())
}

/// Gives the converted object the original's metadata, but for the labels and
/// annotations the webhook returned (validated when they changed).
fn restore_metadata(original: &Value, converted: &mut Value) -> Result<(), String> {
    let answered = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ));
        }
    };
    let mut restored = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let Some(new) = answered.get(field).filter(|v| !v.is_null()) else {
            restored.remove(field);
            continue;
        };
        let Value::Object(new) = new else {
            return Err(format!(
                "invalid metadata.{field} of type {} in converted object",
                go_type(new)
            ));
        };
        let old = restored.get(field).and_then(Value::as_object);
        let mut pairs = Vec::with_capacity(new.len());
        for (k, v) in new {
            let Some(v) = v.as_str() else {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            };
            pairs.push((k.as_str(), v));
        }
        let changed = old.is_none_or(|o| o != new);
        if changed {
            let mut ck = Checker::default();
            if field == "labels" {
                metadata::validate_labels(&mut ck, &pairs, "metadata.labels");
            } else {
                metadata::validate_annotations(&mut ck, &pairs, "metadata.annotation");
            }
            let messages: Vec<String> = ck.errs.iter().map(ToString::to_string).collect();
            match messages.len() {
                0 => {}
                1 => return Err(messages[0].clone()),
                _ => return Err(format!("[{}]", messages.join(", "))),
            }
        }
        restored.insert(field.to_string(), Value::Object(new.clone()));
    }
    if let Some(map) = converted.as_object_mut() {
        map.insert("metadata".into(), Value::Object(restored));
    }
    Ok(())
}

/// The Go type a JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn book(version: &str, name: &str) -> Value {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Book",
               "metadata": {"name": name, "namespace": "ns", "uid": "u1",
                            "labels": {"a": "1"}, "resourceVersion": "7"},
               "spec": {"x": 1}})
    }

    #[test]
    fn a_review_answer_is_checked_as_kube_does() {
        let ok = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": "id", "result": {"status": "Success"}, "convertedObjects": [1]}});
        let bytes = serde_json::to_vec(&ok).unwrap_or_default();
        assert_eq!(converted_objects(&bytes, "v1", "id"), Ok(vec![json!(1)]));
        assert_eq!(
            converted_objects(&bytes, "v1", "other"),
            Err("expected response.uid=\"other\", got \"id\"".into())
        );
        // v1beta1 reviews are not checked for their uid.
        assert!(converted_objects(&bytes, "v1beta1", "other").is_ok());
        let failed = json!({"response": {"uid": "id", "result": {"status": "Failure"}}});
        let bytes = serde_json::to_vec(&failed).unwrap_or_default();
        assert_eq!(
            converted_objects(&bytes, "v1", "id"),
            Err("response.result.status was 'Failure', not 'Success'".into())
        );
        let told =
            json!({"response": {"uid": "id", "result": {"status": "Failure", "message": "no"}}});
        let bytes = serde_json::to_vec(&told).unwrap_or_default();
        assert_eq!(converted_objects(&bytes, "v1", "id"), Err("no".into()));
        let wrong =
            json!({"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "ConversionReview"});
        let bytes = serde_json::to_vec(&wrong).unwrap_or_default();
        assert_eq!(
            converted_objects(&bytes, "v1", "id"),
            Err("expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got apiextensions.k8s.io/v1beta1, Kind=ConversionReview".into())
        );
        let none = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview"});
        let bytes = serde_json::to_vec(&none).unwrap_or_default();
        assert_eq!(
            converted_objects(&bytes, "v1", "id"),
            Err("no response provided".into())
        );
    }

    #[test]
    fn only_labels_and_annotations_come_from_the_webhook() {
        let original = book("v2", "b");
        let mut converted = book("v1", "b");
        converted["metadata"]["labels"] = json!({"b": "2"});
        converted["metadata"]["resourceVersion"] = json!("99");
        converted["metadata"]["finalizers"] = json!(["x"]);
        let gvk = Gvk::of(&original);
        let out = accept_single(&original, converted, "example.com/v1", &gvk).unwrap_or_default();
        assert_eq!(out["metadata"]["labels"], json!({"b": "2"}));
        assert_eq!(out["metadata"]["resourceVersion"], "7");
        assert!(out["metadata"].get("finalizers").is_none());
        assert_eq!(out["apiVersion"], "example.com/v1");
    }

    #[test]
    fn a_changed_identity_or_version_is_refused_with_kubes_words() {
        let original = book("v2", "b");
        let gvk = Gvk::of(&original);
        let renamed = book("v1", "c");
        let e = accept_single(&original, renamed, "example.com/v1", &gvk).map(|_| ());
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("conversion webhook for example.com/v2, Kind=Book returned invalid object: must have the same name: b != c".into())
        );
        let unconverted = book("v2", "b");
        let e = accept_single(&original, unconverted, "example.com/v1", &gvk).map(|_| ());
        assert_eq!(
            e.map_err(|e| e.to_string()),
            Err("conversion webhook for example.com/v2, Kind=Book returned invalid object at index 0: invalid groupVersion (expected example.com/v1, received example.com/v2)".into())
        );
        let mut bad_label = book("v1", "b");
        bad_label["metadata"]["labels"] = json!({"a": "not a value"});
        let e = accept_single(&original, bad_label, "example.com/v1", &gvk).map(|_| ());
        assert!(
            e.map_err(|e| e.to_string()).is_err_and(|m| m.starts_with(
                "conversion webhook for example.com/v2, Kind=Book returned invalid metadata: metadata.labels: Invalid value: \"not a value\""
            ))
        );
    }

    #[test]
    fn review_versions_are_taken_in_order() {
        let crd = json!({"spec": {"conversion": {"strategy": "Webhook", "webhook": {
            "clientConfig": {"url": "https://h/convert"},
            "conversionReviewVersions": ["v2", "v1beta1", "v1"]}}}});
        let hook = Webhook::of_crd(&crd);
        assert_eq!(
            hook.as_ref().map(|h| h.review_version().ok()),
            Some(Some("v1beta1"))
        );
        let none = json!({"spec": {"conversion": {"strategy": "None"}}});
        assert!(Webhook::of_crd(&none).is_none());
        let unsupported = Webhook {
            review_versions: vec!["v2".into()],
            ..hook.unwrap_or_else(|| unreachable!())
        };
        assert_eq!(
            unsupported.review_version().map_err(|e| e.to_string()),
            Err("no supported conversion review versions".into())
        );
    }
}
