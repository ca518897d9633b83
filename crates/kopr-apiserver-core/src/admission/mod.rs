//! Admission: every new object state a write produces passes this stage
//! before it is stored, in kube-apiserver's order: decoding into the kind's
//! schema (unknown fields dropped, warned about or refused per
//! `fieldValidation`), the mutating plugins, then the validating plugins.
//!
//! Built in are the kind's defaulting (mutating), kube's LimitRanger
//! ([`limit_ranger`]: default requests and limits, then their bounds) and
//! ServiceAccount plugin ([`service_account`]: a pod's service account and
//! its token volume), the kind's validation (validating), and last of all
//! ResourceQuota ([`resource_quota`]: the write must fit its namespace's
//! quotas, which it is charged to). Defaulting and validation come from the
//! kind's strategy: built-in kinds follow kube's
//! `SetDefaults_*` and `Validate*`, custom resources their CRD's structural
//! schema, defaults and CEL rules. RBAC escalation prevention
//! ([`rbac_escalation`]) validates first, as kube's RBAC storage refuses
//! before admission; the access check of a ValidatingAdmissionPolicy's
//! parameters ([`param_access`]) validates last, as kube's strategy checks it
//! on objects otherwise valid. Admission webhooks ([`webhook`]) run after the
//! mutating plugins (the kind's defaulting and pruning run again on what
//! they changed) and after the validating ones; ValidatingAdmissionPolicies
//! ([`policy`]) run between the validating plugins and the validating
//! webhooks. Deletions pass the webhooks and the policies too.

pub mod annotations;
mod builtin;
mod compiled;
mod expressions;
pub mod limit_ranger;
mod matching;
pub mod param_access;
mod plugin;
pub mod policy;
pub mod rbac_escalation;
pub mod resource_quota;
pub mod service_account;
pub mod webhook;

use serde_json::Value;

use std::sync::Arc;

use crate::registry::{Admission, AdmissionRequest, BoxFuture, FieldValidation};
use crate::resources::ResourceType;
use crate::status::ApiError;
pub use builtin::{Defaulting, StrategyValidation};
pub use plugin::{Mutating, Validating};

/// The admission chain: mutating plugins in order, the mutating webhooks,
/// then the validating plugins and the validating webhooks.
pub struct Chain {
    mutating: Vec<Box<dyn Mutating>>,
    validating: Vec<Box<dyn Validating>>,
    webhooks: Option<Arc<webhook::Webhooks>>,
    policies: Option<Arc<policy::Policies>>,
    quota: Option<Arc<resource_quota::ResourceQuotaAdmission>>,
}

impl Chain {
    /// The chain every kopr-apiserver runs: the kind's defaulting, then its
    /// validation.
    pub fn builtin() -> Chain {
        Chain {
            mutating: vec![Box::new(Defaulting)],
            validating: vec![Box::new(StrategyValidation)],
            webhooks: None,
            policies: None,
            quota: None,
        }
    }

    /// Calls admission webhooks after the plugins of each kind.
    pub fn with_webhooks(mut self, webhooks: webhook::Webhooks) -> Chain {
        self.webhooks = Some(Arc::new(webhooks));
        self
    }

    /// Evaluates ValidatingAdmissionPolicies after the validating plugins,
    /// before the validating webhooks.
    pub fn with_policies(mut self, policies: policy::Policies) -> Chain {
        self.policies = Some(Arc::new(policies));
        self
    }

    /// Checks and charges ResourceQuotas last, after the validating
    /// webhooks, as kube-apiserver orders its plugins.
    pub fn with_quota(mut self, quota: resource_quota::ResourceQuotaAdmission) -> Chain {
        self.quota = Some(Arc::new(quota));
        self
    }

    /// Adds a mutating plugin after the present ones.
    pub fn mutating(mut self, plugin: impl Mutating + 'static) -> Chain {
        self.mutating.push(Box::new(plugin));
        self
    }

    /// Puts RBAC escalation prevention before the other validating plugins.
    pub fn with_rbac_escalation(mut self, check: rbac_escalation::RbacEscalation) -> Chain {
        self.validating.insert(0, Box::new(check));
        self
    }

    /// Adds a validating plugin after the present ones.
    pub fn validating(mut self, plugin: impl Validating + 'static) -> Chain {
        self.validating.push(Box::new(plugin));
        self
    }
}

impl Admission for Chain {
    fn admit<'a>(
        &'a self,
        request: &'a AdmissionRequest<'a>,
        obj: &'a mut Value,
    ) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move {
            let rt = request.rt;
            let unknown = rt.strategy.normalize(rt, obj)?;
            let mut warnings = unknown_field_warnings(rt, &unknown, request.field_validation)?;
            for plugin in &self.mutating {
                plugin
                    .admit(request, obj)
                    .map_err(|e| e.or_warnings(&warnings))?;
            }
            if let Some(webhooks) = &self.webhooks {
                let mutated = webhooks
                    .mutate(request, obj)
                    .await
                    .map_err(|e| e.or_warnings(&warnings))?;
                warnings.extend(mutated.warnings);
                if mutated.changed {
                    // What a webhook added outside the schema is pruned, and
                    // defaults apply to what it left unset.
                    rt.strategy.normalize(rt, obj)?;
                    Defaulting
                        .admit(request, obj)
                        .map_err(|e| e.or_warnings(&warnings))?;
                }
            }
            if let Some(prepare) = request.before_validation {
                (prepare.0)(obj);
            }
            for plugin in &self.validating {
                plugin
                    .validate(request, obj)
                    .map_err(|e| e.or_warnings(&warnings))?;
            }
            if let Some(policies) = &self.policies {
                let more = policies
                    .validate(request, Some(obj))
                    .map_err(|e| e.or_warnings(&warnings))?;
                warnings.extend(more);
            }
            if let Some(webhooks) = &self.webhooks {
                let more = webhooks
                    .validate(request, Some(obj))
                    .await
                    .map_err(|e| e.or_warnings(&warnings))?;
                warnings.extend(more);
            }
            if let Some(quota) = &self.quota {
                quota
                    .admit(request, obj)
                    .await
                    .map_err(|e| e.or_warnings(&warnings))?;
            }
            Ok(warnings)
        })
    }

    fn admit_delete<'a>(
        &'a self,
        request: &'a AdmissionRequest<'a>,
    ) -> BoxFuture<'a, Result<Vec<String>, ApiError>> {
        Box::pin(async move {
            let mut warnings = Vec::new();
            if let Some(webhooks) = &self.webhooks {
                let mut nothing = Value::Null;
                warnings = webhooks.mutate(request, &mut nothing).await?.warnings;
            }
            if let Some(policies) = &self.policies {
                let more = policies
                    .validate(request, None)
                    .map_err(|e| e.or_warnings(&warnings))?;
                warnings.extend(more);
            }
            let Some(webhooks) = &self.webhooks else {
                return Ok(warnings);
            };
            let more = webhooks
                .validate(request, None)
                .await
                .map_err(|e| e.or_warnings(&warnings))?;
            warnings.extend(more);
            Ok(warnings)
        })
    }
}

/// The warnings (or, with `Strict`, the 400) for the unknown fields a
/// body had.
fn unknown_field_warnings(
    rt: &ResourceType,
    unknown: &[String],
    validation: FieldValidation,
) -> Result<Vec<String>, ApiError> {
    let messages = || unknown.iter().map(|f| format!("unknown field \"{f}\""));
    match validation {
        _ if unknown.is_empty() => Ok(Vec::new()),
        FieldValidation::Strict => Err(ApiError::bad_request(format!(
            "{kind} in version \"{v}\" cannot be handled as a {kind}: strict decoding error: {}",
            messages().collect::<Vec<_>>().join(", "),
            kind = rt.kind,
            v = rt.version
        ))),
        FieldValidation::Warn => Ok(messages().collect()),
        FieldValidation::Ignore => Ok(Vec::new()),
    }
}
