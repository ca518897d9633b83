//! CEL in admission: expressions compiled once with their configuration
//! (a webhook's or a policy's) and evaluated against an [`Activation`] of
//! the request (`object`, `oldObject`, `request`, and for policies
//! `params`, `namespaceObject` and `variables`), with kube's error texts.
//! Named `matchConditions` are [`Condition`]s. `authorizer` is not offered:
//! an expression that uses it fails, and the failure policy decides.

use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::{Context, Program, Value as CelValue};
use serde_json::Value;

/// A value CEL cannot hold, bound to a variable.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub(crate) struct BindError(#[from] kube_cel::cel::SerializationError);

/// Why an expression gave no value; the messages are kube's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ExpressionError {
    /// It does not compile (`compilation failed: …`).
    #[error("compilation error: {0}")]
    Compile(String),
    /// It failed at run time.
    #[error("expression '{expression}' resulted in error: {detail}")]
    Execute {
        /// The expression.
        expression: String,
        /// The detail (`no such key: x`).
        detail: String,
    },
}

/// Why a `matchCondition` did not decide; the messages are kube's.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub(crate) enum ConditionError {
    /// Its expression gave no value.
    #[error(transparent)]
    Expression(#[from] ExpressionError),
    /// Its value is not a bool (the condition's name).
    #[error("matchCondition '{0}' is not a bool")]
    NotBool(String),
}

/// Why `matchConditions` did not decide: each failed condition, none false.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{}", conditions_message(.0))]
pub(crate) struct ConditionsError(pub Vec<ConditionError>);

/// One error as it is, several as `[a, b]` (as kube aggregates them).
fn conditions_message(errors: &[ConditionError]) -> String {
    match errors {
        [one] => one.to_string(),
        many => {
            let texts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("[{}]", texts.join(", "))
        }
    }
}

/// The variables an evaluation sees.
pub(crate) struct Activation<'a> {
    context: Context<'a>,
}

impl Activation<'static> {
    /// An activation with kube's CEL libraries and no variables.
    pub fn new() -> Activation<'static> {
        let mut context = Context::default();
        context.register_all();
        Activation { context }
    }
}

impl<'a> Activation<'a> {
    /// Binds `name` to a JSON value.
    ///
    /// # Errors
    /// A value CEL cannot hold.
    pub fn bind(&mut self, name: &str, value: &Value) -> Result<(), BindError> {
        Ok(self.context.add_variable(name, value)?)
    }

    /// Binds `name` to a CEL value.
    pub fn bind_value(&mut self, name: &str, value: CelValue) {
        self.context.add_variable_from_value(name, value);
    }

    /// A child activation that sees these variables and may add its own.
    pub fn child(&self) -> Activation<'_> {
        Activation {
            context: self.context.new_inner_scope(),
        }
    }
}

/// A compiled expression; a compile error is kept and reported when it is
/// evaluated.
#[derive(Clone)]
pub(crate) struct Expression {
    pub text: String,
    program: Result<Arc<Program>, String>,
}

impl std::fmt::Debug for Expression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Expression").field(&self.text).finish()
    }
}

impl Expression {
    /// Compiles `text`.
    pub fn compile(text: &str) -> Expression {
        let program = Program::compile(text)
            .map(Arc::new)
            .map_err(|e| format!("compilation failed: {e}"));
        Expression {
            text: text.to_string(),
            program,
        }
    }

    /// Evaluates the expression.
    ///
    /// # Errors
    /// An expression that does not compile or fails.
    pub fn evaluate(&self, activation: &Activation<'_>) -> Result<CelValue, ExpressionError> {
        self.evaluate_raw(activation).map_err(|e| match e {
            Failure::Compile(e) => ExpressionError::Compile(e),
            Failure::Execute(detail) => ExpressionError::Execute {
                expression: self.text.clone(),
                detail,
            },
        })
    }

    /// Evaluates the expression; errors without kube's wrapping.
    ///
    /// # Errors
    /// The compile error, or the execution error's detail (`no such key: x`).
    pub fn evaluate_raw(&self, activation: &Activation<'_>) -> Result<CelValue, Failure> {
        let program = self
            .program
            .as_ref()
            .map_err(|e| Failure::Compile(e.clone()))?;
        program
            .execute(&activation.context)
            .map_err(|e| Failure::Execute(error_detail(&e.to_string())))
    }
}

/// Why an evaluation gave no value.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Failure {
    /// The expression does not compile (`compilation failed: …`).
    Compile(String),
    /// It failed at run time (the detail, `no such key: x`).
    Execute(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Compile(e) | Failure::Execute(e) => f.write_str(e),
        }
    }
}

/// The detail of a CEL execution error as cel-go words the common ones
/// (`no such key: x`).
fn error_detail(text: &str) -> String {
    match text.strip_prefix("No such key: ") {
        Some(key) => format!("no such key: {key}"),
        None => text.to_string(),
    }
}

/// One named `matchCondition`.
#[derive(Debug, Clone)]
pub(crate) struct Condition {
    pub name: String,
    pub expression: Expression,
}

impl Condition {
    /// Compiles the condition.
    pub fn compile(name: &str, expression: &str) -> Condition {
        Condition {
            name: name.to_string(),
            expression: Expression::compile(expression),
        }
    }

    /// The `matchConditions` of a stored webhook or policy.
    pub fn list(conditions: &Value) -> Vec<Condition> {
        conditions
            .as_array()
            .map(|list| {
                list.iter()
                    .map(|c| {
                        Condition::compile(
                            c["name"].as_str().unwrap_or(""),
                            c["expression"].as_str().unwrap_or(""),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Whether the condition holds.
    ///
    /// # Errors
    /// An expression that does not compile, fails or does not give a bool.
    pub fn holds(&self, activation: &Activation<'_>) -> Result<bool, ConditionError> {
        match self.expression.evaluate(activation)? {
            CelValue::Bool(b) => Ok(b),
            _ => Err(ConditionError::NotBool(self.name.clone())),
        }
    }
}

/// Evaluates `conditions` in order, as kube's matcher does: the first that
/// is false decides (`Ok(false)`); errors are gathered (`Err`) unless one
/// is false.
pub(crate) fn all_hold(
    conditions: &[Condition],
    activation: &Activation<'_>,
) -> Result<bool, ConditionsError> {
    let mut errors = Vec::new();
    for condition in conditions {
        match condition.holds(activation) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(ConditionsError(errors))
    }
}

/// An activation of `object`, `oldObject` and `request` (null when absent).
///
/// # Errors
/// A value CEL cannot hold.
pub(crate) fn request_activation(
    object: Option<&Value>,
    old_object: Option<&Value>,
    request: &Value,
) -> Result<Activation<'static>, BindError> {
    let mut activation = Activation::new();
    activation.bind("object", object.unwrap_or(&Value::Null))?;
    activation.bind("oldObject", old_object.unwrap_or(&Value::Null))?;
    activation.bind("request", request)?;
    Ok(activation)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// Whether the condition holds; a failure as its message.
    fn holds(expression: &str, object: Value) -> Result<bool, ConditionError> {
        let request = json!({"operation": "CREATE", "userInfo": {"username": "ann"}});
        let activation = request_activation(Some(&object), None, &request).unwrap();
        Condition::compile("c", expression).holds(&activation)
    }

    fn message(result: Result<bool, ConditionError>) -> String {
        result.map_or_else(|e| e.to_string(), |b| format!("Ok({b})"))
    }

    #[test]
    fn conditions_see_the_object_and_the_request() {
        let pod = json!({"metadata": {"labels": {"tier": "web"}}});
        assert_eq!(
            holds("object.metadata.labels.tier == 'web'", pod.clone()),
            Ok(true)
        );
        assert_eq!(
            holds("request.userInfo.username == 'bob'", pod.clone()),
            Ok(false)
        );
        assert_eq!(holds("oldObject == null", pod.clone()), Ok(true));
        assert!(
            message(holds("1 + ", pod.clone()))
                .starts_with("compilation error: compilation failed: ")
        );
        assert_eq!(
            message(holds("'x'", pod.clone())),
            "matchCondition 'c' is not a bool"
        );
        assert_eq!(
            message(holds("object.nothing.here", pod)),
            "expression 'object.nothing.here' resulted in error: no such key: nothing"
        );
    }

    #[test]
    fn the_first_false_condition_wins_over_errors() {
        let activation = request_activation(Some(&json!({})), None, &json!({})).unwrap();
        let conditions = [
            Condition::compile("bad", "object.x"),
            Condition::compile("no", "false"),
        ];
        assert_eq!(all_hold(&conditions, &activation), Ok(false));
        let conditions = [
            Condition::compile("bad", "object.x"),
            Condition::compile("worse", "object.y"),
        ];
        let both = all_hold(&conditions, &activation);
        assert!(
            both.as_ref()
                .is_err_and(|e| e.to_string().starts_with("[expression")),
            "{both:?}"
        );
    }
}
