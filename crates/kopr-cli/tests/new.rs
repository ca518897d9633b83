//! `kopr new` scaffolds an operator crate that builds and passes its own tests as generated.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn a_scaffolded_operator_builds_and_passes_its_tests() {
    let scratch =
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("kopr-new-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let dir = scratch.join("demo-op");
    let output = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "new",
            "demo-op",
            "--group",
            "demo.example.com",
            "--version",
            "v1",
            "--kind",
            "Demo",
            "--path",
        ])
        .arg(&dir)
        .output()
        .expect("kopr new runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    for file in [
        "Cargo.toml",
        "src/lib.rs",
        "src/main.rs",
        "tests/operator.rs",
        "Dockerfile",
        "README.md",
        "samples/example.yaml",
    ] {
        assert!(dir.join(file).is_file(), "{file} generated");
    }
    let manifest = std::fs::read_to_string(dir.join("Cargo.toml")).expect("Cargo.toml");
    assert!(manifest.contains("kopr = { path = "), "{manifest}");

    // Refuses to overwrite, and refuses bad names.
    let again = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "new",
            "demo-op",
            "--group",
            "demo.example.com",
            "--kind",
            "Demo",
            "--path",
        ])
        .arg(&dir)
        .output()
        .expect("kopr new runs");
    assert!(!again.status.success());
    assert!(String::from_utf8_lossy(&again.stderr).contains("already exists"));
    let bad = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "new",
            "Demo_Op",
            "--group",
            "demo.example.com",
            "--kind",
            "Demo",
            "--path",
        ])
        .arg(scratch.join("bad"))
        .output()
        .expect("kopr new runs");
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("invalid name \"Demo_Op\""));

    // Build and test it with this workspace's locked versions and target directory, so the
    // dependencies compiled for the workspace are reused.
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock file");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let test = Command::new(cargo)
        .args(["test", "--quiet"])
        .current_dir(&dir)
        .env("CARGO_TARGET_DIR", target)
        .output()
        .expect("cargo test runs");
    let stdout = String::from_utf8_lossy(&test.stdout);
    assert!(
        test.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&test.stderr)
    );
    assert!(stdout.contains("test result: ok. 1 passed"), "{stdout}");
    let _ = std::fs::remove_dir_all(&scratch);
}
