//! The LimitRanger admission plugin, as kube-apiserver runs it: a new pod's
//! containers get the default requests and limits of their namespace's
//! LimitRanges (`Container` items' `defaultRequest`/`default`, noted in the
//! `kubernetes.io/limit-ranger` annotation), then pods are checked against
//! the items' `min`, `max` and `maxLimitRequestRatio` per container and per
//! pod, and claims (created or resized) against `PersistentVolumeClaim`
//! items. Refusals are kube's 403s with its messages.

use serde_json::{Map, Value};

use super::plugin::{Mutating, Validating};
use crate::quantity::Quantity;
use crate::quota::list::{self, ResourceList};
use crate::registry::{AdmissionRequest, Operation};
use crate::status::{ApiError, ResourceRef};
use crate::storage::Store;

/// The annotation naming what the plugin defaulted.
pub const ANNOTATION: &str = "kubernetes.io/limit-ranger";

/// `resource.MaxMilliValue`.
const MAX_MILLI_VALUE: i128 = (i64::MAX / 1000) as i128;

/// The plugin, reading LimitRanges from the store.
#[derive(Clone)]
pub struct LimitRanger {
    store: Store,
}

/// What the plugin applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Target {
    Pod,
    Claim,
}

impl LimitRanger {
    /// The plugin over `store`.
    pub fn new(store: Store) -> LimitRanger {
        LimitRanger { store }
    }

    /// What `request` is, when the plugin handles it, with the namespace's
    /// LimitRanges.
    fn applies(
        &self,
        request: &AdmissionRequest<'_>,
    ) -> Option<(Target, Vec<std::sync::Arc<Value>>)> {
        let rt = request.rt;
        if !rt.group.is_empty() || request.subresource.is_some() {
            return None;
        }
        let target = match (rt.plural.as_str(), request.operation) {
            ("pods", Operation::Create) => Target::Pod,
            ("persistentvolumeclaims", Operation::Create | Operation::Update) => Target::Claim,
            _ => return None,
        };
        if request
            .old
            .is_some_and(|o| !o["metadata"]["deletionTimestamp"].is_null())
        {
            return None;
        }
        let ranges = self
            .store
            .current_objects(&format!("/core/limitranges/{}/", request.namespace));
        (!ranges.is_empty()).then_some((target, ranges))
    }
}

fn items(range: &Value) -> impl Iterator<Item = &Value> {
    range["spec"]["limits"].as_array().into_iter().flatten()
}

fn forbidden(request: &AdmissionRequest<'_>, obj: &Value, errors: &[String]) -> ApiError {
    let name = match request.name {
        "" => match obj["metadata"]["name"].as_str() {
            Some(n) if !n.is_empty() => n,
            _ => obj["metadata"]["generateName"]
                .as_str()
                .unwrap_or("Unknown"),
        },
        n => n,
    };
    // utilerrors.NewAggregate's text: one error as is, several in brackets.
    let why = match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    };
    ApiError::forbidden(
        ResourceRef {
            group: &request.rt.group,
            resource: &request.rt.plural,
        },
        name,
        &why,
    )
}

impl Mutating for LimitRanger {
    fn admit(&self, request: &AdmissionRequest<'_>, obj: &mut Value) -> Result<(), ApiError> {
        let Some((Target::Pod, ranges)) = self.applies(request) else {
            return Ok(());
        };
        for range in &ranges {
            default_pod(range, obj);
        }
        Ok(())
    }
}

impl Validating for LimitRanger {
    fn validate(&self, request: &AdmissionRequest<'_>, obj: &Value) -> Result<(), ApiError> {
        let Some((target, ranges)) = self.applies(request) else {
            return Ok(());
        };
        for range in &ranges {
            let errors = match target {
                Target::Pod => validate_pod(range, obj),
                Target::Claim => validate_claim(range, obj),
            };
            if !errors.is_empty() {
                return Err(forbidden(request, obj, &errors));
            }
        }
        Ok(())
    }
}

/// Fills in one LimitRange's container defaults and notes them.
fn default_pod(range: &Value, pod: &mut Value) {
    let mut requests = Map::new();
    let mut limits = Map::new();
    for item in items(range).filter(|i| i["type"] == "Container") {
        if let Some(m) = item["defaultRequest"].as_object() {
            requests.extend(m.clone());
        }
        if let Some(m) = item["default"].as_object() {
            limits.extend(m.clone());
        }
    }
    let mut notes = Vec::new();
    let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    for (field, what) in [
        ("containers", "container"),
        ("initContainers", "init container"),
    ] {
        let Some(list) = spec.get_mut(field).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in list.iter_mut().filter_map(Value::as_object_mut) {
            let name = c
                .get("name")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let Some(resources) = c
                .entry("resources")
                .or_insert_with(|| Value::Object(Map::new()))
                .as_object_mut()
            else {
                continue;
            };
            for (key, defaults, kind) in [
                ("requests", &requests, "request"),
                ("limits", &limits, "limit"),
            ] {
                if defaults.is_empty() {
                    continue;
                }
                let Some(own) = resources
                    .entry(key)
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
                else {
                    continue;
                };
                let mut set: Vec<&str> = Vec::new();
                for (k, v) in defaults {
                    if !own.contains_key(k) {
                        own.insert(k.clone(), v.clone());
                        set.push(k);
                    }
                }
                if !set.is_empty() {
                    set.sort_unstable();
                    notes.push(format!("{} {kind} for {what} {name}", set.join(", ")));
                }
            }
            // Go leaves maps it made empty out of the JSON.
            resources.retain(|_, v| v.as_object().is_none_or(|m| !m.is_empty()));
        }
    }
    if notes.is_empty() {
        return;
    }
    let Some(meta) = pod.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(a) = annotations.as_object_mut() {
        a.insert(
            ANNOTATION.into(),
            Value::String(format!("LimitRanger plugin set: {}", notes.join("; "))),
        );
    }
}

/// `requestLimitEnforcedValues`: milli-units when nothing overflows them.
fn comparable(q: Option<&Quantity>) -> (i128, i128) {
    q.map_or((0, 0), |q| (q.value(), q.milli_value()))
}

fn values(
    req: Option<&Quantity>,
    lim: Option<&Quantity>,
    enforced: &Quantity,
) -> (i128, i128, i128) {
    let (r, rm) = comparable(req);
    let (l, lm) = comparable(lim);
    let (e, em) = comparable(Some(enforced));
    if r <= MAX_MILLI_VALUE && l <= MAX_MILLI_VALUE && e <= MAX_MILLI_VALUE {
        (rm, lm, em)
    } else {
        (r, l, e)
    }
}

fn min_error(
    ty: &str,
    name: &str,
    enforced: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let (r, l) = (req.get(name), lim.get(name));
    let (rv, lv, ev) = values(r, l, enforced);
    let e = enforced.string();
    match (r, l) {
        (None, _) => Some(format!(
            "minimum {name} usage per {ty} is {e}.  No request is specified"
        )),
        (Some(r), _) if rv < ev => Some(format!(
            "minimum {name} usage per {ty} is {e}, but request is {}",
            r.string()
        )),
        (_, Some(l)) if lv < ev => Some(format!(
            "minimum {name} usage per {ty} is {e}, but limit is {}",
            l.string()
        )),
        _ => None,
    }
}

fn max_error(
    ty: &str,
    name: &str,
    enforced: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let (r, l) = (req.get(name), lim.get(name));
    let (rv, lv, ev) = values(r, l, enforced);
    let e = enforced.string();
    match (r, l) {
        (_, None) => Some(format!(
            "maximum {name} usage per {ty} is {e}.  No limit is specified"
        )),
        (_, Some(l)) if lv > ev => Some(format!(
            "maximum {name} usage per {ty} is {e}, but limit is {}",
            l.string()
        )),
        (Some(r), _) if rv > ev => Some(format!(
            "maximum {name} usage per {ty} is {e}, but request is {}",
            r.string()
        )),
        _ => None,
    }
}

/// `maxRequestConstraint`: a claim's request against `max`.
fn max_request_error(
    ty: &str,
    name: &str,
    enforced: &Quantity,
    req: &ResourceList,
) -> Option<String> {
    let r = req.get(name);
    let (rv, _, ev) = values(r, None, enforced);
    let e = enforced.string();
    match r {
        None => Some(format!(
            "maximum {name} usage per {ty} is {e}.  No request is specified"
        )),
        Some(r) if rv > ev => Some(format!(
            "maximum {name} usage per {ty} is {e}, but request is {}",
            r.string()
        )),
        _ => None,
    }
}

fn ratio_error(
    ty: &str,
    name: &str,
    enforced: &Quantity,
    req: &ResourceList,
    lim: &ResourceList,
) -> Option<String> {
    let (rv, lv, _) = values(req.get(name), lim.get(name), enforced);
    let e = enforced.string();
    if req.get(name).is_none() || rv == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {ty} is {e}, but no request is specified or request is 0"
        ));
    }
    if lim.get(name).is_none() || lv == 0 {
        return Some(format!(
            "{name} max limit to request ratio per {ty} is {e}, but no limit is specified or limit is 0"
        ));
    }
    let observed = lv as f64 / rv as f64;
    let (scaled, max) = if enforced.value() <= MAX_MILLI_VALUE {
        (observed * 1000.0, enforced.milli_value() as f64)
    } else {
        (observed, enforced.value() as f64)
    };
    (scaled > max).then(|| {
        format!(
            "{name} max limit to request ratio per {ty} is {e}, but provided ratio is {observed:.6}"
        )
    })
}

/// Every min/max/ratio error of `item` against the given requests and limits.
fn check_item(
    item: &Value,
    ty: &str,
    req: &ResourceList,
    lim: &ResourceList,
    out: &mut Vec<String>,
) {
    for (k, q) in list::from_json(item.get("min")) {
        out.extend(min_error(ty, &k, &q, req, lim));
    }
    for (k, q) in list::from_json(item.get("max")) {
        out.extend(max_error(ty, &k, &q, req, lim));
    }
    for (k, q) in list::from_json(item.get("maxLimitRequestRatio")) {
        out.extend(ratio_error(ty, &k, &q, req, lim));
    }
}

fn validate_pod(range: &Value, pod: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let spec = &pod["spec"];
    for item in items(range) {
        match item["type"].as_str() {
            Some("Container") => {
                for c in ["containers", "initContainers"]
                    .into_iter()
                    .flat_map(|f| spec[f].as_array().into_iter().flatten())
                {
                    let req = list::from_json(c["resources"].get("requests"));
                    let lim = list::from_json(c["resources"].get("limits"));
                    check_item(item, "Container", &req, &lim, &mut errors);
                }
            }
            Some("Pod") => {
                let req = crate::quota::evaluators::pod_total(spec, "requests", false);
                let lim = crate::quota::evaluators::pod_total(spec, "limits", false);
                check_item(item, "Pod", &req, &lim, &mut errors);
            }
            _ => {}
        }
    }
    errors
}

fn validate_claim(range: &Value, claim: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    let req = list::from_json(claim["spec"]["resources"].get("requests"));
    for item in items(range).filter(|i| i["type"] == "PersistentVolumeClaim") {
        for (k, q) in list::from_json(item.get("min")) {
            errors.extend(min_error(
                "PersistentVolumeClaim",
                &k,
                &q,
                &req,
                &ResourceList::new(),
            ));
        }
        for (k, q) in list::from_json(item.get("max")) {
            errors.extend(max_request_error("PersistentVolumeClaim", &k, &q, &req));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn range() -> Value {
        json!({"spec": {"limits": [
            {"type": "Container", "default": {"cpu": "500m", "memory": "256Mi"},
             "defaultRequest": {"cpu": "200m"}, "max": {"cpu": "1"}, "min": {"cpu": "50m"},
             "maxLimitRequestRatio": {"cpu": "4"}},
            {"type": "Pod", "max": {"memory": "1Gi"}},
        ]}})
    }

    #[test]
    fn defaults_are_filled_in_and_noted() {
        let mut pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "a"},
            {"name": "b", "resources": {"limits": {"cpu": "800m"}, "requests": {"cpu": "800m"}}},
        ]}});
        default_pod(&range(), &mut pod);
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({"requests": {"cpu": "200m"}, "limits": {"cpu": "500m", "memory": "256Mi"}})
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu request for container a; cpu, memory limit for container a; memory limit for container b"
        );
        assert_eq!(validate_pod(&range(), &pod), Vec::<String>::new());
    }

    #[test]
    fn limits_are_enforced_with_kubes_words() {
        let pod = json!({"spec": {"containers": [
            {"name": "a", "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "2", "memory": "2Gi"}}},
        ]}});
        assert_eq!(
            validate_pod(&range(), &pod),
            vec![
                "maximum cpu usage per Container is 1, but limit is 2".to_string(),
                "cpu max limit to request ratio per Container is 4, but provided ratio is 20.000000".into(),
                "maximum memory usage per Pod is 1Gi, but limit is 2Gi".into(),
            ]
        );
        let claim_range = json!({"spec": {"limits": [
            {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "5Gi"}},
        ]}});
        let claim = json!({"spec": {"resources": {"requests": {"storage": "10Gi"}}}});
        assert_eq!(
            validate_claim(&claim_range, &claim),
            vec![
                "maximum storage usage per PersistentVolumeClaim is 5Gi, but request is 10Gi"
                    .to_string()
            ]
        );
    }
}
