//! `kopr-bench selection`: what server-side selectors and metadata-only watches save. A
//! `kopr apiserver` child process without controllers holds N pods (one in ten labelled
//! `tier=selected`, each controlled by one of 100 ConfigMaps); `selection-operator` then
//! follows them four ways, one process after the other: a reconcile of every pod, the same
//! with a label selector, a reconcile of the ConfigMaps owning the pods (cached whole), and
//! the same with the pods' metadata only. Each operator's resident set size is read once it
//! holds what it follows (`kopr_slots` or `kopr_children_cached`) and has settled.

use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::api::{Api, PostParams};
use serde_json::json;

use crate::apiserver::{client, concurrent, kopr_binary, start_server};
use crate::compare::cluster::create_namespace;
use crate::compare::operators::peak_rss_mib;
use crate::failover::rss_mib;
use crate::index::{Operator, metric_line};

/// Options of `kopr-bench selection`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The `kopr` binary (default: next to this one).
    #[arg(long)]
    kopr: Option<PathBuf>,
    /// Pods to create.
    #[arg(long, default_value_t = 10_000)]
    pods: usize,
}

const OWNERS: usize = 100;
const NAMESPACE: &str = "selected";

/// Runs the measure and prints a Markdown table.
pub async fn run(args: Args) -> anyhow::Result<()> {
    let kopr = kopr_binary(args.kopr.as_deref())?;
    let (server, _) = start_server(&kopr, &["--no-controllers"])?;
    let admin = client(&server).await?;
    create_namespace(&admin, NAMESPACE).await?;
    let config_maps: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    let mut owners = Vec::new();
    for i in 0..OWNERS {
        let owner: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": format!("owner-{i:03}")}}))?;
        let created = config_maps.create(&PostParams::default(), &owner).await?;
        owners.push((created.metadata.name, created.metadata.uid));
    }
    let owners = std::sync::Arc::new(owners);
    let pods: Api<Pod> = Api::namespaced(admin.clone(), NAMESPACE);
    let api = pods.clone();
    let rate = concurrent(16, args.pods, move |i| {
        let (api, owners) = (api.clone(), owners.clone());
        async move {
            let (name, uid) = &owners[i % OWNERS];
            let tier = if i % 10 == 0 { "selected" } else { "other" };
            let pod: Pod = serde_json::from_value(json!({
                "metadata": {"name": format!("pod-{i:05}"), "labels": {"app": "selection", "tier": tier},
                             "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap",
                                                  "name": name, "uid": uid, "controller": true}]},
                "spec": {"nodeName": format!("node-{:02}", i % 50),
                         "containers": [{"name": "main", "image": "registry.local/app:1",
                                         "env": [{"name": "MODE", "value": "bench"}],
                                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}
            }))?;
            api.create(&PostParams::default(), &pod).await?;
            anyhow::Ok(())
        }
    })
    .await?;
    let selected = args.pods.div_ceil(10);
    let modes = [
        (
            "every pod (`Resource::<Pod>::new()`)",
            "all",
            "kopr_slots{resource=\"v1/pods\"}",
            args.pods,
        ),
        (
            "pods with `label_selector(\"tier=selected\")` (1 in 10)",
            "selected",
            "kopr_slots{resource=\"v1/pods\"}",
            selected,
        ),
        (
            "pods owned, cached whole (`owns::<Pod>()`)",
            "owned",
            "kopr_children_cached{resource=\"v1/pods\"}",
            args.pods,
        ),
        (
            "pods owned, metadata only (`owns_with(metadata_only())`)",
            "owned-metadata",
            "kopr_children_cached{resource=\"v1/pods\"}",
            args.pods,
        ),
    ];
    let sample = serde_json::to_vec(&pods.get("pod-00000").await?)?.len();
    println!(
        "{} pods created (16 clients) at {rate:.0}/s; one pod as the server sends it: {sample} bytes\n",
        args.pods
    );
    println!("| the operator follows | held | RSS | peak RSS |\n|---|---|---|---|");
    for (what, mode, metric, count) in modes {
        let (operator, metrics) = Operator::start_with(
            &kopr,
            "selection-operator",
            &server.kubeconfig,
            &[("SELECTION_MODE", mode)],
        )?;
        metric_line(metrics, &format!("{metric} {count}")).await?;
        tokio::time::sleep(Duration::from_secs(3)).await;
        let rss = rss_mib(operator.pid())?;
        let peak = peak_rss_mib(operator.pid())?;
        println!("| {what} | {count} | {rss:.1} MiB | {peak:.1} MiB |");
        drop(operator);
    }
    Ok(())
}
