//! The CSR signing controller of kube-controller-manager (`csrsigning`,
//! with `--cluster-signing-cert-file`/`--cluster-signing-key-file` set to the
//! cluster CA): an approved CertificateSigningRequest (an `Approved`
//! condition, no `Denied`, no true `Failed`) without a certificate, for
//! `kubernetes.io/kube-apiserver-client`,
//! `kubernetes.io/kube-apiserver-client-kubelet` or
//! `kubernetes.io/kubelet-serving`, gets a certificate from the cluster CA in
//! `status.certificate`, written through `status`. A request that breaks its
//! signer's rules (usages, subject, subject alternative names) gets a `Failed`
//! condition with reason `SignerValidationFailure` and kube's message
//! instead. Other signer names are left to their signers.
//!
//! Certificates last `spec.expirationSeconds` (at least ten minutes) or the
//! cluster signing duration (one year), whichever is shorter, start five
//! minutes in the past and, when they last eight hours or more, end five
//! minutes early, as kube's signer backdates them (`x509::authority`).
//!
//! It works from the store's event stream (and what is pending at start);
//! nothing polls. Without the CA's key (a data directory from before the key
//! was kept) nothing is signed: each approved request is logged and left
//! pending, as kube-controller-manager leaves them when no signing key is
//! configured.

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::podutil;
use super::workqueue::WorkQueue;
use crate::object;
use crate::registry::{Api, Target};
use crate::status::ApiError;
use crate::storage::{EventType, WatchEvent};
use crate::x509::authority::{Authority, Policy};
use crate::x509::request::{self, Request};

const KEY_PREFIX: &str = "/certificates.k8s.io/certificatesigningrequests/";

/// `kubernetes.io/kube-apiserver-client`.
pub const KUBE_APISERVER_CLIENT: &str = "kubernetes.io/kube-apiserver-client";
/// `kubernetes.io/kube-apiserver-client-kubelet`.
pub const KUBE_APISERVER_CLIENT_KUBELET: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// `kubernetes.io/kubelet-serving`.
pub const KUBELET_SERVING: &str = "kubernetes.io/kubelet-serving";

/// kube-controller-manager's default `--cluster-signing-duration` (8760h).
pub const CLUSTER_SIGNING_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);
/// The shortest certificate issued (twice the backdate).
const MIN_DURATION: Duration = Duration::from_secs(600);
const BACKDATE: Duration = Duration::from_secs(300);
const SHORT: Duration = Duration::from_secs(8 * 3600);

/// Starts the signer over the CA `ca_pem` with its key `ca_key_pem` (when
/// known); it stops when `stop` is cancelled.
pub fn spawn(api: Api, stop: CancellationToken, ca_pem: &str, ca_key_pem: Option<&str>) {
    let authority = match ca_key_pem.map(|key| Authority::new(ca_pem, key)) {
        Some(Ok(a)) => Some(Arc::new(a)),
        Some(Err(e)) => {
            tracing::warn!(error = %e, "the cluster CA cannot sign; CertificateSigningRequests stay unsigned");
            None
        }
        None => {
            tracing::warn!(
                "no ca.key in the data directory's pki (made before CSR signing); CertificateSigningRequests stay unsigned"
            );
            None
        }
    };
    let events = api.store.subscribe();
    let queue = WorkQueue::new("csrsigning", stop.clone());
    let signer = Arc::new(Signer {
        api: api.clone(),
        authority,
    });
    queue.run(1, move |name| {
        let signer = signer.clone();
        async move { signer.sync(&name).await }
    });
    tokio::spawn(watch(api, events, queue, stop));
}

async fn watch(
    api: Api,
    mut events: broadcast::Receiver<Arc<WatchEvent>>,
    queue: Arc<WorkQueue>,
    stop: CancellationToken,
) {
    resync(&api, &queue);
    loop {
        let received = tokio::select! {
            _ = stop.cancelled() => return,
            r = events.recv() => r,
        };
        match received {
            Ok(ev) => {
                if ev.key.starts_with(KEY_PREFIX)
                    && ev.event_type != EventType::Deleted
                    && pending(&ev.object)
                {
                    queue.add(object::name(&ev.object));
                }
            }
            Err(broadcast::error::RecvError::Lagged(_)) => resync(&api, &queue),
            Err(broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// Queues every request waiting for a certificate.
fn resync(api: &Api, queue: &WorkQueue) {
    for csr in api.store.current_objects(KEY_PREFIX) {
        if pending(&csr) {
            queue.add(object::name(&csr));
        }
    }
}

fn conditions(csr: &Value) -> &[Value] {
    csr.pointer("/status/conditions")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// Whether `csr` is for one of these signers, approved (kube's
/// `IsCertificateRequestApproved`: an `Approved` condition and no `Denied`),
/// not failed, and has no certificate yet.
fn pending(csr: &Value) -> bool {
    let of_type = |t: &'static str| {
        conditions(csr)
            .iter()
            .filter(move |c| c.get("type").and_then(Value::as_str) == Some(t))
    };
    let signer = csr
        .pointer("/spec/signerName")
        .and_then(Value::as_str)
        .unwrap_or_default();
    [
        KUBE_APISERVER_CLIENT,
        KUBE_APISERVER_CLIENT_KUBELET,
        KUBELET_SERVING,
    ]
    .contains(&signer)
        && of_type("Approved").next().is_some()
        && of_type("Denied").next().is_none()
        && !of_type("Failed").any(|c| c.get("status").and_then(Value::as_str) == Some("True"))
        && csr
            .pointer("/status/certificate")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
}

struct Signer {
    api: Api,
    authority: Option<Arc<Authority>>,
}

impl Signer {
    fn target(&self, name: &str) -> Option<Target> {
        Some(Target {
            rt: self
                .api
                .catalog
                .get("certificates.k8s.io", "v1", "certificatesigningrequests")?,
            namespace: None,
            name: Some(name.to_string()),
        })
    }

    async fn sync(&self, name: &str) -> Result<Option<Duration>, ApiError> {
        let Some(t) = self.target(name) else {
            return Ok(None);
        };
        let csr = match self.api.get(&t).await {
            Ok(csr) => csr,
            Err(e) if e.code == 404 => return Ok(None),
            Err(e) => return Err(e),
        };
        if !pending(&csr) {
            return Ok(None);
        }
        let Some(authority) = &self.authority else {
            tracing::warn!(
                csr = name,
                "not signing the approved CertificateSigningRequest: the cluster CA's key is not available"
            );
            return Ok(None);
        };
        let spec = &csr["spec"];
        let pem = base64::engine::general_purpose::STANDARD
            .decode(spec["request"].as_str().unwrap_or_default())
            .unwrap_or_default();
        let request = match request::parse_pem(&pem) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(csr = name, "unable to parse csr {name:?}: {e}");
                return Ok(None);
            }
        };
        let usages = object::string_list(&spec["usages"]);
        let signer = spec["signerName"].as_str().unwrap_or_default();
        let mut updated = (*csr).clone();
        if let Err(why) = validate(signer, &request, &usages) {
            let failed = json!({
                "type": "Failed",
                "status": "True",
                "reason": "SignerValidationFailure",
                "message": why.to_string(),
                "lastUpdateTime": object::now_rfc3339(),
            });
            let mut list = conditions(&csr).to_vec();
            list.push(failed);
            updated["status"]["conditions"] = Value::Array(list);
        } else {
            let policy = Policy {
                ttl: duration(spec["expirationSeconds"].as_i64()),
                usages: &usages,
                backdate: BACKDATE,
                short: SHORT,
            };
            let der = match authority.sign(&request, &policy, jiff::Timestamp::now()) {
                Ok(der) => der,
                Err(e) => {
                    tracing::warn!(csr = name, "error auto signing csr: {e}");
                    return Ok(None);
                }
            };
            let pem = crate::x509::pem::encode("CERTIFICATE", &der);
            updated["status"]["certificate"] =
                json!(base64::engine::general_purpose::STANDARD.encode(pem));
        }
        // Written against the version read: a change meanwhile is a 409,
        // and the change's own event brings the request back.
        let opts = podutil::writer(podutil::CONTROLLER_MANAGER);
        match self.api.update(&t, Some("status"), updated, &opts).await {
            Ok(_) => Ok(None),
            Err(e) if e.code == 404 => Ok(None),
            Err(e) => Err(e),
        }
    }
}

/// The signer's lifetime for `spec.expirationSeconds`: at most the cluster
/// signing duration, at least ten minutes.
fn duration(expiration_seconds: Option<i64>) -> Duration {
    let Some(seconds) = expiration_seconds else {
        return CLUSTER_SIGNING_DURATION;
    };
    Duration::from_secs(u64::try_from(seconds).unwrap_or(0))
        .clamp(MIN_DURATION, CLUSTER_SIGNING_DURATION)
}

/// Why a signer refuses a request, with kube's messages (the `Failed`
/// condition's message).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum SignerRefusal {
    #[error("invalid usage for client certificate: {0}")]
    ClientUsage(String),
    #[error("missing required usage for client certificate: client auth")]
    NoClientAuth,
    #[error("subject organization is not system:nodes")]
    NotSystemNodes,
    #[error("subject common name does not begin with system:node:")]
    NotNodeName,
    #[error("{0} subjectAltNames are not allowed")]
    AltNames(&'static str),
    #[error("DNS or IP subjectAltName is required")]
    NoDnsOrIp,
    #[error("usages did not match [{}]", .0.join(" "))]
    Usages(&'static [&'static str; 3]),
}

/// The signer's rules for a request (kube's `isKubeAPIServerClient`,
/// `isKubeletClient`, `isKubeletServing`), with kube's messages.
fn validate(signer: &str, request: &Request, usages: &[String]) -> Result<(), SignerRefusal> {
    match signer {
        KUBE_APISERVER_CLIENT => api_server_client(usages),
        KUBE_APISERVER_CLIENT_KUBELET => kubelet_client(request, usages),
        KUBELET_SERVING => kubelet_serving(request, usages),
        _ => Ok(()),
    }
}

fn api_server_client(usages: &[String]) -> Result<(), SignerRefusal> {
    let mut client_auth = false;
    for usage in usages {
        match usage.as_str() {
            "digital signature" | "key encipherment" => {}
            "client auth" => client_auth = true,
            other => return Err(SignerRefusal::ClientUsage(other.to_string())),
        }
    }
    if !client_auth {
        return Err(SignerRefusal::NoClientAuth);
    }
    Ok(())
}

/// Whether `usages` (as a set) is one of the sets kubelet certificates
/// take: with `key encipherment` (RSA keys) or without.
fn usages_match(usages: &[String], required: &[&str; 3]) -> bool {
    let set: std::collections::BTreeSet<&str> = usages.iter().map(String::as_str).collect();
    let with: std::collections::BTreeSet<&str> = required.iter().copied().collect();
    let without: std::collections::BTreeSet<&str> = required
        .iter()
        .copied()
        .filter(|u| *u != "key encipherment")
        .collect();
    set == with || set == without
}

fn system_nodes_only(request: &Request) -> Result<(), SignerRefusal> {
    if request.subject.organization != ["system:nodes"] {
        return Err(SignerRefusal::NotSystemNodes);
    }
    Ok(())
}

fn node_common_name(request: &Request) -> Result<(), SignerRefusal> {
    if !request.subject.common_name.starts_with("system:node:") {
        return Err(SignerRefusal::NotNodeName);
    }
    Ok(())
}

/// kube's `ValidateKubeletClientCSR`.
fn kubelet_client(request: &Request, usages: &[String]) -> Result<(), SignerRefusal> {
    const REQUIRED: &[&str; 3] = &["client auth", "digital signature", "key encipherment"];
    system_nodes_only(request)?;
    if !request.dns_names.is_empty() {
        return Err(SignerRefusal::AltNames("DNS"));
    }
    if !request.emails.is_empty() {
        return Err(SignerRefusal::AltNames("Email"));
    }
    if !request.ips.is_empty() {
        return Err(SignerRefusal::AltNames("IP"));
    }
    if !request.uris.is_empty() {
        return Err(SignerRefusal::AltNames("URI"));
    }
    node_common_name(request)?;
    if !usages_match(usages, REQUIRED) {
        return Err(SignerRefusal::Usages(REQUIRED));
    }
    Ok(())
}

/// kube's `ValidateKubeletServingCSR`.
fn kubelet_serving(request: &Request, usages: &[String]) -> Result<(), SignerRefusal> {
    const REQUIRED: &[&str; 3] = &["digital signature", "key encipherment", "server auth"];
    system_nodes_only(request)?;
    if request.dns_names.is_empty() && request.ips.is_empty() {
        return Err(SignerRefusal::NoDnsOrIp);
    }
    if !request.emails.is_empty() {
        return Err(SignerRefusal::AltNames("Email"));
    }
    if !request.uris.is_empty() {
        return Err(SignerRefusal::AltNames("URI"));
    }
    if !usages_match(usages, REQUIRED) {
        return Err(SignerRefusal::Usages(REQUIRED));
    }
    node_common_name(request)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::x509::name::Name;

    fn request(cn: &str, orgs: &[&str]) -> Request {
        Request {
            subject: Name {
                common_name: cn.into(),
                organization: orgs.iter().map(|o| o.to_string()).collect(),
                ..Name::default()
            },
            public_key_info: Vec::new(),
            key: request::KeyKind::Ecdsa,
            dns_names: Vec::new(),
            emails: Vec::new(),
            ips: Vec::new(),
            uris: Vec::new(),
        }
    }

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn each_signer_has_kubes_rules_and_messages() {
        let check = |signer: &str, request: &Request, usages: &[String]| {
            validate(signer, request, usages).map_err(|e| e.to_string())
        };
        let alice = request("alice", &["devs"]);
        assert_eq!(
            check(
                KUBE_APISERVER_CLIENT,
                &alice,
                &list(&["client auth", "digital signature"])
            ),
            Ok(())
        );
        assert_eq!(
            check(
                KUBE_APISERVER_CLIENT,
                &alice,
                &list(&["digital signature", "server auth"])
            ),
            Err("invalid usage for client certificate: server auth".to_string())
        );
        assert_eq!(
            check(KUBE_APISERVER_CLIENT, &alice, &list(&["digital signature"])),
            Err("missing required usage for client certificate: client auth".to_string())
        );
        let node = request("system:node:n1", &["system:nodes"]);
        let client = list(&["digital signature", "client auth"]);
        assert_eq!(check(KUBE_APISERVER_CLIENT_KUBELET, &node, &client), Ok(()));
        assert_eq!(
            check(KUBE_APISERVER_CLIENT_KUBELET, &alice, &client),
            Err("subject organization is not system:nodes".to_string())
        );
        assert_eq!(
            check(
                KUBE_APISERVER_CLIENT_KUBELET,
                &node,
                &list(&["client auth"])
            ),
            Err(
                "usages did not match [client auth digital signature key encipherment]".to_string()
            )
        );
        let serving = list(&["digital signature", "key encipherment", "server auth"]);
        assert_eq!(
            check(KUBELET_SERVING, &node, &serving),
            Err("DNS or IP subjectAltName is required".to_string())
        );
        let mut named = node.clone();
        named.dns_names.push("n1.example".into());
        assert_eq!(check(KUBELET_SERVING, &named, &serving), Ok(()));
        named.subject.common_name = "n1".into();
        assert_eq!(
            check(KUBELET_SERVING, &named, &serving),
            Err("subject common name does not begin with system:node:".to_string())
        );
    }

    #[test]
    fn durations_are_clamped_to_the_signers_bounds() {
        assert_eq!(duration(None), CLUSTER_SIGNING_DURATION);
        assert_eq!(duration(Some(60)), MIN_DURATION);
        assert_eq!(duration(Some(86_400)), Duration::from_secs(86_400));
        assert_eq!(duration(Some(i64::MAX)), CLUSTER_SIGNING_DURATION);
    }

    #[test]
    fn only_approved_unsigned_requests_of_these_signers_are_pending() {
        let csr = |signer: &str, conditions: Value, certificate: &str| {
            json!({"spec": {"signerName": signer},
                   "status": {"conditions": conditions, "certificate": certificate}})
        };
        let approved = json!([{"type": "Approved", "status": "True"}]);
        assert!(pending(&csr(KUBE_APISERVER_CLIENT, approved.clone(), "")));
        assert!(!pending(&csr("example.com/other", approved.clone(), "")));
        assert!(!pending(&csr(
            KUBE_APISERVER_CLIENT,
            approved.clone(),
            "Y2VydA=="
        )));
        assert!(!pending(&csr(KUBE_APISERVER_CLIENT, json!([]), "")));
        let denied =
            json!([{"type": "Approved", "status": "True"}, {"type": "Denied", "status": "True"}]);
        assert!(!pending(&csr(KUBE_APISERVER_CLIENT, denied, "")));
        let failed =
            json!([{"type": "Approved", "status": "True"}, {"type": "Failed", "status": "True"}]);
        assert!(!pending(&csr(KUBE_APISERVER_CLIENT, failed, "")));
    }
}
