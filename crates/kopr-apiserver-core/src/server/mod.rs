//! Running the API server: TLS on a listener (asking clients for a
//! certificate, which authentication verifies against the cluster CA),
//! credentials, the kubeconfig, bootstrap objects and the in-process
//! controllers; graceful shutdown.

mod client_cert;
mod early;
mod first_bytes;
mod idle;

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;

use crate::datadir::{self, DataDir};
use crate::hooks::{Hooks, Started};
use crate::http::{AppState, router};
use crate::pki::{self, Credentials};
use crate::registry::Api;
use crate::resources::Catalog;
use crate::storage::Store;

/// Simulated nodes made at start by default.
pub const DEFAULT_NODES: usize = 3;

/// Default history retention: five minutes, as kube-apiserver compacts etcd.
pub const DEFAULT_HISTORY_RETENTION: std::time::Duration = std::time::Duration::from_secs(300);

/// How to run the server.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where state, credentials and the kubeconfig live; None keeps
    /// credentials in memory too (tests).
    pub data_dir: Option<PathBuf>,
    /// Address to listen on (port 0 picks a free port).
    pub listen: SocketAddr,
    /// Where to write the kubeconfig (default `DATA_DIR/kubeconfig`).
    pub kubeconfig: Option<PathBuf>,
    /// Keep objects in an in-memory database.
    pub in_memory: bool,
    /// Run the in-process controllers (garbage collector, namespaces, service
    /// accounts, workloads, scheduler, simulated kubelet).
    pub controllers: bool,
    /// History kept for watches and consistent reads before compaction.
    pub history_retention: std::time::Duration,
    /// Simulated nodes (`kopr-node-0` …) created at start when controllers run.
    pub nodes: usize,
    /// Static users (kube's `--token-auth-file` CSV).
    pub token_auth_file: Option<PathBuf>,
    /// Whether requests without credentials are `system:anonymous` (as
    /// kube-apiserver's default) rather than refused with 401.
    pub anonymous_auth: bool,
    /// Where audit events go (`-`: standard output); none: no audit log.
    pub audit_log_path: Option<PathBuf>,
    /// The audit policy; without one, every request is logged at
    /// `Metadata`.
    pub audit_policy_file: Option<PathBuf>,
    /// Encryption at rest (kube's EncryptionConfiguration); none: values
    /// are stored as they are.
    pub encryption_provider_config: Option<PathBuf>,
    /// How long a connection may take to finish its TLS handshake, and an HTTP/1.1 request
    /// to send its headers (kube-apiserver's `ReadHeaderTimeout`, 32 s): a client that opens
    /// a connection and sends nothing is disconnected after it.
    pub read_header_timeout: std::time::Duration,
    /// How long a connection may stay open with no request in flight (kube-apiserver's
    /// `IdleTimeout`, 90 s).
    pub idle_timeout: std::time::Duration,
    /// How many connections are served at once; further clients wait in the listen backlog
    /// until one closes.
    pub max_connections: usize,
}

/// Go's `http.DefaultMaxHeaderBytes`, which kube-apiserver serves with: the
/// request line and headers of one request, over HTTP/1.1 and HTTP/2.
pub const MAX_HEADER_BYTES: usize = 1 << 20;
/// What Go's HTTP/1.1 server reads beyond `MaxHeaderBytes` before refusing.
const HTTP1_HEADER_SLACK: usize = 4096;
/// What Go's HTTP/2 server adds to `MaxHeaderBytes` for its header list
/// limit (per-field overhead).
const HTTP2_HEADER_SLACK: u32 = 32 << 10;

/// kube-apiserver's `ReadHeaderTimeout` (its TLS handshake timeout too, as Go's server uses
/// the shortest read timeout for the handshake).
pub const DEFAULT_READ_HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(32);
/// Concurrent HTTP/2 streams per connection (kube-apiserver's 250).
const HTTP2_MAX_STREAMS: u32 = 250;
/// kube-apiserver's `IdleTimeout` (HTTP/1.1 and HTTP/2).
pub const DEFAULT_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(90);
/// The default limit of connections served at once.
pub const DEFAULT_MAX_CONNECTIONS: usize = 4096;

impl Config {
    /// An in-memory server on a free loopback port, for tests.
    pub fn ephemeral() -> Config {
        Config {
            data_dir: None,
            listen: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            kubeconfig: None,
            in_memory: true,
            controllers: true,
            history_retention: DEFAULT_HISTORY_RETENTION,
            nodes: DEFAULT_NODES,
            token_auth_file: None,
            anonymous_auth: true,
            audit_log_path: None,
            audit_policy_file: None,
            encryption_provider_config: None,
            read_header_timeout: DEFAULT_READ_HEADER_TIMEOUT,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: DEFAULT_MAX_CONNECTIONS,
        }
    }
}

/// Errors starting the server.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// Storage could not be opened.
    #[error(transparent)]
    Storage(#[from] crate::storage::StorageError),
    /// Credentials could not be made or read.
    #[error(transparent)]
    Pki(#[from] pki::PkiError),
    /// TLS configuration failed.
    #[error("tls: {0}")]
    Tls(#[from] rustls::Error),
    /// Listening or writing files failed.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// The data directory is held by another server, or unusable.
    #[error(transparent)]
    DataDir(#[from] crate::datadir::DataDirError),
    /// Bootstrap objects could not be created.
    #[error("bootstrap: {0}")]
    Bootstrap(#[from] crate::status::ApiError),
    /// The token file could not be read.
    #[error(transparent)]
    TokenFile(#[from] crate::authn::token_file::TokenFileError),
    /// The audit policy or log could not be opened.
    #[error(transparent)]
    Audit(#[from] crate::audit::AuditError),
    /// The encryption configuration could not be read.
    #[error(transparent)]
    Encryption(#[from] crate::storage::EncryptionConfigError),
}

/// A running API server.
pub struct ApiServer {
    /// The data directory's lock, held while the server runs.
    _data_dir: Option<DataDir>,
    addr: SocketAddr,
    credentials: Credentials,
    kubeconfig: Option<PathBuf>,
    api: Api,
    metrics: Arc<crate::metrics::RequestMetrics>,
    shutdown: CancellationToken,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for ApiServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApiServer")
            .field("addr", &self.addr)
            .finish_non_exhaustive()
    }
}

fn tls_config(creds: &Credentials) -> Result<rustls::ServerConfig, ServerError> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(creds.cert_pem.as_bytes())
            .collect::<Result<_, _>>()
            .map_err(|e| std::io::Error::other(format!("serving certificate: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(creds.key_pem.as_bytes())
        .map_err(|e| std::io::Error::other(format!("serving key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    // Client certificates are asked for, verified by authentication.
    let client_auth = Arc::new(client_cert::RequestClientCert::new(
        &creds.ca_pem,
        &provider,
    )?);
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(client_auth)
        .with_single_cert(certs, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(config)
}

impl ApiServer {
    /// Opens storage, prepares credentials, binds the listener, bootstraps
    /// and starts serving. When this returns, the server answers requests
    /// and the kubeconfig is written.
    ///
    /// Nothing runs beside the request chain: no controller, and no kubelet to reach
    /// (`kopr-apiserver`'s `ApiServer::start` adds both). [`ApiServer::start_with`] adds
    /// them.
    pub async fn start(config: Config) -> Result<ApiServer, ServerError> {
        ApiServer::start_with(config, Arc::new(crate::hooks::NoHooks)).await
    }

    /// As [`ApiServer::start`], with `hooks` running beside the request chain (the
    /// controllers and the nodes' kubelets).
    pub async fn start_with(
        config: Config,
        hooks: Arc<dyn Hooks>,
    ) -> Result<ApiServer, ServerError> {
        let store_dir = if config.in_memory {
            None
        } else {
            config.data_dir.clone()
        };
        let mut data_dir = match &config.data_dir {
            Some(d) => Some(DataDir::acquire(d)?),
            None => None,
        };
        if let Some(d) = &store_dir {
            datadir::private_file(&d.join(crate::storage::DATABASE_FILE))?;
        }
        let encryption = match &config.encryption_provider_config {
            Some(path) => crate::storage::Encryption::read(path)?,
            None => crate::storage::Encryption::default(),
        };
        let store = Store::open_encrypted(store_dir.as_deref(), encryption)?;
        let listener = TcpListener::bind(config.listen).await?;
        let addr = listener.local_addr()?;
        if let Some(d) = &mut data_dir {
            d.record(&server_url(addr))?;
        }
        let mut ips: Vec<IpAddr> = vec![
            IpAddr::V4(Ipv4Addr::LOCALHOST),
            IpAddr::V6(Ipv6Addr::LOCALHOST),
        ];
        if !addr.ip().is_unspecified() && !ips.contains(&addr.ip()) {
            ips.push(addr.ip());
        }
        let credentials = match &config.data_dir {
            Some(d) => pki::load_or_generate(d, &ips)?,
            None => pki::generate(&ips)?,
        };
        let catalog = Catalog::default();
        crate::kinds::register(&catalog);
        let authz = Arc::new(crate::authz::Union::with_rbac(store.clone()));
        let admission = admission_chain(&store, &catalog, &authz);
        let api = Api::new(store, catalog, Arc::new(admission));
        crate::bootstrap::ensure_system_objects(&api).await?;
        let metrics = Arc::new(crate::metrics::RequestMetrics::default());
        let tokens = crate::authn::service_account::ServiceAccountTokens::new(
            pki::service_account_signer(&credentials)?,
            api.store.clone(),
        );
        let started = Started {
            api: api.clone(),
            shutdown: CancellationToken::new(),
            addr,
            ca_pem: Arc::from(credentials.ca_pem.as_str()),
            ca_key_pem: credentials.ca_key_pem.as_deref().map(Arc::from),
            controllers: config.controllers,
            nodes: config.nodes,
            tokens: tokens.clone(),
        };
        let shutdown = started.shutdown.clone();
        // The controllers' first passes (the aggregated roles, the system namespaces'
        // kube-root-ca.crt, the `kubernetes` Service's endpoints) are done before the first
        // request.
        hooks.post_start(&started).await;
        let node_runtime = hooks.node_runtime(&started);
        crate::storage::spawn_compactor(
            api.store.clone(),
            config.history_retention,
            shutdown.clone(),
        );
        let mut authn = crate::authn::Authentication::new(&credentials.token)
            .with_service_accounts(tokens)
            .with_client_ca(&credentials.ca_pem)
            .map_err(|e| std::io::Error::other(e.to_string()))?
            .anonymous(config.anonymous_auth);
        if let Some(path) = &config.token_auth_file {
            authn = authn.with_token_file(crate::authn::token_file::TokenFile::read(path)?);
        }
        let audit = match &config.audit_log_path {
            Some(path) => {
                let policy = match &config.audit_policy_file {
                    Some(file) => {
                        crate::audit::Policy::read(file).map_err(crate::audit::AuditError::from)?
                    }
                    None => crate::audit::Policy::metadata_for_all(),
                };
                Some(Arc::new(crate::audit::Auditor::open(path, policy)?))
            }
            None => None,
        };
        let state = AppState {
            api: api.clone(),
            authn: Arc::new(authn),
            authz,
            metrics: metrics.clone(),
            audit,
            node_runtime,
        };
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls_config(&credentials)?));
        let kubeconfig = config
            .kubeconfig
            .clone()
            .or_else(|| config.data_dir.as_ref().map(|d| d.join("kubeconfig")));
        if let Some(path) = &kubeconfig {
            pki::write_kubeconfig(path, &server_url(addr), &credentials)?;
        }
        let limits = Limits {
            read_header_timeout: config.read_header_timeout,
            idle_timeout: config.idle_timeout,
            max_connections: config.max_connections.max(1),
        };
        let task = tokio::spawn(serve(
            listener,
            acceptor,
            router(state),
            limits,
            shutdown.clone(),
        ));
        Ok(ApiServer {
            _data_dir: data_dir,
            addr,
            credentials,
            kubeconfig,
            api,
            metrics,
            shutdown,
            task,
        })
    }

    /// The address the server listens on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The https URL of the server.
    pub fn url(&self) -> String {
        server_url(self.addr)
    }

    /// The CA certificate (PEM) clients must trust.
    pub fn ca_pem(&self) -> &str {
        &self.credentials.ca_pem
    }

    /// The bearer token clients must present.
    pub fn token(&self) -> &str {
        &self.credentials.token
    }

    /// Where the kubeconfig was written, if anywhere.
    pub fn kubeconfig_path(&self) -> Option<&std::path::Path> {
        self.kubeconfig.as_deref()
    }

    /// A kubeconfig document (YAML) for this server.
    pub fn kubeconfig_yaml(&self) -> String {
        use base64::Engine;
        let ca =
            base64::engine::general_purpose::STANDARD.encode(self.credentials.ca_pem.as_bytes());
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: kopr\n  cluster:\n    server: {}\n    certificate-authority-data: {ca}\nusers:\n- name: kopr\n  user:\n    token: {}\ncontexts:\n- name: kopr\n  context:\n    cluster: kopr\n    user: kopr\n    namespace: default\ncurrent-context: kopr\n",
            self.url(),
            self.credentials.token
        )
    }

    /// The registry, for in-process use.
    pub fn api(&self) -> &Api {
        &self.api
    }

    /// Request counters.
    pub fn metrics(&self) -> &crate::metrics::RequestMetrics {
        &self.metrics
    }

    /// Stops serving and waits for the accept loop to end.
    pub async fn shutdown(self) {
        self.shutdown.cancel();
        let _ = self.task.await;
    }

    /// Waits until the server stops (it stops only through [`ApiServer::shutdown`]).
    pub fn shutdown_token(&self) -> CancellationToken {
        self.shutdown.clone()
    }
}

/// kube-apiserver's admission plugins, in its order: LimitRanger and ServiceAccount
/// mutating; LimitRanger and the policy parameter access check validating; ResourceQuota,
/// RBAC escalation prevention, the webhooks and ValidatingAdmissionPolicy.
fn admission_chain(
    store: &Store,
    catalog: &Catalog,
    authz: &Arc<crate::authz::Union>,
) -> crate::admission::Chain {
    let limit_ranger = crate::admission::limit_ranger::LimitRanger::new(store.clone());
    crate::admission::Chain::builtin()
        .mutating(limit_ranger.clone())
        .mutating(crate::admission::service_account::ServiceAccountAdmission::new(store.clone()))
        .validating(limit_ranger)
        .validating(crate::admission::param_access::ParamAccess::new(
            authz.clone(),
            store.clone(),
            catalog.clone(),
        ))
        .with_quota(crate::admission::resource_quota::ResourceQuotaAdmission::new(store.clone()))
        .with_rbac_escalation(crate::admission::rbac_escalation::RbacEscalation::new(
            authz.clone(),
            store.clone(),
        ))
        .with_webhooks(crate::admission::webhook::Webhooks::new(
            store.clone(),
            catalog.clone(),
        ))
        .with_policies(crate::admission::policy::Policies::new(
            store.clone(),
            catalog.clone(),
        ))
}

fn server_url(addr: SocketAddr) -> String {
    let host = if addr.ip().is_unspecified() {
        "127.0.0.1".to_string()
    } else {
        addr.ip().to_string()
    };
    if addr.is_ipv6() && !addr.ip().is_unspecified() {
        format!("https://[{host}]:{}", addr.port())
    } else {
        format!("https://{host}:{}", addr.port())
    }
}

/// What a connection may take.
#[derive(Debug, Clone, Copy)]
struct Limits {
    read_header_timeout: std::time::Duration,
    idle_timeout: std::time::Duration,
    max_connections: usize,
}

async fn serve(
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    app: axum::Router,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let connections = tokio_util::task::TaskTracker::new();
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    loop {
        // At the connection limit, wait for one to close before accepting.
        let slot = tokio::select! {
            _ = shutdown.cancelled() => break,
            s = slots.clone().acquire_owned() => match s {
                Ok(s) => s,
                Err(_) => break,
            },
        };
        let (stream, peer) = tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let app = app.clone();
        let stop = shutdown.clone();
        connections.spawn(async move {
            let _slot = slot;
            let handshake =
                tokio::time::timeout(limits.read_header_timeout, acceptor.accept(stream));
            let tls = match handshake.await {
                Ok(Ok(t)) => t,
                Ok(Err(e)) => {
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%peer, "TLS handshake not finished in time; disconnected");
                    return;
                }
            };
            let client_chain = tls
                .get_ref()
                .1
                .peer_certificates()
                .map(|chain| crate::http::ClientCertificates(chain.iter().cloned().collect()));
            let activity = idle::Activity::new();
            let requests = activity.clone();
            let service = TowerToHyperService::new(tower::service_fn(
                move |req: http::Request<hyper::body::Incoming>| {
                    let (mut parts, body) = req.into_parts();
                    parts.extensions.insert(crate::http::Peer(peer));
                    if let Some(chain) = &client_chain {
                        parts.extensions.insert(chain.clone());
                    }
                    // Over HTTP/2, the body outlives an early answer (see `early`).
                    let (body, unread) = match parts.version {
                        http::Version::HTTP_2 => match early::share(body) {
                            Ok((shared, unread)) => (axum::body::Body::new(shared), Some(unread)),
                            Err(body) => (axum::body::Body::new(body), None),
                        },
                        _ => (axum::body::Body::new(body), None),
                    };
                    let req = http::Request::from_parts(parts, body);
                    let in_flight = requests.begin();
                    let call = tower::ServiceExt::oneshot(app.clone(), req);
                    async move {
                        let response = call.await?;
                        Ok::<_, std::convert::Infallible>(response.map(|body| {
                            axum::body::Body::new(idle::Tracked::new(body, in_flight, unread))
                        }))
                    }
                },
            ));
            let mut builder = auto::Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.read_header_timeout)
                .max_buf_size(MAX_HEADER_BYTES + HTTP1_HEADER_SLACK);
            // Go's HTTP/2 server takes header lists up to MaxHeaderBytes too
            // (a long URL, a selector of thousands of terms).
            // kube-apiserver makes Go's default of 250 concurrent streams per connection explicit.
            builder
                .http2()
                .max_header_list_size(MAX_HEADER_BYTES as u32 + HTTP2_HEADER_SLACK)
                .max_concurrent_streams(HTTP2_MAX_STREAMS);
            let tls = first_bytes::FirstBytes::new(tls, limits.read_header_timeout);
            let conn = builder.serve_connection_with_upgrades(TokioIo::new(tls), service);
            tokio::pin!(conn);
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "connection ended with an error");
                    }
                    return;
                }
                _ = stop.cancelled() => return,
                _ = activity.idle_for(limits.idle_timeout) => {
                    tracing::debug!(%peer, "connection idle; closing it");
                    conn.as_mut().graceful_shutdown();
                }
            }
            tokio::select! {
                r = conn.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!(%peer, error = %e, "idle connection ended with an error");
                    }
                }
                _ = stop.cancelled() => {}
            }
        });
    }
    connections.close();
    connections.wait().await;
}
