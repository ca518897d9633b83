//! Posts core/v1 Events for the in-process controllers, the scheduler and
//! the simulated kubelet, in the background, as client-go's event recorder
//! does: an event repeated for the same object (same source, type, reason
//! and message) bumps `count` and `lastTimestamp` of the first one.

use std::collections::HashMap;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::object;
use crate::registry::{Api, Target};

/// Most distinct events remembered for aggregation.
const REMEMBERED: usize = 8192;

/// Who reports an event.
#[derive(Debug, Clone)]
pub struct Source {
    /// `source.component` / `reportingComponent`.
    pub component: &'static str,
    /// `source.host` (the node, for the kubelet).
    pub host: Option<String>,
}

impl Source {
    /// A source without a host.
    pub fn component(component: &'static str) -> Source {
        Source {
            component,
            host: None,
        }
    }
}

struct Record {
    involved: Value,
    namespace: String,
    warning: bool,
    reason: String,
    message: String,
    source: Source,
}

/// A handle to post events; cheap to clone.
#[derive(Clone)]
pub struct Recorder {
    tx: mpsc::UnboundedSender<Record>,
}

impl Recorder {
    /// Starts the posting task.
    pub fn spawn(api: Api, stop: CancellationToken) -> Recorder {
        let (tx, rx) = mpsc::unbounded_channel();
        tokio::spawn(post_events(api, rx, stop));
        Recorder { tx }
    }

    /// Posts an event about `obj`; `field_path` names a container
    /// (`spec.containers{name}`) for the kubelet's events.
    pub fn event(
        &self,
        obj: &Value,
        field_path: Option<String>,
        warning: bool,
        reason: &str,
        message: impl Into<String>,
        source: &Source,
    ) {
        let namespace = match object::namespace(obj) {
            "" => "default".to_string(),
            ns => ns.to_string(),
        };
        let mut involved = json!({
            "kind": obj.get("kind").cloned().unwrap_or(Value::Null),
            "name": object::name(obj),
            "uid": object::uid(obj),
            "apiVersion": obj.get("apiVersion").cloned().unwrap_or(Value::Null),
            "resourceVersion": object::meta_str(obj, "resourceVersion").unwrap_or(""),
        });
        if !object::namespace(obj).is_empty() {
            involved["namespace"] = json!(object::namespace(obj));
        }
        if let Some(p) = field_path {
            involved["fieldPath"] = json!(p);
        }
        let _ = self.tx.send(Record {
            involved,
            namespace,
            warning,
            reason: reason.to_string(),
            message: message.into(),
            source: source.clone(),
        });
    }

    /// A Normal event.
    pub fn normal(&self, obj: &Value, reason: &str, message: impl Into<String>, source: &Source) {
        self.event(obj, None, false, reason, message, source);
    }

    /// A Warning event.
    pub fn warning(&self, obj: &Value, reason: &str, message: impl Into<String>, source: &Source) {
        self.event(obj, None, true, reason, message, source);
    }
}

async fn post_events(api: Api, mut rx: mpsc::UnboundedReceiver<Record>, stop: CancellationToken) {
    let Some(rt) = api.catalog.get("", "v1", "events") else {
        return;
    };
    // Aggregation key → (namespace, event name, count).
    let mut seen: HashMap<String, (String, String, i64)> = HashMap::new();
    loop {
        let rec = tokio::select! {
            _ = stop.cancelled() => return,
            r = rx.recv() => match r {
                Some(r) => r,
                None => return,
            },
        };
        let ty = if rec.warning { "Warning" } else { "Normal" };
        let agg = format!(
            "{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
            rec.source.component,
            rec.source.host.as_deref().unwrap_or(""),
            rec.involved["uid"].as_str().unwrap_or(""),
            rec.involved
                .get("fieldPath")
                .and_then(Value::as_str)
                .unwrap_or(""),
            ty,
            rec.reason,
            rec.message
        );
        let now = super::podutil::rfc3339(super::podutil::now());
        let opts = super::podutil::writer(rec.source.component);
        if let Some((ns, name, count)) = seen.get(&agg).cloned() {
            let t = Target {
                rt: rt.clone(),
                namespace: Some(ns.clone()),
                name: Some(name.clone()),
            };
            let stamp = now.clone();
            let bumped = api
                .mutate(&t, &opts, move |cur| {
                    let mut e = cur.clone();
                    let c = e.get("count").and_then(Value::as_i64).unwrap_or(1);
                    e["count"] = json!(c + 1);
                    e["lastTimestamp"] = json!(stamp);
                    Ok(e)
                })
                .await;
            if bumped.is_ok() {
                seen.insert(agg, (ns, name, count + 1));
                continue;
            }
            seen.remove(&agg);
        }
        let involved_name = rec.involved["name"].as_str().unwrap_or("").to_string();
        let nanos = jiff::Timestamp::now().as_nanosecond();
        let name = format!("{involved_name}.{:x}", nanos.max(0));
        let mut body = json!({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": name, "namespace": rec.namespace},
            "involvedObject": rec.involved,
            "reason": rec.reason,
            "message": rec.message,
            "source": {"component": rec.source.component},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "type": ty,
            "reportingComponent": rec.source.component,
            "reportingInstance": rec.source.host.clone().unwrap_or_default(),
        });
        if let Some(h) = &rec.source.host {
            body["source"]["host"] = json!(h);
        }
        match api.create(&rt, Some(&rec.namespace), body, &opts).await {
            Ok(_) => {
                if seen.len() >= REMEMBERED {
                    seen.clear();
                }
                seen.insert(agg, (rec.namespace, name, 1));
            }
            Err(e) => tracing::debug!(error = %e, "posting an event failed"),
        }
    }
}
