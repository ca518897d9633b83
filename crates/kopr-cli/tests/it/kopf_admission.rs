//! Kopf's admission webhooks, unmodified, against a `kopr apiserver` child
//! process: the operator in `tests/kopf/admission_operator.py` serves
//! `@kopf.on.validate`/`@kopf.on.mutate` handlers over HTTPS with the
//! self-signed certificate Kopf generates, and registers its own
//! Validating/MutatingWebhookConfiguration (`settings.admission.managed`).
//! kubectl then sees Kopf's denials, warnings and mutation as on a real
//! cluster, including a handler on the status subresource and a dry run.
//!
//! Kopf generates its certificate with `certbuilder`, whose `oscrypto`
//! 1.3.0 cannot parse OpenSSL 3.0.10 and later version strings; its version
//! regex is patched in the test's virtual environment, as Kopf's own CI does.

use crate::support;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::Server;

const PACKAGES: &[&str] = &["kopf==1.45.2", "certbuilder==0.14.2", "kubernetes==31.0.0"];

/// The venv's `kopf`, with oscrypto's OpenSSL version regex fixed.
fn kopf() -> PathBuf {
    let python = support::python_venv("python-kopf", PACKAGES);
    let bin = python.parent().expect("bin dir");
    let lib = bin.parent().expect("venv").join("lib");
    for entry in std::fs::read_dir(&lib).expect("venv lib") {
        let openssl = entry
            .expect("entry")
            .path()
            .join("site-packages/oscrypto/_openssl");
        for file in ["_libcrypto_cffi.py", "_libcrypto_ctypes.py"] {
            let path = openssl.join(file);
            let Ok(source) = std::fs::read_to_string(&path) else {
                continue;
            };
            let fixed = source.replace(
                r"'\\b(\\d\\.\\d\\.\\d[a-z]*)\\b'",
                r"'\\b(\\d+\\.\\d+\\.\\d+[a-z]*)\\b'",
            );
            if fixed != source {
                std::fs::write(&path, fixed).expect("oscrypto patched");
            }
        }
    }
    bin.join("kopf")
}

/// The Kopf process, killed when the test ends.
struct Kopf(Child);

impl Drop for Kopf {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Starts Kopf and returns once it has registered both configurations
/// (its webhook server listens before it registers them).
fn start_kopf(server: &Server) -> Kopf {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kopf/admission_operator.py");
    let mut child = Command::new(kopf())
        .args(["run", "--standalone", "-A"])
        .arg(script)
        .env("KUBECONFIG", &server.kubeconfig)
        .env("KOPF_WEBHOOK_PORT", free_port().to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kopf starts");
    let stderr = child.stderr.take().expect("stderr");
    let kopf = Kopf(child);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut log = Vec::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            log.push(line.clone());
            if line.contains("Reconfiguring the") {
                let _ = tx.send(line);
            }
        }
        let _ = tx.send(format!("kopf exited:\n{}", log.join("\n")));
    });
    for _ in 0..2 {
        let line = rx
            .recv_timeout(Duration::from_secs(120))
            .expect("kopf registers its webhooks");
        assert!(line.contains("Reconfiguring the"), "{line}");
    }
    kopf
}

const EXAMPLE: &str = r#"
apiVersion: kopf.dev/v1
kind: KopfExample
metadata:
  name: kex1
  labels: {inject: "yes"}
spec:
  field: fine
"#;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn kopf_admission_handlers_register_and_answer_through_kopr() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let crd = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/kopfexample-crd.yaml");
    server.ok(&["apply", "-f", crd.to_str().expect("path")]);
    let _kopf = start_kopf(&server);

    // Kopf's configuration, as it wrote it: one webhook per handler, the
    // status handler on the subresource.
    let names = server.ok(&[
        "get",
        "validatingwebhookconfiguration",
        "auto.kopf.dev",
        "-o",
        "jsonpath={.webhooks[*].name} {.webhooks[2].rules[0].resources}",
    ]);
    assert_eq!(
        names,
        "field-check.auto.kopf.dev teapot.spec.field.auto.kopf.dev status-check.auto.kopf.dev [\"kopfexamples/status\"]"
    );

    // Created, with Kopf's warning, and mutated.
    let created = server.kubectl_stdin(&["apply", "-f", "-"], EXAMPLE);
    assert!(created.status.success(), "{}", stderr(&created));
    assert_eq!(stderr(&created), "Warning: seen by kopf\n");
    assert_eq!(
        server.ok(&["get", "kex", "kex1", "-o", "jsonpath={.spec.injected}"]),
        "123"
    );

    // A patch the validating handler refuses is refused, not `patched`.
    let refused = server.kubectl(&[
        "patch",
        "kex",
        "kex1",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"field":"wrong"}}"#,
    ]);
    assert!(!refused.status.success());
    assert_eq!(
        stderr(&refused),
        "Warning: seen by kopf\nError from server: admission webhook \"field-check.auto.kopf.dev\" denied the request: the field may not be 'wrong'\n"
    );
    // A field filter and its own code.
    let teapot = server.kubectl(&[
        "patch",
        "kex",
        "kex1",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"field":"teapot"}}"#,
    ]);
    assert!(stderr(&teapot).ends_with(
        "Error from server: admission webhook \"teapot.spec.field.auto.kopf.dev\" denied the request: no teapots here\n"
    ), "{}", stderr(&teapot));
    // The status subresource has its own handler.
    let status = server.kubectl(&[
        "patch",
        "kex",
        "kex1",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"phase":"Broken"}}"#,
    ]);
    assert_eq!(
        stderr(&status),
        "Error from server: admission webhook \"status-check.auto.kopf.dev\" denied the request: a KopfExample is never Broken\n"
    );
    server.ok(&[
        "patch",
        "kex",
        "kex1",
        "--subresource=status",
        "--type",
        "merge",
        "-p",
        r#"{"status":{"phase":"Fine"}}"#,
    ]);
    // Kopf's handler lets a dry run through (`dryrun`); kopr tells it.
    let dry = server.kubectl(&[
        "patch",
        "kex",
        "kex1",
        "--dry-run=server",
        "--type",
        "merge",
        "-p",
        r#"{"spec":{"field":"wrong"}}"#,
    ]);
    assert!(dry.status.success(), "{}", stderr(&dry));
    assert_eq!(
        server.ok(&[
            "get",
            "kex",
            "kex1",
            "-o",
            "jsonpath={.spec.field}/{.status.phase}"
        ]),
        "fine/Fine"
    );
}
