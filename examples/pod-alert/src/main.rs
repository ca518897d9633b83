//! `pod-alert run | dev | crd | manifests`: the pod alert operator's command line, with its own
//! options `--check-interval`, `--webhook-url`, `--pod-namespace` and `--log-lines`.

use std::process::ExitCode;

use kopr::cli::App;

#[tokio::main]
async fn main() -> ExitCode {
    App::new(pod_alert::operator)
        .name("pod-alert")
        .about("The pod alert operator: reports pods that have problems in Orchestr objects")
        .version(env!("CARGO_PKG_VERSION"))
        .manifests(pod_alert::manifests())
        .main()
        .await
}
