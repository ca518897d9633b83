//! `msrv`: checks the workspace's declared `rust-version` against its dependencies. Only the
//! stable toolchain can be installed on the machines kopr is built on, so the minimum is not
//! checked by building with it; instead no dependency may need a newer Rust than the
//! workspace declares (from `cargo metadata`), and clippy's `incompatible_msrv` lint, which
//! CI runs with `-D warnings`, refuses standard-library items newer than it.

use std::path::Path;
use std::process::Command;

/// A version as `(major, minor, patch)`, from `1.89` or `1.89.0`.
fn parse(version: &str) -> Option<(u32, u32, u32)> {
    let mut parts = version.split('.').map(|p| p.parse::<u32>().ok());
    let major = parts.next()??;
    let minor = parts.next().unwrap_or(Some(0))?;
    let patch = parts.next().unwrap_or(Some(0))?;
    Some((major, minor, patch))
}

/// The `rust-version` of the workspace's `Cargo.toml`.
fn declared(manifest: &str) -> Option<&str> {
    manifest.lines().find_map(|line| {
        let (key, value) = line.split_once('=')?;
        (key.trim() == "rust-version").then(|| value.trim().trim_matches('"'))
    })
}

/// Every `(manifest path, rust_version)` that `cargo metadata`'s JSON names.
fn required(metadata: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut manifest = String::new();
    let mut rest = metadata;
    loop {
        let next_manifest = rest.find("\"manifest_path\":\"");
        let next_version = rest.find("\"rust_version\":\"");
        match (next_manifest, next_version) {
            (Some(m), v) if v.is_none_or(|v| m < v) => {
                let after = &rest[m + "\"manifest_path\":\"".len()..];
                let end = after.find('"').unwrap_or(after.len());
                manifest = after[..end].to_string();
                rest = &after[end..];
            }
            (_, Some(v)) => {
                let after = &rest[v + "\"rust_version\":\"".len()..];
                let end = after.find('"').unwrap_or(after.len());
                found.push((manifest.clone(), after[..end].to_string()));
                rest = &after[end..];
            }
            _ => return found,
        }
    }
}

/// Compares the declared minimum with what `metadata` says the packages need.
fn check(declared: &str, metadata: &str) -> Result<String, String> {
    let minimum = parse(declared).ok_or(format!(
        "msrv: rust-version {declared:?} is not a version\n"
    ))?;
    let needs = required(metadata);
    let newer: Vec<String> = needs
        .iter()
        .filter(|(_, version)| parse(version).is_some_and(|v| v > minimum))
        .map(|(manifest, version)| {
            format!("msrv: {manifest} needs Rust {version}, the workspace declares {declared}\n")
        })
        .collect();
    if newer.is_empty() {
        let highest = needs
            .iter()
            .filter_map(|(_, v)| parse(v).map(|p| (p, v.as_str())))
            .max()
            .map_or("none", |(_, v)| v);
        Ok(format!(
            "msrv: rust-version {declared}; {} packages declare one, the highest {highest}\n",
            needs.len()
        ))
    } else {
        Err(newer.concat())
    }
}

/// Runs `cargo metadata` in `root` and checks the declared minimum against it.
pub fn run(root: &Path) -> Result<String, String> {
    let manifest = std::fs::read_to_string(root.join("Cargo.toml"))
        .map_err(|e| format!("msrv: Cargo.toml: {e}\n"))?;
    let declared = declared(&manifest).ok_or("msrv: the workspace declares no rust-version\n")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_string());
    let output = Command::new(cargo)
        .args(["metadata", "--format-version", "1", "--locked"])
        .current_dir(root)
        .output()
        .map_err(|e| format!("msrv: cargo metadata: {e}\n"))?;
    if !output.status.success() {
        return Err(format!(
            "msrv: cargo metadata failed: {}\n",
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    check(declared, &String::from_utf8_lossy(&output.stdout))
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = r#"{"packages":[{"name":"a","manifest_path":"/r/a-1.0/Cargo.toml","rust_version":"1.80"},{"name":"b","manifest_path":"/r/b-2.0/Cargo.toml","rust_version":null},{"name":"c","manifest_path":"/r/c-3.0/Cargo.toml","rust_version":"1.89.0"}]}"#;

    #[test]
    fn a_dependency_needing_a_newer_rust_is_named() {
        assert!(check("1.89", METADATA).is_ok());
        let failure = check("1.85", METADATA).unwrap_err();
        assert_eq!(
            failure,
            "msrv: /r/c-3.0/Cargo.toml needs Rust 1.89.0, the workspace declares 1.85\n"
        );
    }

    #[test]
    fn the_declared_version_is_read_from_the_manifest() {
        let manifest = "[workspace.package]\nedition = \"2024\"\nrust-version = \"1.89\"\n";
        assert_eq!(declared(manifest), Some("1.89"));
        assert!(check("one", METADATA).is_err());
    }
}
