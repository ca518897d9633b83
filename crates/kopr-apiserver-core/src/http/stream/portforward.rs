//! `pods/portforward` sessions once the connection is upgraded, to the
//! pod's listeners, reached through the [`crate::node_runtime::NodeRuntime`]:
//!
//! - WebSocket channels (`v4.channel.k8s.io`, its base64 variant, or no
//!   subprotocol; the Python client and kube-rs): for the i-th port of the
//!   `ports` parameter, channel 2i carries data both ways and 2i+1 errors;
//!   each starts with the port as two little-endian bytes. The socket
//!   closes once every port's connection is over.
//! - SPDY (plain upgrade, or tunneled through a WebSocket with the
//!   `SPDY/3.1+portforward.k8s.io` subprotocol, kubectl): the client opens
//!   an error and a data stream per connection, paired by `requestID`,
//!   with the port in their `port` header.
//!
//! A port the pod does not declare gets the runtime's refusal on the error
//! channel or stream.

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use serde_json::Value;
use tokio::sync::mpsc;

use super::spdy;
use super::ws::{self, Incoming, Outgoing};
use crate::node_runtime::NodeRuntime;

/// Port forwarding over WebSocket channels.
pub async fn over_websocket(
    pod: Arc<Value>,
    runtime: Arc<dyn NodeRuntime>,
    port_list: Vec<u16>,
    socket: ws::Socket,
    base64: bool,
) {
    let ws::Channels {
        mut incoming,
        outgoing,
    } = ws::channels(socket, base64);
    let mut inputs: Vec<Option<mpsc::UnboundedSender<Bytes>>> = Vec::new();
    let mut tasks = Vec::new();
    for (i, port) in port_list.iter().enumerate() {
        let (data_ch, err_ch) = ((2 * i) as u8, (2 * i + 1) as u8);
        let le = Bytes::copy_from_slice(&port.to_le_bytes());
        let _ = outgoing.send(Outgoing::Data(data_ch, le.clone())).await;
        let _ = outgoing.send(Outgoing::Data(err_ch, le)).await;
        if let Some(msg) = runtime.port_refusal(&pod, *port) {
            let _ = outgoing
                .send(Outgoing::Data(err_ch, Bytes::from(msg)))
                .await;
            inputs.push(None);
            continue;
        }
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(32);
        inputs.push(Some(in_tx));
        let sender = outgoing.clone();
        let listener = runtime.forward(&pod, *port, in_rx, out_tx);
        tasks.push(tokio::spawn(async move {
            let relay = async {
                while let Some(b) = out_rx.recv().await {
                    if sender.send(Outgoing::Data(data_ch, b)).await.is_err() {
                        return;
                    }
                }
            };
            tokio::join!(listener, relay);
        }));
    }
    let all_done = async {
        for t in tasks {
            let _ = t.await;
        }
    };
    let route = async {
        while let Some(msg) = incoming.recv().await {
            if let Incoming::Data(ch, data) = msg
                && ch % 2 == 0
                && let Some(Some(tx)) = inputs.get(usize::from(ch / 2))
            {
                let _ = tx.send(data);
            }
        }
        // The client is gone: every connection's input ends.
        inputs.clear();
        std::future::pending::<()>().await;
    };
    tokio::select! {
        () = all_done => {}
        () = route => {}
    }
    let _ = outgoing.send(Outgoing::Close).await;
}

/// Port forwarding over a SPDY connection.
pub async fn over_spdy(pod: Arc<Value>, runtime: Arc<dyn NodeRuntime>, mut conn: spdy::Connection) {
    // Streams waiting for their pair, by request ID.
    let mut pending: HashMap<String, spdy::Stream> = HashMap::new();
    while let Some(s) = conn.streams.recv().await {
        let request = s
            .header("requestid")
            .map_or_else(|| s.id.to_string(), str::to_string);
        let Some(other) = pending.remove(&request) else {
            pending.insert(request, s);
            continue;
        };
        let (data, error) = if s.header("streamtype") == Some("data") {
            (s, other)
        } else {
            (other, s)
        };
        tokio::spawn(forward(pod.clone(), runtime.clone(), data, error));
    }
    conn.close().await;
}

async fn forward(
    pod: Arc<Value>,
    runtime: Arc<dyn NodeRuntime>,
    data: spdy::Stream,
    error: spdy::Stream,
) {
    let port = data
        .header("port")
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or(0);
    if let Some(refusal) = runtime.port_refusal(&pod, port) {
        error.out.write(refusal.as_bytes()).await;
    } else {
        let (out_tx, mut out_rx) = mpsc::channel::<Bytes>(32);
        let writer = data.out.clone();
        let relay = async move {
            while let Some(b) = out_rx.recv().await {
                if !writer.write(&b).await {
                    return;
                }
            }
        };
        tokio::join!(runtime.forward(&pod, port, data.data, out_tx), relay);
    }
    data.out.finish().await;
    error.out.finish().await;
}
