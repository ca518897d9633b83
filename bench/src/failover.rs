//! `kopr-bench failover`: how long leadership takes to move between two replicas of a kopr
//! operator, and what a standby costs. Two `kopr-operator run -A` processes (leader election
//! on, client-go's default timings: lease 15 s, renew deadline 10 s, retry period 2 s) run
//! against a `kopr apiserver` child process. Each round the leader is stopped, by `kill -9`
//! or by SIGTERM, and the time is taken from the stop until the other replica has handled a
//! BenchItem created right after the stop (`status.result` written). The standby's resident
//! set size is read while it stands by, next to the leader's.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::coordination::v1::Lease;
use kopr_bench::workload::BenchItem;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::apiserver::{client, kopr_binary, percentile, start_server};
use crate::compare::cluster::{create_namespace, install_crd};

/// Options of `kopr-bench failover`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Rounds of each kind of stop.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

/// The resident set size of process `pid`, in MiB.
pub(crate) fn rss_mib(pid: u32) -> anyhow::Result<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .context("no VmRSS")?
        .parse()?;
    Ok(kib / 1024.0)
}

/// One `kopr-operator` replica.
pub(crate) struct Replica {
    child: Child,
    identity: String,
}

impl Replica {
    fn start(binary: &Path, kubeconfig: &Path, identity: &str) -> anyhow::Result<Replica> {
        Replica::spawn(binary, kubeconfig, identity, &[])
    }

    /// `run -A` with the Lease in `default`, as `identity`, with `extra` options.
    pub(crate) fn spawn(
        binary: &Path,
        kubeconfig: &Path,
        identity: &str,
        extra: &[&str],
    ) -> anyhow::Result<Replica> {
        let child = Command::new(binary)
            .args([
                "run",
                "-A",
                "--lease-namespace",
                "default",
                "--identity",
                identity,
            ])
            .args(extra)
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "warn")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting kopr-operator")?;
        Ok(Replica {
            child,
            identity: identity.to_string(),
        })
    }

    fn rss_mib(&self) -> anyhow::Result<f64> {
        rss_mib(self.child.id())
    }

    fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The process id.
    pub(crate) fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Stops the replica with SIGTERM and waits for it.
    pub(crate) fn terminate(mut self) -> anyhow::Result<()> {
        let pid = i32::try_from(self.child.id())?;
        let status = Command::new("kill")
            .args(["-TERM", &pid.to_string()])
            .status()?;
        if !status.success() {
            bail!("kill -TERM {pid} failed");
        }
        let _ = self.child.wait();
        Ok(())
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Lease's holder, if any.
async fn holder(leases: &Api<Lease>, name: &str) -> Option<String> {
    leases
        .get_opt(name)
        .await
        .ok()
        .flatten()?
        .spec?
        .holder_identity
}

async fn wait_holder(leases: &Api<Lease>, identity: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(120);
    while holder(leases, "kopr-operator").await.as_deref() != Some(identity) {
        if Instant::now() > deadline {
            bail!("{identity} did not come to hold the lease");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(())
}

/// Creates a BenchItem and waits until its result is written; returns when it was.
async fn handled(items: &Api<BenchItem>, name: &str) -> anyhow::Result<Instant> {
    let item: BenchItem = serde_json::from_value(json!({
        "apiVersion": "bench.kopr.dev/v1", "kind": "BenchItem",
        "metadata": {"name": name}, "spec": {"value": 7}
    }))?;
    items.create(&PostParams::default(), &item).await?;
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let current = items.get(name).await?;
        if current.status.and_then(|s| s.result).is_some() {
            return Ok(Instant::now());
        }
        if Instant::now() > deadline {
            bail!("{name} was not handled");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
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
    let (server, _) = start_server(&kopr, &[])?;
    let admin = client(&server).await?;
    install_crd(&admin).await?;
    create_namespace(&admin, "failover").await?;
    let items: Api<BenchItem> = Api::namespaced(admin.clone(), "failover");
    let leases: Api<Lease> = Api::namespaced(admin.clone(), "default");
    let (mut killed, mut terminated) = (Vec::new(), Vec::new());
    let (mut standby_rss, mut leader_rss) = (Vec::new(), Vec::new());
    let mut leader = Replica::start(&operator, &server.kubeconfig, "r0")?;
    wait_holder(&leases, "r0").await?;
    for round in 0..args.rounds * 2 {
        let standby = Replica::start(&operator, &server.kubeconfig, &format!("r{}", round + 1))?;
        // Let the standby settle (it reads the Lease every retry period).
        handled(&items, &format!("warm-{round}")).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        standby_rss.push(standby.rss_mib()?);
        leader_rss.push(leader.rss_mib()?);
        let by_kill = round % 2 == 0;
        let old = std::mem::replace(&mut leader, standby);
        let stopped = Instant::now();
        if by_kill {
            old.kill();
        } else {
            old.terminate()?;
        }
        let at = handled(&items, &format!("after-{round}")).await?;
        wait_holder(&leases, &leader.identity).await?;
        let seconds = at.duration_since(stopped).as_secs_f64();
        if by_kill {
            killed.push(seconds);
        } else {
            terminated.push(seconds);
        }
    }
    drop(leader);
    for list in [
        &mut killed,
        &mut terminated,
        &mut standby_rss,
        &mut leader_rss,
    ] {
        list.sort_by(f64::total_cmp);
    }
    println!(
        "| figure | result |\n|---|---|\n\
         | failover after `kill -9` of the leader, until the new leader handled an object (median of {}) | {:.1} s (min {:.1}, max {:.1}) |\n\
         | failover after SIGTERM (the lease released), same measure (median of {}) | {:.1} s (min {:.1}, max {:.1}) |\n\
         | standby RSS (median) | {:.1} MiB |\n\
         | leader RSS at the same moment (median) | {:.1} MiB |",
        killed.len(),
        percentile(&killed, 0.5),
        killed.first().copied().unwrap_or(0.0),
        killed.last().copied().unwrap_or(0.0),
        terminated.len(),
        percentile(&terminated, 0.5),
        terminated.first().copied().unwrap_or(0.0),
        terminated.last().copied().unwrap_or(0.0),
        percentile(&standby_rss, 0.5),
        percentile(&leader_rss, 0.5),
    );
    Ok(())
}
