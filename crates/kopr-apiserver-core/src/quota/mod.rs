//! Resource quotas: what objects cost ([`evaluators`]), quota scopes
//! ([`scopes`]), resource-list arithmetic ([`list`]), and the two
//! computations kube's quota machinery makes: whether one write fits every
//! quota of its namespace (the admission check, [`check`]) and a quota's
//! usage from the objects stored ([`usage_of`], the controller's).
//! Pure functions over JSON; the admission plugin and the controller do the
//! reading and writing.

pub mod evaluators;
pub mod list;
pub mod scopes;

use std::sync::Arc;

use serde_json::Value;

pub use evaluators::Evaluator;
pub use list::ResourceList;

/// A quota's `status.hard` names.
fn hard_names(quota: &Value) -> Vec<String> {
    quota["status"]["hard"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// Whether `quota` applies to `obj`: it limits something the evaluator
/// measures, and `obj` is in every one of its scopes (`generic.Matches`).
pub fn matches(evaluator: &Evaluator, quota: &Value, obj: &Value) -> bool {
    !evaluator.matching_resources(&hard_names(quota)).is_empty()
        && scopes::of_quota(quota)
            .iter()
            .all(|s| evaluator.matches_scope(s, obj))
}

/// A write to check against a namespace's quotas.
#[derive(Debug, Clone, Copy)]
pub struct Write<'a> {
    /// How the written resource is measured.
    pub evaluator: &'a Evaluator,
    /// The new object.
    pub obj: &'a Value,
    /// The stored object, on updates.
    pub old: Option<&'a Value>,
    /// The time pods' grace periods are measured at.
    pub now: jiff::Timestamp,
}

/// kube's `CheckRequest`: the new `status.used` of each quota the write
/// changes (`None` where it changes nothing), or the reason it is refused
/// (the text after `<resource> "<name>" is forbidden: `).
///
/// # Errors
/// `failed quota: <q>: must specify ...` when a quota needs requests or
/// limits the object lacks, `status unknown for quota: ...` when a quota's
/// usage is not computed yet, and `exceeded quota: <q>, requested: ...,
/// used: ..., limited: ...` when the write does not fit.
pub fn check(quotas: &[Arc<Value>], w: Write<'_>) -> Result<Vec<Option<ResourceList>>, String> {
    let mut out = vec![None; quotas.len()];
    let mut interesting = Vec::new();
    for (i, quota) in quotas.iter().enumerate() {
        if !matches(w.evaluator, quota, w.obj) {
            continue;
        }
        let name = quota["metadata"]["name"].as_str().unwrap_or("");
        let restricted = w.evaluator.matching_resources(&hard_names(quota));
        w.evaluator
            .constraints(&restricted, w.obj)
            .map_err(|e| format!("failed quota: {name}: {e}"))?;
        let used = &quota["status"]["used"];
        if restricted.iter().any(|r| used.get(r).is_none()) {
            return Err(format!(
                "status unknown for quota: {name}, resources: {}",
                restricted.join(",")
            ));
        }
        interesting.push(i);
    }
    if interesting.is_empty() {
        return Ok(out);
    }
    let usage = w.evaluator.usage(w.obj, w.now);
    let negative = list::negative(&usage);
    if !negative.is_empty() {
        return Err(format!(
            "quota usage is negative for resource(s): {}",
            negative.join(",")
        ));
    }
    let mut deltas: Vec<(usize, ResourceList)> =
        interesting.iter().map(|&i| (i, usage.clone())).collect();
    if let Some(old) = w.old {
        let before = w.evaluator.usage(old, w.now);
        let delta = list::subtract_non_negative(&usage, &before);
        for (i, d) in &mut deltas {
            if matches(w.evaluator, &quotas[*i], old) {
                *d = delta.clone();
            }
        }
    }
    for (i, delta) in deltas {
        let delta = list::remove_zeros(&delta);
        if delta.is_empty() {
            continue;
        }
        let quota = &quotas[i];
        let hard = list::from_json(quota["status"].get("hard"));
        let used = list::from_json(quota["status"].get("used"));
        let requested = list::mask(&delta, hard.keys());
        let new_used = list::add(&used, &requested);
        let exceeded = list::exceeding(&list::mask(&new_used, requested.keys()), &hard);
        if !exceeded.is_empty() {
            return Err(format!(
                "exceeded quota: {}, requested: {}, used: {}, limited: {}",
                quota["metadata"]["name"].as_str().unwrap_or(""),
                list::pretty(&list::mask(&requested, &exceeded)),
                list::pretty(&list::mask(&used, &exceeded)),
                list::pretty(&list::mask(&hard, &exceeded)),
            ));
        }
        if !list::equals(&used, &new_used) {
            out[i] = Some(new_used);
        }
    }
    Ok(out)
}

/// A quota's usage from the objects stored (`quota.CalculateUsage`): every
/// limited resource an evaluator measures, zero when nothing uses it.
/// `of` gives a resource's evaluator (by group and plural); `objects` lists
/// the namespace's objects of an evaluator's resource.
pub fn usage_of(
    quota: &Value,
    hard: &ResourceList,
    of: &dyn Fn(&str, &str) -> Evaluator,
    objects: &dyn Fn(&Evaluator) -> Vec<Arc<Value>>,
    now: jiff::Timestamp,
) -> ResourceList {
    let names: Vec<String> = hard.keys().cloned().collect();
    let scopes = scopes::of_quota(quota);
    let mut used = ResourceList::new();
    for evaluator in Evaluator::for_names(&names, of) {
        let measured = evaluator.matching_resources(&names);
        if measured.is_empty() {
            continue;
        }
        for n in &measured {
            used.entry(n.clone())
                .or_insert_with(crate::quantity::Quantity::zero);
        }
        for obj in objects(&evaluator) {
            if !scopes.iter().all(|s| evaluator.matches_scope(s, &obj)) {
                continue;
            }
            let usage = list::mask(&evaluator.usage(&obj, now), &measured);
            used = list::add(&used, &usage);
        }
    }
    list::mask(&used, &names)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn quota(hard: Value, used: Value) -> Arc<Value> {
        Arc::new(
            json!({"metadata": {"name": "q"}, "spec": {"hard": hard}, "status": {"hard": hard, "used": used}}),
        )
    }

    fn pod(cpu: &str) -> Value {
        json!({"spec": {"containers": [{"name": "c", "resources": {
            "requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
    }

    #[test]
    fn a_create_is_charged_or_refused() {
        let q = quota(
            json!({"pods": "2", "requests.cpu": "1"}),
            json!({"pods": "1", "requests.cpu": "500m"}),
        );
        let w = |obj| Write {
            evaluator: &Evaluator::Pods,
            obj,
            old: None,
            now: jiff::Timestamp::now(),
        };
        let fits = pod("250m");
        let r = check(std::slice::from_ref(&q), w(&fits));
        let used = r
            .ok()
            .and_then(|mut v| v.remove(0))
            .map(|u| list::pretty(&u));
        assert_eq!(used.as_deref(), Some("pods=2,requests.cpu=750m"));
        let big = pod("1");
        assert_eq!(
            check(std::slice::from_ref(&q), w(&big)),
            Err("exceeded quota: q, requested: requests.cpu=1, used: requests.cpu=500m, limited: requests.cpu=1".into())
        );
        let unknown = quota(json!({"pods": "2"}), json!({}));
        assert_eq!(
            check(&[unknown], w(&fits)),
            Err("status unknown for quota: q, resources: pods".into())
        );
        let limits = quota(
            json!({"limits.memory": "1Gi"}),
            json!({"limits.memory": "0"}),
        );
        assert_eq!(
            check(&[limits], w(&fits)),
            Err("failed quota: q: must specify limits.memory for: c".into())
        );
    }

    #[test]
    fn usage_counts_what_matches() {
        let q = quota(
            json!({"pods": "5", "count/configmaps": "3", "services": "1"}),
            json!({}),
        );
        let hard = list::from_json(q["status"].get("hard"));
        let objects = |e: &Evaluator| match e {
            Evaluator::Pods => vec![Arc::new(pod("1")), Arc::new(pod("2"))],
            Evaluator::Count { .. } => vec![Arc::new(json!({}))],
            _ => vec![],
        };
        let of = |group: &str, plural: &str| match plural {
            "pods" => Evaluator::Pods,
            _ => Evaluator::count(group, plural),
        };
        let used = usage_of(&q, &hard, &of, &objects, jiff::Timestamp::now());
        assert_eq!(list::pretty(&used), "count/configmaps=1,pods=2,services=0");
    }
}
