//! Validation of policy/v1 PodDisruptionBudgets, and the int-or-percent
//! checks (with Go's `%#v` of `intstr.IntOrString` in the messages) they
//! share with DaemonSet rolling updates.

#[allow(unused_imports)]
use super::*;

/// An `intstr.IntOrString` value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum IntOrStr<'a> {
    /// `Type: 0`.
    Int(i64),
    /// `Type: 1`.
    Str(&'a str),
}

impl IntOrStr<'_> {
    /// Go's `%#v` of the struct.
    pub(super) fn repr(&self) -> Value {
        match self {
            IntOrStr::Int(i) => go_repr(format!(
                "intstr.IntOrString{{Type:0, IntVal:{i}, StrVal:\"\"}}"
            )),
            IntOrStr::Str(s) => go_repr(format!(
                "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
                go_quote(s)
            )),
        }
    }

    /// The percentage, when this is a valid percent string.
    fn percent(&self) -> Option<i64> {
        match self {
            IntOrStr::Str(s) if names::is_valid_percent(s).is_empty() => {
                Some(s.trim_end_matches('%').parse().unwrap_or(i64::MAX))
            }
            _ => None,
        }
    }

    /// kube's `getIntOrPercentValue`.
    pub(super) fn value(&self) -> i64 {
        if let Some(p) = self.percent() {
            return p;
        }
        match self {
            IntOrStr::Int(i) => *i,
            IntOrStr::Str(s) => s.parse().unwrap_or(0),
        }
    }
}

/// Reads an int-or-string field; other JSON types are reported.
pub(super) fn int_or_str<'a>(
    ck: &mut Checker,
    o: &'a Obj,
    k: &str,
    path: &str,
) -> Option<IntOrStr<'a>> {
    match o.get(k) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(IntOrStr::Str(s)),
        Some(Value::Number(n)) if n.as_i64().is_some_and(|i| i32::try_from(i).is_ok()) => {
            Some(IntOrStr::Int(n.as_i64().unwrap_or(0)))
        }
        Some(other) => {
            ck.push(FieldError::type_invalid(
                child(path, k),
                other.clone(),
                "int or string",
            ));
            None
        }
    }
}

/// kube's `ValidatePositiveIntOrPercent`.
pub(super) fn positive_int_or_percent(ck: &mut Checker, v: IntOrStr<'_>, path: &str) {
    match v {
        IntOrStr::Str(s) => {
            for m in names::is_valid_percent(s) {
                ck.push(FieldError::invalid(path, v.repr(), m));
            }
        }
        IntOrStr::Int(i) if i < 0 => ck.push(FieldError::invalid(
            path,
            i,
            "must be greater than or equal to 0",
        )),
        IntOrStr::Int(_) => {}
    }
}

/// kube's `IsNotMoreThan100Percent`.
pub(super) fn not_more_than_100_percent(ck: &mut Checker, v: IntOrStr<'_>, path: &str) {
    if v.percent().is_some_and(|p| p > 100) {
        ck.push(FieldError::invalid(
            path,
            v.repr(),
            "must not be greater than 100%",
        ));
    }
}

fn ptr_repr(present: bool, ty: &str) -> String {
    if present {
        format!("(*{ty})(0xc000000000)")
    } else {
        format!("(*{ty})(nil)")
    }
}

const EVICTION_POLICIES: &[&str] = &["AlwaysAllow", "IfHealthyBudget"];

/// PodDisruptionBudget (kube validates only the spec; the name is checked as
/// a path segment by the generic create/update checks).
pub(crate) fn pod_disruption_budget(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let min = int_or_str(ck, spec, "minAvailable", sp);
    let max = int_or_str(ck, spec, "maxUnavailable", sp);
    let sel = ck.obj(spec, "selector", sp);
    let policy = ck.str(spec, "unhealthyPodEvictionPolicy", sp);
    if min.is_some() && max.is_some() {
        let repr = format!(
            "policy.PodDisruptionBudgetSpec{{MinAvailable:{}, Selector:{}, MaxUnavailable:{}, UnhealthyPodEvictionPolicy:{}}}",
            ptr_repr(true, "intstr.IntOrString"),
            ptr_repr(sel.is_some(), "v1.LabelSelector"),
            ptr_repr(true, "intstr.IntOrString"),
            ptr_repr(policy.is_some(), "policy.UnhealthyPodEvictionPolicyType"),
        );
        ck.push(FieldError::invalid(
            sp,
            go_repr(repr),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (k, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if let Some(v) = v {
            let p = child(sp, k);
            positive_int_or_percent(ck, v, &p);
            not_more_than_100_percent(ck, v, &p);
        }
    }
    if let Some(s) = sel {
        validate_label_selector(ck, s, "spec.selector");
    }
    if let Some(p) = policy
        && !EVICTION_POLICIES.contains(&p)
    {
        ck.push(FieldError::not_supported(
            "spec.unhealthyPodEvictionPolicy",
            p,
            EVICTION_POLICIES,
        ));
    }
    if old.is_some() {
        // What a status write is checked for (the main resource keeps the
        // old status, so this only bites on /status).
        let status = sub(ck, root, "status", "");
        for f in [
            "disruptionsAllowed",
            "currentHealthy",
            "desiredHealthy",
            "expectedPods",
        ] {
            nonneg_i32(ck, status, f, "status");
        }
    }
}
