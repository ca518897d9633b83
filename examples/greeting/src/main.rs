//! `greeting run | dev | crd | manifests`: the Greeting operator's command line.

use std::process::ExitCode;

use kopr::cli::App;

#[tokio::main]
async fn main() -> ExitCode {
    App::new(greeting::operator)
        .name("greeting")
        .about("The Greeting operator: logs Greetings as they are created, updated and deleted")
        .version(env!("CARGO_PKG_VERSION"))
        .main()
        .await
}
