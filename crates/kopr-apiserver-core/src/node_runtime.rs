//! The connection to a node's kubelet: what the API server asks of the node a pod runs on
//! (a container's log, a process in a container, a forwarded port, the kubelet's own HTTP
//! endpoints behind the node proxy). kube-apiserver reaches kubelets through an injected
//! connection getter; this server is given a [`NodeRuntime`] the same way. Without one, or
//! for a node the runtime does not serve, the request gets kube's answer for a kubelet that
//! cannot be dialed ([`dial_error`]).

use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::status::ApiError;

/// The port a kubelet serves on when the node does not say.
pub const DEFAULT_KUBELET_PORT: u16 = 10250;

/// One instance of a container, as its status describes it.
#[derive(Debug, Clone)]
pub struct Instance {
    /// When it started.
    pub started_at: jiff::Timestamp,
    /// When and how it ended, if it has.
    pub finished: Option<(jiff::Timestamp, i64)>,
}

/// One log line.
#[derive(Debug, Clone, PartialEq)]
pub struct LogLine {
    /// When it was written.
    pub time: jiff::Timestamp,
    /// The text.
    pub text: String,
}

/// The two output streams of a command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stream {
    /// fd 1
    Stdout,
    /// fd 2
    Stderr,
}

/// The container a process runs in.
#[derive(Debug, Clone)]
pub struct Container {
    /// The pod.
    pub pod: Arc<Value>,
    /// The container's spec.
    pub spec: Value,
    /// Its `containerID` while it runs.
    pub id: String,
}

/// A request to a kubelet's HTTP endpoints, as the node proxy passes it on.
#[derive(Debug, Clone, Copy)]
pub struct ProxyRequest<'a> {
    /// The method.
    pub method: &'a http::Method,
    /// The path, clean (as kube-apiserver's proxy joins it).
    pub path: &'a str,
    /// The raw query.
    pub query: Option<&'a str>,
    /// The `Accept` header.
    pub accept: Option<&'a str>,
    /// The `Content-Type` header.
    pub content_type: Option<&'a str>,
    /// The body.
    pub body: &'a [u8],
}

/// What a kubelet knows when it answers: its node and the pods bound to it.
#[derive(Debug, Clone, Copy)]
pub struct NodeView<'a> {
    /// The node.
    pub node: &'a Value,
    /// The pods whose `spec.nodeName` is the node.
    pub pods: &'a [Arc<Value>],
    /// The current time.
    pub now: jiff::Timestamp,
}

/// The kubelets the server reaches.
///
/// # Guarantees
/// The server calls a method for a node only after [`NodeRuntime::serves`] said yes for it
/// ([`NodeRuntime::log`] excepted: a pod's log is generated from its status wherever it
/// runs).
pub trait NodeRuntime: Send + Sync {
    /// Whether this runtime runs the node's kubelet.
    fn serves(&self, node: &Value) -> bool;

    /// The lines a container instance has written.
    fn log(&self, pod: &Value, container: &Value, init: bool, instance: &Instance) -> Vec<LogLine>;

    /// Runs `command` in the container with the given streams (stdin until the client
    /// closes it; output until the command ends); resolves to its exit status.
    fn exec(
        &self,
        container: Container,
        command: Vec<String>,
        stdin: Option<mpsc::UnboundedReceiver<Bytes>>,
        out: mpsc::Sender<(Stream, Bytes)>,
    ) -> BoxFuture<'static, i32>;

    /// Why a connection to `port` of the pod is refused, if it is (the container runtime's
    /// words).
    fn port_refusal(&self, pod: &Value, port: u16) -> Option<String>;

    /// Serves one forwarded connection: `input` is what the client sends (closed at its end),
    /// `output` takes what the pod's listener answers.
    fn forward(
        &self,
        pod: &Value,
        port: u16,
        input: mpsc::UnboundedReceiver<Bytes>,
        output: mpsc::Sender<Bytes>,
    ) -> BoxFuture<'static, ()>;

    /// Answers a request to the kubelet's own HTTP endpoints.
    fn proxy(&self, request: &ProxyRequest<'_>, view: &NodeView<'_>) -> http::Response<Vec<u8>>;
}

/// A node's InternalIP.
pub fn internal_ip(node: &Value) -> Option<&str> {
    node.pointer("/status/addresses")
        .and_then(Value::as_array)?
        .iter()
        .find(|a| a.get("type").and_then(Value::as_str) == Some("InternalIP"))
        .and_then(|a| a.get("address"))
        .and_then(Value::as_str)
}

/// The error of a kubelet that cannot be dialed, as kube-apiserver answers it (a plain Go
/// error becomes a Status of code 500 and reason Unknown): `host` is the node's InternalIP
/// (its name when it has none).
pub fn dial_error(host: &str) -> ApiError {
    ApiError::new(
        500,
        "",
        format!(
            "error dialing backend: dial tcp {host}:{DEFAULT_KUBELET_PORT}: connect: connection refused"
        ),
    )
}

/// The runtime serving `node`, or the error of a kubelet that cannot be dialed.
pub fn reach<'a>(
    runtime: Option<&'a Arc<dyn NodeRuntime>>,
    node: &Value,
    node_name: &str,
) -> Result<&'a Arc<dyn NodeRuntime>, ApiError> {
    match runtime {
        Some(r) if r.serves(node) => Ok(r),
        _ => Err(dial_error(internal_ip(node).unwrap_or(node_name))),
    }
}
