//! Kubernetes Events about objects, posted in the background so handlers never wait on them.
//!
//! The rules follow Kopf: cluster-scoped objects get their events in the `default` namespace,
//! messages are cut to 1 KiB, and there are no events about Events.

use std::sync::RwLock;

use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, Time};
use kube::api::{Api, PostParams};
use serde_json::Value;
use tokio::sync::mpsc;

/// The longest message an event carries, in bytes.
pub const MESSAGE_LIMIT: usize = 1024;
const QUEUE_CAPACITY: usize = 4096;

/// The severity of an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventType {
    fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

/// Posts events through a background task. Cheap to clone.
#[derive(Debug, Clone)]
pub struct EventRecorder {
    sender: mpsc::Sender<Event>,
    component: std::sync::Arc<str>,
}

/// The recorder behind the free functions outside handlers: the most recently started
/// operator's.
static GLOBAL: RwLock<Option<EventRecorder>> = RwLock::new(None);

impl EventRecorder {
    /// Starts the background poster on the current runtime, posting as `component` (the
    /// operator's [`Identity::component`](crate::Identity::component)). It stops when every
    /// recorder clone is dropped.
    pub fn start(client: kube::Client, component: &str) -> EventRecorder {
        let (sender, mut receiver) = mpsc::channel::<Event>(QUEUE_CAPACITY);
        tokio::spawn(async move {
            while let Some(event) = receiver.recv().await {
                let namespace = event.metadata.namespace.clone().unwrap_or_default();
                let api: Api<Event> = Api::namespaced(client.clone(), &namespace);
                if let Err(error) = api.create(&PostParams::default(), &event).await {
                    tracing::warn!(%error, "could not post an event");
                }
            }
        });
        let recorder = EventRecorder {
            sender,
            component: component.into(),
        };
        // The most recently started operator serves the free functions.
        *GLOBAL.write().unwrap_or_else(|p| p.into_inner()) = Some(recorder.clone());
        recorder
    }

    /// Queues an event about the object `body`. Never blocks; when the queue is full the event
    /// is dropped with a debug log line.
    pub fn post(&self, body: &Value, event_type: EventType, reason: &str, message: &str) {
        let Some(event) = build_event(&self.component, body, event_type, reason, message) else {
            return;
        };
        if self.sender.try_send(event).is_err() {
            tracing::debug!(reason, "event queue full or closed; event dropped");
        } else {
            crate::runtime::metrics::global().events_posted.inc();
        }
    }
}

/// Builds the core/v1 Event that `component` reports (its `source.component`,
/// `reportingController` and `reportingInstance`), or `None` for objects events cannot (or
/// must not) be about.
pub fn build_event(
    component: &str,
    body: &Value,
    event_type: EventType,
    reason: &str,
    message: &str,
) -> Option<Event> {
    let api_version = body.get("apiVersion")?.as_str()?;
    let kind = body.get("kind")?.as_str()?;
    if kind == "Event" && matches!(api_version, "v1" | "events.k8s.io/v1") {
        return None;
    }
    let meta = body.get("metadata")?;
    let text = |key: &str| meta.get(key).and_then(Value::as_str).map(str::to_owned);
    let name = text("name")?;
    let object_namespace = text("namespace");
    let now = jiff::Timestamp::now();
    Some(Event {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}.")),
            namespace: Some(object_namespace.clone().unwrap_or_else(|| "default".into())),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            api_version: Some(api_version.to_owned()),
            kind: Some(kind.to_owned()),
            name: Some(name),
            namespace: object_namespace,
            uid: text("uid"),
            resource_version: text("resourceVersion"),
            field_path: None,
        },
        reason: Some(reason.to_owned()),
        message: Some(truncate(message, MESSAGE_LIMIT)),
        type_: Some(event_type.as_str().to_owned()),
        source: Some(EventSource {
            component: Some(component.into()),
            host: None,
        }),
        reporting_component: Some(component.into()),
        reporting_instance: Some(component.into()),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        event_time: Some(MicroTime(now)),
        action: Some(reason.to_owned()),
        count: Some(1),
        ..Event::default()
    })
}

/// Cuts `text` to at most `limit` bytes on a character boundary, marking the cut with "...".
pub fn truncate(text: &str, limit: usize) -> String {
    if text.len() <= limit {
        return text.to_owned();
    }
    let mut end = limit.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &text[..end])
}

tokio::task_local! {
    /// The recorder of the operator whose handler is running on this task.
    static CURRENT: EventRecorder;
}

/// Runs `future` (a handler) with `recorder` serving the free functions, so that each operator
/// in a process posts through its own client.
pub(crate) fn scope<F: std::future::Future>(
    recorder: EventRecorder,
    future: F,
) -> impl std::future::Future<Output = F::Output> {
    CURRENT.scope(recorder, future)
}

fn post_global(body: &Value, event_type: EventType, reason: &str, message: &str) {
    if CURRENT
        .try_with(|recorder| recorder.post(body, event_type, reason, message))
        .is_ok()
    {
        return;
    }
    let recorder = GLOBAL.read().unwrap_or_else(|p| p.into_inner()).clone();
    match recorder {
        Some(recorder) => recorder.post(body, event_type, reason, message),
        None => tracing::debug!(reason, "no operator running; event not posted"),
    }
}

/// Posts a Normal event about `body` (any object serialized to JSON), through the running
/// operator's recorder: for code that has no [`Context`](crate::Context) at hand (handlers
/// have [`Context::info`](crate::Context::info)).
///
/// ```no_run
/// # fn report(pod: &k8s_openapi::api::core::v1::Pod) {
/// let body = serde_json::to_value(pod).unwrap();
/// kopr::info(&body, "Noticed", "the pod restarted");
/// kopr::warn(&body, "Restarting", "the pod restarted 5 times");
/// # }
/// ```
///
/// # Caveats
/// Inside a handler, the event goes through that handler's operator; elsewhere through the
/// operator started last in the process. With none started, it is dropped (with a debug log
/// line).
pub fn info(body: &Value, reason: &str, message: &str) {
    post_global(body, EventType::Normal, reason, message);
}

/// Posts a Warning event about `body`.
pub fn warn(body: &Value, reason: &str, message: &str) {
    post_global(body, EventType::Warning, reason, message);
}

/// Posts a Warning event about `body` describing `error`.
pub fn exception(body: &Value, reason: &str, error: &dyn std::fmt::Display) {
    post_global(body, EventType::Warning, reason, &error.to_string());
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kopf_rules() {
        let cluster =
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1", "uid": "u"}});
        let event = build_event(
            "kopr",
            &cluster,
            EventType::Normal,
            "Hello",
            &"é".repeat(700),
        )
        .unwrap();
        assert_eq!(event.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(event.involved_object.namespace, None);
        let message = event.message.unwrap();
        assert!(message.len() <= MESSAGE_LIMIT && message.ends_with("..."));
        let about_event = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}});
        assert!(build_event("kopr", &about_event, EventType::Warning, "X", "y").is_none());
        let namespaced = json!({"apiVersion": "example.com/v1", "kind": "Greeting",
                                "metadata": {"name": "g", "namespace": "ns1"}});
        let event = build_event("kopr", &namespaced, EventType::Warning, "Failed", "m").unwrap();
        assert_eq!(event.metadata.namespace.as_deref(), Some("ns1"));
        assert_eq!(event.type_.as_deref(), Some("Warning"));
    }
}
