//! Resource lists (`corev1.ResourceList`) as quota arithmetic sees them:
//! reading from JSON, the sums, differences, masks and comparisons of kube's
//! `quota/v1` helpers, and the text its messages print.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::quantity::Quantity;

/// Named quantities, in name order (the order kube's messages print).
pub type ResourceList = BTreeMap<String, Quantity>;

/// The well-formed quantities of a JSON resource list; malformed values are
/// left out (validation refuses them before quota sees them).
pub fn from_json(v: Option<&Value>) -> ResourceList {
    let Some(map) = v.and_then(Value::as_object) else {
        return ResourceList::new();
    };
    map.iter()
        .filter_map(|(k, v)| Some((k.clone(), Quantity::from_value(v)?)))
        .collect()
}

/// A resource list as JSON, each value in Go's `String()` form.
pub fn to_json(list: &ResourceList) -> Value {
    Value::Object(
        list.iter()
            .map(|(k, q)| (k.clone(), Value::String(q.string())))
            .collect::<Map<String, Value>>(),
    )
}

/// `quota.Add`: every name of either list, summed where both have it.
pub fn add(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = a.clone();
    for (k, q) in b {
        match out.get_mut(k) {
            Some(sum) => sum.add(q),
            None => {
                out.insert(k.clone(), q.clone());
            }
        }
    }
    out
}

/// `quota.SubtractWithNonNegativeResult`: `a - b` per name, never below
/// zero; names only in `b` are zero.
pub fn subtract_non_negative(a: &ResourceList, b: &ResourceList) -> ResourceList {
    let mut out = ResourceList::new();
    for (k, q) in a {
        let mut d = q.clone();
        if let Some(other) = b.get(k) {
            d.sub(other);
        }
        out.insert(k.clone(), if d.sign() > 0 { d } else { Quantity::zero() });
    }
    for k in b.keys() {
        out.entry(k.clone()).or_insert_with(Quantity::zero);
    }
    out
}

/// `quota.Mask`: only the names in `names`.
pub fn mask<'a>(list: &ResourceList, names: impl IntoIterator<Item = &'a String>) -> ResourceList {
    names
        .into_iter()
        .filter_map(|n| Some((n.clone(), list.get(n)?.clone())))
        .collect()
}

/// `quota.RemoveZeros`.
pub fn remove_zeros(list: &ResourceList) -> ResourceList {
    list.iter()
        .filter(|(_, q)| q.sign() != 0)
        .map(|(k, q)| (k.clone(), q.clone()))
        .collect()
}

/// `quota.Equals`: the same names with equal values.
pub fn equals(a: &ResourceList, b: &ResourceList) -> bool {
    a.len() == b.len()
        && a.iter()
            .all(|(k, q)| b.get(k).is_some_and(|o| o.cmp_value(q).is_eq()))
}

/// `quota.LessThanOrEqual`: the names of `a` above their value in `b`
/// (names `b` lacks are not limited).
pub fn exceeding(a: &ResourceList, b: &ResourceList) -> Vec<String> {
    b.iter()
        .filter(|(k, limit)| a.get(*k).is_some_and(|v| v.cmp_value(limit).is_gt()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// The names of negative values (`quota.IsNegative`).
pub fn negative(list: &ResourceList) -> Vec<String> {
    list.iter()
        .filter(|(_, q)| q.sign() < 0)
        .map(|(k, _)| k.clone())
        .collect()
}

/// kube's `prettyPrint`: `name=value` pairs in name order, comma-joined.
pub fn pretty(list: &ResourceList) -> String {
    list.iter()
        .map(|(k, q)| format!("{k}={}", q.string()))
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn list(v: Value) -> ResourceList {
        from_json(Some(&v))
    }

    #[test]
    fn sums_print_canonically() {
        let a = list(json!({"cpu": "100m", "pods": "1"}));
        let b = list(json!({"cpu": "200m", "memory": "1Gi"}));
        assert_eq!(pretty(&add(&a, &b)), "cpu=300m,memory=1Gi,pods=1");
        let zero = [("memory".to_string(), Quantity::zero())]
            .into_iter()
            .collect();
        assert_eq!(pretty(&add(&zero, &b)), "cpu=200m,memory=1Gi");
        assert_eq!(to_json(&add(&a, &a)), json!({"cpu": "200m", "pods": "2"}));
    }

    #[test]
    fn differences_and_limits() {
        let a = list(json!({"cpu": "1", "pods": "1"}));
        let b = list(json!({"cpu": "2", "memory": "1Gi"}));
        assert_eq!(
            pretty(&subtract_non_negative(&a, &b)),
            "cpu=0,memory=0,pods=1"
        );
        assert_eq!(exceeding(&b, &a), vec!["cpu".to_string()]);
        assert!(exceeding(&a, &b).is_empty());
        assert!(equals(
            &list(json!({"cpu": "1000m"})),
            &list(json!({"cpu": "1"}))
        ));
        assert!(!equals(&a, &b));
        assert_eq!(
            pretty(&remove_zeros(&list(json!({"a": "0", "b": "1"})))),
            "b=1"
        );
    }
}
