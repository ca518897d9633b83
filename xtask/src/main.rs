//! kopr's repository tasks, in the cargo xtask convention: `cargo run -p xtask -- <task>`.
//!
//! - `layering`: checks that each top-level module of the API server imports only the
//!   modules the table in `xtask/layers.txt` allows it (see [`layering`]).

mod layering;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(PathBuf::from)
        .unwrap_or_default();
    match task.as_str() {
        "layering" => match layering::run(&root) {
            Ok(report) => {
                print!("{report}");
                ExitCode::SUCCESS
            }
            Err(failure) => {
                eprint!("{failure}");
                ExitCode::FAILURE
            }
        },
        _ => {
            eprintln!("usage: cargo run -p xtask -- layering");
            ExitCode::from(2)
        }
    }
}
