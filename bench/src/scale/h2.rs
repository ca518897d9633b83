//! HTTP/2 connections for the watch fan-out. client-go (kubectl, controller-runtime, every
//! Go informer) multiplexes its watches as streams of one HTTP/2 connection; kube-rs opens
//! an HTTP/1.1 connection per watch. The fan-out is measured both ways, and this is the
//! HTTP/2 side: a connection made from the kubeconfig (its CA, server and bearer token),
//! and GETs whose bodies are read as lines.

use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::{Context, bail};
use bytes::Bytes;
use futures::Stream;
use http_body_util::{BodyExt, Empty};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::client::ConfigExt;
use secrecy::ExposeSecret;

/// The lines of a response body, each without its newline.
pub type Lines = Pin<Box<dyn Stream<Item = anyhow::Result<String>> + Send>>;

/// One HTTP/2 connection to the server; each request is a stream of it.
#[derive(Clone)]
pub struct Connection {
    send: SendRequest<Empty<Bytes>>,
    authority: String,
    token: Option<String>,
}

impl Connection {
    /// Connects to the server of `kubeconfig` with TLS, offering only `h2`.
    ///
    /// # Errors
    /// An unreadable kubeconfig, a failed TCP or TLS connection, or a server that does not
    /// speak HTTP/2.
    pub async fn open(kubeconfig: &Path) -> anyhow::Result<Connection> {
        let config = crate::compare::cluster::config(kubeconfig).await?;
        let mut tls = config.rustls_client_config()?;
        tls.alpn_protocols = vec![b"h2".to_vec()];
        let host = config
            .cluster_url
            .host()
            .context("the kubeconfig's server has no host")?
            .trim_matches(|c| c == '[' || c == ']')
            .to_string();
        let port = config.cluster_url.port_u16().unwrap_or(443);
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        tcp.set_nodelay(true)?;
        let name = rustls::pki_types::ServerName::try_from(host.clone())?;
        let stream = tokio_rustls::TlsConnector::from(Arc::new(tls))
            .connect(name, tcp)
            .await?;
        if stream.get_ref().1.alpn_protocol() != Some(b"h2") {
            bail!("the server did not agree to HTTP/2");
        }
        let (send, connection) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await?;
        tokio::spawn(connection);
        let token = config
            .auth_info
            .token
            .as_ref()
            .map(|t| t.expose_secret().to_string());
        Ok(Connection {
            send,
            authority: format!("{}:{port}", config.cluster_url.host().unwrap_or(&host)),
            token,
        })
    }

    /// GETs `path` (with its query) and streams the body's lines.
    ///
    /// # Errors
    /// A closed connection, or a status other than 200 (with the body in the message).
    pub async fn lines(&self, path: &str) -> anyhow::Result<Lines> {
        let mut request = http::Request::get(format!("https://{}{path}", self.authority))
            .header(http::header::USER_AGENT, "kopr-bench/h2");
        if let Some(token) = &self.token {
            request = request.header(http::header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let mut send = self.send.clone();
        send.ready().await?;
        let response = send.send_request(request.body(Empty::new())?).await?;
        if response.status() != http::StatusCode::OK {
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            bail!("GET {path}: {status}: {}", String::from_utf8_lossy(&body));
        }
        Ok(split(response.into_body()))
    }
}

/// The lines of `body`, however its frames cut them.
fn split<B>(body: B) -> Lines
where
    B: hyper::body::Body<Data = Bytes> + Unpin + Send + 'static,
    B::Error: std::error::Error + Send + Sync + 'static,
{
    Box::pin(futures::stream::unfold(
        (body, Vec::<u8>::new()),
        |(mut body, mut buf)| async move {
            loop {
                if let Some(end) = buf.iter().position(|b| *b == b'\n') {
                    let rest = buf.split_off(end + 1);
                    buf.pop();
                    let line = String::from_utf8(std::mem::replace(&mut buf, rest))
                        .map_err(anyhow::Error::from);
                    return Some((line, (body, buf)));
                }
                match body.frame().await {
                    Some(Ok(frame)) => {
                        if let Some(data) = frame.data_ref() {
                            buf.extend_from_slice(data);
                        }
                    }
                    Some(Err(e)) => return Some((Err(e.into()), (body, buf))),
                    None => return None,
                }
            }
        },
    ))
}

#[cfg(test)]
mod tests {
    use futures::StreamExt;

    use super::*;

    #[test]
    fn the_lines_of_a_body_split_across_frames_come_out_whole() {
        // The same splitting as `Connection::lines`, over a body of three frames.
        const FRAMES: [&str; 3] = ["{\"a\":1}\n{\"b\"", ":2}\n", "{\"c\":3}\n"];
        let body = http_body_util::StreamBody::new(futures::stream::iter(FRAMES.iter().map(|f| {
            Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(Bytes::from(*f)))
        })));
        let lines: Vec<String> =
            futures::executor::block_on(split(body).map(|l| l.unwrap_or_default()).collect());
        assert_eq!(lines, ["{\"a\":1}", "{\"b\":2}", "{\"c\":3}"]);
    }
}
