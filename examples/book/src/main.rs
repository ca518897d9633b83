//! `book run | dev | crd | manifests`: the Book operator's command line.

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    book::operator().main().await
}
