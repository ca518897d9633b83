//! The `greeting` binary's command line: `dev` end to end (embedded server on a free port,
//! samples applied, handlers running, kubeconfig usable), its clear failures (address in use,
//! unusable data directory, malformed manifest), and `manifests`.

use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

const BINARY: &str = env!("CARGO_BIN_EXE_greeting");
const WAIT: Duration = Duration::from_secs(30);

fn samples() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("samples")
}

/// A fresh scratch directory for one test (per process, so concurrent runs stay apart),
/// removed when dropped.
struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;

    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
        // The per-process parent goes with its last test (remove_dir leaves a non-empty one).
        if let Some(parent) = self.0.parent() {
            let _ = std::fs::remove_dir(parent);
        }
    }
}

fn scratch(name: &str) -> Scratch {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("greeting-cli-{}", std::process::id()))
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    Scratch(dir)
}

/// Kills the child process when dropped, so a failed assertion leaves nothing running.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `greeting ARGS` to completion (it is expected to fail fast).
fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(BINARY)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("greeting runs")
}

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            for next in chars.by_ref() {
                if next.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// `greeting ARGS` started in a directory, with its stderr lines (ANSI stripped) read as they
/// come; the process is killed when this is dropped.
struct Logged {
    _child: Running,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
}

impl Logged {
    fn start(args: &[&str], dir: &Path) -> Logged {
        let child = Command::new(BINARY)
            .args(args)
            .current_dir(dir)
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("greeting starts");
        let mut child = Running(child);
        let stderr = child.0.stderr.take().expect("stderr piped");
        let (sender, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sender.send(strip_ansi(&line)).is_err() {
                    break;
                }
            }
        });
        Logged {
            _child: child,
            lines,
            seen: Vec::new(),
        }
    }

    /// Reads lines until one contains every needle, and returns it.
    fn wait_for(&mut self, needles: &[&str]) -> String {
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(line) = self
                .seen
                .iter()
                .find(|l| needles.iter().all(|n| l.contains(n)))
            {
                return line.clone();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => self.seen.push(line),
                Err(_) => panic!("no line with {needles:?} in:\n{}", self.seen.join("\n")),
            }
        }
    }
}

#[test]
fn dev_serves_applies_samples_and_runs_the_operator() {
    let dir = scratch("dev");
    let data = dir.join("data");
    let child = Command::new(BINARY)
        .args([
            "dev",
            "--in-memory",
            "--listen",
            "127.0.0.1:0",
            "--timer-interval",
            "3600",
        ])
        .arg("--data-dir")
        .arg(&data)
        .arg("--apply")
        .arg(samples())
        .current_dir(&*dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("greeting dev starts");
    let mut child = Running(child);
    let stderr = child.0.stderr.take().expect("stderr piped");
    let (lines, received) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if lines.send(strip_ansi(&line)).is_err() {
                break;
            }
        }
    });

    let deadline = Instant::now() + WAIT;
    let mut seen = Vec::new();
    let wanted = |seen: &[String], needles: &[&str]| {
        seen.iter().any(|l| needles.iter().all(|n| l.contains(n)))
    };
    while !(wanted(&seen, &["Greeting: Hello, World!"])
        && wanted(&seen, &["Greeting: Good morning!"]))
    {
        let left = deadline.saturating_duration_since(Instant::now());
        match received.recv_timeout(left) {
            Ok(line) => seen.push(line),
            Err(_) => panic!(
                "no greeting log lines from `greeting dev`; stderr so far:\n{}",
                seen.join("\n")
            ),
        }
    }
    let all = seen.join("\n");
    let url = seen
        .iter()
        .find_map(|l| l.split("embedded API server at ").nth(1))
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no server URL in:\n{all}"));
    let port: u16 = url
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("a port in the URL");
    assert_ne!(port, 0, "the real port is printed, not 0: {url}");
    assert!(
        wanted(
            &seen,
            &["greeting dev: Greeting hello-world in default applied"]
        ),
        "{all}"
    );
    assert!(
        wanted(
            &seen,
            &["try: kubectl --kubeconfig", "kubeconfig get greetings"]
        ),
        "{all}"
    );
    // The operator runs as its own ServiceAccount, under the ClusterRole `manifests` prints.
    assert!(
        wanted(
            &seen,
            &["the operator runs as system:serviceaccount:default:greeting"]
        ),
        "{all}"
    );

    // The printed kubeconfig works from outside the process.
    let kubeconfig = data.join("kubeconfig");
    assert!(
        wanted(&seen, &["kubeconfig ", &kubeconfig.display().to_string()]),
        "{all}"
    );
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let (listed, lease) = runtime.block_on(async {
        let client = kopr::cli::client_from(Some(&kubeconfig), None)
            .await
            .expect("client from the kubeconfig");
        let api: kopr::kube::Api<greeting::Greeting> =
            kopr::kube::Api::namespaced(client.clone(), "default");
        // dev elects a leader as `run` does: its Lease is there to see.
        let leases: kopr::kube::Api<kopr::k8s_openapi::api::coordination::v1::Lease> =
            kopr::kube::Api::namespaced(client, "default");
        (
            api.list(&Default::default())
                .await
                .expect("greetings listed"),
            leases
                .get("greeting")
                .await
                .expect("the leader election Lease"),
        )
    });
    let holder = lease
        .spec
        .and_then(|s| s.holder_identity)
        .unwrap_or_default();
    assert!(!holder.is_empty(), "the Lease has a holder");
    assert!(
        wanted(&seen, &["leading", "lease=greeting"]),
        "dev logs its leadership: {all}"
    );
    let mut names: Vec<String> = listed
        .items
        .iter()
        .filter_map(|g| g.metadata.name.clone())
        .collect();
    names.sort();
    assert_eq!(names, ["good-morning", "hello-world"]);
}

#[test]
fn dev_refuses_an_address_in_use() {
    let dir = scratch("in-use");
    let taken = TcpListener::bind("127.0.0.1:0").expect("bind");
    let address = taken.local_addr().expect("address").to_string();
    let output = run(
        &[
            "dev",
            "--in-memory",
            "--data-dir",
            "data",
            "--listen",
            &address,
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "error: cannot listen on {address}: the address is already in use"
        )),
        "{stderr}"
    );
}

#[test]
fn dev_refuses_an_unusable_data_dir() {
    let dir = scratch("data-dir");
    std::fs::write(dir.join("file"), "not a directory").expect("file");
    let output = run(
        &["dev", "--listen", "127.0.0.1:0", "--data-dir", "file/data"],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("error: cannot create the data directory file/data:"),
        "{stderr}"
    );
}

#[test]
fn dev_names_the_file_and_line_of_a_malformed_manifest() {
    let dir = scratch("malformed");
    std::fs::write(
        dir.join("broken.yaml"),
        "apiVersion: example.com/v1\nkind: Greeting\nmetadata:\n  name: broken\nspec:\n  message: \"unterminated\n",
    )
    .expect("manifest");
    let output = run(
        &[
            "dev",
            "--in-memory",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "data",
            "--apply",
            "broken.yaml",
        ],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    let line = stderr
        .lines()
        .find(|l| l.starts_with("error: "))
        .unwrap_or_default();
    assert!(line.starts_with("error: broken.yaml:6:"), "{stderr}");
    assert!(
        !dir.join("data").exists(),
        "nothing starts before the manifests parse"
    );
}

#[test]
fn manifests_are_applyable_yaml_with_least_privilege() {
    let dir = scratch("manifests");
    let output = run(
        &[
            "manifests",
            "--image",
            "registry.example/greeting:1.0",
            "--namespace",
            "operators",
            "--",
            "--timer-interval",
            "30",
        ],
        &dir,
    );
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("utf-8");
    let documents: Vec<Value> = serde_saphyr::from_multiple(&text).expect("YAML documents");
    let kinds: Vec<&str> = documents
        .iter()
        .filter_map(|d| d["kind"].as_str())
        .collect();
    assert_eq!(
        kinds,
        [
            "Namespace",
            "CustomResourceDefinition",
            "ServiceAccount",
            "ClusterRole",
            "ClusterRoleBinding",
            "Role",
            "RoleBinding",
            "Service",
            "Deployment"
        ]
    );
    assert_eq!(documents[1]["metadata"]["name"], "greetings.example.com");

    let rules = documents[3]["rules"].as_array().expect("rules");
    let verbs = |group: &str, resource: &str| -> Vec<String> {
        rules
            .iter()
            .filter(|r| {
                r["apiGroups"][0] == group
                    && r["resources"]
                        .as_array()
                        .is_some_and(|rs| rs.iter().any(|x| x == resource))
            })
            .flat_map(|r| r["verbs"].as_array().cloned().unwrap_or_default())
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(
        verbs("example.com", "greetings"),
        ["get", "list", "watch", "patch"]
    );
    assert_eq!(verbs("example.com", "greetings/status"), ["patch"]);
    assert_eq!(verbs("", "events"), ["create"]);
    assert_eq!(
        verbs("apiextensions.k8s.io", "customresourcedefinitions"),
        ["get", "list", "watch"]
    );
    assert_eq!(rules.len(), 4, "nothing more: {rules:?}");

    let binding = &documents[4];
    assert_eq!(binding["roleRef"]["name"], "greeting");
    assert_eq!(binding["subjects"][0]["namespace"], "operators");
    // The leader election Lease's Role, in the operator's namespace.
    assert_eq!(documents[5]["metadata"]["namespace"], "operators");
    assert_eq!(documents[5]["rules"][0]["resources"][0], "leases");
    assert_eq!(documents[6]["roleRef"]["name"], "greeting-leader-election");
    let deployment = &documents[8];
    assert_eq!(deployment["spec"]["replicas"], 2);
    assert_eq!(deployment["spec"]["strategy"]["type"], "RollingUpdate");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "greeting");
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "registry.example/greeting:1.0");
    assert_eq!(container["command"], serde_json::json!(["greeting"]));
    assert_eq!(
        container["args"],
        serde_json::json!([
            "run",
            "-A",
            "--health-listen",
            "0.0.0.0:8081",
            "--metrics-listen",
            "0.0.0.0:8080",
            "--timer-interval",
            "30"
        ])
    );
}

#[test]
fn manifests_reject_unknown_operator_options() {
    let output = run(
        &["manifests", "--", "--no-such-option"],
        &scratch("bad-options"),
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("invalid operator options") && stderr.contains("--no-such-option"),
        "{stderr}"
    );
}

#[test]
fn dev_refuses_a_data_dir_in_use() {
    let dir = scratch("dir-in-use");
    let first = Command::new(BINARY)
        .args(["dev", "--listen", "127.0.0.1:0", "--data-dir", "data"])
        .current_dir(&*dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the first greeting dev starts");
    let first = Running(first);
    // The first server records its address in the lock once it listens.
    let lock = dir.join("data/apiserver.lock");
    let deadline = Instant::now() + WAIT;
    let address = loop {
        let text = std::fs::read_to_string(&lock).unwrap_or_default();
        if let Some(a) = text
            .lines()
            .find_map(|l| l.strip_prefix("address=https://"))
        {
            break format!("https://{a}");
        }
        assert!(
            Instant::now() < deadline,
            "no address in {}",
            lock.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let kubeconfig = dir.join("data/kubeconfig");
    let deadline = Instant::now() + WAIT;
    while !kubeconfig.exists() {
        assert!(Instant::now() < deadline, "no kubeconfig");
        std::thread::sleep(Duration::from_millis(20));
    }
    let before = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");

    let output = run(
        &["dev", "--listen", "127.0.0.1:0", "--data-dir", "data"],
        &dir,
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "data directory data is in use by another kopr apiserver (pid {}, {address})",
            first.0.id()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read_to_string(&kubeconfig).expect("kubeconfig"),
        before,
        "the first run's kubeconfig is left alone"
    );
}

#[test]
fn completions_are_printed_for_each_shell() {
    let dir = scratch("completions");
    for (shell, first) in [
        ("bash", "_greeting() {"),
        ("zsh", "#compdef greeting"),
        ("fish", "# Print an optspec"),
    ] {
        let output = run(&["completions", shell], &dir);
        assert!(output.status.success(), "{shell}");
        let script = String::from_utf8_lossy(&output.stdout);
        assert!(script.starts_with(first), "{shell}: {script}");
        for command in ["run", "dev", "crd", "manifests"] {
            assert!(script.contains(command), "{shell} completes {command}");
        }
    }
    let output = run(&["completions", "nushell"], &dir);
    assert!(!output.status.success());
    assert!(
        String::from_utf8_lossy(&output.stderr).contains("invalid value 'nushell'"),
        "an unknown shell is a usage error"
    );
}

#[test]
fn verbose_dev_logs_debug_lines() {
    let dir = scratch("verbose");
    let samples = samples();
    let mut logs = Logged::start(
        &[
            "dev",
            "-v",
            "--in-memory",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "data",
            "--apply",
            &samples.to_string_lossy(),
        ],
        &dir,
    );
    logs.wait_for(&["DEBUG", "cycle finished"]);
}

#[test]
fn json_dev_logs_only_json_lines() {
    let dir = scratch("json");
    let samples = samples();
    let mut logs = Logged::start(
        &[
            "dev",
            "--log-format",
            "json",
            "--in-memory",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            "data",
            "--apply",
            &samples.to_string_lossy(),
        ],
        &dir,
    );
    logs.wait_for(&["Greeting: Hello, World!"]);
    for line in &logs.seen {
        let parsed: Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("not a JSON line ({e}): {line}"));
        assert!(parsed["fields"]["message"].is_string(), "{line}");
    }
    assert!(
        logs.seen
            .iter()
            .any(|l| l.contains("greeting dev: embedded API server at")),
        "dev's own messages are among them: {:?}",
        logs.seen
    );
}

#[test]
fn an_unreachable_cluster_is_named_with_its_cause() {
    let dir = scratch("unreachable");
    // Nothing listens on port 1.
    std::fs::write(
        dir.join("kubeconfig"),
        "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n    insecure-skip-tls-verify: true\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n",
    )
    .expect("kubeconfig");
    let mut logs = Logged::start(&["run", "--kubeconfig", "kubeconfig"], &dir);
    let warning = logs.wait_for(&["cannot ask the API server"]);
    logs.wait_for(&["using the API server", "127.0.0.1:1"]);
    assert!(
        warning.to_lowercase().contains("connect"),
        "the cause is given: {warning}"
    );
    let text = logs.seen.join("\n");
    assert!(
        !text.contains("CRD installed"),
        "no guess about CRDs: {text}"
    );
    // kube-rs's own line for the failed request (logged before kopr's) says neither the
    // server nor what was asked, so it is not shown.
    assert!(
        !text.contains("failed with error"),
        "no bare client errors: {text}"
    );
}
