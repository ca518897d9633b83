//! A webhook's `matchConditions`: CEL expressions over `object`,
//! `oldObject` and `request`, compiled once with the configuration and
//! evaluated before each call. `authorizer` is not offered: an expression
//! that uses it fails, and the failure policy decides.

use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::{Context, Program, Value as CelValue};
use serde_json::Value;

/// One named condition.
pub(crate) struct Condition {
    pub name: String,
    pub expression: String,
    program: Result<Arc<Program>, String>,
}

impl std::fmt::Debug for Condition {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Condition")
            .field("name", &self.name)
            .field("expression", &self.expression)
            .finish_non_exhaustive()
    }
}

/// What the expressions see.
pub(crate) struct Variables<'a> {
    pub object: &'a Value,
    pub old_object: &'a Value,
    /// The AdmissionRequest, without its objects.
    pub request: &'a Value,
}

impl Condition {
    /// Compiles `expression`; a compile error is kept and reported when the
    /// condition is evaluated.
    pub fn compile(name: &str, expression: &str) -> Condition {
        let program = Program::compile(expression)
            .map(Arc::new)
            .map_err(|e| format!("compilation error: {e}"));
        Condition {
            name: name.to_string(),
            expression: expression.to_string(),
            program,
        }
    }

    /// Whether the condition holds.
    ///
    /// # Errors
    /// kube's text for an expression that does not compile, fails or does
    /// not give a bool.
    pub fn holds(&self, variables: &Variables<'_>) -> Result<bool, String> {
        let program = self.program.as_ref().map_err(Clone::clone)?;
        let failed = |e: &dyn std::fmt::Display| {
            format!("expression '{}' resulted in error: {e}", self.expression)
        };
        let mut context = Context::default();
        context.register_all();
        for (name, value) in [
            ("object", variables.object),
            ("oldObject", variables.old_object),
            ("request", variables.request),
        ] {
            context.add_variable(name, value).map_err(|e| failed(&e))?;
        }
        match program.execute(&context) {
            Ok(CelValue::Bool(b)) => Ok(b),
            Ok(_) => Err(format!("matchCondition '{}' is not a bool", self.name)),
            Err(e) => Err(failed(&e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn holds(expression: &str, object: Value) -> Result<bool, String> {
        let request = json!({"operation": "CREATE", "userInfo": {"username": "ann"}});
        Condition::compile("c", expression).holds(&Variables {
            object: &object,
            old_object: &Value::Null,
            request: &request,
        })
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
        assert!(holds("1 + ", pod.clone()).is_err_and(|e| e.starts_with("compilation error")));
        assert_eq!(
            holds("'x'", pod.clone()),
            Err("matchCondition 'c' is not a bool".to_string())
        );
        assert!(
            holds("object.nothing.here", pod).is_err_and(
                |e| e.starts_with("expression 'object.nothing.here' resulted in error: ")
            )
        );
    }
}
