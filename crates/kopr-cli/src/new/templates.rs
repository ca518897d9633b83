//! The files of a new operator crate, filled in from its names.

use super::Names;

/// (relative path, contents) of every generated file.
pub fn files(n: &Names) -> Vec<(&'static str, String)> {
    vec![
        ("Cargo.toml", cargo_toml(n)),
        ("src/lib.rs", lib_rs(n)),
        ("src/main.rs", main_rs(n)),
        ("tests/operator.rs", test_rs(n)),
        ("samples/example.yaml", sample(n)),
        ("Dockerfile", dockerfile(n)),
        ("README.md", readme(n)),
        (".gitignore", "/target\n/.kopr\n".to_string()),
    ]
}

fn cargo_toml(n: &Names) -> String {
    format!(
        r#"[package]
name = "{name}"
version = "0.1.0"
edition = "2024"
publish = false

[dependencies]
{kopr}
kube = {{ version = "5", default-features = false, features = ["derive"] }}
k8s-openapi = {{ version = "0.29", features = ["latest"] }}
schemars = "1"
serde = {{ version = "1", features = ["derive"] }}
serde_json = "1"
tokio = {{ version = "1", features = ["macros", "rt-multi-thread"] }}
tracing = "0.1"

# A crate of its own, even when created inside another workspace.
[workspace]
"#,
        name = n.name,
        kopr = n.kopr_dependency,
    )
}

fn lib_rs(n: &Names) -> String {
    format!(
        r#"//! The {kind} operator: handlers for `{plural}.{group}` objects.

use kopr::{{Context, Handler, HandlerResult, Operator, Resource}};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{{Deserialize, Serialize}};

/// The desired state of a {kind}.
#[derive(CustomResource, Deserialize, Serialize, Clone, Debug, JsonSchema)]
#[kube(
    group = "{group}",
    version = "{version}",
    kind = "{kind}",
    namespaced,
    status = "{kind}Status",
    printcolumn(name = "Message", type_ = "string", json_path = ".spec.message"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
pub struct {kind}Spec {{
    /// What the operator should act on; replace with your own fields.
    pub message: String,
}}

/// What the operator reports. kopr stores each handler's result under `status.<handler-id>`,
/// so the status keeps unknown fields.
#[derive(Deserialize, Serialize, Clone, Debug, Default, JsonSchema)]
#[schemars(extend("x-kubernetes-preserve-unknown-fields" = true))]
pub struct {kind}Status {{
    /// The create handler's result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created: Option<String>,
}}

async fn created(ctx: Context<{kind}>) -> HandlerResult<String> {{
    tracing::info!("{kind} {{}} created: {{}}", ctx.name(), ctx.object.spec.message);
    Ok(format!("handled '{{}}'", ctx.object.spec.message))
}}

async fn updated(ctx: Context<{kind}>) -> HandlerResult {{
    for change in ctx.diff() {{
        tracing::info!("{kind} {{}} changed: {{change}}", ctx.name());
    }}
    Ok(())
}}

async fn deleted(ctx: Context<{kind}>) -> HandlerResult {{
    tracing::info!("{kind} {{}} deleted", ctx.name());
    Ok(())
}}

/// The operator: its resource and handlers.
pub fn operator() -> Operator {{
    Operator::new().resource(
        Resource::<{kind}>::custom()
            .on_create(Handler::new(created).id("created"))
            .on_update(Handler::new(updated).id("updated"))
            .on_delete(Handler::new(deleted).id("deleted")),
    )
}}
"#,
        kind = n.kind,
        group = n.group,
        version = n.version,
        plural = n.plural,
    )
}

fn main_rs(n: &Names) -> String {
    format!(
        r#"//! `{name}`: run (against a cluster), dev (on an embedded API server), crd, manifests.

#[tokio::main]
async fn main() -> std::process::ExitCode {{
    {ident}::operator().main().await
}}
"#,
        name = n.name,
        ident = n.crate_ident,
    )
}

fn test_rs(n: &Names) -> String {
    format!(
        r#"//! The operator against an in-process kopr API server.

use std::time::Duration;

use kube::api::{{Api, DeleteParams, Patch, PatchParams, PostParams}};
use {ident}::{{operator, {kind}}};
use kopr::testing::{{TestCluster, capture_logs, wait_for}};
use serde_json::json;

const WAIT: Duration = Duration::from_secs(30);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn handles_create_update_and_delete() {{
    let logs = capture_logs();
    let cluster = TestCluster::start().await.expect("cluster starts");
    for crd in operator().crds() {{
        cluster.install_crd(&crd).await.expect("CRD installed");
    }}
    let running = cluster.run(operator());
    let api: Api<{kind}> = Api::namespaced(cluster.client(), "default");
    let object: {kind} = serde_json::from_value(json!({{
        "apiVersion": "{group}/{version}", "kind": "{kind}",
        "metadata": {{"name": "example"}}, "spec": {{"message": "hello"}}
    }}))
    .expect("object");
    api.create(&PostParams::default(), &object).await.expect("created");
    wait_for(&api, "example", WAIT, |o: Option<&{kind}>| {{
        o.and_then(|o| o.status.as_ref()).and_then(|s| s.created.as_deref()) == Some("handled 'hello'")
    }})
    .await
    .expect("the create handler's result is in status");

    let change = json!({{"spec": {{"message": "bye"}}}});
    api.patch("example", &PatchParams::default(), &Patch::Merge(&change)).await.expect("patched");
    logs.wait_for(&["{kind} example changed", "spec.message"], WAIT).await.expect("update handled");

    api.delete("example", &DeleteParams::default()).await.expect("deleted");
    wait_for(&api, "example", WAIT, |o: Option<&{kind}>| o.is_none()).await.expect("gone");
    logs.wait_for(&["{kind} example deleted"], WAIT).await.expect("delete handled");
    running.stop().await.expect("stopped");
}}
"#,
        ident = n.crate_ident,
        kind = n.kind,
        group = n.group,
        version = n.version,
    )
}

fn sample(n: &Names) -> String {
    format!(
        "apiVersion: {group}/{version}\nkind: {kind}\nmetadata:\n  name: example\nspec:\n  message: hello\n",
        group = n.group,
        version = n.version,
        kind = n.kind,
    )
}

fn dockerfile(n: &Names) -> String {
    let note = if n.local_kopr {
        "# kopr is a path dependency (kopr new --kopr-path) outside this directory, which the\n\
         # build cannot see: switch Cargo.toml to the published kopr or to kopr's git\n\
         # repository (kopr new --kopr-git) before building the image.\n"
    } else {
        ""
    };
    format!(
        r#"{note}# Build stage: compile the operator in release mode.
FROM rust:1-bookworm AS build
WORKDIR /src
COPY . .
RUN cargo build --release --locked || cargo build --release

# Runtime stage: just the binary and CA certificates.
FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/target/release/{name} /usr/local/bin/{name}
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/{name}"]
CMD ["run", "-A"]
"#,
        name = n.name,
    )
}

fn readme(n: &Names) -> String {
    format!(
        r#"# {name}

A kopr operator for `{kind}` objects (`{plural}.{group}/{version}`).

```sh
cargo test                                   # the operator against an in-process API server
cargo run -- dev --apply samples             # embedded API server, CRD installed, samples applied
kubectl --kubeconfig .kopr/kubeconfig get {plural}
cargo run -- crd                             # the CRD as YAML
cargo run -- manifests --image {name}:latest # CRD, RBAC and Deployment for a real cluster
cargo run -- run -A                          # against the cluster in KUBECONFIG
```

Handlers live in `src/lib.rs`: `created` (its result lands in `status.created`), `updated`
(logs each change of the diff) and `deleted` (finalizer-backed). Replace `spec.message`
with your own fields.
"#,
        name = n.name,
        kind = n.kind,
        plural = n.plural,
        group = n.group,
        version = n.version,
    )
}
