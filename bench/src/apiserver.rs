//! The API server benchmark.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::json;

/// Options of `kopr-bench apiserver`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Objects created in the create benchmark.
    #[arg(long, default_value_t = 5000)]
    creates: usize,
    /// Updates in each update benchmark.
    #[arg(long, default_value_t = 2000)]
    updates: usize,
    /// Objects held for the memory figure.
    #[arg(long, default_value_t = 10_000)]
    held: usize,
    /// Watchers in the watch benchmark.
    #[arg(long, default_value_t = 100)]
    watchers: usize,
    /// Run the server with `--in-memory`.
    #[arg(long)]
    in_memory: bool,
}

/// A `kopr apiserver` child process on a data directory of its own, killed
/// (and the directory removed) on drop.
pub(crate) struct Server {
    pub(crate) child: Child,
    pub(crate) kubeconfig: PathBuf,
    _dir: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The `kopr` binary: `explicit`, else the one next to this executable.
pub(crate) fn kopr_binary(explicit: Option<&Path>) -> anyhow::Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    let me = std::env::current_exe()?;
    let p = me.with_file_name("kopr");
    if !p.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p kopr-cli` or pass --kopr",
            p.display()
        );
    }
    Ok(p)
}

/// Starts `kopr apiserver` on an empty data dir; returns it and the time
/// until it reported ready.
fn start(args: &Args) -> anyhow::Result<(Server, Duration)> {
    let extra: &[&str] = if args.in_memory {
        &["--in-memory"]
    } else {
        &[]
    };
    start_server(&kopr_binary(args.kopr.as_deref())?, extra)
}

/// Starts `kopr apiserver` (with `extra` arguments) on an empty data dir;
/// returns it and the time until it reported ready.
pub(crate) fn start_server(kopr: &Path, extra: &[&str]) -> anyhow::Result<(Server, Duration)> {
    let dir = std::env::temp_dir().join(format!(
        "kopr-bench-{}-{}",
        std::process::id(),
        rand_suffix()
    ));
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(&dir)?;
    let mut cmd = Command::new(kopr);
    cmd.args(["apiserver", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(&dir)
        .args(extra);
    let started = Instant::now();
    let mut child = cmd.env("RUST_LOG", "warn").stdout(Stdio::piped()).spawn()?;
    let stdout = child.stdout.take().context("stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    lines.next().context("the server printed nothing")??;
    let ready = started.elapsed();
    std::thread::spawn(move || for _ in lines.by_ref() {});
    Ok((
        Server {
            child,
            kubeconfig: dir.join("kubeconfig"),
            _dir: TempDir(dir),
        },
        ready,
    ))
}

fn rand_suffix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// A kube-rs client for the server, from the kubeconfig it wrote.
pub(crate) async fn client(server: &Server) -> anyhow::Result<kube::Client> {
    let yaml = std::fs::read_to_string(&server.kubeconfig)?;
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&yaml)?;
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default()).await?;
    Ok(kube::Client::try_from(config)?)
}

/// The twenty values of object `i` in the create comparison: `s0..s9` strings and `n0..n9`
/// numbers (as `number` makes them: JSON numbers in a custom resource, strings in a ConfigMap).
pub(crate) fn twenty_fields(
    i: usize,
    number: impl Fn(usize) -> serde_json::Value,
) -> serde_json::Map<String, serde_json::Value> {
    let mut fields = serde_json::Map::new();
    for f in 0..10 {
        fields.insert(format!("s{f}"), json!(format!("value-{i}-{f}")));
        fields.insert(format!("n{f}"), number(i + f));
    }
    fields
}

/// The ConfigMap side of the create comparison: the custom resource's twenty values as its
/// data, so that both sides carry the same payload and the ratio measures the custom-resource
/// machinery (pruning, defaulting, schema and CEL validation), not object size.
fn twenty_field_config_map(i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": format!("c-{i}"), "labels": {"bench": "yes"}},
        "data": twenty_fields(i, |n| json!(n.to_string())),
    }))
    .unwrap_or_default()
}

fn config_map(name: &str, i: usize) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"bench": "yes"}},
        "data": {"index": i.to_string(), "payload": "x".repeat(64)}
    }))
    .unwrap_or_default()
}

/// Peak resident set size of a process (VmHWM), in MiB.
pub(crate) fn peak_rss_mib(pid: u32) -> f64 {
    memory_mib(pid, "VmHWM:")
}

/// A memory figure of `/proc/PID/status` (`VmRSS:`, `VmHWM:`, …), in MiB.
pub(crate) fn memory_mib(pid: u32, field: &str) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map(|kb| kb / 1024.0)
        .unwrap_or(f64::NAN)
}

/// CPU seconds (user + system) a process has used so far.
pub(crate) fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or("");
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of /proc/PID/stat (11 and 12 after the name).
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs `total` operations over `clients` concurrent tasks; returns ops/s.
pub(crate) async fn concurrent<F, Fut>(clients: usize, total: usize, op: F) -> anyhow::Result<f64>
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let op = Arc::new(op);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..clients {
        let op = op.clone();
        tasks.push(tokio::spawn(async move {
            let mut i = c;
            while i < total {
                op(i).await?;
                i += clients;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(total as f64 / started.elapsed().as_secs_f64())
}

/// The `p`-quantile (0..=1) of sorted values.
pub(crate) fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let idx = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[idx.min(sorted.len() - 1)]
}

/// Runs every figure and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let mut ready_ms = Vec::new();
    for _ in 0..5 {
        let (_server, ready) = start(&args)?;
        ready_ms.push(ready.as_secs_f64() * 1000.0);
    }
    ready_ms.sort_by(f64::total_cmp);

    let (server, _) = start(&args)?;
    let c = client(&server).await?;

    // Creates with 16 clients: ConfigMaps and custom resources (20-field schema, one CEL rule)
    // carrying the same twenty values, in alternating rounds, so that noise from other processes on a shared machine falls on
    // both alike; the figures are medians over the rounds.
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let cr_api = custom_resource_api(&c).await?;
    let rounds = 5usize;
    let per_round = (args.creates / rounds).max(1);
    let (mut cm_rates, mut cr_rates, mut ratios) = (Vec::new(), Vec::new(), Vec::new());
    let (mut cm_cpu, mut cr_cpu) = (0.0, 0.0);
    let pid = server.child.id();
    for round in 0..rounds {
        let a = api.clone();
        let offset = round * per_round;
        let cpu_before = cpu_seconds(pid);
        let cm = concurrent(16, per_round, move |i| {
            let a = a.clone();
            async move {
                let i = offset + i;
                a.create(&PostParams::default(), &twenty_field_config_map(i))
                    .await?;
                Ok(())
            }
        })
        .await?;
        let cpu_between = cpu_seconds(pid);
        let cr = custom_resource_creates(&cr_api, offset, per_round).await?;
        cm_cpu += cpu_between - cpu_before;
        cr_cpu += cpu_seconds(pid) - cpu_between;
        cm_rates.push(cm);
        cr_rates.push(cr);
        ratios.push(cr / cm);
    }
    for list in [&mut cm_rates, &mut cr_rates, &mut ratios] {
        list.sort_by(f64::total_cmp);
    }
    let creates_16 = percentile(&cm_rates, 0.5);
    let cr_rate = percentile(&cr_rates, 0.5);
    let cr_ratio = percentile(&ratios, 0.5);

    // Updates with 1 and 16 clients (merge patches of existing objects).
    let mut updates = Vec::new();
    for clients in [1usize, 16] {
        let a = api.clone();
        let n = args.updates.min(args.creates);
        let rate = concurrent(clients, n, move |i| {
            let a = a.clone();
            async move {
                let patch = json!({"data": {"updated": format!("{clients}-{i}")}});
                a.patch(
                    &format!("c-{i}"),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
                Ok(())
            }
        })
        .await?;
        updates.push((clients, rate));
    }

    // Watch delivery latency with many watchers.
    let ns_api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    ns_api
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "watched"}}))?,
        )
        .await?;
    let watched: Api<ConfigMap> = Api::namespaced(c.clone(), "watched");
    let start_rv = watched
        .list(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    let sent: Arc<std::sync::Mutex<std::collections::HashMap<String, Instant>>> = Arc::default();
    let events = 200usize;
    let mut watchers = Vec::new();
    for _ in 0..args.watchers {
        let w = watched.clone();
        let sent = sent.clone();
        let rv = start_rv.clone();
        watchers.push(tokio::spawn(async move {
            let mut lat = Vec::with_capacity(events);
            let mut stream = w.watch(&WatchParams::default(), &rv).await?.boxed();
            while lat.len() < events {
                match tokio::time::timeout(Duration::from_secs(30), stream.next()).await {
                    Ok(Some(Ok(WatchEvent::Added(o)))) => {
                        let name = o.metadata.name.unwrap_or_default();
                        let at = sent.lock().ok().and_then(|m| m.get(&name).copied());
                        if let Some(at) = at {
                            lat.push(at.elapsed().as_secs_f64() * 1000.0);
                        }
                    }
                    Ok(Some(Ok(_))) => {}
                    _ => bail!("watch ended early"),
                }
            }
            anyhow::Ok(lat)
        }));
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    for i in 0..events {
        let name = format!("w-{i}");
        if let Ok(mut m) = sent.lock() {
            m.insert(name.clone(), Instant::now());
        }
        watched
            .create(&PostParams::default(), &config_map(&name, i))
            .await?;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut latencies = Vec::new();
    for w in watchers {
        latencies.extend(w.await??);
    }
    latencies.sort_by(f64::total_cmp);
    drop(server);

    // Peak RSS holding many ConfigMaps (a fresh server).
    let (server, _) = start(&args)?;
    let c = client(&server).await?;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    let a = api.clone();
    concurrent(16, args.held, move |i| {
        let a = a.clone();
        async move {
            a.create(&PostParams::default(), &config_map(&format!("h-{i}"), i))
                .await?;
            Ok(())
        }
    })
    .await?;
    let listed = api.list(&ListParams::default()).await?.items.len();
    let rss = peak_rss_mib(server.child.id());

    println!("| figure | result |");
    println!("|---|---|");
    println!(
        "| ConfigMap creates/s, 16 clients ({} objects with 20 data keys in {rounds} rounds) | {creates_16:.0} |",
        per_round * rounds
    );
    println!(
        "| custom resource creates/s, 16 clients (20-field schema, 1 CEL rule) | {cr_rate:.0} (ratio to ConfigMaps {cr_ratio:.2}, median of {rounds} alternating rounds) |"
    );
    let objects = (per_round * rounds) as f64;
    println!(
        "| server CPU per create: ConfigMap / custom resource | {:.0} µs / {:.0} µs (ratio {:.2}) |",
        cm_cpu / objects * 1e6,
        cr_cpu / objects * 1e6,
        cm_cpu / cr_cpu
    );
    for (clients, rate) in &updates {
        println!(
            "| updates/s, {clients} client{} | {rate:.0} |",
            if *clients == 1 { "" } else { "s" }
        );
    }
    println!(
        "| watch delivery latency, {} watchers, {} events: p50 / p99 | {:.2} ms / {:.2} ms |",
        args.watchers,
        events,
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99)
    );
    println!(
        "| time to ready, empty data dir (median of 5, process start to ready line) | {:.0} ms |",
        percentile(&ready_ms, 0.5)
    );
    println!("| peak RSS holding {listed} ConfigMaps (after a full list) | {rss:.0} MiB |");
    Ok(())
}

/// The schema of the twenty fields `twenty_fields` fills: `s0..s9` strings, `n0..n9`
/// integers.
pub(crate) fn twenty_field_properties() -> serde_json::Map<String, serde_json::Value> {
    let mut props = serde_json::Map::new();
    for i in 0..10 {
        props.insert(format!("s{i}"), json!({"type": "string", "maxLength": 64}));
        props.insert(format!("n{i}"), json!({"type": "integer", "minimum": 0}));
    }
    props
}

/// The benchmark CRD: 20 typed fields, one CEL rule.
fn bench_crd() -> serde_json::Value {
    let props = twenty_field_properties();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "benchitems.kopr.dev"},
        "spec": {
            "group": "kopr.dev", "scope": "Namespaced",
            "names": {"plural": "benchitems", "singular": "benchitem", "kind": "BenchItem"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object",
                "properties": {"spec": {
                    "type": "object", "properties": props,
                    "x-kubernetes-validations": [{"rule": "self.n0 <= self.n1", "message": "n0 must not exceed n1"}]
                }}
            }}}]
        }
    })
}

/// Installs the benchmark CRD and returns the API for its objects once it is served.
async fn custom_resource_api(c: &kube::Client) -> anyhow::Result<Api<kube::api::DynamicObject>> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    use kube::api::{ApiResource, GroupVersionKind};
    let crds: Api<CustomResourceDefinition> = Api::all(c.clone());
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(bench_crd())?,
    )
    .await?;
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kopr.dev", "v1", "BenchItem"),
        "benchitems",
    );
    let api = Api::namespaced_with(c.clone(), "default", &ar);
    // Wait until the new API answers.
    let deadline = Instant::now() + Duration::from_secs(10);
    while api.list(&ListParams::default().limit(1)).await.is_err() {
        if Instant::now() > deadline {
            bail!("the benchmark CRD was not served within 10 s");
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    Ok(api)
}

/// Creates `total` custom resources named from `offset` on; returns creates/s.
async fn custom_resource_creates(
    api: &Api<kube::api::DynamicObject>,
    offset: usize,
    total: usize,
) -> anyhow::Result<f64> {
    use kube::api::DynamicObject;
    let api = api.clone();
    concurrent(16, total, move |i| {
        let api = api.clone();
        let i = offset + i;
        async move {
            let spec = twenty_fields(i, |n| json!(n));
            let obj: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "kopr.dev/v1", "kind": "BenchItem",
                "metadata": {"name": format!("b-{i}")}, "spec": spec
            }))?;
            api.create(&PostParams::default(), &obj).await?;
            Ok(())
        }
    })
    .await
}
