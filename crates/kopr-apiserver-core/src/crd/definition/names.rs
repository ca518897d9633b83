//! CRD names: `ValidateCustomResourceDefinitionNames`, the group and
//! `metadata.name` rules, the API-approval annotation for protected groups,
//! and the status the naming, establishing and API-approval controllers
//! write (`NamingConditionController`, `EstablishingController`,
//! `KubernetesAPIApprovalPolicyConformantConditionController`).

use crate::validation::names::{is_dns1035_label, is_dns1123_subdomain, name_is_dns_subdomain};
use crate::validation::{FieldError, child, index, key};
use serde_json::{Map, Value, json};

/// The annotation that protected groups must carry.
pub const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// A `CustomResourceDefinitionNames` read from JSON (missing or mistyped
/// fields read as empty).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Names {
    /// `plural`.
    pub plural: String,
    /// `singular`.
    pub singular: String,
    /// `shortNames`.
    pub short_names: Vec<String>,
    /// `kind`.
    pub kind: String,
    /// `listKind`.
    pub list_kind: String,
    /// `categories`.
    pub categories: Vec<String>,
}

fn s(v: Option<&Value>) -> String {
    v.and_then(Value::as_str).unwrap_or("").to_string()
}

fn list(v: Option<&Value>) -> Vec<String> {
    v.map(crate::object::string_list).unwrap_or_default()
}

impl Names {
    /// Reads names from a JSON object (`spec.names` / `status.acceptedNames`).
    pub fn from_json(v: Option<&Value>) -> Names {
        let g = |k: &str| v.and_then(|o| o.get(k));
        Names {
            plural: s(g("plural")),
            singular: s(g("singular")),
            short_names: list(g("shortNames")),
            kind: s(g("kind")),
            list_kind: s(g("listKind")),
            categories: list(g("categories")),
        }
    }

    /// Renders as the v1 JSON form (empty optional fields omitted; `plural`
    /// and `kind` are always present).
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("plural".into(), Value::from(self.plural.clone()));
        if !self.singular.is_empty() {
            m.insert("singular".into(), Value::from(self.singular.clone()));
        }
        if !self.short_names.is_empty() {
            m.insert("shortNames".into(), json!(self.short_names));
        }
        m.insert("kind".into(), Value::from(self.kind.clone()));
        if !self.list_kind.is_empty() {
            m.insert("listKind".into(), Value::from(self.list_kind.clone()));
        }
        if !self.categories.is_empty() {
            m.insert("categories".into(), json!(self.categories));
        }
        Value::Object(m)
    }
}

/// `ValidateCustomResourceDefinitionNames` at `path`.
pub fn validate_names(n: &Names, path: &str, errs: &mut Vec<FieldError>) {
    let dns = |v: &str| is_dns1035_label(v).join(",");
    if !n.plural.is_empty() && !is_dns1035_label(&n.plural).is_empty() {
        errs.push(FieldError::invalid(
            child(path, "plural"),
            n.plural.as_str(),
            dns(&n.plural),
        ));
    }
    if !n.singular.is_empty() && !is_dns1035_label(&n.singular).is_empty() {
        errs.push(FieldError::invalid(
            child(path, "singular"),
            n.singular.as_str(),
            dns(&n.singular),
        ));
    }
    for (f, v) in [("kind", &n.kind), ("listKind", &n.list_kind)] {
        let lower = v.to_lowercase();
        if !v.is_empty() && !is_dns1035_label(&lower).is_empty() {
            errs.push(FieldError::invalid(
                child(path, f),
                v.as_str(),
                format!(
                    "may have mixed case, but should otherwise match: {}",
                    dns(&lower)
                ),
            ));
        }
    }
    for (i, sn) in n.short_names.iter().enumerate() {
        if !is_dns1035_label(sn).is_empty() {
            errs.push(FieldError::invalid(
                index(&child(path, "shortNames"), i),
                sn.as_str(),
                dns(sn),
            ));
        }
    }
    if !n.kind.is_empty() && n.kind == n.list_kind {
        errs.push(FieldError::invalid(
            child(path, "listKind"),
            n.list_kind.as_str(),
            "kind and listKind may not be the same",
        ));
    }
    for (i, c) in n.categories.iter().enumerate() {
        if !is_dns1035_label(c).is_empty() {
            errs.push(FieldError::invalid(
                index(&child(path, "categories"), i),
                c.as_str(),
                dns(c),
            ));
        }
    }
}

/// `spec.group`: required, a DNS-1123 subdomain, with at least one dot.
pub fn validate_group(group: &str, errs: &mut Vec<FieldError>) {
    if group.is_empty() {
        errs.push(FieldError::required("spec.group", ""));
        return;
    }
    let e = is_dns1123_subdomain(group);
    if !e.is_empty() {
        errs.push(FieldError::invalid("spec.group", group, e.join(",")));
    } else if group.split('.').count() < 2 {
        errs.push(FieldError::invalid(
            "spec.group",
            group,
            "should be a domain with at least one dot",
        ));
    }
}

/// The CRD name validator: a DNS subdomain equal to `<plural>.<group>`
/// (applied to `generateName` too, as kube does).
pub fn crd_name_errors(name: &str, prefix: bool, plural: &str, group: &str) -> Vec<String> {
    let mut out = name_is_dns_subdomain(name, prefix);
    if name != format!("{plural}.{group}") {
        out.push("must be spec.names.plural+\".\"+spec.group".to_string());
    }
    out
}

/// `apihelpers.IsProtectedCommunityGroup`.
pub fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// `APIApprovalState`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// A URL is given.
    Approved,
    /// `unapproved...`.
    Bypassed,
    /// Neither a URL nor `unapproved...`.
    Invalid,
    /// No annotation.
    Missing,
}

/// Minimal `url.ParseRequestURI` success with a scheme and a host.
fn is_absolute_url(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let mut cs = scheme.chars();
    let scheme_ok = cs.next().is_some_and(|c| c.is_ascii_alphabetic())
        && cs.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit('@').next().unwrap_or("");
    scheme_ok && !host.is_empty() && !s.contains([' ', '\n', '\t', '\r'])
}

/// `apihelpers.GetAPIApprovalState`: the state and its reason message.
pub fn approval_state(annotation: Option<&str>) -> (Approval, String) {
    let a = annotation.unwrap_or("");
    if a.is_empty() {
        (
            Approval::Missing,
            format!(
                "protected groups must have approval annotation \"{API_APPROVED_ANNOTATION}\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    } else if a.starts_with("unapproved") {
        (
            Approval::Bypassed,
            format!("not approved: {}", crate::validation::go_quote(a)),
        )
    } else if is_absolute_url(a) {
        (Approval::Approved, format!("approved in {a}"))
    } else {
        (
            Approval::Invalid,
            format!(
                "protected groups must have approval annotation \"{API_APPROVED_ANNOTATION}\" with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111"
            ),
        )
    }
}

/// `validateAPIApproval`.
pub fn validate_api_approval(
    group: &str,
    new_ann: Option<&str>,
    old_ann: Option<Option<&str>>,
    errs: &mut Vec<FieldError>,
) {
    if !is_protected_group(group) {
        return;
    }
    let (state, reason) = approval_state(new_ann);
    if let Some(o) = old_ann
        && approval_state(o).0 == state
    {
        return;
    }
    let path = key("metadata.annotations", API_APPROVED_ANNOTATION);
    match state {
        Approval::Approved | Approval::Bypassed => {}
        Approval::Missing => errs.push(FieldError::required(path, reason)),
        Approval::Invalid => errs.push(FieldError::invalid(path, new_ann.unwrap_or(""), reason)),
    }
}

fn condition(ty: &str, status: &str, reason: &str, message: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("type".into(), Value::from(ty));
    m.insert("status".into(), Value::from(status));
    m.insert("reason".into(), Value::from(reason));
    m.insert("message".into(), Value::from(message));
    m
}

/// `apihelpers.SetCRDCondition`: appends, or updates in place keeping the
/// transition time unless the status changed (or it was missing).
fn set_condition(conds: &mut Vec<Value>, new: Map<String, Value>, now: &str) {
    let ty = new.get("type").cloned().unwrap_or(Value::Null);
    let existing = conds
        .iter_mut()
        .filter_map(Value::as_object_mut)
        .find(|c| c.get("type") == Some(&ty));
    match existing {
        None => {
            let mut n = new;
            n.insert("lastTransitionTime".into(), Value::from(now));
            conds.push(Value::Object(reorder(n)));
        }
        Some(c) => {
            let zero_time =
                !matches!(c.get("lastTransitionTime"), Some(Value::String(s)) if !s.is_empty());
            if c.get("status") != new.get("status") || zero_time {
                c.insert(
                    "status".into(),
                    new.get("status").cloned().unwrap_or(Value::Null),
                );
                c.insert("lastTransitionTime".into(), Value::from(now));
            }
            c.insert(
                "reason".into(),
                new.get("reason").cloned().unwrap_or(Value::Null),
            );
            c.insert(
                "message".into(),
                new.get("message").cloned().unwrap_or(Value::Null),
            );
            let taken = std::mem::take(c);
            *c = reorder(taken);
        }
    }
}

/// Field order of a v1 condition as kube serializes it.
fn reorder(mut m: Map<String, Value>) -> Map<String, Value> {
    let mut out = Map::new();
    for k in ["type", "status", "lastTransitionTime", "reason", "message"] {
        if let Some(v) = m.remove(k) {
            out.insert(k.to_string(), v);
        }
    }
    out.extend(m);
    out
}

fn find_condition<'v>(conds: &'v [Value], ty: &str) -> Option<&'v Map<String, Value>> {
    conds
        .iter()
        .filter_map(Value::as_object)
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

fn condition_true(conds: &[Value], ty: &str) -> bool {
    find_condition(conds, ty)
        .and_then(|c| c.get("status"))
        .and_then(Value::as_str)
        == Some("True")
}

/// The condition reporting served versions that cannot be served.
const NON_SERVABLE_CONDITION: &str = "NonStructuralSchema";

/// Why served versions of a CRD cannot be built for serving (their schema
/// and rules), aggregated like kube's condition messages; `None` if all can.
fn serving_violations(crd: &Value) -> Option<String> {
    let versions = crd.pointer("/spec/versions").and_then(Value::as_array)?;
    let mut msgs = Vec::new();
    for (i, v) in versions.iter().enumerate() {
        if v.get("served").and_then(Value::as_bool) != Some(true) {
            continue;
        }
        if let Err(errs) = crate::crd::CustomVersion::from_version(v, i) {
            msgs.extend(errs.iter().map(ToString::to_string));
        }
    }
    (!msgs.is_empty()).then(|| aggregate(&msgs))
}

/// A requested name another definition of the group already uses (kube's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} is already in use", crate::validation::go_quote(.0))]
struct InUse<'a>(&'a str);

/// `equalToAcceptedOrFresh`.
fn fresh<'a>(requested: &'a str, accepted: &str, used: &[String]) -> Result<(), InUse<'a>> {
    if requested == accepted || !used.iter().any(|u| u == requested) {
        Ok(())
    } else {
        Err(InUse(requested))
    }
}

/// `utilerrors.NewAggregate(errs).Error()`.
fn aggregate(msgs: &[String]) -> String {
    let mut seen: Vec<&String> = Vec::new();
    for m in msgs {
        if !seen.contains(&m) {
            seen.push(m);
        }
    }
    match seen.as_slice() {
        [one] => (*one).clone(),
        many => format!(
            "[{}]",
            many.iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The status after the naming, establishing and API-approval controllers
/// have run once on `crd` (see [`super::accepted_status`]).
pub fn accepted_status(crd: &Value, existing: &[&Value], now: &str) -> Value {
    let spec = crd.get("spec");
    let group = spec
        .and_then(|s| s.get("group"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let requested = Names::from_json(spec.and_then(|s| s.get("names")));
    let status = crd
        .get("status")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let accepted = Names::from_json(status.get("acceptedNames"));
    let mut conds: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();

    // NamingConditionController.sync: nothing to do when names already match.
    let new_names = if requested == accepted {
        accepted
    } else {
        sync_names(&mut conds, &requested, &accepted, existing, group, now)
    };
    sync_established(&mut conds, now);
    if is_protected_group(group) {
        sync_api_approval(&mut conds, crd, now);
    }
    sync_serving_violations(&mut conds, crd, now);
    assemble_status(status, &new_names, conds, spec)
}

/// The resource names (plural, singular, short) and kind names (kind, list
/// kind) the group's definitions have accepted.
fn names_in_use(existing: &[&Value], group: &str) -> (Vec<String>, Vec<String>) {
    let mut resources: Vec<String> = Vec::new();
    let mut kinds: Vec<String> = Vec::new();
    for e in existing {
        let eg = e
            .get("spec")
            .and_then(|s| s.get("group"))
            .and_then(Value::as_str);
        if eg != Some(group) {
            continue;
        }
        let an = Names::from_json(e.get("status").and_then(|s| s.get("acceptedNames")));
        resources.push(an.plural);
        resources.push(an.singular);
        resources.extend(an.short_names);
        kinds.push(an.kind);
        kinds.push(an.list_kind);
    }
    (resources, kinds)
}

/// `calculateNamesAndConditions`' names: each requested name that is not in
/// use, the accepted one otherwise; and the reason and message of the last
/// conflict found, if any.
fn negotiate_names(
    requested: &Names,
    accepted: &Names,
    resources: &[String],
    kinds: &[String],
) -> (Names, Option<(String, String)>) {
    let mut new_names = accepted.clone();
    let mut cond: Option<(String, String)> = None;
    match fresh(&requested.plural, &accepted.plural, resources) {
        Ok(()) => new_names.plural = requested.plural.clone(),
        Err(m) => cond = Some(("PluralConflict".into(), m.to_string())),
    }
    match fresh(&requested.singular, &accepted.singular, resources) {
        Ok(()) => new_names.singular = requested.singular.clone(),
        Err(m) => cond = Some(("SingularConflict".into(), m.to_string())),
    }
    if requested.short_names != accepted.short_names {
        let mut msgs = Vec::new();
        for sn in &requested.short_names {
            if accepted.short_names.contains(sn) {
                continue;
            }
            if let Err(m) = fresh(sn, "", resources) {
                msgs.push(m.to_string());
            }
        }
        if msgs.is_empty() {
            new_names.short_names = requested.short_names.clone();
        } else {
            cond = Some(("ShortNamesConflict".into(), aggregate(&msgs)));
        }
    }
    match fresh(&requested.kind, &accepted.kind, kinds) {
        Ok(()) => new_names.kind = requested.kind.clone(),
        Err(m) => cond = Some(("KindConflict".into(), m.to_string())),
    }
    match fresh(&requested.list_kind, &accepted.list_kind, kinds) {
        Ok(()) => new_names.list_kind = requested.list_kind.clone(),
        Err(m) => cond = Some(("ListKindConflict".into(), m.to_string())),
    }
    new_names.categories = requested.categories.clone();
    (new_names, cond)
}

/// NamingConditionController.sync for requested names that differ from the
/// accepted ones: the names accepted now, with the NamesAccepted and
/// Established conditions set in `conds` when they change.
fn sync_names(
    conds: &mut Vec<Value>,
    requested: &Names,
    accepted: &Names,
    existing: &[&Value],
    group: &str,
    now: &str,
) -> Names {
    let (resources, kinds) = names_in_use(existing, group);
    let (new_names, cond) = negotiate_names(requested, accepted, &resources, &kinds);
    let names_cond = match &cond {
        None => condition("NamesAccepted", "True", "NoConflicts", "no conflicts found"),
        Some((r, m)) => condition("NamesAccepted", "False", r, m),
    };
    let names_ok = cond.is_none();
    let mut est = match find_condition(conds, "Established") {
        Some(old) => old.clone(),
        None => condition(
            "Established",
            "False",
            "NotAccepted",
            "not all names are accepted",
        ),
    };
    if est.get("status").and_then(Value::as_str) != Some("True") && names_ok {
        est = condition(
            "Established",
            "False",
            "Installing",
            "the initial names have been accepted",
        );
    }
    let unchanged = new_names == *accepted
        && find_condition(conds, "NamesAccepted").is_some_and(|c| {
            ["status", "reason", "message"]
                .iter()
                .all(|k| c.get(*k) == names_cond.get(*k))
        });
    if !unchanged {
        set_condition(conds, names_cond, now);
        let est_clean: Map<String, Value> = est
            .into_iter()
            .filter(|(k, _)| matches!(k.as_str(), "type" | "status" | "reason" | "message"))
            .collect();
        set_condition(conds, est_clean, now);
    }
    new_names
}

/// EstablishingController.sync: accepted names make the definition established.
fn sync_established(conds: &mut Vec<Value>, now: &str) {
    if condition_true(conds, "NamesAccepted") && !condition_true(conds, "Established") {
        set_condition(
            conds,
            condition(
                "Established",
                "True",
                "InitialNamesAccepted",
                "the initial names have been accepted",
            ),
            now,
        );
    }
}

/// KubernetesAPIApprovalPolicyConformantConditionController, for a
/// definition of a protected group.
fn sync_api_approval(conds: &mut Vec<Value>, crd: &Value, now: &str) {
    let ann = crd
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(|a| a.get(API_APPROVED_ANNOTATION))
        .and_then(Value::as_str);
    let (state, reason) = approval_state(ann);
    let (st, r) = match state {
        Approval::Approved => ("True", "ApprovedAnnotation"),
        Approval::Bypassed => ("False", "UnapprovedAnnotation"),
        Approval::Invalid => ("False", "InvalidAnnotation"),
        Approval::Missing => ("False", "MissingAnnotation"),
    };
    set_condition(
        conds,
        condition("KubernetesAPIApprovalPolicyConformant", st, r, &reason),
        now,
    );
}

/// Served versions must never disappear silently: if one cannot be built
/// for serving, say so like kube's NonStructuralSchema condition.
fn sync_serving_violations(conds: &mut Vec<Value>, crd: &Value, now: &str) {
    match serving_violations(crd) {
        Some(message) => set_condition(
            conds,
            condition(NON_SERVABLE_CONDITION, "True", "Violations", &message),
            now,
        ),
        None => {
            conds.retain(|c| c.get("type").and_then(Value::as_str) != Some(NON_SERVABLE_CONDITION))
        }
    }
}

/// The status with the accepted names and conditions set, `storedVersions`
/// defaulted to the storage version, and kube's order of the known fields.
fn assemble_status(
    mut status: Map<String, Value>,
    new_names: &Names,
    conds: Vec<Value>,
    spec: Option<&Value>,
) -> Value {
    status.insert("acceptedNames".into(), new_names.to_json());
    status.insert("conditions".into(), Value::Array(conds));
    if !status.contains_key("storedVersions") {
        let stored: Vec<Value> = spec
            .and_then(|s| s.get("versions"))
            .and_then(Value::as_array)
            .and_then(|vs| {
                vs.iter()
                    .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            })
            .and_then(|v| v.get("name"))
            .and_then(Value::as_str)
            .map(|n| vec![Value::from(n)])
            .unwrap_or_default();
        status.insert("storedVersions".into(), Value::Array(stored));
    }
    let mut ordered = Map::new();
    for k in ["conditions", "acceptedNames", "storedVersions"] {
        if let Some(v) = status.remove(k) {
            ordered.insert(k.to_string(), v);
        }
    }
    ordered.extend(status);
    Value::Object(ordered)
}
