//! The Deployment as the controller reads it, and helpers over ReplicaSets,
//! annotations and conditions.

#[allow(unused_imports)]
use super::*;

pub(super) const REVISION: &str = "deployment.kubernetes.io/revision";
pub(super) const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
pub(super) const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
pub(super) const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Annotations not copied from a Deployment to its ReplicaSets.
pub(super) const NOT_COPIED: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];
/// Longest `revision-history` annotation.
pub(super) const REVISION_HISTORY_LIMIT_CHARS: usize = 2000;

/// A Deployment as the controller reads it.
pub(super) struct Dep {
    pub(super) obj: Arc<Value>,
    pub(super) ns: String,
    pub(super) name: String,
    pub(super) uid: String,
    pub(super) generation: i64,
    pub(super) replicas: i64,
    pub(super) recreate: bool,
    pub(super) min_ready: i64,
    pub(super) history_limit: Option<i64>,
    pub(super) progress_deadline: Option<i64>,
    pub(super) paused: bool,
    pub(super) status: Value,
}

impl Dep {
    pub(super) fn parse(obj: Arc<Value>) -> Dep {
        let s = |p: &str| podutil::str_at(&obj, p).to_string();
        Dep {
            ns: object::namespace(&obj).to_string(),
            name: object::name(&obj).to_string(),
            uid: object::uid(&obj).to_string(),
            generation: object::generation(&obj),
            replicas: int_at(&obj, "/spec/replicas").unwrap_or(1),
            recreate: s("/spec/strategy/type") == "Recreate",
            min_ready: int_at(&obj, "/spec/minReadySeconds").unwrap_or(0),
            history_limit: int_at(&obj, "/spec/revisionHistoryLimit"),
            progress_deadline: int_at(&obj, "/spec/progressDeadlineSeconds"),
            paused: obj.pointer("/spec/paused").and_then(Value::as_bool) == Some(true),
            status: obj.get("status").cloned().unwrap_or_else(|| json!({})),
            obj,
        }
    }

    pub(super) fn template(&self) -> Value {
        self.obj
            .pointer("/spec/template")
            .cloned()
            .unwrap_or(Value::Null)
    }

    /// `ResolveFenceposts`: (maxSurge, maxUnavailable) for a rolling update.
    pub(super) fn fenceposts(&self) -> (i64, i64) {
        let ru = self.obj.pointer("/spec/strategy/rollingUpdate");
        let surge = int_or_percent(ru.and_then(|r| r.get("maxSurge")), self.replicas, true);
        let mut unavailable = int_or_percent(
            ru.and_then(|r| r.get("maxUnavailable")),
            self.replicas,
            false,
        );
        if surge == 0 && unavailable == 0 {
            unavailable = 1;
        }
        (surge, unavailable)
    }

    pub(super) fn max_surge(&self) -> i64 {
        if self.recreate {
            0
        } else {
            self.fenceposts().0
        }
    }

    pub(super) fn max_unavailable(&self) -> i64 {
        if self.recreate || self.replicas == 0 {
            0
        } else {
            self.fenceposts().1.min(self.replicas)
        }
    }

    pub(super) fn has_progress_deadline(&self) -> bool {
        self.progress_deadline
            .is_some_and(|p| p != i64::from(i32::MAX))
    }

    pub(super) fn status_int(&self, field: &str) -> i64 {
        self.status.get(field).and_then(Value::as_i64).unwrap_or(0)
    }
}

pub(super) fn replicas(rs: &Value) -> i64 {
    int_at(rs, "/spec/replicas").unwrap_or(1)
}

pub(super) fn status_int(rs: &Value, field: &str) -> i64 {
    rs.get("status")
        .and_then(|s| s.get(field))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

pub(super) fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    object::meta(obj)?.get("annotations")?.get(key)?.as_str()
}

pub(super) fn revision(rs: &Value) -> i64 {
    annotation(rs, REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

/// Templates equal but for the pod-template-hash label (`EqualIgnoreHash`),
/// compared as kube's Go types see them (so that `resources: {}`, as
/// `kubectl rollout undo` writes it, equals an absent `resources`).
pub(super) fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    let strip = |t: &Value| {
        let mut t = t.clone();
        if let Some(meta) = t.get_mut("metadata").and_then(Value::as_object_mut) {
            if let Some(labels) = meta.get_mut("labels").and_then(Value::as_object_mut) {
                labels.remove(POD_TEMPLATE_HASH);
                if labels.is_empty() {
                    meta.remove("labels");
                }
            }
            if meta.is_empty()
                && let Some(o) = t.as_object_mut()
            {
                o.remove("metadata");
            }
        }
        t
    };
    crate::templates::equal(&strip(a), &strip(b))
}

pub(super) fn condition<'a>(status: &'a Value, ty: &str) -> Option<&'a Value> {
    status
        .get("conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

pub(super) fn condition_reason<'a>(status: &'a Value, ty: &str) -> Option<&'a str> {
    condition(status, ty)?.get("reason")?.as_str()
}

pub(super) fn new_condition(ty: &str, status: &str, reason: &str, message: &str) -> Value {
    let now = rfc3339(podutil::now());
    json!({
        "type": ty,
        "status": status,
        "lastUpdateTime": now,
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

/// `SetDeploymentCondition`: no change when status and reason are the same.
pub(super) fn set_condition(status: &mut Value, mut cond: Value) {
    let ty = cond.get("type").cloned();
    let mut list: Vec<Value> = status
        .get("conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if let Some(cur) = list.iter().find(|c| c.get("type") == ty.as_ref()) {
        if cur.get("status") == cond.get("status") && cur.get("reason") == cond.get("reason") {
            return;
        }
        if cur.get("status") == cond.get("status")
            && let Some(t) = cur.get("lastTransitionTime")
        {
            cond["lastTransitionTime"] = t.clone();
        }
    }
    list.retain(|c| c.get("type") != ty.as_ref());
    list.push(cond);
    status["conditions"] = json!(list);
}

pub(super) fn remove_condition(status: &mut Value, ty: &str) {
    if let Some(list) = status.get_mut("conditions").and_then(Value::as_array_mut) {
        list.retain(|c| c.get("type").and_then(Value::as_str) != Some(ty));
        if list.is_empty()
            && let Some(o) = status.as_object_mut()
        {
            o.remove("conditions");
        }
    }
}

/// Sets annotations of an object, creating the map when missing.
pub(super) fn set_annotations(obj: &mut Value, pairs: &[(&str, &str)]) {
    if let Some(m) = object::meta_mut(obj) {
        let ann = m.entry("annotations").or_insert_with(|| json!({}));
        if !ann.is_object() {
            *ann = json!({});
        }
        for (k, v) in pairs {
            ann[*k] = json!(v);
        }
    }
}

pub(super) fn sum(rss: &[Arc<Value>], f: impl Fn(&Value) -> i64) -> i64 {
    rss.iter().map(|r| f(r)).sum()
}

pub(super) fn active(rss: &[Arc<Value>]) -> Vec<Arc<Value>> {
    rss.iter().filter(|r| replicas(r) > 0).cloned().collect()
}
