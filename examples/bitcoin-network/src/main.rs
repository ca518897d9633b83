//! `bitcoin-network run | dev | crd | manifests`: the BitcoinNetwork operator's command line.

use std::process::ExitCode;

use kopr::cli::{App, NoArgs};

#[tokio::main]
async fn main() -> ExitCode {
    App::new(|_: &NoArgs| bitcoin_network::operator())
        .name("bitcoin-network")
        .about("The BitcoinNetwork operator: runs networks of bitcoind nodes as StatefulSets")
        .version(env!("CARGO_PKG_VERSION"))
        .manifests(bitcoin_network::manifests())
        .main()
        .await
}
