//! `kopr apiserver`: the embedded API server as a foreground process.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context;
use clap::Args;
use kopr_apiserver::{ApiServer, Config};

/// Options of `kopr apiserver`.
#[derive(Args, Debug)]
pub struct ApiserverArgs {
    /// Directory for the database, credentials and kubeconfig (reused across restarts).
    #[arg(long, default_value = ".kopr")]
    data_dir: PathBuf,
    /// Address to listen on. Use 0.0.0.0:PORT to accept remote clients.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: SocketAddr,
    /// Where to write the kubeconfig (default: DATA_DIR/kubeconfig).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Keep objects in memory only (credentials still live in DATA_DIR).
    #[arg(long)]
    in_memory: bool,
    /// Do not run the in-process controllers (garbage collector, namespaces,
    /// workloads, scheduler, simulated kubelet).
    #[arg(long)]
    no_controllers: bool,
    /// Seconds of history kept for watches before compaction.
    #[arg(long, default_value_t = 300)]
    history_retention_seconds: u64,
    /// Simulated nodes (kopr-node-0 …) whose pods the in-process kubelet runs.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Seconds a connection may stay open with no request in flight (kube-apiserver's 90).
    #[arg(long, default_value_t = 90)]
    idle_timeout_seconds: u64,
    /// Connections served at once; further clients wait in the listen backlog.
    #[arg(long, default_value_t = kopr_apiserver::DEFAULT_MAX_CONNECTIONS)]
    max_connections: usize,
    /// Static users, in kube-apiserver's token file format
    /// (`token,user,uid,"group1,group2"` per line).
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// Serve requests without credentials as `system:anonymous` (kube's
    /// default; RBAC lets it read only health and version endpoints).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    anonymous_auth: bool,
    /// Write audit events (audit.k8s.io/v1, JSON lines) to this file (`-`: standard output).
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
    /// The audit policy (audit.k8s.io/v1 Policy); without one, every request is logged at
    /// Metadata level.
    #[arg(long, requires = "audit_log_path")]
    audit_policy_file: Option<PathBuf>,
    /// Encrypt resources at rest as this EncryptionConfiguration (apiserver.config.k8s.io/v1)
    /// says: aescbc, aesgcm or identity providers per resource.
    #[arg(long)]
    encryption_provider_config: Option<PathBuf>,
}

/// Runs the server until SIGINT or SIGTERM.
pub async fn run(args: ApiserverArgs) -> anyhow::Result<()> {
    let started = Instant::now();
    let config = Config {
        data_dir: Some(args.data_dir.clone()),
        listen: args.listen,
        kubeconfig: args.kubeconfig.clone(),
        in_memory: args.in_memory,
        controllers: !args.no_controllers,
        history_retention: std::time::Duration::from_secs(args.history_retention_seconds.max(1)),
        nodes: args.nodes,
        token_auth_file: args.token_auth_file.clone(),
        anonymous_auth: args.anonymous_auth,
        audit_log_path: args.audit_log_path.clone(),
        audit_policy_file: args.audit_policy_file.clone(),
        encryption_provider_config: args.encryption_provider_config.clone(),
        read_header_timeout: kopr_apiserver::DEFAULT_READ_HEADER_TIMEOUT,
        idle_timeout: std::time::Duration::from_secs(args.idle_timeout_seconds.max(1)),
        max_connections: args.max_connections.max(1),
    };
    let server = ApiServer::start(config).await.with_context(|| {
        format!(
            "starting the API server with data in {}",
            args.data_dir.display()
        )
    })?;
    let kubeconfig = server
        .kubeconfig_path()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    tracing::info!(
        url = %server.url(),
        kubeconfig,
        ready_ms = started.elapsed().as_millis() as u64,
        "kopr apiserver ready"
    );
    println!("kopr apiserver listening on {}", server.url());
    println!("kubeconfig: {kubeconfig}");
    println!("try: kubectl --kubeconfig {kubeconfig} get namespaces");
    wait_for_signal().await?;
    tracing::info!("shutting down");
    server.shutdown().await;
    Ok(())
}

async fn wait_for_signal() -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r?,
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    tokio::signal::ctrl_c().await?;
    Ok(())
}
