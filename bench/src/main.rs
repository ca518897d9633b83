//! kopr benchmarks. `kopr-bench apiserver` measures the embedded API server
//! as a separate `kopr apiserver` process, through the kube-rs client:
//! creates/s, updates/s, watch delivery latency, time to ready and peak RSS.
//! `kopr-bench compare-operators` runs one workload against kopr, Kopf and a
//! kube-rs controller (see `bench/compare-operators`). `kopr-bench workloads`
//! times Deployments on the simulated cluster and measures the server's idle
//! CPU with many pods (see `bench/WORKLOADS.md`). `kopr-bench authz` measures
//! what authentication and RBAC cost per request. `kopr-bench admission` measures what one
//! validating admission webhook costs a write. `kopr-bench failover` measures how fast leadership
//! moves between two replicas and what a standby costs; `kopr-bench scrape` what the metrics
//! endpoint costs; `kopr-bench exec` the round trip of `pods/exec`; `kopr-bench scale` the
//! server as its store grows (see `bench/scale`); `kopr-bench selection` what selectors and
//! metadata-only watches save an operator.

mod admission;
mod apiserver;
mod authz;
mod children;
mod compare;
mod exec;
mod failover;
mod index;
mod scale;
mod scrape;
mod selection;
mod shards;
mod workloads;
mod writes;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(name = "kopr-bench", about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Writes with one validating admission webhook in the path against none.
    Admission(admission::Args),
    /// Benchmark the embedded API server.
    Apiserver(apiserver::Args),
    /// Creates as a service account under RBAC against creates as the admin.
    Authz(authz::Args),
    /// What an index of 10,000 pods costs an operator.
    Index(index::Args),
    /// What the cache of 10,000 owned children costs an operator.
    Children(children::Args),
    /// The round trip of `pods/exec` on a simulated pod.
    Exec(exec::Args),
    /// Leader election: failover after kill -9 and SIGTERM, and the standby's RSS.
    Failover(failover::Args),
    /// Compare kopr with Kopf and a kube-rs controller on one workload.
    CompareOperators(compare::Args),
    /// The API server as its store grows: memory, lists, GETs under writes, watch fan-out.
    Scale(scale::Args),
    /// What the metrics endpoint costs the operator.
    Scrape(scrape::Args),
    /// What selectors and metadata-only watches save an operator following 10,000 pods.
    Selection(selection::Args),
    /// Throughput of 1, 2 and 3 sharded replicas on the compare-operators workload.
    Shards(shards::Args),
    /// Time Deployments to availability and measure idle CPU with many pods.
    Workloads(workloads::Args),
    /// The write path against a baseline build and the raw SQLite ceiling.
    Writes(writes::Args),
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        match cli.command {
            Command::Admission(args) => admission::run(args).await,
            Command::Apiserver(args) => apiserver::run(args).await,
            Command::Authz(args) => authz::run(args).await,
            Command::CompareOperators(args) => compare::run(args).await,
            Command::Exec(args) => exec::run(args).await,
            Command::Failover(args) => failover::run(args).await,
            Command::Index(args) => index::run(args).await,
            Command::Children(args) => children::run(args).await,
            Command::Scale(args) => scale::run(args).await,
            Command::Scrape(args) => scrape::run(args).await,
            Command::Selection(args) => selection::run(args).await,
            Command::Shards(args) => shards::run(args).await,
            Command::Workloads(args) => workloads::run(args).await,
            Command::Writes(args) => writes::run(args).await,
        }
    })
}
