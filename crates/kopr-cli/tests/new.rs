//! `kopr new` scaffolds an operator crate that builds and passes its own tests as generated.

use std::path::PathBuf;
use std::process::Command;

#[test]
fn a_scaffolded_operator_builds_and_passes_its_tests() {
    // Outside the workspace, as a user's new crate is.
    let scratch = std::env::temp_dir().join(format!("kopr-new-{}", std::process::id()));
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let kopr = workspace.join("crates/kopr");
    let _ = std::fs::remove_dir_all(&scratch);
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let dir = scratch.join("demo-op");
    // The flagless form, run from outside the checkout: this binary lives in the checkout's
    // target directory, so the crate depends on the checkout.
    let output = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "new",
            "demo-op",
            "--group",
            "demo.example.com",
            "--kind",
            "Demo",
        ])
        .current_dir(&scratch)
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
    let checkout = kopr.canonicalize().expect("crates/kopr");
    assert!(
        manifest.contains(&format!(
            "kopr = {{ path = {:?} }}",
            checkout.display().to_string()
        )),
        "{manifest}"
    );
    let dockerfile = std::fs::read_to_string(dir.join("Dockerfile")).expect("Dockerfile");
    assert!(
        dockerfile.starts_with("# kopr is a path dependency"),
        "{dockerfile}"
    );

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
    std::fs::copy(workspace.join("Cargo.lock"), dir.join("Cargo.lock")).expect("lock file");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| workspace.join("target"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    // The workspace's debug settings too: without them the scaffold's own defaults (full
    // debug info) would rebuild every dependency, several GB more in a clean CI checkout.
    let test = Command::new(cargo)
        .args(["test", "--quiet"])
        .args(["--config", "profile.dev.debug=false"])
        .args([
            "--config",
            "profile.dev.package.kopr.debug=\"line-tables-only\"",
        ])
        .args([
            "--config",
            "profile.dev.package.kopr-apiserver.debug=\"line-tables-only\"",
        ])
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

/// What `kopr new` depends on: the published kopr by default, or a git repository; user
/// errors are one plain line, without a backtrace even when RUST_BACKTRACE asks for one.
#[test]
fn the_scaffold_depends_on_published_kopr_and_errors_are_plain() {
    let scratch = std::env::temp_dir().join(format!("kopr-new-deps-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&scratch);
    // A copy of the binary outside any checkout: nothing of the build machine is baked in.
    std::fs::create_dir_all(&scratch).expect("scratch dir");
    let moved = scratch.join("kopr");
    std::fs::copy(env!("CARGO_BIN_EXE_kopr"), &moved).expect("binary copied");
    let scaffold = |name: &str, extra: &[&str]| {
        let out = Command::new(&moved)
            .args(["new", name, "--group", "demo.example.com", "--kind", "Demo"])
            .args(extra)
            .arg("--path")
            .arg(scratch.join(name))
            .env("RUST_BACKTRACE", "1")
            .output()
            .expect("kopr new runs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let manifest =
            std::fs::read_to_string(scratch.join(name).join("Cargo.toml")).expect("Cargo.toml");
        let dockerfile =
            std::fs::read_to_string(scratch.join(name).join("Dockerfile")).expect("Dockerfile");
        (manifest, dockerfile)
    };
    let (manifest, dockerfile) = scaffold("published", &[]);
    assert!(
        manifest.contains(&format!("kopr = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "{manifest}"
    );
    assert!(dockerfile.starts_with("# Build stage"), "{dockerfile}");
    let checkout = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    let checkout = checkout.canonicalize().expect("checkout");
    assert!(
        !manifest.contains(&checkout.display().to_string()),
        "the build machine's path: {manifest}"
    );
    // From the checkout's binary, --kopr-published asks for the published crate.
    let published = scratch.join("asked-published");
    let out = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "new",
            "asked-published",
            "--group",
            "demo.example.com",
            "--kind",
            "Demo",
        ])
        .arg("--kopr-published")
        .arg("--path")
        .arg(&published)
        .output()
        .expect("kopr new runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest = std::fs::read_to_string(published.join("Cargo.toml")).expect("Cargo.toml");
    assert!(
        manifest.contains(&format!("kopr = \"{}\"", env!("CARGO_PKG_VERSION"))),
        "{manifest}"
    );
    let (manifest, _) = scaffold("from-git", &["--kopr-git", "https://example.com/kopr.git"]);
    assert!(
        manifest.contains("kopr = { git = \"https://example.com/kopr.git\" }"),
        "{manifest}"
    );

    let bad = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "new", "demo", "--group", "nodots", "--kind", "Demo", "--path",
        ])
        .arg(scratch.join("bad"))
        .env("RUST_BACKTRACE", "1")
        .output()
        .expect("kopr new runs");
    assert!(!bad.status.success());
    let said = String::from_utf8_lossy(&bad.stderr);
    assert!(
        said.starts_with("error: invalid group \"nodots\""),
        "{said}"
    );
    assert!(!said.contains("backtrace"), "{said}");
    assert_eq!(said.lines().count(), 1, "{said}");
    let _ = std::fs::remove_dir_all(&scratch);
}

/// `kopr apiserver` writes no colour codes into redirected output.
#[test]
fn apiserver_logs_have_no_colour_when_redirected() {
    use std::io::{BufRead, BufReader, Read};
    let dir = std::env::temp_dir().join(format!("kopr-plain-logs-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args([
            "apiserver",
            "--listen",
            "127.0.0.1:0",
            "--no-controllers",
            "--data-dir",
        ])
        .arg(&dir)
        .env("RUST_LOG", "info")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kopr runs");
    let stdout = child.stdout.take().expect("stdout");
    let mut first = String::new();
    BufReader::new(stdout)
        .read_line(&mut first)
        .expect("ready line");
    let _ = child.kill();
    let mut logs = String::new();
    if let Some(mut stderr) = child.stderr.take() {
        let _ = stderr.read_to_string(&mut logs);
    }
    let _ = child.wait();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(logs.contains("INFO"), "logs: {logs:?} (stdout: {first:?})");
    assert!(!logs.contains('\u{1b}'), "no ANSI escapes: {logs:?}");
}

/// `kopr completions SHELL` prints a completion script naming its commands.
#[test]
fn completions_name_the_commands() {
    let out = Command::new(env!("CARGO_BIN_EXE_kopr"))
        .args(["completions", "bash"])
        .output()
        .expect("kopr runs");
    assert!(out.status.success());
    let script = String::from_utf8_lossy(&out.stdout);
    assert!(script.starts_with("_kopr() {"), "{script}");
    for command in ["apiserver", "new", "completions"] {
        assert!(script.contains(command), "{command}");
    }
}
