//! Tests of networking.k8s.io, discovery.k8s.io and
//! flowcontrol.apiserver.k8s.io validation: exact kube 1.32 messages.

use super::super::validate_kind as validate;
use crate::defaults::apply_defaults;
use serde_json::{Value, json};

pub(super) const SUBDOMAIN: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
pub(super) const LABEL: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

/// Defaults then validates a create; the messages as kube renders them.
pub(super) fn create(group: &str, res: &str, mut v: Value) -> Vec<String> {
    apply_defaults(group, res, &mut v);
    validate(group, res, &v, None)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Defaults both objects, gives them a resourceVersion, validates the update.
pub(super) fn update(group: &str, res: &str, mut old: Value, mut new: Value) -> Vec<String> {
    for v in [&mut old, &mut new] {
        apply_defaults(group, res, v);
        v["metadata"]["resourceVersion"] = json!("1");
    }
    validate(group, res, &new, Some(&old))
        .iter()
        .map(ToString::to_string)
        .collect()
}

fn ns() -> Value {
    json!({"name": "x", "namespace": "default"})
}

const NET: &str = "networking.k8s.io";

#[test]
fn valid_objects_pass() {
    let backend = json!({"service": {"name": "web", "port": {"number": 80}}});
    let cases = vec![
        (
            NET,
            "ingresses",
            json!({"metadata": ns(), "spec": {"ingressClassName": "nginx", "rules": [{"host": "*.example.com",
            "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": backend}]}}],
            "tls": [{"hosts": ["a.example.com"], "secretName": "tls"}]}}),
        ),
        (
            NET,
            "ingresses",
            json!({"metadata": ns(), "spec": {"defaultBackend": {"resource": {"apiGroup": "k8s.example.com", "kind": "Bucket", "name": "b"}}}}),
        ),
        (
            NET,
            "ingressclasses",
            json!({"metadata": {"name": "nginx"}, "spec": {"controller": "k8s.io/ingress-nginx",
            "parameters": {"kind": "Config", "name": "c", "scope": "Namespace", "namespace": "ingress"}}}),
        ),
        (
            NET,
            "networkpolicies",
            json!({"metadata": ns(), "spec": {"podSelector": {"matchLabels": {"app": "a"}},
            "ingress": [{"from": [{"namespaceSelector": {}, "podSelector": {}}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}],
            "ports": [{"port": 80, "endPort": 90}, {"port": "http"}]}], "egress": [{}]}}),
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            json!({"metadata": ns(), "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"],
            "nodeName": "node-1", "hostname": "web-0", "deprecatedTopology": {"rack": "r1"}, "hints": {"forZones": [{"name": "z1"}]}}],
            "ports": [{"name": "http", "port": 80, "appProtocol": "kubernetes.io/h2c"}]}),
        ),
        (
            "discovery.k8s.io",
            "endpointslices",
            json!({"metadata": ns(), "addressType": "FQDN", "endpoints": [{"addresses": ["example.com."]}]}),
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "flowschemas",
            json!({"metadata": {"name": "fs"}, "spec": {"priorityLevelConfiguration": {"name": "workload-low"},
            "distinguisherMethod": {"type": "ByUser"}, "rules": [{"subjects": [{"kind": "ServiceAccount",
            "serviceAccount": {"name": "*", "namespace": "kube-system"}}, {"kind": "Group", "group": {"name": "system:nodes"}}],
            "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"], "clusterScope": true, "namespaces": ["*"]}],
            "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]}]}]}}),
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            json!({"metadata": {"name": "p"}, "spec": {"type": "Limited", "limited": {
            "limitResponse": {"type": "Queue", "queuing": {}}}}}),
        ),
        (
            "flowcontrol.apiserver.k8s.io",
            "prioritylevelconfigurations",
            json!({"metadata": {"name": "exempt"}, "spec": {"type": "Exempt", "exempt": {}}}),
        ),
    ];
    for (g, r, v) in cases {
        assert_eq!(create(g, r, v), Vec::<String>::new(), "{g}/{r}");
    }
}

#[test]
fn ingress_errors() {
    assert_eq!(
        create(NET, "ingresses", json!({"metadata": ns(), "spec": {}})),
        vec![
            "spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"
        ]
    );
    let e = create(
        NET,
        "ingresses",
        json!({"metadata": ns(), "spec": {"rules": [{"host": "1.2.3.4", "http": {"paths": [
            {"path": "foo", "pathType": "Prefix", "backend": {"service": {"name": "svc"}}},
            {"path": "/a", "backend": {}},
            {"path": "/x//y/..", "pathType": "Exact", "backend": {"service": {"name": "s", "port": {"number": 80, "name": "http"}}}},
            {"path": "/", "pathType": "Bogus", "backend": {"resource": {"kind": "K", "name": "n"}, "service": {"name": "s"}}}
        ]}}]}}),
    );
    assert_eq!(
        e,
        vec![
            "spec.rules[0].host: Invalid value: \"1.2.3.4\": must be a DNS name, not an IP address",
            "spec.rules[0].http.paths[0].path: Invalid value: \"foo\": must be an absolute path",
            "spec.rules[0].http.paths[0].backend: Required value: port name or number is required",
            "spec.rules[0].http.paths[1].pathType: Required value: pathType must be specified",
            "spec.rules[0].http.paths[2].path: Invalid value: \"/x//y/..\": must not contain '//'",
            "spec.rules[0].http.paths[2].path: Invalid value: \"/x//y/..\": cannot end with '/..'",
            "spec.rules[0].http.paths[2].backend: Invalid value: \"\": cannot set both port name & port number",
            "spec.rules[0].http.paths[3].pathType: Unsupported value: \"Bogus\": supported values: \"Exact\", \"ImplementationSpecific\", \"Prefix\"",
            "spec.rules[0].http.paths[3].backend: Invalid value: \"\": cannot set both resource and service backends",
        ]
    );
    let e = create(
        NET,
        "ingresses",
        json!({"metadata": {"name": "x", "namespace": "default", "annotations": {"kubernetes.io/ingress.class": "nginx"}},
        "spec": {"ingressClassName": "other", "defaultBackend": {"service": {"name": "1svc", "port": {"number": 80}}},
        "tls": [{"hosts": ["*.example.com", "a.*.com"], "secretName": "Bad_Name"}]}}),
    );
    assert_eq!(
        e,
        vec![
            format!("spec.defaultBackend.service.name: Invalid value: \"1svc\": {DNS1035}"),
            "spec.tls[0].hosts[1]: Invalid value: \"a.*.com\": a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character (e.g. '*.example.com', regex used for validation is '\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".to_string(),
            format!("spec.tls[0].secretName: Invalid value: \"Bad_Name\": {SUBDOMAIN}"),
            "annotations.kubernetes.io/ingress.class: Invalid value: \"nginx\": must match `ingressClassName` when both are specified".to_string(),
        ]
    );
}

#[test]
fn ingress_update_keeps_stored_leniency() {
    let old = json!({"metadata": ns(), "spec": {"defaultBackend": {"service": {"name": "s", "port": {"number": 80}}},
        "tls": [{"secretName": "Bad_Name"}]}});
    let mut new = old.clone();
    new["metadata"]["labels"] = json!({"a": "b"});
    assert_eq!(
        update(NET, "ingresses", old.clone(), new),
        Vec::<String>::new()
    );
    let mut fresh = old;
    fresh["spec"]["tls"] = json!([{"secretName": "Bad_Name"}]);
    assert_eq!(create(NET, "ingresses", fresh).len(), 1);
}

#[test]
fn ingress_class_errors() {
    let ic = |spec: Value| json!({"metadata": {"name": "c"}, "spec": spec});
    assert_eq!(
        create(NET, "ingressclasses", ic(json!({}))),
        vec!["spec.controller: Required value"]
    );
    assert_eq!(
        create(
            NET,
            "ingressclasses",
            ic(json!({"controller": "example.com"}))
        ),
        vec![
            "spec.controller: Invalid value: \"example.com\": must be a domain-prefixed path (such as \"acme.io/foo\")"
        ]
    );
    assert_eq!(
        create(
            NET,
            "ingressclasses",
            ic(json!({"controller": "acme.io/fo o"}))
        ),
        vec![
            "spec.controller: Invalid value: \"fo o\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
        ]
    );
    assert_eq!(
        create(
            NET,
            "ingressclasses",
            ic(
                json!({"controller": "a.io/c", "parameters": {"kind": "", "name": "x/y", "scope": "Namespace"}})
            )
        ),
        vec![
            "spec.parameters.kind: Required value: kind is required",
            "spec.parameters.name: Invalid value: \"x/y\": may not contain '/'",
            "spec.parameters.namespace: Required value: `parameters.scope` is set to 'Namespace'",
        ]
    );
    assert_eq!(
        create(
            NET,
            "ingressclasses",
            ic(
                json!({"controller": "a.io/c", "parameters": {"kind": "K", "name": "n", "namespace": "ns"}})
            )
        ),
        vec!["spec.parameters.namespace: Forbidden: `parameters.scope` is set to 'Cluster'"]
    );
    assert_eq!(
        create(
            NET,
            "ingressclasses",
            ic(
                json!({"controller": "a.io/c", "parameters": {"kind": "K", "name": "n", "scope": "World"}})
            )
        ),
        vec![
            "spec.parameters.scope: Unsupported value: \"World\": supported values: \"Cluster\", \"Namespace\""
        ]
    );
    assert_eq!(
        update(
            NET,
            "ingressclasses",
            ic(json!({"controller": "a.io/c"})),
            ic(json!({"controller": "b.io/c"}))
        ),
        vec!["spec.controller: Invalid value: \"b.io/c\": field is immutable"]
    );
}

#[test]
fn network_policy_errors() {
    let e = create(
        NET,
        "networkpolicies",
        json!({"metadata": ns(), "spec": {"podSelector": {}, "ingress": [{"ports": [
            {"port": 0}, {"port": "http", "endPort": 90}, {"endPort": 5}, {"port": 100, "endPort": 90, "protocol": "ICMP"}
        ], "from": [{}, {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["192.168.0.0/16"]}, "podSelector": {}},
            {"ipBlock": {"cidr": "bad"}}, {"ipBlock": {"cidr": ""}}]}],
        "policyTypes": ["Ingress", "Egress", "Other"]}}),
    );
    assert_eq!(
        e,
        vec![
            "spec.ingress[0].ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
            "spec.ingress[0].ports[1].endPort: Invalid value: 90: may not be specified when `port` is non-numeric",
            "spec.ingress[0].ports[2].endPort: Invalid value: 5: may not be specified when `port` is not specified",
            "spec.ingress[0].ports[3].protocol: Unsupported value: \"ICMP\": supported values: \"TCP\", \"UDP\", \"SCTP\"",
            "spec.ingress[0].ports[3].endPort: Invalid value: 100: must be greater than or equal to `port`",
            "spec.ingress[0].from[0]: Required value: must specify a peer",
            "spec.ingress[0].from[1].ipBlock.except[0]: Invalid value: \"192.168.0.0/16\": must be a strict subset of `cidr`",
            "spec.ingress[0].from[1]: Forbidden: may not specify both ipBlock and another peer",
            "spec.ingress[0].from[2].ipBlock.cidr: Invalid value: \"bad\": not a valid CIDR",
            "spec.ingress[0].from[3].ipBlock.cidr: Required value",
            "spec.policyTypes: Invalid value: []networking.PolicyType{\"Ingress\", \"Egress\", \"Other\"}: may not specify more than two policyTypes",
        ]
    );
    assert_eq!(
        create(
            NET,
            "networkpolicies",
            json!({"metadata": ns(), "spec": {"policyTypes": ["Bogus"],
            "egress": [{"to": [{"podSelector": {"matchLabels": {"a": "-x"}}}]}]}})
        ),
        vec![
            "spec.egress[0].to[0].podSelector.matchLabels: Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
            "spec.policyTypes[0]: Unsupported value: \"Bogus\": supported values: \"Ingress\", \"Egress\"",
        ]
    );
    assert_eq!(
        create(
            NET,
            "networkpolicies",
            json!({"metadata": {"name": "Bad", "namespace": "default"}})
        ),
        vec![format!(
            "metadata.name: Invalid value: \"Bad\": {SUBDOMAIN}"
        )]
    );
}

const DISC: &str = "discovery.k8s.io";

#[test]
fn endpoint_slice_errors() {
    let e = create(
        DISC,
        "endpointslices",
        json!({"metadata": ns(), "addressType": "IPv4", "endpoints": [{"addresses": []},
            {"addresses": ["10.0.0.1", "127.0.0.1", "fd00::1", "x"], "hostname": "Host", "nodeName": "Node_1"}],
            "ports": [{"name": "http", "port": 80}, {"name": "http", "protocol": "ICMP"}, {"name": "Bad"}]}),
    );
    assert_eq!(
        e,
        vec![
            "endpoints[0].addresses: Required value: must contain at least 1 address".to_string(),
            "endpoints[1].addresses[1]: Invalid value: \"127.0.0.1\": may not be in the loopback range (127.0.0.0/8, ::1/128)".to_string(),
            "endpoints[1].addresses[2]: Invalid value: \"fd00::1\": must be a valid IPv4 address".to_string(),
            "endpoints[1].addresses[3]: Invalid value: \"x\": must be a valid IPv4 address".to_string(),
            "endpoints[1].addresses[3]: Invalid value: \"x\": must be a valid IP address".to_string(),
            format!("endpoints[1].nodeName: Invalid value: \"Node_1\": {SUBDOMAIN}"),
            format!("endpoints[1].hostname: Invalid value: \"Host\": {LABEL}"),
            "ports[1].name: Duplicate value: \"http\"".to_string(),
            "ports[1].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\"".to_string(),
            format!("ports[2].name: Invalid value: \"Bad\": {LABEL}"),
        ]
    );
    assert_eq!(
        create(DISC, "endpointslices", json!({"metadata": ns()})),
        vec!["addressType: Required value"]
    );
    assert_eq!(
        create(
            DISC,
            "endpointslices",
            json!({"metadata": ns(), "addressType": "IP"})
        ),
        vec![
            "addressType: Unsupported value: \"IP\": supported values: \"FQDN\", \"IPv4\", \"IPv6\""
        ]
    );
    assert_eq!(
        create(
            DISC,
            "endpointslices",
            json!({"metadata": ns(), "addressType": "FQDN", "endpoints": [{"addresses": ["example", "Bad.com"]}]})
        ),
        vec![
            "endpoints[0].addresses[0]: Invalid value: \"example\": should be a domain with at least two segments separated by dots".to_string(),
            format!("endpoints[0].addresses[1]: Invalid value: \"Bad.com\": {SUBDOMAIN}"),
        ]
    );
    assert_eq!(
        create(
            DISC,
            "endpointslices",
            json!({"metadata": ns(), "addressType": "IPv6", "endpoints": [{"addresses": ["10.0.0.1", "fe80::1"]}]})
        ),
        vec![
            "endpoints[0].addresses[0]: Invalid value: \"10.0.0.1\": must be a valid IPv6 address",
            "endpoints[0].addresses[1]: Invalid value: \"fe80::1\": may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ]
    );
    assert_eq!(
        update(
            DISC,
            "endpointslices",
            json!({"metadata": ns(), "addressType": "IPv4"}),
            json!({"metadata": ns(), "addressType": "IPv6"})
        ),
        vec!["addressType: Invalid value: \"IPv6\": field is immutable"]
    );
}

const FC: &str = "flowcontrol.apiserver.k8s.io";

#[test]
fn flow_schema_errors() {
    let e = create(
        FC,
        "flowschemas",
        json!({"metadata": {"name": "fs"}, "spec": {"matchingPrecedence": 1, "distinguisherMethod": {"type": "ByFoo"},
        "priorityLevelConfiguration": {}, "rules": [{"subjects": [{"kind": "User"},
            {"kind": "ServiceAccount", "serviceAccount": {"name": "*"}, "user": {"name": "u"}}, {"kind": "Robot"}],
            "resourceRules": [{"verbs": ["get", "fly"], "apiGroups": ["*", "apps"], "resources": [], "namespaces": ["Bad_NS"]}],
            "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["healthz", "/a/*/b"]}]},
            {"subjects": [{"kind": "Group", "group": {"name": "g"}}]}]}}),
    );
    assert_eq!(
        e,
        vec![
            "spec.matchingPrecedence: Invalid value: 1: only the schema named 'exempt' may have matchingPrecedence 1".to_string(),
            "spec.distinguisherMethod.type: Unsupported value: flowcontrol.FlowDistinguisherMethod{Type:\"ByFoo\"}: supported values: \"ByNamespace\", \"ByUser\"".to_string(),
            "spec.priorityLevelConfiguration.name: Required value: must reference a priority level".to_string(),
            "spec.rules[0].subjects[0].user: Required value: user is required when subject kind is 'User'".to_string(),
            "spec.rules[0].subjects[1].serviceAccount.namespace: Required value: must specify namespace for service account".to_string(),
            "spec.rules[0].subjects[1].user: Forbidden: user is forbidden when subject kind is not 'User'".to_string(),
            "spec.rules[0].subjects[2].kind: Unsupported value: \"Robot\": supported values: \"Group\", \"ServiceAccount\", \"User\"".to_string(),
            "spec.rules[0].resourceRules[0].verbs: Unsupported value: []string{\"get\", \"fly\"}: supported values: \"create\", \"delete\", \"deletecollection\", \"get\", \"list\", \"patch\", \"proxy\", \"update\", \"watch\"".to_string(),
            "spec.rules[0].resourceRules[0].apiGroups: Invalid value: []string{\"*\", \"apps\"}: if '*' is present, must not specify other api groups".to_string(),
            "spec.rules[0].resourceRules[0].resources: Required value: resource rules must supply at least one resource".to_string(),
            format!("spec.rules[0].resourceRules[0].namespaces[0]: Invalid value: \"Bad_NS\": each member of this list must be '*' or a DNS-1123 label; {LABEL}"),
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[0]: Invalid value: \"healthz\": must start with slash".to_string(),
            "spec.rules[0].nonResourceRules[0].nonResourceURLs[1]: Invalid value: \"/a/*/b\": wildcard can only do suffix matching".to_string(),
            "spec.rules[1]: Required value: at least one of resourceRules and nonResourceRules has to be non-empty".to_string(),
        ]
    );
    let fs = |p: i64| json!({"metadata": {"name": "fs"}, "spec": {"matchingPrecedence": p, "priorityLevelConfiguration": {"name": "p"}}});
    assert_eq!(
        create(FC, "flowschemas", fs(20000)),
        vec!["spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000"]
    );
    assert_eq!(
        create(FC, "flowschemas", fs(-5)),
        vec!["spec.matchingPrecedence: Invalid value: -5: must be a positive value"]
    );
    assert_eq!(
        update(FC, "flowschemas", fs(100), fs(20000)),
        vec!["spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000"]
    );
}

#[test]
fn priority_level_errors() {
    let plc = |name: &str, spec: Value| json!({"metadata": {"name": name}, "spec": spec});
    let res = "prioritylevelconfigurations";
    assert_eq!(
        create(FC, res, plc("p", json!({"type": "Exempt"}))),
        vec![
            "spec.type: Invalid value: \"Exempt\": type must be 'Exempt' if and only if name is 'exempt'"
        ]
    );
    assert_eq!(
        create(FC, res, plc("p", json!({"type": "Limited"}))),
        vec!["spec.limited: Required value: must not be empty when type is Limited"]
    );
    assert_eq!(
        create(FC, res, plc("p", json!({"type": "Sometimes"}))),
        vec![
            "spec.type: Unsupported value: \"Sometimes\": supported values: \"Exempt\", \"Limited\""
        ]
    );
    assert_eq!(
        create(
            FC,
            res,
            plc(
                "p",
                json!({"type": "Limited", "exempt": {}, "limited": {"nominalConcurrencyShares": -1, "lendablePercent": 101,
                "borrowingLimitPercent": -1, "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 200, "queueLengthLimit": -1}}}})
            )
        ),
        vec![
            "spec.exempt: Forbidden: must be nil if the type is Limited",
            "spec.limited.nominalConcurrencyShares: Invalid value: -1: must be a non-negative integer",
            "spec.limited.limitResponse.queuing.queueLengthLimit: Invalid value: -1: must be positive",
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 200: should not be greater than queues (128)",
            "spec.limited.lendablePercent: Invalid value: 101: must be between 0 and 100, inclusive",
            "spec.limited.borrowingLimitPercent: Invalid value: -1: if specified, must be a non-negative integer",
        ]
    );
    assert_eq!(
        create(
            FC,
            res,
            plc(
                "p",
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {"queues": 1048576, "handSize": 5}}}})
            )
        ),
        vec![
            "spec.limited.limitResponse.queuing.handSize: Invalid value: 5: required entropy bits of deckSize 1048576 and handSize 5 should not be greater than 60"
        ]
    );
    assert_eq!(
        create(
            FC,
            res,
            plc(
                "p",
                json!({"type": "Limited", "limited": {"limitResponse": {"type": "Reject", "queuing": {}}}})
            )
        ),
        vec![
            "spec.limited.limitResponse.queuing: Forbidden: must be nil if limited.limitResponse.type is not Limited"
        ]
    );
    assert_eq!(
        create(
            FC,
            res,
            plc(
                "exempt",
                json!({"type": "Exempt", "limited": {"limitResponse": {"type": "Drop"}}, "exempt": {"lendablePercent": -1}})
            )
        ),
        vec![
            "spec.limited: Forbidden: must be nil if the type is not Limited",
            "spec.exempt.lendablePercent: Invalid value: -1: must be between 0 and 100, inclusive",
        ]
    );
}
