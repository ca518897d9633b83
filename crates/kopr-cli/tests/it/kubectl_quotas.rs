//! ResourceQuotas and LimitRanges through kubectl against a `kopr
//! apiserver` child process: `create quota`, the REQUEST/LIMIT columns and
//! `describe` filled in by the quota controller, kube's 403s from quota
//! admission, and LimitRanger defaults that make a bare pod fit the quota.

use crate::support::{Server, eventually};

const LIMITS: &str = r#"
apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
spec:
  limits:
  - type: Container
    default: {cpu: 200m, memory: 128Mi}
    defaultRequest: {cpu: 100m, memory: 64Mi}
"#;

#[test]
fn kubectl_sees_quota_usage_and_refusals() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    assert_eq!(
        server.ok(&[
            "create",
            "quota",
            "compute",
            "--hard=pods=2,requests.cpu=1,limits.memory=1Gi"
        ]),
        "resourcequota/compute created\n"
    );
    let table = eventually(&server, &["get", "quota", "compute"], 30, |t| {
        t.contains("pods: 0/2")
    });
    let lines: Vec<&str> = table.lines().collect();
    assert!(
        lines[0].starts_with("NAME") && lines[0].contains("REQUEST") && lines[0].contains("LIMIT")
    );
    assert!(
        lines[1].contains("pods: 0/2, requests.cpu: 0/1")
            && lines[1].contains("limits.memory: 0/1Gi"),
        "{table}"
    );

    // A bare pod has neither the cpu request nor the memory limit the quota needs.
    let out = server.kubectl(&["run", "bare", "--image=nginx", "--restart=Never"]);
    assert!(!out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): pods \"bare\" is forbidden: failed quota: compute: must specify limits.memory for: bare; requests.cpu for: bare"
    );

    // LimitRanger fills them in; the quota charges them.
    server.ok_stdin(&["apply", "-f", "-"], LIMITS);
    server.ok(&["run", "bare", "--image=nginx", "--restart=Never"]);
    let annotation = server.ok(&[
        "get",
        "pod",
        "bare",
        "-o",
        "jsonpath={.metadata.annotations.kubernetes\\.io/limit-ranger}",
    ]);
    assert_eq!(
        annotation,
        "LimitRanger plugin set: cpu, memory request for container bare; cpu, memory limit for container bare"
    );
    let used = server.ok(&["get", "quota", "compute", "-o", "jsonpath={.status.used}"]);
    assert_eq!(
        used,
        r#"{"limits.memory":"128Mi","pods":"1","requests.cpu":"100m"}"#
    );
    let described = server.ok(&["describe", "quota", "compute"]);
    let rows: Vec<Vec<&str>> = described
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert!(
        rows.contains(&vec!["Resource", "Used", "Hard"]),
        "{described}"
    );
    assert!(
        rows.contains(&vec!["requests.cpu", "100m", "1"]),
        "{described}"
    );
    assert!(rows.contains(&vec!["pods", "1", "2"]), "{described}");

    server.ok(&["run", "second", "--image=nginx", "--restart=Never"]);
    let out = server.kubectl(&["run", "third", "--image=nginx", "--restart=Never"]);
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim(),
        "Error from server (Forbidden): pods \"third\" is forbidden: exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
    );

    // Deleting a pod gives its share back.
    server.ok(&["delete", "pod", "second", "--grace-period=0", "--force"]);
    eventually(&server, &["get", "quota", "compute"], 30, |t| {
        t.contains("pods: 1/2")
    });
    let described = server.ok(&["describe", "limitrange", "defaults"]);
    assert!(
        described
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["Container", "cpu", "-", "-", "100m", "200m", "-"]),
        "{described}"
    );
}
