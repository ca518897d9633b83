//! Workload history through real kubectl against a `kopr apiserver` child
//! process with three simulated nodes: `rollout status|history|undo` for
//! Deployments (undo reuses the old ReplicaSet), DaemonSets (one pod per
//! node) and StatefulSets, both of which keep ControllerRevisions (undo to
//! the revision already current is skipped, which needs the revision's
//! patch to be byte for byte what kubectl computes); and a
//! ReplicationController scaled up and down.

use std::collections::BTreeSet;

use crate::support::{Server, eventually, rows};

/// The revision numbers `kubectl rollout history` lists.
fn revisions(history: &str) -> Vec<String> {
    rows(history)
        .into_iter()
        .skip(2)
        .filter_map(|r| r.first().cloned())
        .collect()
}

fn status(server: &Server, what: &str) -> String {
    server.ok(&["rollout", "status", what, "--timeout=120s"])
}

const DAEMONSET: &str = "
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - name: agent
        image: agent:1
        resources:
          requests: {cpu: 10m}
";

const STATEFULSET: &str = "
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  replicas: 2
  serviceName: db
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - name: db
        image: db:1
";

const REPLICATION_CONTROLLER: &str = "
apiVersion: v1
kind: ReplicationController
metadata:
  name: legacy
spec:
  replicas: 1
  selector: {app: legacy}
  template:
    metadata:
      labels: {app: legacy}
    spec:
      containers:
      - name: c
        image: legacy:1
";

#[test]
fn kubectl_rolls_workloads_back_through_their_history() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--nodes", "3"]);

    // Deployments: undo makes revision 1's ReplicaSet the new one again.
    server.ok(&[
        "create",
        "deployment",
        "web",
        "--image=web:1",
        "--replicas=2",
    ]);
    let done = "deployment \"web\" successfully rolled out\n";
    assert!(status(&server, "deployment/web").ends_with(done));
    server.ok(&["set", "image", "deployment/web", "web=web:2"]);
    assert!(status(&server, "deployment/web").ends_with(done));
    assert_eq!(
        server.ok(&["rollout", "undo", "deployment/web"]),
        "deployment.apps/web rolled back\n"
    );
    assert!(status(&server, "deployment/web").ends_with(done));
    let history = server.ok(&["rollout", "history", "deployment/web"]);
    assert_eq!(revisions(&history), ["2", "3"], "{history}");
    let sets = server.ok(&["get", "rs", "-l", "app=web", "-o", "name"]);
    assert_eq!(sets.lines().count(), 2, "{sets}");
    let images = server.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.spec.template.spec.containers[0].image}",
    ]);
    assert_eq!(images, "web:1");
    assert_eq!(
        server.ok(&["rollout", "undo", "deployment/web", "--to-revision=3"]),
        "deployment.apps/web skipped rollback (current template already matches revision 3)\n"
    );

    // DaemonSets: one pod per node, revisions for history and undo.
    server.ok_stdin(&["apply", "-f", "-"], DAEMONSET);
    let out = status(&server, "daemonset/agent");
    assert!(
        out.ends_with("daemon set \"agent\" successfully rolled out\n"),
        "{out}"
    );
    let nodes = server.ok(&[
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={.items[*].spec.nodeName}",
    ]);
    let nodes: BTreeSet<&str> = nodes.split_whitespace().collect();
    assert_eq!(
        nodes,
        BTreeSet::from(["kopr-node-0", "kopr-node-1", "kopr-node-2"])
    );
    let table = rows(&server.ok(&["get", "ds", "agent"]));
    assert_eq!(
        table[0],
        [
            "NAME",
            "DESIRED",
            "CURRENT",
            "READY",
            "UP-TO-DATE",
            "AVAILABLE",
            "NODE",
            "SELECTOR",
            "AGE"
        ]
    );
    assert_eq!(&table[1][..6], ["agent", "3", "3", "3", "3", "3"]);
    server.ok(&["set", "image", "daemonset/agent", "agent=agent:2"]);
    assert!(status(&server, "daemonset/agent").ends_with("successfully rolled out\n"));
    let history = server.ok(&["rollout", "history", "daemonset/agent"]);
    assert_eq!(revisions(&history), ["1", "2"], "{history}");
    let first = server.ok(&["rollout", "history", "daemonset/agent", "--revision=1"]);
    assert!(first.contains("agent:1"), "{first}");
    assert_eq!(
        server.ok(&["rollout", "undo", "daemonset/agent"]),
        "daemonset.apps/agent rolled back\n"
    );
    assert!(status(&server, "daemonset/agent").ends_with("successfully rolled out\n"));
    let history = server.ok(&["rollout", "history", "daemonset/agent"]);
    assert_eq!(revisions(&history), ["2", "3"], "{history}");
    let images = server.ok(&[
        "get",
        "pods",
        "-l",
        "app=agent",
        "-o",
        "jsonpath={.items[*].spec.containers[0].image}",
    ]);
    assert_eq!(images, "agent:1 agent:1 agent:1");
    assert_eq!(
        server.ok(&["rollout", "undo", "daemonset/agent", "--to-revision=3"]),
        "daemonset.apps/agent skipped rollback (current template already matches revision 3)\n"
    );

    // StatefulSets: the same through their ControllerRevisions.
    server.ok_stdin(&["apply", "-f", "-"], STATEFULSET);
    let rolled = "partitioned roll out complete: 2 new pods have been updated...\n";
    assert!(status(&server, "statefulset/db").ends_with(rolled));
    server.ok(&["set", "image", "statefulset/db", "db=db:2"]);
    assert!(status(&server, "statefulset/db").ends_with(rolled));
    let history = server.ok(&["rollout", "history", "statefulset/db"]);
    assert_eq!(revisions(&history), ["1", "2"], "{history}");
    assert_eq!(
        server.ok(&["rollout", "undo", "statefulset/db"]),
        "statefulset.apps/db rolled back\n"
    );
    eventually(
        &server,
        &[
            "get",
            "pods",
            "-l",
            "app=db",
            "-o",
            "jsonpath={.items[*].spec.containers[0].image}",
        ],
        120,
        |t| t == "db:1 db:1",
    );
    let history = server.ok(&["rollout", "history", "statefulset/db"]);
    assert_eq!(revisions(&history), ["2", "3"], "{history}");
    assert_eq!(
        server.ok(&["rollout", "undo", "statefulset/db", "--to-revision=3"]),
        "statefulset.apps/db skipped rollback (current template already matches revision 3)\n"
    );

    // ReplicationControllers scale through their scale subresource.
    server.ok_stdin(&["apply", "-f", "-"], REPLICATION_CONTROLLER);
    assert_eq!(
        server.ok(&["scale", "rc", "legacy", "--replicas=3"]),
        "replicationcontroller/legacy scaled\n"
    );
    eventually(&server, &["get", "rc", "legacy"], 60, |t| {
        rows(t).get(1).is_some_and(|r| r[1..4] == ["3", "3", "3"])
    });
    server.ok(&["scale", "rc", "legacy", "--replicas=1"]);
    eventually(&server, &["get", "rc", "legacy"], 60, |t| {
        rows(t).get(1).is_some_and(|r| r[1..4] == ["1", "1", "1"])
    });
    let pods = eventually(
        &server,
        &["get", "pods", "-l", "app=legacy", "-o", "name"],
        60,
        |t| t.lines().count() == 1,
    );
    assert!(pods.starts_with("pod/legacy-"), "{pods}");
}
