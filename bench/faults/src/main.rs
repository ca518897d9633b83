//! `kopr-bench-faults`: a kopr operator (create, update and delete handlers on a custom
//! resource) through `kopr::testing::FaultProxy` at several fault rates, in one run. Each rate
//! gets a fresh in-process API server; `--objects` objects are created, then each updated once,
//! then all deleted. Reported per phase: the time until every object shows its handler's
//! result (or is gone), its ratio to the fault-free run, and the duplicate handler runs (runs
//! beyond one per object and cause).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use clap::Parser;
use kopr::testing::{FaultProxy, Faults, TestCluster};
use kopr::{Context, Handler, HandlerResult, Operator, Resource};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{CustomResource, CustomResourceExt};
use serde::{Deserialize, Serialize};

/// The benchmark's resource.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, schemars::JsonSchema)]
#[kube(
    group = "bench.kopr.dev",
    version = "v1",
    kind = "Gadget",
    namespaced,
    status = "serde_json::Value"
)]
struct GadgetSpec {
    message: String,
}

#[derive(Parser, Debug)]
#[command(name = "kopr-bench-faults", about)]
struct Args {
    /// Objects per rate.
    #[arg(long, default_value_t = 300)]
    objects: usize,
    /// Fault rates on non-watch requests (each also cuts watch streams at that rate).
    #[arg(long, value_delimiter = ',', default_value = "0,0.1,0.3")]
    rates: Vec<f64>,
    /// The seed of the fault sequence.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// The CRD, its status free-form (handler results land there).
fn crd() -> anyhow::Result<
    k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
> {
    let mut crd = serde_json::to_value(Gadget::crd())?;
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["status"] =
        serde_json::json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
    Ok(serde_json::from_value(crd)?)
}

type Runs = Arc<Mutex<HashMap<String, usize>>>;

fn counting(runs: &Runs, cause: &'static str) -> Handler<Gadget> {
    let runs = runs.clone();
    Handler::new(move |ctx: Context<Gadget>| {
        let runs = runs.clone();
        async move {
            if let Ok(mut runs) = runs.lock() {
                *runs.entry(format!("{cause} {}", ctx.name())).or_default() += 1;
            }
            HandlerResult::Ok(format!("{cause} {}", ctx.object.spec.message))
        }
    })
    .id(cause)
    .backoff(Duration::from_millis(100))
}

/// Waits until `count` objects are listed and all satisfy `done`.
async fn wait_all(
    api: &Api<Gadget>,
    count: usize,
    done: impl Fn(&serde_json::Value) -> bool,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(1800);
    loop {
        let list = api.list(&ListParams::default()).await?;
        let ready = list
            .items
            .iter()
            .filter_map(|g| serde_json::to_value(g).ok())
            .filter(|v| done(v))
            .count();
        if list.items.len() == count && ready == count {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "{ready} of {count} ready at the deadline"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

struct Measured {
    seconds: [f64; 3],
    duplicates: [usize; 3],
    faults: kopr::testing::FaultCounts,
}

async fn measure(rate: f64, args: &Args) -> anyhow::Result<Measured> {
    let cluster = TestCluster::start().await?;
    cluster.install_crd(&crd()?).await?;
    let proxy = FaultProxy::start(&cluster, Faults::rate(rate).seed(args.seed)).await?;
    let runs = Runs::default();
    let operator = Operator::new().resource(
        Resource::<Gadget>::custom()
            .on_create(counting(&runs, "create"))
            .on_update(counting(&runs, "update"))
            .on_delete(counting(&runs, "delete")),
    );
    let running = cluster.run_through(operator, &proxy);
    let api: Api<Gadget> = Api::namespaced(cluster.client(), "default");
    let names: Vec<String> = (0..args.objects).map(|i| format!("g{i}")).collect();
    let mut seconds = [0.0; 3];

    let started = Instant::now();
    for name in &names {
        let gadget = Gadget::new(
            name,
            GadgetSpec {
                message: "one".into(),
            },
        );
        api.create(&PostParams::default(), &gadget).await?;
    }
    wait_all(&api, names.len(), |g| g["status"]["create"] == "create one").await?;
    seconds[0] = started.elapsed().as_secs_f64();

    let started = Instant::now();
    let patch = serde_json::json!({"spec": {"message": "two"}});
    for name in &names {
        api.patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    wait_all(&api, names.len(), |g| g["status"]["update"] == "update two").await?;
    seconds[1] = started.elapsed().as_secs_f64();

    let started = Instant::now();
    for name in &names {
        api.delete(name, &DeleteParams::default()).await?;
    }
    wait_all(&api, 0, |_| true).await?;
    seconds[2] = started.elapsed().as_secs_f64();

    let faults = proxy.injected();
    running.stop().await?;
    let runs = runs.lock().map(|r| r.clone()).unwrap_or_default();
    let duplicates = ["create", "update", "delete"].map(|cause| {
        names
            .iter()
            .map(|n| runs.get(&format!("{cause} {n}")).copied().unwrap_or(0))
            .map(|r| r.saturating_sub(1))
            .sum()
    });
    let missed = ["create", "update", "delete"]
        .iter()
        .flat_map(|cause| names.iter().map(move |n| format!("{cause} {n}")))
        .filter(|k| !runs.contains_key(k))
        .count();
    anyhow::ensure!(missed == 0, "{missed} handler runs missing at rate {rate}");
    Ok(Measured {
        seconds,
        duplicates,
        faults,
    })
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut results = Vec::new();
        for &rate in &args.rates {
            eprintln!("rate {rate}: {} objects", args.objects);
            results.push((rate, measure(rate, &args).await?));
        }
        let base = results.first().map(|(_, m)| m.seconds).unwrap_or([1.0; 3]);
        println!(
            "| faults | create / update / delete (s) | vs first rate | duplicate runs (create / update / delete) | faults injected (429 / 5xx / reset before / reset after / watch cuts) |"
        );
        println!("|---|---|---|---|---|");
        for (rate, m) in &results {
            let s = m.seconds;
            let f = &m.faults;
            println!(
                "| {:.0}% | {:.2} / {:.2} / {:.2} | {:.2}x / {:.2}x / {:.2}x | {} / {} / {} | {} / {} / {} / {} / {} |",
                rate * 100.0,
                s[0],
                s[1],
                s[2],
                s[0] / base[0],
                s[1] / base[1],
                s[2] / base[2],
                m.duplicates[0],
                m.duplicates[1],
                m.duplicates[2],
                f.throttled,
                f.server_errors,
                f.reset_before,
                f.reset_after,
                f.watches_cut
            );
        }
        Ok(())
    })
}
