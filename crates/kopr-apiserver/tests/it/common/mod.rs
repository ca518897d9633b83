//! Shared test fixture: an in-process kopr-apiserver and a kube-rs client.

#![allow(dead_code)]

use kopr_apiserver::{ApiServer, Config};

/// A running server and a client configured from its kubeconfig.
pub struct Fixture {
    pub server: ApiServer,
    pub client: kube::Client,
}

pub async fn start() -> Fixture {
    start_with(Config::ephemeral()).await
}

pub async fn start_with(config: Config) -> Fixture {
    let server = ApiServer::start(config).await.expect("server starts");
    let client = client_for(&server).await;
    Fixture { server, client }
}

pub async fn client_for(server: &kopr_apiserver::core::ApiServer) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kube config");
    kube::Client::try_from(config).expect("client")
}

/// A client of `server` that does not retry (kube-rs retries 429, 503 and 504 answers with
/// back-off by default).
pub async fn client_without_retries(server: &kopr_apiserver::core::ApiServer) -> kube::Client {
    let kubeconfig =
        kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).expect("kubeconfig");
    let mut config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("config");
    config.default_retry = false;
    kube::Client::try_from(config).expect("client")
}

/// Sends a raw request through a kube client; returns status, headers and body text.
pub async fn raw(
    client: &kube::Client,
    method: &str,
    path: &str,
    content_type: Option<&str>,
    body: Vec<u8>,
) -> (u16, http::HeaderMap, String) {
    let mut req = http::Request::builder().method(method).uri(path);
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    send(
        client,
        req.body(kube::client::Body::from(body)).expect("request"),
    )
    .await
}

/// A client for the server that presents no token.
pub async fn anonymous_client(server: &kopr_apiserver::core::ApiServer) -> kube::Client {
    client_with_token(server, "").await
}

/// A client of `server` presenting `token` (none when empty).
pub async fn client_with_token(
    server: &kopr_apiserver::core::ApiServer,
    token: &str,
) -> kube::Client {
    let yaml = server.kubeconfig_yaml().replace(
        &format!("token: {}", server.token()),
        &format!("token: {token:?}"),
    );
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml).expect("kubeconfig parses");
    let config = kube::Config::from_custom_kubeconfig(
        kubeconfig,
        &kube::config::KubeConfigOptions::default(),
    )
    .await
    .expect("kube config");
    kube::Client::try_from(config).expect("client")
}

/// Extracts the Status of a kube-rs API error.
pub fn status_of(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// Sends a request with extra headers; returns status, headers and body text.
pub async fn raw_with_headers(
    client: &kube::Client,
    method: &str,
    path: &str,
    headers: &[(&str, String)],
    body: Vec<u8>,
) -> (u16, http::HeaderMap, String) {
    let mut req = http::Request::builder().method(method).uri(path);
    for (name, value) in headers {
        req = req.header(*name, value.as_str());
    }
    send(
        client,
        req.body(kube::client::Body::from(body)).expect("request"),
    )
    .await
}

/// A CRD served as v1 (stored) and v2, which kube counts as equivalent.
pub async fn two_version_crd(client: &kube::Client) {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let schema = serde_json::json!({"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}});
    let crd: CustomResourceDefinition = serde_json::from_value(serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "tools.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "tools", "singular": "tool", "kind": "Tool"},
            "versions": [
                {"name": "v1", "served": true, "storage": true, "schema": schema},
                {"name": "v2", "served": true, "storage": false, "schema": schema}]}}))
    .expect("crd");
    let crds: kube::Api<CustomResourceDefinition> = kube::Api::all(client.clone());
    crds.create(&kube::api::PostParams::default(), &crd)
        .await
        .unwrap();
    let established = kube::runtime::wait::await_condition(
        crds,
        "tools.example.com",
        kube::runtime::conditions::is_crd_established(),
    );
    tokio::time::timeout(std::time::Duration::from_secs(10), established)
        .await
        .expect("established")
        .unwrap();
}

/// The `Warning` headers of a response, as sent.
pub fn warnings(headers: &http::HeaderMap) -> Vec<String> {
    headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap_or("").to_string())
        .collect()
}

/// Sends a request; returns status, headers and body text.
async fn send(
    client: &kube::Client,
    req: http::Request<kube::client::Body>,
) -> (u16, http::HeaderMap, String) {
    use http_body_util::BodyExt;
    let resp = client.send(req).await.expect("response");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        headers,
        String::from_utf8_lossy(&bytes).into_owned(),
    )
}
pub mod webhook;

/// A TLS client trusting the server's CA, offering the `alpn` protocols (none: HTTP/1.1).
pub fn tls_connector(
    server: &kopr_apiserver::core::ApiServer,
    alpn: &[&[u8]],
) -> tokio_rustls::TlsConnector {
    use rustls::pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls::pki_types::CertificateDer::pem_slice_iter(server.ca_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let mut tls = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(tls))
}

/// kube-rs access to an admissionregistration.k8s.io/v1 resource (k8s-openapi has no
/// ValidatingAdmissionPolicy types).
pub fn admission_api(
    client: &kube::Client,
    kind: &str,
    plural: &str,
) -> kube::Api<kube::api::DynamicObject> {
    let resource = kube::discovery::ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    kube::Api::all_with(client.clone(), &resource)
}

/// ValidatingAdmissionPolicies.
pub fn policies(client: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    admission_api(
        client,
        "ValidatingAdmissionPolicy",
        "validatingadmissionpolicies",
    )
}

/// ValidatingAdmissionPolicyBindings.
pub fn bindings(client: &kube::Client) -> kube::Api<kube::api::DynamicObject> {
    admission_api(
        client,
        "ValidatingAdmissionPolicyBinding",
        "validatingadmissionpolicybindings",
    )
}
