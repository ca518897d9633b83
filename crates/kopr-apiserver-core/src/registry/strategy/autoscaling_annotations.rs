//! The round-trip annotations of autoscaling/v1 HorizontalPodAutoscalers:
//! what v1 has no field for (metrics other than the CPU utilization target,
//! `currentMetrics`, `behavior`, conditions) is written, as kube's v1
//! conversion does, into `autoscaling.alpha.kubernetes.io/*` annotations
//! in the v1 metric and condition shapes (behavior in the Go field names of
//! kube's internal type), encoded as Go's `encoding/json` writes them; and
//! read back from them when a v1 object is written.

use serde_json::{Map, Value, json};

/// `autoscaling.MetricSpecsAnnotation`.
pub const METRIC_SPECS: &str = "autoscaling.alpha.kubernetes.io/metrics";
/// `autoscaling.MetricStatusesAnnotation`.
pub const METRIC_STATUSES: &str = "autoscaling.alpha.kubernetes.io/current-metrics";
/// `autoscaling.HorizontalPodAutoscalerConditionsAnnotation`.
pub const CONDITIONS: &str = "autoscaling.alpha.kubernetes.io/conditions";
/// `autoscaling.BehaviorSpecsAnnotation`.
pub const BEHAVIOR: &str = "autoscaling.alpha.kubernetes.io/behavior";

/// Every round-trip annotation.
pub const ALL: [&str; 4] = [METRIC_SPECS, BEHAVIOR, METRIC_STATUSES, CONDITIONS];

/// A JSON value with its object keys in Go struct order.
enum Go {
    Obj(Vec<(&'static str, Go)>),
    Arr(Vec<Go>),
    Raw(Value),
}

impl Go {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Go::Raw(v) => out.extend(crate::gojson::to_vec(v)),
            Go::Arr(items) => {
                out.push(b'[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    item.encode(out);
                }
                out.push(b']');
            }
            Go::Obj(fields) => {
                out.push(b'{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(b',');
                    }
                    out.extend(crate::gojson::to_vec(&Value::String((*k).into())));
                    out.push(b':');
                    v.encode(out);
                }
                out.push(b'}');
            }
        }
    }

    fn encoded(&self) -> String {
        let mut out = Vec::new();
        self.encode(&mut out);
        String::from_utf8_lossy(&out).into_owned()
    }
}

/// Builds a Go struct: `Some` fields in order; `None` ones left out
/// (`omitempty`).
fn obj(fields: Vec<(&'static str, Option<Go>)>) -> Go {
    Go::Obj(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect(),
    )
}

fn get<'a>(v: &'a Value, pointer: &str) -> Option<&'a Value> {
    v.pointer(pointer).filter(|x| !x.is_null())
}

/// A field without `omitempty` (the zero value when absent).
fn always(v: &Value, pointer: &str, zero: Value) -> Option<Go> {
    Some(Go::Raw(get(v, pointer).cloned().unwrap_or(zero)))
}

/// An `omitempty` field.
fn opt(v: &Value, pointer: &str) -> Option<Go> {
    get(v, pointer)
        .filter(|x| x.as_str() != Some("") && x.as_array().is_none_or(|a| !a.is_empty()))
        .map(|x| Go::Raw(x.clone()))
}

/// A `metav1.LabelSelector`.
fn selector(v: &Value, pointer: &str) -> Option<Go> {
    let s = get(v, pointer)?;
    let exprs = s
        .get("matchExpressions")
        .and_then(Value::as_array)
        .filter(|a| !a.is_empty())
        .map(|a| {
            Go::Arr(
                a.iter()
                    .map(|e| {
                        obj(vec![
                            ("key", always(e, "/key", json!(""))),
                            ("operator", always(e, "/operator", json!(""))),
                            ("values", opt(e, "/values")),
                        ])
                    })
                    .collect(),
            )
        });
    let labels = s
        .get("matchLabels")
        .filter(|m| m.as_object().is_some_and(|m| !m.is_empty()))
        .map(|m| Go::Raw(m.clone()));
    Some(obj(vec![
        ("matchLabels", labels),
        ("matchExpressions", exprs),
    ]))
}

/// A `CrossVersionObjectReference`.
fn reference(v: &Value, pointer: &str) -> Option<Go> {
    let r = get(v, pointer).cloned().unwrap_or_else(|| json!({}));
    Some(obj(vec![
        ("kind", always(&r, "/kind", json!(""))),
        ("name", always(&r, "/name", json!(""))),
        ("apiVersion", opt(&r, "/apiVersion")),
    ]))
}

/// The v1 (v2beta1-shaped) form of a v2 `MetricSpec`.
fn v1_metric_spec(m: &Value) -> Go {
    let zero = || json!("0");
    obj(vec![
        ("type", always(m, "/type", json!(""))),
        (
            "object",
            get(m, "/object").map(|o| {
                obj(vec![
                    ("target", reference(o, "/describedObject")),
                    ("metricName", always(o, "/metric/name", json!(""))),
                    ("targetValue", always(o, "/target/value", zero())),
                    ("selector", selector(o, "/metric/selector")),
                    ("averageValue", opt(o, "/target/averageValue")),
                ])
            }),
        ),
        (
            "pods",
            get(m, "/pods").map(|p| {
                obj(vec![
                    ("metricName", always(p, "/metric/name", json!(""))),
                    (
                        "targetAverageValue",
                        always(p, "/target/averageValue", zero()),
                    ),
                    ("selector", selector(p, "/metric/selector")),
                ])
            }),
        ),
        (
            "resource",
            get(m, "/resource").map(|r| {
                obj(vec![
                    ("name", always(r, "/name", json!(""))),
                    (
                        "targetAverageUtilization",
                        opt(r, "/target/averageUtilization"),
                    ),
                    ("targetAverageValue", opt(r, "/target/averageValue")),
                ])
            }),
        ),
        (
            "containerResource",
            get(m, "/containerResource").map(|r| {
                obj(vec![
                    ("name", always(r, "/name", json!(""))),
                    (
                        "targetAverageUtilization",
                        opt(r, "/target/averageUtilization"),
                    ),
                    ("targetAverageValue", opt(r, "/target/averageValue")),
                    ("container", always(r, "/container", json!(""))),
                ])
            }),
        ),
        (
            "external",
            get(m, "/external").map(|e| {
                obj(vec![
                    ("metricName", always(e, "/metric/name", json!(""))),
                    ("metricSelector", selector(e, "/metric/selector")),
                    ("targetValue", opt(e, "/target/value")),
                    ("targetAverageValue", opt(e, "/target/averageValue")),
                ])
            }),
        ),
    ])
}

/// The v1 form of a v2 `MetricStatus`.
fn v1_metric_status(m: &Value) -> Go {
    let zero = || json!("0");
    let resource = |r: &Value, container: bool| {
        let mut fields = vec![
            ("name", always(r, "/name", json!(""))),
            (
                "currentAverageUtilization",
                opt(r, "/current/averageUtilization"),
            ),
            (
                "currentAverageValue",
                always(r, "/current/averageValue", zero()),
            ),
        ];
        if container {
            fields.push(("container", always(r, "/container", json!(""))));
        }
        obj(fields)
    };
    obj(vec![
        ("type", always(m, "/type", json!(""))),
        (
            "object",
            get(m, "/object").map(|o| {
                obj(vec![
                    ("target", reference(o, "/describedObject")),
                    ("metricName", always(o, "/metric/name", json!(""))),
                    ("currentValue", always(o, "/current/value", zero())),
                    ("selector", selector(o, "/metric/selector")),
                    ("averageValue", opt(o, "/current/averageValue")),
                ])
            }),
        ),
        (
            "pods",
            get(m, "/pods").map(|p| {
                obj(vec![
                    ("metricName", always(p, "/metric/name", json!(""))),
                    (
                        "currentAverageValue",
                        always(p, "/current/averageValue", zero()),
                    ),
                    ("selector", selector(p, "/metric/selector")),
                ])
            }),
        ),
        ("resource", get(m, "/resource").map(|r| resource(r, false))),
        (
            "containerResource",
            get(m, "/containerResource").map(|r| resource(r, true)),
        ),
        (
            "external",
            get(m, "/external").map(|e| {
                obj(vec![
                    ("metricName", always(e, "/metric/name", json!(""))),
                    ("metricSelector", selector(e, "/metric/selector")),
                    ("currentValue", always(e, "/current/value", zero())),
                    ("currentAverageValue", opt(e, "/current/averageValue")),
                ])
            }),
        ),
    ])
}

/// The v1 form of a condition (`lastTransitionTime` is a struct: never
/// left out, `null` when unset).
fn v1_condition(c: &Value) -> Go {
    obj(vec![
        ("type", always(c, "/type", json!(""))),
        ("status", always(c, "/status", json!(""))),
        (
            "lastTransitionTime",
            always(c, "/lastTransitionTime", Value::Null),
        ),
        ("reason", opt(c, "/reason")),
        ("message", opt(c, "/message")),
    ])
}

/// A behavior as kube's internal type encodes (Go field names, no
/// `omitempty`: unset pointers are `null`).
fn internal_behavior(b: &Value) -> Go {
    let rules = |r: Option<&Value>| match r {
        None => Go::Raw(Value::Null),
        Some(r) => Go::Obj(vec![
            (
                "StabilizationWindowSeconds",
                Go::Raw(
                    get(r, "/stabilizationWindowSeconds")
                        .cloned()
                        .unwrap_or(Value::Null),
                ),
            ),
            (
                "SelectPolicy",
                Go::Raw(get(r, "/selectPolicy").cloned().unwrap_or(Value::Null)),
            ),
            (
                "Policies",
                match r.get("policies").and_then(Value::as_array) {
                    None => Go::Raw(Value::Null),
                    Some(ps) => Go::Arr(
                        ps.iter()
                            .map(|p| {
                                Go::Obj(vec![
                                    ("Type", Go::Raw(p.get("type").cloned().unwrap_or(json!("")))),
                                    (
                                        "Value",
                                        Go::Raw(p.get("value").cloned().unwrap_or(json!(0))),
                                    ),
                                    (
                                        "PeriodSeconds",
                                        Go::Raw(
                                            p.get("periodSeconds").cloned().unwrap_or(json!(0)),
                                        ),
                                    ),
                                ])
                            })
                            .collect(),
                    ),
                },
            ),
        ]),
    };
    Go::Obj(vec![
        ("ScaleUp", rules(get(b, "/scaleUp"))),
        ("ScaleDown", rules(get(b, "/scaleDown"))),
    ])
}

fn is_cpu_utilization(m: &Value) -> bool {
    m["type"] == "Resource"
        && m["resource"]["name"] == "cpu"
        && get(m, "/resource/target/averageUtilization").is_some()
}

/// The annotations a v1 view carries for a stored (v2) object: the
/// object's own round-trip annotations are dropped first.
pub fn to_v1(obj: &mut Map<String, Value>) {
    let mut annotations: Map<String, Value> = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let had = annotations.len();
    for k in ALL {
        annotations.remove(k);
    }
    let mut changed = annotations.len() != had;
    let mut put = |k: &str, v: String| {
        annotations.insert(k.into(), Value::String(v));
        changed = true;
    };
    let list = |part: &str, field: &str| {
        obj.get(part)
            .and_then(|v| v.get(field))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let other: Vec<Go> = list("spec", "metrics")
        .iter()
        .filter(|m| !is_cpu_utilization(m))
        .map(v1_metric_spec)
        .collect();
    if !other.is_empty() {
        put(METRIC_SPECS, Go::Arr(other).encoded());
    }
    let current = list("status", "currentMetrics");
    if !current.is_empty() {
        put(
            METRIC_STATUSES,
            Go::Arr(current.iter().map(v1_metric_status).collect()).encoded(),
        );
    }
    if let Some(b) = obj.get("spec").and_then(|s| get(s, "/behavior")) {
        put(BEHAVIOR, internal_behavior(b).encoded());
    }
    let conditions = list("status", "conditions");
    if !conditions.is_empty() {
        put(
            CONDITIONS,
            Go::Arr(conditions.iter().map(v1_condition).collect()).encoded(),
        );
    }
    if changed {
        set_annotations(obj, annotations);
    }
}

fn set_annotations(obj: &mut Map<String, Value>, annotations: Map<String, Value>) {
    let Some(meta) = obj
        .entry("metadata")
        .or_insert_with(|| json!({}))
        .as_object_mut()
    else {
        return;
    };
    if annotations.is_empty() {
        meta.remove("annotations");
    } else {
        meta.insert("annotations".into(), Value::Object(annotations));
    }
}

/// Keeps the non-empty, non-null fields.
fn compact(fields: Vec<(&str, Option<Value>)>) -> Value {
    Value::Object(
        fields
            .into_iter()
            .filter_map(|(k, v)| v.filter(|v| !v.is_null()).map(|v| (k.to_string(), v)))
            .collect(),
    )
}

fn field(v: &Value, pointer: &str) -> Option<Value> {
    get(v, pointer).cloned()
}

fn identifier(name: Option<Value>, selector: Option<Value>) -> Option<Value> {
    Some(compact(vec![("name", name), ("selector", selector)]))
}

/// A v1 `MetricSpec` as v2 (`Convert_v1_MetricSpec_To_autoscaling_MetricSpec`).
fn v2_metric_spec(m: &Value) -> Value {
    let typed = |value_is_set: bool, value: &str, avg: &str| -> Value {
        json!(if value_is_set { value } else { avg })
    };
    let resource = |r: &Value, container: bool| {
        let utilization = field(r, "/targetAverageUtilization");
        let ty = if utilization.is_some() {
            "Utilization"
        } else {
            "AverageValue"
        };
        let target = compact(vec![
            ("type", Some(json!(ty))),
            ("averageUtilization", utilization),
            ("averageValue", field(r, "/targetAverageValue")),
        ]);
        compact(vec![
            ("name", field(r, "/name")),
            (
                "container",
                if container {
                    field(r, "/container")
                } else {
                    None
                },
            ),
            ("target", Some(target)),
        ])
    };
    compact(vec![
        ("type", field(m, "/type")),
        (
            "object",
            get(m, "/object").map(|o| {
                let avg = field(o, "/averageValue");
                compact(vec![
                    ("describedObject", field(o, "/target")),
                    (
                        "metric",
                        identifier(field(o, "/metricName"), field(o, "/selector")),
                    ),
                    (
                        "target",
                        Some(compact(vec![
                            ("type", Some(typed(avg.is_none(), "Value", "AverageValue"))),
                            (
                                "value",
                                Some(field(o, "/targetValue").unwrap_or(json!("0"))),
                            ),
                            ("averageValue", avg),
                        ])),
                    ),
                ])
            }),
        ),
        (
            "pods",
            get(m, "/pods").map(|p| {
                compact(vec![
                    (
                        "metric",
                        identifier(field(p, "/metricName"), field(p, "/selector")),
                    ),
                    (
                        "target",
                        Some(compact(vec![
                            ("type", Some(json!("AverageValue"))),
                            (
                                "averageValue",
                                Some(field(p, "/targetAverageValue").unwrap_or(json!("0"))),
                            ),
                        ])),
                    ),
                ])
            }),
        ),
        ("resource", get(m, "/resource").map(|r| resource(r, false))),
        (
            "containerResource",
            get(m, "/containerResource").map(|r| resource(r, true)),
        ),
        (
            "external",
            get(m, "/external").map(|e| {
                let value = field(e, "/targetValue");
                compact(vec![
                    (
                        "metric",
                        identifier(field(e, "/metricName"), field(e, "/metricSelector")),
                    ),
                    (
                        "target",
                        Some(compact(vec![
                            (
                                "type",
                                Some(typed(value.is_some(), "Value", "AverageValue")),
                            ),
                            ("value", value),
                            ("averageValue", field(e, "/targetAverageValue")),
                        ])),
                    ),
                ])
            }),
        ),
    ])
}

/// A v1 `MetricStatus` as v2.
fn v2_metric_status(m: &Value) -> Value {
    let resource = |r: &Value, container: bool| {
        compact(vec![
            ("name", field(r, "/name")),
            (
                "container",
                if container {
                    field(r, "/container")
                } else {
                    None
                },
            ),
            (
                "current",
                Some(compact(vec![
                    ("averageUtilization", field(r, "/currentAverageUtilization")),
                    (
                        "averageValue",
                        Some(field(r, "/currentAverageValue").unwrap_or(json!("0"))),
                    ),
                ])),
            ),
        ])
    };
    compact(vec![
        ("type", Some(field(m, "/type").unwrap_or(json!("")))),
        (
            "object",
            get(m, "/object").map(|o| {
                compact(vec![
                    ("describedObject", field(o, "/target")),
                    (
                        "metric",
                        identifier(field(o, "/metricName"), field(o, "/selector")),
                    ),
                    (
                        "current",
                        Some(compact(vec![
                            (
                                "value",
                                Some(field(o, "/currentValue").unwrap_or(json!("0"))),
                            ),
                            ("averageValue", field(o, "/averageValue")),
                        ])),
                    ),
                ])
            }),
        ),
        (
            "pods",
            get(m, "/pods").map(|p| {
                compact(vec![
                    (
                        "metric",
                        identifier(field(p, "/metricName"), field(p, "/selector")),
                    ),
                    (
                        "current",
                        Some(compact(vec![(
                            "averageValue",
                            Some(field(p, "/currentAverageValue").unwrap_or(json!("0"))),
                        )])),
                    ),
                ])
            }),
        ),
        ("resource", get(m, "/resource").map(|r| resource(r, false))),
        (
            "containerResource",
            get(m, "/containerResource").map(|r| resource(r, true)),
        ),
        (
            "external",
            get(m, "/external").map(|e| {
                compact(vec![
                    (
                        "metric",
                        identifier(field(e, "/metricName"), field(e, "/metricSelector")),
                    ),
                    (
                        "current",
                        Some(compact(vec![
                            (
                                "value",
                                Some(field(e, "/currentValue").unwrap_or(json!("0"))),
                            ),
                            ("averageValue", field(e, "/currentAverageValue")),
                        ])),
                    ),
                ])
            }),
        ),
    ])
}

/// A behavior from kube's internal encoding.
fn v2_behavior(b: &Value) -> Value {
    let rules = |r: Option<&Value>| {
        r.filter(|r| r.is_object()).map(|r| {
            compact(vec![
                (
                    "stabilizationWindowSeconds",
                    field(r, "/StabilizationWindowSeconds"),
                ),
                ("selectPolicy", field(r, "/SelectPolicy")),
                (
                    "policies",
                    r.get("Policies").and_then(Value::as_array).map(|ps| {
                        Value::Array(
                            ps.iter()
                                .map(|p| {
                                    compact(vec![
                                        ("type", field(p, "/Type")),
                                        ("value", field(p, "/Value")),
                                        ("periodSeconds", field(p, "/PeriodSeconds")),
                                    ])
                                })
                                .collect(),
                        )
                    }),
                ),
            ])
        })
    };
    compact(vec![
        ("scaleUp", rules(b.get("ScaleUp"))),
        ("scaleDown", rules(b.get("ScaleDown"))),
    ])
}

/// What a v1 object's round-trip annotations hold, taken out of its
/// annotations: metrics other than the CPU target (to put before it),
/// behavior, current metrics and conditions.
pub struct FromV1 {
    /// Metrics other than the CPU utilization target, as v2.
    pub metrics: Vec<Value>,
    /// `spec.behavior`.
    pub behavior: Option<Value>,
    /// `status.currentMetrics`.
    pub current_metrics: Option<Vec<Value>>,
    /// `status.conditions`.
    pub conditions: Option<Vec<Value>>,
}

/// Removes the round-trip annotations of a v1 object and decodes them
/// (one that does not decode is dropped).
pub fn take_from_v1(obj: &mut Map<String, Value>) -> FromV1 {
    let mut out = FromV1 {
        metrics: Vec::new(),
        behavior: None,
        current_metrics: None,
        conditions: None,
    };
    let Some(mut annotations) = obj
        .get("metadata")
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
    else {
        return out;
    };
    if ALL.iter().all(|k| !annotations.contains_key(*k)) {
        return out;
    }
    let mut decoded = |k: &str| -> Option<Value> {
        let text = annotations.remove(k)?;
        serde_json::from_str(text.as_str()?).ok()
    };
    let list = |v: Option<Value>| match v {
        Some(Value::Array(a)) => Some(a),
        _ => None,
    };
    if let Some(ms) = list(decoded(METRIC_SPECS)) {
        out.metrics = ms.iter().map(v2_metric_spec).collect();
    }
    out.current_metrics =
        list(decoded(METRIC_STATUSES)).map(|ms| ms.iter().map(v2_metric_status).collect());
    out.behavior = decoded(BEHAVIOR)
        .filter(Value::is_object)
        .map(|b| v2_behavior(&b));
    out.conditions = list(decoded(CONDITIONS)).map(|cs| {
        cs.into_iter()
            .map(|c| {
                compact(vec![
                    ("type", field(&c, "/type")),
                    ("status", field(&c, "/status")),
                    ("lastTransitionTime", field(&c, "/lastTransitionTime")),
                    ("reason", field(&c, "/reason")),
                    ("message", field(&c, "/message")),
                ])
            })
            .collect()
    });
    set_annotations(obj, annotations);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotation(obj: &Map<String, Value>, k: &str) -> String {
        obj["metadata"]["annotations"][k]
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    #[test]
    fn conditions_and_metrics_go_to_annotations_as_kube_writes_them() {
        let mut v2 = json!({
            "metadata": {"name": "x", "annotations": {CONDITIONS: "stale", "keep": "me"}},
            "spec": {"metrics": [
                {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 50}}},
                {"type": "Pods", "pods": {"metric": {"name": "qps", "selector": {"matchLabels": {"a": "<b>"}}},
                    "target": {"type": "AverageValue", "averageValue": "1k"}}},
            ]},
            "status": {"desiredReplicas": 0, "currentMetrics": [{"type": ""}],
                "conditions": [{"type": "AbleToScale", "status": "True", "lastTransitionTime": "2025-01-01T00:00:00Z",
                    "reason": "SucceededGetScale", "message": "the HPA controller was able to get the target's current scale"}]},
        });
        let map = v2.as_object_mut().unwrap();
        to_v1(map);
        assert_eq!(
            annotation(map, CONDITIONS),
            r#"[{"type":"AbleToScale","status":"True","lastTransitionTime":"2025-01-01T00:00:00Z","reason":"SucceededGetScale","message":"the HPA controller was able to get the target's current scale"}]"#
        );
        assert_eq!(annotation(map, METRIC_STATUSES), r#"[{"type":""}]"#);
        assert_eq!(
            annotation(map, METRIC_SPECS),
            r#"[{"type":"Pods","pods":{"metricName":"qps","targetAverageValue":"1k","selector":{"matchLabels":{"a":"\u003cb\u003e"}}}}]"#
        );
        assert_eq!(annotation(map, "keep"), "me");

        let back = take_from_v1(map);
        assert_eq!(back.metrics[0]["pods"]["target"]["averageValue"], "1k");
        assert_eq!(
            back.metrics[0]["pods"]["metric"]["selector"]["matchLabels"]["a"],
            "<b>"
        );
        assert_eq!(back.current_metrics, Some(vec![json!({"type": ""})]));
        assert_eq!(
            back.conditions.unwrap_or_default()[0]["reason"],
            "SucceededGetScale"
        );
        assert_eq!(map["metadata"]["annotations"], json!({"keep": "me"}));
    }

    #[test]
    fn behavior_is_written_with_the_internal_field_names() {
        let mut v2 = json!({"metadata": {}, "spec": {"behavior": {
            "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
            "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
        }}});
        let map = v2.as_object_mut().unwrap();
        to_v1(map);
        assert_eq!(
            annotation(map, BEHAVIOR),
            r#"{"ScaleUp":{"StabilizationWindowSeconds":0,"SelectPolicy":"Max","Policies":[{"Type":"Pods","Value":4,"PeriodSeconds":15}]},"ScaleDown":{"StabilizationWindowSeconds":null,"SelectPolicy":"Max","Policies":[{"Type":"Percent","Value":100,"PeriodSeconds":15}]}}"#
        );
        let back = take_from_v1(map);
        assert_eq!(
            back.behavior,
            Some(json!({
                "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
                    "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15}]},
                "scaleDown": {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]},
            }))
        );
        assert!(map["metadata"].get("annotations").is_none());
    }
}
