//! Admission webhooks, as kube-apiserver 1.32 calls them: the stored
//! MutatingWebhookConfigurations and ValidatingWebhookConfigurations
//! (admissionregistration.k8s.io/v1) are matched against every write and
//! deletion ([`matching`], [`conditions`]) and the matching webhooks are
//! called with an AdmissionReview ([`review`], [`call`]).
//!
//! Mutating webhooks run in order (by configuration name, then as
//! declared), each on the object the previous one left; their JSON patches
//! are applied, and `reinvocationPolicy: IfNeeded` webhooks run once more
//! when a later webhook changed the object. Validating webhooks run
//! concurrently after schema validation; any denial refuses the request.
//! A webhook that cannot be called refuses the request under
//! `failurePolicy: Fail` and is skipped under `Ignore`. Warnings go back to
//! the client.

mod config;
mod review;

use serde_json::Value;

use super::compiled::Compiled;
use super::expressions;
use super::matching::{self, Attributes, Equivalent};
use crate::callout::{CallError, Caller};
use crate::registry::AdmissionRequest;
use crate::status::ApiError;
use crate::storage::Store;
use config::{Hook, Index};

/// The webhook stage of the admission chain.
pub struct Webhooks {
    store: Store,
    catalog: crate::resources::Catalog,
    index: Compiled<Index>,
    caller: Caller,
}

/// What the mutating webhooks did: whether the object changed, so that the
/// kind's defaulting and pruning run again.
#[derive(Debug, Default)]
pub struct Mutated {
    /// The object was changed by a patch.
    pub changed: bool,
    /// Warnings for the client.
    pub warnings: Vec<String>,
}

/// Why a call did not give an answer: the reason after `failed calling
/// webhook "<name>": `.
#[derive(Debug, thiserror::Error)]
enum CallFailed {
    /// The webhook takes no AdmissionReview version this server sends.
    #[error(
        "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)"
    )]
    Versions,
    /// The POST gave no answer.
    #[error("failed to call webhook: {0}")]
    Call(#[from] CallError),
    /// The answer is not usable.
    #[error("received invalid webhook response: {0}")]
    Answer(#[from] review::AnswerError),
}

impl Webhooks {
    /// The stage over `store`, reading configurations as they change;
    /// equivalent resources are found in `catalog`.
    pub fn new(store: Store, catalog: crate::resources::Catalog) -> Webhooks {
        Webhooks {
            catalog,
            caller: Caller::new(store.clone()),
            index: Compiled::new(
                store.clone(),
                &[config::MUTATING, config::VALIDATING],
                Index::build,
            ),
            store,
        }
    }

    /// Whether and how `hook` is to be called for the request (kube's
    /// `ShouldCallHook`): `None` not at all, `Some(None)` on the request as
    /// it is, `Some(Some(_))` through an equivalent resource
    /// (`matchPolicy: Equivalent`).
    async fn invocation(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        request: &AdmissionRequest<'_>,
    ) -> Result<Option<Option<Equivalent>>, ApiError> {
        let selected = matching::namespace_selected(&self.store, &hook.namespace_selector, attrs)?
            && matching::object_selector_matches(&hook.object_selector, attrs)
                .map_err(ApiError::internal)?;
        if !selected {
            return Ok(None);
        }
        let equivalent = if matching::rules_match(&hook.rules, attrs) {
            None
        } else if !hook.equivalent {
            return Ok(None);
        } else {
            match matching::equivalent_match(&self.catalog, &hook.rules, request.rt, attrs) {
                Some(equivalent) => Some(equivalent.by_webhook(&self.caller, attrs).await?),
                None => return Ok(None),
            }
        };
        if hook.conditions.is_empty() {
            return Ok(Some(equivalent));
        }
        let seen = match &equivalent {
            Some(e) => e.attributes(attrs),
            None => *attrs,
        };
        let fields = matching::request_fields("", &seen, request.user, request.dry_run);
        let activation =
            expressions::request_activation(seen.object, seen.old, &Value::Object(fields))
                .map_err(ApiError::internal)?;
        match expressions::all_hold(&hook.conditions, &activation) {
            Ok(true) => Ok(Some(equivalent)),
            Ok(false) => Ok(None),
            Err(_) if !hook.fail_closed => Ok(None),
            Err(e) => Err(ApiError::forbidden(
                request.rt.reference(),
                request.name,
                &e.to_string(),
            )),
        }
    }

    /// Calls `hook`; a failure to get an answer is handled by its failure
    /// policy (`None`: skipped under Ignore).
    async fn call(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        request: &AdmissionRequest<'_>,
        mutating: bool,
    ) -> Result<Option<review::Answer>, ApiError> {
        if request.dry_run && !hook.dry_run_safe {
            return Err(ApiError::bad_request(format!(
                "admission webhook \"{}\" does not support dry run",
                hook.name
            )));
        }
        match self.exchange(hook, attrs, request, mutating).await {
            Ok(answer) => {
                for (key, value) in &answer.audit_annotations {
                    super::annotations::annotate(&format!("{}/{key}", hook.name), value);
                }
                Ok(Some(answer))
            }
            Err(reason) => {
                let text = format!("failed calling webhook \"{}\": {reason}", hook.name);
                if hook.fail_closed {
                    tracing::warn!(webhook = %hook.name, configuration = %hook.configuration, "{text}; refusing the request (failurePolicy: Fail)");
                    Err(ApiError::internal(text))
                } else {
                    tracing::warn!(webhook = %hook.name, configuration = %hook.configuration, "{text}; ignored (failurePolicy: Ignore)");
                    Ok(None)
                }
            }
        }
    }

    async fn exchange(
        &self,
        hook: &Hook,
        attrs: &Attributes<'_>,
        request: &AdmissionRequest<'_>,
        mutating: bool,
    ) -> Result<review::Answer, CallFailed> {
        if !hook.review_versions.iter().any(|v| v == "v1") {
            return Err(CallFailed::Versions);
        }
        let uid = crate::object::new_uid();
        let fields = matching::request_fields(&uid, attrs, request.user, request.dry_run);
        let body = review::review(fields, attrs).to_string().into_bytes();
        let bytes = self.caller.post(&hook.client, body).await?;
        Ok(review::answer(&bytes, &uid, mutating)?)
    }

    /// Runs the mutating webhooks on `obj` (with one reinvocation round for
    /// `IfNeeded` webhooks when a later one changed the object).
    ///
    /// # Errors
    /// A denial, a failure under `Fail`, or a patch that cannot be applied.
    pub async fn mutate(
        &self,
        request: &AdmissionRequest<'_>,
        obj: &mut Value,
    ) -> Result<Mutated, ApiError> {
        let mut mutated = Mutated::default();
        if matching::exempt(request) {
            return Ok(mutated);
        }
        let index = self.index.get();
        let mut invoked: Vec<usize> = Vec::new();
        let mut again = vec![false; index.mutating.len()];
        for (i, hook) in index.mutating.iter().enumerate() {
            let Some(changed) = self.mutate_one(hook, request, obj, &mut mutated).await? else {
                continue;
            };
            if changed {
                for &j in &invoked {
                    again[j] = true;
                }
            }
            if hook.reinvoke {
                invoked.push(i);
            }
        }
        for (i, hook) in index.mutating.iter().enumerate() {
            if again[i] {
                self.mutate_one(hook, request, obj, &mut mutated).await?;
            }
        }
        Ok(mutated)
    }

    /// Calls one mutating webhook if it matches; returns whether it changed
    /// the object (`None`: not called).
    async fn mutate_one(
        &self,
        hook: &Hook,
        request: &AdmissionRequest<'_>,
        obj: &mut Value,
        mutated: &mut Mutated,
    ) -> Result<Option<bool>, ApiError> {
        let object = (request.operation != crate::registry::Operation::Delete).then_some(&*obj);
        let attrs = Attributes::of(request, object);
        let Some(equivalent) = self.invocation(hook, &attrs, request).await? else {
            return Ok(None);
        };
        let seen = match &equivalent {
            Some(e) => e.attributes(&attrs),
            None => attrs,
        };
        let Some(answer) = self.call(hook, &seen, request, true).await? else {
            return Ok(Some(false));
        };
        mutated.warnings.extend(usable_warnings(&answer.warnings));
        if !answer.allowed {
            return Err(denial(
                &hook.name,
                answer.status.as_ref(),
                &mutated.warnings,
            ));
        }
        let Some(patch) = answer.patch else {
            return Ok(Some(false));
        };
        let operations: json_patch::Patch = serde_json::from_slice(&patch).map_err(|e| {
            ApiError::internal(format!(
                "received undecodable patch in webhook response: {e}"
            ))
        })?;
        if operations.0.is_empty() {
            return Ok(Some(false));
        }
        if request.operation == crate::registry::Operation::Delete {
            return Err(ApiError::internal(format!(
                "admission webhook \"{}\" attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        }
        let before = obj.clone();
        match &equivalent {
            // The patch is for the object as the equivalent resource gave it.
            Some(e) => {
                let mut seen = e.object.clone().unwrap_or(Value::Null);
                json_patch::patch(&mut seen, &operations).map_err(ApiError::internal)?;
                *obj = e.back_by_webhook(&self.caller, request.rt, &seen).await?;
            }
            None => json_patch::patch(obj, &operations).map_err(ApiError::internal)?,
        }
        let changed = *obj != before;
        mutated.changed |= changed;
        Ok(Some(changed))
    }

    /// Runs the validating webhooks on `obj` (`None` for a deletion),
    /// concurrently.
    ///
    /// # Errors
    /// The first denial or failure under `Fail`.
    pub async fn validate(
        &self,
        request: &AdmissionRequest<'_>,
        obj: Option<&Value>,
    ) -> Result<Vec<String>, ApiError> {
        if matching::exempt(request) {
            return Ok(Vec::new());
        }
        let index = self.index.get();
        let attrs = Attributes::of(request, obj);
        let mut due = Vec::new();
        for hook in &index.validating {
            if let Some(equivalent) = self.invocation(hook, &attrs, request).await? {
                due.push((hook, equivalent));
            }
        }
        let seen: Vec<Attributes<'_>> = due
            .iter()
            .map(|(_, equivalent)| match equivalent {
                Some(e) => e.attributes(&attrs),
                None => attrs,
            })
            .collect();
        let answers = futures::future::join_all(
            due.iter()
                .zip(&seen)
                .map(|((hook, _), seen)| self.call(hook, seen, request, false)),
        )
        .await;
        let due: Vec<&Hook> = due.iter().map(|(hook, _)| *hook).collect();
        let mut warnings = Vec::new();
        let mut refusal = None;
        for (hook, answer) in due.iter().zip(answers) {
            match answer {
                Ok(Some(answer)) => {
                    warnings.extend(usable_warnings(&answer.warnings));
                    if !answer.allowed && refusal.is_none() {
                        refusal = Some((hook.name.as_str(), answer.status));
                    }
                }
                Ok(None) => {}
                Err(e) => return Err(e.or_warnings(&warnings)),
            }
        }
        match refusal {
            Some((name, status)) => Err(denial(name, status.as_ref(), &warnings)),
            None => Ok(warnings),
        }
    }
}

/// Warnings a webhook may pass on: not empty, no control characters.
fn usable_warnings(warnings: &[String]) -> Vec<String> {
    warnings
        .iter()
        .filter(|w| !w.is_empty() && !w.chars().any(char::is_control))
        .cloned()
        .collect()
}

/// The Status of a webhook's denial, as kube 1.32 builds it: the webhook's
/// code (400 when it gave none below 400), its reason, and
/// `admission webhook "<name>" denied the request: <message>`.
fn denial(name: &str, status: Option<&Value>, warnings: &[String]) -> ApiError {
    let empty = Value::Null;
    let status = status.unwrap_or(&empty);
    let code = status["code"]
        .as_u64()
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let reason = status["reason"].as_str().unwrap_or("");
    let message = match status["message"].as_str().filter(|m| !m.is_empty()) {
        Some(m) => format!("admission webhook \"{name}\" denied the request: {m}"),
        None if !reason.is_empty() => {
            format!("admission webhook \"{name}\" denied the request: {reason}")
        }
        None => format!("admission webhook \"{name}\" denied the request without explanation"),
    };
    let mut e = ApiError::from_status(status);
    e.code = code;
    e.message = message;
    e.reason = reason.to_string().into();
    e.or_warnings(warnings)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn denials_read_as_kube_writes_them() {
        let e = denial(
            "v.example.com",
            Some(&json!({"message": "no", "code": 422, "reason": "Invalid"})),
            &[],
        );
        assert_eq!((e.code, e.reason.as_ref()), (422, "Invalid"));
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request: no"
        );
        let e = denial("v.example.com", None, &[]);
        assert_eq!((e.code, e.reason.as_ref()), (400, ""));
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request without explanation"
        );
        let e = denial(
            "v.example.com",
            Some(&json!({"code": 200, "reason": "Nope"})),
            &[],
        );
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request: Nope"
        );
    }

    #[test]
    fn only_clean_warnings_pass() {
        let w = vec!["ok".to_string(), String::new(), "two\nlines".to_string()];
        assert_eq!(usable_warnings(&w), ["ok"]);
    }
}
