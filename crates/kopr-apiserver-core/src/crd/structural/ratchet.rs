//! Validation ratcheting on update (kube's CRDValidationRatcheting, on by default since 1.30):
//! a schema error about a value the update did not change is dropped, so tightening a CRD's
//! schema does not block unrelated updates of objects stored under the old schema.

use serde_json::Value;

use crate::validation::{FieldError, FieldErrorKind};

/// One step of an error's field path.
#[derive(Debug, PartialEq)]
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

/// Splits a field path such as `spec.items[2].name` or `spec.labels[app]` into steps.
fn steps(path: &str) -> Option<Vec<Step<'_>>> {
    let mut out = Vec::new();
    for part in path.split('.') {
        let (name, mut rest) = match part.find('[') {
            Some(i) => (&part[..i], &part[i..]),
            None => (part, ""),
        };
        if !name.is_empty() {
            out.push(Step::Key(name));
        }
        while let Some(body) = rest.strip_prefix('[') {
            let end = body.find(']')?;
            let inner = &body[..end];
            out.push(match inner.parse::<usize>() {
                Ok(i) => Step::Index(i),
                Err(_) => Step::Key(inner),
            });
            rest = &body[end + 1..];
        }
    }
    Some(out)
}

fn resolve<'v>(value: &'v Value, path: &[Step<'_>]) -> Option<&'v Value> {
    path.iter().try_fold(value, |node, step| match step {
        Step::Key(k) => node.get(*k),
        Step::Index(i) => node.get(*i),
    })
}

/// Whether the update left the value an error is about unchanged: the value at the error's
/// path, or for a missing required field the object that should contain it.
fn unchanged(error: &FieldError, new: &Value, old: &Value) -> bool {
    let Some(mut path) = steps(&error.field) else {
        return false;
    };
    if path.is_empty() || error.field == "<nil>" {
        return false;
    }
    if error.kind == FieldErrorKind::Required {
        path.pop();
    }
    match (resolve(new, &path), resolve(old, &path)) {
        (Some(n), Some(o)) => n == o,
        _ => false,
    }
}

/// Drops the schema errors about values an update did not change.
pub fn ratchet(errors: &mut Vec<FieldError>, new: &Value, old: Option<&Value>) {
    if let Some(old) = old {
        errors.retain(|e| !unchanged(e, new, old));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn error(kind: FieldErrorKind, field: &str) -> FieldError {
        FieldError {
            kind,
            field: field.into(),
            bad_value: None,
            detail: String::new(),
        }
    }

    #[test]
    fn parses_paths() {
        assert_eq!(
            steps("spec.items[2].labels[app]").unwrap(),
            vec![
                Step::Key("spec"),
                Step::Key("items"),
                Step::Index(2),
                Step::Key("labels"),
                Step::Key("app")
            ]
        );
        assert!(steps("spec.x[1").is_none());
    }

    #[test]
    fn keeps_errors_about_changed_values_only() {
        let old = json!({"spec": {"name": "toolong", "items": [{"a": 1}], "other": 1}});
        let new = json!({"spec": {"name": "toolong", "items": [{"a": 2}], "other": 2}});
        let mut errors = vec![
            error(FieldErrorKind::TooLong, "spec.name"),
            error(FieldErrorKind::Invalid, "spec.items[0].a"),
            error(FieldErrorKind::Required, "spec.items[0].b"),
            error(FieldErrorKind::Required, "spec.missing"),
        ];
        ratchet(&mut errors, &new, Some(&old));
        let left: Vec<&str> = errors.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            left,
            vec!["spec.items[0].a", "spec.items[0].b", "spec.missing"]
        );
        let mut on_create = vec![error(FieldErrorKind::TooLong, "spec.name")];
        ratchet(&mut on_create, &new, None);
        assert_eq!(on_create.len(), 1);
    }
}
