//! `kopr-bench compare-operators`: the same workload against kopr, Kopf and a hand-written
//! kube-rs controller, each a fresh process against one `kopr apiserver`.
//!
//! Per operator and run, in a fresh namespace: N `BenchItem`s are created by concurrent
//! creators, then each item's spec is updated (merge patch). An item is handled when its
//! `status.result` and its ConfigMap child's `data.result` both equal `f(spec)`, as seen by the
//! harness's watches. Per phase: wall time from the first request to the last item handled,
//! request→handled latencies, the operator's peak RSS and CPU time, and the API requests of
//! everyone but the harness per object. The `ceiling` runs no operator: the harness itself
//! makes an operator's two writes (the child, the status) right after each request, which
//! measures what the API server allows for the workload in the same session.

pub(crate) mod cluster;
pub(crate) mod operators;
mod report;
pub(crate) mod tracker;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kopr_bench::workload::{BenchItem, BenchItemSpec, RESULT_KEY, result_of};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;

use cluster::ApiServer;
use operators::{Kind, Operator, Programs};
use tracker::Tracker;

/// The operators compared unless told otherwise.
pub(crate) const DEFAULT_OPERATORS: &str = "kopr,kopr-reconcile,kopf,kube-rs,ceiling";

/// The User-Agent of the ceiling's writes (the harness's own are not counted).
const CEILING_AGENT: &str = "kopr-bench-ceiling";

/// Options of `kopr-bench compare-operators`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Objects created (and then updated) per operator and run.
    #[arg(long, default_value_t = 2000)]
    objects: usize,
    /// Runs per operator; the order of the operators rotates from run to run.
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Concurrent clients creating (and updating) the objects.
    #[arg(long, default_value_t = 16)]
    creators: usize,
    /// The operators to compare, in the order of the first run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = DEFAULT_OPERATORS
    )]
    operators: Vec<String>,
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// The directory with `kopr-operator` and `kube-rs-operator` (default: this one's).
    #[arg(long)]
    bin_dir: Option<PathBuf>,
    /// The virtual environment with Kopf, the kubernetes client and matplotlib.
    #[arg(long, default_value = "bench/.venv")]
    venv: PathBuf,
    /// Kopf's operator.
    #[arg(long, default_value = "bench/operators/kopf_operator.py")]
    kopf_script: PathBuf,
    /// The plotting script (run with the virtual environment's Python).
    #[arg(long, default_value = "bench/operators/plot.py")]
    plot_script: PathBuf,
    /// Where the table, the plot and the raw figures are written.
    #[arg(long, default_value = "bench/results")]
    results: PathBuf,
    /// Scratch space: the server's data directory and every process's log.
    #[arg(long, default_value = "target/compare-operators")]
    work_dir: PathBuf,
    /// Give up on a phase when no object was handled for this many seconds.
    #[arg(long, default_value_t = 120)]
    stall_timeout: u64,
}

/// The figures of one phase (create or update) of one run.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseFigures {
    /// First request sent → last object handled, in seconds.
    pub wall_s: f64,
    /// Objects handled per second of wall time.
    pub throughput: f64,
    /// Median request→handled latency, ms.
    pub p50_ms: f64,
    /// 99th percentile request→handled latency, ms.
    pub p99_ms: f64,
    /// The operator's peak RSS since it started, at the end of the phase, MiB.
    pub peak_rss_mib: f64,
    /// The operator's CPU time during the phase (until requests settled), seconds.
    pub cpu_s: f64,
    /// The API server's CPU time during the phase, seconds.
    pub server_cpu_s: f64,
    /// The harness's own CPU time during the phase (senders and watches), seconds.
    pub harness_cpu_s: f64,
    /// Requests served to anyone but the harness during the phase.
    pub requests: u64,
    /// `requests` per object.
    pub requests_per_object: f64,
}

/// One operator's run.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// The operator's short name.
    pub operator: &'static str,
    /// The run, from 1.
    pub run: usize,
    /// Whether every object was handled and checked out.
    pub ok: bool,
    /// Why not.
    pub error: Option<String>,
    /// The create phase.
    pub create: Option<PhaseFigures>,
    /// The update phase.
    pub update: Option<PhaseFigures>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Create,
    Update,
}

const WARMUP: &str = "warmup";
const WARMUP_VALUE: i64 = -1;

fn item_name(i: usize) -> String {
    format!("item-{i:05}")
}

struct Bench {
    args: Args,
    server: ApiServer,
    client: kube::Client,
    /// The client of the ceiling's operator-like writes.
    ceiling: kube::Client,
    programs: Programs,
    ticks: f64,
    logs: PathBuf,
}

/// Runs the comparison; fails (after writing everything) when any run failed.
pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.objects == 0 || args.runs == 0 || args.creators == 0 {
        bail!("--objects, --runs and --creators must be at least 1");
    }
    let selected: Vec<Kind> = args
        .operators
        .iter()
        .map(|name| Kind::parse(name))
        .collect::<anyhow::Result<_>>()?;
    let here = std::env::current_exe()?;
    let bin_dir = match &args.bin_dir {
        Some(dir) => dir.clone(),
        None => here
            .parent()
            .context("this program's directory")?
            .to_owned(),
    };
    let kopr = args.kopr.clone().unwrap_or_else(|| bin_dir.join("kopr"));
    let programs = Programs {
        bin_dir,
        venv: args.venv.clone(),
        kopf_script: args.kopf_script.clone(),
    };
    programs.check()?;
    let versions = report::Versions::collect(&args.venv, &programs.bin_dir.join("kopr-operator"))?;

    let _ = std::fs::remove_dir_all(&args.work_dir);
    let logs = args.work_dir.join("logs");
    std::fs::create_dir_all(&logs)?;
    let server = ApiServer::start(
        &kopr,
        &args.work_dir.join("apiserver"),
        &logs.join("apiserver.log"),
    )?;
    eprintln!("kopr apiserver at {}", server.url);
    let client = cluster::harness_client(&server.kubeconfig).await?;
    let ceiling = cluster::client_as(&server.kubeconfig, CEILING_AGENT).await?;
    cluster::install_crd(&client).await?;

    let bench = Bench {
        args,
        server,
        client,
        ceiling,
        programs,
        ticks: operators::clock_ticks(),
        logs,
    };
    let mut results = Vec::new();
    for run in 1..=bench.args.runs {
        let mut order = selected.clone();
        let shift = (run - 1) % order.len().max(1);
        order.rotate_left(shift);
        for kind in order {
            let result = bench.run_one(kind, run).await;
            eprintln!("{}", report::run_line(&result));
            results.push(result);
        }
    }

    let summary = report::Summary::new(&bench.args, &selected, versions, results);
    summary.write(
        &bench.args.results,
        &bench.args.venv,
        &bench.args.plot_script,
    )?;
    summary.print();
    let failed: Vec<&RunResult> = summary.results.iter().filter(|r| !r.ok).collect();
    if !failed.is_empty() {
        bail!("{} run(s) failed", failed.len());
    }
    Ok(())
}

impl Bench {
    async fn run_one(&self, kind: Kind, run: usize) -> RunResult {
        let namespace = format!("bench-{run}-{}", kind.name());
        let log = self.logs.join(format!("{namespace}.log"));
        eprintln!(
            "run {run}: {} (namespace {namespace}, log {})",
            kind.name(),
            log.display()
        );
        let mut result = RunResult {
            operator: kind.name(),
            run,
            ok: false,
            error: None,
            create: None,
            update: None,
        };
        let outcome = async {
            cluster::create_namespace(&self.client, &namespace).await?;
            let tracker = Tracker::start(&self.client, &namespace);
            let outcome = self
                .measure(kind, &namespace, &tracker, &log, &mut result)
                .await;
            tracker.stop();
            outcome
        }
        .await;
        match outcome {
            Ok(()) => result.ok = true,
            Err(error) => result.error = Some(format!("{error:#}")),
        }
        if let Err(error) =
            cluster::delete_namespace(&self.client, &namespace, Duration::from_secs(600)).await
        {
            result.ok = false;
            let previous = result
                .error
                .take()
                .map(|e| format!("{e}; "))
                .unwrap_or_default();
            result.error = Some(format!("{previous}cleaning up: {error:#}"));
        }
        result
    }

    async fn measure(
        &self,
        kind: Kind,
        namespace: &str,
        tracker: &Tracker,
        log: &std::path::Path,
        result: &mut RunResult,
    ) -> anyhow::Result<()> {
        let mut operator = match kind {
            Kind::Ceiling => None,
            _ => Some(Operator::start(
                &self.programs,
                kind,
                &self.server.kubeconfig,
                log,
            )?),
        };
        // Warm up: the operator is watching once it has handled one item.
        let items: Api<BenchItem> = Api::namespaced(self.client.clone(), namespace);
        tracker.begin_phase();
        tracker.expect(WARMUP, result_of(WARMUP_VALUE));
        let warmup = BenchItem::new(
            WARMUP,
            BenchItemSpec {
                value: WARMUP_VALUE,
            },
        );
        let created = items.create(&PostParams::default(), &warmup).await?;
        if operator.is_none() {
            self.handle(
                namespace,
                Phase::Create,
                WARMUP,
                WARMUP_VALUE,
                created.metadata.uid,
            )
            .await?;
        }
        tracker
            .wait_for(1, Duration::from_secs(120), || check_alive(&mut operator))
            .await
            .context("warming up")?;
        if !self.settle().await?.1 {
            bail!("the operator kept making requests after handling the warm-up object");
        }

        let (create, create_settled) = self
            .phase(Phase::Create, namespace, tracker, &mut operator)
            .await?;
        result.create = Some(create);
        let (update, update_settled) = self
            .phase(Phase::Update, namespace, tracker, &mut operator)
            .await?;
        result.update = Some(update);
        let problems = self.verify(namespace).await?;
        if let Some(operator) = operator {
            operator.kill();
        }
        if !(create_settled && update_settled) {
            bail!(
                "the operator kept making requests for 30 s after every object was handled \
                 (the phase's figures include them)"
            );
        }
        if !problems.is_empty() {
            bail!(
                "{} object(s) not handled correctly, e.g. {}",
                problems.len(),
                problems
                    .iter()
                    .take(3)
                    .cloned()
                    .collect::<Vec<_>>()
                    .join("; ")
            );
        }
        Ok(())
    }

    async fn phase(
        &self,
        phase: Phase,
        namespace: &str,
        tracker: &Tracker,
        operator: &mut Option<Operator>,
    ) -> anyhow::Result<(PhaseFigures, bool)> {
        let n = self.args.objects;
        let before = cluster::request_counts(&self.client).await?;
        let cpu_of = |operator: &Option<Operator>| match operator {
            Some(operator) => operators::cpu_seconds(operator.pid(), self.ticks),
            None => Ok(0.0),
        };
        let cpu_before = cpu_of(operator)?;
        let server_cpu_before = operators::cpu_seconds(self.server.pid(), self.ticks)?;
        let harness_cpu_before = operators::cpu_seconds(std::process::id(), self.ticks)?;
        tracker.begin_phase();
        let started = Instant::now();
        self.send_all(phase, namespace, tracker, operator.is_none())
            .await?;
        let last = tracker
            .wait_for(n, Duration::from_secs(self.args.stall_timeout), || {
                check_alive(operator)
            })
            .await
            .with_context(|| match phase {
                Phase::Create => "create phase",
                Phase::Update => "update phase",
            })?;
        let wall = last.duration_since(started).as_secs_f64();
        let latencies = tracker.latencies_ms();
        let (after, settled) = self.settle().await?;
        let cpu_after = cpu_of(operator)?;
        let server_cpu_after = operators::cpu_seconds(self.server.pid(), self.ticks)?;
        let harness_cpu_after = operators::cpu_seconds(std::process::id(), self.ticks)?;
        let requests = cluster::requests_between(&before, &after);
        let figures = PhaseFigures {
            wall_s: wall,
            throughput: n as f64 / wall,
            p50_ms: report::percentile(&latencies, 0.50),
            p99_ms: report::percentile(&latencies, 0.99),
            peak_rss_mib: match operator {
                Some(operator) => operator.peak_rss_mib()?,
                None => 0.0,
            },
            cpu_s: cpu_after - cpu_before,
            server_cpu_s: server_cpu_after - server_cpu_before,
            harness_cpu_s: harness_cpu_after - harness_cpu_before,
            requests,
            requests_per_object: requests as f64 / n as f64,
        };
        Ok((figures, settled))
    }

    /// Creates (or updates) every item from concurrent clients, telling the tracker what to
    /// expect just before each request; as the `ceiling`, each client then makes the
    /// operator's writes for the item itself.
    async fn send_all(
        &self,
        phase: Phase,
        namespace: &str,
        tracker: &Tracker,
        ceiling: bool,
    ) -> anyhow::Result<()> {
        let n = self.args.objects;
        let next = Arc::new(AtomicUsize::new(0));
        let items: Api<BenchItem> = Api::namespaced(self.client.clone(), namespace);
        let senders = (0..self.args.creators).map(|_| {
            let next = next.clone();
            let items = items.clone();
            async move {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        return anyhow::Ok(());
                    }
                    let name = item_name(i);
                    let value = match phase {
                        Phase::Create => i as i64,
                        Phase::Update => (i + n) as i64,
                    };
                    tracker.expect(&name, result_of(value));
                    let uid = send_one(&items, phase, &name, value).await?;
                    if ceiling {
                        self.handle(namespace, phase, &name, value, uid).await?;
                    }
                }
            }
        });
        futures::future::try_join_all(senders).await?;
        Ok(())
    }

    /// Waits until nobody but the harness has made a request for a second, and returns the
    /// counters then, and whether requests did stop (not when they still go on after 30 s: an
    /// operator that keeps writing after everything is handled).
    async fn settle(&self) -> anyhow::Result<(HashMap<String, u64>, bool)> {
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = cluster::request_counts(&self.client).await?;
        let mut quiet_since = Instant::now();
        loop {
            tokio::time::sleep(Duration::from_millis(250)).await;
            let now = cluster::request_counts(&self.client).await?;
            if cluster::requests_between(&last, &now) > 0 {
                if Instant::now() > deadline {
                    return Ok((now, false));
                }
                quiet_since = Instant::now();
                last = now;
            } else if quiet_since.elapsed() >= Duration::from_secs(1) {
                return Ok((now, true));
            }
        }
    }

    /// The ceiling's stand-in for an operator handling item `name` (`uid`, when the create's
    /// answer gave it): the owned ConfigMap child created (patched on update), then
    /// `status.result` patched: kopr's operator's two writes.
    async fn handle(
        &self,
        namespace: &str,
        phase: Phase,
        name: &str,
        value: i64,
        uid: Option<String>,
    ) -> anyhow::Result<()> {
        let result = result_of(value);
        let children: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.ceiling.clone(), namespace);
        let items: Api<BenchItem> = Api::namespaced(self.ceiling.clone(), namespace);
        match phase {
            Phase::Create => {
                let uid = match uid {
                    Some(uid) => uid,
                    None => items.get(name).await?.metadata.uid.unwrap_or_default(),
                };
                let child = serde_json::from_value(serde_json::json!({
                    "metadata": {
                        "name": name,
                        "ownerReferences": [{
                            "apiVersion": format!("{}/v1", kopr_bench::workload::GROUP),
                            "kind": "BenchItem",
                            "name": name,
                            "uid": uid,
                            "controller": true,
                            "blockOwnerDeletion": true,
                        }],
                    },
                    "data": {RESULT_KEY: result},
                }))?;
                children.create(&PostParams::default(), &child).await?;
            }
            Phase::Update => {
                let patch = serde_json::json!({"data": {RESULT_KEY: result}});
                children
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
        }
        let status = serde_json::json!({"status": {"result": result}});
        items
            .patch_status(name, &PatchParams::default(), &Patch::Merge(&status))
            .await?;
        Ok(())
    }

    /// Checks every item and its child after the update phase; returns what is wrong.
    async fn verify(&self, namespace: &str) -> anyhow::Result<Vec<String>> {
        let n = self.args.objects;
        let items: Api<BenchItem> = Api::namespaced(self.client.clone(), namespace);
        let children: Api<k8s_openapi::api::core::v1::ConfigMap> =
            Api::namespaced(self.client.clone(), namespace);
        let items: HashMap<String, BenchItem> = items
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|i| (i.metadata.name.clone().unwrap_or_default(), i))
            .collect();
        let children: HashMap<String, k8s_openapi::api::core::v1::ConfigMap> = children
            .list(&ListParams::default())
            .await?
            .items
            .into_iter()
            .map(|c| (c.metadata.name.clone().unwrap_or_default(), c))
            .collect();
        let mut problems = Vec::new();
        for i in 0..n {
            let name = item_name(i);
            let expected = result_of((i + n) as i64);
            let Some(item) = items.get(&name) else {
                problems.push(format!("{name}: missing"));
                continue;
            };
            let status = item.status.as_ref().and_then(|s| s.result.as_deref());
            if status != Some(expected.as_str()) {
                problems.push(format!(
                    "{name}: status.result is {status:?}, not {expected:?}"
                ));
            }
            let Some(child) = children.get(&name) else {
                problems.push(format!("{name}: no ConfigMap child"));
                continue;
            };
            let data = child.data.as_ref().and_then(|d| d.get(RESULT_KEY));
            if data.map(String::as_str) != Some(expected.as_str()) {
                problems.push(format!(
                    "{name}: child data.result is {data:?}, not {expected:?}"
                ));
            }
            let uid = item.metadata.uid.as_deref().unwrap_or_default();
            let owned = child
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|r| r.uid == uid);
            if !owned {
                problems.push(format!(
                    "{name}: the child has no owner reference to the item"
                ));
            }
        }
        Ok(problems)
    }
}

/// Fails if the operator (when there is one) has exited.
fn check_alive(operator: &mut Option<Operator>) -> anyhow::Result<()> {
    match operator {
        Some(operator) => operator.check_alive(),
        None => Ok(()),
    }
}

/// One create or merge patch, retried a few times on errors other than a conflict with an
/// earlier attempt that did land; returns the item's uid, when the answer gave it.
async fn send_one(
    items: &Api<BenchItem>,
    phase: Phase,
    name: &str,
    value: i64,
) -> anyhow::Result<Option<String>> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let outcome = match phase {
            Phase::Create => {
                let item = BenchItem::new(name, BenchItemSpec { value });
                items
                    .create(&PostParams::default(), &item)
                    .await
                    .map(|i| i.metadata.uid)
            }
            Phase::Update => {
                let patch = serde_json::json!({"spec": {"value": value}});
                items
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                    .map(|i| i.metadata.uid)
            }
        };
        match outcome {
            Ok(uid) => return Ok(uid),
            Err(kube::Error::Api(status))
                if phase == Phase::Create && status.is_already_exists() && attempt > 1 =>
            {
                return Ok(None);
            }
            Err(error) if attempt < 3 => {
                eprintln!("{name}: {error}; retrying");
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            Err(error) => return Err(error).with_context(|| format!("sending {name}")),
        }
    }
}
