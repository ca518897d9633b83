//! kopr's repository tasks, in the cargo xtask convention: `cargo run -p xtask -- <task>`.
//!
//! - `layering`: checks that each top-level module of the API server imports only the
//!   modules the table in `xtask/layers.txt` allows it (see [`layering`]);
//! - `docs`: checks that the guide's includes name files and anchors that exist, and that
//!   the README's code is its files' (see [`docs`]);
//! - `msrv`: checks that no dependency needs a newer Rust than the workspace declares (see
//!   [`msrv`]).

mod docs;
mod layering;
mod msrv;

use std::path::PathBuf;
use std::process::ExitCode;

/// The nearest directory, from the current one up, holding `xtask/layers.txt`.
fn checkout_root() -> Option<PathBuf> {
    let mut dir = std::env::current_dir().ok()?;
    loop {
        if dir.join("xtask/layers.txt").is_file() {
            return Some(dir);
        }
        if !dir.pop() {
            return None;
        }
    }
}

fn main() -> ExitCode {
    let task = std::env::args().nth(1).unwrap_or_default();
    // The checkout is found from where the task runs, never baked in at build time (a build
    // shared between checkouts would check the wrong one).
    let Some(root) = checkout_root() else {
        eprintln!("xtask: run it inside a kopr checkout (no xtask/layers.txt above here)");
        return ExitCode::from(2);
    };
    let outcome = match task.as_str() {
        "layering" => layering::run(&root),
        "docs" => docs::run(&root),
        "msrv" => msrv::run(&root),
        _ => {
            eprintln!("usage: cargo run -p xtask -- layering | docs | msrv");
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(report) => {
            print!("{report}");
            ExitCode::SUCCESS
        }
        Err(failure) => {
            eprint!("{failure}");
            ExitCode::FAILURE
        }
    }
}
