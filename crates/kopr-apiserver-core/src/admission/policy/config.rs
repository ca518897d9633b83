//! The ValidatingAdmissionPolicies in force, compiled from the stored
//! policies and their bindings and rebuilt whenever one of them changes:
//! one entry per binding whose policy exists (kube skips bindings of
//! missing policies), ordered by policy name, then binding name.

use std::sync::Arc;

use serde_json::Value;

use crate::admission::expressions::{Condition, Expression};
use crate::admission::matching::{Rule, selector};
use crate::selectors::{LabelSelector, SelectorError};
use crate::storage::Store;

pub(super) const POLICIES: &str = "/admissionregistration.k8s.io/validatingadmissionpolicies/";
pub(super) const BINDINGS: &str =
    "/admissionregistration.k8s.io/validatingadmissionpolicybindings/";

/// `matchConstraints` of a policy or `matchResources` of a binding.
#[derive(Debug)]
pub(super) struct MatchResources {
    pub namespace_selector: Result<LabelSelector, SelectorError>,
    pub object_selector: Result<LabelSelector, SelectorError>,
    pub rules: Vec<Rule>,
    pub exclude: Vec<Rule>,
    /// `matchPolicy: Equivalent` (the default) rather than `Exact`.
    pub equivalent: bool,
}

impl MatchResources {
    fn from_value(v: &Value) -> MatchResources {
        MatchResources {
            namespace_selector: selector(&v["namespaceSelector"]),
            object_selector: selector(&v["objectSelector"]),
            rules: Rule::list(&v["resourceRules"]),
            exclude: Rule::list(&v["excludeResourceRules"]),
            equivalent: v["matchPolicy"].as_str() != Some("Exact"),
        }
    }
}

/// One of `spec.validations`.
#[derive(Debug)]
pub(super) struct Validation {
    pub expression: Expression,
    pub message: String,
    pub message_expression: Option<Expression>,
    /// `reason`; empty is `Invalid`.
    pub reason: String,
}

/// One of `spec.variables`.
#[derive(Debug)]
pub(super) struct Variable {
    pub name: String,
    pub expression: Expression,
}

/// A policy, ready to evaluate.
#[derive(Debug)]
pub(super) struct Policy {
    pub name: String,
    /// `failurePolicy: Fail` (the default) rather than `Ignore`.
    pub fail_closed: bool,
    /// `paramKind`: apiVersion and kind.
    pub param_kind: Option<(String, String)>,
    /// `None`: the policy has none, a configuration error.
    pub constraints: Option<MatchResources>,
    pub conditions: Vec<Condition>,
    pub variables: Vec<Variable>,
    pub validations: Vec<Validation>,
    /// `auditAnnotations`: key and `valueExpression`.
    pub audit_annotations: Vec<(String, Expression)>,
}

/// A binding's `paramRef`.
#[derive(Debug)]
pub(super) struct ParamRef {
    pub name: String,
    pub namespace: String,
    pub selector: Option<Result<LabelSelector, SelectorError>>,
    /// `parameterNotFoundAction: Deny`.
    pub deny_when_missing: bool,
}

/// A binding of an existing policy.
#[derive(Debug)]
pub(super) struct Binding {
    pub name: String,
    pub policy: Arc<Policy>,
    /// `matchResources` (`None`: everything the policy matches).
    pub resources: Option<MatchResources>,
    pub param_ref: Option<ParamRef>,
    pub deny: bool,
    pub warn: bool,
    pub audit: bool,
}

/// Every binding in force.
#[derive(Debug, Default)]
pub(super) struct Index {
    pub bindings: Vec<Binding>,
}

fn text(v: &Value) -> String {
    v.as_str().unwrap_or("").to_string()
}

fn policy(stored: &Value) -> Policy {
    let spec = &stored["spec"];
    let list = |key: &str| spec[key].as_array().cloned().unwrap_or_default();
    let validations = list("validations")
        .iter()
        .map(|v| Validation {
            expression: Expression::compile(v["expression"].as_str().unwrap_or("")),
            message: text(&v["message"]),
            message_expression: v["messageExpression"]
                .as_str()
                .filter(|e| !e.is_empty())
                .map(Expression::compile),
            reason: text(&v["reason"]),
        })
        .collect();
    let variables = list("variables")
        .iter()
        .map(|v| Variable {
            name: text(&v["name"]),
            expression: Expression::compile(v["expression"].as_str().unwrap_or("")),
        })
        .collect();
    let param_kind = spec["paramKind"]
        .as_object()
        .map(|p| (text(&p["apiVersion"]), text(&p["kind"])));
    let audit_annotations = list("auditAnnotations")
        .iter()
        .map(|a| {
            (
                text(&a["key"]),
                Expression::compile(a["valueExpression"].as_str().unwrap_or("")),
            )
        })
        .collect();
    Policy {
        name: crate::object::name(stored).to_string(),
        audit_annotations,
        fail_closed: spec["failurePolicy"].as_str() != Some("Ignore"),
        param_kind,
        constraints: spec
            .get("matchConstraints")
            .filter(|c| c.is_object())
            .map(MatchResources::from_value),
        conditions: Condition::list(&spec["matchConditions"]),
        variables,
        validations,
    }
}

fn binding(stored: &Value, policy: Arc<Policy>) -> Binding {
    let spec = &stored["spec"];
    let actions = crate::object::string_list(&spec["validationActions"]);
    let has = |a: &str| actions.iter().any(|x| x == a);
    let param_ref = spec["paramRef"].as_object().map(|p| ParamRef {
        name: p.get("name").map(text).unwrap_or_default(),
        namespace: p.get("namespace").map(text).unwrap_or_default(),
        selector: p.get("selector").filter(|s| s.is_object()).map(selector),
        deny_when_missing: p.get("parameterNotFoundAction").and_then(Value::as_str) == Some("Deny"),
    });
    Binding {
        name: crate::object::name(stored).to_string(),
        policy,
        resources: spec
            .get("matchResources")
            .filter(|r| r.is_object())
            .map(MatchResources::from_value),
        param_ref,
        deny: has("Deny"),
        warn: has("Warn"),
        audit: has("Audit"),
    }
}

impl Binding {
    /// `validationActions`, in kube's order.
    pub fn actions(&self) -> Vec<&'static str> {
        [
            (self.deny, "Deny"),
            (self.warn, "Warn"),
            (self.audit, "Audit"),
        ]
        .into_iter()
        .filter_map(|(on, name)| on.then_some(name))
        .collect()
    }
}

impl Index {
    /// Compiles every stored policy that has bindings.
    pub fn build(store: &Store) -> Index {
        let policies: Vec<Arc<Policy>> = store
            .current_objects(POLICIES)
            .iter()
            .map(|p| Arc::new(policy(p)))
            .collect();
        let mut bindings: Vec<Binding> = store
            .current_objects(BINDINGS)
            .iter()
            .filter_map(|b| {
                let wanted = b.pointer("/spec/policyName").and_then(Value::as_str)?;
                let policy = policies.iter().find(|p| p.name == wanted)?;
                Some(binding(b, policy.clone()))
            })
            .collect();
        bindings.sort_by(|a, b| (&a.policy.name, &a.name).cmp(&(&b.policy.name, &b.name)));
        Index { bindings }
    }
}
