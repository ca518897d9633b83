//! Validation of the scheduling-related cluster kinds of kube-apiserver
//! 1.32: scheduling.k8s.io/v1 PriorityClass (reserved `system-` names, the
//! user value ceiling, immutable value and preemptionPolicy) and
//! node.k8s.io/v1 RuntimeClass.

use super::meta_shapes::{OnUpdate, core_meta, generic_meta, same_value};
#[allow(unused_imports)]
use super::*;

/// `scheduling.HighestUserDefinablePriority`.
const HIGHEST_USER_DEFINABLE_PRIORITY: i64 = 1_000_000_000;
/// `scheduling.SystemCriticalPriority`.
const SYSTEM_CRITICAL_PRIORITY: i64 = 2 * HIGHEST_USER_DEFINABLE_PRIORITY;
const SYSTEM_PREFIX: &str = "system-";

/// Why a `system-` PriorityClass is not one kube knows; the messages are kube's reasons.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SystemClassError<'a> {
    /// Not one of the system classes.
    #[error("{0} is not a known system priority class")]
    Unknown(&'a str),
    /// A system class with another value than its own.
    #[error("value of {name} PriorityClass must be {expected}")]
    Value { name: &'a str, expected: i64 },
    /// A system class that is the global default.
    #[error("globalDefault of {0} PriorityClass must be false")]
    GlobalDefault(&'a str),
}

/// `IsKnownSystemPriorityClass`.
fn known_system_class(
    name: &str,
    value: i64,
    global_default: bool,
) -> Result<(), SystemClassError<'_>> {
    let expected = match name {
        "system-node-critical" => SYSTEM_CRITICAL_PRIORITY + 1000,
        "system-cluster-critical" => SYSTEM_CRITICAL_PRIORITY,
        _ => return Err(SystemClassError::Unknown(name)),
    };
    if value != expected {
        return Err(SystemClassError::Value { name, expected });
    }
    if global_default {
        return Err(SystemClassError::GlobalDefault(name));
    }
    Ok(())
}

fn preemption_policy(ck: &mut Checker, root: &Obj) {
    match ck.str(root, "preemptionPolicy", "") {
        None | Some("PreemptLowerPriority" | "Never") => {}
        Some("") => ck.push(FieldError::required("preemptionPolicy", "")),
        Some(other) => ck.push(FieldError::not_supported(
            "preemptionPolicy",
            other,
            &["PreemptLowerPriority", "Never"],
        )),
    }
}

/// scheduling.k8s.io/v1 PriorityClass.
pub(crate) fn priority_class(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    core_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::UpdateOnly,
    );
    let value = ck.i32(root, "value", "").unwrap_or(0);
    if let Some(o) = old {
        let prev = o.get("value").and_then(Value::as_i64).unwrap_or(0);
        if prev != value {
            ck.push(FieldError::forbidden(
                "value",
                "may not be changed in an update.",
            ));
        }
        if !same_value(root.get("preemptionPolicy"), o.get("preemptionPolicy")) {
            let v = match root.get("preemptionPolicy") {
                Some(Value::String(s)) => Value::String(s.clone()),
                _ => Value::String("null".into()),
            };
            ck.push(FieldError::invalid("preemptionPolicy", v, FIELD_IMMUTABLE));
        }
        return;
    }
    let name = root
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let global_default = ck.bool(root, "globalDefault", "").unwrap_or(false);
    if name.starts_with(SYSTEM_PREFIX) {
        if let Err(reason) = known_system_class(name, value, global_default) {
            ck.push(FieldError::forbidden(
                "metadata.name",
                format!(
                    "priority class names with '{SYSTEM_PREFIX}' prefix are reserved for system use only. error: {reason}"
                ),
            ));
        }
    } else if value > HIGHEST_USER_DEFINABLE_PRIORITY {
        ck.push(FieldError::forbidden(
            "value",
            format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    preemption_policy(ck, root);
}

// ------------------------------------------------------------ runtimeclass

/// `overhead.podFixed`, checked as container resource limits.
fn overhead(ck: &mut Checker, o: &Obj) {
    let lp = "overhead.limits";
    let Some(fixed) = ck.obj(o, "podFixed", "overhead") else {
        return;
    };
    for (name, v) in fixed {
        let fp = key(lp, name);
        let qs = match v {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                ck.push(FieldError::type_invalid(
                    key("overhead.podFixed", name),
                    other.clone(),
                    "quantity",
                ));
                continue;
            }
        };
        let name_errs = names::is_qualified_name(name);
        if !name_errs.is_empty() {
            ck.extend(&fp, name, name_errs);
        } else if !name.contains('/')
            && !matches!(name.as_str(), "cpu" | "memory" | "ephemeral-storage")
            && !name.starts_with("hugepages-")
        {
            ck.push(FieldError::invalid(
                &fp,
                name.as_str(),
                "must be a standard resource for containers",
            ));
        }
        match pod::parse_quantity(&qs) {
            Some(q) if q < 0.0 => ck.push(FieldError::invalid(
                &fp,
                qs.as_str(),
                "must be greater than or equal to 0",
            )),
            Some(_) => {}
            None => ck.push(FieldError::type_invalid(
                key("overhead.podFixed", name),
                v.clone(),
                "quantity",
            )),
        }
    }
}

/// node.k8s.io/v1 RuntimeClass.
pub(crate) fn runtime_class(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    generic_meta(
        ck,
        root,
        old,
        false,
        names::name_is_dns_subdomain,
        OnUpdate::Revalidate,
    );
    let handler = ck.string(root, "handler", "");
    ck.extend("handler", handler, names::name_is_dns_label(handler, false));
    if let Some(o) = ck.obj(root, "overhead", "") {
        overhead(ck, o);
    }
    if let Some(s) = ck.obj(root, "scheduling", "") {
        let sel = ck.str_map(s, "nodeSelector", "scheduling");
        validate_labels(ck, &sel, "scheduling.nodeSelector");
        super::pod::validate_tolerations(ck, s, "scheduling");
    }
    if let Some(o) = old {
        let prev = o.get("handler").and_then(Value::as_str).unwrap_or("");
        if prev != handler {
            ck.push(FieldError::invalid("handler", handler, FIELD_IMMUTABLE));
        }
    }
}
