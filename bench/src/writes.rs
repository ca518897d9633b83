//! `kopr-bench writes`: the write path of the API server against a baseline build, side by
//! side in one run, and against the raw storage ceiling.
//!
//! Two `kopr apiserver` processes (this build and `--baseline-kopr`, each on a data directory
//! of its own) take the same work in alternating rounds, the order flipping every round, so
//! the noise of a shared machine falls on both alike: ConfigMap creates and custom-resource
//! `/status` merge patches, each from 16 concurrent clients. Each server's CPU (user + system
//! from `/proc`) is read around its own part of a round, so the figures are per request and
//! their ratios are what the run compares. The ceiling is SQLite alone, written from this
//! process: the server's own schema (copied from its database), rows of the size it stores, one
//! writer thread committing whatever queued, as the server's writer does.

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Instant;

use anyhow::{Context, bail};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::json;

use crate::apiserver::{
    Server, client, concurrent, cpu_seconds, kopr_binary, percentile, twenty_field_properties,
    twenty_fields,
};

/// Options of `kopr-bench writes`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary measured (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// The `kopr` binary of the baseline build (say, one built from 0d29bf1).
    #[arg(long)]
    baseline_kopr: Option<PathBuf>,
    /// Rounds; figures are medians over them.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
    /// Creates, and status patches, per server and round.
    #[arg(long, default_value_t = 1000)]
    per_round: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Only one of the two workloads (`creates` or `patches`), say to profile it.
    #[arg(long, value_parser = ["creates", "patches"])]
    only: Option<String>,
}

/// Custom resources whose status the patches write.
const PATCHED: usize = 200;

/// One server under test and what was measured on it.
struct Subject {
    label: &'static str,
    server: Server,
    config_maps: Api<ConfigMap>,
    items: Api<DynamicObject>,
    create_rates: Vec<f64>,
    create_cpu: Vec<f64>,
    patch_rates: Vec<f64>,
    patch_cpu: Vec<f64>,
}

/// The CRD of the patched objects: a spec of twenty fields, a status, the status subresource.
fn status_crd() -> serde_json::Value {
    let props = twenty_field_properties();
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "writeitems.kopr.dev"},
        "spec": {
            "group": "kopr.dev", "scope": "Namespaced",
            "names": {"plural": "writeitems", "singular": "writeitem", "kind": "WriteItem"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": props},
                    "status": {"type": "object", "properties": {
                        "count": {"type": "integer"}, "phase": {"type": "string"}
                    }}
                }}}}]
        }
    })
}

fn spec(i: usize) -> serde_json::Value {
    serde_json::Value::Object(twenty_fields(i, |n| json!(n)))
}

/// The ConfigMap of create `i`: twenty data keys, as `kopr-bench apiserver` creates.
fn config_map(i: usize) -> anyhow::Result<ConfigMap> {
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("c-{i}"), "labels": {"bench": "yes"}},
        "data": twenty_fields(i, |n| json!(n.to_string())),
    }))?)
}

impl Subject {
    async fn start(label: &'static str, kopr: &std::path::Path) -> anyhow::Result<Subject> {
        let (server, _) = crate::apiserver::start_server(kopr, &[])?;
        let c = client(&server).await?;
        let crds: Api<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        > = Api::all(c.clone());
        crds.create(
            &PostParams::default(),
            &serde_json::from_value(status_crd())?,
        )
        .await?;
        let resource = kube::api::ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("kopr.dev", "v1", "WriteItem"),
            "writeitems",
        );
        let items: Api<DynamicObject> = Api::namespaced_with(c.clone(), "default", &resource);
        let deadline = Instant::now() + std::time::Duration::from_secs(10);
        while items.list(&Default::default()).await.is_err() {
            if Instant::now() > deadline {
                bail!("{label}: the CRD was not served within 10 s");
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        for i in 0..PATCHED {
            let item: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "kopr.dev/v1", "kind": "WriteItem",
                "metadata": {"name": format!("w-{i}")}, "spec": spec(i)
            }))?;
            items.create(&PostParams::default(), &item).await?;
        }
        Ok(Subject {
            label,
            server,
            config_maps: Api::namespaced(c, "default"),
            items,
            create_rates: Vec::new(),
            create_cpu: Vec::new(),
            patch_rates: Vec::new(),
            patch_cpu: Vec::new(),
        })
    }

    /// One round on this server: `n` creates from `offset` on, then `n` status patches.
    async fn round(
        &mut self,
        offset: usize,
        n: usize,
        clients: usize,
        only: Option<&str>,
    ) -> anyhow::Result<()> {
        let pid = self.server.child.id();
        if only == Some("patches") {
            return self.patches(offset, n, clients).await;
        }
        let api = self.config_maps.clone();
        let before = cpu_seconds(pid);
        let rate = concurrent(clients, n, move |i| {
            let api = api.clone();
            async move {
                api.create(&PostParams::default(), &config_map(offset + i)?)
                    .await?;
                Ok(())
            }
        })
        .await?;
        let between = cpu_seconds(pid);
        self.create_rates.push(rate);
        self.create_cpu.push((between - before) / n as f64);
        if only == Some("creates") {
            return Ok(());
        }
        self.patches(offset, n, clients).await
    }

    /// `n` status merge patches over the patched objects.
    async fn patches(&mut self, offset: usize, n: usize, clients: usize) -> anyhow::Result<()> {
        let pid = self.server.child.id();
        let between = cpu_seconds(pid);
        let items = self.items.clone();
        let rate = concurrent(clients, n, move |i| {
            let items = items.clone();
            async move {
                let status =
                    json!({"status": {"count": offset + i, "phase": format!("p{}", i % 7)}});
                items
                    .patch_status(
                        &format!("w-{}", i % PATCHED),
                        &PatchParams::default(),
                        &Patch::Merge(&status),
                    )
                    .await?;
                Ok(())
            }
        })
        .await?;
        self.patch_rates.push(rate);
        self.patch_cpu.push((cpu_seconds(pid) - between) / n as f64);
        Ok(())
    }

    fn median(values: &[f64]) -> f64 {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        percentile(&sorted, 0.5)
    }
}

/// Runs the rounds and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    let mut subjects = vec![Subject::start("this build", &kopr).await?];
    if let Some(baseline) = &args.baseline_kopr {
        subjects.push(Subject::start("baseline", baseline).await?);
    }
    for round in 0..args.rounds {
        let offset = round * args.per_round;
        let order: Vec<usize> = if round % 2 == 0 {
            (0..subjects.len()).collect()
        } else {
            (0..subjects.len()).rev().collect()
        };
        for s in order {
            subjects[s]
                .round(offset, args.per_round, args.clients, args.only.as_deref())
                .await
                .with_context(|| format!("{} round {round}", subjects[s].label))?;
        }
    }
    // A stored ConfigMap, for the ceiling's row size.
    let sample = subjects[0].config_maps.get("c-0").await.ok();
    let row = sample.map_or(Ok(900), |s| serde_json::to_vec(&s).map(|v| v.len()))?;
    let db = subjects[0].server.kubeconfig.with_file_name("state.db");
    let ceiling = storage_ceiling(&db, row, args.rounds * args.per_round, args.clients)?;

    println!(
        "| figure ({} rounds of {} each, {} clients; medians) | {} |",
        args.rounds,
        args.per_round,
        args.clients,
        subjects
            .iter()
            .map(|s| s.label)
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(subjects.len()));
    let row_of = |name: &str, f: &dyn Fn(&Subject) -> f64, unit: &str, scale: f64| {
        let cells: Vec<String> = subjects
            .iter()
            .map(|s| format!("{:.0}{unit}", f(s) * scale))
            .collect();
        println!("| {name} | {} |", cells.join(" | "));
    };
    row_of(
        "ConfigMap creates/s",
        &|s| Subject::median(&s.create_rates),
        "",
        1.0,
    );
    row_of(
        "server CPU per ConfigMap create",
        &|s| Subject::median(&s.create_cpu),
        " µs",
        1e6,
    );
    row_of(
        "custom resource status patches/s",
        &|s| Subject::median(&s.patch_rates),
        "",
        1.0,
    );
    row_of(
        "server CPU per status patch",
        &|s| Subject::median(&s.patch_cpu),
        " µs",
        1e6,
    );
    if subjects.len() == 2 {
        let ratio = |f: &dyn Fn(&Subject) -> f64| f(&subjects[0]) / f(&subjects[1]);
        println!(
            "\nthis build / baseline: creates/s {:.2}, CPU per create {:.2}, status patches/s {:.2}, CPU per status patch {:.2}",
            ratio(&|s| Subject::median(&s.create_rates)),
            ratio(&|s| Subject::median(&s.create_cpu)),
            ratio(&|s| Subject::median(&s.patch_rates)),
            ratio(&|s| Subject::median(&s.patch_cpu)),
        );
    }
    println!(
        "\nraw SQLite ceiling ({row}-byte rows, the server's schema and commit policy, {} writers): {ceiling:.0} creates/s; this build's ConfigMap creates are {:.2} of it",
        args.clients,
        Subject::median(&subjects[0].create_rates) / ceiling
    );
    Ok(())
}

/// One write the ceiling's writer thread commits.
struct Job {
    key: String,
    value: Vec<u8>,
    reply: mpsc::Sender<anyhow::Result<()>>,
}

/// Creates per second that SQLite alone takes: `total` rows of `row` bytes from `writers`
/// threads, through one writer thread that commits whatever queued as one transaction (up to
/// 256), with the statements the server runs for a create, on a fresh database with the
/// schema and settings of the server's database at `server_db`.
fn storage_ceiling(
    server_db: &std::path::Path,
    row: usize,
    total: usize,
    writers: usize,
) -> anyhow::Result<f64> {
    let source = rusqlite::Connection::open_with_flags(
        server_db,
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )?;
    let mut statement = source.prepare(
        "SELECT sql FROM sqlite_master WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'",
    )?;
    let schema: Vec<String> = statement
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<_, _>>()?;
    if schema.is_empty() {
        bail!("no schema in {}", server_db.display());
    }
    let dir = std::env::temp_dir().join(format!("kopr-bench-ceiling-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let path = dir.join("state.db");
    let conn = rusqlite::Connection::open(&path)?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "NORMAL")?;
    conn.pragma_update(None, "wal_autocheckpoint", 4000)?;
    for sql in &schema {
        conn.execute_batch(sql)?;
    }
    let (jobs, queue) = mpsc::channel::<Job>();
    let writer = std::thread::spawn(move || -> anyhow::Result<()> {
        let mut conn = conn;
        while let Ok(first) = queue.recv() {
            let mut group = vec![first];
            while group.len() < 256 {
                match queue.try_recv() {
                    Ok(job) => group.push(job),
                    Err(_) => break,
                }
            }
            let tx = conn.transaction_with_behavior(rusqlite::TransactionBehavior::Immediate)?;
            // The server checks a key's existence in memory, not in SQLite: a create is one
            // log row.
            for job in &group {
                tx.prepare_cached(
                    "INSERT INTO kv_log(key, event, create_revision, prev_revision, value) VALUES (?1, 0, 0, 0, ?2)",
                )?
                .execute(rusqlite::params![job.key, job.value])?;
            }
            tx.commit()?;
            for job in group {
                let _ = job.reply.send(Ok(()));
            }
        }
        Ok(())
    });
    let started = Instant::now();
    let threads: Vec<_> = (0..writers)
        .map(|w| {
            let jobs = jobs.clone();
            std::thread::spawn(move || -> anyhow::Result<()> {
                let mut i = w;
                while i < total {
                    let (reply, answer) = mpsc::channel();
                    let value = vec![b'x'; row];
                    jobs.send(Job {
                        key: format!("/registry/configmaps/default/c-{i}"),
                        value,
                        reply,
                    })?;
                    answer.recv()??;
                    i += writers;
                }
                Ok(())
            })
        })
        .collect();
    for thread in threads {
        thread
            .join()
            .map_err(|_| anyhow::anyhow!("a ceiling writer panicked"))??;
    }
    let rate = total as f64 / started.elapsed().as_secs_f64();
    drop(jobs);
    writer
        .join()
        .map_err(|_| anyhow::anyhow!("the ceiling's writer panicked"))??;
    let _ = std::fs::remove_dir_all(&dir);
    Ok(rate)
}
