//! HTTP/2 as curl, client-go and kubectl speak it (issue 33): an answer the server gives
//! before reading the request body (413 for a body over the limit, 401 without credentials)
//! arrives whole, and the unread rest of the body is refused only afterwards, with
//! `RST_STREAM(NO_ERROR)` as Go's server sends, never as a stream error that loses it.

use crate::common;

use bytes::Bytes;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioExecutor, TokioIo};

/// What one request over a new HTTP/2 connection came to.
#[derive(Debug)]
enum Outcome {
    /// A complete answer: its status and body.
    Answer(u16, String),
    /// The stream or connection broke; what the client reported.
    Broken(String),
}

/// POSTs `size` bytes of a JSON ConfigMap in 64 KiB frames over a new HTTP/2 connection, as
/// curl does with `--data-binary @file`, and reads the whole answer.
async fn post_over_h2(
    server: &kopr_apiserver::ApiServer,
    token: Option<&str>,
    size: usize,
) -> Outcome {
    let tcp = tokio::net::TcpStream::connect(server.addr()).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("localhost").unwrap();
    let tls = common::tls_connector(server, &[b"h2"])
        .connect(name, tcp)
        .await
        .unwrap();
    assert_eq!(
        tls.get_ref().1.alpn_protocol(),
        Some(&b"h2"[..]),
        "the server speaks HTTP/2"
    );
    let (mut send, connection) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
            .await
            .unwrap();
    let driver = tokio::spawn(connection);

    // {"metadata":{"name":"big"},"data":{"k":"xxxx…"}}, sent frame by frame.
    let head = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":""#;
    let tail = br#""}}"#;
    let mut chunks = vec![Bytes::from_static(head)];
    let mut left = size - head.len() - tail.len();
    while left > 0 {
        let n = left.min(64 * 1024);
        chunks.push(Bytes::from(vec![b'x'; n]));
        left -= n;
    }
    chunks.push(Bytes::from_static(tail));
    let body = http_body_util::StreamBody::new(futures::stream::iter(
        chunks
            .into_iter()
            .map(|c| Ok::<_, std::convert::Infallible>(hyper::body::Frame::data(c))),
    ));
    let mut request = http::Request::post(format!(
        "https://localhost:{}/api/v1/namespaces/default/configmaps",
        server.addr().port()
    ))
    .header("content-type", "application/json")
    .header("content-length", size.to_string());
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let outcome = match send.send_request(request.body(body).unwrap()).await {
        Err(e) => Outcome::Broken(format!("{e:?}")),
        Ok(response) => {
            let status = response.status().as_u16();
            match response.into_body().collect().await {
                Ok(b) => Outcome::Answer(status, String::from_utf8_lossy(&b.to_bytes()).into()),
                Err(e) => Outcome::Broken(format!("status {status}, then {e:?}")),
            }
        }
    };
    drop(send);
    driver.abort();
    outcome
}

/// Runs `tries` requests and returns the answers, failing with every broken one listed.
async fn answers(
    server: &kopr_apiserver::ApiServer,
    token: Option<&str>,
    tries: usize,
) -> Vec<(u16, serde_json::Value)> {
    let mut answers = Vec::new();
    let mut broken = Vec::new();
    for _ in 0..tries {
        match post_over_h2(server, token, 4 * 1024 * 1024).await {
            Outcome::Answer(code, body) => {
                let status = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{e}: {body}"));
                answers.push((code, status));
            }
            Outcome::Broken(why) => broken.push(why),
        }
    }
    println!("{} of {tries} answered whole over HTTP/2", answers.len());
    assert!(
        broken.is_empty(),
        "{} of {tries} broken: {broken:#?}",
        broken.len()
    );
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_over_the_limit_gets_the_413_status_every_time() {
    let f = common::start().await;
    let answers = answers(&f.server, Some(f.server.token()), 20).await;
    assert_eq!(answers.len(), 20);
    for (code, status) in answers {
        assert_eq!(code, 413, "{status}");
        assert_eq!(status["kind"], "Status", "{status}");
        assert_eq!(status["reason"], "RequestEntityTooLarge", "{status}");
        assert_eq!(status["code"], 413, "{status}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_sent_without_credentials_gets_the_401_status_every_time() {
    let f = common::start().await;
    let answers = answers(&f.server, Some("not-a-token"), 5).await;
    assert_eq!(answers.len(), 5);
    for (code, status) in answers {
        assert_eq!(code, 401, "{status}");
        assert_eq!(status["reason"], "Unauthorized", "{status}");
    }
}

/// curl 7.x, the client that first showed it: over HTTP/2 it reports a stream reset that
/// follows the answer while it is still sending as `(92) Stream error in the HTTP/2 framing
/// layer` and no status.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn curl_gets_the_413_status_every_time_over_http2() {
    let f = common::start().await;
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.crt");
    std::fs::write(&ca, f.server.ca_pem()).unwrap();
    let body = dir.path().join("big.json");
    let data = "x".repeat(4 * 1024 * 1024);
    std::fs::write(
        &body,
        format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"big"}},"data":{{"k":"{data}"}}}}"#),
    )
    .unwrap();
    let url = format!(
        "https://localhost:{}/api/v1/namespaces/default/configmaps",
        f.server.addr().port()
    );
    let mut answered = 0;
    let mut broken = Vec::new();
    for _ in 0..20 {
        let out = std::process::Command::new("curl")
            .args(["-sS", "--http2", "--cacert"])
            .arg(&ca)
            .args(["-H", &format!("Authorization: Bearer {}", f.server.token())])
            .args(["-H", "Content-Type: application/json", "--data-binary"])
            .arg(format!("@{}", body.display()))
            .args(["-w", "\n%{http_code} %{http_version}", &url])
            .output()
            .expect("curl runs (the tests need curl)");
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        if out.status.success() && text.ends_with("413 2") && text.contains("RequestEntityTooLarge")
        {
            answered += 1;
        } else {
            broken.push(format!(
                "{:?}: {text:.200} {}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    println!("curl: {answered} of 20 got the 413 Status over HTTP/2");
    assert!(broken.is_empty(), "{broken:#?}");
}
