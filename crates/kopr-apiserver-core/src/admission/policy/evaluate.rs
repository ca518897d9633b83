//! Evaluating one policy for one parameter: `params` and the composited
//! `variables` bound, `matchConditions` checked, then each validation
//! giving a [`Decision`] when it does not pass, with kube's message rules
//! (`messageExpression`, then `message`, then `failed expression: …`).

use std::collections::HashMap;

use kube_cel::cel::Value as CelValue;
use serde_json::Value;

use super::config::{Policy, Validation};
use crate::admission::expressions::{self, Activation, Failure};

/// The longest message a `messageExpression` may give (5 KiB).
const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// The longest audit annotation value kept (10 KiB).
const MAX_ANNOTATION_BYTES: usize = 10 * 1024;

/// A validation that did not pass.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Decision {
    pub message: String,
    /// `reason` of the validation; empty for errors (both are `Invalid`).
    pub reason: String,
    /// The expression failed rather than gave false: the failure policy
    /// decides whether it counts.
    pub error: bool,
    /// The index of the validation, if one gave it.
    pub index: Option<usize>,
    /// An audit annotation failed: under `Fail` it denies, whatever the
    /// binding's actions.
    pub always_deny: bool,
}

/// What one evaluation gave.
#[derive(Debug, Default, PartialEq)]
pub(super) struct Evaluation {
    pub decisions: Vec<Decision>,
    /// `auditAnnotations`: `<policy>/<key>` and value.
    pub annotations: Vec<(String, String)>,
}

impl Decision {
    fn error(message: String, index: Option<usize>) -> Decision {
        Decision {
            message,
            reason: String::new(),
            error: true,
            index,
            always_deny: false,
        }
    }
}

/// The failed composited variables: name and why.
type Broken = Vec<(String, String)>;

/// Binds `params` (when the policy has a paramKind) and evaluates the
/// variables in order, each seeing those before it as `variables`.
fn bind(policy: &Policy, activation: &mut Activation<'_>, params: Option<&Value>) -> Broken {
    let mut broken = Broken::new();
    if policy.param_kind.is_some()
        && let Err(e) = activation.bind("params", params.unwrap_or(&Value::Null))
    {
        broken.push(("params".into(), e.to_string()));
    }
    let mut values: HashMap<String, CelValue> = HashMap::new();
    activation.bind_value("variables", CelValue::from(values.clone()));
    for variable in &policy.variables {
        match variable.expression.evaluate_raw(activation) {
            Ok(value) => {
                values.insert(variable.name.clone(), value);
                activation.bind_value("variables", CelValue::from(values.clone()));
            }
            Err(Failure::Compile(e)) => broken.push((
                variable.name.clone(),
                format!(
                    "composited variable {:?} fails to compile: {e}",
                    variable.name
                ),
            )),
            Err(Failure::Execute(e)) => broken.push((
                variable.name.clone(),
                format!(
                    "composited variable {:?} fails to evaluate: {e}",
                    variable.name
                ),
            )),
        }
    }
    broken
}

/// The error of an expression, naming a failed variable it uses.
fn failure(expression: &str, error: Failure, broken: &Broken) -> String {
    let used = broken
        .iter()
        .find(|(name, _)| expression.contains(&format!("variables.{name}")));
    match (used, error) {
        (Some((_, why)), _) => format!("expression '{expression}' resulted in error: {why}"),
        (None, Failure::Compile(e)) => format!("compilation error: {e}"),
        (None, Failure::Execute(e)) => format!("expression '{expression}' resulted in error: {e}"),
    }
}

/// The message of a validation that gave false.
fn message(validation: &Validation, activation: &Activation<'_>) -> String {
    let evaluated = validation
        .message_expression
        .as_ref()
        .and_then(|e| match e.evaluate_raw(activation) {
            Ok(CelValue::String(s)) => Some(s.trim().to_string()),
            _ => None,
        })
        .filter(|m| !m.is_empty() && !m.contains('\n') && m.len() <= MAX_MESSAGE_BYTES);
    if let Some(m) = evaluated {
        return m;
    }
    match validation.message.trim() {
        "" => format!("failed expression: {}", validation.expression.text.trim()),
        m => m.to_string(),
    }
}

/// Evaluates `policy` with `params` on top of `base` (which holds
/// `object`, `oldObject`, `request` and `namespaceObject`). `None`: its
/// match conditions exclude the request.
pub(super) fn evaluate(
    policy: &Policy,
    base: &Activation<'_>,
    params: Option<&Value>,
) -> Option<Evaluation> {
    let mut activation = base.child();
    let broken = bind(policy, &mut activation, params);
    let mut out = Evaluation::default();
    if !policy.conditions.is_empty() {
        match expressions::all_hold(&policy.conditions, &activation) {
            Ok(true) => {}
            Ok(false) => return None,
            Err(_) if !policy.fail_closed => return None,
            Err(e) => {
                out.decisions.push(Decision::error(e.to_string(), None));
                return Some(out);
            }
        }
    }
    for (i, validation) in policy.validations.iter().enumerate() {
        let text = &validation.expression.text;
        match validation.expression.evaluate_raw(&activation) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => out.decisions.push(Decision {
                message: message(validation, &activation),
                reason: validation.reason.clone(),
                error: false,
                index: Some(i),
                always_deny: false,
            }),
            Ok(_) => out.decisions.push(Decision::error(
                format!("expression '{text}' resulted in error: must evaluate to bool"),
                Some(i),
            )),
            Err(e) => out
                .decisions
                .push(Decision::error(failure(text, e, &broken), Some(i))),
        }
    }
    for (key, expression) in &policy.audit_annotations {
        let text = &expression.text;
        let failed = match expression.evaluate_raw(&activation) {
            Ok(CelValue::Null) => None,
            Ok(CelValue::String(value)) => {
                let value = value.trim();
                if !value.is_empty() {
                    let cut = value
                        .char_indices()
                        .map(|(i, c)| i + c.len_utf8())
                        .take_while(|end| *end <= MAX_ANNOTATION_BYTES)
                        .last()
                        .unwrap_or(0);
                    out.annotations
                        .push((format!("{}/{key}", policy.name), value[..cut].to_string()));
                }
                None
            }
            Ok(other) => Some(format!(
                "valueExpression '{text}' resulted in unsupported return type: {}. Return type must be either string or null.",
                kind_name(&other)
            )),
            Err(e) => Some(failure(text, e, &broken)),
        };
        if let Some(message) = failed.filter(|_| policy.fail_closed) {
            let mut decision = Decision::error(message, None);
            decision.always_deny = true;
            out.decisions.push(decision);
        }
    }
    Some(out)
}

/// CEL's name of a value's type.
fn kind_name(value: &CelValue) -> &'static str {
    match value {
        CelValue::Bool(_) => "bool",
        CelValue::Int(_) => "int",
        CelValue::UInt(_) => "uint",
        CelValue::Float(_) => "double",
        CelValue::List(_) => "list",
        CelValue::Map(_) => "map",
        _ => "dyn",
    }
}

#[cfg(test)]
mod tests {
    use super::super::config::Variable;
    use super::*;
    use crate::admission::expressions::{Condition, Expression};
    use serde_json::json;

    fn validation(expression: &str, message: &str, message_expression: &str) -> Validation {
        Validation {
            expression: Expression::compile(expression),
            message: message.into(),
            message_expression: (!message_expression.is_empty())
                .then(|| Expression::compile(message_expression)),
            reason: String::new(),
        }
    }

    fn policy(validations: Vec<Validation>) -> Policy {
        Policy {
            name: "p".into(),
            fail_closed: true,
            param_kind: Some(("v1".into(), "ConfigMap".into())),
            constraints: None,
            conditions: Vec::new(),
            variables: vec![
                Variable {
                    name: "replicas".into(),
                    expression: Expression::compile("object.spec.replicas"),
                },
                Variable {
                    name: "missing".into(),
                    expression: Expression::compile("object.spec.nothing"),
                },
            ],
            validations,
            audit_annotations: Vec::new(),
        }
    }

    fn run(policy: &Policy, params: Value) -> Option<Vec<Decision>> {
        let object = json!({"spec": {"replicas": 5}});
        let base =
            expressions::request_activation(Some(&object), None, &json!({"operation": "CREATE"}))
                .unwrap();
        evaluate(policy, &base, Some(&params)).map(|e| e.decisions)
    }

    #[test]
    fn messages_fall_back_as_kube_chooses_them() {
        let p = policy(vec![
            validation(
                "variables.replicas <= int(params.data.max)",
                "too many",
                "'at most ' + params.data.max",
            ),
            validation("object.spec.replicas < 3", "  static  ", "''"),
            validation(" object.spec.replicas < 2 ", "", ""),
            validation("object.spec.replicas > 0", "", ""),
        ]);
        let decisions = run(&p, json!({"data": {"max": "4"}})).unwrap();
        let messages: Vec<&str> = decisions.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "at most 4",
                "static",
                "failed expression: object.spec.replicas < 2"
            ]
        );
        assert!(decisions.iter().all(|d| !d.error));
        assert!(run(&p, json!({"data": {"max": "9"}})).unwrap().len() == 2);
    }

    #[test]
    fn errors_name_the_expression_and_a_broken_variable() {
        let p = policy(vec![
            validation("params.data.limit == 'x'", "", ""),
            validation("variables.missing == 1", "", ""),
            validation("1", "", ""),
        ]);
        let decisions = run(&p, json!({"data": {}})).unwrap();
        assert!(decisions.iter().all(|d| d.error));
        assert_eq!(
            decisions[0].message,
            "expression 'params.data.limit == 'x'' resulted in error: no such key: limit"
        );
        assert_eq!(
            decisions[1].message,
            "expression 'variables.missing == 1' resulted in error: composited variable \"missing\" fails to evaluate: no such key: nothing"
        );
        assert_eq!(
            decisions[2].message,
            "expression '1' resulted in error: must evaluate to bool"
        );
    }

    #[test]
    fn match_conditions_exclude_or_fail() {
        let mut p = policy(vec![validation("false", "no", "")]);
        p.conditions = vec![Condition::compile("big", "object.spec.replicas > 10")];
        assert_eq!(run(&p, json!({})), None);
        p.conditions = vec![Condition::compile("bad", "object.spec.nope")];
        let decisions = run(&p, json!({})).unwrap();
        assert!(decisions[0].error);
        p.fail_closed = false;
        assert_eq!(run(&p, json!({})), None);
    }
}

#[cfg(test)]
mod annotation_tests {
    use super::*;
    use crate::admission::expressions::Expression;
    use serde_json::json;

    #[test]
    fn audit_annotations_are_published_under_the_policy_name() {
        let policy = Policy {
            name: "p".into(),
            fail_closed: true,
            param_kind: None,
            constraints: None,
            conditions: Vec::new(),
            variables: Vec::new(),
            validations: Vec::new(),
            audit_annotations: vec![
                (
                    "replicas".into(),
                    Expression::compile("'r=' + string(object.spec.replicas)"),
                ),
                ("none".into(), Expression::compile("null")),
                ("bad".into(), Expression::compile("1")),
            ],
        };
        let object = json!({"spec": {"replicas": 5}});
        let base = expressions::request_activation(Some(&object), None, &json!({})).unwrap();
        let out = evaluate(&policy, &base, None).unwrap();
        assert_eq!(
            out.annotations,
            [("p/replicas".to_string(), "r=5".to_string())]
        );
        assert_eq!(out.decisions.len(), 1);
        assert!(out.decisions[0].always_deny);
        assert_eq!(
            out.decisions[0].message,
            "valueExpression '1' resulted in unsupported return type: int. Return type must be either string or null."
        );
    }
}
