//! CertificateSigningRequests signed by the cluster CA and client
//! certificates as credentials, through kube-rs: an approved request for
//! `kubernetes.io/kube-apiserver-client` gets a certificate that
//! authenticates its subject (SelfSubjectReview), a request with usages its
//! signer does not allow gets kube's `Failed` condition, a denied one is not
//! signed, and a certificate from another CA is refused (401) unless a
//! bearer token authenticates the request.

use crate::common;

use std::time::Duration;

use base64::Engine;
use k8s_openapi::api::authentication::v1::SelfSubjectReview;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use rcgen::{CertificateParams, DnType, KeyPair};
use serde_json::json;

const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";

/// A key and a PEM certificate request for `cn` in `orgs`.
fn key_and_request(cn: &str, orgs: &[&str]) -> (KeyPair, String) {
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params.distinguished_name.push(DnType::CommonName, cn);
    if let Some(first) = orgs.first() {
        params
            .distinguished_name
            .push(DnType::OrganizationName, *first);
    }
    let key = KeyPair::generate().expect("key");
    let pem = params
        .serialize_request(&key)
        .expect("csr")
        .pem()
        .expect("pem");
    (key, pem)
}

fn b64(text: &str) -> String {
    base64::engine::general_purpose::STANDARD.encode(text)
}

async fn create_csr(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    request_pem: &str,
    usages: &[&str],
) -> CertificateSigningRequest {
    let csr: CertificateSigningRequest = serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": b64(request_pem), "signerName": CLIENT_SIGNER,
                 "expirationSeconds": 86400, "usages": usages},
    }))
    .expect("csr");
    api.create(&PostParams::default(), &csr)
        .await
        .expect("created")
}

/// Approves (or denies) through the `approval` subresource.
async fn decide(api: &Api<CertificateSigningRequest>, name: &str, approve: bool) {
    let (kind, reason) = if approve {
        ("Approved", "TestApprove")
    } else {
        ("Denied", "TestDeny")
    };
    let patch = json!({"status": {"conditions": [{"type": kind, "status": "True",
        "reason": reason, "message": "decided by the test"}]}});
    api.patch_approval(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .expect("approval");
}

/// Waits (watching) until `done` holds for the named request.
async fn wait_for(
    api: &Api<CertificateSigningRequest>,
    name: &str,
    done: impl Fn(&CertificateSigningRequest) -> bool,
) -> CertificateSigningRequest {
    let cond = move |csr: Option<&CertificateSigningRequest>| csr.is_some_and(&done);
    tokio::time::timeout(
        Duration::from_secs(20),
        await_condition(api.clone(), name, cond),
    )
    .await
    .expect("in time")
    .expect("watch")
    .expect("the request")
}

fn issued(csr: &CertificateSigningRequest) -> Option<String> {
    let cert = csr.status.as_ref()?.certificate.as_ref()?;
    Some(String::from_utf8_lossy(&cert.0).into_owned())
}

/// A kube-rs client of the server presenting `cert_pem`/`key_pem`, and the
/// bearer token `token` when given.
async fn client_with_certificate(
    server: &kopr_apiserver::ApiServer,
    cert_pem: &str,
    key_pem: &str,
    token: Option<&str>,
) -> kube::Client {
    let user = match token {
        Some(t) => format!(
            "token: {t:?}\n    client-certificate-data: {}\n    client-key-data: {}",
            b64(cert_pem),
            b64(key_pem)
        ),
        None => format!(
            "client-certificate-data: {}\n    client-key-data: {}",
            b64(cert_pem),
            b64(key_pem)
        ),
    };
    let yaml = server
        .kubeconfig_yaml()
        .replace(&format!("token: {}", server.token()), &user);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kube config");
    kube::Client::try_from(config).expect("client")
}

async fn whoami(client: &kube::Client) -> Result<serde_json::Value, kube::Error> {
    let reviews: Api<SelfSubjectReview> = Api::all(client.clone());
    let review = reviews
        .create(&PostParams::default(), &SelfSubjectReview::default())
        .await?;
    Ok(serde_json::to_value(review.status.and_then(|s| s.user_info)).expect("json"))
}

#[tokio::test]
async fn an_approved_request_is_signed_and_its_certificate_authenticates_the_subject() {
    let f = common::start().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(f.client.clone());
    let (key, request) = key_and_request("alice", &["devs"]);
    create_csr(
        &csrs,
        "alice",
        &request,
        &["client auth", "digital signature"],
    )
    .await;
    decide(&csrs, "alice", true).await;
    let signed = wait_for(&csrs, "alice", |c| issued(c).is_some()).await;
    let cert_pem = issued(&signed).expect("certificate");
    assert!(
        cert_pem.starts_with("-----BEGIN CERTIFICATE-----\n"),
        "{cert_pem}"
    );
    let conditions = signed.status.and_then(|s| s.conditions).unwrap_or_default();
    assert_eq!(
        conditions
            .iter()
            .map(|c| c.type_.as_str())
            .collect::<Vec<_>>(),
        ["Approved"]
    );

    let alice = client_with_certificate(&f.server, &cert_pem, &key.serialize_pem(), None).await;
    let user = whoami(&alice).await.expect("authenticated");
    assert_eq!(user["username"], "alice");
    assert_eq!(user["groups"], json!(["devs", "system:authenticated"]));
    let id = user["extra"]["authentication.kubernetes.io/credential-id"][0]
        .as_str()
        .unwrap_or_default();
    assert!(
        id.starts_with("X509SHA256=") && id.len() == 11 + 64,
        "{user}"
    );
    // RBAC sees alice, as kube names her.
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(alice.clone(), "default");
    let denied = common::status_of(pods.list(&Default::default()).await.expect_err("forbidden"));
    assert_eq!(denied.code, 403);
    assert!(
        denied
            .message
            .contains(r#"User "alice" cannot list resource "pods""#),
        "{}",
        denied.message
    );

    // The certificate comes first: with a token too, the request is alice's.
    let both = client_with_certificate(
        &f.server,
        &cert_pem,
        &key.serialize_pem(),
        Some(f.server.token()),
    )
    .await;
    assert_eq!(
        whoami(&both).await.expect("authenticated")["username"],
        "alice"
    );
}

#[tokio::test]
async fn requests_against_their_signers_rules_fail_and_denied_ones_stay_unsigned() {
    let f = common::start().await;
    let csrs: Api<CertificateSigningRequest> = Api::all(f.client.clone());
    let (_, request) = key_and_request("web", &[]);
    create_csr(&csrs, "web", &request, &["client auth", "server auth"]).await;
    decide(&csrs, "web", true).await;
    let failed = wait_for(&csrs, "web", |c| {
        c.status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Failed"))
    })
    .await;
    assert!(issued(&failed).is_none());
    let conditions = failed.status.and_then(|s| s.conditions).unwrap_or_default();
    assert_eq!(conditions.len(), 2);
    assert_eq!(conditions[0].type_, "Approved");
    let fail = &conditions[1];
    assert_eq!(fail.status, "True");
    assert_eq!(fail.reason.as_deref(), Some("SignerValidationFailure"));
    assert_eq!(
        fail.message.as_deref(),
        Some("invalid usage for client certificate: server auth")
    );
    assert!(fail.last_update_time.is_some() && fail.last_transition_time.is_some());

    // Denied: never signed. A request approved after it is signed, so the
    // signer has seen the denial by then.
    let (_, request) = key_and_request("bob", &["devs"]);
    create_csr(&csrs, "bob", &request, &["client auth"]).await;
    decide(&csrs, "bob", false).await;
    let (_, request) = key_and_request("carol", &["devs"]);
    create_csr(&csrs, "carol", &request, &["client auth"]).await;
    decide(&csrs, "carol", true).await;
    wait_for(&csrs, "carol", |c| issued(c).is_some()).await;
    let bob = csrs.get("bob").await.expect("bob");
    assert!(issued(&bob).is_none(), "a denied request was signed");
}

#[tokio::test]
async fn a_certificate_from_another_ca_is_refused_unless_a_token_authenticates() {
    use rcgen::{BasicConstraints, IsCa, Issuer};
    let f = common::start().await;
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    ca_params
        .distinguished_name
        .push(DnType::CommonName, "kopr-ca");
    let issuer = Issuer::new(ca_params, KeyPair::generate().expect("key"));
    let mut params = CertificateParams::new(Vec::<String>::new()).expect("params");
    params
        .distinguished_name
        .push(DnType::CommonName, "mallory");
    params
        .distinguished_name
        .push(DnType::OrganizationName, "system:masters");
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, &issuer).expect("signed");

    let mallory = client_with_certificate(&f.server, &cert.pem(), &key.serialize_pem(), None).await;
    let refused = common::status_of(whoami(&mallory).await.expect_err("refused"));
    assert_eq!(
        (refused.code, refused.message.as_str()),
        (401, "Unauthorized")
    );

    // kube's union: the failed certificate does not stop a valid token.
    let with_token = client_with_certificate(
        &f.server,
        &cert.pem(),
        &key.serialize_pem(),
        Some(f.server.token()),
    )
    .await;
    let user = whoami(&with_token).await.expect("the token's user");
    assert_eq!(user["username"], "kopr-admin");
}
