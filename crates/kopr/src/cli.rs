//! The operator binary's command line, the equivalent of `kopf run`: `run` against a cluster,
//! `dev` against a fresh embedded API server, and `crd` to print the CRDs.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::errors::Error;
use crate::logging::{self, LogFormat};
use crate::namespaces::NamespacePatterns;
use crate::operator::Operator;

#[derive(Debug, Parser)]
#[command(about = "A Kubernetes operator built with kopr", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run the operator against a cluster (KUBECONFIG, ~/.kube/config or in-cluster).
    Run(RunArgs),
    /// Run the operator against an embedded kopr API server, with its CRDs installed.
    #[cfg(feature = "embedded")]
    Dev(DevArgs),
    /// Print the CRDs of the operator's typed custom resources as YAML.
    Crd,
}

/// Options shared by `run` and `dev`.
#[derive(Debug, Args)]
struct Common {
    /// Serve only these namespaces (repeatable; globs and `!` negation; first match decides).
    #[arg(short = 'n', long = "namespace", value_name = "PATTERN")]
    namespaces: Vec<String>,
    /// Serve all namespaces (the default when no --namespace is given).
    #[arg(short = 'A', long, conflicts_with = "namespaces")]
    all_namespaces: bool,
    /// Run without peering with other instances (the only mode kopr has; accepted for Kopf
    /// compatibility).
    #[arg(long)]
    standalone: bool,
    /// More logs (info).
    #[arg(short, long)]
    verbose: bool,
    /// Debug logs.
    #[arg(short, long)]
    debug: bool,
    /// Only warnings and errors.
    #[arg(short, long, conflicts_with_all = ["verbose", "debug"])]
    quiet: bool,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Plain)]
    log_format: LogFormat,
    /// How many objects are handled at once.
    #[arg(long)]
    workers: Option<usize>,
}

#[derive(Debug, Args)]
struct RunArgs {
    #[command(flatten)]
    common: Common,
    /// The kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long)]
    context: Option<String>,
}

#[cfg(feature = "embedded")]
#[derive(Debug, Args)]
struct DevArgs {
    #[command(flatten)]
    common: Common,
    /// Where the embedded API server keeps its data, certificates and kubeconfig.
    #[arg(long, default_value = ".kopr")]
    data_dir: PathBuf,
    /// The address the embedded API server listens on.
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: std::net::SocketAddr,
}

impl Common {
    fn apply(&self, operator: Operator) -> Result<Operator, Error> {
        let level = if self.debug {
            tracing::Level::DEBUG
        } else if self.quiet {
            tracing::Level::WARN
        } else {
            tracing::Level::INFO
        };
        let _ = self.verbose;
        logging::init(level, self.log_format);
        let patterns = if self.namespaces.is_empty() || self.all_namespaces {
            NamespacePatterns::all()
        } else {
            NamespacePatterns::parse(&self.namespaces)
                .map_err(|e| Error::Config(e.to_string()))?
        };
        let mut operator = operator.namespaces(patterns);
        if let Some(workers) = self.workers {
            operator = operator.workers(workers);
        }
        Ok(operator)
    }
}

/// Builds a client from an explicit kubeconfig and/or context, or infers one (KUBECONFIG,
/// `~/.kube/config`, in-cluster service account).
pub async fn client_from(kubeconfig: Option<&std::path::Path>, context: Option<String>) -> Result<kube::Client, Error> {
    let options = KubeConfigOptions {
        context,
        ..KubeConfigOptions::default()
    };
    let invalid = |e: &dyn std::fmt::Display| Error::ClientConfig(e.to_string());
    let config = match kubeconfig {
        Some(path) => {
            let file = Kubeconfig::read_from(path).map_err(|e| invalid(&e))?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|e| invalid(&e))?
        }
        None if options.context.is_some() => kube::Config::from_kubeconfig(&options)
            .await
            .map_err(|e| invalid(&e))?,
        None => kube::Config::infer().await.map_err(|e| invalid(&e))?,
    };
    kube::Client::try_from(config).map_err(Error::Kube)
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => {
                let _ = interrupt.await;
                return;
            }
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}

impl Operator {
    /// Parses the command line and runs the chosen command; returns the process exit code.
    pub async fn main(self) -> ExitCode {
        let cli = Cli::parse();
        match self.execute(cli.command).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        }
    }

    async fn execute(self, command: Command) -> Result<(), Error> {
        match command {
            Command::Crd => {
                let mut out = String::new();
                for crd in self.crds() {
                    out.push_str("---\n");
                    out.push_str(&serde_saphyr::to_string(&crd).map_err(|e| Error::Config(e.to_string()))?);
                }
                print!("{out}");
                Ok(())
            }
            Command::Run(args) => {
                let operator = args.common.apply(self)?;
                let client = client_from(args.kubeconfig.as_deref(), args.context).await?;
                operator.run_until(client, shutdown_signal()).await
            }
            #[cfg(feature = "embedded")]
            Command::Dev(args) => {
                let operator = args.common.apply(self)?;
                let config = kopr_apiserver::Config {
                    data_dir: Some(args.data_dir.clone()),
                    listen: args.listen,
                    kubeconfig: Some(args.data_dir.join("kubeconfig")),
                    in_memory: false,
                    ..kopr_apiserver::Config::ephemeral()
                };
                let server = kopr_apiserver::ApiServer::start(config)
                    .await
                    .map_err(|e| Error::Config(format!("starting the embedded API server: {e}")))?;
                let kubeconfig = args.data_dir.join("kubeconfig");
                tracing::info!(url = %server.url(), kubeconfig = %kubeconfig.display(), "embedded API server ready; use: kubectl --kubeconfig {}", kubeconfig.display());
                eprintln!("kopr dev: API server at {}; kubectl --kubeconfig {}", server.url(), kubeconfig.display());
                let client = client_from(Some(&kubeconfig), None).await?;
                operator.install_crds(&client).await?;
                let result = operator.run_until(client, shutdown_signal()).await;
                server.shutdown().await;
                result
            }
        }
    }
}
