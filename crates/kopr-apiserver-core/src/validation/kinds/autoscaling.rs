//! Validation of autoscaling/v2 HorizontalPodAutoscalers (the stored form):
//! replica bounds, the scale target, metric sources and targets, and the
//! scaling behavior.

#[allow(unused_imports)]
use super::*;
use crate::quantity::Quantity;

const METRIC_TYPES: &[&str] = &[
    "ContainerResource",
    "External",
    "Object",
    "Pods",
    "Resource",
];
const SELECT_POLICIES: &[&str] = &["Disabled", "Max", "Min"];
const POLICY_TYPES: &[&str] = &["Percent", "Pods"];
const MAX_PERIOD_SECONDS: i64 = 1800;
const MAX_STABILIZATION_WINDOW_SECONDS: i64 = 3600;

/// `ValidateCrossVersionObjectReference`.
fn cross_version_ref(ck: &mut Checker, r: &Obj, path: &str) {
    for f in ["kind", "name"] {
        let v = ck.string(r, f, path);
        let p = child(path, f);
        if v.is_empty() {
            ck.push(FieldError::required(p, ""));
        } else {
            ck.extend(&p, v, names::is_valid_path_segment_name(v, false));
        }
    }
}

fn metric_identifier(ck: &mut Checker, src: &Obj, path: &str) {
    let mp = child(path, "metric");
    let metric = sub(ck, src, "metric", path);
    let name = ck.string(metric, "name", &mp);
    let np = child(&mp, "name");
    if name.is_empty() {
        ck.push(FieldError::required(np, "must specify a metric name"));
    } else {
        ck.extend(&np, name, names::is_valid_path_segment_name(name, false));
    }
}

/// What a metric target sets: `(value, averageValue, averageUtilization)`.
struct Target {
    value: bool,
    average_value: bool,
    utilization: bool,
}

fn positive_quantity(ck: &mut Checker, t: &Obj, k: &str, path: &str) -> bool {
    let Some(v) = t.get(k).filter(|v| !v.is_null()) else {
        return false;
    };
    if let Some(q) = Quantity::from_value(v)
        && q.sign() != 1
    {
        ck.push(FieldError::invalid(
            child(path, k),
            crate::validation::go_repr(q.go_struct(q.parse_cache())),
            "must be positive",
        ));
    }
    true
}

/// `validateMetricTarget`.
fn metric_target(ck: &mut Checker, src: &Obj, path: &str) -> Target {
    let tp = child(path, "target");
    let t = sub(ck, src, "target", path);
    let ty = ck.string(t, "type", &tp);
    if ty.is_empty() {
        ck.push(FieldError::required(
            child(&tp, "type"),
            "must specify a metric target type",
        ));
    }
    if !matches!(ty, "Utilization" | "Value" | "AverageValue") {
        ck.push(FieldError::invalid(
            child(&tp, "type"),
            ty,
            "must be either Utilization, Value, or AverageValue",
        ));
    }
    let value = positive_quantity(ck, t, "value", &tp);
    let average_value = positive_quantity(ck, t, "averageValue", &tp);
    let util = ck.i32(t, "averageUtilization", &tp);
    if let Some(u) = util
        && u < 1
    {
        ck.push(FieldError::invalid(
            child(&tp, "averageUtilization"),
            u,
            "must be greater than 0",
        ));
    }
    Target {
        value,
        average_value,
        utilization: util.is_some(),
    }
}

fn resource_target_rules(ck: &mut Checker, t: &Target, path: &str) {
    let tp = child(path, "target");
    if !t.utilization && !t.average_value {
        ck.push(FieldError::required(
            child(&tp, "averageUtilization"),
            "must set either a target raw value or a target utilization",
        ));
    }
    if t.utilization && t.average_value {
        ck.push(FieldError::forbidden(
            child(&tp, "averageValue"),
            "may not set both a target raw value and a target utilization",
        ));
    }
}

fn metric_source(ck: &mut Checker, kind: &str, src: &Obj, path: &str) {
    let tp = child(path, "target");
    match kind {
        "object" => {
            let d = sub(ck, src, "describedObject", path);
            cross_version_ref(ck, d, &child(path, "describedObject"));
            metric_identifier(ck, src, path);
            let t = metric_target(ck, src, path);
            if !t.value && !t.average_value {
                ck.push(FieldError::required(
                    child(&tp, "averageValue"),
                    "must set either a target value or averageValue",
                ));
            }
        }
        "external" => {
            metric_identifier(ck, src, path);
            let t = metric_target(ck, src, path);
            if !t.value && !t.average_value {
                ck.push(FieldError::required(
                    child(&tp, "averageValue"),
                    "must set either a target value for metric or a per-pod target",
                ));
            }
            if t.value && t.average_value {
                ck.push(FieldError::forbidden(
                    child(&tp, "value"),
                    "may not set both a target value for metric and a per-pod target",
                ));
            }
        }
        "pods" => {
            metric_identifier(ck, src, path);
            let t = metric_target(ck, src, path);
            if !t.average_value {
                ck.push(FieldError::required(
                    child(&tp, "averageValue"),
                    "must specify a positive target averageValue",
                ));
            }
        }
        "resource" => {
            if ck.string(src, "name", path).is_empty() {
                ck.push(FieldError::required(
                    child(path, "name"),
                    "must specify a resource name",
                ));
            }
            let t = metric_target(ck, src, path);
            resource_target_rules(ck, &t, path);
        }
        _ => {
            let name = ck.string(src, "name", path);
            if name.is_empty() {
                ck.push(FieldError::required(
                    child(path, "name"),
                    "must specify a resource name",
                ));
            } else {
                super::quota::validate_container_resource_name(ck, name, &child(path, "name"));
            }
            let c = ck.string(src, "container", path);
            if c.is_empty() {
                ck.push(FieldError::required(
                    child(path, "container"),
                    "must specify a container",
                ));
            } else {
                ck.extend(&child(path, "container"), c, names::is_dns1123_label(c));
            }
            let t = metric_target(ck, src, path);
            resource_target_rules(ck, &t, path);
        }
    }
}

/// `validateMetricSpec`; returns the metric's type.
fn metric_spec<'a>(ck: &mut Checker, m: &'a Obj, path: &str) -> &'a str {
    let ty = ck.string(m, "type", path);
    let tp = child(path, "type");
    if ty.is_empty() {
        ck.push(FieldError::required(
            &tp,
            "must specify a metric source type",
        ));
    }
    if !METRIC_TYPES.contains(&ty) {
        ck.push(FieldError::not_supported(&tp, ty, METRIC_TYPES));
    }
    let mut present: Vec<&str> = Vec::new();
    for k in [
        "object",
        "external",
        "pods",
        "resource",
        "containerResource",
    ] {
        if let Some(src) = ck.obj(m, k, path) {
            present.push(k);
            if present.len() == 1 {
                metric_source(ck, k, src, &child(path, k));
            }
        }
    }
    let expected = match ty {
        "Object" => "object",
        "Pods" => "pods",
        "Resource" => "resource",
        "External" => "external",
        "ContainerResource" => "containerResource",
        _ => {
            ck.push(FieldError::not_supported(&tp, ty, METRIC_TYPES));
            ""
        }
    };
    if !expected.is_empty() && !present.contains(&expected) {
        ck.push(FieldError::required(
            child(path, expected),
            "must populate information for the given metric source",
        ));
    }
    if present.len() != 1 {
        let mut others: Vec<&str> = present.into_iter().filter(|k| *k != expected).collect();
        others.sort_unstable();
        for k in others {
            ck.push(FieldError::forbidden(
                child(path, k),
                "must populate the given metric source only",
            ));
        }
    }
    ty
}

fn scaling_rules(ck: &mut Checker, rules: &Obj, path: &str) {
    if let Some(w) = ck.i32(rules, "stabilizationWindowSeconds", path) {
        let wp = child(path, "stabilizationWindowSeconds");
        if w < 0 {
            ck.push(FieldError::invalid(
                &wp,
                w,
                "must be greater than or equal to zero",
            ));
        }
        if w > MAX_STABILIZATION_WINDOW_SECONDS {
            ck.push(FieldError::invalid(
                &wp,
                w,
                format!("must be less than or equal to {MAX_STABILIZATION_WINDOW_SECONDS}"),
            ));
        }
    }
    if let Some(sp) = ck.str(rules, "selectPolicy", path)
        && !SELECT_POLICIES.contains(&sp)
    {
        ck.push(FieldError::not_supported(
            child(path, "selectPolicy"),
            sp,
            SELECT_POLICIES,
        ));
    }
    let pp = child(path, "policies");
    let policies = ck.obj_items(rules, "policies", path);
    if policies.is_empty() {
        ck.push(FieldError::required(
            &pp,
            "must specify at least one Policy",
        ));
    }
    for (i, p) in policies {
        let ip = index(&pp, i);
        let ty = ck.string(p, "type", &ip);
        if ty != "Pods" && ty != "Percent" {
            ck.push(FieldError::not_supported(
                child(&ip, "type"),
                ty,
                POLICY_TYPES,
            ));
        }
        let v = ck.i32(p, "value", &ip).unwrap_or(0);
        if v <= 0 {
            ck.push(FieldError::invalid(
                child(&ip, "value"),
                v,
                "must be greater than zero",
            ));
        }
        let period = ck.i32(p, "periodSeconds", &ip).unwrap_or(0);
        if period <= 0 {
            ck.push(FieldError::invalid(
                child(&ip, "periodSeconds"),
                period,
                "must be greater than zero",
            ));
        }
        if period > MAX_PERIOD_SECONDS {
            ck.push(FieldError::invalid(
                child(&ip, "periodSeconds"),
                period,
                format!("must be less than or equal to {MAX_PERIOD_SECONDS}"),
            ));
        }
    }
}

/// HorizontalPodAutoscaler (`ValidateHorizontalPodAutoscaler[Update]`, and
/// the status checks of `/status` writes).
pub(crate) fn horizontal_pod_autoscaler(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let old_min = old
        .and_then(|o| o.get("spec"))
        .and_then(|s| s.get("minReplicas"))
        .and_then(Value::as_i64);
    // The HPAScaleToZero gate is off in 1.32: 0 only when it already was.
    let lower = if old_min == Some(0) { 0 } else { 1 };
    let spec = sub(ck, root, "spec", "");
    let sp = "spec";
    let min = ck.i32(spec, "minReplicas", sp);
    if let Some(m) = min
        && m < lower
    {
        ck.push(FieldError::invalid(
            "spec.minReplicas",
            m,
            format!("must be greater than or equal to {lower}"),
        ));
    }
    let max = ck.i32(spec, "maxReplicas", sp).unwrap_or(0);
    if max < 1 {
        ck.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than 0",
        ));
    }
    if let Some(m) = min
        && max < m
    {
        ck.push(FieldError::invalid(
            "spec.maxReplicas",
            max,
            "must be greater than or equal to `minReplicas`",
        ));
    }
    let target = sub(ck, spec, "scaleTargetRef", sp);
    cross_version_ref(ck, target, "spec.scaleTargetRef");
    let mut scales_from_zero = false;
    for (i, m) in ck.obj_items(spec, "metrics", sp) {
        let ty = metric_spec(ck, m, &index("spec.metrics", i));
        scales_from_zero |= ty == "Object" || ty == "External";
    }
    if min == Some(0) && !scales_from_zero {
        ck.push(FieldError::forbidden(
            "spec.metrics",
            "must specify at least one Object or External metric to support scaling to zero replicas",
        ));
    }
    if let Some(b) = ck.obj(spec, "behavior", sp) {
        for k in ["scaleUp", "scaleDown"] {
            if let Some(r) = ck.obj(b, k, "spec.behavior") {
                scaling_rules(ck, r, &child("spec.behavior", k));
            }
        }
    }
    if old.is_some() {
        let status = sub(ck, root, "status", "");
        for f in ["currentReplicas", "desiredReplicas"] {
            nonneg_i32(ck, status, f, "status");
        }
    }
}
