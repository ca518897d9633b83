//! The kopr side of `kopr-bench compare-operators`: one handler, `result`, for creation and
//! update of `BenchItem`s, with kopr's defaults plus the one setting kopr's documentation
//! recommends for throughput: [`Storage::Status`], since the item's status keeps unknown fields.
//! It writes `f(spec)` to an adopted ConfigMap child and returns it, so kopr stores it in
//! `status.result`.
//!
//! Run as `kopr-operator run -A` (KUBECONFIG points at the cluster).

#[cfg(feature = "mimalloc")]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::process::ExitCode;

use k8s_openapi::api::core::v1::ConfigMap;
use kopr::{Context, HandlerResult, Operator, Reason, Resource, Storage};
use kopr_bench::workload::{BenchItem, RESULT_KEY, result_of};
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};

async fn result(ctx: Context<BenchItem>) -> HandlerResult<String> {
    let value = result_of(ctx.object.spec.value);
    let namespace = ctx.namespace().unwrap_or("default");
    let config_maps: Api<ConfigMap> = Api::namespaced(ctx.client().clone(), namespace);
    if ctx.reason() == Reason::Create {
        let mut child = ConfigMap {
            metadata: ObjectMeta {
                name: Some(ctx.name().to_owned()),
                ..ObjectMeta::default()
            },
            data: Some(BTreeMap::from([(RESULT_KEY.to_owned(), value.clone())])),
            ..ConfigMap::default()
        };
        kopr::adopt(&mut child, &*ctx.object)?;
        match config_maps.create(&PostParams::default(), &child).await {
            Ok(_) => return Ok(value),
            // Left by an attempt that was interrupted after creating it: bring it up to date.
            Err(kube::Error::Api(status)) if status.is_already_exists() => {}
            Err(error) => return Err(error.into()),
        }
    }
    let patch = serde_json::json!({"data": {RESULT_KEY: value}});
    config_maps
        .patch(ctx.name(), &PatchParams::default(), &Patch::Merge(&patch))
        .await?;
    Ok(value)
}

#[tokio::main]
async fn main() -> ExitCode {
    Operator::new()
        .storage(Storage::Status)
        .resource(
            Resource::<BenchItem>::custom()
                .on_create(result)
                .on_update(result),
        )
        .main()
        .await
}
