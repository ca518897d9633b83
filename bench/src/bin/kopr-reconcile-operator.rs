//! The kopr reconcile-model side of `kopr-bench compare-operators`: one reconcile for
//! `BenchItem`s, with kopr's defaults, owning their ConfigMap children. Each run
//! server-side-applies the child with `data.result = f(spec)` (`Context::apply`: owner
//! reference, the operator's field manager) and sets `status.result` when it differs, as the
//! kube-rs controller does.
//!
//! Run as `kopr-reconcile-operator run -A` (KUBECONFIG points at the cluster).

use std::collections::BTreeMap;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::ConfigMap;
use kopr::reconcile::Action;
use kopr::{Context, HandlerResult, Operator, Resource};
use kopr_bench::workload::{BenchItem, RESULT_KEY, result_of};
use kube::api::ObjectMeta;

async fn reconcile(ctx: Context<BenchItem>) -> HandlerResult<Action> {
    let value = result_of(ctx.object.spec.value);
    let child = ConfigMap {
        metadata: ObjectMeta {
            name: Some(ctx.name().to_owned()),
            ..ObjectMeta::default()
        },
        data: Some(BTreeMap::from([(RESULT_KEY.to_owned(), value.clone())])),
        ..ConfigMap::default()
    };
    ctx.apply(&child).await?;
    let current = ctx.object.status.as_ref().and_then(|s| s.result.as_deref());
    if current != Some(value.as_str()) {
        ctx.patch().set("status.result", value);
    }
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
