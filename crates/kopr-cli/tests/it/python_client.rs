//! The unmodified Python `kubernetes` client against a `kopr apiserver`
//! child process. The client is installed with pip into a virtual
//! environment under the target directory on first use.

use crate::support;

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::support::Server;

/// The pinned client version.
const CLIENT: &str = "kubernetes==31.0.0";

fn venv_python() -> PathBuf {
    support::python_venv("python-kubernetes-client", &[CLIENT])
}

#[test]
fn python_kubernetes_client_works_unchanged() {
    let python = venv_python();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/client_checks.py");
    let out = Command::new(python)
        .arg(script)
        .arg(&server.kubeconfig)
        .output()
        .expect("python runs");
    assert!(
        out.status.success(),
        "python client checks failed:\nstdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "python client: 8 checks passed\n"
    );
}
