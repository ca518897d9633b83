//! The autoscaler's metrics without a metrics API (kube's
//! `computeReplicasForMetrics` when `metrics.k8s.io`, `custom.metrics.k8s.io`
//! and `external.metrics.k8s.io` are not served): the scale's selector is
//! checked first (`validateAndParseSelector`, with `AmbiguousSelector` when
//! another autoscaler's target selects the same pods), then every metric
//! fails with the error kube's metrics clients give, wrapped as kube wraps
//! it; each failure is an event, the first one the `ScalingActive`
//! condition.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::Autoscaler;
use super::status::{SCALING_ACTIVE, Scale, set_condition};
use crate::disruption::go_selector;
use crate::object;
use crate::registry::ListOptions;
use crate::selectors::{LabelSelector, SelectorError};
use crate::status::ApiError;

/// `resourceclient` listing `pods.metrics.k8s.io` when the API is not served.
const RESOURCE_METRICS_API: &str = "unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)";

/// The custom metrics client when `custom.metrics.k8s.io` is not served.
const CUSTOM_METRICS_API: &str = "unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered";

/// Why no replica count came out of the metrics.
pub(super) struct Failed {
    /// `currentMetrics` (a zero status per metric that failed), or None
    /// when the selector check failed first.
    pub(super) statuses: Option<Vec<Value>>,
    /// The error of `FailedComputeMetricsReplicas`.
    pub(super) error: String,
}

/// One metric's failure: the condition's reason, the error the condition
/// and the event show, and the error as `computeReplicasForMetric` wraps it.
struct MetricError {
    reason: &'static str,
    error: String,
    wrapped: String,
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn present(v: &Value, pointer: &str) -> bool {
    v.pointer(pointer).is_some_and(|x| !x.is_null())
}

/// `metav1.LabelSelectorAsSelector` of an optional selector.
fn metric_selector(v: &Value, pointer: &str) -> Result<(), SelectorError> {
    match v.pointer(pointer) {
        None | Some(Value::Null) => Ok(()),
        Some(s) => LabelSelector::from_label_selector_value(s).map(|_| ()),
    }
}

/// Why the target's scale selector cannot be used (`validateAndParseSelector`);
/// the messages are kube's.
#[derive(Debug, thiserror::Error)]
enum ScaleSelectorError {
    /// The scale has no selector.
    #[error("selector is required")]
    Required,
    /// The selector does not parse.
    #[error("couldn't convert selector into a corresponding internal selector object: {0}")]
    Invalid(SelectorError),
    /// The selected pods could not be listed.
    #[error("{}", .0.message)]
    List(ApiError),
    /// Other autoscalers select the same pods (all of them, by key).
    #[error("pods by selector {selector} are controlled by multiple HPAs: [{}]", controllers.join(" "))]
    Ambiguous {
        selector: String,
        controllers: Vec<String>,
    },
}

/// `computeStatusForResourceMetricGeneric`'s error for a target.
fn resource_error(target: &Value, resource: &str) -> String {
    if present(target, "/averageValue") {
        return format!(
            "failed to get {resource} usage: unable to get metrics for resource {resource}: {RESOURCE_METRICS_API}"
        );
    }
    if !present(target, "/averageUtilization") {
        return "invalid resource metric source: neither an average utilization target nor an average value (usage) target was set".into();
    }
    format!(
        "failed to get {resource} utilization: unable to get metrics for resource {resource}: {RESOURCE_METRICS_API}"
    )
}

/// How one metric fails (`computeReplicasForMetric`).
fn metric_error(metric: &Value, namespace: &str) -> MetricError {
    let ty = str_at(metric, "/type");
    match ty {
        "Resource" => {
            let name = str_at(metric, "/resource/name");
            let error = resource_error(&metric["resource"]["target"], name);
            MetricError {
                reason: "FailedGetResourceMetric",
                wrapped: format!("failed to get {name} resource metric value: {error}"),
                error,
            }
        }
        "ContainerResource" => {
            let name = str_at(metric, "/containerResource/name");
            let container = str_at(metric, "/containerResource/container");
            let error = resource_error(&metric["containerResource"]["target"], name);
            MetricError {
                reason: "FailedGetContainerResourceMetric",
                wrapped: format!("failed to get {container} container metric value: {error}"),
                error,
            }
        }
        "Pods" => {
            let error = match metric_selector(metric, "/pods/metric/selector") {
                Err(e) => e.to_string(),
                Ok(()) => format!(
                    "unable to get metric {}: {CUSTOM_METRICS_API}",
                    str_at(metric, "/pods/metric/name")
                ),
            };
            MetricError {
                reason: "FailedGetPodsMetric",
                wrapped: format!("failed to get pods metric value: {error}"),
                error,
            }
        }
        "Object" => {
            let o = &metric["object"];
            let name = str_at(o, "/metric/name");
            let fetch = || {
                // kube's format string takes its arguments out of order.
                format!(
                    "unable to get metric {name}: {} on {namespace} {}/{CUSTOM_METRICS_API}",
                    str_at(o, "/describedObject/kind"),
                    str_at(o, "/describedObject/name"),
                )
            };
            let target_type = str_at(o, "/target/type");
            let (error, wrapped) = match metric_selector(o, "/metric/selector") {
                Err(e) => (e.to_string(), e.to_string()),
                Ok(()) if target_type == "Value" && present(o, "/target/value") => {
                    let e = fetch();
                    (e.clone(), e)
                }
                Ok(()) if target_type == "AverageValue" && present(o, "/target/averageValue") => {
                    let e = fetch();
                    (
                        e.clone(),
                        format!("failed to get {name} object metric: {e}"),
                    )
                }
                Ok(()) => {
                    let e = "invalid object metric source: neither a value target nor an average value target was set".to_string();
                    (e.clone(), e)
                }
            };
            MetricError {
                reason: "FailedGetObjectMetric",
                wrapped: format!("failed to get object metric value: {wrapped}"),
                error,
            }
        }
        "External" => {
            let e = &metric["external"];
            let name = str_at(e, "/metric/name");
            let fetch = || match metric_selector(e, "/metric/selector") {
                Err(err) => err.to_string(),
                Ok(()) => format!(
                    "unable to get external metric {namespace}/{name}/{}: unable to fetch metrics from external metrics API: the server could not find the requested resource (get {name}.external.metrics.k8s.io)",
                    go_selector(e.pointer("/metric/selector"))
                ),
            };
            let (error, wrapped) = if present(e, "/target/averageValue") {
                let err = fetch();
                let wrapped = format!("failed to get {name} external metric: {err}");
                (err, wrapped)
            } else if present(e, "/target/value") {
                let err = fetch();
                let wrapped = format!("failed to get external metric {name}: {err}");
                (err, wrapped)
            } else {
                let err = "invalid external metric source: neither a value target nor an average value target was set".to_string();
                (err.clone(), err)
            };
            MetricError {
                reason: "FailedGetExternalMetric",
                wrapped: format!("failed to get {name} external metric value: {wrapped}"),
                error,
            }
        }
        other => {
            let error = format!("unknown metric source type {other:?}");
            MetricError {
                reason: "InvalidMetricSourceType",
                wrapped: error.clone(),
                error,
            }
        }
    }
}

impl Autoscaler {
    /// Checks the scale's selector (`validateAndParseSelector`); on failure
    /// sets `ScalingActive` and returns the error.
    async fn check_selector(
        &self,
        key: &str,
        hpa: &Value,
        scale: &Scale,
        status: &mut Map<String, Value>,
    ) -> Result<(), ScaleSelectorError> {
        if scale.selector.is_empty() {
            let error = ScaleSelectorError::Required;
            self.recorder
                .warning(hpa, "SelectorRequired", error.to_string(), &self.source);
            set_condition(
                status,
                SCALING_ACTIVE,
                "False",
                "InvalidSelector",
                "the HPA target's scale is missing a selector",
            );
            return Err(error);
        }
        let selector = match LabelSelector::parse(&scale.selector) {
            Ok(s) => s,
            Err(e) => {
                let error = ScaleSelectorError::Invalid(e);
                let message = error.to_string();
                self.recorder
                    .warning(hpa, "InvalidSelector", message.clone(), &self.source);
                set_condition(status, SCALING_ACTIVE, "False", "InvalidSelector", &message);
                return Err(error);
            }
        };
        {
            let mut st = self.lock();
            if st.targets.contains_key(key) {
                st.selectors.insert(key.to_string(), selector.clone());
            }
        }
        let namespace = object::namespace(hpa);
        let pods = match self.api.catalog.get("", "v1", "pods") {
            Some(rt) => self
                .api
                .list(
                    &rt,
                    Some(namespace),
                    &ListOptions {
                        labels: Some(selector),
                        ..ListOptions::default()
                    },
                )
                .await
                .map(|l| l.items)
                .map_err(ScaleSelectorError::List)?,
            None => Vec::new(),
        };
        let controlling: BTreeSet<String> = {
            let st = self.lock();
            let prefix = format!("{namespace}/");
            pods.iter()
                .flat_map(|pod| {
                    st.selectors
                        .iter()
                        .filter(|(k, s)| k.starts_with(&prefix) && s.matches(object::labels(pod)))
                        .map(|(k, _)| k.clone())
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        if controlling.len() > 1 {
            let error = ScaleSelectorError::Ambiguous {
                selector: scale.selector.clone(),
                controllers: controlling.iter().cloned().collect(),
            };
            let message = error.to_string();
            self.recorder
                .warning(hpa, "AmbiguousSelector", message.clone(), &self.source);
            set_condition(
                status,
                SCALING_ACTIVE,
                "False",
                "AmbiguousSelector",
                &message,
            );
            // The others learn of it too (kube's next resync would tell them).
            let others: Vec<String> = {
                let mut st = self.lock();
                st.ambiguous.insert(key.to_string());
                controlling
                    .into_iter()
                    .filter(|k| k != key && !st.ambiguous.contains(k))
                    .collect()
            };
            for other in others {
                self.queue.add(other);
            }
            return Err(error);
        }
        self.lock().ambiguous.remove(key);
        Ok(())
    }
}

/// Computes the replica count from the metrics, which always fails here:
/// events for each metric, `ScalingActive` from the first failure.
pub(super) async fn compute(
    c: &Autoscaler,
    key: &str,
    hpa: &Value,
    scale: &Scale,
    status: &mut Map<String, Value>,
) -> Failed {
    if let Err(error) = c.check_selector(key, hpa, scale, status).await {
        return Failed {
            statuses: None,
            error: error.to_string(),
        };
    }
    let metrics = hpa
        .pointer("/spec/metrics")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let namespace = object::namespace(hpa);
    let mut first: Option<MetricError> = None;
    for metric in &metrics {
        let failure = metric_error(metric, namespace);
        c.recorder
            .warning(hpa, failure.reason, failure.error.clone(), &c.source);
        first.get_or_insert(failure);
    }
    let Some(first) = first else {
        return Failed {
            statuses: None,
            error: String::new(),
        };
    };
    set_condition(
        status,
        SCALING_ACTIVE,
        "False",
        first.reason,
        format!(
            "the HPA was unable to compute the replica count: {}",
            first.error
        ),
    );
    Failed {
        statuses: Some(metrics.iter().map(|_| json!({"type": ""})).collect()),
        error: format!(
            "invalid metrics ({n} invalid out of {n}), first error is: {}",
            first.wrapped,
            n = metrics.len()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_metrics_fail_as_without_metrics_server() {
        let cpu = json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 50}}});
        let e = metric_error(&cpu, "default");
        assert_eq!(e.reason, "FailedGetResourceMetric");
        assert_eq!(
            e.error,
            "failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)"
        );
        assert!(e.wrapped.starts_with(
            "failed to get cpu resource metric value: failed to get cpu utilization: "
        ));
        let memory = json!({"type": "Resource", "resource": {"name": "memory",
            "target": {"type": "AverageValue", "averageValue": "100Mi"}}});
        assert!(
            metric_error(&memory, "default")
                .error
                .starts_with("failed to get memory usage: ")
        );
    }

    #[test]
    fn other_metrics_fail_with_their_clients_errors() {
        let pods = json!({"type": "Pods", "pods": {"metric": {"name": "qps"},
            "target": {"type": "AverageValue", "averageValue": "1"}}});
        let e = metric_error(&pods, "ns");
        assert_eq!(e.reason, "FailedGetPodsMetric");
        assert_eq!(
            e.error,
            "unable to get metric qps: unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
        );
        let object = json!({"type": "Object", "object": {"metric": {"name": "hits"},
            "describedObject": {"kind": "Service", "name": "web"},
            "target": {"type": "Value", "value": "10"}}});
        let e = metric_error(&object, "ns");
        assert_eq!(
            e.error,
            "unable to get metric hits: Service on ns web/unable to fetch metrics from custom metrics API: no custom metrics API (custom.metrics.k8s.io) registered"
        );
        assert!(
            e.wrapped
                .starts_with("failed to get object metric value: unable to get metric hits")
        );
        let external = json!({"type": "External", "external": {"metric": {"name": "queue",
            "selector": {"matchLabels": {"q": "a"}}}, "target": {"type": "Value", "value": "3"}}});
        let e = metric_error(&external, "ns");
        assert_eq!(e.reason, "FailedGetExternalMetric");
        assert_eq!(
            e.error,
            "unable to get external metric ns/queue/&LabelSelector{MatchLabels:map[string]string{q: a,},MatchExpressions:[]LabelSelectorRequirement{},}: unable to fetch metrics from external metrics API: the server could not find the requested resource (get queue.external.metrics.k8s.io)"
        );
        assert!(e.wrapped.starts_with(
            "failed to get queue external metric value: failed to get external metric queue: "
        ));
        let container = json!({"type": "ContainerResource", "containerResource": {"name": "cpu",
            "container": "app", "target": {"type": "Utilization", "averageUtilization": 60}}});
        let e = metric_error(&container, "ns");
        assert_eq!(e.reason, "FailedGetContainerResourceMetric");
        assert!(e.wrapped.starts_with(
            "failed to get app container metric value: failed to get cpu utilization: "
        ));
    }
}
