//! `pulsar-consumer run | dev | crd | manifests`: the PulsarConsumer operator's command line.

use std::process::ExitCode;

use kopr::cli::App;

#[tokio::main]
async fn main() -> ExitCode {
    App::new(pulsar_consumer::operator)
        .name("pulsar-consumer")
        .about(
            "The PulsarConsumer operator: keeps a Deployment of Pulsar consumers as the spec says",
        )
        .version(env!("CARGO_PKG_VERSION"))
        .manifests(pulsar_consumer::manifests())
        .main()
        .await
}
