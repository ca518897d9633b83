//! A whole operator: `cargo run -p kopr --example hello -- dev` installs its CRD on the
//! embedded API server and logs a line for each `Hello` created. The README shows this file.
use kopr::{Context, HandlerResult, Operator, Resource};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(group = "example.com", version = "v1", kind = "Hello", namespaced)]
pub struct HelloSpec {
    message: String,
}

async fn created(ctx: Context<Hello>) -> HandlerResult {
    tracing::info!("Hello: {}", ctx.object.spec.message); // once per object, across restarts
    Ok(())
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let hello = Resource::<Hello>::custom().on_create(created);
    Operator::new().name("hello").resource(hello).main().await // run | dev | crd | manifests
}
