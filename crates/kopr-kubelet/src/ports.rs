//! The simulated listeners of a simulated pod, which `pods/portforward`
//! connects to: every TCP `containerPort` the pod's containers declare
//! accepts connections. A connection whose first bytes look like an HTTP
//! request gets `HTTP/1.1 200 OK` with the body `ok` for each request (and
//! stays open until the client closes it, or after a request with
//! `Connection: close` or HTTP/1.0); any other connection is an echo
//! server: every byte is sent back. A port nothing declares refuses the
//! connection, with containerd's words.

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use crate::object;

/// Whether the pod declares `port` as a TCP container port.
pub fn declares(pod: &Value, port: u16) -> bool {
    ["containers", "initContainers"].iter().any(|list| {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .flat_map(|c| {
                c.get("ports")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
            })
            .any(|p| {
                let proto = p.get("protocol").and_then(Value::as_str).unwrap_or("TCP");
                p.get("containerPort").and_then(Value::as_u64) == Some(u64::from(port))
                    && (proto == "TCP" || proto.is_empty())
            })
    })
}

/// The simulated pod sandbox's ID (64 hex digits), derived from the pod UID.
pub fn sandbox_id(pod: &Value) -> String {
    let digest = ring::digest::digest(&ring::digest::SHA256, object::uid(pod).as_bytes());
    digest.as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The error a connection to an undeclared port gets, as containerd words
/// it (the kubelet prefixes `error forwarding port …`).
pub fn refused(pod: &Value, port: u16) -> String {
    let id = sandbox_id(pod);
    let uid = object::uid(pod);
    format!(
        "error forwarding port {port} to pod {id}, uid : failed to execute portforward in network namespace \"/var/run/netns/cni-{uid}\": failed to connect to localhost:{port} inside namespace \"{id}\", IPv4: dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: connect: connection refused "
    )
}

const METHODS: [&str; 9] = [
    "GET ", "POST ", "PUT ", "HEAD ", "DELETE ", "PATCH ", "OPTIONS ", "CONNECT ", "TRACE ",
];

/// Serves one connection: `input` is what the client sends (closed at its
/// end), `output` takes what the listener answers. Returns when the
/// connection is over (the listener closes it after the client did, or
/// after an HTTP exchange that closes it).
pub async fn serve(mut input: mpsc::UnboundedReceiver<Bytes>, output: mpsc::Sender<Bytes>) {
    let Some(first) = input.recv().await else {
        return;
    };
    let http = METHODS.iter().any(|m| {
        let n = first.len().min(m.len());
        first[..n] == m.as_bytes()[..n]
    });
    if !http {
        if output.send(first).await.is_err() {
            return;
        }
        while let Some(chunk) = input.recv().await {
            if output.send(chunk).await.is_err() {
                return;
            }
        }
        return;
    }
    let mut buf = first.to_vec();
    loop {
        // A complete request head, then its body (by Content-Length).
        let head_end = loop {
            if let Some(i) = find(&buf, b"\r\n\r\n") {
                break i + 4;
            }
            match input.recv().await {
                Some(chunk) => buf.extend_from_slice(&chunk),
                None => return,
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).to_ascii_lowercase();
        let length = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        while buf.len() < head_end + length {
            match input.recv().await {
                Some(chunk) => buf.extend_from_slice(&chunk),
                None => break,
            }
        }
        let close = head.lines().next().is_some_and(|l| l.ends_with("http/1.0"))
            || head
                .lines()
                .any(|l| l.replace(' ', "") == "connection:close");
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 2\r\n{}\r\nok",
            if close { "Connection: close\r\n" } else { "" }
        );
        if output.send(Bytes::from(answer)).await.is_err() || close {
            return;
        }
        buf.drain(..(head_end + length).min(buf.len()));
        if buf.is_empty() {
            match input.recv().await {
                Some(chunk) => buf.extend_from_slice(&chunk),
                None => return,
            }
        }
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn exchange(chunks: &[&str]) -> String {
        let (itx, irx) = mpsc::unbounded_channel();
        let (otx, mut orx) = mpsc::channel(16);
        for c in chunks {
            let _ = itx.send(Bytes::from(c.to_string()));
        }
        drop(itx);
        serve(irx, otx).await;
        let mut out = String::new();
        while let Some(b) = orx.recv().await {
            out.push_str(&String::from_utf8_lossy(&b));
        }
        out
    }

    #[tokio::test]
    async fn echoes_and_answers_http() {
        assert_eq!(exchange(&["hel", "lo"]).await, "hello");
        let http = exchange(&["GET / HTTP/1.1\r\nHost: x\r\n", "\r\n"]).await;
        assert!(
            http.starts_with("HTTP/1.1 200 OK\r\n") && http.ends_with("\r\n\r\nok"),
            "{http}"
        );
        let pod = serde_json::json!({"spec": {"containers": [{"ports": [{"containerPort": 80}, {"containerPort": 53, "protocol": "UDP"}]}]}});
        assert!(declares(&pod, 80));
        assert!(!declares(&pod, 53));
        assert!(!declares(&pod, 81));
    }
}
