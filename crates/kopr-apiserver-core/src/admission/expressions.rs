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
    pub fn bind(&mut self, name: &str, value: &Value) -> Result<(), String> {
        self.context
            .add_variable(name, value)
            .map_err(|e| e.to_string())
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
    /// kube's text for an expression that does not compile
    /// (`compilation error: …`) or fails (`expression '…' resulted in
    /// error: …`).
    pub fn evaluate(&self, activation: &Activation<'_>) -> Result<CelValue, String> {
        self.evaluate_raw(activation).map_err(|e| match e {
            Failure::Compile(e) => format!("compilation error: {e}"),
            Failure::Execute(e) => format!("expression '{}' resulted in error: {e}", self.text),
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
    /// kube's text for an expression that does not compile, fails or does
    /// not give a bool.
    pub fn holds(&self, activation: &Activation<'_>) -> Result<bool, String> {
        match self.expression.evaluate(activation)? {
            CelValue::Bool(b) => Ok(b),
            _ => Err(format!("matchCondition '{}' is not a bool", self.name)),
        }
    }
}

/// Evaluates `conditions` in order, as kube's matcher does: the first that
/// is false decides (`Ok(false)`); errors are gathered (`Err`, one message
/// or `[a, b]`) unless one is false.
pub(crate) fn all_hold(
    conditions: &[Condition],
    activation: &Activation<'_>,
) -> Result<bool, String> {
    let mut errors = Vec::new();
    for condition in conditions {
        match condition.holds(activation) {
            Ok(false) => return Ok(false),
            Ok(true) => {}
            Err(e) => errors.push(e),
        }
    }
    match errors.len() {
        0 => Ok(true),
        1 => Err(errors.swap_remove(0)),
        _ => Err(format!("[{}]", errors.join(", "))),
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
) -> Result<Activation<'static>, String> {
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

    fn holds(expression: &str, object: Value) -> Result<bool, String> {
        let request = json!({"operation": "CREATE", "userInfo": {"username": "ann"}});
        let activation = request_activation(Some(&object), None, &request).unwrap();
        Condition::compile("c", expression).holds(&activation)
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
            holds("1 + ", pod.clone())
                .is_err_and(|e| e.starts_with("compilation error: compilation failed: "))
        );
        assert_eq!(
            holds("'x'", pod.clone()),
            Err("matchCondition 'c' is not a bool".to_string())
        );
        assert_eq!(
            holds("object.nothing.here", pod),
            Err("expression 'object.nothing.here' resulted in error: no such key: nothing".into())
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
            both.as_ref().is_err_and(|e| e.starts_with("[expression")),
            "{both:?}"
        );
    }
}
