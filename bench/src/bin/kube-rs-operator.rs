//! The kube-rs side of `kopr-bench compare-operators`: a hand-written `kube::runtime::Controller`
//! for `BenchItem`s with default settings. Each reconcile server-side-applies the ConfigMap
//! child (owned by the item, so `.owns` maps its events back) with `data.result = f(spec)`, then
//! patches `status.result` when it differs.
//!
//! Run as `kube-rs-operator [--namespace NS]` (KUBECONFIG points at the cluster); it serves all
//! namespaces, or `NS` alone.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::ConfigMap;
use kopr_bench::workload::{BenchItem, RESULT_KEY, result_of};
use kube::api::{Api, ObjectMeta, Patch, PatchParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Client, Resource, ResourceExt};

const FIELD_MANAGER: &str = "kube-rs-operator";

#[derive(Debug)]
enum ReconcileError {
    Kube(kube::Error),
    Invalid(&'static str),
}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReconcileError::Kube(error) => write!(f, "{error}"),
            ReconcileError::Invalid(what) => f.write_str(what),
        }
    }
}

impl std::error::Error for ReconcileError {}

impl From<kube::Error> for ReconcileError {
    fn from(error: kube::Error) -> Self {
        ReconcileError::Kube(error)
    }
}

async fn reconcile(item: Arc<BenchItem>, client: Arc<Client>) -> Result<Action, ReconcileError> {
    let namespace = item
        .namespace()
        .ok_or(ReconcileError::Invalid("BenchItem without a namespace"))?;
    let owner = item
        .controller_owner_ref(&())
        .ok_or(ReconcileError::Invalid("BenchItem without a name or uid"))?;
    let name = item.name_any();
    let value = result_of(item.spec.value);

    let child = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(namespace.clone()),
            owner_references: Some(vec![owner]),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(RESULT_KEY.to_owned(), value.clone())])),
        ..ConfigMap::default()
    };
    let config_maps: Api<ConfigMap> = Api::namespaced((*client).clone(), &namespace);
    config_maps
        .patch(
            &name,
            &PatchParams::apply(FIELD_MANAGER).force(),
            &Patch::Apply(&child),
        )
        .await?;

    let current = item.status.as_ref().and_then(|s| s.result.as_deref());
    if current != Some(value.as_str()) {
        let items: Api<BenchItem> = Api::namespaced((*client).clone(), &namespace);
        let patch = serde_json::json!({"status": {"result": value}});
        items
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
    }
    Ok(Action::await_change())
}

fn error_policy(_item: Arc<BenchItem>, error: &ReconcileError, _client: Arc<Client>) -> Action {
    tracing::warn!(%error, "reconcile failed");
    Action::requeue(std::time::Duration::from_secs(5))
}

/// The command line.
#[derive(clap::Parser, Debug)]
struct Args {
    /// Serve only this namespace (default: all).
    #[arg(long)]
    namespace: Option<String>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = <Args as clap::Parser>::parse();
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .init();
    let client = Client::try_default().await?;
    let (items, config_maps): (Api<BenchItem>, Api<ConfigMap>) = match &args.namespace {
        Some(namespace) => (
            Api::namespaced(client.clone(), namespace),
            Api::namespaced(client.clone(), namespace),
        ),
        None => (Api::all(client.clone()), Api::all(client.clone())),
    };
    tracing::info!("starting the BenchItem controller");
    Controller::new(items, watcher::Config::default())
        .owns(config_maps, watcher::Config::default())
        .shutdown_on_signal()
        .run(reconcile, error_policy, Arc::new(client))
        .for_each(|result| async move {
            if let Err(error) = result {
                tracing::debug!(%error, "controller event");
            }
        })
        .await;
    Ok(())
}
