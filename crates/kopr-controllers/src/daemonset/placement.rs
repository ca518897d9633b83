//! Where a DaemonSet's pods go: whether a node should run one
//! (`NodeShouldRunDaemonPod`: the template's `nodeName`, `nodeSelector`,
//! required node affinity, and the node's taints against the template's
//! tolerations plus those kube adds to every daemon pod), the pod template
//! for one node (those tolerations, the `pod-template-generation` and
//! `controller-revision-hash` labels, and node affinity pinning the pod to
//! the node by `metadata.name`), and which node a pod is meant for.

use serde_json::{Map, Value, json};

use super::super::history::REVISION_HASH;
use super::super::podutil;
use crate::object;

/// The annotation kube keeps a DaemonSet's template generation in.
pub const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";
/// The pod label carrying the template generation.
pub const GENERATION_LABEL: &str = "pod-template-generation";

/// The tolerations every daemon pod gets (`AddOrUpdateDaemonPodTolerations`):
/// key and effect, operator `Exists`. The last one only with `hostNetwork`.
const DAEMON_TOLERATIONS: [(&str, &str); 7] = [
    ("node.kubernetes.io/not-ready", "NoExecute"),
    ("node.kubernetes.io/unreachable", "NoExecute"),
    ("node.kubernetes.io/disk-pressure", "NoSchedule"),
    ("node.kubernetes.io/memory-pressure", "NoSchedule"),
    ("node.kubernetes.io/pid-pressure", "NoSchedule"),
    ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ("node.kubernetes.io/network-unavailable", "NoSchedule"),
];

/// Whether a node should run the DaemonSet's pod, and whether a pod already
/// there may keep running (it tolerates the node's `NoExecute` taints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fit {
    pub should_run: bool,
    pub should_continue_running: bool,
}

/// The DaemonSet's template generation (`GetTemplateGeneration`).
pub fn template_generation(ds: &Value) -> Option<i64> {
    object::meta(ds)?
        .get("annotations")?
        .get(TEMPLATE_GENERATION)?
        .as_str()?
        .parse()
        .ok()
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// Adds a toleration unless an identical one is there
/// (`AddOrUpdateTolerationInPodSpec`).
fn add_toleration(spec: &mut Value, key: &str, effect: &str) {
    let wanted = json!({"key": key, "operator": "Exists", "effect": effect});
    if !spec.get("tolerations").is_some_and(Value::is_array) {
        spec["tolerations"] = json!([]);
    }
    if let Some(list) = spec.get_mut("tolerations").and_then(Value::as_array_mut) {
        let same = |t: &Value| {
            s(t, "key") == key
                && s(t, "effect") == effect
                && s(t, "operator") == "Exists"
                && s(t, "value").is_empty()
        };
        if !list.iter().any(same) {
            list.push(wanted);
        }
    }
}

/// A pod spec with the daemon pod tolerations added.
pub fn with_daemon_tolerations(spec: &Value) -> Value {
    let mut spec = if spec.is_object() {
        spec.clone()
    } else {
        json!({})
    };
    let host_network = spec.get("hostNetwork").and_then(Value::as_bool) == Some(true);
    for (i, (key, effect)) in DAEMON_TOLERATIONS.iter().enumerate() {
        if i == DAEMON_TOLERATIONS.len() - 1 && !host_network {
            continue;
        }
        add_toleration(&mut spec, key, effect);
    }
    spec
}

/// The template new pods are made from (`CreatePodTemplate`).
pub fn pod_template(ds: &Value, hash: &str) -> Value {
    let mut t = podutil::at(ds, "/spec/template")
        .cloned()
        .filter(Value::is_object)
        .unwrap_or_else(|| json!({}));
    t["spec"] = with_daemon_tolerations(t.get("spec").unwrap_or(&Value::Null));
    if !t.get("metadata").is_some_and(Value::is_object) {
        t["metadata"] = json!({});
    }
    if !t["metadata"].get("labels").is_some_and(Value::is_object) {
        t["metadata"]["labels"] = json!({});
    }
    if let Some(g) = template_generation(ds) {
        t["metadata"]["labels"][GENERATION_LABEL] = json!(g.to_string());
    }
    if !hash.is_empty() {
        t["metadata"]["labels"][REVISION_HASH] = json!(hash);
    }
    t
}

/// Pins a pod spec to a node through required node affinity on
/// `metadata.name` (`ReplaceDaemonSetPodNodeNameNodeAffinity`).
pub fn pin_to_node(spec: &mut Value, node: &str) {
    let mut selector = json!({"nodeSelectorTerms": [{"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": [node]}
    ]}]});
    if !spec.get("affinity").is_some_and(Value::is_object) {
        spec["affinity"] = json!({});
    }
    let affinity = &mut spec["affinity"];
    if !affinity.get("nodeAffinity").is_some_and(Value::is_object) {
        affinity["nodeAffinity"] = json!({});
    }
    let required = &mut affinity["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    if required.is_object() {
        required["nodeSelectorTerms"] = selector["nodeSelectorTerms"].take();
    } else {
        *required = selector;
    }
}

/// The node a daemon pod is meant for (`GetTargetNodeName`): its
/// `nodeName`, else the single `metadata.name` its node affinity requires.
pub fn target_node(pod: &Value) -> Option<&str> {
    let bound = podutil::str_at(pod, "/spec/nodeName");
    if !bound.is_empty() {
        return Some(bound);
    }
    let terms = podutil::at(
        pod,
        "/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution/nodeSelectorTerms",
    )?
    .as_array()?;
    for term in terms {
        for e in term
            .get("matchFields")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if s(e, "key") == "metadata.name" && s(e, "operator") == "In" {
                let values = e.get("values").and_then(Value::as_array)?;
                return match values.as_slice() {
                    [one] => one.as_str(),
                    _ => None,
                };
            }
        }
    }
    None
}

/// `Toleration.ToleratesTaint`.
fn tolerates(t: &Value, taint: &Value) -> bool {
    let effect = s(t, "effect");
    if !effect.is_empty() && effect != s(taint, "effect") {
        return false;
    }
    let key = s(t, "key");
    if !key.is_empty() && key != s(taint, "key") {
        return false;
    }
    match s(t, "operator") {
        "" | "Equal" => s(t, "value") == s(taint, "value"),
        "Exists" => true,
        _ => false,
    }
}

/// Whether a taint passing `filter` is tolerated by none of `tolerations`
/// (`FindMatchingUntoleratedTaint`).
fn untolerated(taints: &[Value], tolerations: &[Value], filter: impl Fn(&str) -> bool) -> bool {
    taints
        .iter()
        .filter(|t| filter(s(t, "effect")))
        .any(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// One node selector requirement against a set of values by key
/// (`NodeSelectorRequirementsAsSelector` semantics); None when invalid.
fn requirement_matches(e: &Value, get: &dyn Fn(&str) -> Option<String>) -> Option<bool> {
    let values: Vec<&str> = e
        .get("values")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let have = get(s(e, "key"));
    Some(match s(e, "operator") {
        "In" => have.is_some_and(|h| values.contains(&h.as_str())),
        "NotIn" => have.is_none_or(|h| !values.contains(&h.as_str())),
        "Exists" => have.is_some(),
        "DoesNotExist" => have.is_none(),
        op @ ("Gt" | "Lt") => {
            let [v] = values.as_slice() else {
                return None;
            };
            let want = v.parse::<i64>().ok()?;
            match have.and_then(|h| h.parse::<i64>().ok()) {
                Some(h) if op == "Gt" => h > want,
                Some(h) => h < want,
                None => false,
            }
        }
        _ => return None,
    })
}

/// Whether a node satisfies a pod's `nodeSelector` and required node
/// affinity (`GetRequiredNodeAffinity(pod).Match(node)`).
pub fn affinity_matches(pod_spec: &Value, node: &Value) -> bool {
    let labels = object::labels(node);
    let label = |k: &str| {
        labels
            .and_then(|l| l.get(k))
            .and_then(Value::as_str)
            .map(str::to_string)
    };
    if let Some(sel) = pod_spec.get("nodeSelector").and_then(Value::as_object)
        && sel
            .iter()
            .any(|(k, v)| label(k).as_deref() != Some(v.as_str().unwrap_or("")))
    {
        return false;
    }
    let Some(required) = podutil::at(
        pod_spec,
        "/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution",
    )
    .filter(|v| !v.is_null()) else {
        return true;
    };
    let name = object::name(node).to_string();
    let field = |k: &str| (k == "metadata.name").then(|| name.clone());
    let terms = required
        .get("nodeSelectorTerms")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    terms.iter().any(|term| {
        let list = |k: &str| {
            term.get(k)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        let (exprs, fields) = (list("matchExpressions"), list("matchFields"));
        if exprs.is_empty() && fields.is_empty() {
            return false;
        }
        let fields_valid = fields
            .iter()
            .all(|f| s(f, "key") == "metadata.name" && matches!(s(f, "operator"), "In" | "NotIn"));
        fields_valid
            && exprs
                .iter()
                .all(|e| requirement_matches(e, &label) == Some(true))
            && fields
                .iter()
                .all(|f| requirement_matches(f, &field) == Some(true))
    })
}

/// `NodeShouldRunDaemonPod`.
pub fn node_fit(ds: &Value, node: &Value) -> Fit {
    let no = Fit {
        should_run: false,
        should_continue_running: false,
    };
    let template_spec = podutil::at(ds, "/spec/template/spec").unwrap_or(&Value::Null);
    let name = podutil::str_at(template_spec, "/nodeName");
    if !name.is_empty() && name != object::name(node) {
        return no;
    }
    let spec = with_daemon_tolerations(template_spec);
    if !affinity_matches(&spec, node) {
        return no;
    }
    let taints = podutil::at(node, "/spec/taints")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let tolerations = spec
        .get("tolerations")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    if untolerated(taints, tolerations, |e| {
        e == "NoSchedule" || e == "NoExecute"
    }) {
        return Fit {
            should_run: false,
            should_continue_running: !untolerated(taints, tolerations, |e| e == "NoExecute"),
        };
    }
    Fit {
        should_run: true,
        should_continue_running: true,
    }
}

/// The labels and taints of a node that decide where daemon pods go, to
/// tell which node changes matter (with its readiness conditions).
pub fn placement_facts(node: &Value) -> (Option<&Map<String, Value>>, Option<&Value>, Vec<Value>) {
    let conditions = podutil::conditions_of(node)
        .into_iter()
        .map(|c| json!([c.get("type"), c.get("status")]))
        .collect();
    (
        object::labels(node),
        podutil::at(node, "/spec/taints"),
        conditions,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, labels: Value, taints: Value) -> Value {
        json!({"metadata": {"name": name, "labels": labels}, "spec": {"taints": taints}})
    }

    fn ds(spec: Value) -> Value {
        json!({
            "metadata": {"name": "d", "annotations": {TEMPLATE_GENERATION: "2"}},
            "spec": {"template": {"metadata": {"labels": {"app": "d"}}, "spec": spec}},
        })
    }

    #[test]
    fn selectors_affinity_and_taints_decide() {
        let n = node("n1", json!({"disk": "ssd"}), json!([]));
        let fit = |d: &Value, n: &Value| node_fit(d, n).should_run;
        assert!(fit(&ds(json!({})), &n));
        assert!(fit(&ds(json!({"nodeSelector": {"disk": "ssd"}})), &n));
        assert!(!fit(&ds(json!({"nodeSelector": {"disk": "hdd"}})), &n));
        let affinity = |op: &str| {
            ds(
                json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": op, "values": ["ssd"]}]}]}}}}),
            )
        };
        assert!(fit(&affinity("In"), &n));
        assert!(!fit(&affinity("NotIn"), &n));
        assert!(!fit(&ds(json!({"nodeName": "other"})), &n));

        let tainted = node(
            "n2",
            json!({}),
            json!([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        );
        let f = node_fit(&ds(json!({})), &tainted);
        assert!(!f.should_run && f.should_continue_running);
        let tolerant =
            ds(json!({"tolerations": [{"key": "dedicated", "operator": "Equal", "value": "x"}]}));
        assert!(fit(&tolerant, &tainted));
        let evicting = node(
            "n3",
            json!({}),
            json!([{"key": "k", "effect": "NoExecute"}]),
        );
        let f = node_fit(&ds(json!({})), &evicting);
        assert!(!f.should_run && !f.should_continue_running);
        // Daemon pods tolerate the node condition taints.
        let unschedulable = node(
            "n4",
            json!({}),
            json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
                   {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute"}]),
        );
        assert!(fit(&ds(json!({})), &unschedulable));
        let no_network = node(
            "n5",
            json!({}),
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]),
        );
        assert!(!fit(&ds(json!({})), &no_network));
        assert!(fit(&ds(json!({"hostNetwork": true})), &no_network));
    }

    #[test]
    fn pods_are_labelled_tolerant_and_pinned() {
        let d = ds(json!({"containers": [{"name": "c", "image": "i"}],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                {"nodeSelectorTerms": [{"matchExpressions": [{"key": "a", "operator": "Exists"}]}]}}}}));
        let mut t = pod_template(&d, "abc");
        assert_eq!(t["metadata"]["labels"][GENERATION_LABEL], "2");
        assert_eq!(t["metadata"]["labels"][REVISION_HASH], "abc");
        assert_eq!(t["spec"]["tolerations"].as_array().map(Vec::len), Some(6));
        pin_to_node(&mut t["spec"], "kopr-node-1");
        let pod = json!({"spec": t["spec"].clone()});
        assert_eq!(target_node(&pod), Some("kopr-node-1"));
        assert_eq!(
            t["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"],
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["kopr-node-1"]}]}])
        );
        let again = with_daemon_tolerations(&t["spec"]);
        assert_eq!(again["tolerations"], t["spec"]["tolerations"]);
    }
}
