//! The operator's admission webhook server: it serves the resources' `on_validate` and
//! `on_mutate` handlers over HTTPS and (when told to) registers them with the API server as a
//! ValidatingWebhookConfiguration and a MutatingWebhookConfiguration.
//!
//! The certificate is self-signed by a CA generated at start (rcgen), for `localhost`, the
//! listen address and the configured hosts, or read from a directory in the layout of a
//! `kubernetes.io/tls` Secret and reloaded when it changes ([`Certificates`]); the CA goes into
//! the configurations' `caBundle`, and they are registered again when it changes. A handler that panics or overruns the timeout answers by the failure policy:
//! refused with code 500 under [`FailurePolicy::Fail`], admitted under `Ignore`; either way it
//! is logged and counted ([`WebhookServer::failures`]). A body that is not an AdmissionReview
//! gets 400.
//!
//! ```no_run
//! use kopr::webhooks::Webhooks;
//! # let operator = kopr::Operator::new();
//! // In a cluster: reachable through a Service, registered at start.
//! let operator = operator.webhooks(
//!     Webhooks::listen("0.0.0.0:9443".parse().unwrap()).service("ops", "my-operator"),
//! );
//! ```

mod certificates;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::FutureExt;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kube::api::{Api, ApiResource, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::handling::admission::{AdmissionSpec, Incoming, Verdict};
use crate::handling::conversion::Conversions;
use crate::handling::errors::Error;
pub use certificates::Certificates;

/// What the API server does when a handler cannot answer (kube's `failurePolicy`): the
/// webhook server is unreachable, or the handler panicked or overran the timeout.
///
/// ```
/// use kopr::webhooks::{FailurePolicy, Webhooks};
/// let lenient = Webhooks::local().failure_policy(FailurePolicy::Ignore);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailurePolicy {
    /// Refuse the write.
    Fail,
    /// Let the write through.
    Ignore,
}

impl FailurePolicy {
    fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::Fail => "Fail",
            FailurePolicy::Ignore => "Ignore",
        }
    }
}

/// How the API server reaches the webhook server.
#[derive(Debug, Clone)]
enum Reach {
    /// `https://<host>:<port>` (the listen address unless set).
    Url(Option<String>),
    /// A Service in front of the operator's pods.
    Service { namespace: String, name: String },
}

/// Settings of the operator's webhook server, given to
/// [`Operator::webhooks`](crate::Operator::webhooks). `run` builds them from
/// `--webhook-service`, `--webhook-listen`, `--webhook-cert-dir` and
/// `--webhook-no-registration`; `dev` and the testing kit use [`Webhooks::local`].
///
/// ```
/// use std::time::Duration;
/// use kopr::webhooks::{FailurePolicy, Webhooks};
///
/// // Behind a Service, with a cert-manager certificate mounted from a Secret, and the
/// // configurations shipped with the manifests instead of registered at start.
/// let in_cluster = Webhooks::listen("0.0.0.0:9443".parse().unwrap())
///     .service("greeting-system", "greeting-webhooks")
///     .name("greeting")
///     .certificate_dir("/var/run/kopr/webhook-certs")
///     .no_registration();
/// assert!(!in_cluster.registers());
///
/// // Reached by URL (an API server outside the cluster network, say), tolerant of outages.
/// let by_url = Webhooks::listen("0.0.0.0:9443".parse().unwrap())
///     .host("webhooks.example.com")
///     .failure_policy(FailurePolicy::Ignore)
///     .timeout(Duration::from_secs(5));
/// ```
///
/// # Caveats
/// With the default [`FailurePolicy::Fail`], writes of the resource fail while no replica
/// serves the webhooks (say, during a rollout with a single replica). With generated
/// certificates, each replica's start adds its own CA to the configurations' `caBundle`,
/// which keeps the newest [`MAX_CAS`]: more replicas than that, each with its own CA, are
/// not all trusted at once; use a certificate directory (a shared Secret) for those.
#[derive(Debug, Clone)]
pub struct Webhooks {
    listen: SocketAddr,
    reach: Reach,
    register: bool,
    name: String,
    failure_policy: FailurePolicy,
    timeout: Duration,
    hosts: Vec<String>,
    certificates: Certificates,
    reload_every: Duration,
}

impl Webhooks {
    /// Serves on `listen` and registers the configurations at start.
    pub fn listen(listen: SocketAddr) -> Webhooks {
        Webhooks {
            listen,
            reach: Reach::Url(None),
            register: true,
            name: "kopr".into(),
            failure_policy: FailurePolicy::Fail,
            timeout: Duration::from_secs(10),
            hosts: Vec::new(),
            certificates: Certificates::Generated,
            reload_every: Duration::from_secs(10),
        }
    }

    /// On a free loopback port, reached by URL: for `dev` and tests, where the API server runs
    /// on the same machine.
    pub fn local() -> Webhooks {
        // A free port chosen now, so that the CRDs installed before the server starts name
        // their conversion webhook's URL.
        let port = std::net::TcpListener::bind(("127.0.0.1", 0))
            .and_then(|l| l.local_addr())
            .map_or(0, |a| a.port());
        Webhooks::listen(SocketAddr::from(([127, 0, 0, 1], port)))
    }

    /// The API server reaches the server through this Service (port 443 to the listen port).
    pub fn service(mut self, namespace: &str, name: &str) -> Webhooks {
        self.hosts.push(format!("{name}.{namespace}.svc"));
        self.reach = Reach::Service {
            namespace: namespace.into(),
            name: name.into(),
        };
        self
    }

    /// The API server reaches the server at `https://<host>:<port>`.
    pub fn host(mut self, host: &str) -> Webhooks {
        self.hosts.push(host.into());
        self.reach = Reach::Url(Some(host.into()));
        self
    }

    /// The name of the webhook configurations (default `kopr`).
    pub fn name(mut self, name: &str) -> Webhooks {
        self.name = name.into();
        self
    }

    /// What the API server does when a handler cannot answer (default `Fail`).
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Webhooks {
        self.failure_policy = policy;
        self
    }

    /// The API server's timeout per call (1 to 30 s, default 10 s); handlers get a second less.
    pub fn timeout(mut self, timeout: Duration) -> Webhooks {
        self.timeout = timeout.clamp(Duration::from_secs(1), Duration::from_secs(30));
        self
    }

    /// Serves the certificate in `dir` (`tls.crt`, `tls.key`, and `ca.crt` for the
    /// `caBundle` when present: a mounted `kubernetes.io/tls` Secret, as cert-manager writes
    /// it), read again when the files change.
    pub fn certificate_dir(mut self, dir: impl Into<PathBuf>) -> Webhooks {
        self.certificates = Certificates::Directory(dir.into());
        self
    }

    /// How often a certificate directory is read for changes (default 10 s).
    pub fn reload_every(mut self, every: Duration) -> Webhooks {
        self.reload_every = every.max(Duration::from_millis(10));
        self
    }

    /// Serve only; the configurations are managed elsewhere (`manifests`, cert-manager).
    pub fn no_registration(mut self) -> Webhooks {
        self.register = false;
        self
    }

    /// Whether the configurations are registered at start.
    pub fn registers(&self) -> bool {
        self.register
    }

    /// The `clientConfig` (no `caBundle`) by which the API server calls the conversion
    /// webhook of the CRD `crd`, when it is known before the server listens: through the
    /// Service, or at a host with a fixed port.
    pub(crate) fn conversion_client(&self, crd: &str) -> Option<Value> {
        let path = conversion_path(crd);
        match &self.reach {
            Reach::Service { namespace, name } => Some(json!({"service": {
                "namespace": namespace, "name": name, "path": path, "port": 443}})),
            Reach::Url(_) if self.listen.port() == 0 => None,
            Reach::Url(host) => {
                let host = host.clone().unwrap_or_else(|| match self.listen.ip() {
                    std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                    ip => ip.to_string(),
                });
                Some(json!({"url": format!("https://{host}:{}{path}", self.listen.port())}))
            }
        }
    }
}

/// A handler ready to be called, with the resource it belongs to.
#[derive(Clone)]
pub(crate) struct Served {
    pub spec: AdmissionSpec,
    pub resource: ApiResource,
}

struct Shared {
    handlers: Vec<Served>,
    conversions: Vec<Conversions>,
    policy: FailurePolicy,
    timeout: Duration,
    failures: AtomicU64,
}

/// A running webhook server.
pub struct WebhookServer {
    address: SocketAddr,
    certificate: Arc<certificates::Current>,
    shared: Arc<Shared>,
    shutdown: CancellationToken,
}

impl std::fmt::Debug for WebhookServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookServer")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

fn respond(code: u16, body: &Value) -> http::Response<Full<Bytes>> {
    let mut response = http::Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = http::StatusCode::from_u16(code).unwrap_or(http::StatusCode::OK);
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// A request's body, at most 16 MiB; a 400 answer when it cannot be read.
async fn read_body(
    request: http::Request<hyper::body::Incoming>,
) -> Result<Bytes, http::Response<Full<Bytes>>> {
    let limited = http_body_util::Limited::new(request.into_body(), 16 << 20);
    match limited.collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(e) => Err(respond(
            400,
            &json!({"error": format!("reading the body: {e}")}),
        )),
    }
}

/// The JSON patch that turns `body` into `body` with `merge` applied.
fn json_patch(body: &Value, merge: &Value) -> Option<String> {
    use base64::Engine as _;
    if merge.as_object().is_none_or(|m| m.is_empty()) || body.is_null() {
        return None;
    }
    let mut after = body.clone();
    json_patch::merge(&mut after, merge);
    let operations = json_patch::diff(body, &after);
    if operations.0.is_empty() {
        return None;
    }
    let text = serde_json::to_string(&operations).ok()?;
    Some(base64::engine::general_purpose::STANDARD.encode(text))
}

impl Shared {
    /// Runs the handler of the webhook `name` on one AdmissionReview.
    async fn review(&self, name: &str, mutating: bool, body: &[u8]) -> (u16, Value) {
        let review: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return (
                    400,
                    json!({"error": format!("not an AdmissionReview: {e}")}),
                );
            }
        };
        let request = review["request"].clone();
        let Some(uid) = request["uid"].as_str().map(str::to_string) else {
            return (
                400,
                json!({"error": "not an AdmissionReview: no request.uid"}),
            );
        };
        let Some(served) = self
            .handlers
            .iter()
            .find(|s| s.spec.mutating == mutating && webhook_name(&s.spec.id, &s.resource) == name)
        else {
            return (404, json!({"error": "no such admission handler"}));
        };
        let id = served.spec.id.clone();
        if !served.spec.applies(&request) {
            let response = json!({"uid": uid, "allowed": true});
            return (
                200,
                json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
            );
        }
        let object = request["object"].clone();
        let limit = self
            .timeout
            .saturating_sub(Duration::from_secs(1))
            .max(Duration::from_millis(500));
        let call =
            std::panic::AssertUnwindSafe((served.spec.call)(Incoming { request })).catch_unwind();
        let verdict = match tokio::time::timeout(limit, call).await {
            Ok(Ok(verdict)) => Ok(verdict),
            Ok(Err(_)) => Err(format!("admission handler '{id}' panicked")),
            Err(_) => Err(format!(
                "admission handler '{id}' did not answer within {limit:?}"
            )),
        };
        let verdict = match verdict {
            Ok(verdict) => verdict,
            Err(text) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                crate::runtime::metrics::global().admission_failures.inc();
                tracing::error!(handler = %id, policy = self.policy.as_str(), "{text}");
                match self.policy {
                    FailurePolicy::Ignore => Verdict::default(),
                    FailurePolicy::Fail => Verdict {
                        denial: Some(crate::Denial::new(text).code(500)),
                        ..Verdict::default()
                    },
                }
            }
        };
        let mut response = json!({"uid": uid, "allowed": verdict.denial.is_none()});
        if let Some(denial) = &verdict.denial {
            response["status"] = json!({"code": denial.code, "reason": reason(denial.code), "message": denial.message});
        }
        if !verdict.warnings.is_empty() {
            response["warnings"] = json!(verdict.warnings);
        }
        if mutating
            && verdict.denial.is_none()
            && let Some(patch) = json_patch(&object, &verdict.patch)
        {
            response["patchType"] = json!("JSONPatch");
            response["patch"] = json!(patch);
        }
        (
            200,
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}),
        )
    }

    /// Converts the objects of one ConversionReview (v1 or v1beta1) for the CRD `crd`. The
    /// first object that fails fails the review, with the author's message.
    fn convert(&self, crd: &str, body: &[u8]) -> (u16, Value) {
        let review: Value = match serde_json::from_slice(body) {
            Ok(v) => v,
            Err(e) => {
                return (
                    400,
                    json!({"error": format!("not a ConversionReview: {e}")}),
                );
            }
        };
        let request = &review["request"];
        let Some(uid) = request["uid"].as_str() else {
            return (
                400,
                json!({"error": "not a ConversionReview: no request.uid"}),
            );
        };
        let Some(conversions) = self.conversions.iter().find(|c| c.crd == crd) else {
            return (404, json!({"error": format!("no conversion for {crd}")}));
        };
        let desired = request["desiredAPIVersion"].as_str().unwrap_or("");
        let objects = request["objects"].as_array().cloned().unwrap_or_default();
        let count = objects.len();
        let converted = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            objects
                .into_iter()
                .map(|o| {
                    let name = o["metadata"]["name"].as_str().unwrap_or("").to_owned();
                    conversions
                        .convert(o, desired)
                        .map_err(|message| (name, message))
                })
                .collect::<Result<Vec<Value>, (String, String)>>()
        }))
        .unwrap_or_else(|_| Err((String::new(), format!("converting to {desired} panicked"))));
        let metrics = crate::runtime::metrics::global();
        let response = match converted {
            Ok(objects) => {
                metrics.conversions.inc_by(count as u64);
                json!({"uid": uid, "convertedObjects": objects, "result": {"status": "Success"}})
            }
            Err((name, message)) => {
                metrics.conversion_failures.inc();
                tracing::error!(%crd, object = %name, %desired, "conversion failed: {message}");
                json!({"uid": uid, "convertedObjects": [],
                       "result": {"status": "Failure", "message": message}})
            }
        };
        let api_version = review["apiVersion"]
            .as_str()
            .unwrap_or("apiextensions.k8s.io/v1");
        (
            200,
            json!({"apiVersion": api_version, "kind": "ConversionReview", "response": response}),
        )
    }

    async fn handle(
        &self,
        request: http::Request<hyper::body::Incoming>,
    ) -> http::Response<Full<Bytes>> {
        let path = request.uri().path().to_string();
        if let Some(crd) = path.strip_prefix("/convert/") {
            if request.method() != http::Method::POST {
                return respond(405, &json!({"error": "POST a ConversionReview"}));
            }
            let crd = crd.to_owned();
            let body = match read_body(request).await {
                Ok(body) => body,
                Err(response) => return response,
            };
            let (code, answer) = self.convert(&crd, &body);
            return respond(code, &answer);
        }
        let route = path
            .strip_prefix("/validate/")
            .map(|i| (false, i))
            .or_else(|| path.strip_prefix("/mutate/").map(|i| (true, i)));
        let Some((mutating, name)) = route else {
            return respond(404, &json!({"error": "no such admission handler"}));
        };
        if request.method() != http::Method::POST {
            return respond(405, &json!({"error": "POST an AdmissionReview"}));
        }
        let body = match read_body(request).await {
            Ok(body) => body,
            Err(response) => return response,
        };
        let (code, answer) = self.review(name, mutating, &body).await;
        respond(code, &answer)
    }
}

impl WebhookServer {
    /// Binds `settings.listen` and serves `handlers` until `shutdown`.
    pub(crate) async fn start(
        settings: &Webhooks,
        handlers: Vec<Served>,
        conversions: Vec<Conversions>,
        shutdown: CancellationToken,
    ) -> Result<WebhookServer, Error> {
        let listener = tokio::net::TcpListener::bind(settings.listen).await?;
        let address = listener.local_addr()?;
        let mut hosts = vec!["localhost".to_string(), address.ip().to_string()];
        hosts.extend(settings.hosts.iter().cloned());
        let certificate = certificates::load(
            &settings.certificates,
            &hosts,
            settings.reload_every,
            shutdown.clone(),
        )?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut tls = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map(|b| {
                b.with_no_client_auth()
                    .with_cert_resolver(certificate.clone())
            })
            .map_err(|e| Error::Config(format!("webhook TLS: {e}")))?;
        tls.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
        let shared = Arc::new(Shared {
            handlers,
            conversions,
            policy: settings.failure_policy,
            timeout: settings.timeout,
            failures: AtomicU64::new(0),
        });
        let serving = shared.clone();
        let stop = shutdown.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    () = stop.cancelled() => return,
                    accepted = listener.accept() => accepted,
                };
                let Ok((stream, _)) = accepted else { continue };
                let acceptor = acceptor.clone();
                let shared = serving.clone();
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |request| {
                        let shared = shared.clone();
                        async move { Ok::<_, std::convert::Infallible>(shared.handle(request).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        tracing::info!(%address, handlers = shared.handlers.len(), "admission webhook server listening");
        Ok(WebhookServer {
            address,
            certificate,
            shared,
            shutdown,
        })
    }

    /// The address the server listens on.
    pub fn address(&self) -> SocketAddr {
        self.address
    }

    /// The CA of the certificate served now, PEM (the configurations' `caBundle`).
    pub fn ca_pem(&self) -> String {
        self.certificate.ca_pem()
    }

    /// Handler calls that panicked or timed out.
    pub fn failures(&self) -> u64 {
        self.shared.failures.load(Ordering::Relaxed)
    }

    /// The webhook entries of one configuration (validating or mutating).
    pub(crate) fn configuration_entries(
        &self,
        settings: &Webhooks,
        mutating: bool,
        bundle: &str,
    ) -> Vec<Value> {
        use base64::Engine as _;
        let ca_bundle = base64::engine::general_purpose::STANDARD.encode(bundle);
        let url = |path: &str| {
            self.client_config(settings, path)["url"]
                .as_str()
                .map(str::to_owned)
        };
        configuration_entries(
            &self.shared.handlers,
            settings,
            mutating,
            Some(&ca_bundle),
            url,
        )
    }

    /// Creates or updates the operator's webhook configurations (server-side apply), and again
    /// whenever the served certificate's CA changes.
    pub(crate) async fn register(
        self: &Arc<Self>,
        client: &kube::Client,
        settings: &Webhooks,
    ) -> Result<(), Error> {
        self.apply_configurations(client, settings).await?;
        self.apply_conversions(client, settings).await?;
        let mut changes = self.certificate.ca_changes();
        changes.mark_unchanged();
        let (server, client, settings) = (self.clone(), client.clone(), settings.clone());
        tokio::spawn(async move {
            loop {
                tokio::select! {
                    () = server.shutdown.cancelled() => return,
                    changed = changes.changed() => if changed.is_err() { return },
                }
                if let Err(error) = server.apply_configurations(&client, &settings).await {
                    tracing::error!(%error, "could not register the renewed webhook CA");
                }
                if let Err(error) = server.apply_conversions(&client, &settings).await {
                    tracing::error!(%error, "could not register the renewed webhook CA with the CRDs");
                }
            }
        });
        Ok(())
    }

    /// Points the conversion of each multi-version CRD at this server, with its CA (and the
    /// CAs other replicas registered) as the `caBundle`: a merge patch of `spec.conversion`,
    /// conditional on the version read and retried on a conflict.
    async fn apply_conversions(
        &self,
        client: &kube::Client,
        settings: &Webhooks,
    ) -> Result<(), Error> {
        use base64::Engine as _;
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
        let api: Api<CustomResourceDefinition> = Api::all(client.clone());
        for conversions in &self.shared.conversions {
            let name = &conversions.crd;
            let mut attempts = 0;
            loop {
                let Some(existing) = api.get_opt(name).await? else {
                    tracing::warn!(crd = %name, "not installed; its conversion webhook is not registered");
                    break;
                };
                let registered = existing
                    .spec
                    .conversion
                    .as_ref()
                    .and_then(|c| c.webhook.as_ref())
                    .and_then(|w| w.client_config.as_ref())
                    .and_then(|c| c.ca_bundle.as_ref())
                    .map(|b| String::from_utf8_lossy(&b.0).into_owned())
                    .unwrap_or_default();
                let bundle = merge_cas(&self.ca_pem(), &registered);
                let mut client_config = self.client_config(settings, &conversion_path(name));
                client_config["caBundle"] =
                    json!(base64::engine::general_purpose::STANDARD.encode(&bundle));
                // A merge patch keeps what it does not name: clear the other way to reach it.
                for way in ["url", "service"] {
                    client_config
                        .as_object_mut()
                        .map(|c| c.entry(way).or_insert(Value::Null));
                }
                let patch = json!({
                    "metadata": {"resourceVersion": existing.metadata.resource_version},
                    "spec": {"conversion": {"strategy": "Webhook", "webhook": {
                        "clientConfig": client_config,
                        "conversionReviewVersions": crate::handling::conversion::REVIEW_VERSIONS,
                    }}},
                });
                match api
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => break,
                    Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => {
                        attempts += 1;
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            tracing::info!(crd = %name, "conversion webhook registered");
        }
        Ok(())
    }

    /// How the API server reaches `path` on this server: by URL (the listen address unless
    /// a host is set) or through the Service.
    fn client_config(&self, settings: &Webhooks, path: &str) -> Value {
        match &settings.reach {
            Reach::Service { namespace, name } => json!({"service": {
                "namespace": namespace, "name": name, "path": path, "port": 443}}),
            Reach::Url(host) => {
                let host = host.clone().unwrap_or_else(|| match self.address.ip() {
                    std::net::IpAddr::V6(ip) => format!("[{ip}]"),
                    ip => ip.to_string(),
                });
                json!({"url": format!("https://{host}:{}{path}", self.address.port())})
            }
        }
    }

    /// Applies both configurations. Their `caBundle` keeps the CAs other replicas registered
    /// (the newest [`MAX_CAS`]), so that with generated certificates every replica behind the
    /// Service is trusted; each write is conditional on the version read, and retried.
    async fn apply_configurations(
        &self,
        client: &kube::Client,
        settings: &Webhooks,
    ) -> Result<(), Error> {
        for mutating in [false, true] {
            let resource = configuration_resource(mutating);
            let kind = resource.kind.clone();
            let api: Api<DynamicObject> = Api::all_with(client.clone(), &resource);
            if !self
                .shared
                .handlers
                .iter()
                .any(|s| s.spec.mutating == mutating)
            {
                let _ = api.delete(&settings.name, &Default::default()).await;
                continue;
            }
            let mut attempts = 0;
            loop {
                let existing = api.get_opt(&settings.name).await?;
                let bundle = merged_bundle(&self.ca_pem(), existing.as_ref());
                let entries = self.configuration_entries(settings, mutating, &bundle);
                let mut metadata = json!({"name": settings.name});
                if let Some(version) = existing
                    .as_ref()
                    .and_then(|e| e.metadata.resource_version.clone())
                {
                    metadata["resourceVersion"] = json!(version);
                }
                let body = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind,
                                  "metadata": metadata, "webhooks": entries});
                let params = PatchParams::apply("kopr").force();
                match api
                    .patch(&settings.name, &params, &Patch::Apply(&body))
                    .await
                {
                    Ok(_) => break,
                    Err(kube::Error::Api(status)) if status.code == 409 && attempts < 5 => {
                        attempts += 1;
                    }
                    Err(error) => return Err(error.into()),
                }
            }
            tracing::info!(configuration = %settings.name, %kind, "admission webhooks registered");
        }
        Ok(())
    }
}

/// The path of the conversion webhook of the CRD `crd`.
pub(crate) fn conversion_path(crd: &str) -> String {
    format!("/convert/{crd}")
}

/// The most CAs a configuration's `caBundle` keeps.
pub const MAX_CAS: usize = 3;

/// The certificates of a PEM text, one PEM block each.
fn pem_blocks(text: &str) -> Vec<String> {
    const END: &str = "-----END CERTIFICATE-----";
    text.split_inclusive(END)
        .filter_map(|chunk| {
            let start = chunk.find("-----BEGIN CERTIFICATE-----")?;
            chunk.ends_with(END).then(|| chunk[start..].to_string())
        })
        .collect()
}

/// `own` first, then the other CAs of the existing configuration's first webhook, at most
/// [`MAX_CAS`] in all.
fn merged_bundle(own: &str, existing: Option<&DynamicObject>) -> String {
    use base64::Engine as _;
    let registered = existing
        .and_then(|e| e.data["webhooks"][0]["clientConfig"]["caBundle"].as_str())
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .unwrap_or_default();
    merge_cas(own, &registered)
}

/// `own` first, then the CAs of `registered` (PEM), at most [`MAX_CAS`] in all.
fn merge_cas(own: &str, registered: &str) -> String {
    let mut cas = pem_blocks(own);
    for ca in pem_blocks(registered) {
        if cas.len() < MAX_CAS && !cas.contains(&ca) {
            cas.push(ca);
        }
    }
    cas.join("\n")
}

/// The webhook entries of one configuration (validating or mutating) for `handlers`: reached
/// by `url(path)` when it gives one, else through the settings' Service; `ca_bundle` (base64)
/// unless cert-manager injects it.
pub(crate) fn configuration_entries(
    handlers: &[Served],
    settings: &Webhooks,
    mutating: bool,
    ca_bundle: Option<&str>,
    url: impl Fn(&str) -> Option<String>,
) -> Vec<Value> {
    handlers
        .iter()
        .filter(|s| s.spec.mutating == mutating)
        .map(|served| {
            let kind = if mutating { "mutate" } else { "validate" };
            let name = webhook_name(&served.spec.id, &served.resource);
            let path = format!("/{kind}/{name}");
            let mut client = match (url(&path), &settings.reach) {
                (Some(url), _) => json!({"url": url}),
                (None, Reach::Service { namespace, name }) => json!({
                    "service": {"namespace": namespace, "name": name, "path": path, "port": 443},
                }),
                (None, Reach::Url(_)) => json!({}),
            };
            if let Some(ca_bundle) = ca_bundle {
                client["caBundle"] = json!(ca_bundle);
            }
            let r = &served.resource;
            let operations: Vec<&str> = served.spec.operations.iter().map(|o| o.as_str()).collect();
            let resource = match &served.spec.subresource {
                Some(sub) => format!("{}/{sub}", r.plural),
                None => r.plural.clone(),
            };
            json!({
                "name": name,
                "clientConfig": client,
                "rules": [{"operations": operations, "apiGroups": [r.group],
                           "apiVersions": [r.version], "resources": [resource], "scope": "*"}],
                "failurePolicy": settings.failure_policy.as_str(),
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
                "timeoutSeconds": settings.timeout.as_secs(),
            })
        })
        .collect()
}

/// The API resource of `MutatingWebhookConfiguration`s (`mutating`) or
/// `ValidatingWebhookConfiguration`s.
pub fn configuration_resource(mutating: bool) -> ApiResource {
    let kind = if mutating {
        "MutatingWebhookConfiguration"
    } else {
        "ValidatingWebhookConfiguration"
    };
    ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: kind.into(),
        plural: format!("{}s", kind.to_lowercase()),
    }
}

/// The Status reason kube gives a code (as controller-runtime's denials carry one).
fn reason(code: u16) -> &'static str {
    match code {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        409 => "Conflict",
        422 => "Invalid",
        429 => "TooManyRequests",
        _ if code >= 500 => "InternalError",
        _ => "",
    }
}

/// The webhook's name: `<id>.<plural>.<group>` (`.kopr.dev` for the core group), a DNS name of
/// at least three labels, as kube requires.
fn webhook_name(id: &str, resource: &ApiResource) -> String {
    let id: String = id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    let id = id.trim_matches('-');
    let id = if id.is_empty() { "handler" } else { id };
    let group = if resource.group.is_empty() {
        "kopr.dev"
    } else {
        &resource.group
    };
    let name = format!("{id}.{}.{group}", resource.plural);
    if group.contains('.') {
        name
    } else {
        format!("{name}.kopr.dev")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ca_bundle_keeps_other_replicas_cas() {
        use base64::Engine as _;
        let ca = |n: u8| format!("-----BEGIN CERTIFICATE-----\nCA{n}\n-----END CERTIFICATE-----");
        let existing = |bundle: String| -> DynamicObject {
            let encoded = base64::engine::general_purpose::STANDARD.encode(bundle);
            serde_json::from_value(
                json!({"apiVersion": "v1", "kind": "X", "metadata": {"name": "x"},
                "webhooks": [{"clientConfig": {"caBundle": encoded}}]}),
            )
            .unwrap()
        };
        assert_eq!(merged_bundle(&ca(1), None), ca(1));
        let merged = merged_bundle(&ca(1), Some(&existing(format!("{}\n{}", ca(2), ca(1)))));
        assert_eq!(merged, format!("{}\n{}", ca(1), ca(2)));
        let merged = merged_bundle(
            &ca(4),
            Some(&existing(format!("{}\n{}\n{}", ca(3), ca(2), ca(1)))),
        );
        assert_eq!(pem_blocks(&merged), [ca(4), ca(3), ca(2)]);
    }

    #[test]
    fn webhook_names_are_dns_names_of_three_labels() {
        let core = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
        assert_eq!(webhook_name("check", &core), "check.configmaps.kopr.dev");
        let apps = ApiResource::erase::<k8s_openapi::api::apps::v1::Deployment>(&());
        assert_eq!(
            webhook_name("No_Bad", &apps),
            "no-bad.deployments.apps.kopr.dev"
        );
        let mut custom = core.clone();
        custom.group = "example.com".into();
        custom.plural = "greetings".into();
        assert_eq!(
            webhook_name("check", &custom),
            "check.greetings.example.com"
        );
    }

    #[test]
    fn a_merge_patch_becomes_the_json_patch_kube_applies() {
        use base64::Engine as _;
        let body = json!({"metadata": {"name": "a"}, "spec": {"x": 1}});
        let patch = json_patch(&body, &json!({"metadata": {"labels": {"k": "v"}}})).unwrap();
        let text = base64::engine::general_purpose::STANDARD
            .decode(patch)
            .unwrap();
        let operations: Value = serde_json::from_slice(&text).unwrap();
        assert_eq!(
            operations,
            json!([{"op": "add", "path": "/metadata/labels", "value": {"k": "v"}}])
        );
        assert!(json_patch(&body, &json!({})).is_none());
        assert!(
            json_patch(&body, &json!({"spec": {"x": 1}})).is_none(),
            "no change, no patch"
        );
    }
}
