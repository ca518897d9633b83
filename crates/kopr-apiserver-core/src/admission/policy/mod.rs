//! ValidatingAdmissionPolicy (admissionregistration.k8s.io/v1), as
//! kube-apiserver 1.32 evaluates it: in process, after the mutating stage
//! and before the validating webhooks, on writes and deletions.
//!
//! Each binding of an existing policy ([`config`]) is matched against the
//! request (the policy's `matchConstraints`, then the binding's
//! `matchResources`), its parameters are collected ([`params`]) and the
//! policy's CEL is evaluated once per parameter ([`evaluate`]). A failed
//! validation is enforced as the binding's `validationActions` say: `Deny`
//! refuses the request (`ValidatingAdmissionPolicy 'p' with binding 'b'
//! denied request: …`), `Warn` sends a warning; `Audit` records the failure in the
//! request's audit event (`validation.policy.admission.k8s.io/validation_failure`),
//! where the policy's `auditAnnotations` go too (`<policy>/<key>`). Expression and
//! configuration errors count under `failurePolicy: Fail` and are dropped
//! under `Ignore`.

mod config;
mod evaluate;
mod params;
pub mod typecheck;

use serde_json::{Map, Value};

use super::annotations;
use super::compiled::Compiled;
use super::expressions::{self, Activation};
use super::matching::{self, Attributes, Equivalent};
use crate::registry::AdmissionRequest;
use crate::resources::Catalog;
use crate::status::{ApiError, StatusCause};
use crate::storage::Store;
use config::{Binding, Index, MatchResources};
use evaluate::Decision;

/// The policy stage of the admission chain.
pub struct Policies {
    store: Store,
    catalog: Catalog,
    index: Compiled<Index>,
}

/// What a binding's evaluation asks of the request.
enum Verdict {
    Deny(Decision),
    Warn(String),
}

impl Policies {
    /// The stage over `store`, reading policies and bindings as they
    /// change; parameter kinds are looked up in `catalog`.
    pub fn new(store: Store, catalog: Catalog) -> Policies {
        Policies {
            catalog,
            index: Compiled::new(
                store.clone(),
                &[config::POLICIES, config::BINDINGS],
                Index::build,
            ),
            store,
        }
    }

    /// Whether `resources` select the request.
    fn selects(
        &self,
        resources: &MatchResources,
        attrs: &Attributes<'_>,
        rt: &crate::resources::ResourceType,
    ) -> Result<Option<Option<Equivalent>>, ApiError> {
        if matching::rules_match(&resources.exclude, attrs) {
            return Ok(None);
        }
        // No `resourceRules` (a binding's `matchResources` may have none)
        // matches every resource.
        let equivalent =
            if resources.rules.is_empty() || matching::rules_match(&resources.rules, attrs) {
                None
            } else if !resources.equivalent {
                return Ok(None);
            } else {
                match matching::equivalent_match(&self.catalog, &resources.rules, rt, attrs) {
                    Some(equivalent) => Some(equivalent),
                    None => return Ok(None),
                }
            };
        let selected =
            matching::namespace_selected(&self.store, &resources.namespace_selector, attrs)?
                && matching::object_selector_matches(&resources.object_selector, attrs)
                    .map_err(ApiError::internal)?;
        Ok(selected.then_some(equivalent))
    }

    /// The variables every policy sees: `object`, `oldObject`, `request`
    /// and `namespaceObject`.
    fn base(
        &self,
        request: &AdmissionRequest<'_>,
        attrs: &Attributes<'_>,
    ) -> Result<Activation<'static>, ApiError> {
        let mut fields = matching::request_fields("", attrs, request.user, request.dry_run);
        fields.remove("uid");
        let mut activation =
            expressions::request_activation(attrs.object, attrs.old, &Value::Object(fields))
                .map_err(ApiError::internal)?;
        let namespace = match attrs.namespace {
            "" => Value::Null,
            _ if attrs.is_namespace => Value::Null,
            name => matching::namespace_object(&self.store, name)
                .map(|ns| trimmed_namespace(&ns))
                .unwrap_or(Value::Null),
        };
        activation
            .bind("namespaceObject", &namespace)
            .map_err(ApiError::internal)?;
        Ok(activation)
    }

    /// Evaluates every binding that matches the request on `obj` (`None`
    /// for a deletion); returns the warnings for the client.
    ///
    /// # Errors
    /// The first denial: 422 (or the validation's `reason`) with kube's
    /// message.
    pub fn validate(
        &self,
        request: &AdmissionRequest<'_>,
        obj: Option<&Value>,
    ) -> Result<Vec<String>, ApiError> {
        if matching::exempt(request) {
            return Ok(Vec::new());
        }
        let index = self.index.get();
        if index.bindings.is_empty() {
            return Ok(Vec::new());
        }
        let attrs = Attributes::of(request, obj);
        let mut base = None;
        let mut warnings = Vec::new();
        for binding in &index.bindings {
            let verdicts = self.verdicts(binding, request, &attrs, &mut base)?;
            for verdict in verdicts {
                match verdict {
                    Verdict::Warn(w) => warnings.push(w),
                    Verdict::Deny(decision) => {
                        return Err(denial(request, obj, binding, &decision).or_warnings(&warnings));
                    }
                }
            }
        }
        Ok(warnings)
    }

    /// What one binding asks: its failed validations by its actions, and
    /// under `Fail` its errors.
    fn verdicts(
        &self,
        binding: &Binding,
        request: &AdmissionRequest<'_>,
        attrs: &Attributes<'_>,
        base: &mut Option<Activation<'static>>,
    ) -> Result<Vec<Verdict>, ApiError> {
        let policy = &binding.policy;
        let config_error = |why: String| {
            Ok(match policy.fail_closed {
                true => vec![Verdict::Deny(Decision {
                    message: why,
                    reason: String::new(),
                    error: true,
                    index: None,
                    always_deny: true,
                })],
                false => Vec::new(),
            })
        };
        let Some(constraints) = &policy.constraints else {
            return config_error(
                "failed to configure policy: policy contained no match constraints, a required field"
                    .into(),
            );
        };
        let Some(equivalent) = self.selects(constraints, attrs, request.rt)? else {
            return Ok(Vec::new());
        };
        if let Some(resources) = &binding.resources
            && self.selects(resources, attrs, request.rt)?.is_none()
        {
            return Ok(Vec::new());
        }
        let params =
            match params::collect(&self.store, &self.catalog, policy, binding, attrs.namespace) {
                Ok(params) => params,
                Err(e) => return config_error(e.to_string()),
            };
        // Through an equivalent resource the policy sees the converted
        // objects; otherwise the request's own, shared by the policies.
        let converted;
        let base = match &equivalent {
            Some(e) => {
                converted = self.base(request, &e.attributes(attrs))?;
                &converted
            }
            None => {
                if base.is_none() {
                    *base = Some(self.base(request, attrs)?);
                }
                match base.as_ref() {
                    Some(base) => base,
                    None => return Ok(Vec::new()),
                }
            }
        };
        let mut verdicts = Vec::new();
        let mut audited = Vec::new();
        for param in &params {
            let Some(evaluation) = evaluate::evaluate(policy, base, param.as_ref()) else {
                continue;
            };
            for (key, value) in &evaluation.annotations {
                annotations::annotate(key, value);
            }
            for decision in evaluation.decisions {
                if decision.error && !policy.fail_closed {
                    continue;
                }
                if decision.always_deny {
                    verdicts.push(Verdict::Deny(decision));
                    continue;
                }
                if binding.audit {
                    audited.push(serde_json::json!({
                        "message": decision.message,
                        "policy": policy.name,
                        "binding": binding.name,
                        "expressionIndex": decision.index.unwrap_or(0),
                        "validationActions": binding.actions(),
                    }));
                }
                if binding.warn {
                    verdicts.push(Verdict::Warn(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                        policy.name, binding.name, decision.message
                    )));
                }
                if binding.deny {
                    verdicts.push(Verdict::Deny(decision));
                }
            }
        }
        if !audited.is_empty() {
            annotations::annotate(
                "validation.policy.admission.k8s.io/validation_failure",
                &Value::Array(audited).to_string(),
            );
        }
        Ok(verdicts)
    }
}

/// What `namespaceObject` shows of a Namespace, as kube trims it.
fn trimmed_namespace(ns: &Value) -> Value {
    const META: [&str; 12] = [
        "name",
        "generateName",
        "namespace",
        "labels",
        "annotations",
        "uid",
        "creationTimestamp",
        "deletionGracePeriodSeconds",
        "deletionTimestamp",
        "generation",
        "resourceVersion",
        "finalizers",
    ];
    let mut out = Map::new();
    if let Some(meta) = ns.get("metadata").and_then(Value::as_object) {
        let kept: Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| META.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert("metadata".into(), Value::Object(kept));
    }
    if let Some(finalizers) = ns.pointer("/spec/finalizers") {
        out.insert("spec".into(), serde_json::json!({"finalizers": finalizers}));
    }
    let mut status = Map::new();
    for key in ["phase", "conditions"] {
        if let Some(v) = ns.pointer(&format!("/status/{key}")) {
            status.insert(key.into(), v.clone());
        }
    }
    if !status.is_empty() {
        out.insert("status".into(), Value::Object(status));
    }
    Value::Object(out)
}

/// The Status of a denial, as kube 1.32 builds it: a Forbidden message
/// (`<resource> "<name>" is forbidden: ValidatingAdmissionPolicy '<p>'
/// with binding '<b>' denied request: <message>`), the validation's reason
/// (`Invalid` by default) with its code, and the message as the one cause.
fn denial(
    request: &AdmissionRequest<'_>,
    obj: Option<&Value>,
    binding: &Binding,
    decision: &Decision,
) -> ApiError {
    let why = format!(
        "ValidatingAdmissionPolicy '{}' with binding '{}' denied request: {}",
        binding.policy.name, binding.name, decision.message
    );
    let from_object = |key: &str| {
        obj.and_then(|o| o.pointer(&format!("/metadata/{key}")))
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
    };
    let name = Some(request.name)
        .filter(|n| !n.is_empty())
        .or_else(|| from_object("name"))
        .or_else(|| from_object("generateName"))
        .unwrap_or("Unknown");
    let mut e = ApiError::forbidden(request.rt.reference(), name, &why);
    let (reason, code) = match decision.reason.as_str() {
        "Forbidden" => ("Forbidden", 403),
        "Unauthorized" => ("Unauthorized", 401),
        "RequestEntityTooLarge" => ("RequestEntityTooLarge", 413),
        _ => ("Invalid", 422),
    };
    e.reason = reason.into();
    e.code = code;
    e.causes.push(StatusCause {
        reason: String::new(),
        message: why,
        field: String::new(),
    });
    e
}
