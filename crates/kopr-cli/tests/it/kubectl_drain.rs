//! `kubectl drain` against a `kopr apiserver` child process: the node is
//! cordoned, its pods evicted through `pods/eviction`; a
//! PodDisruptionBudget first refuses (kubectl retries the 429) and allows
//! once the Deployment is scaled up.

use std::io::{BufRead, BufReader, Read};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::support::{Server, eventually, kubectl_path, rows};

#[test]
fn kubectl_drain_waits_for_the_disruption_budget() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    eventually(&server, &["get", "nodes"], 30, |t| {
        let r = rows(t);
        r.len() == 4 && r[1..].iter().all(|row| row[1] == "Ready")
    });

    server.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx",
        "--replicas=1",
    ]);
    server.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert_eq!(
        server.ok(&[
            "create",
            "poddisruptionbudget",
            "web",
            "--selector=app=web",
            "--min-available=1"
        ]),
        "poddisruptionbudget.policy/web created\n"
    );
    let status = "jsonpath={.status.observedGeneration}/{.status.currentHealthy}/{.status.disruptionsAllowed}";
    eventually(&server, &["get", "pdb", "web", "-o", status], 30, |t| {
        t == "1/1/0"
    });
    let pdb = rows(&server.ok(&["get", "pdb", "web"]));
    assert_eq!(
        pdb[0],
        [
            "NAME",
            "MIN",
            "AVAILABLE",
            "MAX",
            "UNAVAILABLE",
            "ALLOWED",
            "DISRUPTIONS",
            "AGE"
        ]
    );
    assert_eq!(pdb[1][..4], ["web", "1", "N/A", "0"]);

    let placed = server.ok(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[0].metadata.name} {.items[0].spec.nodeName}",
    ]);
    let (pod, node) = placed.split_once(' ').expect("pod and node");
    let (pod, node) = (pod.to_string(), node.to_string());

    let mut drain = Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&server.kubeconfig)
        .args([
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=60s",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl drain runs");
    let mut stdout = drain.stdout.take().expect("stdout");
    let stderr = drain.stderr.take().expect("stderr");
    let (lines_tx, lines) = mpsc::channel();
    let errors = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = lines_tx.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });

    // The budget refuses the eviction; kubectl says so and retries.
    let refused = format!(
        "error when evicting pods/\"{pod}\" -n \"default\" (will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."
    );
    loop {
        let line = lines
            .recv_timeout(Duration::from_secs(60))
            .expect("kubectl drain reports the refused eviction");
        if line == refused {
            break;
        }
    }
    let cordoned = rows(&server.ok(&["get", "node", &node]));
    assert_eq!(cordoned[1][1], "Ready,SchedulingDisabled");

    // A second replica (elsewhere: the node is cordoned) lets the budget allow one.
    assert_eq!(
        server.ok(&["scale", "deployment", "web", "--replicas=2"]),
        "deployment.apps/web scaled\n"
    );
    let exit = drain.wait().expect("kubectl drain ends");
    let mut out = String::new();
    stdout.read_to_string(&mut out).expect("drain output");
    let err = errors.join().expect("stderr reader");
    assert!(exit.success(), "drain failed:\n{out}\n{err}");
    assert!(out.starts_with(&format!("node/{node} cordoned\n")), "{out}");
    assert!(
        out.contains(&format!("evicting pod default/{pod}\n")),
        "{out}"
    );
    assert!(
        out.ends_with(&format!("pod/{pod} evicted\nnode/{node} drained\n")),
        "{out}"
    );
    assert!(err.contains(&refused), "{err}");

    let pods = eventually(
        &server,
        &["get", "pods", "-l", "app=web", "-o", "wide"],
        30,
        |t| {
            let r = rows(t);
            r.len() == 3 && r[1..].iter().all(|row| row[2] == "Running")
        },
    );
    for row in &rows(&pods)[1..] {
        assert_ne!(row[0], pod);
        assert_ne!(row[6], node, "{pods}");
    }
    eventually(&server, &["get", "pdb", "web", "-o", status], 30, |t| {
        t == "1/2/1"
    });
}
