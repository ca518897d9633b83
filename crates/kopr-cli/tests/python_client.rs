//! The unmodified Python `kubernetes` client against a `kopr apiserver`
//! child process. The client is installed with pip into a virtual
//! environment under the target directory on first use.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use support::Server;

/// The pinned client version.
const CLIENT: &str = "kubernetes==31.0.0";

fn venv_python() -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("python-kubernetes-client");
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    if !ready.exists() {
        let status = Command::new("python3")
            .args(["-m", "venv"])
            .arg(&venv)
            .status()
            .expect("python3 runs");
        assert!(
            status.success(),
            "python3 -m venv failed: python3 with venv support is required"
        );
        let status = Command::new(&python)
            .args([
                "-m",
                "pip",
                "install",
                "--quiet",
                "--disable-pip-version-check",
                CLIENT,
            ])
            .status()
            .expect("pip runs");
        assert!(
            status.success(),
            "pip install {CLIENT} failed (PyPI must be reachable)"
        );
        std::fs::write(&ready, CLIENT).expect("marker written");
    }
    python
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
