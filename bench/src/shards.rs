//! `kopr-bench shards`: throughput of 1, 2 and 3 sharded replicas of the compare-operators
//! operator (`kopr-operator run -A --shards`) against one `kopr apiserver` child process.
//!
//! Per round and replica count, in a fresh namespace: the replicas start, the harness waits
//! until the shard map gives every shard to the owner rendezvous hashing picks (every handover
//! done), one warm-up item is handled, then N `BenchItem`s are created by concurrent creators
//! and timed until each item's `status.result` and its ConfigMap child show the expected
//! value. The replicas are then stopped with SIGTERM. On a 2-core machine the API server, the
//! replicas and the harness share the same two cores, so more replicas cannot add CPU: the
//! figure shows what sharding costs or gains there, not how it scales on a real cluster.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::coordination::v1::Lease;
use kopr_bench::workload::{BenchItem, BenchItemSpec, result_of};
use kube::api::{Api, PostParams};

use crate::apiserver::{client, kopr_binary, percentile, start_server};
use crate::compare::cluster::{create_namespace, delete_namespace, install_crd};
use crate::compare::operators::{clock_ticks, cpu_seconds};
use crate::compare::tracker::Tracker;
use crate::failover::Replica;

/// Options of `kopr-bench shards`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Items created per run.
    #[arg(long, default_value_t = 2000)]
    objects: usize,
    /// Rounds; each runs every replica count once.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Replica counts, comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "1,2,3")]
    replicas: Vec<usize>,
    /// Concurrent creators.
    #[arg(long, default_value_t = 16)]
    creators: usize,
}

/// One run's figures.
struct Run {
    replicas: usize,
    throughput: f64,
    operator_cpu_s: f64,
    server_cpu_s: f64,
}

/// Waits until the shard map gives every shard to the owner rendezvous hashing picks among
/// `identities`.
async fn settled(leases: &Api<Lease>, identities: &[String]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let map = leases.get_opt("kopr-operator-shards").await?;
        let owners = map
            .as_ref()
            .and_then(|l| l.metadata.annotations.as_ref())
            .and_then(|a| a.get(kopr::shards::OWNERS_ANNOTATION))
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
            .and_then(|v| serde_json::from_value::<Vec<String>>(v["owners"].clone()).ok());
        if let Some(owners) = owners {
            let count = u32::try_from(owners.len())?;
            if owners == kopr::shards::assign(count, identities) {
                return Ok(());
            }
        }
        if Instant::now() > deadline {
            bail!("the shard map did not settle on {identities:?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn create_all(
    items: &Api<BenchItem>,
    tracker: &Tracker,
    n: usize,
    creators: usize,
) -> anyhow::Result<()> {
    let next = Arc::new(AtomicUsize::new(0));
    let senders = (0..creators).map(|_| {
        let next = next.clone();
        async move {
            loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= n {
                    return anyhow::Ok(());
                }
                let name = format!("item-{i:05}");
                let value = i64::try_from(i)?;
                tracker.expect(&name, result_of(value));
                let item = BenchItem::new(&name, BenchItemSpec { value });
                items.create(&PostParams::default(), &item).await?;
            }
        }
    });
    futures::future::try_join_all(senders).await?;
    Ok(())
}

/// Runs the rounds and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    let operator = kopr.with_file_name("kopr-operator");
    if !operator.exists() {
        bail!(
            "{} not found: build it with `cargo build --release -p kopr-bench`",
            operator.display()
        );
    }
    let ticks = clock_ticks();
    let (server, _) = start_server(&kopr, &[])?;
    let admin = client(&server).await?;
    install_crd(&admin).await?;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "default");
    let mut runs = Vec::new();
    for round in 0..args.rounds {
        for &count in &args.replicas {
            let namespace = format!("shards-{round}-{count}");
            create_namespace(&admin, &namespace).await?;
            let tracker = Tracker::start(&admin, &namespace);
            let identities: Vec<String> = (0..count)
                .map(|i| format!("r{round}-{count}-{i}"))
                .collect();
            let replicas = identities
                .iter()
                .map(|id| Replica::spawn(&operator, &server.kubeconfig, id, &["--shards"]))
                .collect::<anyhow::Result<Vec<_>>>()?;
            settled(&leases, &identities)
                .await
                .with_context(|| format!("{count} replicas"))?;
            let items: Api<BenchItem> = Api::namespaced(admin.clone(), &namespace);
            tracker.begin_phase();
            tracker.expect("warmup", result_of(-1));
            items
                .create(
                    &PostParams::default(),
                    &BenchItem::new("warmup", BenchItemSpec { value: -1 }),
                )
                .await?;
            tracker
                .wait_for(1, Duration::from_secs(120), || Ok(()))
                .await
                .context("warm-up")?;
            let cpu = |pids: &[u32]| -> anyhow::Result<f64> {
                pids.iter().map(|pid| cpu_seconds(*pid, ticks)).sum()
            };
            let pids: Vec<u32> = replicas.iter().map(Replica::pid).collect();
            let (operator_before, server_before) =
                (cpu(&pids)?, cpu_seconds(server.child.id(), ticks)?);
            tracker.begin_phase();
            let started = Instant::now();
            create_all(&items, &tracker, args.objects, args.creators).await?;
            let last = tracker
                .wait_for(args.objects, Duration::from_secs(120), || Ok(()))
                .await
                .with_context(|| format!("{count} replicas, round {round}"))?;
            let wall = last.duration_since(started).as_secs_f64();
            let latencies = tracker.latencies_ms();
            let run = Run {
                replicas: count,
                throughput: args.objects as f64 / wall,
                operator_cpu_s: cpu(&pids)? - operator_before,
                server_cpu_s: cpu_seconds(server.child.id(), ticks)? - server_before,
            };
            eprintln!(
                "round {round}, {count} replica(s): {:.0} items/s, latency p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; operators {:.2} s CPU, server {:.2} s CPU",
                run.throughput,
                percentile(&latencies, 0.5),
                percentile(&latencies, 0.99),
                latencies.last().copied().unwrap_or(0.0),
                run.operator_cpu_s,
                run.server_cpu_s
            );
            runs.push(run);
            for replica in replicas {
                replica.terminate()?;
            }
            tracker.stop();
            delete_namespace(&admin, &namespace, Duration::from_secs(600)).await?;
        }
    }
    let median = |count: usize, figure: fn(&Run) -> f64| {
        let mut values: Vec<f64> = runs
            .iter()
            .filter(|r| r.replicas == count)
            .map(figure)
            .collect();
        values.sort_by(f64::total_cmp);
        percentile(&values, 0.5)
    };
    let base = median(args.replicas.first().copied().unwrap_or(1), |r| {
        r.throughput
    });
    println!(
        "| replicas | items/s (median of {}) | ratio to {} | operators' CPU, s | server CPU, s |\n|---|---|---|---|---|",
        args.rounds,
        args.replicas.first().copied().unwrap_or(1)
    );
    for &count in &args.replicas {
        let throughput = median(count, |r| r.throughput);
        println!(
            "| {count} | {throughput:.0} | {:.2} | {:.2} | {:.2} |",
            throughput / base,
            median(count, |r| r.operator_cpu_s),
            median(count, |r| r.server_cpu_s)
        );
    }
    Ok(())
}
