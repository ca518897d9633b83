//! Test support: a `kopr apiserver` child process and kubectl runs against it.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

/// A `kopr apiserver` child process.
pub struct Server {
    pub child: Child,
    pub dir: PathBuf,
    pub url: String,
    pub kubeconfig: PathBuf,
}

impl Server {
    /// Starts a server with data in `dir` on a free loopback port.
    pub fn start(dir: &Path, extra: &[&str]) -> Server {
        Self::start_on(dir, "127.0.0.1:0", extra)
    }

    /// Starts a server with data in `dir` listening on `listen`.
    pub fn start_on(dir: &Path, listen: &str, extra: &[&str]) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kopr"))
            .args(["apiserver", "--data-dir"])
            .arg(dir)
            .args(["--listen", listen])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("kopr apiserver starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = lines.next().expect("a line").expect("readable");
        let url = first.rsplit(' ').next().expect("url").to_string();
        // Keep draining stdout so the child never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines.by_ref() {});
        Server {
            child,
            dir: dir.to_path_buf(),
            url,
            kubeconfig: dir.join("kubeconfig"),
        }
    }

    /// Runs kubectl with this server's kubeconfig.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        Command::new(kubectl_path())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .output()
            .expect("kubectl runs")
    }

    /// Runs kubectl with stdin.
    pub fn kubectl_stdin(&self, args: &[&str], input: &str) -> Output {
        use std::io::Write;
        let mut child = Command::new(kubectl_path())
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write stdin");
        child.wait_with_output().expect("kubectl output")
    }

    /// Runs kubectl and returns stdout, failing the test if it fails.
    pub fn ok(&self, args: &[&str]) -> String {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs kubectl with stdin and returns stdout, failing the test if it fails.
    pub fn ok_stdin(&self, args: &[&str], input: &str) -> String {
        let out = self.kubectl_stdin(args, input);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed:\nstdout: {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Kills the server with SIGKILL.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the server with SIGTERM and returns whether it exited cleanly.
    pub fn terminate(&mut self) -> bool {
        let pid = self.child.id().to_string();
        let _ = Command::new("kill").args(["-TERM", &pid]).status();
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The kubectl binary; tests fail loudly when it is missing.
pub fn kubectl_path() -> PathBuf {
    let p = std::env::var_os("KUBECTL")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/bin/kubectl"));
    assert!(
        p.exists(),
        "kubectl is required at {} (set KUBECTL to override)",
        p.display()
    );
    p
}

/// The Python of a virtual environment under the target directory, named
/// `name`, with `packages` installed by pip on first use.
pub fn python_venv(name: &str, packages: &[&str]) -> PathBuf {
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    let python = venv.join("bin/python");
    let ready = venv.join(".installed");
    let wanted = packages.join(" ");
    if std::fs::read_to_string(&ready).ok().as_deref() != Some(wanted.as_str()) {
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
            ])
            .args(packages)
            .status()
            .expect("pip runs");
        assert!(
            status.success(),
            "pip install {wanted} failed (PyPI must be reachable)"
        );
        std::fs::write(&ready, &wanted).expect("marker written");
    }
    python
}

/// Runs kubectl until `check` accepts its output, failing after `secs`.
pub fn eventually(
    server: &Server,
    args: &[&str],
    secs: u64,
    check: impl Fn(&str) -> bool,
) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        let out = server.kubectl(args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.success() && check(&text) {
            return text;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "kubectl {args:?} never matched; last output:\n{text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
}

/// Splits table output into rows of whitespace-separated cells.
pub fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}
