//! Testing operators without a cluster: an in-process kopr-apiserver on a random port, CRD
//! installation, operators run in the background (stopped gracefully or killed like a crashed
//! process, as admin or as their own ServiceAccount, directly or through a fault-injecting
//! [`FaultProxy`]), and helpers to await object conditions and log lines.
//!
//! ```no_run
//! # async fn test() -> Result<(), kopr::Error> {
//! use kopr::testing::TestCluster;
//! let cluster = TestCluster::start().await?;
//! let operator = kopr::Operator::new(); // .resource(...)
//! let running = cluster.run(operator);
//! // create objects with cluster.client(), then await their state:
//! // kopr::testing::wait_for(&api, "name", timeout, |o| ...).await?;
//! running.stop().await?;
//! # Ok(()) }
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kopr_apiserver::{ApiServer, Config};
use kube::api::{Api, PostParams};
use kube::runtime::wait::Condition;
use serde::de::DeserializeOwned;

use crate::handling::errors::Error;
pub use crate::kits::faults::{FaultCounts, FaultProxy, Faults, RequestFilter};
use crate::operator::Operator;

/// A running in-process API server and a client for it.
///
/// Each `TestCluster` is its own server with in-memory storage, so tests run in parallel
/// without seeing each other's objects.
///
/// ```no_run
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// use kopr::testing::{TestCluster, wait_for};
/// use kopr::{Context, HandlerResult, Operator, Resource};
/// use kube::api::{Api, PostParams};
///
/// async fn label(ctx: Context<ConfigMap>) -> HandlerResult {
///     ctx.patch().label("seen", Some("yes"));
///     Ok(())
/// }
///
/// #[tokio::test]
/// async fn labels_new_config_maps() -> Result<(), kopr::Error> {
///     let cluster = TestCluster::start().await?;
///     let running = cluster.run(Operator::new().resource(Resource::<ConfigMap>::new().on_create(label)));
///     let config_maps: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
///     let mut settings = ConfigMap::default();
///     settings.metadata.name = Some("settings".into());
///     config_maps.create(&PostParams::default(), &settings).await?;
///     wait_for(&config_maps, "settings", Duration::from_secs(10), |c| {
///         c.and_then(|c| c.metadata.labels.as_ref()?.get("seen").cloned()).as_deref() == Some("yes")
///     })
///     .await?;
///     running.stop().await?;
///     cluster.shutdown().await;
///     Ok(())
/// }
/// ```
pub struct TestCluster {
    server: ApiServer,
    client: kube::Client,
}

/// Builds a client from kubeconfig text.
///
/// ```no_run
/// # async fn test(cluster: kopr::testing::TestCluster) -> Result<(), kopr::Error> {
/// let client = kopr::testing::client_from_yaml(&cluster.kubeconfig_yaml()).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::ClientConfig`] when the text is not a usable kubeconfig.
pub async fn client_from_yaml(kubeconfig: &str) -> Result<kube::Client, Error> {
    let invalid = |e: &dyn std::fmt::Display| Error::ClientConfig(e.to_string());
    let file = kube::config::Kubeconfig::from_yaml(kubeconfig).map_err(|e| invalid(&e))?;
    let config =
        kube::Config::from_custom_kubeconfig(file, &kube::config::KubeConfigOptions::default())
            .await
            .map_err(|e| invalid(&e))?;
    crate::client::build(config)
}

impl TestCluster {
    /// Starts an API server with in-memory storage on a random loopback port.
    ///
    /// # Errors
    /// [`Error::Config`] when the server cannot start.
    pub async fn start() -> Result<TestCluster, Error> {
        let server = ApiServer::start(Config::ephemeral())
            .await
            .map_err(|e| Error::Config(format!("starting the API server: {e}")))?;
        let client = client_from_yaml(&server.kubeconfig_yaml()).await?;
        Ok(TestCluster { server, client })
    }

    /// A client for the server.
    pub fn client(&self) -> kube::Client {
        self.client.clone()
    }

    /// The kubeconfig (YAML) pointing at the server.
    pub fn kubeconfig_yaml(&self) -> String {
        self.server.kubeconfig_yaml()
    }

    /// Applies the manifests at `path` (a file or a folder) as `kubectl apply` would, through
    /// [`crate::apply`]; returns every applied object.
    ///
    /// # Errors
    /// [`Error::Config`] naming the first object the server refused, or the file that could
    /// not be read or parsed.
    pub async fn apply(
        &self,
        path: impl Into<PathBuf>,
    ) -> Result<Vec<crate::kits::apply::ManifestApplied>, Error> {
        let applied = crate::kits::apply::apply_paths(&self.client, &[path.into()])
            .await
            .map_err(|e| Error::Config(e.to_string()))?;
        if let Some(refused) = applied.iter().find(|a| a.result.is_err()) {
            return Err(Error::Config(refused.to_string()));
        }
        Ok(applied)
    }

    /// Waits up to `timeout` for a Warning Event in `namespace` about the object `name` that
    /// `matches`, and returns it.
    ///
    /// # Errors
    /// [`Error::Config`] when none came in time; [`Error::Kube`] when listing Events failed.
    pub async fn wait_for_warning(
        &self,
        namespace: &str,
        name: &str,
        timeout: Duration,
        matches: impl Fn(&k8s_openapi::api::core::v1::Event) -> bool,
    ) -> Result<k8s_openapi::api::core::v1::Event, Error> {
        let events: Api<k8s_openapi::api::core::v1::Event> =
            Api::namespaced(self.client.clone(), namespace);
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let list = events.list(&Default::default()).await?;
            let found = list.items.into_iter().find(|e| {
                e.involved_object.name.as_deref() == Some(name)
                    && e.type_.as_deref() == Some("Warning")
                    && matches(e)
            });
            if let Some(event) = found {
                return Ok(event);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Config(format!(
                    "no matching Warning event about {namespace}/{name} within {timeout:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// kubectl against this server, as a user runs it (see [`Kubectl`]).
    ///
    /// # Errors
    /// [`Error::Io`] when its kubeconfig file cannot be written.
    pub fn kubectl(&self) -> Result<Kubectl, Error> {
        Kubectl::new(&self.kubeconfig_yaml())
    }

    /// The server itself (metrics, address, shutdown).
    pub fn server(&self) -> &ApiServer {
        &self.server
    }

    /// Creates a CRD and waits until it is established.
    ///
    /// ```no_run
    /// # use kube::CustomResource;
    /// # use schemars::JsonSchema;
    /// # use serde::{Deserialize, Serialize};
    /// # #[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
    /// # #[kube(group = "example.com", version = "v1", kind = "Greeting", namespaced)]
    /// # pub struct GreetingSpec { pub message: String }
    /// # async fn test(cluster: kopr::testing::TestCluster) -> Result<(), kopr::Error> {
    /// use kube::CustomResourceExt;
    /// cluster.install_crd(&Greeting::crd()).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Kube`] when the server refuses the CRD (say, it exists already),
    /// [`Error::Config`] when it is not established within 30 s.
    pub async fn install_crd(&self, crd: &CustomResourceDefinition) -> Result<(), Error> {
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        api.create(&PostParams::default(), crd).await?;
        let name = crd.metadata.name.clone().unwrap_or_default();
        let established = kube::runtime::conditions::is_crd_established();
        wait_for(&api, &name, Duration::from_secs(30), move |crd| {
            established.matches_object(crd)
        })
        .await?;
        Ok(())
    }

    /// A kubeconfig for this server presenting `token` instead of the admin's.
    pub fn kubeconfig_yaml_with_token(&self, token: &str) -> String {
        self.server.kubeconfig_yaml().replace(
            &format!("token: {}", self.server.token()),
            &format!("token: {token}"),
        )
    }

    /// Runs `operator` against this server on its own thread and runtime, as a separate process
    /// would run it, with the server's admin credentials. Admission handlers are served on
    /// loopback and registered with the server, as `dev` does.
    ///
    /// ```no_run
    /// # async fn test(cluster: kopr::testing::TestCluster, operator: kopr::Operator) -> Result<(), kopr::Error> {
    /// let running = cluster.run(operator);
    /// // ... create objects, wait for their state ...
    /// running.stop().await?; // as on SIGTERM; `kill()` as on a crash
    /// # Ok(()) }
    /// ```
    ///
    /// # Caveats
    /// The operator runs until stopped, killed or dropped (dropping the
    /// [`RunningOperator`] kills it); startup errors show in the result of
    /// [`stop`](RunningOperator::stop) or [`stop_after_exit`](RunningOperator::stop_after_exit).
    pub fn run(&self, operator: Operator) -> RunningOperator {
        self.run_with_kubeconfig(operator, self.server.kubeconfig_yaml())
    }

    /// Runs `operator` as the ServiceAccount `manifests` gives it, under the ClusterRole they
    /// generate (applied first), as it runs on a real cluster: a rule the manifests forgot is a
    /// 403, reported by the operator with a hint.
    ///
    /// ```no_run
    /// # async fn test(operator: kopr::Operator) -> Result<(), kopr::Error> {
    /// let cluster = kopr::testing::TestCluster::start().await?;
    /// let manifests = kopr::manifests::Manifests::new("greeting");
    /// let running = cluster.run_as_service_account(operator, &manifests).await?;
    /// running.stop().await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// When the RBAC objects cannot be applied or no token is issued.
    pub async fn run_as_service_account(
        &self,
        operator: Operator,
        manifests: &crate::manifests::Manifests,
    ) -> Result<RunningOperator, Error> {
        let account =
            crate::service_account::apply_rbac(&self.client, manifests, &operator).await?;
        let token = account.token(&self.client, 3600).await?;
        Ok(self.run_with_kubeconfig(operator, self.kubeconfig_yaml_with_token(&token)))
    }

    /// Runs `operator` through a [`FaultProxy`] in front of this server (with the admin's
    /// credentials), so that it meets the proxy's injected faults (see [`FaultProxy`] for how
    /// to set them up).
    pub fn run_through(&self, operator: Operator, proxy: &FaultProxy) -> RunningOperator {
        self.run_with_kubeconfig(operator, proxy.kubeconfig_yaml())
    }

    fn run_with_kubeconfig(&self, mut operator: Operator, kubeconfig: String) -> RunningOperator {
        if operator.serves_webhooks() && operator.webhooks.is_none() {
            // As `dev` does: served on loopback and registered with this server.
            operator = operator.webhooks(crate::webhooks::Webhooks::local());
        }
        let ready = Box::pin(operator.webhooks_ready());
        let (stop, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let (kill, kill_rx) = tokio::sync::oneshot::channel::<()>();
        let thread = std::thread::spawn(move || -> Result<(), Error> {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()?;
            let result = runtime.block_on(async move {
                let client = client_from_yaml(&kubeconfig).await?;
                let run = operator.run_until(client, async move {
                    let _ = stop_rx.await;
                });
                tokio::select! {
                    result = run => result,
                    Ok(()) = kill_rx => Ok(()),
                }
            });
            // Drops every task still running (handlers, daemons) without waiting: on a kill
            // this is the crash.
            runtime.shutdown_background();
            result
        });
        RunningOperator {
            stop: Some(stop),
            kill: Some(kill),
            thread: Some(thread),
            ready: Some(ready),
        }
    }

    /// Stops the server.
    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}

/// An operator running in the background, from [`TestCluster::run`] and its siblings.
/// Dropping it kills the operator.
///
/// ```no_run
/// # async fn test(cluster: kopr::testing::TestCluster, operator: fn() -> kopr::Operator) -> Result<(), kopr::Error> {
/// // A crash mid-way, then a restart: what was not written runs again.
/// cluster.run(operator()).kill().await;
/// let restarted = cluster.run(operator());
/// restarted.stop().await?;
/// # Ok(()) }
/// ```
pub struct RunningOperator {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    kill: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<Result<(), Error>>>,
    ready: Option<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>,
}

impl RunningOperator {
    /// Waits until the operator's webhook server serves and has registered its admission
    /// configurations and CRD conversions ([`Operator::webhooks_ready`]): objects written at
    /// a CRD's other versions before then meet a webhook the API server cannot reach yet.
    ///
    /// ```no_run
    /// # async fn test(cluster: kopr::testing::TestCluster, operator: kopr::Operator) {
    /// let mut running = cluster.run(operator);
    /// running.webhooks_ready().await;
    /// # }
    /// ```
    pub async fn webhooks_ready(&mut self) {
        if let Some(ready) = self.ready.take() {
            ready.await;
        }
    }

    async fn join(&mut self) -> Result<(), Error> {
        let Some(thread) = self.thread.take() else {
            return Ok(());
        };
        tokio::task::spawn_blocking(move || thread.join())
            .await
            .map_err(|e| Error::Config(format!("operator thread: {e}")))?
            .map_err(|_| Error::Config("the operator thread panicked".into()))?
    }

    /// Stops gracefully (as on SIGTERM) and returns the operator's result.
    ///
    /// # Errors
    /// The operator's own error (as [`Operator::run_until`] returns it), or
    /// [`Error::Config`] when its thread panicked.
    pub async fn stop(mut self) -> Result<(), Error> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.join().await
    }

    /// Waits for the operator to end by itself (e.g. after a failed startup) and returns its
    /// result, without asking it to stop.
    pub async fn stop_after_exit(mut self) -> Result<(), Error> {
        self.join().await
    }

    /// Kills the operator like a crashed process: running handlers and daemons are dropped
    /// mid-way and nothing is cleaned up.
    pub async fn kill(mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
        let _ = self.join().await;
    }
}

impl Drop for RunningOperator {
    fn drop(&mut self) {
        if let Some(kill) = self.kill.take() {
            let _ = kill.send(());
        }
    }
}

/// Waits until the object `name` satisfies `condition` (given `None` while it does not exist),
/// returning it. Fails after `timeout`.
///
/// ```no_run
/// # async fn test(cluster: kopr::testing::TestCluster) -> Result<(), kopr::Error> {
/// use std::time::Duration;
/// use k8s_openapi::api::core::v1::ConfigMap;
/// let config_maps: kube::Api<ConfigMap> = kube::Api::namespaced(cluster.client(), "default");
/// // Deleted: the condition sees None once the object is gone.
/// kopr::testing::wait_for(&config_maps, "settings", Duration::from_secs(10), |c| c.is_none()).await?;
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::Config`] when the timeout passes first or the watch fails.
pub async fn wait_for<K, F>(
    api: &Api<K>,
    name: &str,
    timeout: Duration,
    condition: F,
) -> Result<Option<K>, Error>
where
    K: kube::Resource + Clone + DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: Fn(Option<&K>) -> bool + Send,
{
    let wait = kube::runtime::wait::await_condition(api.clone(), name, condition);
    match tokio::time::timeout(timeout, wait).await {
        Ok(Ok(object)) => Ok(object),
        Ok(Err(error)) => Err(Error::Config(format!("waiting for {name}: {error}"))),
        Err(_) => Err(Error::Config(format!(
            "{name} did not reach the condition within {timeout:?}"
        ))),
    }
}

/// Log lines captured from every `tracing` event in the process ([`capture_logs`]).
///
/// ```no_run
/// # async fn test() -> Result<(), kopr::Error> {
/// use std::time::Duration;
/// let logs = kopr::testing::capture_logs();
/// // ... run an operator ...
/// let _line = logs.wait_for(&["Handler", "succeeded"], Duration::from_secs(10)).await?;
/// assert_eq!(logs.count(&["failed permanently"]), 0);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Logs {
    lines: Arc<Mutex<Vec<String>>>,
}

static LOGS: OnceLock<Logs> = OnceLock::new();

struct LineWriter {
    lines: Arc<Mutex<Vec<String>>>,
    buffer: Vec<u8>,
}

impl Write for LineWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.buffer.extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for LineWriter {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.buffer).trim_end().to_owned();
        if !text.is_empty() {
            eprintln!("{text}");
            self.lines
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(text);
        }
    }
}

/// Starts capturing logs (once per process; later calls return the same capture). Installs the
/// global `tracing` subscriber at info level (`RUST_LOG` overrides).
pub fn capture_logs() -> Logs {
    LOGS.get_or_init(|| {
        let logs = Logs {
            lines: Arc::new(Mutex::new(Vec::new())),
        };
        let lines = logs.lines.clone();
        let filter = tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| {
            tracing_subscriber::EnvFilter::new("info,kube=warn,hyper=warn,kopr_apiserver=warn,kopr_apiserver_core=warn,kopr_controllers=warn,kopr_kubelet=warn")
        });
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_ansi(false)
            .with_writer(move || LineWriter {
                lines: lines.clone(),
                buffer: Vec::new(),
            })
            .try_init();
        logs
    })
    .clone()
}

impl Logs {
    /// Every captured line so far.
    pub fn lines(&self) -> Vec<String> {
        self.lines.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// How many captured lines contain all of `needles`.
    pub fn count(&self, needles: &[&str]) -> usize {
        self.lines()
            .iter()
            .filter(|line| needles.iter().all(|n| line.contains(n)))
            .count()
    }

    /// Waits until a line containing all of `needles` has been logged.
    pub async fn wait_for(&self, needles: &[&str], timeout: Duration) -> Result<String, Error> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(line) = self
                .lines()
                .into_iter()
                .find(|line| needles.iter().all(|n| line.contains(n)))
            {
                return Ok(line);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(Error::Config(format!(
                    "no log line with {needles:?} within {timeout:?}"
                )));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// Runs an operator binary's `manifests` command with `args` (e.g. `--namespace`, or `--`
/// and the Deployment's extra `run` arguments) and parses the YAML documents it prints.
/// Fails with the command's standard error when it does not succeed.
///
/// ```no_run
/// let documents = kopr::testing::manifest_documents("target/debug/greeting", &[])?;
/// assert_eq!(documents[0]["kind"], "CustomResourceDefinition");
/// # Ok::<(), kopr::Error>(())
/// ```
pub fn manifest_documents(
    binary: impl AsRef<std::ffi::OsStr>,
    args: &[&str],
) -> Result<Vec<serde_json::Value>, Error> {
    let binary = binary.as_ref();
    let output = std::process::Command::new(binary)
        .arg("manifests")
        .args(args)
        .output()
        .map_err(|e| Error::Config(format!("running {}: {e}", binary.to_string_lossy())))?;
    if !output.status.success() {
        return Err(Error::Config(format!(
            "{} manifests failed ({}): {}",
            binary.to_string_lossy(),
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )));
    }
    serde_saphyr::from_multiple(&String::from_utf8_lossy(&output.stdout))
        .map_err(|e| Error::Config(format!("the manifests are not YAML: {e}")))
}

/// Applies the manifests under `path` as `dev --apply` does, expecting the server to refuse
/// every object (invalid samples), and returns the refusals' messages in file order. Fails
/// if the files cannot be read or an object was accepted.
pub async fn refusals(client: &kube::Client, path: PathBuf) -> Result<Vec<String>, Error> {
    let applied = crate::kits::apply::apply_paths(client, &[path])
        .await
        .map_err(|e| Error::Config(e.to_string()))?;
    applied
        .iter()
        .map(|a| match &a.result {
            Err(refusal) => Ok(refusal.to_string()),
            Ok(_) => Err(Error::Config(format!("{a}: accepted, expected a refusal"))),
        })
        .collect()
}

/// kubectl, run as a user runs it against a [`TestCluster`]: a kubeconfig in a
/// private temporary file (removed on drop) and the binary from the `KUBECTL`
/// environment variable, else `kubectl` on the `PATH`.
///
/// ```no_run
/// # async fn test(cluster: kopr::testing::TestCluster) -> Result<(), kopr::Error> {
/// let kubectl = cluster.kubectl()?;
/// let said = kubectl.run(&["apply", "-f", "-"], Some("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")).await?;
/// assert_eq!(said, "configmap/c created\n");
/// # Ok(()) }
/// ```
pub struct Kubectl {
    kubeconfig: PathBuf,
    binary: PathBuf,
}

impl Kubectl {
    fn new(kubeconfig_yaml: &str) -> Result<Kubectl, Error> {
        use std::os::unix::fs::OpenOptionsExt;
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let kubeconfig =
            std::env::temp_dir().join(format!("kopr-test-kubeconfig-{}-{n}", std::process::id()));
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&kubeconfig)?;
        file.write_all(kubeconfig_yaml.as_bytes())?;
        let binary = std::env::var_os("KUBECTL")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from("kubectl"));
        Ok(Kubectl { kubeconfig, binary })
    }

    /// The kubeconfig file kubectl is run with.
    pub fn kubeconfig(&self) -> &std::path::Path {
        &self.kubeconfig
    }

    /// Runs kubectl with `args` (and `stdin`, if given) on a blocking thread.
    ///
    /// # Errors
    /// [`Error::Io`] if kubectl cannot be started, [`Error::Config`] with its
    /// standard error if it exits unsuccessfully.
    pub async fn run(&self, args: &[&str], stdin: Option<&str>) -> Result<String, Error> {
        let mut command = std::process::Command::new(&self.binary);
        command
            .arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .args(args)
            .stdin(if stdin.is_some() {
                std::process::Stdio::piped()
            } else {
                std::process::Stdio::null()
            })
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let input = stdin.map(str::to_owned);
        let shown = args.join(" ");
        let output = tokio::task::spawn_blocking(move || {
            let mut child = command.spawn()?;
            if let (Some(text), Some(mut pipe)) = (input, child.stdin.take()) {
                pipe.write_all(text.as_bytes())?;
            }
            child.wait_with_output()
        })
        .await
        .map_err(|e| Error::Config(format!("kubectl {shown}: {e}")))??;
        if output.status.success() {
            Ok(String::from_utf8_lossy(&output.stdout).into_owned())
        } else {
            Err(Error::Config(format!(
                "kubectl {shown} failed ({}): {}{}",
                output.status,
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            )))
        }
    }
}

impl Kubectl {
    /// `kubectl apply -f -` of `manifest`, client-side (kubectl's three-way
    /// patch) or with `--server-side`. Returns what kubectl printed.
    ///
    /// # Errors
    /// As [`Kubectl::run`].
    pub async fn apply(&self, manifest: &str, server_side: bool) -> Result<String, Error> {
        let mut args = vec!["apply", "-f", "-"];
        if server_side {
            args.push("--server-side");
        }
        self.run(&args, Some(manifest)).await
    }
}

/// The text of the file at `path` with each `(from, to)` edit made: a sample
/// as a user edits it before applying it again. Each `from` must occur once.
///
/// # Errors
/// [`Error::Io`] if the file cannot be read, [`Error::Config`] unless each
/// `from` occurs exactly once.
pub fn edited(path: impl AsRef<std::path::Path>, edits: &[(&str, &str)]) -> Result<String, Error> {
    let path = path.as_ref();
    let mut text = std::fs::read_to_string(path)?;
    for (from, to) in edits {
        match text.matches(from).count() {
            1 => text = text.replacen(from, to, 1),
            n => {
                return Err(Error::Config(format!(
                    "{} has {n} occurrences of {from:?}, not one",
                    path.display()
                )));
            }
        }
    }
    Ok(text)
}

impl Drop for Kubectl {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.kubeconfig);
    }
}
