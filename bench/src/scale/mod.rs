//! `kopr-bench scale`: the API server as its store grows. One `kopr apiserver` child process
//! (on a database file in a temporary data directory, or `--in-memory`) is filled with
//! ConfigMaps of about 570 bytes (labelled `bucket=0..99`) up to each size in turn (1k, 10k,
//! 100k by default); at each size it records the creates that got it there (rate, server CPU
//! per create), the server's resident memory (and per object, against the objects' JSON
//! size), a full list, a label-selector list matching 1%, the first page of a paged list, GET
//! latency while 16 clients update objects, and the delivery latency of updates to many
//! watches. Then, unless `--no-operators`, the operators' side ([`operators`]): kopr's and the
//! kube-rs Controller's memory and CPU with that many objects to handle. Results go to
//! `scale.{md,json}` and, with a Python that has matplotlib, `scale.png` (memory and latency
//! against objects, log axes).

mod h2;
mod operators;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use futures::{AsyncBufReadExt, StreamExt};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::json;

use crate::apiserver::{
    client, concurrent, cpu_seconds, kopr_binary, memory_mib, percentile, start_server,
};

/// Options of `kopr-bench scale`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Object counts to measure at, ascending, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 10_000, 100_000])]
    sizes: Vec<usize>,
    /// Concurrent clients for creates and for the updates under which GETs are timed.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Watches open for the fan-out figure.
    #[arg(long, default_value_t = 1000)]
    watchers: usize,
    /// Where `scale.md` and `scale.json` (and `scale.png`) go.
    #[arg(long, default_value = "bench/results")]
    results: PathBuf,
    /// A Python with matplotlib, for the plot (none: no plot).
    #[arg(long)]
    python: Option<PathBuf>,
    /// The plot script (`bench/plot_scale.py`).
    #[arg(long, default_value = "bench/plot_scale.py")]
    plot_script: PathBuf,
    /// Run the server on an in-memory database (`kopr apiserver --in-memory`), whose
    /// pages then count in its RSS; by default it runs on a database file in a temporary
    /// data directory, as `kopr dev` and `kopr apiserver --data-dir` do.
    #[arg(long)]
    in_memory: bool,
    /// Leave out the operators' side (kopr's operator and the kube-rs Controller at each size).
    #[arg(long)]
    no_operators: bool,
    /// Where the operators' logs go.
    #[arg(long, default_value = "target/scale")]
    work_dir: PathBuf,
}

/// The figures at one size.
#[derive(Debug, Clone, Serialize)]
struct Step {
    objects: usize,
    creates_per_s: f64,
    server_cpu_us_per_create: f64,
    rss_mib: f64,
    rss_bytes_per_object: f64,
    /// The full list's body over the objects: each object's JSON as served.
    json_bytes_per_object: f64,
    list_ms: f64,
    list_mib: f64,
    selector_list_ms: f64,
    selector_matches: usize,
    first_page_ms: f64,
    get_p50_ms: f64,
    get_p99_ms: f64,
    updates_per_s_during_gets: f64,
    watchers: usize,
    /// Watches on HTTP/1.1, one connection each (kube-rs).
    watch_p50_ms: f64,
    watch_p99_ms: f64,
    /// Watches as HTTP/2 streams, 100 to a connection (client-go).
    watch_h2_p50_ms: f64,
    watch_h2_p99_ms: f64,
}

#[derive(Debug, Serialize)]
struct Summary {
    command: String,
    cpus: usize,
    load_average: String,
    steps: Vec<Step>,
    /// The operators' side, per operator and size (empty with `--no-operators`).
    operators: Vec<operators::OperatorStep>,
}

const NS: &str = "scale";

fn object(i: usize) -> ConfigMap {
    // About 570 bytes of JSON as stored (metadata included).
    serde_json::from_value(json!({
        "metadata": {"name": format!("o-{i:06}"), "labels": {"bench": "scale", "bucket": (i % 100).to_string()}},
        "data": {"index": i.to_string(), "payload": "x".repeat(256)}
    }))
    .unwrap_or_default()
}

/// A GET of `path`, body read to the end (not decoded); returns the time and body size.
async fn timed_get(client: &kube::Client, path: &str) -> anyhow::Result<(f64, usize)> {
    let req = http::Request::builder()
        .uri(path)
        .header("accept", "application/json")
        .body(Vec::new())?;
    let started = Instant::now();
    let bytes = client.request_text(req).await?.len();
    Ok((started.elapsed().as_secs_f64() * 1000.0, bytes))
}

/// The median time of `n` GETs of `path`, and the last body size.
async fn median_get(client: &kube::Client, path: &str, n: usize) -> anyhow::Result<(f64, usize)> {
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..n {
        let (t, s) = timed_get(client, path).await?;
        times.push(t);
        size = s;
    }
    times.sort_by(f64::total_cmp);
    Ok((percentile(&times, 0.5), size))
}

/// GET latencies of random objects by one client while `clients` others update objects.
async fn gets_under_writes(
    api: &Api<ConfigMap>,
    objects: usize,
    clients: usize,
) -> anyhow::Result<(Vec<f64>, f64)> {
    let updates = 4000usize;
    let writer = {
        let api = api.clone();
        tokio::spawn(concurrent(clients, updates, move |i| {
            let api = api.clone();
            async move {
                let name = format!("o-{:06}", (i * 7919) % objects);
                let patch = json!({"data": {"rev": i.to_string()}});
                api.patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                Ok(())
            }
        }))
    };
    let mut latencies = Vec::new();
    let mut k = 0usize;
    while !writer.is_finished() {
        let name = format!("o-{:06}", (k * 104_729) % objects);
        let started = Instant::now();
        api.get(&name).await?;
        latencies.push(started.elapsed().as_secs_f64() * 1000.0);
        k += 1;
    }
    let rate = writer.await??;
    latencies.sort_by(f64::total_cmp);
    Ok((latencies, rate))
}

/// How the fan-out's watches reach the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Transport {
    /// kube-rs clients: one HTTP/1.1 connection per watch.
    Http1,
    /// client-go's way: the watches as streams of HTTP/2 connections, 100 to each.
    Http2,
}

/// Opens `watchers` watch streams of the namespace's watched ConfigMaps after `rv`.
async fn open_watches(
    kubeconfig: &std::path::Path,
    transport: Transport,
    watchers: usize,
    rv: &str,
) -> anyhow::Result<Vec<tokio::task::JoinHandle<anyhow::Result<h2::Lines>>>> {
    let path = format!(
        "/api/v1/namespaces/{NS}/configmaps?watch=true&labelSelector=watched%3Dyes&resourceVersion={rv}"
    );
    // Several clients or connections, as many watching processes would use.
    let groups = watchers.div_ceil(100).max(1);
    let mut opened = Vec::new();
    match transport {
        Transport::Http1 => {
            let mut clients = Vec::new();
            for _ in 0..groups {
                clients.push(crate::compare::cluster::harness_client(kubeconfig).await?);
            }
            for w in 0..watchers {
                let (client, path) = (clients[w % groups].clone(), path.clone());
                opened.push(tokio::spawn(async move {
                    let request = http::Request::get(path).body(Vec::new())?;
                    let lines = client.request_stream(request).await?.lines();
                    let lines: h2::Lines = Box::pin(lines.map(|l| l.map_err(anyhow::Error::from)));
                    anyhow::Ok(lines)
                }));
            }
        }
        Transport::Http2 => {
            let mut connections = Vec::new();
            for _ in 0..groups {
                connections.push(h2::Connection::open(kubeconfig).await?);
            }
            for w in 0..watchers {
                let (connection, path) = (connections[w % groups].clone(), path.clone());
                opened.push(tokio::spawn(async move { connection.lines(&path).await }));
            }
        }
    }
    Ok(opened)
}

/// Delivery latencies of `events` updates to `watchers` watches of the namespace.
async fn watch_fan_out(
    kubeconfig: &std::path::Path,
    transport: Transport,
    watchers: usize,
    objects: usize,
) -> anyhow::Result<Vec<f64>> {
    let events = 20usize;
    let first: Api<ConfigMap> = Api::namespaced(
        crate::compare::cluster::harness_client(kubeconfig).await?,
        NS,
    );
    let rv = first
        .list_metadata(&ListParams::default().limit(1))
        .await?
        .metadata
        .resource_version
        .unwrap_or_default();
    // Keyed by the tick's value, unique to each update of the step.
    let sent: Arc<Mutex<std::collections::HashMap<String, Instant>>> = Arc::default();
    let mut tasks = Vec::new();
    for opened in open_watches(kubeconfig, transport, watchers, &rv).await? {
        // Every watch is open (the server has answered its request) before the first update.
        let mut lines = opened.await??;
        let sent = sent.clone();
        tasks.push(tokio::spawn(async move {
            // Each event's line is read as text and its tick found in it, not decoded into
            // a ConfigMap: a thousand decodes of every update on the same two cores would
            // be counted as the server's delay.
            let mut lat = Vec::with_capacity(events);
            while lat.len() < events {
                match tokio::time::timeout(Duration::from_secs(60), lines.next()).await {
                    Ok(Some(Ok(line))) => {
                        if line.contains(r#""type":"ERROR""#) {
                            bail!("a watch failed: {line}");
                        }
                        let at =
                            tick_of(&line).and_then(|tick| sent.lock().ok()?.get(tick).copied());
                        if let Some(at) = at {
                            lat.push(at.elapsed().as_secs_f64() * 1000.0);
                        }
                    }
                    Ok(Some(Err(e))) => bail!("a watch failed: {e}"),
                    Ok(None) => bail!("a watch ended early"),
                    Err(_) => bail!("a watch saw nothing for 60 s"),
                }
            }
            anyhow::Ok(lat)
        }));
    }
    for tick in 0..events {
        let name = format!("o-{:06}", (tick * 31) % objects);
        // The tick names the size and the transport too: a patch repeating an earlier
        // step's would change nothing, and a write that changes nothing sends no event.
        let value = format!("{objects}-{transport:?}-{tick}");
        if let Ok(mut m) = sent.lock() {
            m.insert(value.clone(), Instant::now());
        }
        let patch = json!({"metadata": {"labels": {"watched": "yes"}}, "data": {"tick": value}});
        first
            .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        // One update at a time reaches every watch before the next is sent.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await??);
    }
    latencies.sort_by(f64::total_cmp);
    Ok(latencies)
}

/// The value of `data.tick` in a watch event's line.
fn tick_of(line: &str) -> Option<&str> {
    const KEY: &str = r#""tick":""#;
    let start = line.find(KEY)? + KEY.len();
    let rest = &line[start..];
    Some(&rest[..rest.find('"')?])
}

/// Runs every size and writes the results.
pub async fn run(args: Args) -> anyhow::Result<()> {
    if args.sizes.is_empty() || args.sizes.windows(2).any(|w| w[0] >= w[1]) {
        bail!("--sizes must be ascending, e.g. 1000,10000,100000");
    }
    let extra: &[&str] = if args.in_memory {
        &["--in-memory"]
    } else {
        &[]
    };
    let setup = if args.no_operators {
        None
    } else {
        Some(operators::Setup::beside_this_binary(
            args.work_dir.join("logs"),
            args.clients,
        )?)
    };
    let (server, _) = start_server(&kopr_binary(args.kopr.as_deref())?, extra)?;
    let pid = server.child.id();
    let c = client(&server).await?;
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
        )
        .await?;
    let api: Api<ConfigMap> = Api::namespaced(c.clone(), NS);
    let baseline_mib = memory_mib(pid, "VmRSS:");
    let mut steps = Vec::new();
    let mut have = 0usize;
    for &size in &args.sizes {
        let cpu_before = cpu_seconds(pid);
        let start = have;
        let a = api.clone();
        let creates_per_s = concurrent(args.clients, size - have, move |i| {
            let a = a.clone();
            async move {
                a.create(&PostParams::default(), &object(start + i)).await?;
                Ok(())
            }
        })
        .await?;
        let cpu_us = (cpu_seconds(pid) - cpu_before) / (size - have) as f64 * 1e6;
        have = size;
        let rss_mib = memory_mib(pid, "VmRSS:");
        let base = format!("/api/v1/namespaces/{NS}/configmaps");
        let (list_ms, list_bytes) = median_get(&c, &base, 3).await?;
        let selector = format!("{base}?labelSelector=bucket%3D7");
        let (selector_list_ms, _) = median_get(&c, &selector, 5).await?;
        let matched = api
            .list_metadata(&ListParams::default().labels("bucket=7"))
            .await?
            .items
            .len();
        let (first_page_ms, _) = median_get(&c, &format!("{base}?limit=500"), 5).await?;
        let (gets, updates_per_s) = gets_under_writes(&api, size, args.clients).await?;
        let watch =
            watch_fan_out(&server.kubeconfig, Transport::Http1, args.watchers, size).await?;
        let watch_h2 =
            watch_fan_out(&server.kubeconfig, Transport::Http2, args.watchers, size).await?;
        let step = Step {
            objects: size,
            creates_per_s,
            server_cpu_us_per_create: cpu_us,
            rss_mib,
            rss_bytes_per_object: (rss_mib - baseline_mib) * 1024.0 * 1024.0 / size as f64,
            json_bytes_per_object: list_bytes as f64 / size as f64,
            list_ms,
            list_mib: list_bytes as f64 / 1024.0 / 1024.0,
            selector_list_ms,
            selector_matches: matched,
            first_page_ms,
            get_p50_ms: percentile(&gets, 0.5),
            get_p99_ms: percentile(&gets, 0.99),
            updates_per_s_during_gets: updates_per_s,
            watchers: args.watchers,
            watch_p50_ms: percentile(&watch, 0.5),
            watch_p99_ms: percentile(&watch, 0.99),
            watch_h2_p50_ms: percentile(&watch_h2, 0.5),
            watch_h2_p99_ms: percentile(&watch_h2, 0.99),
        };
        eprintln!("{step:?}");
        steps.push(step);
    }
    // After the server's figures, so that the operators' objects do not count in them.
    let operators = match &setup {
        Some(setup) => operators::measure(setup, &c, &server.kubeconfig, &args.sizes).await?,
        None => Vec::new(),
    };
    let summary = Summary {
        command: format!(
            "kopr-bench scale --sizes {} --clients {} --watchers {}{}{}",
            args.sizes
                .iter()
                .map(usize::to_string)
                .collect::<Vec<_>>()
                .join(","),
            args.clients,
            args.watchers,
            if args.in_memory { " --in-memory" } else { "" },
            if args.no_operators {
                " --no-operators"
            } else {
                ""
            }
        ),
        cpus: std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average: std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split_whitespace()
            .take(3)
            .collect::<Vec<_>>()
            .join(" "),
        steps,
        operators,
    };
    write(&args, &summary)
}

fn markdown(s: &Summary) -> String {
    let mut out = format!(
        "# kopr apiserver at scale\n\nCommand: `{}`; {} CPUs, load average {} at the end.\n\n",
        s.command, s.cpus, s.load_average
    );
    out.push_str("| objects | creates/s | server CPU/create (µs) | RSS (MiB) | RSS/object (bytes) | JSON/object (bytes) | full list (ms, MiB) | selector list 1% (ms) | first page of 500 (ms) | GET p50 / p99 under updates (ms) | updates/s meanwhile | watch delivery p50 / p99, HTTP/1.1 (ms, watchers) | the same, HTTP/2 (ms) |\n");
    out.push_str("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for t in &s.steps {
        out.push_str(&format!(
            "| {} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} | {:.0} ({:.1}) | {:.1} ({} matched) | {:.1} | {:.2} / {:.2} | {:.0} | {:.2} / {:.2} ({}) | {:.2} / {:.2} |\n",
            t.objects,
            t.creates_per_s,
            t.server_cpu_us_per_create,
            t.rss_mib,
            t.rss_bytes_per_object,
            t.json_bytes_per_object,
            t.list_ms,
            t.list_mib,
            t.selector_list_ms,
            t.selector_matches,
            t.first_page_ms,
            t.get_p50_ms,
            t.get_p99_ms,
            t.updates_per_s_during_gets,
            t.watch_p50_ms,
            t.watch_p99_ms,
            t.watchers,
            t.watch_h2_p50_ms,
            t.watch_h2_p99_ms,
        ));
    }
    if !s.operators.is_empty() {
        out.push_str(&operators::markdown(&s.operators));
    }
    out
}

fn write(args: &Args, s: &Summary) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.results)?;
    let md = markdown(s);
    print!("{md}");
    std::fs::write(args.results.join("scale.md"), &md)?;
    let json_path = args.results.join("scale.json");
    std::fs::write(&json_path, serde_json::to_vec_pretty(s)?)?;
    if let Some(python) = &args.python {
        let png = args.results.join("scale.png");
        let status = std::process::Command::new(python)
            .arg(&args.plot_script)
            .arg(&json_path)
            .arg(&png)
            .status()
            .with_context(|| format!("running {}", python.display()))?;
        if !status.success() {
            bail!("the plot script failed ({status})");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tick_is_found_in_an_event_line() {
        let line = r#"{"type":"MODIFIED","object":{"kind":"ConfigMap","data":{"index":"3","tick":"1000-7"}}}"#;
        assert_eq!(tick_of(line), Some("1000-7"));
        assert_eq!(tick_of(r#"{"type":"BOOKMARK","object":{}}"#), None);
    }

    #[test]
    fn the_table_has_a_row_per_size() {
        let step = |n| Step {
            objects: n,
            creates_per_s: 1.0,
            server_cpu_us_per_create: 2.0,
            rss_mib: 3.0,
            rss_bytes_per_object: 4.0,
            json_bytes_per_object: 5.0,
            list_ms: 6.0,
            list_mib: 7.0,
            selector_list_ms: 8.0,
            selector_matches: 9,
            first_page_ms: 10.0,
            get_p50_ms: 11.0,
            get_p99_ms: 12.0,
            updates_per_s_during_gets: 13.0,
            watchers: 14,
            watch_p50_ms: 15.0,
            watch_p99_ms: 16.0,
            watch_h2_p50_ms: 17.0,
            watch_h2_p99_ms: 18.0,
        };
        let s = Summary {
            command: "c".into(),
            cpus: 2,
            load_average: "1 1 1".into(),
            steps: vec![step(1000), step(10_000)],
            operators: Vec::new(),
        };
        let md = markdown(&s);
        assert_eq!(
            md.lines().filter(|l| l.starts_with("| 1")).count(),
            2,
            "{md}"
        );
        assert!(
            md.contains("| 10000 | 1 | 2 | 3 | 4 | 5 | 6 (7.0) | 8.0 (9 matched) |"),
            "{md}"
        );
        assert!(
            md.contains("| 15.00 / 16.00 (14) | 17.00 / 18.00 |"),
            "{md}"
        );
    }
}
