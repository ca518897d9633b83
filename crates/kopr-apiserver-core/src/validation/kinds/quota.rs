//! Validation of core/v1 LimitRanges and ResourceQuotas, and kube's
//! resource-name rules they share (standard, quota, container and extended
//! resource names; integer-only resources).

#[allow(unused_imports)]
use super::*;
use crate::quantity::Quantity;
use std::cmp::Ordering;
use std::collections::BTreeMap;

const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

const INTEGER_RESOURCES: &[&str] = &[
    "pods",
    "resourcequotas",
    "services",
    "replicationcontrollers",
    "secrets",
    "configmaps",
    "persistentvolumeclaims",
    "services.nodeports",
    "services.loadbalancers",
];

const QUOTA_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
];

const POD_COMPUTE_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "limits.cpu",
    "limits.memory",
    "requests.cpu",
    "requests.memory",
];

fn is_hugepage(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_quota_hugepage(name: &str) -> bool {
    is_hugepage(name) || name.starts_with("requests.hugepages-")
}

/// `IsNativeResource`: unprefixed or in a `kubernetes.io/` namespace.
pub(super) fn is_native_resource(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// `IsExtendedResourceName`.
pub(super) fn is_extended_resource(name: &str) -> bool {
    !is_native_resource(name)
        && !name.starts_with("requests.")
        && names::is_qualified_name(&format!("requests.{name}")).is_empty()
}

/// `IsIntegerResourceName`.
pub(super) fn is_integer_resource(name: &str) -> bool {
    INTEGER_RESOURCES.contains(&name) || is_extended_resource(name)
}

/// `IsOvercommitAllowed`.
fn is_overcommit_allowed(name: &str) -> bool {
    is_native_resource(name) && !is_hugepage(name)
}

/// `validateResourceName`; returns whether the name is a qualified name.
pub(super) fn validate_resource_name(ck: &mut Checker, name: &str, path: &str) -> bool {
    let errs = names::is_qualified_name(name);
    if !errs.is_empty() {
        ck.extend(path, name, errs);
        return false;
    }
    if !name.contains('/') && !STANDARD_RESOURCES.contains(&name) && !is_quota_hugepage(name) {
        ck.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource type or fully qualified",
        ));
    }
    true
}

/// `validateContainerResourceName`.
pub(super) fn validate_container_resource_name(ck: &mut Checker, name: &str, path: &str) {
    validate_resource_name(ck, name, path);
    if !name.contains('/') {
        if !matches!(name, "cpu" | "memory" | "ephemeral-storage") && !is_hugepage(name) {
            ck.push(FieldError::invalid(
                path,
                name,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native_resource(name) && !is_extended_resource(name) {
        ck.push(FieldError::invalid(
            path,
            name,
            "doesn't follow extended resource name standard",
        ));
    }
}

fn validate_quota_resource_name(ck: &mut Checker, name: &str, path: &str) {
    validate_resource_name(ck, name, path);
    if !name.contains('/') && !STANDARD_QUOTA_RESOURCES.contains(&name) && !is_quota_hugepage(name)
    {
        ck.push(FieldError::invalid(
            path,
            name,
            "must be a standard resource for quota",
        ));
    }
}

/// A resource list's quantities as kube holds them after defaulting
/// (rounded up to milli precision); unparsable values are left out (kube's
/// decoder rejects them before validation).
pub(super) fn resource_list<'a>(
    ck: &mut Checker,
    o: &'a Obj,
    k: &str,
    path: &str,
) -> Vec<(&'a str, Quantity)> {
    let mut out = Vec::new();
    if let Some(m) = ck.obj(o, k, path) {
        for (name, v) in m {
            if let Some(mut q) = Quantity::from_value(v) {
                q.round_up_milli();
                out.push((name.as_str(), q));
            }
        }
    }
    out
}

/// `ValidateResourceQuantityValue`: not negative, and whole for integer
/// resources.
pub(super) fn validate_quantity_value(ck: &mut Checker, name: &str, q: &Quantity, path: &str) {
    if q.sign() < 0 {
        ck.push(FieldError::invalid(
            path,
            q.canonical(),
            "must be greater than or equal to 0",
        ));
    }
    if is_integer_resource(name) && q.milli_value() % 1000 != 0 {
        ck.push(FieldError::invalid(
            path,
            crate::validation::go_repr(q.go_struct(q.parse_cache())),
            "must be an integer",
        ));
    }
}

// -------------------------------------------------------------- LimitRange

fn validate_limit_type(ck: &mut Checker, ty: &str, path: &str) {
    let errs = names::is_qualified_name(ty);
    if !errs.is_empty() {
        ck.extend(path, ty, errs);
        return;
    }
    if !ty.contains('/') && !matches!(ty, "Pod" | "Container" | "PersistentVolumeClaim") {
        ck.push(FieldError::invalid(
            path,
            ty,
            "must be a standard limit type or fully qualified",
        ));
    }
}

fn limit_resource_name(ck: &mut Checker, ty: &str, name: &str, path: &str) {
    if ty == "Pod" || ty == "Container" {
        validate_container_resource_name(ck, name, path);
    } else {
        validate_resource_name(ck, name, path);
    }
}

/// A quantity as a LimitRange message shows it: the struct with its
/// canonical string cached (kube calls `String()` on it first).
fn shown(q: &Quantity) -> Value {
    crate::validation::go_repr(q.go_struct(&q.canonical()))
}

/// Go's `%f`.
fn go_float6(f: f64) -> String {
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f.is_nan() {
        return "NaN".into();
    }
    format!("{f:.6}")
}

/// One item of `spec.limits` (`ValidateLimitRange`'s loop body).
fn limit_item(ck: &mut Checker, item: &Obj, ip: &str, seen_types: &mut BTreeSet<String>) {
    let ty = ck.string(item, "type", ip);
    let tp = child(ip, "type");
    validate_limit_type(ck, ty, &tp);
    if !seen_types.insert(ty.to_string()) {
        ck.push(FieldError::duplicate(&tp, ty));
    }
    let lists = LimitLists::read(ck, item, ip, ty);
    for k in &lists.names {
        let bounds = LimitBounds::of(&lists, k);
        bounds.check_order(ck, ip, k);
        bounds.check_ratio(ck, ip, k);
        bounds.check_overcommit(ck, ip, k);
    }
}

/// The resource lists of a LimitRange item by field, and the resource names
/// they mention in first-seen order.
#[derive(Default)]
struct LimitLists<'a> {
    names: Vec<&'a str>,
    lists: BTreeMap<&'static str, Vec<(&'a str, Quantity)>>,
}

impl<'a> LimitLists<'a> {
    /// Reads the item's lists, with the checks of the fields its type allows
    /// or requires.
    fn read(ck: &mut Checker, item: &'a Obj, ip: &str, ty: &str) -> Self {
        let mut l = LimitLists::default();
        l.take(ck, item, ip, ty, "max");
        l.take(ck, item, ip, ty, "min");
        if ty == "Pod" {
            for f in ["default", "defaultRequest"] {
                if item
                    .get(f)
                    .and_then(Value::as_object)
                    .is_some_and(|m| !m.is_empty())
                {
                    ck.push(FieldError::forbidden(
                        child(ip, f),
                        "may not be specified when `type` is 'Pod'",
                    ));
                }
            }
        } else {
            l.take(ck, item, ip, ty, "default");
            l.take(ck, item, ip, ty, "defaultRequest");
        }
        if ty == "PersistentVolumeClaim" {
            let has = |f: &str| {
                item.get(f)
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.contains_key("storage"))
            };
            if !has("min") && !has("max") {
                ck.push(FieldError::required(
                    child(ip, "limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                ));
            }
        }
        l.take(ck, item, ip, ty, "maxLimitRequestRatio");
        l
    }

    /// Reads one list, checking its resource names.
    fn take(&mut self, ck: &mut Checker, item: &'a Obj, ip: &str, ty: &str, field: &'static str) {
        let list = resource_list(ck, item, field, ip);
        for (k, _) in &list {
            limit_resource_name(ck, ty, k, &key(&child(ip, field), k));
            if !self.names.contains(k) {
                self.names.push(k);
            }
        }
        self.lists.insert(field, list);
    }

    /// The quantity of resource `k` in list `field`.
    fn get(&self, field: &str, k: &str) -> Option<Quantity> {
        self.lists
            .get(field)
            .and_then(|l| l.iter().find(|(n, _)| *n == k))
            .map(|(_, q)| q.clone())
    }
}

/// Which bound of an order rule its error shows as the value.
#[derive(Clone, Copy, PartialEq)]
enum Shown {
    Low,
    High,
}

/// What a LimitRange item says of one resource.
struct LimitBounds {
    min: Option<Quantity>,
    max: Option<Quantity>,
    def: Option<Quantity>,
    def_req: Option<Quantity>,
    ratio: Option<Quantity>,
}

/// Whether `a` is greater than `b`.
fn gt(a: &Quantity, b: &Quantity) -> bool {
    a.cmp_value(b) == Ordering::Greater
}

impl LimitBounds {
    /// Resource `k`'s entries in the item's lists.
    fn of(lists: &LimitLists<'_>, k: &str) -> Self {
        LimitBounds {
            min: lists.get("min", k),
            max: lists.get("max", k),
            def: lists.get("default", k),
            def_req: lists.get("defaultRequest", k),
            ratio: lists.get("maxLimitRequestRatio", k),
        }
    }

    /// min <= defaultRequest <= default <= max and min <= default, as far as they are given:
    /// kube's checks in its order, each naming the field it faults and the value it shows.
    fn check_order(&self, ck: &mut Checker, ip: &str, k: &str) {
        fn named<'q>(
            name: &'static str,
            q: &'q Option<Quantity>,
        ) -> Option<(&'static str, &'q Quantity)> {
            q.as_ref().map(|q| (name, q))
        }
        let (min, max) = (named("min", &self.min), named("max", &self.max));
        let def_req = named("default request", &self.def_req);
        let (def, def_limit) = (
            named("default", &self.def),
            named("default limit", &self.def),
        );
        let rules = [
            ("min", min, max, Shown::Low),
            ("defaultRequest", min, def_req, Shown::High),
            ("defaultRequest", def_req, max, Shown::Low),
            ("defaultRequest", def_req, def_limit, Shown::Low),
            ("default", min, def, Shown::Low),
            ("default", def, max, Shown::High),
        ];
        for (field, low, high, which) in rules {
            let (Some((low_name, lo)), Some((high_name, hi))) = (low, high) else {
                continue;
            };
            if gt(lo, hi) {
                ck.push(FieldError::invalid(
                    key(&child(ip, field), k),
                    shown(if which == Shown::Low { lo } else { hi }),
                    format!(
                        "{low_name} value {} is greater than {high_name} value {}",
                        lo.canonical(),
                        hi.canonical()
                    ),
                ));
            }
        }
    }

    /// `maxLimitRequestRatio` is at least 1 and at most max/min.
    fn check_ratio(&self, ck: &mut Checker, ip: &str, k: &str) {
        let Some(r) = &self.ratio else { return };
        let at = key(&child(ip, "maxLimitRequestRatio"), k);
        if r.nano < 1_000_000_000 {
            ck.push(FieldError::invalid(
                at.clone(),
                shown(r),
                format!("ratio {} is less than 1", r.canonical()),
            ));
        }
        if let (Some(mn), Some(mx)) = (&self.min, &self.max) {
            const MAX_MILLI: i128 = (i64::MAX / 1000) as i128;
            let (mut rv, mut lo, mut hi) = (r.value() as f64, mn.value(), mx.value());
            if r.value() < MAX_MILLI && lo < MAX_MILLI && hi < MAX_MILLI {
                rv = r.milli_value() as f64 / 1000.0;
                lo = mn.milli_value();
                hi = mx.milli_value();
            }
            let limit = hi as f64 / lo as f64;
            if rv > limit {
                ck.push(FieldError::invalid(
                    at,
                    shown(r),
                    format!(
                        "ratio {} is greater than max/min = {}",
                        r.canonical(),
                        go_float6(limit)
                    ),
                ));
            }
        }
    }

    /// Resources that may not be overcommitted need default == defaultRequest.
    fn check_overcommit(&self, ck: &mut Checker, ip: &str, k: &str) {
        if !is_overcommit_allowed(k)
            && let (Some(d), Some(dr)) = (&self.def, &self.def_req)
            && d.cmp_value(dr) != Ordering::Equal
        {
            ck.push(FieldError::invalid(
                key(&child(ip, "defaultRequest"), k),
                shown(dr),
                format!(
                    "default value {} must equal to defaultRequest value {} in {k}",
                    d.canonical(),
                    dr.canonical()
                ),
            ));
        }
    }
}

/// LimitRange (`ValidateLimitRange`; updates run the same checks).
pub(crate) fn limit_range(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    if let Some(o) = old {
        validate_object_meta_update(ck, root, o);
        finalizer_check(ck, root);
    }
    validate_object_meta(ck, root, true, names::name_is_dns_subdomain, true);
    let spec = sub(ck, root, "spec", "");
    let mut seen = BTreeSet::new();
    for (i, item) in ck.obj_items(spec, "limits", "spec") {
        limit_item(ck, item, &index("spec.limits", i), &mut seen);
    }
}

// ----------------------------------------------------------- ResourceQuota

fn scope_valid_for(scope: &str, resource: &str) -> bool {
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => {
            resource == "pods" || POD_COMPUTE_RESOURCES.contains(&resource)
        }
        "BestEffort" => resource == "pods",
        _ => true,
    }
}

fn is_standard_quota_name(name: &str) -> bool {
    STANDARD_QUOTA_RESOURCES.contains(&name) || is_quota_hugepage(name)
}

fn string_list_repr(ty: &str, items: &[&str]) -> Value {
    if items.is_empty() {
        return go_repr(format!("[]{ty}(nil)"));
    }
    let q: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    go_repr(format!("[]{ty}{{{}}}", q.join(", ")))
}

fn scope_selector_repr(reqs: &[(&str, &str, Option<Vec<&str>>)]) -> Value {
    let items: Vec<String> = reqs
        .iter()
        .map(|(name, op, values)| {
            let v = match values {
                None => "[]string(nil)".to_string(),
                Some(vs) => {
                    let q: Vec<String> = vs.iter().map(|s| go_quote(s)).collect();
                    format!("[]string{{{}}}", q.join(", "))
                }
            };
            format!(
                "core.ScopedResourceSelectorRequirement{{ScopeName:{}, Operator:{}, Values:{v}}}",
                go_quote(name),
                go_quote(op)
            )
        })
        .collect();
    let list = if reqs.is_empty() {
        "[]core.ScopedResourceSelectorRequirement(nil)".to_string()
    } else {
        format!(
            "[]core.ScopedResourceSelectorRequirement{{{}}}",
            items.join(", ")
        )
    };
    go_repr(format!("core.ScopeSelector{{MatchExpressions:{list}}}"))
}

const CONFLICTING_SCOPES: &[(&str, &str)] = &[
    ("BestEffort", "NotBestEffort"),
    ("Terminating", "NotTerminating"),
];

fn quota_scopes(ck: &mut Checker, hard: &[&str], scopes: &[&str]) {
    if scopes.is_empty() {
        return;
    }
    let p = "spec.scopes";
    let repr = string_list_repr("core.ResourceQuotaScope", scopes);
    let mut sorted: Vec<&str> = hard.to_vec();
    sorted.sort_unstable();
    for scope in scopes {
        if !QUOTA_SCOPES.contains(scope) {
            ck.push(FieldError::invalid(p, repr.clone(), "unsupported scope"));
        }
        for k in &sorted {
            if is_standard_quota_name(k) && !scope_valid_for(scope, k) {
                ck.push(FieldError::invalid(
                    p,
                    repr.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
    }
    for (a, b) in CONFLICTING_SCOPES {
        if scopes.contains(a) && scopes.contains(b) {
            ck.push(FieldError::invalid(p, repr.clone(), "conflicting scopes"));
        }
    }
}

fn scope_selector(ck: &mut Checker, spec: &Obj, hard: &[&str], scopes: &[&str]) {
    let Some(sel) = ck.obj(spec, "scopeSelector", "spec") else {
        return;
    };
    let p = "spec.scopeSelector.matchExpressions";
    let mut reqs = Vec::new();
    for (_, r) in ck.obj_items(sel, "matchExpressions", "spec.scopeSelector") {
        let name = ck.string(r, "scopeName", p);
        let op = ck.string(r, "operator", p);
        let values = r
            .get("values")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>());
        reqs.push((name, op, values));
    }
    let sel_repr = scope_selector_repr(&reqs);
    let mut sorted: Vec<&str> = hard.to_vec();
    sorted.sort_unstable();
    let mut seen: Vec<&str> = Vec::new();
    for (name, op, values) in &reqs {
        if !QUOTA_SCOPES.contains(name) {
            ck.push(FieldError::invalid(
                child(p, "scopeName"),
                *name,
                "unsupported scope",
            ));
        }
        for k in &sorted {
            if is_standard_quota_name(k) && !scope_valid_for(name, k) {
                ck.push(FieldError::invalid(
                    p,
                    sel_repr.clone(),
                    "unsupported scope applied to resource",
                ));
            }
        }
        if matches!(
            *name,
            "BestEffort"
                | "NotBestEffort"
                | "Terminating"
                | "NotTerminating"
                | "CrossNamespacePodAffinity"
        ) && *op != "Exists"
        {
            ck.push(FieldError::invalid(
                child(p, "operator"),
                *op,
                "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity",
            ));
        }
        let n_values = values.as_ref().map_or(0, Vec::len);
        match *op {
            "In" | "NotIn" if n_values == 0 => ck.push(FieldError::required(
                child(p, "values"),
                "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
            )),
            "In" | "NotIn" => {}
            "Exists" | "DoesNotExist" if n_values != 0 => ck.push(FieldError::invalid(
                child(p, "values"),
                Value::Array(
                    values
                        .iter()
                        .flatten()
                        .map(|s| Value::String((*s).into()))
                        .collect(),
                ),
                "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
            )),
            "Exists" | "DoesNotExist" => {}
            other => ck.push(FieldError::invalid(
                child(p, "operator"),
                other,
                "not a valid selector operator",
            )),
        }
        seen.push(name);
    }
    for (a, b) in CONFLICTING_SCOPES {
        if seen.contains(a) && seen.contains(b) {
            ck.push(FieldError::invalid(
                p,
                string_list_repr("core.ResourceQuotaScope", scopes),
                "conflicting scopes",
            ));
        }
    }
}

fn quota_resources(ck: &mut Checker, o: &Obj, k: &str, path: &str) -> Vec<String> {
    let mut names = Vec::new();
    let p = child(path, k);
    for (name, q) in resource_list(ck, o, k, path) {
        let rp = key(&p, name);
        validate_quota_resource_name(ck, name, &rp);
        validate_quantity_value(ck, name, &q, &rp);
        names.push(name.to_string());
    }
    names
}

/// ResourceQuota (`ValidateResourceQuota[Update]`, and the status checks of
/// `/status` writes).
pub(crate) fn resource_quota(ck: &mut Checker, root: &Obj, old: Option<&Obj>) {
    meta_for(ck, root, old, true, names::name_is_dns_subdomain, false);
    if old.is_some() {
        finalizer_check(ck, root);
    }
    let spec = sub(ck, root, "spec", "");
    let hard_names = quota_resources(ck, spec, "hard", "spec");
    let hard: Vec<&str> = hard_names.iter().map(String::as_str).collect();
    let scopes = ck.str_list(spec, "scopes", "spec");
    quota_scopes(ck, &hard, &scopes);
    scope_selector(ck, spec, &hard, &scopes);
    if old.is_none() {
        return;
    }
    let mut scratch = Checker::default();
    let old_scopes: BTreeSet<&str> = old
        .and_then(|o| o.get("spec"))
        .and_then(Value::as_object)
        .map(|s| scratch.str_list(s, "scopes", "spec").into_iter().collect())
        .unwrap_or_default();
    let new_scopes: BTreeSet<&str> = scopes.iter().copied().collect();
    if old_scopes != new_scopes {
        ck.push(FieldError::invalid(
            "spec.scopes",
            string_list_repr("core.ResourceQuotaScope", &scopes),
            FIELD_IMMUTABLE,
        ));
    }
    let status = sub(ck, root, "status", "");
    quota_resources(ck, status, "hard", "status");
    quota_resources(ck, status, "used", "status");
}
