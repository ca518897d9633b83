//! The rest of kube-apiserver 1.32's API through real kubectl (issue 17): `api-resources`
//! lists all 58 resources, `apply` creates one object of every storage-only kind, `get`
//! prints each with kube's columns, `describe` reads them, `get cs` reports the control
//! plane, `certificate approve` approves a CertificateSigningRequest, `apply --prune`
//! works with kubectl's default allowlist, and `debug` adds an ephemeral container.

use crate::support::Server;

/// The header row of `kubectl get` output, its cells joined by one space.
fn header(out: &str) -> String {
    out.lines()
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn kubectl_serves_every_kind_of_kube_1_32() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--nodes", "0"]);

    let resources = server.ok(&["api-resources", "--no-headers", "-o", "name"]);
    assert_eq!(resources.lines().count(), 58, "{resources}");
    for name in [
        "bindings",
        "componentstatuses",
        "limitranges",
        "persistentvolumes",
        "replicationcontrollers",
        "controllerrevisions.apps",
        "daemonsets.apps",
        "horizontalpodautoscalers.autoscaling",
        "cronjobs.batch",
        "certificatesigningrequests.certificates.k8s.io",
        "endpointslices.discovery.k8s.io",
        "flowschemas.flowcontrol.apiserver.k8s.io",
        "ingresses.networking.k8s.io",
        "runtimeclasses.node.k8s.io",
        "poddisruptionbudgets.policy",
        "priorityclasses.scheduling.k8s.io",
        "volumeattachments.storage.k8s.io",
        "apiservices.apiregistration.k8s.io",
    ] {
        assert!(
            resources.lines().any(|l| l == name),
            "{name} missing:\n{resources}"
        );
    }

    let applied = server.ok(&[
        "apply",
        "-f",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/kinds.yaml"),
    ]);
    for created in [
        "limitrange/limits created",
        "resourcequota/quota created",
        "podtemplate/tmpl created",
        "persistentvolume/pv1 created",
        "persistentvolumeclaim/claim created",
        "replicationcontroller/rc created",
        "controllerrevision.apps/rev-1 created",
        "daemonset.apps/ds created",
        "horizontalpodautoscaler.autoscaling/hpa created",
        "cronjob.batch/cj created",
        "endpointslice.discovery.k8s.io/slice created",
        "prioritylevelconfiguration.flowcontrol.apiserver.k8s.io/plc created",
        "flowschema.flowcontrol.apiserver.k8s.io/fs created",
        "ingressclass.networking.k8s.io/nginx created",
        "ingress.networking.k8s.io/ing created",
        "networkpolicy.networking.k8s.io/deny created",
        "runtimeclass.node.k8s.io/runc created",
        "poddisruptionbudget.policy/pdb created",
        "priorityclass.scheduling.k8s.io/high created",
        "storageclass.storage.k8s.io/fast created",
        "csidriver.storage.k8s.io/csi.example.com created",
        "volumeattachment.storage.k8s.io/va created",
    ] {
        assert!(applied.contains(created), "{created} missing:\n{applied}");
    }

    for (resource, columns) in [
        ("limitranges", "NAME CREATED AT"),
        ("resourcequotas", "NAME REQUEST LIMIT AGE"),
        ("podtemplates", "NAME CONTAINERS IMAGES POD LABELS"),
        (
            "pv",
            "NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
        ),
        (
            "pvc",
            "NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
        ),
        ("rc", "NAME DESIRED CURRENT READY AGE"),
        ("controllerrevisions", "NAME CONTROLLER REVISION AGE"),
        (
            "ds",
            "NAME DESIRED CURRENT READY UP-TO-DATE AVAILABLE NODE SELECTOR AGE",
        ),
        ("hpa", "NAME REFERENCE TARGETS MINPODS MAXPODS REPLICAS AGE"),
        (
            "cronjobs",
            "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
        ),
        ("endpointslices", "NAME ADDRESSTYPE PORTS ENDPOINTS AGE"),
        ("ingressclasses", "NAME CONTROLLER PARAMETERS AGE"),
        ("ingresses", "NAME CLASS HOSTS ADDRESS PORTS AGE"),
        ("networkpolicies", "NAME POD-SELECTOR AGE"),
        ("runtimeclasses", "NAME HANDLER AGE"),
        (
            "pdb",
            "NAME MIN AVAILABLE MAX UNAVAILABLE ALLOWED DISRUPTIONS AGE",
        ),
        (
            "priorityclasses",
            "NAME VALUE GLOBAL-DEFAULT AGE PREEMPTIONPOLICY",
        ),
        (
            "storageclasses",
            "NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
        ),
        (
            "csidrivers",
            "NAME ATTACHREQUIRED PODINFOONMOUNT STORAGECAPACITY TOKENREQUESTS REQUIRESREPUBLISH MODES AGE",
        ),
        ("volumeattachments", "NAME ATTACHER PV NODE ATTACHED AGE"),
        ("apiservices", "NAME SERVICE AVAILABLE AGE"),
        ("componentstatuses", "NAME STATUS MESSAGE ERROR"),
    ] {
        let out = server.ok(&["get", resource]);
        assert_eq!(header(&out), columns, "kubectl get {resource}:\n{out}");
    }
    let cs = server.ok(&["get", "cs", "--no-headers"]);
    let names: Vec<&str> = cs
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(names, ["scheduler", "controller-manager", "etcd-0"]);
    let sc = server.ok(&["get", "sc", "fast", "--no-headers"]);
    assert_eq!(
        sc.split_whitespace().take(5).collect::<Vec<_>>(),
        ["fast", "example.com/fake", "Delete", "Immediate", "false"]
    );

    for what in [
        "pv/pv1",
        "pvc/claim",
        "rc/rc",
        "ds/ds",
        "hpa/hpa",
        "cronjob/cj",
        "ingress/ing",
        "pdb/pdb",
        "networkpolicy/deny",
        "storageclass/fast",
        "priorityclass/high",
        "limitrange/limits",
        "resourcequota/quota",
    ] {
        let out = server.kubectl(&["describe", what]);
        assert!(
            out.status.success(),
            "describe {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("Name:"));
    }
}

#[test]
fn kubectl_approves_signing_requests_and_prunes_with_the_default_allowlist() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--nodes", "0"]);
    let csr = server.ok(&[
        "apply",
        "-f",
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/csr.yaml"),
    ]);
    assert_eq!(
        csr,
        "certificatesigningrequest.certificates.k8s.io/jane created\n"
    );
    assert_eq!(
        server.ok(&["certificate", "approve", "jane"]),
        "certificatesigningrequest.certificates.k8s.io/jane approved\n"
    );
    let condition = server.ok(&[
        "get",
        "csr",
        "jane",
        "-o",
        "jsonpath={.status.conditions[0].type}/{.status.conditions[0].reason}",
    ]);
    assert_eq!(condition, "Approved/KubectlApprove");

    let first = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  labels: {set: prune}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: two\n  labels: {set: prune}\n";
    server.ok_stdin(&["apply", "-f", "-"], first);
    let second =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: one\n  labels: {set: prune}\n";
    let out = server.kubectl_stdin(&["apply", "--prune", "-l", "set=prune", "-f", "-"], second);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("configmap/two pruned"), "{stdout}");
    let left = server.ok(&["get", "cm", "-l", "set=prune", "-o", "name"]);
    assert_eq!(left, "configmap/one\n");

    // A selector of 3,000 terms (a 34 KB URL) over HTTP/2, which kubectl speaks: Go's
    // servers take header lists up to 1 MiB.
    let selector: Vec<String> = (0..3000).map(|i| format!("k{i}=v{i}")).collect();
    let out = server.kubectl(&["get", "cm", "-l", &selector.join(",")]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "No resources found in default namespace.\n"
    );

    // kubectl debug adds an ephemeral container through pods/ephemeralcontainers.
    server.ok(&["run", "app", "--image=nginx"]);
    let out = server.kubectl(&["debug", "app", "--image=busybox", "-c", "dbg"]);
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let name = server.ok(&[
        "get",
        "pod",
        "app",
        "-o",
        "jsonpath={.spec.ephemeralContainers[0].name}/{.spec.ephemeralContainers[0].targetContainerName}",
    ]);
    assert_eq!(name, "dbg/");
}
