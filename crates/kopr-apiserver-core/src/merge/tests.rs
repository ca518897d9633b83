//! The merge rules over representative paths of the built-in kinds, and the
//! table's consistency with the type graph.

use super::*;

fn smp(av: &str, kind: &str, path: &[&str]) -> ListStrategy {
    strategic_schema(av, kind).list_strategy(path)
}

fn ssa(av: &str, kind: &str, path: &[&str]) -> ListStrategy {
    apply_schema(av, kind).list_strategy(path)
}

fn atomic(av: &str, kind: &str, path: &[&str]) -> bool {
    apply_schema(av, kind).map_is_atomic(path)
}

fn api_version(def: &crate::resources::kind::KindDef) -> String {
    if def.group.is_empty() {
        def.version.to_string()
    } else {
        format!("{}/{}", def.group, def.version)
    }
}

#[test]
fn every_rule_names_a_field_of_the_type_graph() {
    let names: Vec<&str> = MESSAGES.iter().map(|m| m.name).collect();
    let index = |t: &str| {
        names
            .iter()
            .position(|n| *n == t)
            .and_then(|i| u16::try_from(i).ok())
            .unwrap_or_else(|| panic!("{t} is not in the type graph"))
    };
    for (t, f, _) in rules::RULES {
        let declared = MESSAGES[usize::from(index(t))].fields.iter();
        assert!(
            declared.clone().any(|d| d.name == *f && !d.inline),
            "{t} has no field {f}"
        );
    }
    for t in rules::ATOMIC_STRUCTS {
        index(t);
    }
    for (t, f, _) in rules::KEY_DEFAULTS {
        assert!(json_fields(index(t)).iter().any(|(_, d)| d.name == *f));
    }
    let mut seen = std::collections::BTreeSet::new();
    for (t, f, _) in rules::RULES {
        assert!(seen.insert((t, f)), "{t}.{f} listed twice");
    }
}

#[test]
fn every_served_kind_but_crds_has_a_type() {
    for def in crate::kinds::all() {
        let av = api_version(def);
        let has = crate::protobuf::kind_message(&av, def.kind).is_some();
        assert_eq!(
            has,
            def.kind != "CustomResourceDefinition",
            "{av} {}",
            def.kind
        );
    }
}

#[test]
fn metadata_lists_for_every_kind() {
    let mut kinds: Vec<(String, &str)> = crate::kinds::all()
        .into_iter()
        .map(|d| (api_version(d), d.kind))
        .collect();
    kinds.push(("example.com/v1".into(), "Widget"));
    for (av, k) in &kinds {
        assert_eq!(
            smp(av, k, &["metadata", "ownerReferences"]),
            ListStrategy::map(&["uid"])
        );
        assert_eq!(
            ssa(av, k, &["metadata", "ownerReferences"]),
            ListStrategy::map(&["uid"])
        );
        assert_eq!(smp(av, k, &["metadata", "finalizers"]), ListStrategy::Set);
        assert_eq!(ssa(av, k, &["metadata", "finalizers"]), ListStrategy::Set);
        assert_eq!(
            ssa(av, k, &["metadata", "managedFields"]),
            ListStrategy::Atomic
        );
        assert!(atomic(av, k, &["metadata", "ownerReferences"]));
        assert!(!atomic(av, k, &["metadata", "labels"]));
        assert!(!atomic(av, k, &["metadata"]));
    }
    // Without a type only metadata is known.
    assert_eq!(
        ssa("example.com/v1", "Widget", &["spec", "ports"]),
        ListStrategy::Atomic
    );
}

/// Where the pod spec lives in each kind carrying one.
const POD_SPECS: &[(&str, &str, &[&str])] = &[
    ("v1", "Pod", &["spec"]),
    ("v1", "PodTemplate", &["template", "spec"]),
    ("v1", "ReplicationController", &["spec", "template", "spec"]),
    ("apps/v1", "Deployment", &["spec", "template", "spec"]),
    ("apps/v1", "ReplicaSet", &["spec", "template", "spec"]),
    ("apps/v1", "StatefulSet", &["spec", "template", "spec"]),
    ("apps/v1", "DaemonSet", &["spec", "template", "spec"]),
    ("batch/v1", "Job", &["spec", "template", "spec"]),
    (
        "batch/v1",
        "CronJob",
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ),
];

#[test]
fn pod_spec_rules_wherever_a_pod_spec_is() {
    for (av, k, root) in POD_SPECS {
        let at = |rel: &[&'static str]| -> Vec<&'static str> {
            root.iter().chain(rel).copied().collect()
        };
        for c in ["containers", "initContainers", "ephemeralContainers"] {
            assert_eq!(
                smp(av, k, &at(&[c])),
                ListStrategy::map(&["name"]),
                "{k} {c}"
            );
            assert_eq!(
                smp(av, k, &at(&[c, "ports"])),
                ListStrategy::map(&["containerPort"])
            );
            assert_eq!(
                ssa(av, k, &at(&[c, "ports"])),
                ListStrategy::map(&["containerPort", "protocol"])
            );
            assert_eq!(smp(av, k, &at(&[c, "env"])), ListStrategy::map(&["name"]));
            assert_eq!(
                smp(av, k, &at(&[c, "volumeMounts"])),
                ListStrategy::map(&["mountPath"])
            );
            assert_eq!(
                smp(av, k, &at(&[c, "resources", "claims"])),
                ListStrategy::Atomic
            );
            assert_eq!(
                ssa(av, k, &at(&[c, "resources", "claims"])),
                ListStrategy::map(&["name"])
            );
            assert_eq!(smp(av, k, &at(&[c, "args"])), ListStrategy::Atomic);
            for sel in [
                "configMapKeyRef",
                "secretKeyRef",
                "fieldRef",
                "resourceFieldRef",
            ] {
                assert!(atomic(av, k, &at(&[c, "env", "valueFrom", sel])));
            }
            // Embedding LocalObjectReference does not make a type atomic.
            assert!(!atomic(av, k, &at(&[c, "envFrom", "configMapRef"])));
            assert!(!atomic(av, k, &at(&[c, "resources"])));
        }
        assert_eq!(
            smp(av, k, &at(&["topologySpreadConstraints"])),
            ListStrategy::map(&["topologyKey"])
        );
        assert_eq!(
            ssa(av, k, &at(&["topologySpreadConstraints"])),
            ListStrategy::map(&["topologyKey", "whenUnsatisfiable"])
        );
        assert_eq!(smp(av, k, &at(&["tolerations"])), ListStrategy::Atomic);
        assert_eq!(
            smp(av, k, &at(&["hostAliases"])),
            ListStrategy::map(&["ip"])
        );
        let s = strategic_schema(av, k);
        assert!(s.retain_keys_allowed(&at(&["volumes"])));
        assert!(s.retain_keys_allowed(&at(&["resourceClaims"])));
        assert!(!s.retain_keys_allowed(&at(&["containers"])));
        assert!(atomic(av, k, &at(&["nodeSelector"])));
        assert!(!atomic(av, k, &at(&["nodeSelector", "disk"])));
        assert!(atomic(av, k, &at(&["imagePullSecrets"])));
        assert!(atomic(
            av,
            k,
            &at(&["topologySpreadConstraints", "labelSelector"])
        ));
        assert!(atomic(
            av,
            k,
            &at(&[
                "affinity",
                "nodeAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution"
            ])
        ));
        assert!(!atomic(av, k, &at(&["affinity"])));
        // Strategic merge patch has no atomic maps.
        assert!(!s.map_is_atomic(&at(&["nodeSelector"])));
        if root.len() > 1 {
            let meta: Vec<&str> = root[..root.len() - 1]
                .iter()
                .chain(&["metadata", "finalizers"])
                .copied()
                .collect();
            assert_eq!(smp(av, k, &meta), ListStrategy::Set);
        }
    }
    for k in ["Deployment", "ReplicaSet", "StatefulSet", "DaemonSet"] {
        assert!(atomic("apps/v1", k, &["spec", "selector"]));
    }
    assert!(atomic("batch/v1", "Job", &["spec", "selector"]));
    assert!(atomic("v1", "ReplicationController", &["spec", "selector"]));
}

#[test]
fn conditions_by_kind() {
    let both = [
        ("v1", "Pod"),
        ("v1", "Node"),
        ("v1", "Namespace"),
        ("v1", "Service"),
        ("v1", "ReplicationController"),
        ("v1", "PersistentVolumeClaim"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("apps/v1", "StatefulSet"),
        ("apps/v1", "DaemonSet"),
        ("autoscaling/v2", "HorizontalPodAutoscaler"),
        ("policy/v1", "PodDisruptionBudget"),
        ("apiregistration.k8s.io/v1", "APIService"),
    ];
    for (av, k) in both {
        assert_eq!(
            smp(av, k, &["status", "conditions"]),
            ListStrategy::map(&["type"]),
            "{k}"
        );
        assert_eq!(
            ssa(av, k, &["status", "conditions"]),
            ListStrategy::map(&["type"]),
            "{k}"
        );
    }
    // Job: patchMergeKey=type but listType=atomic.
    assert_eq!(
        smp("batch/v1", "Job", &["status", "conditions"]),
        ListStrategy::map(&["type"])
    );
    assert_eq!(
        ssa("batch/v1", "Job", &["status", "conditions"]),
        ListStrategy::Atomic
    );
    // listType=map without a patch strategy.
    for (av, k) in [
        ("certificates.k8s.io/v1", "CertificateSigningRequest"),
        ("flowcontrol.apiserver.k8s.io/v1", "FlowSchema"),
        (
            "flowcontrol.apiserver.k8s.io/v1",
            "PriorityLevelConfiguration",
        ),
    ] {
        assert_eq!(
            smp(av, k, &["status", "conditions"]),
            ListStrategy::Atomic,
            "{k}"
        );
        assert_eq!(
            ssa(av, k, &["status", "conditions"]),
            ListStrategy::map(&["type"]),
            "{k}"
        );
    }
    // A PodStatus anywhere, e.g. in a StatefulSet's claim templates' status.
    assert_eq!(
        ssa(
            "apps/v1",
            "StatefulSet",
            &["spec", "volumeClaimTemplates", "status", "conditions"]
        ),
        ListStrategy::map(&["type"])
    );
}

#[test]
fn other_kinds() {
    assert_eq!(
        smp("v1", "Service", &["spec", "ports"]),
        ListStrategy::map(&["port"])
    );
    assert_eq!(
        ssa("v1", "Service", &["spec", "ports"]),
        ListStrategy::map(&["port", "protocol"])
    );
    assert!(atomic("v1", "Service", &["spec", "selector"]));
    assert_eq!(
        smp("v1", "Node", &["status", "addresses"]),
        ListStrategy::map(&["type"])
    );
    assert_eq!(smp("v1", "Node", &["spec", "podCIDRs"]), ListStrategy::Set);
    assert_eq!(ssa("v1", "Node", &["spec", "taints"]), ListStrategy::Atomic);
    assert_eq!(
        smp("v1", "Pod", &["status", "podIPs"]),
        ListStrategy::map(&["ip"])
    );
    assert!(
        strategic_schema("v1", "Pod").retain_keys_allowed(&["status", "resourceClaimStatuses"])
    );
    assert_eq!(
        smp("v1", "ServiceAccount", &["secrets"]),
        ListStrategy::map(&["name"])
    );
    assert!(atomic("v1", "ServiceAccount", &["secrets"]));
    assert!(atomic("v1", "Event", &["involvedObject"]));
    assert!(atomic("events.k8s.io/v1", "Event", &["regarding"]));
    assert!(atomic(
        "networking.k8s.io/v1",
        "NetworkPolicy",
        &["spec", "podSelector"]
    ));
    assert_eq!(
        smp("storage.k8s.io/v1", "CSINode", &["spec", "drivers"]),
        ListStrategy::map(&["name"])
    );
    assert_eq!(ssa("v1", "ConfigMap", &["data"]), ListStrategy::Atomic);
    assert!(!atomic("v1", "ConfigMap", &["data"]));
    let rbac = "rbac.authorization.k8s.io/v1";
    assert_eq!(smp(rbac, "Role", &["rules"]), ListStrategy::Atomic);
    assert!(atomic(rbac, "RoleBinding", &["roleRef"]));
    assert!(atomic(rbac, "ClusterRoleBinding", &["roleRef"]));
    let ar = "admissionregistration.k8s.io/v1";
    for k in [
        "ValidatingWebhookConfiguration",
        "MutatingWebhookConfiguration",
    ] {
        assert_eq!(smp(ar, k, &["webhooks"]), ListStrategy::map(&["name"]));
        assert_eq!(
            ssa(ar, k, &["webhooks", "matchConditions"]),
            ListStrategy::map(&["name"])
        );
        assert!(atomic(ar, k, &["webhooks", "namespaceSelector"]));
        assert!(atomic(ar, k, &["webhooks", "objectSelector"]));
    }
    let d = strategic_schema("apps/v1", "Deployment");
    assert!(d.retain_keys_allowed(&["spec", "strategy"]));
    assert!(
        !strategic_schema("apps/v1", "StatefulSet")
            .retain_keys_allowed(&["spec", "updateStrategy"])
    );
    // Unknown fields merge by the defaults.
    assert_eq!(smp("v1", "Pod", &["spec", "nope"]), ListStrategy::Atomic);
    assert!(!atomic("v1", "Pod", &["spec", "nope", "selector"]));
}

#[test]
fn key_defaults_for_apply_only() {
    let a = apply_schema("v1", "Service");
    assert_eq!(
        a.key_default(&["spec", "ports"], "protocol"),
        Some(Value::String("TCP".into()))
    );
    let p = apply_schema("v1", "Pod");
    assert_eq!(
        p.key_default(&["spec", "containers", "ports"], "protocol"),
        Some(Value::String("TCP".into()))
    );
    assert_eq!(
        p.key_default(&["spec", "containers", "ports"], "name"),
        None
    );
    assert_eq!(p.key_default(&["spec", "containers"], "protocol"), None);
    let s = strategic_schema("v1", "Service");
    assert_eq!(s.key_default(&["spec", "ports"], "protocol"), None);
}

#[test]
fn openapi_rules_flatten_embedded_structs() {
    let rules = property_rules();
    let find = |t: &str, f: &str| {
        rules
            .iter()
            .find(|(d, p, _)| *d == t && *p == f)
            .map(|r| *r.2)
    };
    let ports = find("io.k8s.api.core.v1.EphemeralContainer", "ports");
    assert_eq!(ports, find("io.k8s.api.core.v1.Container", "ports"));
    let ports = ports.unwrap_or_else(|| panic!("no rule for ephemeral container ports"));
    assert_eq!(ports.patch_merge_key, Some("containerPort"));
    assert_eq!(ports.list_map_keys, ["containerPort", "protocol"]);
    assert_eq!(
        find("io.k8s.api.core.v1.PodSpec", "volumes").and_then(|r| r.patch_strategy),
        Some("merge,retainKeys")
    );
    assert!(atomic_structs().contains(&"io.k8s.api.rbac.v1.RoleRef"));
}
