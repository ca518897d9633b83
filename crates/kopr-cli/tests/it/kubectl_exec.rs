//! The streaming pod subresources through real kubectl (WebSockets by
//! default, SPDY when the `KUBECTL_*_WEBSOCKETS` switches turn them off)
//! and the Python client, against a `kopr apiserver` child process: exec
//! with stdin and exit codes, `kubectl cp` both ways, port-forward.

use crate::support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::support::{Server, eventually};

/// kubectl with extra environment variables.
fn kubectl_env(server: &Server, env: &[(&str, &str)], args: &[&str]) -> std::process::Output {
    Command::new(support::kubectl_path())
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("kubectl runs")
}

fn running_pod(server: &Server, name: &str) {
    server.ok(&["run", name, "--image=nginx", "--port=80"]);
    eventually(
        server,
        &["get", "pod", name, "-o", "jsonpath={.status.phase}"],
        60,
        |t| t == "Running",
    );
}

/// Forwards `mapping` with kubectl; returns the child and the local port.
fn port_forward(
    server: &Server,
    env: &[(&str, &str)],
    mapping: &str,
) -> (std::process::Child, u16) {
    let mut child = Command::new(support::kubectl_path())
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .args(["port-forward", "pod/web", mapping])
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("kubectl port-forward starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    // `Forwarding from 127.0.0.1:18080 -> 80`
    let first = lines.next().expect("a line").expect("readable");
    let port = first
        .split_whitespace()
        .nth(2)
        .and_then(|a| a.rsplit(':').next())
        .and_then(|p| p.parse::<u16>().ok())
        .unwrap_or_else(|| panic!("unexpected port-forward output: {first}"));
    std::thread::spawn(move || for _ in lines.by_ref() {});
    (child, port)
}

fn echo_through(port: u16) {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"hello").unwrap();
    let mut buf = [0u8; 5];
    conn.read_exact(&mut buf).unwrap();
    assert_eq!(&buf, b"hello");
    drop(conn);
    let mut conn = TcpStream::connect(("127.0.0.1", port)).expect("connects");
    conn.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: web\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    conn.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("HTTP/1.1 200 OK\r\n") && answer.ends_with("\r\n\r\nok"),
        "{answer}"
    );
}

#[test]
fn kubectl_exec_cp_and_port_forward() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    running_pod(&server, "web");

    assert_eq!(server.ok(&["exec", "web", "--", "echo", "hi"]), "hi\n");
    assert_eq!(
        server.ok_stdin(&["exec", "-i", "web", "--", "cat"], "piped in\n"),
        "piped in\n"
    );
    let failed = server.kubectl(&["exec", "web", "--", "sh", "-c", "echo oops >&2; exit 3"]);
    assert_eq!(failed.status.code(), Some(3));
    assert_eq!(
        String::from_utf8_lossy(&failed.stderr),
        "oops\ncommand terminated with exit code 3\n"
    );
    let missing = server.kubectl(&["exec", "web", "-c", "nope", "--", "true"]);
    assert_eq!(
        String::from_utf8_lossy(&missing.stderr),
        "Error from server (BadRequest): container nope is not valid for pod web\n"
    );

    // The same over SPDY.
    let spdy = [("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")];
    let out = kubectl_env(
        &server,
        &spdy,
        &["exec", "-i", "web", "--", "sh", "-c", "cat; exit 4"],
    );
    assert_eq!(
        out.status.code(),
        Some(4),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // kubectl cp into the pod and out of it.
    let local = dir.path().join("local.txt");
    std::fs::write(&local, "copied in\n").unwrap();
    server.ok(&["cp", local.to_str().unwrap(), "web:/tmp/in.txt"]);
    assert_eq!(
        server.ok(&["exec", "web", "--", "cat", "/tmp/in.txt"]),
        "copied in\n"
    );
    server.ok(&[
        "exec",
        "web",
        "--",
        "sh",
        "-c",
        "mkdir -p /tmp/d/sub && echo a > /tmp/d/sub/f",
    ]);
    let back = dir.path().join("back");
    let out = server.ok(&["cp", "web:/tmp/d", back.to_str().unwrap()]);
    assert_eq!(out, "tar: Removing leading `/' from member names\n");
    assert_eq!(std::fs::read_to_string(back.join("sub/f")).unwrap(), "a\n");

    // port-forward, tunneled through a WebSocket, then over plain SPDY.
    let (mut child, port) = port_forward(&server, &[], "18080:80");
    assert_eq!(port, 18080);
    echo_through(port);
    let _ = child.kill();
    let _ = child.wait();
    let (mut child, port) = port_forward(
        &server,
        &[("KUBECTL_PORT_FORWARD_WEBSOCKETS", "false")],
        ":80",
    );
    echo_through(port);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn python_client_exec_and_port_forward() {
    let python = support::python_venv("python-kubernetes-client", &["kubernetes==31.0.0"]);
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    running_pod(&server, "web");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/stream_checks.py");
    let out = Command::new(python)
        .arg(script)
        .arg(&server.kubeconfig)
        .arg("web")
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python stream checks failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "python streams: 5 checks passed\n"
    );
}
