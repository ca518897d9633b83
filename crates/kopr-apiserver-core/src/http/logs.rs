//! The pod `log` subresource: plain-text container logs.
//!
//! Containers are simulated, so their logs are generated: the lines each
//! container instance writes follow from the simulated runtime's rules
//! (the node's [`crate::node_runtime::NodeRuntime`]) and the container's status (when
//! the instance started, whether and how it ended). The log is that of the
//! current instance, or of the last one for a container waiting to restart,
//! or of the one before with `previous=true`; `tailLines` and `timestamps`
//! apply, and `follow=true` keeps streaming until the instance ends or the
//! pod goes. A container that has not started gets kubelet's errors
//! (`container "c" in pod "p" is waiting to start: trying and failing to
//! pull image`). On a node without a simulated kubelet (no container
//! statuses), a container is taken to run since the pod was created.

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use bytes::Bytes;
use http::{HeaderValue, StatusCode, header};
use serde_json::Value;
use tokio::sync::broadcast;

use super::query::Query;
use super::{AppState, response};
use crate::node_runtime::{DEFAULT_KUBELET_PORT, Instance, LogLine, NodeRuntime, internal_ip};
use crate::object;
use crate::registry::Target;
use crate::status::ApiError;
use crate::storage::{EventType, WatchEvent};

/// Serves GET `.../pods/NAME/log`.
pub async fn handle(
    state: &AppState,
    target: &Target,
    query: &Query,
) -> Result<Response, ApiError> {
    // Subscribe first so that no change between the read and the stream is missed.
    let events = query.follow.then(|| state.api.store.subscribe());
    let pod = state.api.get(target).await?;
    let (container, init) = pick_container(&pod, target.name(), query.container.as_deref())?;
    let name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let node = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node.is_empty() {
        return Err(ApiError::bad_request(format!(
            "container \"{name}\" in pod \"{}\" is waiting to start: ContainerCreating",
            target.name()
        )));
    }
    let Some(runtime) = state.node_runtime.clone() else {
        // No kubelet to reach: the error of kube-apiserver's HTTP client (a plain Go error,
        // so a Status of code 500 and reason Unknown).
        let node = super::node_proxy::node_named(state, node).await?;
        let host = internal_ip(&node).unwrap_or(object::name(&node));
        return Err(ApiError::new(
            500,
            "",
            format!(
                "Get \"https://{host}:{DEFAULT_KUBELET_PORT}/containerLogs/{}/{}/{name}\": dial tcp {host}:{DEFAULT_KUBELET_PORT}: connect: connection refused",
                object::namespace(&pod),
                object::name(&pod),
            ),
        ));
    };
    let inst = instance(&pod, &name, init, query.previous)?;
    let mut lines = runtime.log(&pod, &container, init, &inst);
    if let Some(n) = query.tail_lines {
        let n = n.max(0) as usize;
        let skip = lines.len().saturating_sub(n);
        lines.drain(..skip);
    }
    let text = render(&lines, query.timestamps);
    let follow = match events {
        Some(rx) if !query.previous && inst.finished.is_none() => rx,
        _ => {
            return Ok(response::bytes_response(
                StatusCode::OK,
                "text/plain",
                text.into_bytes(),
            ));
        }
    };
    let all = runtime.log(&pod, &container, init, &inst);
    let follower = Follower {
        runtime,
        events: follow,
        key: target.key()?,
        name,
        init,
        container,
        started_at: inst.started_at,
        sent: all.len(),
        timestamps: query.timestamps,
        first: Some(text),
        done: false,
    };
    let stream = futures::stream::unfold(follower, |mut f| async move {
        f.next_chunk()
            .await
            .map(|chunk| (Ok::<Bytes, std::io::Error>(chunk), f))
    });
    let mut r = Response::new(Body::from_stream(stream));
    *r.status_mut() = StatusCode::OK;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    Ok(r)
}

/// The container a request names (or the pod's only container).
fn pick_container(
    pod: &Value,
    pod_name: &str,
    wanted: Option<&str>,
) -> Result<(Value, bool), ApiError> {
    let list = |k: &str| -> Vec<Value> {
        pod.pointer(&format!("/spec/{k}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let containers = list("containers");
    let init = list("initContainers");
    let name_of = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match wanted {
        Some(c) => {
            if let Some(x) = containers.iter().find(|x| name_of(x) == c) {
                return Ok((x.clone(), false));
            }
            if let Some(x) = init.iter().find(|x| name_of(x) == c) {
                return Ok((x.clone(), true));
            }
            Err(ApiError::bad_request(format!(
                "container {c} is not valid for pod {pod_name}"
            )))
        }
        None if containers.len() == 1 => Ok((containers[0].clone(), false)),
        None => {
            let names: Vec<String> = containers.iter().map(name_of).collect();
            Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                names.join(" ")
            )))
        }
    }
}

fn time_of(v: &Value, field: &str) -> Option<jiff::Timestamp> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| s.parse::<jiff::Timestamp>().ok())
}

fn terminated(t: &Value) -> Instance {
    let started_at = time_of(t, "startedAt").unwrap_or_else(jiff::Timestamp::now);
    let finished_at = time_of(t, "finishedAt").unwrap_or(started_at);
    Instance {
        started_at,
        finished: Some((
            finished_at,
            t.get("exitCode").and_then(Value::as_i64).unwrap_or(0),
        )),
    }
}

/// The container instance whose log is asked for, from the pod's status.
fn instance(pod: &Value, name: &str, init: bool, previous: bool) -> Result<Instance, ApiError> {
    let pod_name = object::name(pod);
    let key = if init {
        "/status/initContainerStatuses"
    } else {
        "/status/containerStatuses"
    };
    let statuses = pod.pointer(key).and_then(Value::as_array);
    let status = statuses.and_then(|a| {
        a.iter()
            .find(|c| c.get("name").and_then(Value::as_str) == Some(name))
    });
    let last = status.and_then(|s| s.pointer("/lastState/terminated"));
    if previous {
        return match last {
            Some(t) => Ok(terminated(t)),
            None => Err(ApiError::bad_request(format!(
                "previous terminated container \"{name}\" in pod \"{pod_name}\" not found"
            ))),
        };
    }
    let Some(status) = status else {
        let created = object::meta_str(pod, "creationTimestamp")
            .and_then(|s| s.parse::<jiff::Timestamp>().ok())
            .unwrap_or_else(jiff::Timestamp::now);
        return Ok(Instance {
            started_at: created,
            finished: None,
        });
    };
    if let Some(r) = status.pointer("/state/running") {
        return Ok(Instance {
            started_at: time_of(r, "startedAt").unwrap_or_else(jiff::Timestamp::now),
            finished: None,
        });
    }
    if let Some(t) = status.pointer("/state/terminated") {
        return Ok(terminated(t));
    }
    if let Some(t) = last {
        return Ok(terminated(t));
    }
    let reason = status
        .pointer("/state/waiting/reason")
        .and_then(Value::as_str)
        .unwrap_or("ContainerCreating");
    let why = match reason {
        "ErrImagePull" => "image can't be pulled".to_string(),
        "ImagePullBackOff" => "trying and failing to pull image".to_string(),
        other => other.to_string(),
    };
    Err(ApiError::bad_request(format!(
        "container \"{name}\" in pod \"{pod_name}\" is waiting to start: {why}"
    )))
}

fn render(lines: &[LogLine], timestamps: bool) -> String {
    let mut out = String::new();
    for l in lines {
        if timestamps {
            out.push_str(&l.time.strftime("%Y-%m-%dT%H:%M:%S.%9fZ").to_string());
            out.push(' ');
        }
        out.push_str(&l.text);
        out.push('\n');
    }
    out
}

/// Streams the new lines of one container instance as its pod changes.
struct Follower {
    runtime: Arc<dyn NodeRuntime>,
    events: broadcast::Receiver<Arc<WatchEvent>>,
    key: String,
    name: String,
    init: bool,
    container: Value,
    started_at: jiff::Timestamp,
    sent: usize,
    timestamps: bool,
    first: Option<String>,
    done: bool,
}

impl Follower {
    async fn next_chunk(&mut self) -> Option<Bytes> {
        if let Some(first) = self.first.take()
            && !first.is_empty()
        {
            return Some(Bytes::from(first));
        }
        loop {
            if self.done {
                return None;
            }
            let ev = match self.events.recv().await {
                Ok(ev) => ev,
                Err(broadcast::error::RecvError::Lagged(_)) => continue,
                Err(broadcast::error::RecvError::Closed) => return None,
            };
            if ev.key != self.key {
                continue;
            }
            if ev.event_type == EventType::Deleted {
                return None;
            }
            let pod = &ev.object;
            let Ok(inst) = instance(pod, &self.name, self.init, false) else {
                continue;
            };
            if inst.started_at != self.started_at {
                // The followed instance is gone; a new one started.
                return None;
            }
            if inst.finished.is_some() {
                self.done = true;
            }
            let lines = self.runtime.log(pod, &self.container, self.init, &inst);
            if lines.len() > self.sent {
                let text = render(&lines[self.sent..], self.timestamps);
                self.sent = lines.len();
                return Some(Bytes::from(text));
            }
        }
    }
}
