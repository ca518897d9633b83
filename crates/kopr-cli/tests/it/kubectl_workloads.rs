//! Workloads through real kubectl against a `kopr apiserver` child process:
//! a Deployment rolled out and updated, its pods running and logging, and
//! the simulated nodes.

use crate::support::{Server, eventually, rows};

#[test]
fn kubectl_rolls_out_deployments_on_simulated_nodes() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);

    let nodes = eventually(&server, &["get", "nodes"], 30, |t| {
        let r = rows(t);
        r.len() == 4 && r[1..].iter().all(|row| row[1] == "Ready")
    });
    let table = rows(&nodes);
    assert_eq!(table[0], ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]);
    for (i, row) in table[1..].iter().enumerate() {
        assert_eq!(row[0], format!("kopr-node-{i}"));
        assert_eq!(row[1], "Ready");
    }

    assert_eq!(
        server.ok(&[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3"
        ]),
        "deployment.apps/web created\n"
    );
    let status = server.ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(
        status.ends_with("deployment \"web\" successfully rolled out\n"),
        "{status}"
    );

    assert_eq!(
        server.ok(&["set", "image", "deployment/web", "nginx=nginx:2"]),
        "deployment.apps/web image updated\n"
    );
    let status = server.ok(&["rollout", "status", "deployment/web", "--timeout=120s"]);
    assert!(
        status.ends_with("deployment \"web\" successfully rolled out\n"),
        "{status}"
    );
    let history = server.ok(&["rollout", "history", "deployment/web"]);
    assert!(
        history.contains("\n1 ") && history.contains("\n2 "),
        "{history}"
    );

    let pods = eventually(&server, &["get", "pods", "-l", "app=web"], 60, |t| {
        let r = rows(t);
        r.len() == 4
            && r[1..]
                .iter()
                .all(|row| row[1] == "1/1" && row[2] == "Running")
    });
    assert_eq!(
        rows(&pods)[0],
        ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    );
    let images = server.ok(&[
        "get",
        "pods",
        "-l",
        "app=web",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images, "nginx:2 nginx:2 nginx:2");

    let logs = server.ok(&["logs", "deploy/web"]);
    assert!(
        logs.starts_with("starting container nginx from image nginx:2\n"),
        "{logs}"
    );
    assert!(logs.lines().count() >= 2, "{logs}");

    let deploy = rows(&server.ok(&["get", "deployment", "web"]));
    assert_eq!(&deploy[1][..4], ["web", "3/3", "3", "3"]);
    let described = server.ok(&["describe", "deployment", "web"]);
    assert!(described.contains("NewReplicaSetAvailable"), "{described}");
}
