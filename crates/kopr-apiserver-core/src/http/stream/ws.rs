//! WebSockets for the streaming subresources: the server handshake
//! (subprotocol negotiation as `wsstream` does it: the first protocol the
//! client lists that the server supports, or none when the client lists
//! none) and the Kubernetes channel protocols on top of it: every message
//! starts with its channel number, raw (`*channel.k8s.io`) or as an ASCII
//! digit before base64 data (`*base64.channel.k8s.io`); with
//! `v5.channel.k8s.io` the client closes a channel with `[255, channel]`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::Response;
use base64::Engine;
use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderValue, StatusCode, header};
use hyper_util::rt::TokioIo;
use tokio::sync::{Notify, mpsc};
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::protocol::{CloseFrame, Role, frame::coding::CloseCode};

/// An upgraded WebSocket connection.
pub type Socket = WebSocketStream<TokioIo<hyper::upgrade::Upgraded>>;

/// How long the server waits for the client's close frame after its own.
const CLOSE_WAIT: Duration = Duration::from_secs(10);

fn header_has(headers: &HeaderMap, name: header::HeaderName, token: &str) -> bool {
    headers.get_all(name).iter().any(|v| {
        v.to_str()
            .map(|s| s.split(',').any(|t| t.trim().eq_ignore_ascii_case(token)))
            .unwrap_or(false)
    })
}

/// Whether the request is a WebSocket upgrade (`Upgrade: websocket` and a
/// `Connection` header naming `upgrade`).
pub fn is_websocket(headers: &HeaderMap) -> bool {
    header_has(headers, header::UPGRADE, "websocket")
        && headers.get_all(header::CONNECTION).iter().any(|v| {
            v.to_str()
                .map(|s| s.to_ascii_lowercase().contains("upgrade"))
                .unwrap_or(false)
        })
}

/// The subprotocols the client offers, in its order.
pub fn protocols(headers: &HeaderMap) -> Vec<String> {
    headers
        .get_all(header::SEC_WEBSOCKET_PROTOCOL)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|s| s.split(','))
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

/// The protocol `wsstream` picks: the client's first one the server
/// allows (`""` standing for none offered).
pub fn choose(offered: &[String], allowed: &[&str]) -> Option<String> {
    if offered.is_empty() {
        return allowed.contains(&"").then(String::new);
    }
    offered
        .iter()
        .find(|p| allowed.contains(&p.as_str()))
        .cloned()
}

/// The `101 Switching Protocols` answer to a WebSocket handshake with the
/// chosen subprotocol (none when empty).
///
/// # Errors
/// `400` for a handshake without a key or of another WebSocket version.
pub fn accept(headers: &HeaderMap, protocol: &str) -> Result<Response, Box<Response>> {
    let key = headers
        .get(header::SEC_WEBSOCKET_KEY)
        .map(|k| k.as_bytes().to_vec());
    let version_ok = headers
        .get(header::SEC_WEBSOCKET_VERSION)
        .is_some_and(|v| v.as_bytes() == b"13");
    let (Some(key), true) = (key, version_ok) else {
        let mut r = Response::new(Body::empty());
        *r.status_mut() = StatusCode::BAD_REQUEST;
        r.headers_mut().insert(
            header::SEC_WEBSOCKET_VERSION,
            HeaderValue::from_static("13"),
        );
        return Err(Box::new(r));
    };
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(&key);
    let mut r = Response::new(Body::empty());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let h = r.headers_mut();
    h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    h.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(v) = HeaderValue::from_str(&accept) {
        h.insert(header::SEC_WEBSOCKET_ACCEPT, v);
    }
    if !protocol.is_empty()
        && let Ok(v) = HeaderValue::from_str(protocol)
    {
        h.insert(header::SEC_WEBSOCKET_PROTOCOL, v);
    }
    Ok(r)
}

/// The WebSocket of an upgraded connection (None when the upgrade failed).
pub async fn socket(on: hyper::upgrade::OnUpgrade) -> Option<Socket> {
    match on.await {
        Ok(upgraded) => {
            Some(WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await)
        }
        Err(e) => {
            tracing::debug!(error = %e, "websocket upgrade failed");
            None
        }
    }
}

/// What the client sent on a channel connection.
#[derive(Debug)]
pub enum Incoming {
    /// Data on a channel.
    Data(u8, Bytes),
    /// `v5.channel.k8s.io`: the client closed a channel.
    Closed(u8),
}

/// What the server sends on a channel connection.
#[derive(Debug)]
pub enum Outgoing {
    /// Data on a channel (an empty message tells the channel is open).
    Data(u8, Bytes),
    /// The end: a close frame.
    Close,
}

/// A channel connection: messages in, messages out. The reader ends when
/// the client closes the socket (or `CLOSE_WAIT` after the server's close
/// frame); the writer ends with [`Outgoing::Close`] or when every sender
/// is dropped.
pub struct Channels {
    /// Messages from the client.
    pub incoming: mpsc::UnboundedReceiver<Incoming>,
    /// Messages to the client.
    pub outgoing: mpsc::Sender<Outgoing>,
}

/// Runs the channel protocol on a socket (`base64` for the base64
/// variants).
pub fn channels(socket: Socket, base64: bool) -> Channels {
    let (mut sink, mut stream) = socket.split();
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let (out_tx, mut out_rx) = mpsc::channel::<Outgoing>(64);
    let closing = Arc::new(Notify::new());
    let closed = closing.clone();
    tokio::spawn(async move {
        let b64 = base64::engine::general_purpose::STANDARD;
        while let Some(out) = out_rx.recv().await {
            let msg = match out {
                Outgoing::Data(ch, data) if base64 => {
                    Message::text(format!("{}{}", char::from(b'0' + ch), b64.encode(&data)))
                }
                Outgoing::Data(ch, data) => {
                    let mut frame = Vec::with_capacity(data.len() + 1);
                    frame.push(ch);
                    frame.extend_from_slice(&data);
                    Message::binary(frame)
                }
                Outgoing::Close => break,
            };
            if sink.send(msg).await.is_err() {
                break;
            }
        }
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            })))
            .await;
        let _ = sink.flush().await;
        closed.notify_one();
    });
    tokio::spawn(async move {
        let b64 = base64::engine::general_purpose::STANDARD;
        let mut deadline: Option<tokio::time::Instant> = None;
        loop {
            let next = match deadline {
                None => tokio::select! {
                    m = stream.next() => m,
                    () = closing.notified() => {
                        deadline = Some(tokio::time::Instant::now() + CLOSE_WAIT);
                        continue;
                    }
                },
                Some(d) => match tokio::time::timeout_at(d, stream.next()).await {
                    Ok(m) => m,
                    Err(_) => break,
                },
            };
            let data = match next {
                Some(Ok(Message::Binary(b))) => b,
                Some(Ok(Message::Text(t))) => Bytes::copy_from_slice(t.as_bytes()),
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => break,
                Some(Ok(_)) => continue,
            };
            if data.is_empty() {
                continue;
            }
            let msg = if data.len() == 2 && data[0] == 255 {
                Incoming::Closed(data[1])
            } else if base64 {
                let ch = data[0].wrapping_sub(b'0');
                match b64.decode(&data[1..]) {
                    Ok(d) => Incoming::Data(ch, Bytes::from(d)),
                    Err(_) => continue,
                }
            } else {
                Incoming::Data(data[0], data.slice(1..))
            };
            // The session may have stopped listening; keep draining.
            let _ = in_tx.send(msg);
        }
    });
    Channels {
        incoming: in_rx,
        outgoing: out_tx,
    }
}

/// A WebSocket carrying a byte stream in binary messages (the SPDY
/// tunnel): returns the other end of an in-memory pipe; what is written
/// to it goes out as messages, and message payloads can be read from it.
pub fn byte_stream(socket: Socket) -> tokio::io::DuplexStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let (ours, theirs) = tokio::io::duplex(256 * 1024);
    let (mut sink, mut stream) = socket.split();
    let (mut read_half, mut write_half) = tokio::io::split(ours);
    tokio::spawn(async move {
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match read_half.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sink.send(Message::binary(buf[..n].to_vec())).await.is_err() {
                        break;
                    }
                }
            }
        }
        let _ = sink
            .send(Message::Close(Some(CloseFrame {
                code: CloseCode::Normal,
                reason: "".into(),
            })))
            .await;
    });
    tokio::spawn(async move {
        while let Some(Ok(msg)) = stream.next().await {
            let data = match msg {
                Message::Binary(b) => b,
                Message::Text(t) => Bytes::copy_from_slice(t.as_bytes()),
                Message::Close(_) => break,
                _ => continue,
            };
            if write_half.write_all(&data).await.is_err() {
                break;
            }
        }
        let _ = write_half.shutdown().await;
    });
    theirs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn negotiates_like_wsstream() {
        let offered = vec![
            "v5.channel.k8s.io".to_string(),
            "v4.channel.k8s.io".to_string(),
        ];
        assert_eq!(
            choose(&offered, &["", "v4.channel.k8s.io"]).as_deref(),
            Some("v4.channel.k8s.io")
        );
        assert_eq!(choose(&[], &["", "channel.k8s.io"]).as_deref(), Some(""));
        assert_eq!(choose(&["x".to_string()], &["", "channel.k8s.io"]), None);
        let mut h = HeaderMap::new();
        h.insert(header::UPGRADE, HeaderValue::from_static("WebSocket"));
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("keep-alive, Upgrade"),
        );
        h.insert(
            header::SEC_WEBSOCKET_PROTOCOL,
            HeaderValue::from_static("v5.channel.k8s.io, v4.channel.k8s.io"),
        );
        assert!(is_websocket(&h));
        assert_eq!(protocols(&h), offered);
    }
}
