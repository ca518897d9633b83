//! `kopr-bench children`: what the cache of owned children costs. A `kopr apiserver` child
//! process, and `children-operator run -A --standalone`: a reconcile of
//! `BenchItem`s that owns ConfigMaps and writes nothing. Its resident set size is read once
//! the operator has listed 100 items and no children, then again once N ConfigMaps, each
//! controlled by one of the items, are cached (`kopr_children_cached` from its metrics
//! endpoint) and it has settled; the difference per child is the cache's cost, next to the
//! size of a ConfigMap as the server sends it.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use kopr_bench::workload::{BenchItem, BenchItemSpec};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::apiserver::{client, concurrent, kopr_binary, start_server};
use crate::compare::cluster::{create_namespace, install_crd};
use crate::compare::operators::peak_rss_mib;
use crate::failover::rss_mib;
use crate::index::{Operator, metric_line};

/// Options of `kopr-bench children`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Children to cache.
    #[arg(long, default_value_t = 10_000)]
    children: usize,
}

const OWNERS: usize = 100;
const NAMESPACE: &str = "owned";

async fn cached(metrics: std::net::SocketAddr, count: usize) -> anyhow::Result<()> {
    metric_line(
        metrics,
        &format!("kopr_children_cached{{resource=\"v1/configmaps\"}} {count}"),
    )
    .await
}

/// Runs the measure and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    // With controllers: one of them establishes the CRD (the garbage collector finds every
    // child's owner present).
    let (server, _) = start_server(&kopr, &[])?;
    let admin = client(&server).await?;
    install_crd(&admin).await?;
    create_namespace(&admin, NAMESPACE).await?;
    let items: Api<BenchItem> = Api::namespaced(admin.clone(), NAMESPACE);
    let mut owners = Vec::new();
    for i in 0..OWNERS {
        let item = BenchItem::new(&format!("item-{i:03}"), BenchItemSpec { value: 1 });
        let created = items.create(&PostParams::default(), &item).await?;
        owners.push((created.metadata.name, created.metadata.uid));
    }
    let (operator, metrics) = Operator::start(&kopr, "children-operator", &server.kubeconfig)?;
    // The first child makes the gauge appear; it is part of the measured N.
    let config_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let child = |i: usize| {
        let (name, uid) = &owners[i % OWNERS];
        serde_json::from_value::<ConfigMap>(json!({
            "metadata": {"name": format!("child-{i:05}"), "labels": {"app": "owned"},
                         "ownerReferences": [{"apiVersion": "bench.kopr.dev/v1", "kind": "BenchItem",
                                              "name": name, "uid": uid, "controller": true,
                                              "blockOwnerDeletion": true}]},
            "data": {"result": format!("{}", i * 2)}
        }))
    };
    config_maps
        .create(&PostParams::default(), &child(0)?)
        .await?;
    cached(metrics, 1).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let pid = operator.pid();
    let empty = rss_mib(pid)?;
    let children: Vec<ConfigMap> = (1..args.children).map(child).collect::<Result<_, _>>()?;
    let children = std::sync::Arc::new(children);
    let api = config_maps.clone();
    let rate = concurrent(16, args.children - 1, move |i| {
        let (api, children) = (api.clone(), children.clone());
        async move {
            api.create(&PostParams::default(), &children[i]).await?;
            anyhow::Ok(())
        }
    })
    .await?;
    cached(metrics, args.children).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let full = rss_mib(pid)?;
    let peak = peak_rss_mib(pid)?;
    let sample = config_maps.get("child-00000").await?;
    let child_bytes = serde_json::to_vec(&sample)?.len();
    let per_child = (full - empty) * 1024.0 * 1024.0 / (args.children - 1) as f64;
    println!(
        "| figure | result |\n|---|---|\n\
         | owners (BenchItems) | {OWNERS} |\n\
         | children created (16 clients) | {} at {rate:.0}/s |\n\
         | operator RSS, 1 child cached | {empty:.1} MiB |\n\
         | operator RSS, {} children cached (peak) | {full:.1} MiB ({peak:.1} MiB) |\n\
         | RSS per cached child | {per_child:.0} bytes |\n\
         | one child as the server sends it (JSON, with managedFields) | {child_bytes} bytes |",
        args.children, args.children
    );
    drop(operator);
    Ok(())
}
