//! `kopr-bench scrape`: what the metrics endpoint costs. The benchmark's kopr operator
//! (`kopr-operator run -A --standalone --metrics-listen`) handles rounds of BenchItems against
//! a `kopr apiserver` child process, alternately with `/metrics` scraped every second and not
//! scraped; the figure is the operator's CPU time per handled object in each case (user +
//! system, from `/proc`), and their ratio. Then, idle, it is scraped back to back to give the
//! CPU cost of one scrape and the size of the answer.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kopr_bench::workload::BenchItem;
use kube::api::{Api, ListParams, PostParams};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::apiserver::{client, concurrent, kopr_binary, percentile, start_server};
use crate::compare::cluster::{create_namespace, install_crd};
use crate::compare::operators::{clock_ticks, cpu_seconds};

/// Options of `kopr-bench scrape`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// BenchItems per round.
    #[arg(long, default_value_t = 3000)]
    items: usize,
    /// Rounds (each: without, then with scraping).
    #[arg(long, default_value_t = 3)]
    rounds: usize,
}

/// GETs `/metrics`; returns the body's length.
async fn scrape(address: std::net::SocketAddr) -> anyhow::Result<usize> {
    Ok(metrics_text(address).await?.len())
}

/// GETs `/metrics`; returns the body.
pub(crate) async fn metrics_text(address: std::net::SocketAddr) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(address).await?;
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: bench\r\nConnection: close\r\n\r\n")
        .await?;
    let mut text = Vec::new();
    stream.read_to_end(&mut text).await?;
    let body = text
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(&text[..0], |at| &text[at + 4..]);
    Ok(String::from_utf8_lossy(body).into_owned())
}

/// Creates `n` items named `<prefix>-<i>` and waits until all are handled.
async fn round(items: &Api<BenchItem>, prefix: &str, n: usize) -> anyhow::Result<()> {
    let api = items.clone();
    let prefix = prefix.to_string();
    concurrent(16, n, move |i| {
        let (api, name) = (api.clone(), format!("{prefix}-{i}"));
        async move {
            let item: BenchItem = serde_json::from_value(json!({
                "apiVersion": "bench.kopr.dev/v1", "kind": "BenchItem",
                "metadata": {"name": name}, "spec": {"value": 3}
            }))?;
            api.create(&PostParams::default(), &item).await?;
            Ok(())
        }
    })
    .await?;
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let list = items.list(&ListParams::default()).await?;
        let pending = list
            .items
            .iter()
            .filter(|i| i.status.as_ref().and_then(|s| s.result.as_ref()).is_none())
            .count();
        if pending == 0 {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{pending} items were not handled");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs the rounds and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    let binary = kopr.with_file_name("kopr-operator");
    let (server, _) = start_server(&kopr, &[])?;
    let admin = client(&server).await?;
    install_crd(&admin).await?;
    let metrics = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
    let mut operator = Command::new(&binary)
        .args(["run", "-A", "--standalone", "--metrics-listen"])
        .arg(metrics.to_string())
        .env("KUBECONFIG", &server.kubeconfig)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("starting kopr-operator")?;
    let pid = operator.id();
    let ticks = clock_ticks();
    let deadline = Instant::now() + Duration::from_secs(30);
    while scrape(metrics).await.is_err() {
        if Instant::now() > deadline {
            bail!("the metrics endpoint did not answer");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (mut quiet, mut scraped) = (Vec::new(), Vec::new());
    for r in 0..args.rounds * 2 {
        let scraping = r % 2 == 1;
        let namespace = format!("round-{r}");
        create_namespace(&admin, &namespace).await?;
        let items: Api<BenchItem> = Api::namespaced(admin.clone(), &namespace);
        let stop = Arc::new(AtomicBool::new(false));
        let scraper = scraping.then(|| {
            let stop = stop.clone();
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let _ = scrape(metrics).await;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            })
        });
        let before = cpu_seconds(pid, ticks)?;
        round(&items, &format!("r{r}"), args.items).await?;
        let used = cpu_seconds(pid, ticks)? - before;
        stop.store(true, Ordering::Relaxed);
        if let Some(scraper) = scraper {
            let _ = scraper.await;
        }
        let per_object_ms = used * 1e3 / args.items as f64;
        if scraping {
            scraped.push(per_object_ms);
        } else {
            quiet.push(per_object_ms);
        }
    }
    // One scrape, idle: 200 back to back.
    let before = cpu_seconds(pid, ticks)?;
    let mut size = 0;
    for _ in 0..200 {
        size = scrape(metrics).await?;
    }
    let per_scrape_ms = (cpu_seconds(pid, ticks)? - before) * 1e3 / 200.0;
    let _ = operator.kill();
    let _ = operator.wait();
    quiet.sort_by(f64::total_cmp);
    scraped.sort_by(f64::total_cmp);
    let (q, s) = (percentile(&quiet, 0.5), percentile(&scraped, 0.5));
    println!(
        "| figure | result |\n|---|---|\n\
         | operator CPU per handled object, not scraped (median of {} rounds of {}) | {q:.3} ms |\n\
         | operator CPU per handled object, `/metrics` scraped every second | {s:.3} ms |\n\
         | ratio scraped / not scraped | {:.2} |\n\
         | CPU of one scrape, idle operator (mean of 200) | {per_scrape_ms:.3} ms |\n\
         | size of the answer | {size} bytes |",
        quiet.len(),
        args.items,
        s / q,
    );
    Ok(())
}
