//! The streaming pod subresources `pods/exec`, `pods/attach` and
//! `pods/portforward`, for pods on simulated nodes. A request goes through
//! the checks kube-apiserver makes (the pod, the container, a node
//! assigned, the node reachable; errors are Status JSON), then the
//! kubelet's (the requested streams, the container running; errors are
//! plain text, as the kubelet's reach clients through the API server's
//! proxy), then the connection is upgraded:
//!
//! - WebSocket with `v5.channel.k8s.io` (exec, attach): served as
//!   kube-apiserver's stream translator serves it; a kubelet refusal
//!   arrives after the upgrade, as an InternalError status;
//! - WebSocket with the older channel protocols (`v4.channel.k8s.io`,
//!   `channel.k8s.io` and their base64 variants, or none), as the kubelet
//!   serves them;
//! - WebSocket with `SPDY/3.1+portforward.k8s.io` (port-forward): SPDY
//!   tunneled in binary messages, as kube-apiserver's tunneling handler;
//! - `Upgrade: SPDY/3.1` with `X-Stream-Protocol-Version` negotiation.
//!
//! A request that is no upgrade gets kube's `Upgrade request required`.
//! RBAC is kube 1.32's: the verb follows the method (`get` for the
//! WebSocket GET, `create` for POST).

mod exec;
mod portforward;
mod spdy;
mod ws;

use std::sync::Arc;

use axum::body::Body;
use axum::response::Response;
use http::request::Parts;
use http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use serde_json::Value;

use super::AppState;
use crate::registry::Target;
use crate::status::ApiError;
use exec::{ExecOptions, Style};

/// The exec protocols the kubelet speaks over SPDY, newest first.
const EXEC_SPDY: [&str; 5] = [
    "v5.channel.k8s.io",
    "v4.channel.k8s.io",
    "v3.channel.k8s.io",
    "v2.channel.k8s.io",
    "channel.k8s.io",
];
/// The exec WebSocket subprotocols the kubelet serves.
const EXEC_WS: [&str; 5] = [
    "",
    "channel.k8s.io",
    "base64.channel.k8s.io",
    "v4.channel.k8s.io",
    "v4.base64.channel.k8s.io",
];
/// The port-forward WebSocket subprotocols the kubelet serves.
const PORTFORWARD_WS: [&str; 3] = ["", "v4.channel.k8s.io", "v4.base64.channel.k8s.io"];
const PORTFORWARD_SPDY: &str = "portforward.k8s.io";
const TUNNEL_PREFIX: &str = "SPDY/3.1+";
const PROTOCOL_HEADER: &str = "x-stream-protocol-version";

/// Which streaming subresource.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Exec,
    Attach,
    PortForward,
}

/// Go's query-to-bool conversion: only `false`, `0` and absence are false.
fn go_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

/// The `containerID` of a container while it runs.
pub fn running_container_id(pod: &Value, name: &str) -> Option<String> {
    [
        "containerStatuses",
        "initContainerStatuses",
        "ephemeralContainerStatuses",
    ]
    .iter()
    .flat_map(|k| {
        pod.pointer(&format!("/status/{k}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
    })
    .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
    .filter(|s| s.pointer("/state/running").is_some())
    .and_then(|s| s.get("containerID").and_then(Value::as_str))
    .map(str::to_string)
}

/// The container a request names: all of the pod's containers count;
/// without a name, the pod's only container.
fn pick_container(pod: &Value, pod_name: &str, wanted: Option<&str>) -> Result<Value, ApiError> {
    let all: Vec<&Value> = ["initContainers", "containers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| {
            pod.pointer(&format!("/spec/{k}"))
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .collect();
    let name_of = |c: &Value| {
        c.get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    match wanted {
        Some(w) => all
            .iter()
            .find(|c| name_of(c) == w)
            .map(|c| (*c).clone())
            .ok_or_else(|| {
                ApiError::bad_request(format!("container {w} is not valid for pod {pod_name}"))
            }),
        None => {
            let containers: Vec<&Value> = pod
                .pointer("/spec/containers")
                .and_then(Value::as_array)
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            match containers.as_slice() {
                [only] => Ok((*only).clone()),
                [] => Err(ApiError::bad_request(format!(
                    "a container name must be specified for pod {pod_name}"
                ))),
                _ => {
                    let names: Vec<String> = all.iter().map(|c| name_of(c)).collect();
                    Err(ApiError::bad_request(format!(
                        "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                        names.join(" ")
                    )))
                }
            }
        }
    }
}

/// A refusal by the kubelet: plain text with a status code.
struct Refusal(StatusCode, String);

fn text(code: StatusCode, body: String) -> Response {
    let mut r = Response::new(Body::from(body));
    *r.status_mut() = code;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// How the client asks to upgrade.
enum Upgrade {
    /// WebSocket with its offered subprotocols.
    WebSocket(Vec<String>),
    /// SPDY/3.1 with its offered stream protocols.
    Spdy(Vec<String>),
}

fn upgrade_of(headers: &HeaderMap) -> Option<Upgrade> {
    let connection_upgrade = headers.get_all(header::CONNECTION).iter().any(|v| {
        v.to_str()
            .map(|s| s.to_ascii_lowercase().contains("upgrade"))
            .unwrap_or(false)
    });
    if !connection_upgrade {
        return None;
    }
    if ws::is_websocket(headers) {
        return Some(Upgrade::WebSocket(ws::protocols(headers)));
    }
    let offered: Vec<String> = headers
        .get_all(PROTOCOL_HEADER)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|s| s.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    Some(Upgrade::Spdy(offered))
}

fn spdy_requested(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("spdy/3.1"))
}

/// `httpstream.Handshake`: the client's first protocol the server speaks.
fn negotiate(offered: &[String], supported: &[&str]) -> Result<String, Box<Response>> {
    if offered.is_empty() {
        return Err(Box::new(text(
            StatusCode::BAD_REQUEST,
            "unable to upgrade: X-Stream-Protocol-Version is required".into(),
        )));
    }
    if let Some(p) = offered.iter().find(|p| supported.contains(&p.as_str())) {
        return Ok(p.clone());
    }
    let mut r = text(
        StatusCode::FORBIDDEN,
        format!(
            "unable to upgrade: unable to negotiate protocol: client supports [{}], server accepts [{}]\n",
            offered.join(" "),
            supported.join(" ")
        ),
    );
    for s in supported {
        if let Ok(v) = HeaderValue::from_str(s) {
            r.headers_mut()
                .append("x-accepted-stream-protocol-versions", v);
        }
    }
    Err(Box::new(r))
}

/// The `101` answer to a SPDY upgrade.
fn spdy_switch(protocol: &str) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    h.insert(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
    if let Ok(v) = HeaderValue::from_str(protocol) {
        h.insert(PROTOCOL_HEADER, v);
    }
    r
}

/// The query of a streaming request.
#[derive(Default)]
struct Params {
    exec: ExecOptions,
    container: Option<String>,
    ports: Vec<String>,
}

fn params(raw: Option<&str>, kind: Kind) -> Params {
    let mut p = Params::default();
    p.exec.attach = kind == Kind::Attach;
    for (k, v) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "command" if kind == Kind::Exec => p.exec.command.push(v.into_owned()),
            "container" => p.container = Some(v.into_owned()).filter(|c| !c.is_empty()),
            "stdin" => p.exec.stdin = go_bool(&v),
            "stdout" => p.exec.stdout = go_bool(&v),
            "stderr" => p.exec.stderr = go_bool(&v),
            "tty" => p.exec.tty = go_bool(&v),
            "ports" => p.ports.push(v.into_owned()),
            _ => {}
        }
    }
    p
}

/// Serves a request to `pods/NAME/{exec,attach,portforward}`.
pub async fn handle(
    state: &AppState,
    parts: &Parts,
    target: &Target,
    subresource: &str,
) -> Result<Response, ApiError> {
    let kind = match subresource {
        "exec" => Kind::Exec,
        "attach" => Kind::Attach,
        _ => Kind::PortForward,
    };
    if parts.method != Method::GET && parts.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let mut p = params(parts.uri.query(), kind);
    let pod = state.api.get(target).await?;
    let pod_name = target.name().to_string();
    let container = match kind {
        Kind::PortForward => Value::Null,
        _ => pick_container(&pod, &pod_name, p.container.as_deref())?,
    };
    let node_name = pod
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if node_name.is_empty() {
        return Err(ApiError::bad_request(format!(
            "pod {pod_name} does not have a host assigned"
        )));
    }
    let node = super::node_proxy::node_named(state, node_name).await?;
    let runtime =
        crate::node_runtime::reach(state.node_runtime.as_ref(), &node, node_name)?.clone();
    if kind == Kind::Exec && p.exec.command.is_empty() {
        return Err(ApiError::bad_request(
            "you must specify at least one command for the container",
        ));
    }
    let Some(upgrade) = upgrade_of(&parts.headers) else {
        return Err(ApiError::bad_request("Upgrade request required"));
    };
    let Some(on_upgrade) = parts.extensions.get::<hyper::upgrade::OnUpgrade>().cloned() else {
        return Err(ApiError::bad_request("Upgrade request required"));
    };
    let container_name = container
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let refusal = kubelet_refusal(kind, &pod, &pod_name, &container_name, &mut p, &upgrade);
    let session = Session {
        kind,
        exec_target: exec::Target {
            state: state.clone(),
            runtime: runtime.clone(),
            container_id: running_container_id(&pod, &container_name).unwrap_or_default(),
            pod: pod.clone(),
            container,
        },
        pod,
        runtime,
        params: p,
        refusal,
        on_upgrade,
    };
    Ok(match upgrade {
        Upgrade::WebSocket(offered) => session.over_websocket(parts, &offered),
        Upgrade::Spdy(offered) => session.over_spdy(parts, &offered),
    })
}

/// The kubelet's checks before it upgrades the connection.
fn kubelet_refusal(
    kind: Kind,
    pod: &Value,
    pod_name: &str,
    container_name: &str,
    p: &mut Params,
    upgrade: &Upgrade,
) -> Option<Refusal> {
    if kind == Kind::PortForward {
        let sandbox = matches!(
            pod.pointer("/status/phase")
                .and_then(Value::as_str)
                .unwrap_or(""),
            "Pending" | "Running"
        ) && pod
            .pointer("/status/podIP")
            .and_then(Value::as_str)
            .is_some_and(|ip| !ip.is_empty());
        return (!sandbox).then(|| {
            Refusal(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!(
                    "pod not found (\"{pod_name}_{}\")",
                    crate::object::namespace(pod)
                ),
            )
        });
    }
    if p.exec.tty
        && p.exec.stderr
        && !matches!(upgrade, Upgrade::WebSocket(o) if o.iter().any(|x| x == "v5.channel.k8s.io"))
    {
        p.exec.stderr = false;
    }
    if !p.exec.stdin && !p.exec.stdout && !p.exec.stderr {
        Some(Refusal(
            StatusCode::BAD_REQUEST,
            "you must specify at least 1 of stdin, stdout, stderr".into(),
        ))
    } else if running_container_id(pod, container_name).is_none() {
        Some(Refusal(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("container not found (\"{container_name}\")"),
        ))
    } else {
        None
    }
}

/// An exec, attach or port-forward request that passed the API server's checks, waiting
/// for its connection to be upgraded.
struct Session {
    kind: Kind,
    pod: Arc<Value>,
    runtime: Arc<dyn crate::node_runtime::NodeRuntime>,
    exec_target: exec::Target,
    params: Params,
    /// The kubelet's refusal, if it refuses.
    refusal: Option<Refusal>,
    on_upgrade: hyper::upgrade::OnUpgrade,
}

impl Session {
    /// Upgrades to a WebSocket: a tunnel of SPDY for port-forward (kubectl 1.31 and later),
    /// the v5 stream translator, or the kubelet's channel protocols.
    fn over_websocket(self, parts: &Parts, offered: &[String]) -> Response {
        let Session {
            kind,
            pod,
            runtime,
            exec_target,
            params: p,
            refusal,
            on_upgrade,
        } = self;
        let tunnel: Vec<String> = offered
            .iter()
            .filter_map(|o| o.strip_prefix(TUNNEL_PREFIX))
            .filter(|o| o.ends_with(".k8s.io"))
            .map(str::to_string)
            .collect();
        if kind == Kind::PortForward && offered.iter().any(|o| o.starts_with(TUNNEL_PREFIX)) {
            if tunnel.is_empty() {
                return text(
                    StatusCode::BAD_REQUEST,
                    "unable to upgrade: no tunneling spdy protocols provided\n".into(),
                );
            }
            if let Some(Refusal(code, why)) = refusal {
                return text(code, why);
            }
            let chosen = match negotiate(&tunnel, &[PORTFORWARD_SPDY]) {
                Ok(c) => c,
                Err(r) => return *r,
            };
            let protocol = format!("{TUNNEL_PREFIX}{chosen}");
            let resp = ws::accept(&parts.headers, &protocol).unwrap_or_else(|r| *r);
            tokio::spawn(async move {
                if let Some(socket) = ws::socket(on_upgrade).await {
                    let conn = spdy::serve(ws::byte_stream(socket));
                    portforward::over_spdy(pod, runtime, conn).await;
                }
            });
            return resp;
        }
        let v5 = kind != Kind::PortForward && offered.iter().any(|o| o == "v5.channel.k8s.io");
        if v5 {
            let resp = match ws::accept(&parts.headers, "v5.channel.k8s.io") {
                Ok(r) => r,
                Err(r) => return *r,
            };
            let failure =
                refusal.map(|Refusal(_, why)| format!("unable to upgrade connection: {why}"));
            tokio::spawn(async move {
                if let Some(socket) = ws::socket(on_upgrade).await {
                    exec::over_websocket(
                        exec_target,
                        p.exec,
                        socket,
                        false,
                        Style::Translator,
                        failure,
                    )
                    .await;
                }
            });
            return resp;
        }
        if let Some(Refusal(code, why)) = refusal {
            return text(code, why);
        }
        let allowed: &[&str] = if kind == Kind::PortForward {
            &PORTFORWARD_WS
        } else {
            &EXEC_WS
        };
        let Some(chosen) = ws::choose(offered, allowed) else {
            let mut r = Response::new(Body::empty());
            *r.status_mut() = StatusCode::FORBIDDEN;
            return r;
        };
        let ports = if kind == Kind::PortForward {
            match port_list(&p.ports) {
                Ok(ports) => ports,
                Err(why) => return text(StatusCode::BAD_REQUEST, why),
            }
        } else {
            Vec::new()
        };
        let resp = match ws::accept(&parts.headers, &chosen) {
            Ok(r) => r,
            Err(r) => return *r,
        };
        let base64 = chosen.contains("base64");
        let style = if chosen.starts_with("v4.") {
            Style::KubeletJson
        } else {
            Style::KubeletText
        };
        tokio::spawn(async move {
            let Some(socket) = ws::socket(on_upgrade).await else {
                return;
            };
            match kind {
                Kind::PortForward => {
                    portforward::over_websocket(pod, runtime, ports, socket, base64).await
                }
                _ => exec::over_websocket(exec_target, p.exec, socket, base64, style, None).await,
            }
        });
        resp
    }

    /// Upgrades to SPDY/3.1 with one of the offered stream protocols.
    fn over_spdy(self, parts: &Parts, offered: &[String]) -> Response {
        let Session {
            kind,
            pod,
            runtime,
            exec_target,
            params: p,
            refusal,
            on_upgrade,
        } = self;
        if let Some(Refusal(code, why)) = refusal {
            return text(code, why);
        }
        if !spdy_requested(&parts.headers) {
            return text(
                StatusCode::BAD_REQUEST,
                "unable to upgrade: missing upgrade headers in request".into(),
            );
        }
        let supported: &[&str] = if kind == Kind::PortForward {
            &[PORTFORWARD_SPDY]
        } else {
            &EXEC_SPDY
        };
        let chosen = match negotiate(offered, supported) {
            Ok(c) => c,
            Err(r) => return *r,
        };
        let resp = spdy_switch(&chosen);
        let (style, resize) = match chosen.as_str() {
            "v5.channel.k8s.io" | "v4.channel.k8s.io" => (Style::KubeletJson, true),
            "v3.channel.k8s.io" => (Style::KubeletText, true),
            _ => (Style::KubeletText, false),
        };
        tokio::spawn(async move {
            let upgraded = match on_upgrade.await {
                Ok(u) => u,
                Err(e) => {
                    tracing::debug!(error = %e, "SPDY upgrade failed");
                    return;
                }
            };
            let conn = spdy::serve(hyper_util::rt::TokioIo::new(upgraded));
            match kind {
                Kind::PortForward => portforward::over_spdy(pod, runtime, conn).await,
                _ => exec::over_spdy(exec_target, p.exec, conn, style, resize).await,
            }
        });
        resp
    }
}

/// The `ports` parameter as the kubelet reads it for WebSockets.
fn port_list(raw: &[String]) -> Result<Vec<u16>, String> {
    if raw.is_empty() {
        return Err("query parameter \"ports\" is required".into());
    }
    let mut out = Vec::new();
    for s in raw {
        if s.is_empty() {
            return Err("query parameter \"ports\" cannot be empty".into());
        }
        for part in s.split(',') {
            match part.parse::<u16>() {
                Ok(0) => return Err(format!("port \"{s}\" must be > 0")),
                Ok(n) => out.push(n),
                Err(e) => return Err(format!("unable to parse \"{s}\" as a port: {e}")),
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn containers_and_params() {
        let pod = serde_json::json!({"spec": {"containers": [{"name": "a"}, {"name": "b"}], "initContainers": [{"name": "i"}]}});
        assert_eq!(
            pick_container(&pod, "p", None).unwrap_err().message,
            "a container name must be specified for pod p, choose one of: [i a b]"
        );
        assert_eq!(
            pick_container(&pod, "p", Some("x")).unwrap_err().message,
            "container x is not valid for pod p"
        );
        assert!(pick_container(&pod, "p", Some("i")).is_ok());
        let p = params(
            Some("command=sh&command=-c&command=echo+hi&stdout=true&stderr=1&stdin=false&tty="),
            Kind::Exec,
        );
        assert_eq!(p.exec.command, ["sh", "-c", "echo hi"]);
        assert!(p.exec.stdout && p.exec.stderr && !p.exec.stdin && p.exec.tty);
        assert_eq!(port_list(&["80,81".into()]).unwrap(), [80, 81]);
        assert!(port_list(&[]).is_err());
    }
}
