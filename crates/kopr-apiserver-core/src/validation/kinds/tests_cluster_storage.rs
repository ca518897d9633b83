//! Tests of storage.k8s.io, scheduling.k8s.io, node.k8s.io and
//! apiregistration.k8s.io validation: exact kube 1.32 messages.

use super::super::validate_kind as validate;
use super::tests_cluster_net::{LABEL, SUBDOMAIN, create, update};
use serde_json::{Value, json};

const QNAME: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const ST: &str = "storage.k8s.io";

fn raw(group: &str, res: &str, v: Value) -> Vec<String> {
    validate(group, res, &v, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn valid_objects_pass() {
    let ns = json!({"name": "x", "namespace": "default"});
    let cases = vec![
        (
            ST,
            "storageclasses",
            json!({"metadata": {"name": "fast"}, "provisioner": "kubernetes.io/no-provisioner",
            "parameters": {"type": "ssd"}, "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": ["a", "b"]}]}]}),
        ),
        (
            ST,
            "csidrivers",
            json!({"metadata": {"name": "csi.example.com"}, "spec": {"tokenRequests": [{"audience": "a", "expirationSeconds": 3600}, {"audience": ""}]}}),
        ),
        (
            ST,
            "csinodes",
            json!({"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "csi.example.com", "nodeID": "n1",
            "topologyKeys": ["topology.kubernetes.io/zone"], "allocatable": {"count": 10}}]}}),
        ),
        (
            ST,
            "csistoragecapacities",
            json!({"metadata": ns, "storageClassName": "fast", "capacity": "10Gi",
            "nodeTopology": {"matchLabels": {"zone": "a"}}}),
        ),
        (
            ST,
            "volumeattachments",
            json!({"metadata": {"name": "va"}, "spec": {"attacher": "csi.example.com", "nodeName": "node-1",
            "source": {"persistentVolumeName": "pv-1"}}}),
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"metadata": {"name": "high"}, "value": 1000000, "globalDefault": false}),
        ),
        (
            "scheduling.k8s.io",
            "priorityclasses",
            json!({"metadata": {"name": "system-cluster-critical"}, "value": 2000000000}),
        ),
        (
            "node.k8s.io",
            "runtimeclasses",
            json!({"metadata": {"name": "gvisor"}, "handler": "runsc", "overhead": {"podFixed": {"cpu": "250m", "memory": "64Mi"}},
            "scheduling": {"nodeSelector": {"runtime": "gvisor"}, "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}]}}),
        ),
        (
            "apiregistration.k8s.io",
            "apiservices",
            json!({"metadata": {"name": "v1beta1.metrics.k8s.io"}, "spec": {"group": "metrics.k8s.io", "version": "v1beta1",
            "groupPriorityMinimum": 100, "versionPriority": 100, "insecureSkipTLSVerify": true,
            "service": {"name": "metrics-server", "namespace": "kube-system"}}}),
        ),
        (
            "apiregistration.k8s.io",
            "apiservices",
            json!({"metadata": {"name": "v1."}, "spec": {"version": "v1", "groupPriorityMinimum": 18000, "versionPriority": 1}}),
        ),
    ];
    for (g, r, v) in cases {
        assert_eq!(create(g, r, v), Vec::<String>::new(), "{g}/{r}");
    }
}

#[test]
fn storage_class_errors() {
    let e = create(
        ST,
        "storageclasses",
        json!({"metadata": {"name": "sc"}, "provisioner": "", "reclaimPolicy": "Recycle", "volumeBindingMode": "Later",
        "parameters": {"": "x"}, "allowedTopologies": [{"matchLabelExpressions": [{"key": "zone", "values": []}]}, {}]}),
    );
    assert_eq!(
        e,
        vec![
            "provisioner: Required value",
            "parameters: Invalid value: \"\": field can not be empty.",
            "reclaimPolicy: Unsupported value: \"Recycle\": supported values: \"Delete\", \"Retain\"",
            "volumeBindingMode: Unsupported value: \"Later\": supported values: \"Immediate\", \"WaitForFirstConsumer\"",
            "allowedTopologies[0].matchLabelExpressions[0].values: Required value",
            "allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\"",
            "allowedTopologies[1].matchLabelExpressions: Duplicate value: \"\"",
        ]
    );
    assert_eq!(
        create(
            ST,
            "storageclasses",
            json!({"metadata": {"name": "sc"}, "provisioner": "Foo/Bar_"})
        ),
        vec![format!("provisioner: Invalid value: \"Foo/Bar_\": {QNAME}")]
    );
    let old =
        json!({"metadata": {"name": "sc"}, "provisioner": "a.io/p", "parameters": {"k": "v"}});
    let new = json!({"metadata": {"name": "sc"}, "provisioner": "b.io/p", "parameters": {"k": "w"},
        "reclaimPolicy": "Retain", "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": true});
    assert_eq!(
        update(ST, "storageclasses", old, new),
        vec![
            "parameters: Forbidden: updates to parameters are forbidden.",
            "provisioner: Forbidden: updates to provisioner are forbidden.",
            "reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
            "volumeBindingMode: Invalid value: \"WaitForFirstConsumer\": field is immutable",
        ]
    );
}

#[test]
fn csi_driver_errors() {
    let e = create(
        ST,
        "csidrivers",
        json!({"metadata": {"name": "Bad_Driver"}, "spec": {"fsGroupPolicy": "Any",
        "tokenRequests": [{"audience": "a", "expirationSeconds": 60}, {"audience": "a"}, {"audience": "b", "expirationSeconds": 5000000000_i64}],
        "volumeLifecycleModes": ["Persistent", "Forever"]}}),
    );
    assert_eq!(
        e,
        vec![
            format!("metadata.name: Invalid value: \"Bad_Driver\": {SUBDOMAIN}"),
            "spec.fsGroupPolicy: Unsupported value: \"Any\": supported values: \"File\", \"None\", \"ReadWriteOnceWithFSType\"".to_string(),
            "spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes".to_string(),
            "spec.tokenRequests[1].audience: Duplicate value: \"a\"".to_string(),
            "spec.tokenRequests[2].expirationSeconds: Invalid value: 5000000000: may not specify a duration larger than 2^32 seconds".to_string(),
            "spec.volumeLifecycleModes: Unsupported value: \"Forever\": supported values: \"Persistent\", \"Ephemeral\"".to_string(),
        ]
    );
    // Without defaulting, the fields kube always defaults are required.
    assert_eq!(
        raw(
            ST,
            "csidrivers",
            json!({"metadata": {"name": "d"}, "spec": {}})
        ),
        vec![
            "spec.attachedRequired: Required value",
            "spec.podInfoOnMount: Required value",
            "spec.storageCapacity: Required value",
            "spec.seLinuxMount: Required value",
        ]
    );
    let old = json!({"metadata": {"name": "d"}, "spec": {}});
    let new = json!({"metadata": {"name": "d"}, "spec": {"attachRequired": false, "podInfoOnMount": true,
        "fsGroupPolicy": "File", "volumeLifecycleModes": ["Ephemeral"]}});
    assert_eq!(
        update(ST, "csidrivers", old, new),
        vec![
            "spec.attachedRequired: Invalid value: false: field is immutable",
            "spec.volumeLifecycleModes: Invalid value: []storage.VolumeLifecycleMode{\"Ephemeral\"}: field is immutable",
        ]
    );
}

#[test]
fn csi_node_errors() {
    let long = "x".repeat(257);
    let e = create(
        ST,
        "csinodes",
        json!({"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "Bad_Drv", "nodeID": ""},
        {"name": "d.io", "nodeID": "n", "topologyKeys": ["zone", "zone", "bad key"], "allocatable": {"count": -1}},
        {"name": "d.io", "nodeID": long}]}}),
    );
    assert_eq!(
        e,
        vec![
            format!("spec.drivers[0].name: Invalid value: \"Bad_Drv\": {SUBDOMAIN}"),
            "spec.drivers[0].nodeID: Required value".to_string(),
            "spec.drivers[1].allocatable.count: Invalid value: -1: must be greater than or equal to 0".to_string(),
            "spec.drivers[1]: Duplicate value: \"zone\"".to_string(),
            format!("spec.drivers[1]: Invalid value: []string{{\"zone\", \"zone\", \"bad key\"}}: {QNAME}"),
            format!("spec.drivers[2].nodeID: Invalid value: \"{long}\": must be 256 characters or less"),
            "spec.drivers[2].name: Duplicate value: \"d.io\"".to_string(),
        ]
    );
    let node = |id: &str| json!({"metadata": {"name": "node-1"}, "spec": {"drivers": [{"name": "d.io", "nodeID": id}]}});
    assert_eq!(
        update(ST, "csinodes", node("n"), node("m")),
        vec![
            "CSINodeDriver: Invalid value: storage.CSINodeDriver{Name:\"d.io\", NodeID:\"m\", TopologyKeys:[]string(nil), Allocatable:(*storage.VolumeNodeResources)(nil)}: field is immutable"
        ]
    );
    assert_eq!(
        update(ST, "csinodes", node("n"), node("n")),
        Vec::<String>::new()
    );
}

#[test]
fn csi_storage_capacity_errors() {
    let cap = |class: &str, topo: Value| {
        json!({"metadata": {"name": "c", "namespace": "default"}, "storageClassName": class,
        "capacity": "-1Gi", "nodeTopology": topo})
    };
    assert_eq!(
        create(
            ST,
            "csistoragecapacities",
            cap("", json!({"matchLabels": {"a b": "c"}}))
        ),
        vec![
            format!("nodeTopology.matchLabels: Invalid value: \"a b\": {QNAME}"),
            format!("storageClassName: Invalid value: \"\": {SUBDOMAIN}"),
            "capacity: Invalid value: \"-1Gi\": must be greater than or equal to 0".to_string(),
        ]
    );
    let mut old = cap("fast", json!({"matchLabels": {"a": "b"}}));
    old["capacity"] = json!("1Gi");
    let mut new = cap("slow", json!({"matchLabels": {"a": "c"}}));
    new["capacity"] = json!("2Gi");
    assert_eq!(
        update(ST, "csistoragecapacities", old, new),
        vec![
            "nodeTopology: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"a\":\"c\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
            "storageClassName: Invalid value: \"slow\": field is immutable",
        ]
    );
}

#[test]
fn volume_attachment_errors() {
    let va = |spec: Value| json!({"metadata": {"name": "va"}, "spec": spec});
    assert_eq!(
        create(
            ST,
            "volumeattachments",
            va(json!({"attacher": "", "nodeName": "", "source": {}}))
        ),
        vec![
            "spec.attacher: Required value".to_string(),
            "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName".to_string(),
            format!("spec.nodeName: Invalid value: \"\": {SUBDOMAIN}"),
            "spec.attacher: Required value".to_string(),
            format!("spec.attacher: Invalid value: \"\": {SUBDOMAIN}"),
        ]
    );
    assert_eq!(
        create(
            ST,
            "volumeattachments",
            va(
                json!({"attacher": "a.io", "nodeName": "n", "source": {"persistentVolumeName": "pv", "inlineVolumeSpec": {}}})
            )
        ),
        vec![
            "spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName"
        ]
    );
    assert_eq!(
        create(
            ST,
            "volumeattachments",
            va(json!({"attacher": "a.io", "nodeName": "n", "source": {"persistentVolumeName": ""}}))
        ),
        vec![
            "spec.source.persistentVolumeName: Required value: must specify non empty persistentVolumeName".to_string(),
            format!("spec.source.persistentVolumeName: Invalid value: \"\": {SUBDOMAIN}"),
        ]
    );
    let spec = |node: &str| json!({"attacher": "csi.example.com", "nodeName": node, "source": {"persistentVolumeName": "pv"}});
    assert_eq!(
        update(
            ST,
            "volumeattachments",
            va(spec("node-1")),
            va(spec("node-2"))
        ),
        vec![
            "spec: Invalid value: storage.VolumeAttachmentSpec{Attacher:\"csi.example.com\", Source:storage.VolumeAttachmentSource{PersistentVolumeName:(*string)(0xc000000000), InlineVolumeSpec:(*core.PersistentVolumeSpec)(nil)}, NodeName:\"node-2\"}: field is immutable"
        ]
    );
}

const SCHED: &str = "scheduling.k8s.io";

#[test]
fn priority_class_errors() {
    let pc = |name: &str, extra: Value| {
        let mut v = json!({"metadata": {"name": name}, "value": 5});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    let reserved = "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: ";
    assert_eq!(
        create(SCHED, "priorityclasses", pc("system-foo", json!({}))),
        vec![format!(
            "{reserved}system-foo is not a known system priority class"
        )]
    );
    assert_eq!(
        create(
            SCHED,
            "priorityclasses",
            pc("system-node-critical", json!({}))
        ),
        vec![format!(
            "{reserved}value of system-node-critical PriorityClass must be 2000001000"
        )]
    );
    assert_eq!(
        create(
            SCHED,
            "priorityclasses",
            pc(
                "system-cluster-critical",
                json!({"value": 2000000000, "globalDefault": true})
            )
        ),
        vec![format!(
            "{reserved}globalDefault of system-cluster-critical PriorityClass must be false"
        )]
    );
    assert_eq!(
        create(
            SCHED,
            "priorityclasses",
            pc("high", json!({"value": 1000000001}))
        ),
        vec!["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]
    );
    assert_eq!(
        create(
            SCHED,
            "priorityclasses",
            pc("p", json!({"preemptionPolicy": "Sometimes"}))
        ),
        vec![
            "preemptionPolicy: Unsupported value: \"Sometimes\": supported values: \"PreemptLowerPriority\", \"Never\""
        ]
    );
    assert_eq!(
        create(
            SCHED,
            "priorityclasses",
            pc("p", json!({"preemptionPolicy": ""}))
        ),
        vec!["preemptionPolicy: Required value"]
    );
    assert_eq!(
        update(
            SCHED,
            "priorityclasses",
            pc("p", json!({})),
            pc(
                "p",
                json!({"value": 6, "preemptionPolicy": "Never", "description": "d"})
            )
        ),
        vec![
            "value: Forbidden: may not be changed in an update.",
            "preemptionPolicy: Invalid value: \"Never\": field is immutable",
        ]
    );
    assert_eq!(
        update(
            SCHED,
            "priorityclasses",
            pc("p", json!({})),
            pc("p", json!({"description": "d"}))
        ),
        Vec::<String>::new()
    );
}

#[test]
fn runtime_class_errors() {
    let nd = "node.k8s.io";
    let rc = |handler: Value, extra: Value| {
        let mut v = json!({"metadata": {"name": "rc"}, "handler": handler});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        v
    };
    assert_eq!(
        create(nd, "runtimeclasses", rc(json!("Bad_Handler"), json!({}))),
        vec![format!("handler: Invalid value: \"Bad_Handler\": {LABEL}")]
    );
    assert_eq!(
        create(nd, "runtimeclasses", rc(Value::Null, json!({}))),
        vec![format!("handler: Invalid value: \"\": {LABEL}")]
    );
    assert_eq!(
        create(
            nd,
            "runtimeclasses",
            rc(
                json!("runc"),
                json!({"overhead": {"podFixed": {"cpu": "-1", "foo": "1"}},
                "scheduling": {"tolerations": [{"operator": "Equal", "value": "x"}]}})
            )
        ),
        vec![
            "overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0",
            "overhead.limits[foo]: Invalid value: \"foo\": must be a standard resource for containers",
            "scheduling.tolerations[0].operator: Invalid value: \"Equal\": operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
        ]
    );
    assert_eq!(
        update(
            nd,
            "runtimeclasses",
            rc(json!("runc"), json!({})),
            rc(json!("runc2"), json!({}))
        ),
        vec!["handler: Invalid value: \"runc2\": field is immutable"]
    );
}

const AR: &str = "apiregistration.k8s.io";

#[test]
fn api_service_errors() {
    let e = create(
        AR,
        "apiservices",
        json!({"metadata": {"name": "v1.example.com"}, "spec": {"group": "example.com", "version": "v1beta1",
        "groupPriorityMinimum": 0, "versionPriority": 1001, "caBundle": "YWJj", "insecureSkipTLSVerify": true,
        "service": {"name": "", "namespace": "ns", "port": 70000}}}),
    );
    assert_eq!(
        e,
        vec![
            "metadata.name: Invalid value: \"v1.example.com\": must be `spec.version+\".\"+spec.group`: \"v1beta1.example.com\"",
            "spec.groupPriorityMinimum: Invalid value: 0: must be positive and less than 20000",
            "spec.versionPriority: Invalid value: 1001: must be positive and less than 1000",
            "spec.service.name: Required value",
            "spec.service.port: Invalid value: 70000: port is not valid: must be between 1 and 65535, inclusive",
            "spec.insecureSkipTLSVerify: Invalid value: true: may not be true if caBundle is present",
        ]
    );
    assert_eq!(
        create(
            AR,
            "apiservices",
            json!({"metadata": {"name": "v1."}, "spec": {"version": "v1", "groupPriorityMinimum": 1, "versionPriority": 1,
            "caBundle": "YWJj", "insecureSkipTLSVerify": true}})
        ),
        vec![
            "spec.caBundle: Invalid value: \"3 bytes\": local APIServices may not have a caBundle",
            "spec.insecureSkipTLSVerify: Invalid value: true: local APIServices may not have insecureSkipTLSVerify",
        ]
    );
    assert_eq!(
        create(
            AR,
            "apiservices",
            json!({"metadata": {"name": "V2."}, "spec": {"version": "V2", "groupPriorityMinimum": 1, "versionPriority": 1}})
        ),
        vec![
            "spec.group: Required value: only v1 may have an empty group and it better be legacy kube".to_string(),
            "spec.version: Invalid value: \"V2\": a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')".to_string(),
        ]
    );
    let svc = |gpm: i64| {
        json!({"metadata": {"name": "v1.a.io"}, "spec": {"group": "a.io", "version": "v1", "groupPriorityMinimum": gpm,
        "versionPriority": 1, "service": {"name": "s", "namespace": "n"}}})
    };
    assert_eq!(
        update(AR, "apiservices", svc(100), svc(30000)),
        vec![
            "spec.groupPriorityMinimum: Invalid value: 30000: must be positive and less than 20000"
        ]
    );
}
