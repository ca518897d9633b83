//! The operator of `kopr-bench selection`: one of four ways to follow pods, chosen by
//! `SELECTION_MODE`:
//! - `all`: a reconcile of every pod (`Resource::<Pod>::new()`);
//! - `selected`: the same with `label_selector("tier=selected")`;
//! - `owned`: a reconcile of ConfigMaps that owns pods (the pods cached whole);
//! - `owned-metadata`: the same with `owns_with::<Pod>(WatchOptions::new().metadata_only())`.
//!
//! Run as `selection-operator run -A --standalone --metrics-listen ADDR` (KUBECONFIG points at
//! the cluster). Its reconciles write nothing.

use std::process::ExitCode;

use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kopr::reconcile::Action;
use kopr::selection::WatchOptions;
use kopr::{Context, HandlerResult, Operator, Resource};

async fn pod(_ctx: Context<Pod>) -> HandlerResult<Action> {
    Ok(Action::await_change())
}

async fn config_map(_ctx: Context<ConfigMap>) -> HandlerResult<Action> {
    Ok(Action::await_change())
}

#[tokio::main]
async fn main() -> ExitCode {
    let mode = std::env::var("SELECTION_MODE").unwrap_or_else(|_| "all".into());
    let owner = Resource::<ConfigMap>::new().reconcile(config_map);
    let resource = match mode.as_str() {
        "all" => Operator::new().resource(Resource::<Pod>::new().reconcile(pod)),
        "selected" => Operator::new().resource(
            Resource::<Pod>::new()
                .label_selector("tier=selected")
                .reconcile(pod),
        ),
        "owned" => Operator::new().resource(owner.owns::<Pod>()),
        "owned-metadata" => {
            Operator::new().resource(owner.owns_with::<Pod>(WatchOptions::new().metadata_only()))
        }
        other => {
            eprintln!("SELECTION_MODE {other:?}: all, selected, owned or owned-metadata");
            return ExitCode::from(2);
        }
    };
    resource.main().await
}
