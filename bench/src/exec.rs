//! `kopr-bench exec`: the round trip of `pods/exec` on a simulated pod of a
//! `kopr apiserver` child process, through kube-rs (WebSocket,
//! `v5.channel.k8s.io`): from the request to the final status of
//! `echo hi`, sequentially, after a few warm-up runs. Prints p50, p90 and
//! p99 in milliseconds.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, AttachParams, PostParams};
use kube::runtime::conditions::is_pod_running;
use kube::runtime::wait::await_condition;
use serde_json::json;
use tokio::io::AsyncReadExt;

use crate::apiserver::{client, kopr_binary, percentile, start_server};

/// Options of `kopr-bench exec`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Execs measured.
    #[arg(long, default_value_t = 500)]
    runs: usize,
}

async fn one(pods: &Api<Pod>) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let mut p = pods
        .exec(
            "bench",
            ["echo", "hi"],
            &AttachParams::default().stderr(false),
        )
        .await?;
    let mut out = String::new();
    let mut stdout = p.stdout().context("stdout")?;
    let status = p.take_status().context("status")?;
    stdout.read_to_string(&mut out).await?;
    let status = status.await.context("no status")?;
    let took = started.elapsed();
    anyhow::ensure!(out == "hi\n", "unexpected output {out:?}");
    anyhow::ensure!(status.status.as_deref() == Some("Success"), "{status:?}");
    Ok(took)
}

/// Runs the benchmark and prints the percentiles.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    let (server, _) = start_server(&kopr, &[])?;
    let client = client(&server).await?;
    let pods: Api<Pod> = Api::namespaced(client, "default");
    let pod: Pod = serde_json::from_value(json!({
        "metadata": {"name": "bench"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}
    }))?;
    pods.create(&PostParams::default(), &pod).await?;
    tokio::time::timeout(
        Duration::from_secs(60),
        await_condition(pods.clone(), "bench", is_pod_running()),
    )
    .await
    .context("the pod did not run in time")??;
    for _ in 0..20 {
        one(&pods).await?;
    }
    let mut ms = Vec::with_capacity(args.runs);
    for _ in 0..args.runs {
        ms.push(one(&pods).await?.as_secs_f64() * 1000.0);
    }
    ms.sort_by(f64::total_cmp);
    println!("| exec round trip (`echo hi`, kube-rs, v5.channel.k8s.io) | ms |");
    println!("|---|---|");
    for (name, p) in [("p50", 0.5), ("p90", 0.9), ("p99", 0.99)] {
        println!("| {name} | {:.2} |", percentile(&ms, p));
    }
    println!("\n{} runs", ms.len());
    Ok(())
}
