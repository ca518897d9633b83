//! Client certificates through real kubectl, as kube's "issue a certificate
//! for a user" task goes: a CertificateSigningRequest for
//! `kubernetes.io/kube-apiserver-client`, `kubectl certificate approve`, the
//! cluster CA signs it (`kubectl get csr` shows `Approved,Issued`), and a
//! kubeconfig with the issued certificate and its key authenticates as the
//! subject (`kubectl auth whoami`).

use std::process::Command;

use crate::support::{Server, eventually, kubectl_path, rows};

#[test]
fn an_approved_request_issues_a_certificate_kubectl_authenticates_with() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--nodes", "0"]);

    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "alice");
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "devs");
    let key = rcgen::KeyPair::generate().unwrap();
    let request = params.serialize_request(&key).unwrap().pem().unwrap();
    // `spec.request` is base64, as a ByteString serializes.
    let request = serde_json::to_value(k8s_openapi::ByteString(request.into_bytes())).unwrap();
    let csr = serde_json::json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "alice"},
        "spec": {"request": request, "signerName": "kubernetes.io/kube-apiserver-client",
                 "expirationSeconds": 86400, "usages": ["client auth"]},
    });
    assert_eq!(
        server.ok_stdin(&["create", "-f", "-"], &csr.to_string()),
        "certificatesigningrequest.certificates.k8s.io/alice created\n"
    );
    assert_eq!(
        server.ok(&["certificate", "approve", "alice"]),
        "certificatesigningrequest.certificates.k8s.io/alice approved\n"
    );
    let table = eventually(&server, &["get", "csr", "alice"], 20, |out| {
        out.contains("Issued")
    });
    let table = rows(&table);
    assert_eq!(
        table[0],
        [
            "NAME",
            "AGE",
            "SIGNERNAME",
            "REQUESTOR",
            "REQUESTEDDURATION",
            "CONDITION"
        ]
    );
    assert_eq!(table[1][0], "alice");
    assert_eq!(table[1][2], "kubernetes.io/kube-apiserver-client");
    assert_eq!(table[1][3], "kopr-admin");
    assert_eq!(table[1][4], "24h");
    assert_eq!(table[1][5], "Approved,Issued");

    let cert = server.ok(&[
        "get",
        "csr",
        "alice",
        "-o",
        "go-template={{.status.certificate | base64decode}}",
    ]);
    assert!(cert.starts_with("-----BEGIN CERTIFICATE-----\n"), "{cert}");
    let (crt, key_file) = (dir.path().join("alice.crt"), dir.path().join("alice.key"));
    std::fs::write(&crt, &cert).unwrap();
    std::fs::write(&key_file, key.serialize_pem()).unwrap();

    // A kubeconfig of her own, as kube's documentation builds one.
    let alice = dir.path().join("alice.kubeconfig");
    let kubectl = |args: &[&str]| {
        let out = Command::new(kubectl_path())
            .arg("--kubeconfig")
            .arg(&alice)
            .args(args)
            .output()
            .unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        assert!(out.status.success(), "kubectl {args:?}: {stdout}{stderr}");
        stdout
    };
    let ca = dir.path().join("pki").join("ca.crt");
    kubectl(&[
        "config",
        "set-cluster",
        "kopr",
        "--server",
        &server.url,
        "--certificate-authority",
        ca.to_str().unwrap(),
    ]);
    kubectl(&[
        "config",
        "set-credentials",
        "alice",
        "--client-certificate",
        crt.to_str().unwrap(),
        "--client-key",
        key_file.to_str().unwrap(),
        "--embed-certs",
    ]);
    kubectl(&[
        "config",
        "set-context",
        "alice",
        "--cluster",
        "kopr",
        "--user",
        "alice",
    ]);
    kubectl(&["config", "use-context", "alice"]);
    let whoami = kubectl(&["auth", "whoami"]);
    let lines = rows(&whoami);
    assert_eq!(lines[1], ["Username", "alice"], "{whoami}");
    assert_eq!(
        lines[2],
        ["Groups", "[devs", "system:authenticated]"],
        "{whoami}"
    );
    assert_eq!(
        lines[3][..2],
        ["Extra:", "authentication.kubernetes.io/credential-id"],
        "{whoami}"
    );
    assert!(lines[3][2].starts_with("[X509SHA256="), "{whoami}");
    // She is no one RBAC knows yet: kube's 403 names her.
    let out = Command::new(kubectl_path())
        .arg("--kubeconfig")
        .arg(&alice)
        .args(["get", "pods"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            r#"User "alice" cannot list resource "pods" in API group "" in the namespace "default""#
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
