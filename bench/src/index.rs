//! `kopr-bench index`: what an index costs. A `kopr apiserver` child process without
//! controllers (pods stay as created), and `index-operator run -A --standalone`: an index of
//! pods by node on a resource with no handlers. Its resident set size is read once the
//! operator has listed no pods, then again once N pods (spread over 50 nodes) are indexed
//! (`kopr_index_objects` from its metrics endpoint) and it has settled; the difference per
//! pod is the index's cost, next to the size of a pod as the server sends it.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::apiserver::{client, concurrent, kopr_binary, start_server};
use crate::compare::cluster::create_namespace;
use crate::compare::operators::peak_rss_mib;
use crate::failover::rss_mib;
use crate::scrape::metrics_text;

/// Options of `kopr-bench index`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Pods to index.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
}

/// An operator process of a cost bench; killed when dropped.
pub(crate) struct Operator(Child);

impl Drop for Operator {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Operator {
    /// Starts `binary` (next to `kopr`) as `run -A --standalone`, serving metrics on a free
    /// port of loopback; returns it and that address.
    pub(crate) fn start(
        kopr: &std::path::Path,
        binary: &str,
        kubeconfig: &std::path::Path,
    ) -> anyhow::Result<(Operator, std::net::SocketAddr)> {
        Operator::start_with(kopr, binary, kubeconfig, &[])
    }

    /// [`start`](Self::start) with environment variables for the operator.
    pub(crate) fn start_with(
        kopr: &std::path::Path,
        binary: &str,
        kubeconfig: &std::path::Path,
        env: &[(&str, &str)],
    ) -> anyhow::Result<(Operator, std::net::SocketAddr)> {
        let binary = kopr.with_file_name(binary);
        if !binary.exists() {
            bail!(
                "{} not found: build it with `cargo build --release -p kopr-bench`",
                binary.display()
            );
        }
        let metrics = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        let child = Command::new(&binary)
            .args(["run", "-A", "--standalone", "--metrics-listen"])
            .arg(metrics.to_string())
            .env("KUBECONFIG", kubeconfig)
            .env("RUST_LOG", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {}", binary.display()))?;
        Ok((Operator(child), metrics))
    }

    pub(crate) fn pid(&self) -> u32 {
        self.0.id()
    }
}

/// Waits until the metrics at `metrics` have the line `wanted`.
pub(crate) async fn metric_line(metrics: std::net::SocketAddr, wanted: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        if let Ok(text) = metrics_text(metrics).await
            && text.lines().any(|l| l == wanted)
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the operator's metrics never said {wanted:?}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Waits until the index holds `count` objects.
async fn indexed(metrics: std::net::SocketAddr, count: usize) -> anyhow::Result<()> {
    metric_line(
        metrics,
        &format!("kopr_index_objects{{index=\"pods-by-node\"}} {count}"),
    )
    .await
}

/// Runs the measure and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    let (server, _) = start_server(&kopr, &["--no-controllers"])?;
    let admin = client(&server).await?;
    create_namespace(&admin, "indexed").await?;
    let (operator, metrics) = Operator::start(&kopr, "index-operator", &server.kubeconfig)?;
    let pid = operator.pid();
    indexed(metrics, 0).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let empty = rss_mib(pid)?;
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "indexed");
    let api = pods.clone();
    let rate = concurrent(16, args.pods, move |i| {
        let api = api.clone();
        async move {
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("pod-{i:05}"), "labels": {"app": "indexed"}},
                "spec": {"nodeName": format!("node-{:02}", i % 50),
                         "containers": [{"name": "main", "image": "registry.local/app:1"}]}
            }))?;
            api.create(&PostParams::default(), &pod).await?;
            anyhow::Ok(())
        }
    })
    .await?;
    indexed(metrics, args.pods).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let full = rss_mib(pid)?;
    let peak = peak_rss_mib(pid)?;
    let sample = pods.get("pod-00000").await?;
    let pod_bytes = serde_json::to_vec(&sample)?.len();
    let per_pod = (full - empty) * 1024.0 * 1024.0 / args.pods as f64;
    println!(
        "| figure | result |\n|---|---|\n\
         | pods created (16 clients) | {} at {rate:.0}/s |\n\
         | operator RSS, no pods indexed | {empty:.1} MiB |\n\
         | operator RSS, {} pods indexed (peak) | {full:.1} MiB ({peak:.1} MiB) |\n\
         | RSS per indexed pod | {per_pod:.0} bytes |\n\
         | one pod as the server sends it (JSON) | {pod_bytes} bytes |",
        args.pods, args.pods
    );
    drop(operator);
    Ok(())
}
