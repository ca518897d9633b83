//! The workload benchmark: against one `kopr apiserver --in-memory` child
//! process with its in-process controllers, simulated nodes and simulated
//! kubelet, it measures how long a Deployment takes to become fully
//! available (seen through a watch), then scales a Deployment to many idle
//! pods and samples the server's CPU and memory while nothing happens. An
//! idle cluster should cost next to nothing: no controller, scheduler or
//! kubelet work runs on a timer for a Running pod.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::runtime::wait::await_condition;
use serde_json::json;

use crate::apiserver;

/// Pods a simulated node takes (`NODE_PODS` in the API server's
/// `controllers/nodes.rs`); used to pick a node count when none is given.
const PODS_PER_NODE: usize = 110;

/// The namespace the benchmark works in.
const NAMESPACE: &str = "bench-workloads";

/// Options of `kopr-bench workloads`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Simulated nodes (default: enough for the largest Deployment, at
    /// least 3; a simulated node takes 110 pods).
    #[arg(long)]
    nodes: Option<usize>,
    /// Replicas of the Deployment timed until fully available.
    #[arg(long, default_value_t = 100)]
    replicas: usize,
    /// How often that Deployment is created (and deleted again).
    #[arg(long, default_value_t = 3)]
    runs: usize,
    /// Pods the idle figure is taken with.
    #[arg(long, default_value_t = 1000)]
    idle_pods: usize,
    /// Length of the idle CPU sampling window, in seconds.
    #[arg(long, default_value_t = 30)]
    idle_seconds: u64,
    /// Longest wait for a Deployment to become available, in seconds.
    #[arg(long, default_value_t = 600)]
    timeout_seconds: u64,
}

impl Args {
    fn node_count(&self) -> usize {
        self.nodes.unwrap_or_else(|| {
            self.idle_pods
                .max(self.replicas)
                .div_ceil(PODS_PER_NODE)
                .max(3)
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(self.timeout_seconds.max(1))
    }
}

/// A Deployment of `replicas` pods that serve forever and request nothing.
fn deployment(name: &str, replicas: usize) -> anyhow::Result<Deployment> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NAMESPACE},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10"}]},
            },
        },
    }))?)
}

/// Whether a Deployment is fully rolled out and available: its controller
/// has seen the current generation and every replica is updated and
/// available.
fn fully_available(d: &Deployment) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    let generation = d.metadata.generation.unwrap_or(0);
    d.status.as_ref().is_some_and(|s| {
        s.observed_generation.unwrap_or(0) >= generation
            && s.replicas.unwrap_or(0) == want
            && s.updated_replicas.unwrap_or(0) == want
            && s.available_replicas.unwrap_or(0) == want
    })
}

/// Waits, through a watch, until the Deployment is fully available.
async fn wait_available(
    api: &Api<Deployment>,
    name: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let cond = |d: Option<&Deployment>| d.is_some_and(fully_available);
    match tokio::time::timeout(timeout, await_condition(api.clone(), name, cond)).await {
        Ok(Ok(Some(_))) => Ok(()),
        Ok(Ok(None)) => bail!("deployment {name} was deleted while waiting for it"),
        Ok(Err(e)) => Err(e).context(format!("watching deployment {name}")),
        Err(_) => {
            let status = api.get(name).await.ok().and_then(|d| d.status);
            bail!(
                "deployment {name} not available within {} s; status: {status:?}",
                timeout.as_secs()
            )
        }
    }
}

/// Waits until no pod with label `app=<app>` is left.
async fn wait_pods_gone(pods: &Api<Pod>, app: &str, timeout: Duration) -> anyhow::Result<()> {
    let lp = ListParams::default().labels(&format!("app={app}"));
    let deadline = Instant::now() + timeout;
    loop {
        let left = pods.list_metadata(&lp).await?.items.len();
        if left == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "{left} pods of {app} still there after {} s",
                timeout.as_secs()
            );
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// The store's current revision, as a list reports it.
async fn revision(c: &kube::Client) -> anyhow::Result<u64> {
    let ns: Api<Namespace> = Api::all(c.clone());
    let rv = ns
        .list_metadata(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    rv.parse()
        .with_context(|| format!("resourceVersion {rv:?} is not a number"))
}

/// Waits until nothing has been written for `quiet` (the controllers and
/// the event recorder have caught up), at most `limit`; returns how long
/// that took.
async fn settle(c: &kube::Client, quiet: Duration, limit: Duration) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut last = revision(c).await?;
    let mut since = Instant::now();
    while since.elapsed() < quiet {
        if started.elapsed() > limit {
            tracing::warn!("the server kept writing for {} s", limit.as_secs());
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = revision(c).await?;
        if now != last {
            last = now;
            since = Instant::now();
        }
    }
    Ok(started.elapsed().saturating_sub(quiet))
}

/// Pods that total capacity of the cluster's nodes takes.
async fn pod_capacity(c: &kube::Client) -> anyhow::Result<usize> {
    let nodes: Api<Node> = Api::all(c.clone());
    let mut total = 0usize;
    for n in nodes.list(&ListParams::default()).await?.items {
        let pods = n
            .status
            .and_then(|s| s.allocatable)
            .and_then(|a| a.get("pods").map(|q| q.0.clone()))
            .unwrap_or_default();
        total += pods.parse::<usize>().unwrap_or(0);
    }
    Ok(total)
}

/// Waits until the simulated nodes are there and Ready (the controllers
/// create them just after the server reports ready).
async fn wait_nodes(c: &kube::Client, count: usize) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(c.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = nodes
            .list(&ListParams::default())
            .await?
            .items
            .iter()
            .filter(|n| {
                n.status
                    .as_ref()
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
            })
            .count();
        if ready >= count {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{ready} of {count} simulated nodes ready after 30 s");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}

/// Runs the benchmark and prints a Markdown table and a summary line.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let nodes = args.node_count();
    let kopr = apiserver::kopr_binary(args.kopr.as_deref())?;
    let node_arg = nodes.to_string();
    let (server, _) = apiserver::start_server(&kopr, &["--in-memory", "--nodes", &node_arg])?;
    let pid = server.child.id();
    let c = apiserver::client(&server).await?;
    wait_nodes(&c, nodes).await?;
    let capacity = pod_capacity(&c).await?;
    if capacity < args.idle_pods.max(args.replicas) {
        bail!(
            "{nodes} simulated nodes take {capacity} pods, fewer than {}: pass a larger --nodes",
            args.idle_pods.max(args.replicas)
        );
    }
    let namespaces: Api<Namespace> = Api::all(c.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NAMESPACE}}))?,
        )
        .await?;
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NAMESPACE);
    let pods: Api<Pod> = Api::namespaced(c.clone(), NAMESPACE);

    // (a) Time from create to fully available, a fresh Deployment each run.
    let mut times = Vec::new();
    for run in 0..args.runs {
        let name = format!("web-{run}");
        let started = Instant::now();
        deployments
            .create(&PostParams::default(), &deployment(&name, args.replicas)?)
            .await?;
        wait_available(&deployments, &name, args.timeout()).await?;
        let took = started.elapsed();
        eprintln!(
            "run {}: {} replicas available in {}",
            run + 1,
            args.replicas,
            seconds(took)
        );
        times.push(took.as_secs_f64());
        deployments
            .delete(&name, &DeleteParams::background())
            .await?;
        wait_pods_gone(&pods, &name, args.timeout()).await?;
    }
    let mut sorted = times.clone();
    sorted.sort_by(f64::total_cmp);
    let median = apiserver::percentile(&sorted, 0.5);

    // (b) Scale a Deployment up to the idle pod count, let everything
    // settle, then sample the server's CPU over a quiet window.
    let name = "idle";
    deployments
        .create(&PostParams::default(), &deployment(name, args.replicas)?)
        .await?;
    wait_available(&deployments, name, args.timeout()).await?;
    let started = Instant::now();
    let cpu_start = apiserver::cpu_seconds(pid);
    deployments
        .patch_scale(
            name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"replicas": args.idle_pods}})),
        )
        .await?;
    wait_available(&deployments, name, args.timeout()).await?;
    let scale_up = started.elapsed();
    let scale_cpu = apiserver::cpu_seconds(pid) - cpu_start;
    eprintln!(
        "scaled to {} replicas, all available in {}",
        args.idle_pods,
        seconds(scale_up)
    );
    let running = pods
        .list(&ListParams::default().labels(&format!("app={name}")))
        .await?
        .items
        .iter()
        .filter(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"))
        .count();
    if running < args.idle_pods {
        bail!("only {running} of {} pods are Running", args.idle_pods);
    }
    let settled = settle(&c, Duration::from_secs(3), Duration::from_secs(120)).await?;
    eprintln!(
        "settled {} after availability; sampling CPU for {} s",
        seconds(settled),
        args.idle_seconds
    );
    let rev_before = revision(&c).await?;
    let cpu_before = apiserver::cpu_seconds(pid);
    let window_start = Instant::now();
    tokio::time::sleep(Duration::from_secs(args.idle_seconds.max(1))).await;
    let cpu_after = apiserver::cpu_seconds(pid);
    let window = window_start.elapsed().as_secs_f64();
    let rev_after = revision(&c).await?;
    let idle_cpu = (cpu_after - cpu_before) / window * 100.0;
    let writes = rev_after.saturating_sub(rev_before);
    let rss = apiserver::memory_mib(pid, "VmRSS:");
    let peak = apiserver::peak_rss_mib(pid);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    drop(server);

    let each: Vec<String> = times.iter().map(|t| format!("{t:.2}")).collect();
    println!("| figure | result |");
    println!("|---|---|");
    println!("| simulated nodes (110 pods each) | {nodes} |");
    println!(
        "| Deployment of {} replicas, create to fully available (median of {}) | {median:.2} s (runs: {} s) |",
        args.replicas,
        times.len(),
        each.join(", ")
    );
    println!(
        "| scale {} → {} replicas, to fully available (all pods Running) | {} |",
        args.replicas,
        args.idle_pods,
        seconds(scale_up)
    );
    println!(
        "| server CPU time during that scale-up | {scale_cpu:.2} s ({:.0}% of one core) |",
        scale_cpu / scale_up.as_secs_f64() * 100.0
    );
    println!(
        "| quiet after that (no writes for 3 s) | {} later |",
        seconds(settled)
    );
    println!(
        "| server CPU while idle with {} pods ({window:.0} s window) | {idle_cpu:.2}% of one core |",
        args.idle_pods
    );
    println!("| writes during the idle window | {writes} |");
    println!(
        "| server RSS with {} pods: now / peak | {rss:.0} MiB / {peak:.0} MiB |",
        args.idle_pods
    );
    println!(
        "| load average at the end (1/5/15 min) | {} |",
        load.split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    println!();
    println!(
        "idle CPU with {} pods: {idle_cpu:.2}% of one core (target < 5%)",
        args.idle_pods
    );
    Ok(())
}
