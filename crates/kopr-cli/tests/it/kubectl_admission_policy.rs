//! ValidatingAdmissionPolicies through real kubectl against a `kopr
//! apiserver` child process: applied from YAML, listed with kube's
//! columns, a denied `kubectl create` printed as kubectl prints kube's
//! error, and a `Warn` binding's warning printed on a write that succeeds.

use crate::support::{Server, rows};

const POLICY: &str = r#"
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata:
  name: small-configmaps
spec:
  paramKind:
    apiVersion: v1
    kind: ConfigMap
  matchConstraints:
    resourceRules:
    - apiGroups: [""]
      apiVersions: ["v1"]
      operations: ["CREATE", "UPDATE"]
      resources: ["configmaps"]
    objectSelector:
      matchExpressions:
      - {key: role, operator: DoesNotExist}
  validations:
  - expression: "!has(object.data) || size(object.data) <= int(params.data.maxKeys)"
    messageExpression: "'at most ' + params.data.maxKeys + ' keys'"
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: small-configmaps-deny
spec:
  policyName: small-configmaps
  validationActions: [Deny]
  paramRef:
    name: limits
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels: {enforce: "yes"}
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: small-configmaps-warn
spec:
  policyName: small-configmaps
  validationActions: [Warn]
  paramRef:
    name: limits
    namespace: default
    parameterNotFoundAction: Deny
  matchResources:
    namespaceSelector:
      matchLabels: {enforce: "no"}
"#;

#[test]
fn kubectl_shows_policy_denials_and_warnings_as_kube_gives_them() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]);
    server.ok(&[
        "create",
        "configmap",
        "limits",
        "-n",
        "default",
        "--from-literal=maxKeys=1",
    ]);
    server.ok(&["label", "configmap", "limits", "role=param"]);
    server.ok_stdin(&["apply", "-f", "-"], POLICY);
    for (ns, enforce) in [("strict", "yes"), ("relaxed", "no")] {
        server.ok(&["create", "namespace", ns]);
        server.ok(&["label", "namespace", ns, &format!("enforce={enforce}")]);
    }

    let policies = rows(&server.ok(&["get", "validatingadmissionpolicies"]));
    assert_eq!(
        policies[0],
        ["NAME", "VALIDATIONS", "PARAMKIND", "AGE"],
        "{policies:?}"
    );
    assert_eq!(policies[1][..3], ["small-configmaps", "1", "v1/ConfigMap"]);
    let bindings = rows(&server.ok(&["get", "validatingadmissionpolicybindings"]));
    assert_eq!(bindings[0], ["NAME", "POLICYNAME", "PARAMREF", "AGE"]);
    assert_eq!(
        bindings[1][..3],
        [
            "small-configmaps-deny",
            "small-configmaps",
            "default/limits"
        ]
    );

    let args = |ns: &'static str| {
        [
            "create",
            "configmap",
            "two",
            "-n",
            ns,
            "--from-literal=a=1",
            "--from-literal=b=2",
        ]
    };
    let denied = server.kubectl(&args("strict"));
    assert!(!denied.status.success(), "{denied:?}");
    assert_eq!(
        String::from_utf8_lossy(&denied.stderr),
        "error: failed to create configmap: configmaps \"two\" is forbidden: ValidatingAdmissionPolicy 'small-configmaps' with binding 'small-configmaps-deny' denied request: at most 1 keys\n"
    );
    let warned = server.kubectl(&args("relaxed"));
    assert!(warned.status.success(), "{warned:?}");
    assert_eq!(
        String::from_utf8_lossy(&warned.stderr),
        "Warning: Validation failed for ValidatingAdmissionPolicy 'small-configmaps' with binding 'small-configmaps-warn': at most 1 keys\n"
    );
    // Outside both bindings' namespaces the policy does not apply.
    server.ok(&args("default"));
}
