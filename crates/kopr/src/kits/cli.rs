//! The operator binary's command line, the equivalent of `kopf run`: `run` against a cluster,
//! `dev` against an embedded API server (or a cluster) with manifests applied, `crd` and
//! `manifests` to print what to deploy.
//!
//! There are three ways to start an operator, one for each need:
//! - a binary without options of its own calls [`Operator::main`];
//! - a binary with options of its own (flags of `run` and `dev`, a [`clap::Args`] type),
//!   subcommands or deployment details builds its operator in an [`App`];
//! - a program that embeds the operator (a test, a larger service) calls
//!   [`Operator::run_until`](crate::Operator::run_until).
//!
//!
//! ```no_run
//! use kopr::cli::App;
//! use kopr::manifests::Manifests;
//! use kopr::Operator;
//!
//! /// Options of the operator.
//! #[derive(clap::Args)]
//! struct Options {
//!     /// Seconds between refreshes.
//!     #[arg(long, default_value_t = 60)]
//!     interval: u64,
//! }
//!
//! /// More commands.
//! #[derive(clap::Subcommand)]
//! enum Extra {
//!     /// Say hello.
//!     Hello,
//! }
//!
//! fn operator(options: &Options) -> Operator {
//!     Operator::new() // .resource(...) using options.interval
//! }
//!
//! #[tokio::main]
//! async fn main() -> std::process::ExitCode {
//!     App::new(operator)
//!         .name("my-operator")
//!         .manifests(Manifests::new("my-operator").child::<k8s_openapi::api::core::v1::ConfigMap>())
//!         .commands(|command: Extra| async move {
//!             match command {
//!                 Extra::Hello => println!("hello"),
//!             }
//!             Ok::<(), std::io::Error>(())
//!         })
//!         .main()
//!         .await
//! }
//! ```

use std::ffi::OsString;
use std::fmt::Display;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use futures::future::LocalBoxFuture;
use kube::config::{KubeConfigOptions, Kubeconfig};

use crate::handling::errors::Error;
use crate::kits::manifests::{Manifests, to_yaml};
use crate::operator::Operator;
use crate::runtime::leader::LeaderElection;
use crate::runtime::logging::{self, LogFormat, Verbosity};
use crate::runtime::namespaces::NamespacePatterns;

/// Options for operators that have none of their own: the `A` of [`App::new`] for an
/// operator built without options.
///
/// ```no_run
/// # async fn main_() -> std::process::ExitCode {
/// kopr::cli::App::new(|_: &kopr::cli::NoArgs| kopr::Operator::new()).name("my-operator").main().await
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, Args)]
pub struct NoArgs {}

/// Extra subcommands for operators that have none.
#[derive(Debug, Clone, Copy)]
pub enum NoCommand {}

impl FromArgMatches for NoCommand {
    fn from_arg_matches(_: &ArgMatches) -> Result<Self, clap::Error> {
        Err(clap::Error::new(clap::error::ErrorKind::InvalidSubcommand))
    }

    fn update_from_arg_matches(&mut self, _: &ArgMatches) -> Result<(), clap::Error> {
        match *self {}
    }
}

impl Subcommand for NoCommand {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        cmd
    }

    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        cmd
    }

    fn has_subcommand(_: &str) -> bool {
        false
    }
}

#[derive(Parser)]
#[command(about = "A Kubernetes operator built with kopr", version)]
struct Cli<A: Args, X: Subcommand> {
    #[command(subcommand)]
    command: Command<A, X>,
}

// Parsed once per process: the variants' sizes do not matter (without the `embedded`
// feature, `Run` is the one large variant).
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command<A: Args, X: Subcommand> {
    /// Run the operator against a cluster (KUBECONFIG, ~/.kube/config or in-cluster).
    Run(RunArgs<A>),
    /// Run the operator against an embedded kopr API server (or a cluster), with its CRDs
    /// installed and manifests applied.
    #[cfg(feature = "embedded")]
    Dev(DevArgs<A>),
    /// Print the CRDs of the operator's typed custom resources as YAML.
    Crd,
    /// Print the YAML to deploy the operator: CRDs, ServiceAccount, ClusterRole and binding,
    /// Deployment.
    Manifests(ManifestsArgs),
    /// Print a completion script for a shell (bash, zsh, fish, elvish, powershell), e.g.
    /// `source <(NAME completions bash)`.
    Completions {
        /// The shell.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    #[command(flatten)]
    Extra(X),
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
    /// Run without leader election: handle objects whether or not other replicas run (Kopf's
    /// --standalone). By default replicas elect a leader through a Lease named after the
    /// operator, and only the leader handles objects.
    #[arg(long)]
    standalone: bool,
    /// Shard instead of electing a leader: every replica handles objects, each the objects of
    /// the virtual shards it owns (by a hash of namespace/name), and shards move as replicas
    /// join, leave or die, never handled by two at once. Uses the Lease options below: a
    /// member Lease per replica and a shard map Lease, `<operator>-shards`.
    #[arg(long, conflicts_with = "standalone")]
    shards: bool,
    /// The number of virtual shards, fixed when the shard map is first created.
    #[arg(long, value_name = "N", default_value_t = 64, requires = "shards")]
    shard_count: u32,
    /// The namespace of the leader election Lease (default: the pod's namespace in a cluster,
    /// else `default`).
    #[arg(long, value_name = "NAMESPACE")]
    lease_namespace: Option<String>,
    /// This replica's identity in the Lease (default: POD_NAME or the host name, with a random
    /// suffix).
    #[arg(long)]
    identity: Option<String>,
    /// Seconds a Lease whose record does not change stays held.
    #[arg(long, value_name = "SECONDS", default_value_t = 15.0)]
    lease_duration: f64,
    /// Seconds the leader keeps retrying a failed renewal before it stops handling.
    #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
    renew_deadline: f64,
    /// Seconds between attempts to acquire or renew the Lease.
    #[arg(long, value_name = "SECONDS", default_value_t = 2.0)]
    retry_period: f64,
    /// More logs: `-v` debug lines of the operator and kopr, `-vv` trace lines.
    #[arg(short, long, action = clap::ArgAction::Count)]
    verbose: u8,
    /// Debug lines of everything, the Kubernetes client and HTTP stack included.
    #[arg(short, long)]
    debug: bool,
    /// Only warnings and errors.
    #[arg(short, long, conflicts_with_all = ["verbose", "debug"])]
    quiet: bool,
    /// Log line format.
    #[arg(long, value_enum, default_value_t = LogFormat::Plain)]
    log_format: LogFormat,
    /// How many objects are handled at once (default 64).
    #[arg(long)]
    workers: Option<usize>,
    /// Serve /healthz (liveness: the process is alive and not wedged; Kopf's --liveness) and
    /// /readyz (readiness: every resource listed; a standby is ready) on this address.
    #[arg(long, value_name = "ADDR")]
    health_listen: Option<std::net::SocketAddr>,
    /// Serve /metrics (Prometheus/OpenMetrics text: kopr_handler_runs_total and more) on this
    /// address.
    #[arg(long, value_name = "ADDR")]
    metrics_listen: Option<std::net::SocketAddr>,
}

#[derive(Args)]
struct RunArgs<A: Args> {
    #[command(flatten)]
    common: Common,
    /// The kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long)]
    context: Option<String>,
    /// The Service (NAMESPACE/NAME) through which the API server reaches the admission
    /// handlers; they are served and registered only when it is given (`manifests` does).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    webhook_service: Option<String>,
    /// Where the admission handlers are served.
    #[arg(long, default_value = "0.0.0.0:9443")]
    webhook_listen: std::net::SocketAddr,
    /// Serve the admission handlers with the certificate in this directory (`tls.crt`,
    /// `tls.key`, and `ca.crt` for the caBundle: a mounted kubernetes.io/tls Secret), read
    /// again when it changes. Default: a certificate from a CA generated at start.
    #[arg(long, value_name = "DIR")]
    webhook_cert_dir: Option<PathBuf>,
    /// Do not register the webhook configurations: they come with the manifests (and
    /// cert-manager's CA injector fills their caBundle).
    #[arg(long)]
    webhook_no_registration: bool,
    #[command(flatten, next_help_heading = "Operator options")]
    options: A,
}

#[cfg(feature = "embedded")]
#[derive(Args)]
struct DevArgs<A: Args> {
    #[command(flatten)]
    common: Common,
    /// Where the embedded API server keeps its data, credentials and kubeconfig.
    #[arg(long, default_value = ".kopr")]
    data_dir: PathBuf,
    /// Keep objects in memory only (credentials and the kubeconfig still go to --data-dir).
    #[arg(long)]
    in_memory: bool,
    /// The address the embedded API server listens on (port 0 picks a free port).
    #[arg(long, default_value = "127.0.0.1:6443")]
    listen: std::net::SocketAddr,
    /// Apply these manifests (files, or directories of .yaml/.yml/.json files) before the
    /// operator starts (repeatable). They are applied on every start, so an object deleted
    /// since the last run comes back.
    #[arg(long = "apply", value_name = "PATH")]
    apply: Vec<PathBuf>,
    /// Use the cluster of this kubeconfig instead of starting an embedded API server.
    #[arg(long, conflicts_with_all = ["in_memory", "data_dir", "listen"])]
    kubeconfig: Option<PathBuf>,
    /// Use this kubeconfig context instead of starting an embedded API server.
    #[arg(long, conflicts_with_all = ["in_memory", "data_dir", "listen"])]
    context: Option<String>,
    /// Run the operator as the cluster admin. By default, on the embedded API server, it runs
    /// as its own ServiceAccount under the ClusterRole `manifests` generates, as on a real
    /// cluster.
    #[arg(long)]
    admin: bool,
    #[command(flatten, next_help_heading = "Operator options")]
    options: A,
}

#[derive(Debug, Args)]
struct ManifestsArgs {
    /// The operator's container image (default: <operator>:latest).
    #[arg(long)]
    image: Option<String>,
    /// The namespace of the ServiceAccount and Deployment.
    #[arg(long)]
    namespace: Option<String>,
    /// Run N sharded replicas (`run --shards`), every one handling its share of the objects,
    /// instead of a leader and a standby.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    shards: Option<u32>,
    /// Operator options for the Deployment's `run -A`, after `--`.
    #[arg(last = true, value_name = "OPTIONS")]
    run_args: Vec<String>,
}

/// What the command line reports: framework errors, apply failures, plain messages.
#[derive(Debug, thiserror::Error)]
enum CliError {
    #[error(transparent)]
    Kopr(#[from] Error),
    #[error(transparent)]
    Apply(#[from] crate::kits::apply::ManifestError),
    #[error("{0}")]
    Message(String),
}

impl Common {
    fn init_logging(&self) {
        let verbosity = if self.quiet {
            Verbosity::Quiet
        } else if self.debug {
            Verbosity::Debug
        } else {
            match self.verbose {
                0 => Verbosity::Normal,
                1 => Verbosity::Verbose,
                _ => Verbosity::Trace,
            }
        };
        logging::init(verbosity, self.log_format);
    }

    /// Adds the leader election or sharding these options ask for, unless the operator
    /// already has one.
    fn membership(
        &self,
        operator: Operator,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<Operator, Error> {
        if operator.leader.is_some() || operator.sharding.is_some() {
            return Ok(operator);
        }
        Ok(match self.election(name, namespace)? {
            Some(election) if self.shards => operator
                .sharding(crate::runtime::shards::Sharding::new(election).count(self.shard_count)),
            Some(election) => operator.leader_election(election),
            None => operator,
        })
    }

    /// The leader election these options ask for (`None` with `--standalone`).
    fn election(
        &self,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<Option<LeaderElection>, Error> {
        if self.standalone {
            return Ok(None);
        }
        let seconds = |value: f64, flag: &str| {
            Duration::try_from_secs_f64(value)
                .map_err(|_| Error::Config(format!("--{flag}: not a duration in seconds: {value}")))
        };
        let mut election = LeaderElection::new(name)
            .lease_duration(seconds(self.lease_duration, "lease-duration")?)
            .renew_deadline(seconds(self.renew_deadline, "renew-deadline")?)
            .retry_period(seconds(self.retry_period, "retry-period")?);
        if let Some(namespace) = self.lease_namespace.as_deref().or(namespace) {
            election = election.namespace(namespace);
        }
        if let Some(identity) = &self.identity {
            election = election.identity(identity);
        }
        election.check()?;
        Ok(Some(election))
    }

    fn configure(&self, operator: Operator, name: &str) -> Result<Operator, Error> {
        let patterns = if self.namespaces.is_empty() || self.all_namespaces {
            NamespacePatterns::all()
        } else {
            NamespacePatterns::parse(&self.namespaces).map_err(|e| Error::Config(e.to_string()))?
        };
        let mut operator = operator.namespaces(patterns);
        // The operator is named after the program unless it chose its identity.
        if operator.settings.identity == crate::Identity::default() {
            operator = operator.name(name);
        }
        if let Some(workers) = self.workers {
            operator = operator.workers(workers);
        }
        if let Some(listen) = self.health_listen {
            operator = operator.health_listen(listen);
        }
        if let Some(listen) = self.metrics_listen {
            operator = operator.metrics_listen(listen);
        }
        Ok(operator)
    }
}

/// Builds a client from an explicit kubeconfig and/or context, or infers one (KUBECONFIG,
/// `~/.kube/config`, in-cluster service account).
///
/// ```no_run
/// # async fn run() -> Result<(), kopr::Error> {
/// use std::path::Path;
/// let inferred = kopr::cli::client_from(None, None).await?;
/// let staging = kopr::cli::client_from(Some(Path::new("staging.yaml")), Some("admin".into())).await?;
/// # Ok(())
/// # }
/// ```
///
/// # Errors
/// [`Error::ClientConfig`] when no configuration is found or it is invalid.
pub async fn client_from(
    kubeconfig: Option<&Path>,
    context: Option<String>,
) -> Result<kube::Client, Error> {
    crate::client::build(config_from(kubeconfig, context).await?)
}

/// The client configuration [`client_from`] builds its client from (with a read timeout of
/// 295 s unless the configuration sets one, so that a dead watch connection is noticed).
///
/// # Errors
/// [`Error::ClientConfig`] when no configuration is found or it is invalid.
pub async fn config_from(
    kubeconfig: Option<&Path>,
    context: Option<String>,
) -> Result<kube::Config, Error> {
    let options = KubeConfigOptions {
        context,
        ..KubeConfigOptions::default()
    };
    let invalid = |e: &dyn std::fmt::Display| Error::ClientConfig(e.to_string());
    let mut config = match kubeconfig {
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
    // A watch connection that dies without closing would otherwise hang forever: no healthy
    // read waits this long, since every watch request ends after its server-side timeout.
    if config.read_timeout.is_none() {
        config.read_timeout = Some(std::time::Duration::from_secs(295));
    }
    tracing::info!(server = %config.cluster_url, "using the API server");
    Ok(config)
}

/// Completes on SIGINT or SIGTERM: the shutdown future for
/// [`Operator::run_until`](crate::Operator::run_until).
///
/// ```no_run
/// # async fn run(client: kube::Client) -> Result<(), kopr::Error> {
/// kopr::Operator::new().run_until(client, kopr::cli::shutdown_signal()).await
/// # }
/// ```
pub async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
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

type BuildFn<A> = Box<dyn FnOnce(&A) -> Operator>;
type ExtraFn<X> = Box<dyn FnOnce(X) -> LocalBoxFuture<'static, Result<(), String>>>;

/// An operator's command line: the built-in commands (`run`, `dev`, `crd`, `manifests`), the
/// operator's own options `A` (flattened into `run` and `dev`; `crd` and `manifests` build the
/// operator from their defaults, or from the options after `manifests ... --`), and extra
/// subcommands `X`. See the [module documentation](self) for an example with all of them.
pub struct App<A, X = NoCommand> {
    build: BuildFn<A>,
    extra: ExtraFn<X>,
    name: Option<String>,
    about: Option<String>,
    version: Option<String>,
    manifests: Option<Manifests>,
}

impl<A: Args + 'static> App<A, NoCommand> {
    /// A command line whose operator is built by `build` from the parsed options.
    ///
    /// ```
    /// use kopr::cli::App;
    ///
    /// #[derive(clap::Args)]
    /// struct Options {
    ///     /// Serve this team only.
    ///     #[arg(long)]
    ///     team: Option<String>,
    /// }
    ///
    /// let app = App::new(|options: &Options| {
    ///     let _ = &options.team;
    ///     kopr::Operator::new()
    /// })
    /// .name("my-operator")
    /// .about("Keeps teams in order")
    /// .version("1.0.0");
    /// let help = app.command().render_help().to_string();
    /// assert!(help.contains("run") && help.contains("manifests"));
    /// ```
    pub fn new(build: impl FnOnce(&A) -> Operator + 'static) -> Self {
        App {
            build: Box::new(build),
            extra: Box::new(|never: NoCommand| match never {}),
            name: None,
            about: None,
            version: None,
            manifests: None,
        }
    }
}

impl<A: Args + 'static, X: Subcommand + 'static> App<A, X> {
    /// The program's name in help and usage, and the default operator name in `manifests`
    /// (default: the file name the binary was started as).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// The one-line description in `--help`.
    pub fn about(mut self, about: impl Into<String>) -> Self {
        self.about = Some(about.into());
        self
    }

    /// The version `--version` prints.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = Some(version.into());
        self
    }

    /// How the operator is deployed (`manifests`): its name, and the RBAC its handlers need
    /// beyond what kopr derives (child kinds, installing its own CRDs).
    pub fn manifests(mut self, manifests: Manifests) -> Self {
        self.manifests = Some(manifests);
        self
    }

    /// Adds the subcommands `Y`, run by `handler` (errors are printed and exit with status 1).
    pub fn commands<Y, F, Fut, E>(self, handler: F) -> App<A, Y>
    where
        Y: Subcommand + 'static,
        F: FnOnce(Y) -> Fut + 'static,
        Fut: Future<Output = Result<(), E>> + 'static,
        E: Display + 'static,
    {
        App {
            build: self.build,
            extra: Box::new(move |command: Y| {
                let future = handler(command);
                Box::pin(async move { future.await.map_err(|e| e.to_string()) })
            }),
            name: self.name,
            about: self.about,
            version: self.version,
            manifests: self.manifests,
        }
    }

    fn program_name(&self, first: Option<&OsString>) -> String {
        if let Some(name) = &self.name {
            return name.clone();
        }
        first
            .map(Path::new)
            .and_then(Path::file_stem)
            .and_then(|s| s.to_str())
            .filter(|s| !s.is_empty())
            .unwrap_or("operator")
            .to_owned()
    }

    fn clap_command(&self, name: &str) -> clap::Command {
        let mut command = Cli::<A, X>::command()
            .name(leak(name))
            .bin_name(name.to_owned());
        if let Some(about) = &self.about {
            command = command.about(about.clone());
        }
        if let Some(version) = &self.version {
            command = command.version(leak(version));
        }
        command
    }

    /// The clap command, for generating help or completions.
    pub fn command(&self) -> clap::Command {
        let first = std::env::args_os().next();
        self.clap_command(&self.program_name(first.as_ref()))
    }

    /// Parses the process's command line and runs the chosen command; returns the exit code.
    pub async fn main(self) -> ExitCode {
        self.main_from(std::env::args_os()).await
    }

    /// Parses `args` (the first is the program name) and runs the chosen command; returns the
    /// exit code. Usage errors, `--help` and `--version` are printed as clap prints them.
    ///
    /// ```no_run
    /// # async fn print() {
    /// use kopr::cli::{App, NoArgs};
    /// let _code = App::new(|_: &NoArgs| kopr::Operator::new())
    ///     .main_from(["my-operator", "manifests", "--image", "example/op:1.0"])
    ///     .await;
    /// # }
    /// ```
    pub async fn main_from<I, T>(self, args: I) -> ExitCode
    where
        I: IntoIterator<Item = T>,
        T: Into<OsString> + Clone,
    {
        let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
        let name = self.program_name(args.first());
        let parsed = self
            .clap_command(&name)
            .try_get_matches_from(args)
            .and_then(|matches| Cli::<A, X>::from_arg_matches(&matches));
        let cli = match parsed {
            Ok(cli) => cli,
            Err(error) => {
                let _ = error.print();
                return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
            }
        };
        match self.execute(&name, cli.command).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("error: {error}");
                ExitCode::FAILURE
            }
        }
    }

    async fn execute(self, name: &str, command: Command<A, X>) -> Result<(), CliError> {
        match command {
            Command::Run(args) => {
                args.common.init_logging();
                let operator = args.common.configure((self.build)(&args.options), name)?;
                let mut operator = args.common.membership(operator, name, None)?;
                if operator.serves_webhooks() && operator.webhooks.is_none() {
                    match args
                        .webhook_service
                        .as_deref()
                        .and_then(|s| s.split_once('/'))
                    {
                        Some((namespace, service)) => {
                            let mut webhooks =
                                crate::webhooks::Webhooks::listen(args.webhook_listen)
                                    .service(namespace, service)
                                    .name(name);
                            if let Some(dir) = &args.webhook_cert_dir {
                                webhooks = webhooks.certificate_dir(dir);
                            }
                            if args.webhook_no_registration {
                                webhooks = webhooks.no_registration();
                            }
                            operator = operator.webhooks(webhooks);
                        }
                        None => tracing::warn!(
                            "the operator has admission handlers or CRD conversions but no --webhook-service \
                             NAMESPACE/NAME: they are not served"
                        ),
                    }
                }
                let client = client_from(args.kubeconfig.as_deref(), args.context).await?;
                operator.run_until(client, shutdown_signal()).await?;
                Ok(())
            }
            #[cfg(feature = "embedded")]
            Command::Dev(args) => {
                let mut manifests = self.manifests.unwrap_or_else(|| Manifests::new(name));
                if args.common.shards {
                    // Its RBAC lets the member list the others and clean up after dead ones.
                    manifests = manifests.shards(1);
                }
                dev(name, args, self.build, manifests).await
            }
            Command::Crd => {
                let options = parse_options::<A>(name, &[])?;
                let operator = (self.build)(&options);
                print!("{}", to_yaml(&operator.crds())?);
                Ok(())
            }
            Command::Manifests(args) => {
                let options = parse_options::<A>(name, &args.run_args)?;
                let operator = (self.build)(&options);
                let mut manifests = self
                    .manifests
                    .unwrap_or_else(|| Manifests::new(name))
                    .run_args(args.run_args);
                if let Some(image) = args.image {
                    manifests = manifests.image(image);
                }
                if let Some(namespace) = args.namespace {
                    manifests = manifests.namespace(namespace);
                }
                if let Some(replicas) = args.shards {
                    manifests = manifests.shards(replicas);
                }
                print!("{}", manifests.render(&operator)?);
                Ok(())
            }
            Command::Completions { shell } => {
                let mut command = self.clap_command(name);
                // Generated into memory first: clap_complete panics when its writer fails
                // (a closed pipe); a failed write to stdout is reported instead.
                let mut script = Vec::new();
                clap_complete::generate(shell, &mut command, name, &mut script);
                std::io::Write::write_all(&mut std::io::stdout(), &script)
                    .map_err(|e| CliError::Message(format!("writing the completions: {e}")))
            }
            Command::Extra(command) => (self.extra)(command).await.map_err(CliError::Message),
        }
    }
}

/// clap (without its `string` feature) takes names and versions as `&'static str`; the few
/// bytes a command line needs are kept for the life of the process.
fn leak(text: &str) -> &'static str {
    Box::leak(text.to_owned().into_boxed_str())
}

/// Parses the operator's own options from `args` alone (their defaults when empty).
fn parse_options<A: Args>(name: &str, args: &[String]) -> Result<A, CliError> {
    let command = A::augment_args(clap::Command::new(leak(name)).no_binary_name(true));
    command
        .try_get_matches_from(args)
        .and_then(|matches| A::from_arg_matches(&matches))
        .map_err(|error| {
            let text = error.render().to_string();
            let text = text.trim().trim_start_matches("error: ");
            CliError::Message(format!("invalid operator options: {text}"))
        })
}

impl Operator {
    /// Parses the command line and runs the chosen command (`run`, `dev`, `crd`, `manifests`,
    /// `completions`; see [`crate::cli`]); returns the process exit code.
    ///
    /// ```no_run
    /// #[tokio::main]
    /// async fn main() -> std::process::ExitCode {
    ///     kopr::Operator::new() /* .resource(...) */ .main().await
    /// }
    /// ```
    ///
    /// # Caveats
    /// `run` elects a leader by default (a Lease named after the program, in the pod's
    /// namespace): pass `--standalone` to run without one, or `--shards` to shard.
    pub async fn main(self) -> ExitCode {
        App::new(move |_: &NoArgs| self).main().await
    }
}

/// The name to suggest in `kubectl get` for the operator's first resource.
#[cfg(feature = "embedded")]
fn first_resource_name(operator: &Operator) -> Option<String> {
    use crate::runtime::discovery::Target;
    operator
        .resources
        .first()
        .map(|resource| match &resource.target {
            Target::Known(ar) => ar.plural.clone(),
            Target::Lookup(name) => name.clone(),
        })
}

#[cfg(feature = "embedded")]
fn check_data_dir(dir: &Path) -> Result<(), CliError> {
    // Created private: it will hold credentials and every Secret.
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(|e| {
        CliError::Message(format!(
            "cannot create the data directory {}: {e}",
            dir.display()
        ))
    })?;
    let probe = dir.join(".kopr-write-check");
    std::fs::write(&probe, b"").map_err(|e| {
        CliError::Message(format!(
            "the data directory {} is not writable: {e}; choose another with --data-dir",
            dir.display()
        ))
    })?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

#[cfg(feature = "embedded")]
fn check_listen(address: std::net::SocketAddr) -> Result<(), CliError> {
    if address.port() == 0 {
        return Ok(());
    }
    match std::net::TcpListener::bind(address) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => Err(CliError::Message(format!(
            "cannot listen on {address}: the address is already in use (another `dev` or API \
             server?); choose another with --listen, e.g. --listen 127.0.0.1:0"
        ))),
        Err(e) => Err(CliError::Message(format!(
            "cannot listen on {address}: {e}"
        ))),
    }
}

/// `dev`'s own messages: `NAME dev: …` lines, or, with `--log-format json`, JSON lines in
/// the shape of the log lines (timestamp, level, message, target).
#[cfg(feature = "embedded")]
struct Say<'a> {
    name: &'a str,
    json: bool,
}

#[cfg(feature = "embedded")]
impl Say<'_> {
    fn info(&self, text: &str) {
        self.line("INFO", text);
    }

    fn error(&self, text: &str) {
        self.line("ERROR", text);
    }

    fn line(&self, level: &str, text: &str) {
        let name = self.name;
        if self.json {
            let line = serde_json::json!({
                "timestamp": jiff::Timestamp::now().to_string(),
                "level": level,
                "fields": {"message": format!("{name} dev: {text}")},
                "target": format!("{name}::dev"),
            });
            eprintln!("{line}");
        } else {
            eprintln!("{name} dev: {text}");
        }
    }
}

#[cfg(feature = "embedded")]
async fn dev<A: Args>(
    name: &str,
    args: DevArgs<A>,
    build: BuildFn<A>,
    manifests: Manifests,
) -> Result<(), CliError> {
    args.common.init_logging();
    // Read every manifest first: a broken file stops here, before anything starts.
    let documents = crate::kits::apply::load(&args.apply)?;
    let operator = args.common.configure(build(&args.options), name)?;
    // One replica, with leader election on as in a cluster, so the Lease shows in kubectl.
    let mut operator = args
        .common
        .membership(operator, name, Some(manifests.namespace_name()))?;
    if operator.serves_webhooks() && operator.webhooks.is_none() {
        // Served on loopback and registered with the dev cluster, so a denial in dev reads as
        // one on a real cluster.
        operator = operator.webhooks(crate::webhooks::Webhooks::local().name(name));
    }
    let say = Say {
        name,
        json: args.common.log_format == LogFormat::Json,
    };
    let external = args.kubeconfig.is_some() || args.context.is_some();
    let (client, server, kubectl) = if external {
        let client = client_from(args.kubeconfig.as_deref(), args.context.clone()).await?;
        let mut kubectl = String::from("kubectl");
        if let Some(path) = &args.kubeconfig {
            kubectl.push_str(&format!(" --kubeconfig {}", path.display()));
        }
        if let Some(context) = &args.context {
            kubectl.push_str(&format!(" --context {context}"));
        }
        say.info(&format!("using the cluster of `{kubectl}`"));
        (client, None, kubectl)
    } else {
        check_data_dir(&args.data_dir)?;
        check_listen(args.listen)?;
        let kubeconfig = args.data_dir.join("kubeconfig");
        let config = kopr_apiserver::Config {
            data_dir: Some(args.data_dir.clone()),
            listen: args.listen,
            kubeconfig: Some(kubeconfig.clone()),
            in_memory: args.in_memory,
            ..kopr_apiserver::Config::ephemeral()
        };
        let server = kopr_apiserver::ApiServer::start(config)
            .await
            .map_err(|e| {
                CliError::Message(format!(
                    "starting the embedded API server on {} with data in {}: {e}",
                    args.listen,
                    args.data_dir.display()
                ))
            })?;
        let storage = if args.in_memory {
            "objects in memory".to_owned()
        } else {
            format!("objects in {}", args.data_dir.join("state.db").display())
        };
        let absolute = std::path::absolute(&kubeconfig).unwrap_or_else(|_| kubeconfig.clone());
        say.info(&format!(
            "embedded API server at {} ({storage})",
            server.url()
        ));
        say.info(&format!("kubeconfig {}", absolute.display()));
        let config = config_from(Some(&kubeconfig), None).await?;
        (
            crate::client::build(config.clone())?,
            Some((server, config)),
            format!("kubectl --kubeconfig {}", kubeconfig.display()),
        )
    };
    operator.install_crds(&client).await?;
    let operator_client = match &server {
        Some((_, config)) if !args.admin => {
            let account =
                crate::service_account::apply_rbac(&client, &manifests, &operator).await?;
            let token = account.token(&client, DEV_TOKEN_SECONDS).await?;
            say.info(&format!(
                "the operator runs as {} with the ClusterRole `{name} manifests` prints (--admin: as admin)",
                account.user_name()
            ));
            crate::client::build(crate::service_account::with_token(config, &token))?
        }
        _ => client.clone(),
    };
    // Manifests are applied once the operator's webhooks answer: a Book written at another
    // version of its CRD is converted by them.
    let ready = operator.webhooks_ready();
    let first = first_resource_name(&operator);
    let run = operator.run_until(operator_client, shutdown_signal());
    tokio::pin!(run);
    let ended = tokio::select! {
        result = &mut run => Some(result),
        () = ready => None,
    };
    let result = match ended {
        Some(result) => result,
        None => {
            let outcomes = crate::kits::apply::apply(&client, &documents).await;
            let mut failed = 0;
            for outcome in &outcomes {
                match &outcome.result {
                    Ok(_) => say.info(&outcome.to_string()),
                    Err(error) => {
                        failed += 1;
                        say.error(&format!("error: {error}"));
                    }
                }
            }
            if failed > 0 {
                say.error(&format!(
                    "{failed} of {} manifests were not applied; the operator runs anyway",
                    outcomes.len()
                ));
            }
            match first {
                Some(resource) => say.info(&format!("try: {kubectl} get {resource}")),
                None => say.info(&format!("try: {kubectl} get all")),
            }
            run.await
        }
    };
    if let Some((server, _)) = server {
        server.shutdown().await;
    }
    result.map_err(CliError::from)
}

/// How long the token of a `dev` run's operator lasts: a year, as kube's
/// extended service-account tokens, since a dev run does not renew it.
#[cfg(feature = "embedded")]
const DEV_TOKEN_SECONDS: i64 = 365 * 24 * 3600;

#[cfg(test)]
mod tests {
    use super::*;

    /// Options of a test operator.
    #[derive(Debug, Args)]
    struct Options {
        /// An interval.
        #[arg(long, default_value_t = 60)]
        interval: u64,
    }

    #[test]
    fn operator_options_parse_alone_with_their_defaults() {
        let defaults: Options = parse_options("op", &[]).unwrap();
        assert_eq!(defaults.interval, 60);
        let given: Options = parse_options("op", &["--interval".into(), "5".into()]).unwrap();
        assert_eq!(given.interval, 5);
        let error = parse_options::<Options>("op", &["--nope".into()])
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with("invalid operator options: unexpected argument '--nope'"),
            "{error}"
        );
    }

    #[test]
    fn the_program_is_named_after_the_binary_unless_told() {
        let app = App::new(|_: &Options| Operator::new());
        assert_eq!(
            app.program_name(Some(&OsString::from("/usr/local/bin/greeting"))),
            "greeting"
        );
        assert_eq!(app.program_name(None), "operator");
        let named = app.name("exchange-rate");
        assert_eq!(
            named.program_name(Some(&OsString::from("x"))),
            "exchange-rate"
        );
    }

    #[test]
    fn operator_options_are_flattened_into_run_and_dev_only() {
        let app = App::new(|_: &Options| Operator::new());
        let command = app.clap_command("op");
        let has_interval = |name: &str| {
            command
                .find_subcommand(name)
                .is_some_and(|c| c.get_arguments().any(|a| a.get_long() == Some("interval")))
        };
        assert!(has_interval("run"));
        assert!(has_interval("dev"));
        assert!(!has_interval("crd"));
        assert!(!has_interval("manifests"));
        command.debug_assert();
    }

    #[tokio::test]
    async fn extra_commands_run_through_their_handler() {
        #[derive(Debug, Subcommand)]
        enum Extra {
            /// Fails.
            Fail,
        }
        let app = App::new(|_: &NoArgs| Operator::new())
            .commands(|Extra::Fail| async { Err::<(), _>("it failed") });
        let matches = app
            .clap_command("op")
            .try_get_matches_from(["op", "fail"])
            .unwrap();
        let cli = Cli::<NoArgs, Extra>::from_arg_matches(&matches).unwrap();
        let error = app.execute("op", cli.command).await.unwrap_err();
        assert_eq!(error.to_string(), "it failed");

        let plain = App::new(|_: &NoArgs| Operator::new());
        let unknown = plain
            .clap_command("op")
            .try_get_matches_from(["op", "fail"])
            .unwrap_err();
        assert_eq!(unknown.kind(), clap::error::ErrorKind::InvalidSubcommand);
    }
}
