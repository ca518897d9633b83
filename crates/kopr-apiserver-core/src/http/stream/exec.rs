//! `pods/exec` and `pods/attach` sessions once the connection is upgraded:
//! the command runs in the container, through the node's
//! [`NodeRuntime`], with the requested streams
//! wired to WebSocket channels or SPDY streams, and ends with the status
//! on the error channel, worded as the component that writes it in a real
//! cluster: kube-apiserver's stream translator for `v5.channel.k8s.io`
//! (`command terminated with non-zero exit code: command terminated with
//! exit code N`), the kubelet with containerd for the older WebSocket
//! protocols and SPDY (`… error executing command [sh -c exit 3], exit
//! code 3`; plain text before v4).
//!
//! Attach connects to the container's main process, which the simulation
//! models as `cat`: what the client writes to stdin comes back on stdout;
//! without stdin nothing is written. The session ends when stdin closes,
//! the client goes, or the container stops running.

use std::sync::Arc;

use bytes::Bytes;
use serde::Serialize;
use serde_json::Value;
use tokio::sync::mpsc;

use super::spdy;
use super::ws::{self, Incoming, Outgoing};
use crate::http::AppState;
use crate::node_runtime::{Container, NodeRuntime, Stream};
use crate::storage::EventType;

/// What runs, and with which streams.
#[derive(Debug, Clone, Default)]
pub struct ExecOptions {
    /// The command (empty for attach).
    pub command: Vec<String>,
    /// Stdin requested.
    pub stdin: bool,
    /// Stdout requested.
    pub stdout: bool,
    /// Stderr requested (the kubelet drops it with a TTY).
    pub stderr: bool,
    /// A TTY: stderr is merged into stdout.
    pub tty: bool,
    /// Attach rather than exec.
    pub attach: bool,
}

/// The container a session runs in.
#[derive(Clone)]
pub struct Target {
    /// Server state.
    pub state: AppState,
    /// The runtime of the pod's node.
    pub runtime: Arc<dyn NodeRuntime>,
    /// The pod.
    pub pod: Arc<Value>,
    /// The container's spec.
    pub container: Value,
    /// Its `containerID`.
    pub container_id: String,
}

/// Who writes the final status, which decides its words.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Style {
    /// kube-apiserver's stream translator (`v5.channel.k8s.io`).
    Translator,
    /// The kubelet (and containerd), JSON Status (v4 and later).
    KubeletJson,
    /// The kubelet, plain text for failures only (v1 to v3).
    KubeletText,
}

#[derive(Serialize)]
struct Empty {}

#[derive(Serialize)]
struct Cause<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    message: &'a str,
}

#[derive(Serialize)]
struct Details<'a> {
    causes: Vec<Cause<'a>>,
}

/// A metav1.Status as `json.Marshal` writes it (no kind or apiVersion).
#[derive(Serialize)]
struct Status<'a> {
    metadata: Empty,
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    details: Option<Details<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<u16>,
}

/// The status of a finished command.
pub fn exit_status(style: Style, command: &[String], code: i32) -> Option<Vec<u8>> {
    if code == 0 {
        let ok = Status {
            metadata: Empty {},
            status: "Success",
            message: None,
            reason: None,
            details: None,
            code: None,
        };
        return (style != Style::KubeletText).then(|| crate::gojson::to_vec(&ok));
    }
    let inner = match style {
        Style::Translator => format!("command terminated with exit code {code}"),
        _ => format!(
            "error executing command [{}], exit code {code}",
            command.join(" ")
        ),
    };
    let message = format!("command terminated with non-zero exit code: {inner}");
    if style == Style::KubeletText {
        return Some(message.into_bytes());
    }
    let rc = code.to_string();
    let failure = Status {
        metadata: Empty {},
        status: "Failure",
        message: Some(&message),
        reason: Some("NonZeroExitCode"),
        details: Some(Details {
            causes: vec![Cause {
                reason: Some("ExitCode"),
                message: &rc,
            }],
        }),
        code: None,
    };
    Some(crate::gojson::to_vec(&failure))
}

/// An InternalError status (`apierrors.NewInternalError`).
pub fn internal_status(why: &str) -> Vec<u8> {
    let message = format!("Internal error occurred: {why}");
    crate::gojson::to_vec(&Status {
        metadata: Empty {},
        status: "Failure",
        message: Some(&message),
        reason: Some("InternalError"),
        details: Some(Details {
            causes: vec![Cause {
                reason: None,
                message: why,
            }],
        }),
        code: Some(500),
    })
}

impl Target {
    /// Resolves when the container stops running or its pod goes.
    async fn stopped(&self) {
        let mut events = self.state.api.store.subscribe();
        let uid = crate::object::uid(&self.pod).to_string();
        let name = self
            .container
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        loop {
            let ev = match events.recv().await {
                Ok(ev) => ev,
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(_) => return,
            };
            if crate::object::uid(&ev.object) != uid {
                continue;
            }
            if ev.event_type == EventType::Deleted
                || super::running_container_id(&ev.object, &name).as_deref()
                    != Some(self.container_id.as_str())
            {
                return;
            }
        }
    }

    /// Runs the command (or the attached main process) to its end;
    /// returns its exit status. Output goes to `out`.
    async fn run(
        &self,
        opts: &ExecOptions,
        stdin: Option<mpsc::UnboundedReceiver<Bytes>>,
        out: mpsc::Sender<(Stream, Bytes)>,
    ) -> i32 {
        if opts.attach {
            let stopped = self.stopped();
            let echo = async move {
                let Some(mut stdin) = stdin else {
                    return std::future::pending::<()>().await;
                };
                while let Some(chunk) = stdin.recv().await {
                    if out.send((Stream::Stdout, chunk)).await.is_err() {
                        return;
                    }
                }
            };
            tokio::select! {
                () = stopped => {}
                () = echo => {}
            }
            return 0;
        }
        let container = Container {
            pod: self.pod.clone(),
            spec: self.container.clone(),
            id: self.container_id.clone(),
        };
        self.runtime
            .exec(container, opts.command.clone(), stdin, out)
            .await
    }
}

/// Which channel an output stream goes to (None: not requested).
fn channel_of(opts: &ExecOptions, s: Stream) -> Option<u8> {
    match s {
        Stream::Stdout => opts.stdout.then_some(1),
        Stream::Stderr if opts.tty => opts.stdout.then_some(1),
        Stream::Stderr => opts.stderr.then_some(2),
    }
}

/// An exec or attach over a WebSocket channel protocol.
pub async fn over_websocket(
    target: Target,
    opts: ExecOptions,
    socket: ws::Socket,
    base64: bool,
    style: Style,
    failure: Option<String>,
) {
    let ws::Channels {
        mut incoming,
        outgoing,
    } = ws::channels(socket, base64);
    // An empty message on the lowest writable channel tells the client the
    // streams are ready.
    let first = if opts.stdout {
        1
    } else if opts.stderr {
        2
    } else {
        3
    };
    let _ = outgoing.send(Outgoing::Data(first, Bytes::new())).await;
    if let Some(why) = failure {
        // The translator upgraded, then the kubelet refused.
        let _ = outgoing
            .send(Outgoing::Data(3, Bytes::from(internal_status(&why))))
            .await;
        let _ = outgoing.send(Outgoing::Close).await;
        return;
    }
    let (stdin_tx, stdin_rx) = mpsc::unbounded_channel();
    let stdin_rx = opts.stdin.then_some(stdin_rx);
    let (gone_tx, gone_rx) = tokio::sync::oneshot::channel::<()>();
    let wants_stdin = opts.stdin;
    tokio::spawn(async move {
        let mut stdin = wants_stdin.then_some(stdin_tx);
        while let Some(msg) = incoming.recv().await {
            match msg {
                Incoming::Data(0, data) => {
                    if let Some(tx) = &stdin {
                        let _ = tx.send(data);
                    }
                }
                Incoming::Closed(0) => stdin = None,
                _ => {}
            }
        }
        drop(stdin);
        let _ = gone_tx.send(());
    });
    let (out_tx, mut out_rx) = mpsc::channel::<(Stream, Bytes)>(32);
    let forward = {
        let outgoing = outgoing.clone();
        let opts = opts.clone();
        async move {
            while let Some((s, data)) = out_rx.recv().await {
                if let Some(ch) = channel_of(&opts, s) {
                    let _ = outgoing.send(Outgoing::Data(ch, data)).await;
                }
            }
        }
    };
    let run = target.run(&opts, stdin_rx, out_tx);
    let work = async { tokio::join!(run, forward).0 };
    let code = tokio::select! {
        code = work => code,
        _ = gone_rx => {
            // The client went away: the command is stopped.
            return;
        }
    };
    if let Some(status) = exit_status(style, &opts.command, code) {
        let _ = outgoing.send(Outgoing::Data(3, Bytes::from(status))).await;
    }
    let _ = outgoing.send(Outgoing::Close).await;
}

/// An exec or attach over SPDY: waits for the client's streams (error,
/// and stdin, stdout, stderr, resize as requested), runs, writes the
/// status to the error stream and closes the connection.
pub async fn over_spdy(
    target: Target,
    opts: ExecOptions,
    mut conn: spdy::Connection,
    style: Style,
    resize: bool,
) {
    let expected = 1
        + usize::from(opts.stdin)
        + usize::from(opts.stdout)
        + usize::from(opts.stderr)
        + usize::from(opts.tty && resize);
    let mut error: Option<spdy::Writer> = None;
    let mut stdin: Option<mpsc::UnboundedReceiver<Bytes>> = None;
    let mut stdout: Option<spdy::Writer> = None;
    let mut stderr: Option<spdy::Writer> = None;
    let mut received = 0;
    let mut kept = Vec::new();
    let deadline = tokio::time::sleep(std::time::Duration::from_secs(30));
    tokio::pin!(deadline);
    while received < expected {
        let s = tokio::select! {
            s = conn.streams.recv() => s,
            () = &mut deadline => None,
        };
        let Some(s) = s else {
            tracing::debug!("timed out waiting for client to create streams");
            conn.close().await;
            return;
        };
        received += 1;
        match s.header("streamtype").unwrap_or("") {
            "error" => error = Some(s.out.clone()),
            "stdin" => {
                stdin = Some(s.data);
                kept.push(s.out);
                continue;
            }
            "stdout" => stdout = Some(s.out.clone()),
            "stderr" => stderr = Some(s.out.clone()),
            _ => {}
        }
        kept.push(s.out);
    }
    let (out_tx, mut out_rx) = mpsc::channel::<(Stream, Bytes)>(32);
    let forward = {
        let (stdout, stderr) = (stdout.clone(), stderr.clone());
        let tty = opts.tty;
        async move {
            while let Some((s, data)) = out_rx.recv().await {
                let w = match s {
                    Stream::Stdout => stdout.as_ref(),
                    Stream::Stderr if tty => stdout.as_ref(),
                    Stream::Stderr => stderr.as_ref(),
                };
                if let Some(w) = w {
                    w.write(&data).await;
                }
            }
        }
    };
    let run = target.run(&opts, stdin, out_tx);
    let (code, ()) = tokio::join!(run, forward);
    if let (Some(e), Some(status)) = (&error, exit_status(style, &opts.command, code)) {
        e.write(&status).await;
    }
    for w in &kept {
        w.finish().await;
    }
    conn.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_as_kube_writes_them() {
        let cmd: Vec<String> = vec!["sh".into(), "-c".into(), "exit 3".into()];
        let ok = exit_status(Style::Translator, &cmd, 0).unwrap();
        assert_eq!(
            String::from_utf8(ok).unwrap(),
            r#"{"metadata":{},"status":"Success"}"#
        );
        let v5 = String::from_utf8(exit_status(Style::Translator, &cmd, 3).unwrap()).unwrap();
        assert_eq!(
            v5,
            r#"{"metadata":{},"status":"Failure","message":"command terminated with non-zero exit code: command terminated with exit code 3","reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}}"#
        );
        let v4 = String::from_utf8(exit_status(Style::KubeletJson, &cmd, 3).unwrap()).unwrap();
        assert!(
            v4.contains("error executing command [sh -c exit 3], exit code 3"),
            "{v4}"
        );
        assert!(exit_status(Style::KubeletText, &cmd, 0).is_none());
        let internal = String::from_utf8(internal_status("x")).unwrap();
        assert_eq!(
            internal,
            r#"{"metadata":{},"status":"Failure","message":"Internal error occurred: x","reason":"InternalError","details":{"causes":[{"message":"x"}]},"code":500}"#
        );
    }
}
