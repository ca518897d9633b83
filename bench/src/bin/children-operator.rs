//! The operator of `kopr-bench children`: a reconcile of `BenchItem`s that owns ConfigMaps and
//! writes nothing, so what it holds beyond its items is the children's cache.
//!
//! Run as `children-operator run -A --standalone --metrics-listen ADDR` (KUBECONFIG points at
//! the cluster); `kopr_children_cached{resource="v1/configmaps"}` tells how many are cached.

use std::process::ExitCode;

use k8s_openapi::api::core::v1::ConfigMap;
use kopr::reconcile::Action;
use kopr::{Context, HandlerResult, Operator, Resource};
use kopr_bench::workload::BenchItem;

async fn reconcile(ctx: Context<BenchItem>) -> HandlerResult<Action> {
    let _children = ctx.owned::<ConfigMap>()?.len();
    Ok(Action::await_change())
}

#[tokio::main]
async fn main() -> ExitCode {
    Operator::new()
        .resource(
            Resource::<BenchItem>::custom()
                .reconcile(reconcile)
                .owns::<ConfigMap>(),
        )
        .main()
        .await
}
